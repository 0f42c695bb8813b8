"""Test problems for simulations, the benchmark harness and the paper reproductions: one home.

* ``TestFunction`` and its instances: the classic synthetic functions on a box (Branin,
  Hartmann-3/-6, Ackley, Levy, Gardner's), as maximizations;
* the papers' own problems: a GP sample on a 1-D grid (001 §6.1), the sin-constrained problem
  (004 §7), RKHS functions with a constraint (003 App. F.1), and a budgeted training job.

The benchmark harness (``tuner.bench.problems``) wraps them with run-time models and horizons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from tuner.core.kernels import SquaredExponential

if TYPE_CHECKING:
    from .simulator import RunTime


class TestFunction:
    """A synthetic function of a point in a box, maximized (the minimization benchmarks negated,
    as BoTorch's ``test_functions.synthetic`` does with ``negate=True``); ``optimum``: its
    maximum."""

    bounds: tuple[tuple[float, float], ...] = ()
    optimum: float = math.nan

    def evaluate(self, x: np.ndarray) -> float:
        raise NotImplementedError

    def __call__(self, x: Sequence[float]) -> float:
        return self.evaluate(np.asarray(x, dtype=float))

    @property
    def dim(self) -> int:
        return len(self.bounds)

    def space(self, names: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        """The box as a search space, its coordinates named ``names`` (default x0, x1, ...)."""
        names = names or [f"x{i}" for i in range(self.dim)]
        return {n: {"type": "float", "low": lo, "high": hi} for n,
                (lo, hi) in zip(names, self.bounds)}

    def of_config(self, names: Sequence[str] | None = None) -> Callable[[Mapping[str, Any]], float]:
        """The function of a configuration whose coordinates are named ``names``."""
        names = list(names or [f"x{i}" for i in range(self.dim)])
        return lambda c: self(np.array([float(c[n]) for n in names]))


class Branin(TestFunction):
    bounds = ((-5.0, 10.0), (0.0, 15.0))
    optimum = -0.397887

    def evaluate(self, x: np.ndarray) -> float:
        x1, x2 = float(x[0]), float(x[1])
        b, cc, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
        return -((x2 - b * x1 ** 2 + cc * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10)


_H_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])


class Hartmann(TestFunction):
    """Hartmann-3 or -6 on the unit cube."""

    _A = {3: np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]]),
          6: np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
                       [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]])}
    _P = {
        3: 1e-4
        * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]]),
        6: 1e-4
        * np.array(
            [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
             [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]
        ),
    }
    _OPT = {3: 3.86278, 6: 3.32237}

    def __init__(self, dim: int = 6):
        self.bounds = ((0.0, 1.0),) * dim
        self.optimum = self._OPT[dim]
        self.A, self.P = self._A[dim], self._P[dim]

    def evaluate(self, x: np.ndarray) -> float:
        return float(_H_ALPHA @ np.exp(-np.sum(self.A * (x - self.P) ** 2, axis=1)))


class Ackley(TestFunction):
    optimum = 0.0

    def __init__(self, dim: int = 5, bounds: tuple[float, float] = (-5.0, 10.0)):
        self.bounds = (bounds,) * dim

    def evaluate(self, x: np.ndarray) -> float:
        a = -20 * math.exp(-0.2 * math.sqrt(np.mean(x**2))) - math.exp(
            np.mean(np.cos(2 * math.pi * x))
        )
        return -(a + 20 + math.e)


class Levy(TestFunction):
    optimum = 0.0

    def __init__(self, dim: int = 5, bounds: tuple[float, float] = (-10.0, 10.0)):
        self.bounds = (bounds,) * dim

    def evaluate(self, x: np.ndarray) -> float:
        w = 1 + (x - 1) / 4
        v = (math.sin(math.pi * w[0]) ** 2
             + np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(math.pi * w[:-1] + 1) ** 2))
             + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2))
        return -float(v)


class Gardner(TestFunction):
    """Gardner et al. (2014) §5.1: minimize cos(2 x1) cos(x2) + sin(x1) on [0, 6]^2 subject to
    cos(x1) cos(x2) - sin(x1) sin(x2) <= 0.5 (i.e. cos(x1 + x2) <= 0.5); ``g`` <= 0 is feasible."""

    bounds = ((0.0, 6.0), (0.0, 6.0))

    def evaluate(self, x: np.ndarray) -> float:
        x1, x2 = float(x[0]), float(x[1])
        return -(math.cos(2 * x1) * math.cos(x2) + math.sin(x1))

    def g(self, x: Sequence[float]) -> float:
        x1, x2 = float(x[0]), float(x[1])
        return math.cos(x1) * math.cos(x2) - math.sin(x1) * math.sin(x2) - 0.5

    @property
    def optimum(self) -> float:   # type: ignore[override]
        """The best feasible value, on a 3001 x 3001 grid."""
        x1, x2 = np.meshgrid(np.linspace(0, 6, 3001), np.linspace(0, 6, 3001))
        f = -(np.cos(2 * x1) * np.cos(x2) + np.sin(x1))
        return float(f[np.cos(x1 + x2) <= 0.5].max())


BRANIN, HARTMANN3, HARTMANN6 = Branin(), Hartmann(3), Hartmann(6)
ACKLEY5, LEVY5, GARDNER = Ackley(5), Levy(5), Gardner()


@dataclass
class GridFunction:
    """A function given by a lookup table on a 1-D grid of [0, 1] (paper 001 §6.1, App. C.1)."""

    grid: np.ndarray
    values: np.ndarray

    @property
    def f_opt(self) -> float:
        return float(self.values.max())

    def __call__(self, config: Mapping[str, Any]) -> float:
        i = int(np.argmin(np.abs(self.grid - float(config["x"]))))
        return float(self.values[i])

    @property
    def space(self) -> dict[str, dict[str, Any]]:
        return {"x": {"type": "float", "low": 0.0, "high": 1.0}}


def gp_sample_1d(n: int = 1000, lengthscale: float = 0.02, seed: int = 0) -> GridFunction:
    """A draw from a zero-mean GP with SE kernel on n equally spaced points of [0, 1],
    normalized into [0, 1] (paper 001 App. C.1: lengthscale 0.02, n = 1000)."""
    grid = np.linspace(0.0, 1.0, n)
    K = SquaredExponential()(grid[:, None], grid[:, None], 1.0, np.array([lengthscale]))
    w, Q = np.linalg.eigh(K)
    f = Q @ (np.sqrt(np.clip(w, 0.0, None)) * np.random.default_rng(seed).standard_normal(n))
    f = (f - f.min()) / (f.max() - f.min())
    return GridFunction(grid, f)


def make_objective(spec: Mapping[str, Any]) -> GridFunction:
    """Simulation objectives by name: ``{kind: gp-sample-1d, grid: 1000, lengthscale: 0.02, seed:
    0}``."""
    kind = spec.get("kind")
    if kind != "gp-sample-1d":
        raise ValueError(
            f"simulation.objective.kind must be one of ['gp-sample-1d'] (got {kind!r})"
        )
    unknown = set(spec) - {"kind", "grid", "lengthscale", "seed"}
    if unknown:
        raise ValueError(f"simulation.objective: unknown key(s) {sorted(unknown)}; "
                         "allowed: ['grid', 'lengthscale', 'seed']")
    return gp_sample_1d(int(spec.get("grid", 1000)), float(spec.get("lengthscale", 0.02)),
                        int(spec.get("seed", 0)))


@dataclass
class SinConstrained:
    """Paper 004 §7 / 000 App. E.1: f = -sin x1 - x2, g = sin x1 sin x2 + 0.95 on [0, 6]^2.

    The feasible set {g <= 0} is 1.8 % of the domain.  The constrained optimum is at
    x1 = 3 pi / 2, x2 = arcsin 0.95: f* = 1 - arcsin 0.95 = -0.25324 (a 3000 x 3000 grid gives
    -0.2540); the unconstrained maximum f = 1 at (3 pi / 2, 0) is infeasible (g = 0.95).
    f ranges over [-7, 1] on the domain, g over [-0.05, 1.95].
    """

    f_opt: float = float(1.0 - np.arcsin(0.95))
    f_range: tuple[float, float] = (-7.0, 1.0)

    space = {"x1": {"type": "float", "low": 0.0, "high": 6.0},
             "x2": {"type": "float", "low": 0.0, "high": 6.0}}
    constraint = {"metric": "g", "limit": 0.0, "type": "upper"}

    def __call__(self, config: Mapping[str, Any]) -> tuple[float, dict[str, float]]:
        x1, x2 = float(config["x1"]), float(config["x2"])
        return -np.sin(x1) - x2, {"g": float(np.sin(x1) * np.sin(x2) + 0.95)}


@dataclass
class RKHSConstrained:
    """Paper 003 App. F.1 (synthetic): X = 100 equally spaced points of [0, 1];
    f = sum_{i=1}^{p} a_i k(., x_i), a_i ~ U[-1, 1], x_i drawn from X, p = 100, SE kernel with
    lengthscale 0.2; g = -f + h with h = B / 4 or B / 2, where B = ||f||_k = sqrt(a^T K a) (the
    RKHS norm, the paper's bound on |f|).  A draw whose feasible set {f >= h} is empty is redrawn
    (Slater's condition, 003 Assumption 1, needs a feasible point).
    """

    grid: np.ndarray
    f_values: np.ndarray
    B: float
    h: float

    @classmethod
    def sample(cls, seed: int, h_fraction: float = 0.5, n: int = 100, p: int = 100,
               lengthscale: float = 0.2) -> "RKHSConstrained":
        rng = np.random.default_rng(seed)
        grid = np.linspace(0.0, 1.0, n)
        K = SquaredExponential()(grid[:, None], grid[:, None], 1.0, np.array([lengthscale]))
        while True:
            idx = rng.integers(n, size=p)
            a = rng.uniform(-1.0, 1.0, p)
            f = K[:, idx] @ a
            B = float(np.sqrt(a @ K[np.ix_(idx, idx)] @ a))
            if f.max() >= h_fraction * B:
                return cls(grid, f, B, h_fraction * B)

    @property
    def g_values(self) -> np.ndarray:
        return self.h - self.f_values

    @property
    def f_opt(self) -> float:
        return float(self.f_values[self.g_values <= 0].max())

    space = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
    constraint = {"metric": "g", "limit": 0.0, "type": "upper"}

    def __call__(self, config: Mapping[str, Any]) -> tuple[float, dict[str, float]]:
        i = int(np.argmin(np.abs(self.grid - float(config["x"]))))
        return float(self.f_values[i]), {"g": float(self.g_values[i])}


@dataclass
class BudgetedTraining:
    """A simulated training job whose run time grows with model size (for budget studies).

    Validation accuracy (noise-free) of a network of ``width`` units trained with learning rate
    ``lr`` and ``dropout``:
        acc = 0.5 + 0.45 (1 - exp(-width / 128)) exp(-(log10 lr + 2.5)^2) exp(-((dropout - 0.2) \
            / 0.3)^2)
    so bigger is better; mean run time = ``base + per_unit * width`` seconds (5 + 0.1 width by
    default: 17.8 s at width 128, 56 s at 512) with log-normal noise (``run_time``).  With a
    budget of 30 s the unconstrained optimum (width 512) is over budget and the best feasible
    width is about 250.
    """

    base: float = 5.0
    per_unit: float = 0.1
    cv: float = 0.25

    space = {"width": {"type": "int", "low": 8, "high": 512, "log": True},
             "lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
             "dropout": {"type": "float", "low": 0.0, "high": 0.6}}

    def __call__(self, config: Mapping[str, Any]) -> float:
        w, lr, d = float(config["width"]), float(config["lr"]), float(config["dropout"])
        return float(0.5 + 0.45 * (1 - np.exp(-w / 128.0)) * np.exp(-(np.log10(lr) + 2.5) ** 2)
                     * np.exp(-((d - 0.2) / 0.3) ** 2))

    def mean_run_time(self, config: Mapping[str, Any]) -> float:
        return self.base + self.per_unit * float(config["width"])

    def run_time(self) -> "RunTime":
        """The run-time model for ``tuner.loop.simulator.simulate``."""
        from .simulator import RunTime

        return RunTime(self.mean_run_time, self.cv)

    def best_feasible(self, limit: float) -> float:
        """max acc over configurations whose *mean* run time is within ``limit``."""
        w = np.floor((limit - self.base) / self.per_unit)
        w = min(max(w, 8.0), 512.0)
        return self({"width": w, "lr": 10 ** -2.5, "dropout": 0.2})


@dataclass
class CrossingCurves:
    """A synthetic training job that reports its validation score every epoch, with crossing
    learning curves (for early-stopping studies).

    With u = log10 lr in [-4, 0] and w = log2(width / 8) / 5 in [0, 1], a run's score after t of
    ``epochs`` epochs is

        y(t) = a - (a - 0.1) exp(-t / tau) - 0.04 w (t / epochs)^2
        a    = 0.92 - 0.06 (u + 2.5)^2 + 0.05 w,      tau = 0.5 epochs * 10^(-(u + 2.5) / 1.5)

    so a large learning rate learns fast and plateaus low, a small one starts slowly and ends
    high near lr = 10^-2.5 (the curves cross), and wide nets score higher but overfit a little
    late.  Mean run time = ``base + per_width * width`` seconds, spread evenly over the epochs.
    """

    epochs: int = 30
    base: float = 1.0
    per_width: float = 0.02
    cv: float = 0.2

    space = {"lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
             "width": {"type": "int", "low": 8, "high": 256, "log": True}}

    def score(self, config: Mapping[str, Any], t: float) -> float:
        u = math.log10(float(config["lr"]))
        w = math.log2(float(config["width"]) / 8.0) / 5.0
        a = 0.92 - 0.06 * (u + 2.5) ** 2 + 0.05 * w
        tau = 0.5 * self.epochs * 10 ** (-(u + 2.5) / 1.5)
        return float(a - (a - 0.1) * math.exp(-t / tau) - 0.04 * w * (t / self.epochs) ** 2)

    def curve(self, config: Mapping[str, Any]) -> list[tuple[float, dict[str, float]]]:
        """(fraction of the run time, {"epoch", "objective"}) after each epoch."""
        return [(k / self.epochs, {"epoch": float(k), "objective": self.score(config, k)})
                for k in range(1, self.epochs + 1)]

    def __call__(self, config: Mapping[str, Any]) -> tuple[float, dict[str, float], list]:
        return self.score(config, self.epochs), {}, self.curve(config)

    def mean_run_time(self, config: Mapping[str, Any]) -> float:
        return self.base + self.per_width * float(config["width"])

    def run_time(self) -> "RunTime":
        from .simulator import RunTime

        return RunTime(self.mean_run_time, self.cv)
