"""Problem families: each generates many harness problems from a seed, with its structure drawn
at random, so that a default is judged on a distribution of problems, not on a few (as
HPOBench, YAHPO and the PFN work judge tuners).  An instance is the harness problem
``family-<family>-<seed>`` (``tuner.bench.problems.get_problem``).

The split is fixed here: seeds ``TUNING`` (0-99) are the instances a default may be chosen on,
seeds ``HELD_OUT`` (1000-1099) the ones it is reported on.  Never tune on a held-out seed.

The families (``FAMILIES``):

* ``mixed``: 3-12 parameters, each a float, a log-scaled float, an int or a categorical of 2-10
  choices (drawn at random); the objective is a draw from a GP with a random ARD
  squared-exponential kernel (lengthscales 0.15-2 per parameter, some parameters nearly
  inert), where each categorical's choices sit at random points of a plane, so that choices
  near each other score alike (categories that correlate);
* ``categorical``: 4-8 categoricals of 2-10 choices, additive effects plus 2-6 random pairwise
  interaction tables (a NAS-like space); its optimum is found by enumeration;
* ``rough``: 4-8 floats, the GP draw with short lengthscales (0.04-0.15): many local optima;
* ``budget``: ``mixed`` with a random run-time model (log-linear in the unit coordinates, plus a
  cost per choice) and a run-time budget that 5-60 % of the space meets; the objective leans
  towards the costly configurations, so the unconstrained optimum is often over the budget;
* ``noisy``: ``mixed`` with observation noise from none to heavy (0-0.5 of the objective's
  spread over the space);
* ``stragglers``: ``mixed`` with run times whose coefficient of variation is 0.6-1.5
  (log-normal: a few runs take several times the mean).

Objectives are scaled to an accuracy-like range (mean 0.5, spread 0.12 over random
configurations).  A GP draw uses 256 random Fourier features (Rahimi & Recht 2007), written
here with numpy: no library generates random mixed-space test functions.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Mapping

import numpy as np
from scipy.stats import qmc

from tuner.core.space import SearchSpace

from .problems import Config, Problem

FAMILIES = ("mixed", "categorical", "rough", "budget", "noisy", "stragglers")
TUNING = range(0, 100)
HELD_OUT = range(1000, 1100)
PREFIX = "family-"
FEATURES = 256          # random Fourier features of a GP draw
LEVEL, SPREAD = 0.5, 0.12


def name(family: str, seed: int) -> str:
    """The harness problem name of one instance.

    Args:
        family: one of ``FAMILIES``.
        seed: the instance's seed (``TUNING`` or ``HELD_OUT``).
    """
    return f"{PREFIX}{family}-{seed}"


def instances(family: str, split: str, n: int) -> list[str]:
    """The first ``n`` instance names of a family in one split.

    Args:
        family: one of ``FAMILIES``.
        split: ``tuning`` (choose defaults here) or ``held-out`` (report here).
        n: how many.
    """
    seeds = {"tuning": TUNING, "held-out": HELD_OUT}.get(split)
    if seeds is None:
        raise ValueError(f"split must be 'tuning' or 'held-out' (got {split!r})")
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {list(FAMILIES)}")
    return [name(family, s) for s in list(seeds)[:n]]


def parse(problem: str) -> tuple[str, int] | None:
    """(family, seed) of an instance name, or None when ``problem`` is not one."""
    if not problem.startswith(PREFIX):
        return None
    family, _, seed = problem[len(PREFIX):].rpartition("-")
    if family not in FAMILIES or not seed.isdigit():
        raise ValueError(f"{problem!r} is not a family instance: expected "
                         f"{PREFIX}<family>-<seed>, family one of {list(FAMILIES)}")
    return family, int(seed)


def instance(problem: str) -> Problem:
    """The harness problem ``family-<family>-<seed>``.

    Args:
        problem: the instance's name (``name``).
    """
    parsed = parse(problem)
    if parsed is None:
        raise ValueError(f"{problem!r} is not a family instance")
    family, seed = parsed
    rng = np.random.default_rng([FAMILIES.index(family), seed])
    return _BUILD[family](problem, rng)


# --- spaces -------------------------------------------------------------------------------------

def mixed_space(rng: np.random.Generator, dims: tuple[int, int] = (3, 12)) -> dict[str, dict]:
    """A space of ``dims`` parameters of random kinds (float, log float, int, categorical)."""
    space: dict[str, dict] = {}
    for i in range(int(rng.integers(dims[0], dims[1] + 1))):
        kind = rng.choice(["float", "log", "int", "categorical"], p=[0.3, 0.2, 0.2, 0.3])
        if kind == "float":
            space[f"x{i}"] = {"type": "float", "low": 0.0, "high": 1.0}
        elif kind == "log":
            space[f"x{i}"] = {"type": "float", "low": 1e-4, "high": 1.0, "log": True}
        elif kind == "int":
            high = int(rng.integers(4, 65))
            space[f"x{i}"] = {"type": "int", "low": 1, "high": high, "log": bool(high > 16)}
        else:
            space[f"x{i}"] = categorical(rng)
    return space


def categorical(rng: np.random.Generator) -> dict[str, Any]:
    """A categorical of 2-10 choices (half of them 5 or more)."""
    k = int(rng.integers(5, 11)) if rng.random() < 0.5 else int(rng.integers(2, 5))
    return {"type": "categorical", "choices": [f"c{j}" for j in range(k)]}


# --- objectives ---------------------------------------------------------------------------------

class GPDraw:
    """A function drawn from a zero-mean GP with an ARD squared-exponential kernel, by random
    Fourier features: f(z) = sqrt(2 / M) sum_m a_m cos(w_m . z / l + b_m), w_m ~ N(0, I),
    b_m ~ U(0, 2 pi), a_m ~ N(0, 1) (Rahimi & Recht 2007).  A number enters by its unit
    coordinate (log-scaled where the space says), a categorical by its choice's point in a
    plane, drawn N(0, I): choices close there score alike."""

    def __init__(self, space: Mapping[str, Mapping[str, Any]], rng: np.random.Generator,
                 lengthscales: tuple[float, float]):
        self.sp = SearchSpace.from_dict(space)
        self.names = list(space)
        self.embed: dict[str, dict[Any, np.ndarray]] = {}
        scales = []
        for n in self.names:
            lo, hi = lengthscales
            ls = math.exp(rng.uniform(math.log(lo), math.log(hi)))
            if rng.random() < 0.2:
                ls *= 10.0                      # a nearly inert parameter
            if space[n].get("type") == "categorical":
                self.embed[n] = {c: rng.normal(size=2) for c in space[n]["choices"]}
                scales += [ls * 2.0] * 2        # the plane's unit is about two unit-cube widths
            else:
                scales.append(ls)
        self.scale = np.array(scales)
        self.W = rng.normal(size=(FEATURES, len(scales)))
        self.b = rng.uniform(0, 2 * math.pi, FEATURES)
        self.a = rng.normal(size=FEATURES)

    def z(self, config: Config) -> np.ndarray:
        out = []
        for n in self.names:
            if n in self.embed:
                out += list(self.embed[n][config[n]])
            else:
                out.append(self.sp.params[n].encode(config[n])[0])
        return np.asarray(out) / self.scale

    def __call__(self, config: Config) -> float:
        return float(math.sqrt(2 / FEATURES) * self.a @ np.cos(self.W @ self.z(config) + self.b))


class PairTables:
    """Additive effects per choice plus pairwise interaction tables over some pairs of
    categoricals, all N(0, 1); the interactions weigh ``mix`` against the main effects."""

    def __init__(self, space: Mapping[str, Mapping[str, Any]], rng: np.random.Generator,
                 mix: float):
        self.names = list(space)
        self.choices = {n: list(space[n]["choices"]) for n in self.names}
        self.main = {n: rng.normal(size=len(c)) for n, c in self.choices.items()}
        pairs = list(itertools.combinations(self.names, 2))
        picked = rng.choice(len(pairs), size=min(len(pairs), int(rng.integers(2, 7))),
                            replace=False)
        self.pairs = {pairs[i]: mix * rng.normal(size=(len(self.choices[pairs[i][0]]),
                                                       len(self.choices[pairs[i][1]])))
                      for i in picked}

    def __call__(self, config: Config) -> float:
        idx = {n: self.choices[n].index(config[n]) for n in self.names}
        return float(sum(self.main[n][idx[n]] for n in self.names)
                     + sum(t[idx[a], idx[b]] for (a, b), t in self.pairs.items()))


def sample_configs(space: Mapping[str, Mapping[str, Any]], n: int = 2048, seed: int = 11
                   ) -> list[dict[str, Any]]:
    """``n`` configurations spread over the space (scrambled Sobol, decoded)."""
    sp = SearchSpace.from_dict(space)
    return [sp.decode(u) for u in qmc.Sobol(sp.dim, scramble=True, seed=seed).random(n)]


def scaled(f: Callable[[Config], float], configs: list[dict[str, Any]]
           ) -> tuple[Callable[[Config], float], np.ndarray]:
    """``f`` mapped to mean LEVEL and spread SPREAD over ``configs``; its values there."""
    v = np.array([f(c) for c in configs])
    mu, sd = float(v.mean()), float(v.std()) or 1.0
    return (lambda c: LEVEL + SPREAD * (f(c) - mu) / sd), LEVEL + SPREAD * (v - mu) / sd


def one_second(config: Config) -> float:
    """The mean run time of a family without a cost model: 1 s (runs vary by the cv)."""
    return 1.0


# --- the families -------------------------------------------------------------------------------

def _gp_problem(problem: str, rng: np.random.Generator, space: dict[str, dict],
                lengthscales: tuple[float, float], note: str, noise: float = 0.0,
                cv: float = 0.3) -> Problem:
    configs = sample_configs(space)
    f, values = scaled(GPDraw(space, rng, lengthscales), configs)
    return Problem(problem, space, f, None, one_second, noise_std=noise * SPREAD, cv=cv,
                   note=note + f"; {len(space)} parameters; best of 2048 spread configurations "
                   f"{values.max():.3f}")


def _mixed(problem: str, rng: np.random.Generator) -> Problem:
    return _gp_problem(problem, rng, mixed_space(rng), (0.15, 2.0), "mixed space, GP draw")


def _rough(problem: str, rng: np.random.Generator) -> Problem:
    space = {f"x{i}": {"type": "float", "low": 0.0, "high": 1.0}
             for i in range(int(rng.integers(4, 9)))}
    return _gp_problem(problem, rng, space, (0.04, 0.15), "rough: GP draw, short lengthscales")


def _noisy(problem: str, rng: np.random.Generator) -> Problem:
    space = mixed_space(rng)
    noise = float(rng.choice([0.0, 0.05, 0.2, 0.5]) * rng.uniform(0.5, 1.0))
    return _gp_problem(problem, rng, space, (0.15, 2.0), f"noise {noise:.2f} x spread",
                       noise=noise)


def _stragglers(problem: str, rng: np.random.Generator) -> Problem:
    space = mixed_space(rng)
    cv = float(rng.uniform(0.6, 1.5))
    return _gp_problem(problem, rng, space, (0.15, 2.0), f"run times cv {cv:.2f}", cv=cv)


def _categorical(problem: str, rng: np.random.Generator) -> Problem:
    space = {f"x{i}": categorical(rng) for i in range(int(rng.integers(4, 9)))}
    configs = sample_configs(space)
    f, _ = scaled(PairTables(space, rng, mix=float(rng.uniform(0.3, 1.0))), configs)
    sizes = [len(p["choices"]) for p in space.values()]
    total = math.prod(sizes)
    f_opt = None
    if total <= 200_000:          # enumerate: the optimum is known
        names = list(space)
        f_opt = max(f(dict(zip(names, combo)))
                    for combo in itertools.product(*(space[n]["choices"] for n in names)))
    return Problem(problem, space, f, f_opt, one_second, noise_std=0.01 * SPREAD,
                   note=f"all categorical {sizes} ({total} configurations), pairwise tables")


def _budget(problem: str, rng: np.random.Generator) -> Problem:
    space = mixed_space(rng)
    configs = sample_configs(space)
    sp = SearchSpace.from_dict(space)
    coef = {n: float(rng.normal(0, 1.0)) for n in space if space[n]["type"] != "categorical"}
    cost = {n: {c: float(rng.normal(0, 0.5)) for c in space[n]["choices"]}
            for n in space if space[n]["type"] == "categorical"}

    def log_cost(c: Config) -> float:
        return (sum(k * sp.params[n].encode(c[n])[0] for n, k in coef.items())
                + sum(t[c[n]] for n, t in cost.items()))

    lc = np.array([log_cost(c) for c in configs])
    shift = float(np.log(np.mean(np.exp(lc))))         # mean run time 1 s over the space

    def mean_runtime(c: Config) -> float:
        return float(math.exp(log_cost(c) - shift))

    g = GPDraw(space, rng, (0.15, 2.0))
    lean = float(rng.uniform(0.0, 0.6))      # the objective leans to the costly configurations
    sd_lc = float(lc.std()) or 1.0
    f, _ = scaled(lambda c: g(c) + lean * (log_cost(c) / sd_lc), configs)
    share = float(rng.uniform(0.05, 0.6))
    limit = float(np.quantile(np.exp(lc - shift), share))
    return Problem(problem, space, f, None, mean_runtime, noise_std=0.02 * SPREAD,
                   constraint={"metric": "runtime", "limit": limit, "type": "budget",
                               "runtime": True},
                   note=f"run-time budget {limit:.3g} s, met by {share:.0%} of the space; "
                        f"objective leans {lean:.2f} to cost")


_BUILD: dict[str, Callable[[str, np.random.Generator], Problem]] = {
    "mixed": _mixed, "categorical": _categorical, "rough": _rough, "budget": _budget,
    "noisy": _noisy, "stragglers": _stragglers,
}
