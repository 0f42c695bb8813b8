"""Synthetic objectives for simulations and the paper reproductions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from tuner.core.kernels import SquaredExponential

if TYPE_CHECKING:
    from .simulator import RunTime


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
    """Simulation objectives by name: ``{kind: gp-sample-1d, grid: 1000, lengthscale: 0.02, seed: 0}``."""
    kind = spec.get("kind")
    if kind != "gp-sample-1d":
        raise ValueError(f"simulation.objective.kind must be one of ['gp-sample-1d'] (got {kind!r})")
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
        acc = 0.5 + 0.45 (1 - exp(-width / 128)) exp(-(log10 lr + 2.5)^2) exp(-((dropout - 0.2) / 0.3)^2)
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
