"""The methods of the learning-curve benchmark (``tuner.bench.curves``): a searcher (ask/tell, as
``tuner.loop.simulator.simulate`` drives it) and the stopping rules that watch each report
(``decide(trial_id, step, value, elapsed)``, as ``tuner.loop.stopping`` has them).  Each peer's
stopping is its own code, reached through its own API; nothing of theirs is re-implemented:

* Ray Tune ``AsyncHyperBandScheduler``: ``on_trial_add`` / ``on_trial_result`` /
  ``on_trial_complete`` with Ray's own ``Trial`` objects (``stub=True``: no Ray processes), with
  random search or with Optuna's TPE as the searcher.  As Ray's ``OptunaSearch`` does, a trial
  the scheduler stopped is told to TPE with its last result as its value.
* Optuna ``HyperbandPruner`` / ``SuccessiveHalvingPruner``: ``trial.report(value, step)`` and
  ``trial.should_prune()`` on the ask/tell trial; a pruned trial is told ``PRUNED``.
* Syne Tune ``ASHA`` / ``BOHB`` (``syne_tune.optimizer.baselines``): the scheduler suggests
  (``suggest``), hears each result (``on_trial_result`` -> ``SchedulerDecision``) and the end
  (``on_trial_complete``, or ``on_trial_remove`` for a run it stopped).
* ``random-topk``: random configurations; a run goes on after its first epoch only if its
  value is in the top third of the first-epoch values seen so far (the plain baseline).
* Ours: the default GP searcher with no rule, with our ASHA (``-asha-auto``: its first rung
  learned, ``grace: auto``; ``-asha-rank``: Syne Tune's test at a rung, ``cutoff: rank``), and
  with the curve rule; on a
  budgeted problem with the run-time budget as a constraint, ``stop_margin`` 1 and the pace
  rule, as ``tuner run`` sets them.
"""

from __future__ import annotations

import datetime
import warnings
from typing import Any, Mapping

import numpy as np

from tuner import Optimizer, Settings
from tuner.core.curves import CurveModel
from tuner.core.trial import Status
from tuner.loop.simulator import OBJECTIVE
from tuner.loop.stopping import ASHA, CurveRule, Fidelity, PaceBudget, asha_rule
from tuner.study.defaults import RUNTIME_STOP_MARGIN, STUDY_OPTIMIZER_DEFAULTS

from .peers import (GZERO, STUDY_2026_11_26, STUDY_NAME, Adapter, OptunaAdapter, Suggestion,
                    syne_tune_space)

OURS = ("tuner", "tuner-asha", "tuner-curve", "tuner-copula", "tuner-copula-matern", "tuner-study",
        "tuner-study-asha", "tuner-study-curve", "tuner-asha-auto", "tuner-study-asha-auto",
        "tuner-asha-rank", "tuner-study-asha-rank", "tuner-study-gzero", "tuner-study-median",
        "ray-asha-tuner", "ray-asha-tuner-last")
PEERS = ("random", "random-topk", "ray-asha-random", "ray-asha-tpe", "optuna-tpe-hyperband",
         "optuna-tpe-sh", "syne-asha", "syne-bohb", "ax")
METHODS = (*OURS, *PEERS)
GRACE, ETA = 1, 3          # every successive-halving method: rungs at 1, 3, 9, ... epochs
NEEDS = {"ray-asha-tpe": ("optuna",), "optuna-tpe-hyperband": ("optuna",),
         "optuna-tpe-sh": ("optuna",), "syne-asha": ("syne_tune",), "syne-bohb": ("syne_tune",),
         "ax": ("ax",)}


def available(method: str) -> bool:
    try:
        for m in NEEDS.get(method, ()):
            __import__(m)
    except ImportError:
        return False
    return True


class TopK:
    """After its first epoch a run goes on only if its value is in the top ``1/eta`` of the
    first-epoch values seen so far (the first ``eta`` runs always go on)."""

    def __init__(self, eta: float = ETA):
        self.eta = eta
        self.first: list[float] = []

    def decide(self, trial_id: int, step: float, value: float, elapsed: float) -> str | None:
        if step != 1:
            return None
        self.first.append(value)
        if len(self.first) > self.eta and value < np.quantile(self.first, 1 - 1 / self.eta):
            return "top-k: not in the top third after one epoch"
        return None


class RayScheduler:
    """A Ray Tune ``TrialScheduler`` watching the reports, with Ray's stub ``Trial`` objects."""

    def __init__(self, scheduler: Any, configs: Mapping[int, dict], time_attr: str = "epoch"):
        from ray.tune.experiment import Trial

        self.scheduler, self.configs, self.time_attr = scheduler, configs, time_attr
        self._trial_cls, self.trials, self.last = Trial, {}, {}

    def _trial(self, tid: int) -> Any:
        if tid not in self.trials:
            self.trials[tid] = self._trial_cls("__fake", config=dict(self.configs[tid]), stub=True)
            self.scheduler.on_trial_add(None, self.trials[tid])
        return self.trials[tid]

    def decide(self, trial_id: int, step: float, value: float, elapsed: float) -> str | None:
        from ray.tune.schedulers import TrialScheduler

        result = {self.time_attr: step, OBJECTIVE: value, "training_iteration": step}
        self.last[trial_id] = result
        if (
            self.scheduler.on_trial_result(None, self._trial(trial_id), result)
            == TrialScheduler.STOP
        ):
            return f"Ray ASHA at {self.time_attr} {step:g}"
        return None

    def on_end(self, trial_id: int, status: Status, value: float | None) -> None:
        if trial_id in self.trials:
            self.scheduler.on_trial_complete(None, self.trials[trial_id], self.last[trial_id])


class Recorder:
    """A searcher that keeps each configuration it suggested (for the rules that need it)."""

    def __init__(self, inner: Any):
        self.__dict__["inner"], self.__dict__["configs"] = inner, {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def clock(self) -> Any:
        return self.inner.clock

    @clock.setter
    def clock(self, value: Any) -> None:
        self.inner.clock = value

    def suggest(self, *args: Any, **kwargs: Any) -> Any:
        s = self.inner.suggest(*args, **kwargs)
        self.configs[s.trial_id] = dict(s.config)
        return s


class OptunaStopped(OptunaAdapter):
    """Optuna's TPE; a run stopped by a scheduler is told ``as_value`` (Ray's ``OptunaSearch``:
    its last result as its value) or ``PRUNED`` (Optuna's own pruners)."""

    def __init__(self, problem: Any, seed: int, pruner: Any = None, as_value: bool = False):
        super().__init__(problem, "tpe", seed)
        import optuna

        self.as_value = as_value
        if pruner is not None:
            self.study = optuna.create_study(direction="maximize", sampler=self.study.sampler,
                                             pruner=pruner, study_name=STUDY_NAME)

    def fail(self, trial_id: int, reason: str = "failed",
             metrics: Mapping[str, float] | None = None, finish_time: float | None = None,
             status: str = "FAILED") -> None:
        if status != Status.STOPPED:
            return super().fail(trial_id, reason, metrics, finish_time, status)
        trial = self._told(trial_id, finish_time)
        value = (metrics or {}).get(OBJECTIVE)
        if self.constraints and "runtime" in (metrics or {}):   # the time it ran, as far as known
            trial.set_user_attr("constraint", self.constraint_value(metrics))
        if self.as_value and value is not None:
            self.study.tell(trial, float(value))
        else:
            self.study.tell(trial, state=self._optuna.trial.TrialState.PRUNED)


class OptunaPruning:
    """Optuna's pruner on the ask/tell trial: ``report`` then ``should_prune``."""

    def __init__(self, adapter: OptunaStopped):
        self.adapter = adapter

    def decide(self, trial_id: int, step: float, value: float, elapsed: float) -> str | None:
        trial = self.adapter.pending[trial_id]
        trial.report(float(value), int(step))
        return f"Optuna pruner at epoch {step:g}" if trial.should_prune() else None


class SyneTuneMultiFidelity(Adapter):
    """A Syne Tune multi-fidelity scheduler (ASHA, BOHB) as searcher and stopping rule."""

    def __init__(self, problem: Any, kind: str, seed: int, epochs: int):
        super().__init__(problem)
        self.constraints = []
        from syne_tune.backend.trial_status import Trial
        from syne_tune.optimizer import baselines

        cls = {"asha": baselines.ASHA, "bohb": baselines.BOHB}[kind]
        self.scheduler = cls(syne_tune_space(problem.space), metric=OBJECTIVE, time_attr="epoch",
                             max_t=epochs, do_minimize=False, random_seed=seed,
                             grace_period=GRACE, reduction_factor=ETA)
        self._trial_cls, self.trials, self.epochs = Trial, {}, epochs
        self._now = datetime.datetime(2026, 1, 1)

    def suggest(self) -> Suggestion:
        s = self.scheduler.suggest()
        tid = len(self.trials)
        trial = self._trial_cls(trial_id=tid, config=dict(s.config), creation_time=self._now)
        self.trials[tid] = trial
        self.scheduler.on_trial_add(trial)
        self._asked(tid, trial)
        return Suggestion(tid, dict(s.config))

    def decide(self, trial_id: int, step: float, value: float, elapsed: float) -> str | None:
        from syne_tune.optimizer.scheduler import SchedulerDecision

        decision = self.scheduler.on_trial_result(self.trials[trial_id],
                                                  {"epoch": int(step), OBJECTIVE: float(value)})
        if decision == SchedulerDecision.STOP and step < self.epochs:
            return f"Syne Tune at epoch {step:g}"
        return None

    def tell(self, trial_id: int, value: float, metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None) -> None:
        self._told(trial_id, finish_time)
        self.scheduler.on_trial_complete(self.trials[trial_id],
                                         {"epoch": self.epochs, OBJECTIVE: float(value)})

    def fail(self, trial_id: int, reason: str = "failed",
             metrics: Mapping[str, float] | None = None, finish_time: float | None = None,
             status: str = "FAILED") -> None:
        self._told(trial_id, finish_time)
        if status == Status.FAILED:
            self.scheduler.on_trial_error(self.trials[trial_id])
        else:     # stopped by the scheduler, or still running at the horizon
            self.scheduler.on_trial_remove(self.trials[trial_id])


def _ours(method: str, problem: Any, seed: int,
          overrides: Mapping[str, Any] | None = None) -> tuple[Any, list[Any]]:
    """One of ``OURS`` (but TunerSearch under Ray's ASHA): the optimizer and its rules;
    ``overrides`` go over a study's defaults (``tuner-study*``)."""
    epochs, fid = problem.epochs, Fidelity("epoch", problem.epochs)
    extra: dict[str, Any] = extra_budget(problem)
    rules: list[Any] = []
    if problem.budget is not None:
        rules.append(PaceBudget(problem.budget, fid))
    if method == "tuner-copula":
        extra["output_warp"] = "copula"
    elif method == "tuner-copula-matern":         # a study's defaults of 2026-11-26
        extra.update(STUDY_2026_11_26)
    elif method.startswith("tuner-study"):        # a study's defaults (and its rule)
        extra.update(STUDY_OPTIMIZER_DEFAULTS)
        if method == "tuner-study-gzero":   # before 2026-11-27: constraint GPs at the boundary
            extra.update(GZERO)
        # before 2026-11-29: the budget on the median run time
        if method == "tuner-study-median":
            extra["budget_bound"] = "median"
        extra.update(overrides or {})
    opt = Optimizer(problem.space,
                    Settings.from_dict({**extra, "seed": seed, "objective_bounds": (0.0, 1.0)}))
    if method.endswith("-asha"):
        rules.append(ASHA(epochs, GRACE, ETA))
    elif method.endswith("-asha-rank"):          # Syne Tune's test at a rung
        rules.append(ASHA(epochs, GRACE, ETA, cutoff="rank"))
    elif method.endswith("-asha-auto"):
        rules.append(asha_rule(epochs, "auto", ETA))
    elif method.endswith("-curve"):      # as tuner run: one model for search and stops
        model = CurveModel(opt.space.dim, epochs, seed)
        rules.append(CurveRule(model, lambda t: opt.trials[t].x, fid))
        opt.use_curves(model)
    return opt, rules


def make(method: str, problem: Any, seed: int,
         overrides: Mapping[str, Any] | None = None) -> tuple[Any, list[Any]]:
    """(searcher, stopping rules) for one run of ``method`` on a ``CurveProblem``;
    ``overrides``: optimizer settings over a study's defaults (``tuner-study*`` only)."""
    if overrides and not method.startswith("tuner-study"):
        raise ValueError(f"overrides apply to the tuner-study methods, not {method!r}")
    epochs = problem.epochs
    if method.startswith("ray-asha-tuner"):   # TunerSearch under Ray's ASHA: the first route
        opt = Optimizer(problem.space, Settings.from_dict(
            {**STUDY_OPTIMIZER_DEFAULTS, **extra_budget(problem), "seed": seed,
             "objective_bounds": (0.0, 1.0)}))
        if method == "ray-asha-tuner":        # as TunerSearch with max_t; -last: stopped runs
            opt.use_curves(CurveModel(opt.space.dim, epochs, seed))   # at their last value
        searcher = Recorder(opt)
        return searcher, [RayScheduler(ray_asha(epochs), searcher.configs)]
    if method in OURS:
        return _ours(method, problem, seed, overrides)
    if method == "random":
        return Optimizer(problem.space, seed=seed, algorithm="random", n_initial=1), []
    if method == "random-topk":
        return Optimizer(problem.space, seed=seed, algorithm="random", n_initial=1), [TopK()]
    if method in ("ray-asha-random", "ray-asha-tpe"):
        inner = (Optimizer(problem.space, seed=seed, algorithm="random", n_initial=1)
                 if method == "ray-asha-random" else OptunaStopped(problem, seed, as_value=True))
        searcher = Recorder(inner)
        return searcher, [RayScheduler(ray_asha(epochs), searcher.configs)]
    if method in ("optuna-tpe-hyperband", "optuna-tpe-sh"):
        import optuna

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pruner = (optuna.pruners.HyperbandPruner(min_resource=GRACE, max_resource=epochs,
                                                     reduction_factor=ETA)
                      if method.endswith("hyperband") else
                      optuna.pruners.SuccessiveHalvingPruner(min_resource=GRACE,
                                                             reduction_factor=ETA))
        adapter = OptunaStopped(problem, seed, pruner=pruner)
        return adapter, [OptunaPruning(adapter)]
    if method in ("syne-asha", "syne-bohb"):
        adapter = SyneTuneMultiFidelity(problem, method.split("-")[1], seed, epochs)
        return adapter, [adapter]
    if method == "ax":
        from .ax_peer import make_ax

        return make_ax(problem, seed)
    raise ValueError(f"unknown method {method!r}; known: {list(METHODS)}")


def ray_asha(epochs: int) -> Any:
    """Ray Tune's ``AsyncHyperBandScheduler`` on rungs 1, 3, 9, ... epochs."""
    from ray.tune.schedulers import AsyncHyperBandScheduler

    return AsyncHyperBandScheduler(time_attr="epoch", metric=OBJECTIVE, mode="max", max_t=epochs,
                                   grace_period=GRACE, reduction_factor=ETA)


def extra_budget(problem: Any) -> dict[str, Any]:
    """A budgeted problem's constraint and ``stop_margin``, as ``tuner run`` sets them."""
    if problem.budget is None:
        return {}
    return {"constraints": [problem.constraint], "stop_margin": RUNTIME_STOP_MARGIN}


def worker_seconds(
    start: np.ndarray, finish: np.ndarray, mask: np.ndarray, horizon: float
) -> float:
    """Worker-seconds the runs in ``mask`` took up to the horizon."""
    used = np.clip(np.minimum(finish, horizon) - start, 0.0, None)
    return float(used[mask].sum()) if len(used) else 0.0
