"""A `tuner run` study: prepare or resume it, run the one study loop on the executor it is
handed (Ray: ``tuner.integrations.ray.executor``), record every trial with the tracker it is
handed (MLflow: ``tuner.integrations.mlflow``), finish and report.  No Ray, no MLflow here:
``tuner.app.wiring`` puts the parts together."""
