"""``tuner run``'s study as the faces build it: the study runner (``tuner.study``) on the Ray
executor, every trial recorded by the MLflow tracker in a writer process of its own; an earlier
study whose folder is gone is read back from MLflow (``warm_start``)."""

from __future__ import annotations

import time
from typing import Callable

from tuner.study.schema import StudyConfig
from tuner.study.progress import Progress
from tuner.study.runner import StudyRunner
from tuner.study.tracking import Tracker
from tuner.study.warm import Earlier


def mlflow_tracker(cfg: StudyConfig) -> Tracker:
    """The MLflow writer process for ``cfg``'s experiment (MLflow's import, its store and every
    logging call stay out of this process); its spool lives in the study folder."""
    from tuner.integrations.mlflow.writer import TrackerProcess

    # a distinct name per study start: two studies (or a --fresh one) in one experiment differ
    return TrackerProcess(cfg.mlflow.tracking_uri, cfg.experiment, cfg.directory,
                          run_name=f"{cfg.study} {time.strftime('%Y-%m-%d %H:%M:%S')}",
                          wait=cfg.mlflow.timeout)


def study_runner(cfg: StudyConfig, *, resume: bool = False, fresh: bool = False,
                 progress: Progress | None = None, grace: float = 5.0,
                 clock: Callable[[], float] = time.time) -> StudyRunner:
    """A runner for ``cfg`` on Ray (local, or the cluster at ``ray.address``), logged to MLflow."""
    from tuner.integrations.ray.executor import RayExecutor

    return StudyRunner(cfg, RayExecutor(cfg), mlflow_tracker, resume=resume, fresh=fresh,
                       progress=progress, grace=grace, clock=clock, read_tracker=read_from_mlflow)


def read_from_mlflow(name: str, cfg: StudyConfig) -> Earlier | None:
    """An earlier study read back from MLflow (``warm_start`` whose folder is gone); MLflow is
    imported only then, so a study's driver starts without it (the writer process logs)."""
    from tuner.integrations.mlflow.history import read_study

    return read_study(name, cfg)
