"""The methods compared: this project's optimizer and thin ask/tell adapters for the peers.

Every method is driven by the same event loop (``tuner.loop.simulator.simulate``), which needs an
object with ``suggest()`` (returning ``.trial_id`` and ``.config``), ``tell(trial_id, value,
metrics=, finish_time=)``, ``fail(trial_id, reason, finish_time=)``, ``trials_to_stop(now)``,
``next_stop_time()``, a settable ``clock`` and ``constraints``.  The adapters keep running trials
pending the way each peer's own API expects:

* Optuna (``TPESampler(constant_liar=True)``, ``GPSampler``): ``study.ask`` / ``study.tell``; a
  running trial stays ``RUNNING`` in the study.  A constraint is passed as ``constraints_func``
  reading the value each trial stored with ``trial.set_user_attr`` before ``study.tell``.
* Syne Tune (``baselines.BOTorch`` in ``AskTellScheduler``): ``ask`` registers the trial as
  pending in the searcher, which fantasizes it (qLogEI with ``X_pending``); ``tell`` completes it.
  BOTorch has no constraint support: it optimizes the objective alone.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from tuner import PAPER_EXACT, Optimizer, Settings
from tuner.core.settings import by_name
from tuner.core.constraints import Constraint
from tuner.study.defaults import RUNTIME_STOP_MARGIN, STUDY_OPTIMIZER_DEFAULTS

from .problems import Problem

# this project's methods: Optimizer overrides.  ``tuner`` is the default Settings() as is; the
# others are paper 001's algorithms and 003's CBO on the paper-exact settings (tuner.PAPER_EXACT).
PAPER = by_name(PAPER_EXACT)    # by name: a variant names a switch at the top
DEFAULT = {k: v for k,
           v in Settings().flat().items() if k in (*by_name(PAPER_EXACT), "censor_noise")}
STUDY = {**DEFAULT, **STUDY_OPTIMIZER_DEFAULTS}      # what a study (tuner run, TunerSearch) runs
# a study's defaults, 2026-11-26
STUDY_2026_11_26 = {"output_warp": "copula", "kernel": "matern52"}
STUDY_2026_11_27 = {**STUDY_2026_11_26, "noise_floor": 1e-3}          # and 2026-11-27
# a study's constraint GPs before 2026-11-27: prior and running trials at the boundary g = 0
GZERO = {"constraint_prior_mean": "zero", "constraint_pending": "zero"}
COPULA_MATERN = {**DEFAULT, **STUDY_2026_11_26}
FLOOR = {**DEFAULT, **STUDY_2026_11_27}
COMBO = {**PAPER, "censoring": "soft", "n_initial": "auto", "lengthscale_prior": True,
         "constraint_handler": "pof"}
PROJECT: dict[str, dict[str, Any]] = {
    "tuner": {},                            # gp-ucb-sdf, soft censoring (+ pof with a constraint)
    "paper": PAPER,                         # gp-ucb-sdf as in paper 001 (+ rpol as in paper 004)
    "gp-ucb": {**PAPER, "algorithm": "gp-ucb"},
    "gp-ts-sdf": {**PAPER, "algorithm": "gp-ts-sdf"},
    "asy-ts": {**PAPER, "algorithm": "asy-ts"},
    "tuner-cbo": {**PAPER, "constraint_handler": "cbo"},   # constrained problems only
    "random": {"algorithm": "random", "n_initial": 1},
}
# the method ablation (tuner.bench.ablation): each switch alone on the paper-exact rules, combined,
# and moved away from the defaults
ABLATION: dict[str, dict[str, Any]] = {
    "soft-0.01": {**PAPER, "censoring": "soft", "censor_noise": 0.01},
    "soft-0.05": {**PAPER, "censoring": "soft", "censor_noise": 0.05},
    "soft-0.25": {**PAPER, "censoring": "soft", "censor_noise": 0.25},
    "soft-1": {**PAPER, "censoring": "soft", "censor_noise": 1.0},
    "sobol": {**PAPER, "n_initial": "auto"},
    "refit": {**PAPER, "refit_dense_until": 50},
    "matern": {**PAPER, "kernel": "matern52"},
    "delay-sqrt": {**PAPER, "delay_lambda_power": 0.5},
    "mean-prior": {**PAPER, "prior_mean": "mean"},
    "ls-prior": {**PAPER, "lengthscale_prior": True},
    "refit-prior": {**PAPER, "refit_dense_until": 50, "lengthscale_prior": True},
    "rpol-mean": {**PAPER, "handler_options": {"g": "mean"}},
    "rpol-ucb": {**PAPER, "handler_options": {"g": "ucb"}},
    "pof": {**PAPER, "constraint_handler": "pof"},
    # combined (soft censoring + Sobol start-up + lengthscale prior + pof, then one more change)
    "combo": {**COMBO, "censor_noise": 0.25},
    "combo-0.05": {**COMBO, "censor_noise": 0.05},
    "combo-rpol": {**COMBO, "censor_noise": 0.25, "constraint_handler": "rpol"},
    "combo-b0.5": {**COMBO, "censor_noise": 0.05, "beta": 0.5},
    "combo-r5": {**COMBO, "censor_noise": 0.05, "fit_restarts": 5},
    "combo-refit": {**COMBO, "censor_noise": 0.05, "refit_dense_until": 30},
    "combo-noprior": {**COMBO, "censor_noise": 0.25, "lengthscale_prior": False},
    # one switch moved away from the defaults
    "default-delay0.5": {**DEFAULT, "delay_lambda_power": 0.5},
    "default-delay0.25": {**DEFAULT, "delay_lambda_power": 0.25},
    "default-0.05": {**DEFAULT, "censor_noise": 0.05},
    "default-round": {**DEFAULT, "discrete_search": "round"},
    "default-per-choice": {**DEFAULT, "categorical_lengthscale": "per-choice"},
    "default-linear-budget": {**DEFAULT, "budget_scale": "linear"},
    # rough 5-8-D landscapes: candidates, each alone on the defaults
    "default-matern": {**DEFAULT, "kernel": "matern52"},
    "default-refit": {**DEFAULT, "refit_dense_until": 200},
    "default-starts10": {**DEFAULT, "n_starts": 10},
    "default-b0.25": {**DEFAULT, "beta": 0.25},
    "default-b0.5": {**DEFAULT, "beta": 0.5},
    "default-b2": {**DEFAULT, "beta": 2.0},
    "default-ts": {**DEFAULT, "algorithm": "gp-ts-sdf"},
    # candidates mostly near the incumbents (a fixed trust region, to test boundary
    # over-exploration)
    "default-local": {**DEFAULT, "n_candidates": 64, "n_local": 1024},
    "default-norefine": {**DEFAULT, "n_starts": 0},  # the candidates' best, no L-BFGS-B
    "default-matern-refit": {**DEFAULT, "kernel": "matern52", "refit_dense_until": 200},
    "default-matern-init6": {**DEFAULT, "kernel": "matern52", "n_initial": 6},
    "default-init6": {**DEFAULT, "n_initial": 6},
    "default-mi6-refit": {
        **DEFAULT,
        "kernel": "matern52",
        "n_initial": 6,
        "refit_dense_until": 200,
    },
    "default-mi6-refit-r3": {**DEFAULT, "kernel": "matern52", "n_initial": 6,
                             "refit_dense_until": 200, "fit_restarts": 3},
    "default-mi6-r3": {**DEFAULT, "kernel": "matern52", "n_initial": 6, "fit_restarts": 3},
    # a setting given as a function of the problem: one start-up point more than parameters
    "default-init-d1": {**DEFAULT, "n_initial": lambda p: len(p.space) + 1},
    "default-matern-init-d1": {**DEFAULT, "kernel": "matern52",
                               "n_initial": lambda p: len(p.space) + 1},
    "default-matern-gse": {**DEFAULT, "kernel": "matern52", "constraint_kernel": "se"},
    "default-matern-gse-d1": {**DEFAULT, "kernel": "matern52", "constraint_kernel": "se",
                              "n_initial": lambda p: len(p.space) + 1},
    "default-kauto": {**DEFAULT, "kernel": "auto"},
    "default-until-result": {**DEFAULT, "startup_until_result": True},
    "default-matern-d1-until": {**DEFAULT, "kernel": "matern52", "constraint_kernel": "se",
                                "n_initial": lambda p: len(p.space) + 1,
                                "startup_until_result": True},
    "default-kauto-d1": {**DEFAULT, "kernel": "auto", "n_initial": lambda p: len(p.space) + 1},
    # large studies: copies of running trials allowed, as before running_correlation
    "default-copies": {**DEFAULT, "running_correlation": None},
    # the L-BFGS-B starts one run each, as before refine: joint
    "default-refine-each": {**DEFAULT, "refine": "each"},
    # log EI on the censored GP instead of the UCB (a candidate default)
    "default-ei": {**DEFAULT, "algorithm": "gp-ei-sdf"},
    "default-ei-matern": {**DEFAULT, "algorithm": "gp-ei-sdf", "kernel": "matern52"},
    "default-ei-matern-gse": {**DEFAULT, "algorithm": "gp-ei-sdf", "kernel": "matern52",
                              "constraint_kernel": "se"},
    "default-copula": {**DEFAULT, "output_warp": "copula"},
    "default-copula-matern": COPULA_MATERN,
    # the study defaults of 2026-11-26 with less or more exploration (W = 16, where TPE leads)
    "default-copula-matern-b0.5": {**COPULA_MATERN, "beta": 0.5},
    "default-copula-matern-by0.25": {**COPULA_MATERN, "b_y": 0.25},
    "default-copula-matern-b2": {**COPULA_MATERN, "beta": 2.0},
    "default-copula-matern-by2": {**COPULA_MATERN, "b_y": 2.0},
    # with a floor on the objective GP's noise: a study's defaults of 2026-11-27
    "default-copula-matern-floor": FLOOR,
    # Thompson sampling on those, and without the rank warp
    "study-ts": {**FLOOR, "algorithm": "gp-ts-sdf"},
    "study-ts-nowarp": {**FLOOR, "algorithm": "gp-ts-sdf", "output_warp": "none"},
    # and with a weaker pull of the running trials towards the minimum, none, hallucinated
    # (GP-BUCB) or believed at the posterior mean past 3 running (W = 16, where TPE and random
    # search led on the recorded tables)
    "study-cn0.1": {**FLOOR, "censor_noise": 0.1},
    "study-cn1": {**FLOOR, "censor_noise": 1.0},
    "study-ignore": {**FLOOR, "algorithm": "gp-ucb"},
    "study-bucb": {**FLOOR, "algorithm": "gp-bucb"},
    "study-believe3": {**FLOOR, "believe_past": 3},
    "study-believe0": {**FLOOR, "believe_past": 0},
    "study-finish": {**FLOOR, "believe_past": 3, "finish_by_deadline": True},
    "study-idle": {**FLOOR, "believe_past": 3, "finish_by_deadline": True,
                   "idle_near_deadline": True},
    "study-ts-believe3": {**FLOOR, "algorithm": "gp-ts-sdf", "believe_past": 3},
    # the Optimizer's defaults, running trials believed past 3 running
    "default-believe3": {**DEFAULT, "believe_past": 3},
    # a study's defaults as they are now (tuner.study.config.STUDY_OPTIMIZER_DEFAULTS)
    "study": STUDY,
    # a study's defaults with log EI (constrained EI with a budget), and SE constraint GPs
    "study-ei": {**STUDY, "algorithm": "gp-ei-sdf"},
    "study-ei-gse": {**STUDY, "algorithm": "gp-ei-sdf", "constraint_kernel": "se"},
    # GP-UCB-SDF on every space (a study's algorithm until 2026-12-06, before ``auto``)
    "study-ucb": {**STUDY, "algorithm": "gp-ucb-sdf"},
    # log EI on the GP of the scores as they are (no rank warp)
    "study-ei-nowarp": {**STUDY, "algorithm": "gp-ei-sdf", "output_warp": "none"},
    # a run-time budget on the median run time (budget_bound: median, a study's default until
    # 2026-11-29; "study" now bounds the mean: g's mean plus half the GP's noise variance)
    "study-budget-median": {**STUDY, "budget_bound": "median"},
    # the constraint GPs (a budget's run time) with the SE kernel, the objective's Matern-5/2
    "study-gse": {**STUDY, "constraint_kernel": "se"},
    # a start-up design of min(2 d, max(d + 1, 5)): a study's default since 2026-11-28 (so the
    # same as "study"), and of 2 d, a study's default before
    "study-lean": {**STUDY, "n_initial": "lean"},
    "study-design2d": {**STUDY, "n_initial": "auto"},
    # runs stopped at 1.5 x the budget, their objective at the minimum (001 eq. 1) or the mean
    "study-stop": {**STUDY, "stop_margin": 0.5},
    "study-stopmean": {**STUDY, "stop_margin": 0.5, "stopped_objective": "mean"},
    # a run stopped the moment it passes the budget (its result could not count)
    "study-stop0": {**STUDY, "stop_margin": 0.0},
    "study-stop0mean": {**STUDY, "stop_margin": 0.0, "stopped_objective": "mean"},
    # running trials raised from the minimum towards the results' posterior mean where those
    # pin the value down (running_objective: blend, also under a budget; a study's default,
    # "auto", blends unless a budget or run-time limit), and eq. 1's minimum everywhere (a
    # study's behaviour before on Gardner and sin-constrained)
    "study-known": {**STUDY, "running_objective": "blend"},
    "study-minimum": {**STUDY, "running_objective": "minimum"},
    # a constraint's running trials at the constraint GP's posterior mean, not at g = 0, and
    # its prior mean at the mean of the values seen, not at the boundary (alone; both: a study's
    # defaults since 2026-11-27, measured as study-gprior-gmean)
    "study-gmean": {**STUDY, "constraint_prior_mean": "zero", "constraint_pending": "mean"},
    "study-gprior": {**STUDY, "constraint_prior_mean": "mean", "constraint_pending": "zero"},
    "study-gprior-gmean": {**STUDY, "constraint_prior_mean": "mean", "constraint_pending": "mean"},
    # a study's defaults before those two (the constraint GPs at the boundary)
    "study-gzero": {**STUDY, **GZERO},
    # a study's defaults with the rank warp always (its default until 2026-11-28: "study" in the
    # runs of before; docs/research/results/warp-auto-2026-11-28)
    "study-copula": {**STUDY, "output_warp": "copula"},
    # a study's defaults with the rank warp of the tail only (the results below the lower fence)
    # and with no warp (docs/research/results/tail-warp-2026-11-28)
    "study-tail": {**STUDY, "output_warp": "tail"},
    "study-nowarp": {**STUDY, "output_warp": "none"},
    # a study's defaults with the copula or none (output_warp auto until 2026-11-28's
    # tail-or-copula, which it still is with a constraint or a context;
    # docs/research/results/tail-or-copula-2026-11-28)
    "study-none-or-copula": {**STUDY, "output_warp": "none-or-copula"},
    # the Optimizer's defaults with both (not its default: mixed there, see the results README)
    "tuner-gpm": {"constraint_prior_mean": "mean", "constraint_pending": "mean"},
    # a study's defaults with half the exploration weight (a constrained start)
    "study-b0.5": {**STUDY, "beta": 0.5},
    # a study's defaults blind to the problem's constraint (how fast a study starts without it)
    "study-blind": STUDY,
}
BLIND = ("random", "study-blind")      # methods that are not told the problem's constraint
PEERS = ("optuna-tpe", "optuna-gp", "syne-botorch")
METHODS = (*PROJECT, *PEERS)
CONSTRAINED_ONLY = ("tuner-cbo",)
# BoTorchSearcher's acquisition optimizer cut from 20 restarts x 200 raw samples (its defaults)
# to 5 x 100: the defaults took 0.8 s per suggestion at W = 4 and 1.8 s at W = 16 (n < 100),
# 20-60x the other GP methods, more than the hour the full run may take on this shared machine.
SYNE_SEARCHER_KWARGS = {"num_restarts": 5, "num_raw_samples": 100}


@dataclass(frozen=True)
class Suggestion:
    trial_id: int
    config: dict[str, Any]


class Adapter:
    """Shared bookkeeping of the peer adapters: the clock, pending trials and an event log
    (``("ask", trial_id, time, n_pending)`` / ``("tell", trial_id, time)``) for the tests."""

    def __init__(self, problem: Problem):
        self.clock: Callable[[], float] = lambda: 0.0
        self.constraints = [Constraint.from_dict(problem.constraint)] if problem.constraint else []
        self.pending: dict[int, Any] = {}
        self.events: list[tuple] = []

    def _asked(self, tid: int, handle: Any) -> None:
        self.events.append(("ask", tid, float(self.clock()), len(self.pending)))
        self.pending[tid] = handle

    def _told(self, tid: int, finish_time: float | None) -> Any:
        self.events.append(
            ("tell", tid, float(self.clock() if finish_time is None else finish_time))
        )
        return self.pending.pop(tid)

    def constraint_value(self, metrics: Mapping[str, float] | None) -> float | None:
        """g of the reported metric (a run-time budget: the observed run time / limit - 1)."""
        if not self.constraints:
            return None
        c = self.constraints[0]
        return float(c.g(float((metrics or {})[c.metric])))

    def started(self, trial_id: int, now: float | None = None) -> None:
        pass           # the peers keep no start times

    def trials_to_stop(self, now: float | None = None) -> list[int]:
        return []      # the peers do not stop trials

    def next_stop_time(self) -> float | None:
        return None


# a fixed study name: Optuna's HyperbandPruner hashes it (with the trial number) into the
# bracket a trial joins, so an unnamed study's brackets differ from run to run
STUDY_NAME = "tuner-bench"


class OptunaAdapter(Adapter):
    """Optuna's ask/tell study with a TPE (constant liar) or GP sampler."""

    def __init__(self, problem: Problem, sampler: str, seed: int):
        super().__init__(problem)
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self.distributions = optuna_distributions(problem.space)
        cf = (lambda ft: [ft.user_attrs["constraint"]]) if self.constraints else None
        with warnings.catch_warnings():     # constraints_func: FutureWarning in Optuna 5
            warnings.simplefilter("ignore")
            if sampler == "tpe":
                s = optuna.samplers.TPESampler(constant_liar=True, seed=seed, constraints_func=cf)
            elif sampler == "gp":
                s = optuna.samplers.GPSampler(seed=seed, constraints_func=cf)
            else:
                raise ValueError(f"sampler must be tpe or gp (got {sampler!r})")
        self.study = optuna.create_study(direction="maximize", sampler=s, study_name=STUDY_NAME)

    def suggest(self) -> Suggestion:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trial = self.study.ask(self.distributions)
        self._asked(trial.number, trial)
        return Suggestion(trial.number, dict(trial.params))

    def tell(self, trial_id: int, value: float, metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None) -> None:
        trial = self._told(trial_id, finish_time)
        g = self.constraint_value(metrics)
        if g is not None:
            trial.set_user_attr("constraint", g)
        self.study.tell(trial, float(value))

    def fail(self, trial_id: int, reason: str = "failed",
             metrics: Mapping[str, float] | None = None, finish_time: float | None = None,
             status: str = "FAILED") -> None:
        self.study.tell(self._told(trial_id, finish_time), state=self._optuna.trial.TrialState.FAIL)


class SyneTuneAdapter(Adapter):
    """Syne Tune's ``BOTorch`` scheduler through ``AskTellScheduler``."""

    def __init__(self, problem: Problem, seed: int, searcher_kwargs: dict | None = None):
        super().__init__(problem)
        from syne_tune.optimizer.baselines import BOTorch
        from syne_tune.optimizer.schedulers.ask_tell_scheduler import AskTellScheduler

        # Syne Tune 0.16's BoTorchSearcher draws its start-up configurations with
        # ``Domain.sample()`` and no random_state, i.e. from numpy's global generator, which
        # random_seed does not seed: without this a run was not repeatable (the start-up design
        # changed with whatever ran before it in the process).
        np.random.seed(seed)

        self.scheduler = AskTellScheduler(BOTorch(syne_tune_space(problem.space), metric="y",
                                                  do_minimize=False, random_seed=seed,
                                                  searcher_kwargs=searcher_kwargs))

    def suggest(self) -> Suggestion:
        trial = self.scheduler.ask()
        self._asked(trial.trial_id, trial)
        return Suggestion(trial.trial_id, dict(trial.config))

    def tell(self, trial_id: int, value: float, metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None) -> None:
        self.scheduler.tell(self._told(trial_id, finish_time), {"y": float(value)})

    def fail(self, trial_id: int, reason: str = "failed",
             metrics: Mapping[str, float] | None = None, finish_time: float | None = None,
             status: str = "FAILED") -> None:
        trial = self._told(trial_id, finish_time)
        self.scheduler.base_scheduler.on_trial_error(trial)


def optuna_distributions(space: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The project's space dict as Optuna distributions."""
    from optuna.distributions import (CategoricalDistribution, FloatDistribution,
                                      IntDistribution)

    out: dict[str, Any] = {}
    for name, p in space.items():
        if p["type"] == "float":
            out[name] = FloatDistribution(p["low"], p["high"], log=bool(p.get("log", False)))
        elif p["type"] == "int":
            out[name] = IntDistribution(p["low"], p["high"], log=bool(p.get("log", False)))
        else:
            out[name] = CategoricalDistribution(list(p["choices"]))
    return out


def syne_tune_space(space: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The project's space dict as a Syne Tune config space."""
    from syne_tune.config_space import choice, lograndint, loguniform, randint, uniform

    out: dict[str, Any] = {}
    for name, p in space.items():
        log = bool(p.get("log", False))
        if p["type"] == "float":
            out[name] = (loguniform if log else uniform)(p["low"], p["high"])
        elif p["type"] == "int":
            out[name] = (lograndint if log else randint)(p["low"], p["high"])
        else:
            out[name] = choice(list(p["choices"]))
    return out


def available(method: str) -> bool:
    """Whether a method's package is installed (Optuna, Syne Tune + BoTorch)."""
    mods = {"optuna-tpe": ("optuna",), "optuna-gp": ("optuna", "torch"),
            "syne-botorch": ("syne_tune", "botorch")}.get(method, ())
    try:
        for m in mods:
            __import__(m)
    except ImportError:
        return False
    return True


def applies(method: str, problem: Problem) -> bool:
    """``tuner-cbo`` runs on constrained problems only."""
    return problem.constraint is not None or method not in CONSTRAINED_ONLY


def make_method(method: str, problem: Problem, seed: int) -> Any:
    """A fresh optimizer (or adapter) for one run."""
    if method in PROJECT or method in ABLATION:
        cons = [problem.constraint] if problem.constraint and method not in BLIND else []
        settings = PROJECT[method] if method in PROJECT else ABLATION[method]
        settings = {k: v(problem) if callable(v) else v for k, v in settings.items()}
        if method.startswith("study") and cons and problem.budget is not None:
            # a study stops a run past its wall-time budget, as ``tuner run`` does
            settings.setdefault("stop_margin", RUNTIME_STOP_MARGIN)
        return Optimizer(problem.space,
                         Settings.from_dict({**settings, "seed": seed, "constraints": cons}))
    if method == "optuna-tpe":
        return OptunaAdapter(problem, "tpe", seed)
    if method == "optuna-gp":
        return OptunaAdapter(problem, "gp", seed)
    if method == "syne-botorch":
        return SyneTuneAdapter(problem, seed, SYNE_SEARCHER_KWARGS)
    raise ValueError(f"unknown method {method!r}; known: {list(METHODS)}")
