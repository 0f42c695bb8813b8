"""The study's callbacks on the one study loop (``tuner.loop.loop.LoopCallback``), each owning
its state: the session counters and the saved state, the trial table, the progress line.  The
tracker's is ``tracking.LogToTracker``, the budget warning ``budget.NothingFitsWarning``."""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from tuner.core.persist import append_row, csv_text, write_table
from tuner.loop.loop import LoopCallback, Outcome, Report, StudyLoop

from .progress import Progress
from .state import StudyStateFile
from .study import Study

CURVES_CSV = "curves.csv"   # what runs that report progress reported, in the study folder


class SaveState(LoopCallback):
    """Counts each ended trial in the session, and saves the study state once per step of the
    loop that started or ended a trial (before the loop waits, and before the tracker hears of
    the step's results): a journal line with what changed (``StudyStateFile``), with the curves
    of the ended trials the tracker has not logged yet (a crash before it does loses none)."""

    def __init__(self, study: Study, state_file: StudyStateFile):
        self.study, self.state_file = study, state_file
        self.dirty = False
        self.new_where: set[int] = set()   # trials whose place is not saved yet

    def on_launch(self, trial_id: int, config: Mapping[str, Any]) -> None:
        self.dirty = True

    def on_end(self, outcome: Outcome) -> None:
        if self.study.session.add(outcome):
            self.new_where.add(outcome.trial_id)
        self.dirty = True

    def on_step(self, loop: StudyLoop) -> None:
        if self.dirty:
            self.save(whole=False)
            self.dirty = False

    def save(self, whole: bool = True) -> None:
        """The study state: whole, or (``whole=False``) a journal line with what changed."""
        s = self.study.session
        new, self.new_where = self.new_where, set()
        self.state_file.save(
            self.study.cfg.resolved,
            self.study.optimizer,
            {"elapsed_before": self.study.elapsed(), "busy_seconds": s.busy_seconds,
             "run_id": s.run_id, "curves": self.study.unlogged_curves()},
            s.where,
            new,
            whole=whole,
        )


class TrialTable(LoopCallback):
    """``trials.csv``: a row appended for each trial that ended, once per loop step after the
    state has saved it (``SaveState`` comes first among the callbacks), so a row never shows
    a result the state could lose: a kill at any moment neither loses a trial nor runs one
    again; ``write`` rewrites the table whole from the state (on resume and at the end)."""

    def __init__(self, study: Study, path: Any):
        self.study, self.path = study, path
        self.ended: list[int] = []      # trials ended in this step, their rows not written yet

    def on_end(self, outcome: Outcome) -> None:
        self.ended.append(outcome.trial_id)

    def on_step(self, loop: StudyLoop) -> None:
        # not fsync'd: the row survives a crash of the driver (written through), and after a
        # crash of the machine the table is rewritten from the fsync'd journal on resume
        ended, self.ended = self.ended, []
        for tid in ended:
            append_row(self.path, self.study.row(tid), sync=False)

    def write(self) -> list[dict[str, Any]]:
        """The table anew, atomically: every ended trial in id order; returns the rows."""
        rows = [self.study.row(tid) for tid in self.study.ended()]
        if rows:
            write_table(self.path, rows)
        return rows


def subset_text(opt: Any) -> str:
    """What the switch to a subset GP means (``Settings.exact_until``, ``tuner.core.subset``)."""
    s = opt.settings
    return (
        f"{len(opt.trials)} trials started: the GPs now use {s.subset_size} of the finished ones "
        "(near the best and spread over the rest) and every running one, so each suggestion "
        f"costs the same from here on (optimizer.exact_until: {s.exact_until}, "
        f"optimizer.subset_size: {s.subset_size})"
    )


class ShowProgress(LoopCallback):
    """The progress line: when trials have ended (at most every ``Progress.min_gap`` seconds),
    else every ``Progress.interval`` seconds; the snapshot is computed only for a line."""

    def __init__(self, study: Study, progress: Progress, rules: Sequence[Any] = (),
                 metric: str = "step"):
        self.study, self.progress = study, progress
        self.ended = 0     # trials ended since the last line
        self.said_subset = False
        # rules that learn something once (ASHA's first rung with grace: auto), said once
        self.learning = [r for r in rules if hasattr(r, "learned_text")]
        self.metric = metric

    def on_end(self, outcome: Outcome) -> None:
        self.ended += 1

    def on_launch(self, trial_id: int, config: Mapping[str, Any]) -> None:
        opt = self.study.optimizer
        if not self.said_subset and opt.subset_active:     # once, when the GPs switch
            self.said_subset = True
            self.progress.message(subset_text(opt))

    def on_step(self, loop: StudyLoop) -> None:
        for rule in list(self.learning):
            text = rule.learned_text(self.metric)
            if text is not None:
                self.learning.remove(rule)
                self.progress.message(text)
        if self.progress.due(self.ended > 0):
            self.progress.update(self.study.snapshot(), force=self.ended > 0)
            self.ended = 0

    def wake_at(self, now: float) -> float | None:
        return now + max(self.progress.next_due(self.ended > 0) - time.monotonic(), 0.0)


class Curves(LoopCallback):
    """What each running trial reports (``Report``), kept for its MLflow child run (a metric
    history along the fidelity) until the tracker has logged it, and appended to
    ``curves.csv`` (trial, step, seconds into the run, objective) once per loop step, for the
    learning-curve plot (``plots.curves_plot``) and for reading without MLflow."""

    def __init__(self, study: Study, path: Any = None):
        self.study, self.path = study, path
        self.rows: list[dict[str, Any]] = []

    def on_report(self, report: Report) -> None:
        fid = self.study.cfg.fidelity
        step = report.metrics.get(fid.metric) if fid is not None else None
        self.study.curves.setdefault(report.trial_id, []).append(
            {"time": self.study.clock(), "step": None if step is None else int(step),
             "metrics": dict(report.metrics)})
        value = report.metrics.get(self.study.metric)
        if self.path is not None and step is not None and value is not None:
            start = self.study.running.get(report.trial_id, report.time)
            self.rows.append({"trial": report.trial_id, "step": step,
                              "seconds": round(report.time - start, 4), self.study.metric: value})

    def on_step(self, loop: StudyLoop) -> None:
        if self.rows:
            rows, self.rows = self.rows, []
            new = not Path(self.path).exists()
            with open(self.path, "a") as fh:
                fh.write(csv_text(rows, header=new))


def read_curves(path: Any, metric: str) -> dict[int, list[tuple[float, float]]]:
    """``curves.csv`` as {trial: [(step, value), ...]}: each trial's last attempt (a trial
    started again on --resume reports from its first step again)."""
    out: dict[int, list[tuple[float, float]]] = {}
    if not Path(path).exists():
        return out
    with open(path) as fh:
        for row in csv.DictReader(fh):
            try:
                tid, step, value = int(row["trial"]), float(row["step"]), float(row[metric])
            except (KeyError, TypeError, ValueError):      # a line cut by a crash
                continue
            curve = out.setdefault(tid, [])
            if curve and step <= curve[-1][0]:
                curve.clear()
            curve.append((step, value))
    return out
