"""An earlier study read back from MLflow, for a warm start whose study folder is gone
(``tuner.study.warm``): its newest parent run (tag ``study``) and that run's child runs, one per
trial.  The parent's params hold what the study tuned (``trainable``, ``space``, ``objective``,
``mode``, ``context``); each child's params are a configuration, its tags its status and reason,
its metrics the trial's.  Param values are strings in MLflow and are read back by the space."""

from __future__ import annotations

import json
import logging
from typing import Any

from tuner.core.space import SearchSpace
from tuner.study.schema import StudyConfig
from tuner.study.warm import Earlier

from .values import mlflow_key

log = logging.getLogger(__name__)


def read_study(name: str, cfg: StudyConfig) -> Earlier | None:
    """Study ``name`` from the MLflow store at ``cfg.mlflow.tracking_uri`` (its experiment is
    ``cfg.mlflow.experiment`` if set, else ``name``); None if it has no parent run there."""
    from mlflow.tracking import MlflowClient   # MLflow enters the driver only here

    from .operations import PARENT_TAG, search_all

    client = MlflowClient(cfg.mlflow.tracking_uri)
    parent = None
    for experiment in dict.fromkeys(e for e in (cfg.mlflow.experiment, name) if e):
        exp = client.get_experiment_by_name(experiment)
        if exp is None:
            continue
        runs = [r for r in search_all(client, exp.experiment_id, f"tags.study = '{name}'")
                if PARENT_TAG not in r.data.tags]
        if runs:
            parent = max(runs, key=lambda r: r.info.start_time or 0)
            break
    if parent is None:
        return None
    p = parent.data.params
    try:
        spec = json.loads(p["space"])
        space = SearchSpace.from_dict(spec)
    except (KeyError, ValueError) as exc:
        log.warning("MLflow run %s of study %s: no readable space (%s)", parent.info.run_id, name,
                    exc)
        return None
    trials = []
    children = search_all(client, parent.info.experiment_id,
                          f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'")
    for run in sorted(children, key=lambda r: int(r.data.tags.get("trial_id", "0") or 0)):
        trial = _trial(run, space, p.get("objective", ""))
        if trial is not None:
            trials.append(trial)
    context = json.loads(p["context"]) if "context" in p else None
    return Earlier(name, f"MLflow run {parent.info.run_id}", p.get("trainable", ""), spec,
                   {"metric": p.get("objective"), "mode": p.get("mode", "max")}, context, trials)


def _trial(run: Any, space: SearchSpace, metric: str) -> dict[str, Any] | None:
    """A child run as an ended trial (None if its params do not read as a configuration)."""
    params, tags = run.data.params, run.data.tags
    config = {}
    for name, param in space.params.items():
        text = params.get(mlflow_key(name))
        if text is None:
            return None
        value = _value(param, text)
        if value is None:
            return None
        config[name] = value
    metrics = dict(run.data.metrics)
    return {"config": config, "status": tags.get("status", "FAILED"), "value": metrics.get(metric),
            "metrics": metrics, "reason": tags.get("reason")}


def _value(param: Any, text: str) -> Any:
    """A param's string as the space's value (None if it is none of them)."""
    if param.kind == "categorical":
        return next((c for c in param.choices if str(c) == text), None)
    try:
        number = float(text)
    except ValueError:
        return None
    return int(round(number)) if param.kind == "int" else number

