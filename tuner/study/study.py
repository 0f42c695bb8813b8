"""One study in memory: its config, its optimizer (every trial and its status), and the session
counters that survive a resume.  What the loop's callbacks and the report read: the trials that
ended, which of them broke the budget, the progress snapshot, a trial's row and its record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from tuner.core.constraints import violated
from tuner.core.optimizer import Optimizer
from tuner.core.trial import Status, Trial
from tuner.loop.loop import Outcome

from .schema import StudyConfig
from .progress import Snapshot
from .record import TrialRecord


def own_trials(optimizer: Optimizer) -> list[Trial]:
    """The trials a study ran itself: all but those carried over (``Trial.origin``)."""
    return [tr for tr in optimizer.trials if tr.origin is None]


@dataclass
class Session:
    """Counters that survive a resume (saved with the state)."""

    elapsed_before: float = 0.0
    busy_seconds: float = 0.0
    where: dict[int, dict[str, Any]] = field(default_factory=dict)   # node and host of each trial
    run_id: str | None = None

    def add(self, outcome: Outcome) -> bool:
        """Count an ended trial's run time as busy; keep where it ran (True if it says)."""
        self.busy_seconds += outcome.metrics.get("runtime", outcome.runtime)
        if outcome.info:
            self.where[outcome.trial_id] = outcome.info
        return bool(outcome.info)


class Study:
    """A study's config, optimizer and session, and the views of them the callbacks and the
    report share; ``running`` is the loop's map of running trials (trial id -> start)."""

    def __init__(self, cfg: StudyConfig, optimizer: Optimizer, session: Session,
                 clock: Callable[[], float], t0: float):
        self.cfg, self.optimizer, self.session = cfg, optimizer, session
        self.clock, self.t0 = clock, t0
        self.running: Mapping[int, float] = {}
        self.curves: dict[int, list[dict[str, Any]]] = {}   # what each trial reported (``Curves``)

    @property
    def metric(self) -> str:
        return self.cfg.objective.metric

    @property
    def trials(self) -> list[Trial]:
        """This study's own trials (not those carried over from earlier studies, ``warm``)."""
        return own_trials(self.optimizer)

    def elapsed(self) -> float:
        """Seconds this study has run, over all its sessions."""
        return self.session.elapsed_before + self.clock() - self.t0

    def unlogged_curves(self) -> dict[int, list[dict[str, Any]]]:
        """The learning curves of ended trials still waiting for the tracker."""
        trials = self.optimizer.trials
        return {tid: c for tid, c in self.curves.items() if trials[tid].status != Status.RUNNING}

    def ended(self) -> list[int]:
        """Ids of the trials that have ended, in order."""
        return [tr.trial_id for tr in self.trials if tr.status != Status.RUNNING]

    def n_ended(self) -> int:
        """How many trials have ended (without listing them)."""
        return len(self.trials) - len(self.optimizer.running)

    def over_budget(self, trial_id: int) -> bool:
        return violated(self.optimizer.trials[trial_id], self.optimizer.constraints)

    def stopped_for_budget(self, trial_id: int) -> bool:
        return (self.optimizer.trials[trial_id].status == Status.TIMED_OUT
                and self.over_budget(trial_id))

    def violations(self) -> int:
        return sum(self.over_budget(tid) for tid in self.ended())

    def snapshot(self, elapsed: float | None = None) -> Snapshot:
        """The numbers of the progress line (and of the parent run's progress metrics)."""
        elapsed = self.elapsed() if elapsed is None else elapsed
        opt = self.optimizer
        ended = [opt.trials[tid] for tid in self.ended()]
        feasible = bool(opt.constraints)
        own = self.trials
        best = opt.best(feasible=feasible, trials=own)
        over = opt.best(trials=own) if best is None and feasible else None
        now = self.clock()
        busy = self.session.busy_seconds + sum(now - start for start in self.running.values())
        slots = self.cfg.run.max_concurrent
        stops = (Status.STOPPED, Status.TIMED_OUT)
        return Snapshot(done=sum(tr.status == Status.FINISHED for tr in ended),
                        stopped=sum(tr.status in stops for tr in ended),
                        failed=sum(tr.status not in (Status.FINISHED, *stops) for tr in ended),
                        projected=sum(tr.status == Status.STOPPED and self.over_budget(tr.trial_id)
                                      for tr in ended),
                        running=len(self.running), total=self.cfg.run.trials,
                        best=None if best is None else best.value,
                        best_trial=None if best is None else best.trial_id,
                        violations=self.violations(),
                        utilization=min(busy / (slots * elapsed), 1.0) if elapsed > 0 else 0.0,
                        elapsed=elapsed, best_over=None if over is None else over.value,
                        best_over_trial=None if over is None else over.trial_id)

    def row(self, tid: int) -> dict[str, Any]:
        """A trial's line of ``trials.csv``."""
        tr, where = self.optimizer.trials[tid], self.session.where.get(tid, {})
        # a run the study stopped shows the value it reached (its status says it was stopped)
        value = tr.partial if tr.value is None and tr.status in (Status.STOPPED,
                                                                 Status.TIMED_OUT) else tr.value
        return {"trial": tid, "status": str(tr.status), self.metric: value,
                "runtime": tr.metrics.get("runtime"), "over_budget": int(self.over_budget(tid)),
                "train_time": tr.metrics.get("train_time"), "cpu_time": tr.metrics.get("cpu_time"),
                "pending_at_suggest": tr.pending_at_suggest, "start": tr.start_time,
                "finish": tr.finish_time, "node": where.get("node"), "reason": tr.reason,
                **self._progress_column(tr), **tr.config}

    def _progress_column(self, tr: Any) -> dict[str, Any]:
        """With a fidelity: how far the run got (e.g. ``epoch``), from what it reported."""
        fid = self.cfg.fidelity
        if fid is None:
            return {}
        return {fid.metric: None if tr.progress is None else tr.progress * fid.max}

    def record(self, trial_id: int) -> TrialRecord:
        """A trial as the tracker logs it: its config, status, metrics (with the constraint
        values ``g_*``) and tags (status, where it ran, why it ended)."""
        tr = self.optimizer.trials[trial_id]
        metrics = dict(tr.metrics)
        if tr.value is not None:
            metrics.setdefault(self.metric, tr.value)
        for c in self.optimizer.constraints:
            g = c.observed(tr)
            if g is not None:
                metrics[f"g_{c.metric}"] = g
        tags = {"trial_id": str(trial_id), "status": str(tr.status),
                "pending_at_suggest": str(tr.pending_at_suggest)}
        if self.cfg.budget is not None:
            tags["over_budget"] = str(int(self.over_budget(trial_id)))
        for key, value in {**self.session.where.get(trial_id, {}), "reason": tr.reason}.items():
            if value:
                tags[key] = str(value)
        return TrialRecord(trial_id=trial_id, params=dict(tr.config), status=str(tr.status),
                           metrics=metrics, tags=tags, start_time=tr.start_time,
                           end_time=tr.finish_time or tr.start_time,
                           curve=self.curves.get(trial_id, []))
