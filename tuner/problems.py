"""Synthetic objectives for simulations and the paper reproductions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from .kernels import SquaredExponential


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
