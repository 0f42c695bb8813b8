"""The run-time budget as the study enforces it: a relative limit measured on this machine
(``limit: 1.5x`` of a reference run), the budget in words, and the warning while nothing fits."""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from tuner.core.space import SearchSpace
from tuner.core.trial import Status
from tuner.loop.loop import LoopCallback, Outcome, StudyLoop
from tuner.core.curves import CurveModel
from tuner.core.optimizer import Optimizer
from tuner.loop.stopping import CurveRule, PaceBudget, StoppingRule, asha_rule

from .schema import Budget, ConfigError, MEASURED, StudyConfig
from .executor import Executor, RunFailed, TrainableFailed
from .progress import Progress
from .study import Study

REFERENCE_SEED = 1_000_000   # the reference runs' seeds: run.seed + this + slot


def reference_config(cfg: StudyConfig) -> dict[str, Any]:
    """``budget.reference`` if it is a configuration, else the center of the search space
    (what the warm-up runs, and the reference run of ``reference: warmup``)."""
    ref = cfg.budget.reference if cfg.budget else None
    if isinstance(ref, Mapping):
        return dict(ref)
    space = SearchSpace.from_dict(cfg.space)
    return space.decode(np.full(space.dim, 0.5))


def measure_budget(cfg: StudyConfig, executor: Executor, progress: Progress) -> StudyConfig:
    """Resolve a relative budget (``limit: 1.5x``): run the reference configuration once on
    every slot at the same time, as trials will run, and take the median of its
    ``budget.metric`` (run time: measured in the worker, as for every trial).  Returns the
    study with the limit = that times the multiple."""
    b, slots = cfg.budget, cfg.run.max_concurrent
    config = reference_config(cfg)
    values: list[float] = []
    with progress.phase(f"reference run for the budget on {slots} worker(s): "
                        f"{format_config(config)}"):
        seeds = [cfg.run.seed + REFERENCE_SEED + i for i in range(slots)]
        try:
            for out in executor.reference_runs(config, seeds):
                _check_reference(cfg, config, out)
                if b.metric in MEASURED:       # measured in the worker, like every trial's
                    values.append(out["metrics"].get(b.metric, out[b.metric]))
                elif b.metric in out["metrics"]:
                    values.append(out["metrics"][b.metric])
                else:
                    raise ConfigError(f"budget.metric: the reference run reported no "
                                      f"'{b.metric}' (it reported {sorted(out['metrics'])})")
        except RunFailed as exc:
            if exc.raised:
                raise TrainableFailed(
                    f"your trainable {cfg.trainable} raised in the study's first run (the "
                    f"reference run of the budget, {format_config(config)}): {exc}. Fix the "
                    "function and run again") from None
            raise ConfigError(f"budget.reference: the reference run of {format_config(config)} "
                              f"failed ({exc}); set budget.limit in seconds or another "
                              "budget.reference") from None
    reference = float(np.median(values))
    return cfg.with_budget(b.multiple * reference, reference)


def _check_reference(cfg: StudyConfig, config: Mapping[str, Any], out: Mapping[str, Any]) -> None:
    """A reference run must report a finite objective: one that does not would set a budget
    from a run that did not train (``TrainableFailed``)."""
    metric, metrics = cfg.objective.metric, out["metrics"]
    value = metrics.get(metric)
    if value is None or not math.isfinite(value):
        got = (f"no '{metric}' (it returned {sorted(metrics)})" if value is None
               else f"{metric} = {value}")
        raise TrainableFailed(f"your trainable {cfg.trainable} returned {got} in the study's first "
                              f"run (the reference run of the budget, {format_config(config)}); "
                              f"a study needs a finite {metric} (objective.metric): fix the "
                              "function and run again")


def stopping_rules(cfg: StudyConfig, optimizer: Optimizer) -> list[StoppingRule]:
    """The rules that stop runs reporting progress early: a run-time budget by pace
    (``budget.pace_margin``), then ``early_stopping``; none without a fidelity."""
    fid, b, es = cfg.fidelity, cfg.budget, cfg.early_stopping
    if fid is None:
        return []
    rules: list[StoppingRule] = []
    if b is not None and b.metric == "runtime" and b.pace_margin is not None:
        rules.append(PaceBudget(b.seconds, fid, b.pace_margin))
    rule = "curve" if es.rule == "auto" else es.rule       # the default with a fidelity
    if rule == "asha":
        rules.append(asha_rule(fid.max, es.grace, es.eta, cfg.objective.mode, es.cutoff))
    elif rule == "curve":
        model = CurveModel(optimizer.space.dim, fid.max, cfg.run.seed)
        rules.append(CurveRule(model, lambda tid: optimizer.trials[tid].x, fid,
                               cfg.objective.mode, es.kappa))
        optimizer.use_curves(model)       # the search reads the stop decisions' model
    return rules


def replay_stopping(rules: list[StoppingRule], optimizer: Optimizer,
                    curves: Mapping[int, list[tuple[float, float]]]) -> int:
    """On ``--resume``: tell fresh ``rules`` what the trials that had ended reported
    (``curves``, from ``curves.csv``: ``callbacks.read_curves``) and how they ended, in the
    order they ended, so that ASHA's rungs and the curve model go on from where the study was.
    Trials still RUNNING in the saved state start over and are left out.  Returns the trials
    replayed."""
    if not rules or not curves:
        return 0
    ended = sorted((tr for tr in optimizer.trials
                    if tr.status != Status.RUNNING and tr.trial_id in curves),
                   key=lambda tr: (tr.finish_index is None, tr.finish_index or 0, tr.trial_id))
    for tr in ended:
        for step, value in curves[tr.trial_id]:
            for rule in rules:
                rule.decide(tr.trial_id, step, value, 0.0)
        for rule in rules:
            if hasattr(rule, "on_end"):
                rule.on_end(tr.trial_id, tr.status, tr.value)
    return len(ended)


def budget_text(b: Budget) -> str:
    """The budget as it is enforced, e.g. ``runtime <= 1.5 x 1.31 s = 1.97 s (stop at 3.93 s)``."""
    text = f"{b.metric} <= {b.seconds:.3g} s"
    if b.relative:
        text = (f"{b.metric} <= {b.multiple:g} x {b.reference_seconds:.3g} s (the "
                f"reference run) = {b.seconds:.3g} s")
    if b.stop_at is not None:
        text += f"; a run is stopped at {b.stop_at:.3g} s"
    return text


def format_config(config: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in config.items())


class NothingFitsWarning(LoopCallback):
    """While no trial has finished within the budget, say so once max(3, slots) trials have
    ended, and again each time that count doubles: the fastest run time against the limit,
    and what to change."""

    def __init__(self, study: Study, progress: Progress):
        self.study, self.progress = study, progress
        self.next_warning: float = max(3, study.cfg.run.max_concurrent)
        self.news = False    # trials ended since the last step

    def on_end(self, outcome: Outcome) -> None:
        self.news = True

    def on_step(self, loop: StudyLoop) -> None:
        if self.news:
            self.news = False
            self.check()

    def check(self) -> None:
        """Runs stopped early for their score (not over the budget) are left out: they say
        nothing about whether the budget fits; a stopped run counts at its projected run time."""
        study, b = self.study, self.study.cfg.budget
        if b is None:
            return
        trials = [study.optimizer.trials[tid] for tid in study.ended()]
        trials = [
            tr for tr in trials if tr.status != Status.STOPPED or study.over_budget(tr.trial_id)
        ]
        ended = len(trials)
        if ended < self.next_warning:
            return
        self.next_warning = 2 * ended
        if any(
            tr.status == Status.FINISHED and not study.over_budget(tr.trial_id) for tr in trials
        ):
            self.next_warning = math.inf     # something fits: no more warnings
            return
        times = [tr.projected_runtime if tr.status == Status.STOPPED else tr.metrics.get(b.metric)
                 for tr in trials]
        times = [t for t in times if t is not None]
        if len(times) < ended:   # some failed without a run time: not a budget problem alone
            return
        self.progress.message(
            f"warning: none of the {ended} trials so far finished within the budget "
            f"({budget_text(b)}); the fastest took {min(times):.3g} s. If this machine is "
            "busier than the budget assumes, raise budget.limit (e.g. --budget 2x, a multiple of "
            "a reference run measured here), raise budget.stop_margin, or run fewer trials at once "
            "(--max-concurrent).")
