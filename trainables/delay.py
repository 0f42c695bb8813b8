"""Injected delay after training, reproducing paper 001 §6.2's delay settings.

The paper delays each observation by d ~ Poisson(mu = 10) iterations (stochastic setting) or by
a fixed d = 10 (asynchronous batch setting).  A real run has no iterations to count, so a
delay unit is given in seconds: d_seconds = d * delay_unit.
"""

from __future__ import annotations

import time

import numpy as np

_STREAM = 0x5DF  # separates the delay's random stream from the training's for the same seed


def sample_delay(kind: str, mean: float, unit: float, seed: int) -> float:
    """Delay in seconds: 0 (``none``), ``mean * unit`` (``fixed``) or
    ``Poisson(mean) * unit`` (``poisson``), drawn from a generator seeded by ``seed``."""
    if kind == "none":
        return 0.0
    if kind == "fixed":
        return float(mean * unit)
    if kind == "poisson":
        rng = np.random.default_rng([_STREAM, seed])
        return float(rng.poisson(mean) * unit)
    raise ValueError(f"unknown delay kind {kind!r}; allowed: ['none', 'fixed', 'poisson']")


def inject_delay(kind: str, mean: float, unit: float, seed: int) -> float:
    """Sleep for the sampled delay and return it (seconds)."""
    d = sample_delay(kind, mean, unit, seed)
    if d > 0:
        time.sleep(d)
    return d
