"""The objective as the GP sees it: mapped to [0, 1] as a maximization, with the known minimum
at 0 (paper 001 footnote 6), and optionally warped (``RankWarp``, ``PowerWarp``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata, yeojohnson, yeojohnson_normmax

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


@dataclass(frozen=True)
class RankWarp:
    """``output_warp: copula``: a monotone map of [0, 1] onto [0, 1] that spreads the results
    by their ranks: the Gaussian copula of Salinas, Shen & Perrone 2020 (ICML, §3: psi = Phi^-1
    o F~), rescaled so the worst result maps to 0 (the censored minimum of eq. 1 stays the
    minimum) and the best to 1.  F~ departs from the paper's: the plotting position
    (rank - 1/2) / n (average ranks for ties) instead of the empirical CDF winsorized at
    delta_n, which maps the best few results (about n delta_n of them) to one value and so
    hides which is best.  Between two results the map is linear; below the worst 0, above the
    best 1.  Written by hand over scipy's ``rankdata`` and ``ndtri``."""

    knots: np.ndarray          # normalized results, sorted, distinct
    warped: np.ndarray         # their images, increasing from 0 to 1

    @classmethod
    def fit(cls, u: np.ndarray) -> "RankWarp | None":
        """The warp of the normalized results ``u``; None (no warp) under two distinct values."""
        knots = np.unique(u)
        if len(knots) < 2:
            return None
        z = ndtri((rankdata(u) - 0.5) / len(u))
        zk = np.zeros(len(knots))
        zk[np.searchsorted(knots, u)] = z                  # equal values, equal F(u)
        return cls(knots, (zk - zk[0]) / (zk[-1] - zk[0]))

    def __call__(self, u: np.ndarray) -> np.ndarray:
        return np.interp(u, self.knots, self.warped)


@dataclass(frozen=True)
class PowerWarp:
    """``output_warp: power``: the Yeo-Johnson power transform (Yeo & Johnson 2000) of the
    standardized results, its lambda by maximum likelihood (``scipy.stats.yeojohnson_normmax``),
    as HEBO warps its outputs (Cowen-Rivers et al. 2022, §4.1), rescaled so that 0 maps to 0 and
    1 to 1.  Smooth and monotone; lambda = 1 is the identity."""

    mean: float
    std: float
    lmbda: float

    @classmethod
    def fit(cls, u: np.ndarray) -> "PowerWarp | None":
        std = float(np.std(u))
        if len(u) < 3 or std <= 0.0:
            return None
        mean = float(np.mean(u))
        with np.errstate(all="ignore"):
            lmbda = float(yeojohnson_normmax((u - mean) / std))
        return cls(mean, std, lmbda) if np.isfinite(lmbda) else None

    def _t(self, u: np.ndarray) -> np.ndarray:
        return yeojohnson((np.asarray(u, dtype=float) - self.mean) / self.std, self.lmbda)

    def __call__(self, u: np.ndarray) -> np.ndarray:
        ends = self._t(np.array([0.0, 1.0]))
        return np.clip((self._t(u) - ends[0]) / (ends[1] - ends[0]), 0.0, 1.0)


class LowerRankWarp(RankWarp):
    """``output_warp: copula-lower``: ``RankWarp`` below the median result, linear in the
    result above it (the better half keeps its gaps; only the worse half is spread by rank)."""

    @classmethod
    def fit(cls, u: np.ndarray) -> "LowerRankWarp | None":
        w = RankWarp.fit(u)
        if w is None:
            return None
        k, f = w.knots, w.warped
        m = float(np.median(u))
        fm = float(np.interp(m, k, f))
        top = k > m
        if not top.any() or k[-1] <= m:
            return None
        f = f.copy()
        f[top] = fm + (k[top] - m) * (1.0 - fm) / (k[-1] - m)
        return cls(k, f)


OutputWarp = Union[RankWarp, PowerWarp]
WARPS = {"copula": RankWarp, "power": PowerWarp, "copula-lower": LowerRankWarp}
OUTPUT_WARPS = ("none", *WARPS)


def fit_warp(kind: str, u: np.ndarray) -> OutputWarp | None:
    """The output warp ``kind`` (``Settings.output_warp``) of the normalized results ``u``."""
    return None if kind == "none" else WARPS[kind].fit(np.asarray(u, dtype=float))


def normalized(trials: Sequence[Trial], mode: str, lo: float, hi: float,
               values: Sequence[float] | None = None, warp: OutputWarp | None = None) -> np.ndarray:
    """The trials' objective values (or ``values``) mapped to [0, 1] over [lo, hi], as a
    maximization, then through ``warp`` if given."""
    vals = np.array([tr.value for tr in trials] if values is None else values, dtype=float)
    sign = 1.0 if mode == "max" else -1.0
    u = np.clip((sign * vals - lo) / (hi - lo), 0.0, 1.0)
    return u if warp is None else warp(u)
