"""The objective as the GP sees it: mapped to [0, 1] as a maximization, with the known minimum
at 0 (paper 001 footnote 6)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .trial import Status, Trial


def reward_range(mode: str, bounds: Sequence[float] | None, trials: Sequence[Trial]) -> tuple[float, float]:
    """[lo, hi] of sign * objective that the targets map to [0, 1]: ``bounds`` (the
    ``objective_bounds``) if known, else the observed range (001 §3.3's proxy)."""
    sign = 1.0 if mode == "max" else -1.0
    if bounds is not None:
        lo, hi = sorted(sign * np.asarray(bounds, dtype=float))
        return float(lo), float(hi)
    seen = [sign * tr.value for tr in trials if tr.status == Status.FINISHED]
    lo = min(seen) if seen else 0.0
    hi = max(seen) if seen else 1.0
    return float(lo), float(hi if hi > lo else lo + 1.0)


def normalized(trials: Sequence[Trial], mode: str, lo: float, hi: float,
               values: Sequence[float] | None = None) -> np.ndarray:
    """The trials' objective values (or ``values``) mapped to [0, 1] over [lo, hi], as a
    maximization."""
    vals = np.array([tr.value for tr in trials] if values is None else values, dtype=float)
    sign = 1.0 if mode == "max" else -1.0
    return np.clip((sign * vals - lo) / (hi - lo), 0.0, 1.0)
