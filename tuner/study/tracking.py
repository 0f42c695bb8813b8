"""Where a study's trials are recorded for browsing: the ``Tracker`` interface (MLflow implements
it: ``tuner.integrations.mlflow.writer.TrackerProcess``) and the loop callback that feeds it.

The tracker hears of a trial after the state that holds its result is saved and after the freed
slots are refilled, so logging never keeps a worker waiting; a crash in between leaves a result
that ``LogToTracker.log_unlogged`` sends on resume.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Iterable, Protocol

from tuner.loop.loop import LoopCallback, Outcome, StudyLoop

from .schema import StudyConfig
from .record import TrialRecord
from .study import Study

PROGRESS_EVERY = 1.0   # seconds between the parent run's progress metrics while the loop runs


class Tracker(Protocol):
    """One parent run per study, a child run per trial (docs/how-to/mlflow.md)."""

    @property
    def run_id(self) -> str | None: ...
    @property
    def experiment_id(self) -> str | None: ...
    @property
    def behind(self) -> int: ...       # calls not done yet
    def start(self, params: dict[str, Any], tags: dict[str, str] | None = None,
              resume_run_id: str | None = None) -> str: ...
    def logged_trial_ids(self) -> set[int] | None: ...   # None: not known now
    def log_trial(self, record: TrialRecord) -> None: ...
    def log_progress(self, step: int, metrics: dict[str, float]) -> None: ...
    def log_params(self, params: dict[str, Any]) -> None: ...
    def log_tags(self, tags: dict[str, Any]) -> None: ...
    def log_dict(self, data: dict, artifact_file: str) -> None: ...
    def log_artifacts(self, paths: Iterable[str | Path]) -> None: ...
    def finish(self, status: str = "FINISHED") -> int: ...   # returns the items not logged
    def close(self) -> None: ...


def study_params(cfg: StudyConfig) -> dict[str, Any]:
    """The parent run's params (the budget's follow in ``log_budget`` once it is measured)."""
    return {"trainable": cfg.trainable, "algorithm": cfg.algorithm,
            "objective": cfg.objective.metric, "mode": cfg.objective.mode,
            "trials": cfg.run.trials, "max_concurrent": cfg.run.max_concurrent,
            "cpus_per_trial": cfg.run.cpus_per_trial, "seed": cfg.run.seed,
            "space": json.dumps(cfg.space), "constraint_handler": cfg.settings.constraint_handler,
            **({"context": json.dumps(cfg.context)} if cfg.context is not None else {}),
            **({"warm_start": json.dumps(list(cfg.warm_start))} if cfg.warm_start else {})}


def browse_text(uri: str, experiment_id: str | None) -> str:
    """How to look at the study in the MLflow UI: the command (a local store) and the link to
    the experiment's runs table (MLflow 3 opens an experiment on its GenAI view otherwise)."""
    view = "" if experiment_id is None else (
        f"#/experiments/{experiment_id}/runs?workflowType=machine_learning")
    if uri.startswith(("http://", "https://")):
        return f"browse at {uri.rstrip('/')}/{view}"
    return (f"browse with `mlflow ui --backend-store-uri {uri}`" +
            (f", then open http://127.0.0.1:5000/{view}" if view else ""))


def log_budget(tracker: Tracker, cfg: StudyConfig) -> None:
    """The budget as enforced (a relative one measured by now) and the resolved config."""
    b = cfg.budget
    if b is not None:
        tracker.log_params({"budget_limit": b.seconds, "budget_spec": b.limit,
                            "budget_reference_seconds": b.reference_seconds,
                            "budget_metric": b.metric, "stop_margin": b.stop_margin})
    tracker.log_dict(cfg.resolved(), "config.json")


class LogToTracker(LoopCallback):
    """Each ended trial to the tracker after the slots are refilled, then the study's progress
    metrics (at most once per ``PROGRESS_EVERY`` seconds while the loop runs, and at the end)."""

    def __init__(self, study: Study, tracker: Tracker):
        self.study, self.tracker = study, tracker
        self.to_log: list[int] = []     # ended trials waiting for the tracker
        # handed to the tracker, not done by it yet: their curves stay in the saved state
        self.handed: list[int] = []
        self.progress_logged = -math.inf

    def on_end(self, outcome: Outcome) -> None:
        self.to_log.append(outcome.trial_id)

    def on_step(self, loop: StudyLoop) -> None:
        self.flush()

    def flush(self, final: bool = False) -> int:
        """Log the trials ended since the last call and, when due, the progress metrics;
        returns how many trials."""
        done, self.to_log = self.to_log, []
        for tid in done:
            self.tracker.log_trial(self.study.record(tid))
        self.handed += done
        if self.handed and self.tracker.behind == 0:   # logged, or in the tracker's own spool
            for tid in self.handed:
                self.study.curves.pop(tid, None)
            self.handed = []
        now = time.monotonic()
        if final or (done and now - self.progress_logged >= PROGRESS_EVERY):
            self.progress_logged = now
            snap = self.study.snapshot()
            metrics = {"finished": snap.done, "stopped": snap.stopped, "failed": snap.failed,
                       "over_budget": snap.violations, "utilization": snap.utilization}
            if snap.best is not None:
                metrics["best_so_far"] = snap.best
            self.tracker.log_progress(self.study.n_ended(), metrics)
        return len(done)

    def log_unlogged(self, ask: bool = True) -> None:
        """Results saved in the state but not yet logged (a crash between the two).  A tracker
        that cannot say what it has (MLflow not answering) is handed every ended trial: it logs
        each one once.

        Args:
            ask: whether to ask the tracker what it holds (it may wait ``mlflow.timeout``); not
                asked when MLflow did not answer at the start, nor when no trial has ended.
        """
        ended = self.study.ended()
        logged = self.tracker.logged_trial_ids() if ask and ended else None
        self.to_log = sorted(set(ended) - (logged or set()))
        self.flush(final=True)
        for tid in self.study.unlogged_curves():    # saved before the crash, logged since
            self.study.curves.pop(tid)
