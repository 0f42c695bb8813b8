"""The objective as the GP sees it: mapped to [0, 1] as a maximization, with the known minimum
at 0 (paper 001 footnote 6), and optionally warped by the results' ranks (``RankWarp``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata

from .trial import Status, Trial, mode_sign


def reward_range(
    mode: str, bounds: Sequence[float] | None, trials: Sequence[Trial]
) -> tuple[float, float]:
    """[lo, hi] of sign * objective that the targets map to [0, 1]: ``bounds`` (the
    ``objective_bounds``) if known, else the observed range (001 §3.3's proxy)."""
    sign = mode_sign(mode)
    if bounds is not None:
        lo, hi = sorted(sign * np.asarray(bounds, dtype=float))
        return float(lo), float(hi)
    seen = [sign * tr.value for tr in trials if tr.status == Status.FINISHED]
    lo = min(seen) if seen else 0.0
    hi = max(seen) if seen else 1.0
    return float(lo), float(hi if hi > lo else lo + 1.0)


@dataclass(frozen=True)
class RankWarp:
    """A monotone piecewise-linear map of [0, 1] onto [0, 1]: ``fit_tail`` (``output_warp:
    tail``, below), or ``fit`` (``output_warp: copula``), which spreads the results
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

    @classmethod
    def fit_tail(cls, u: np.ndarray) -> "RankWarp | None":
        """``output_warp: tail``: the results as they are (affine) down to Tukey's lower fence
        q1 - 1.5 (q3 - q1); the ones below it (diverged runs, failures) by rank into the bottom
        share of [0, 1] they make up, at most ``TAIL_SHARE``.  Not from the papers: the copula
        keeps a search off diverged runs but bends a smooth objective's top; this keeps the first
        and drops the second (docs/research/notes/method.md "The rank warp's tail only").  None
        under two distinct values."""
        knots = np.unique(u)
        if len(knots) < 2:
            return None
        q1, q3 = np.percentile(u, [25, 75])
        fence = q1 - 1.5 * (q3 - q1)
        below = knots < fence
        nb = int(below.sum())
        if nb == 0:
            return cls(knots, (knots - knots[0]) / (knots[-1] - knots[0]))
        c = min(TAIL_SHARE, float(np.mean(u < fence)))
        warped = np.empty(len(knots))
        warped[below] = c * np.arange(nb) / nb
        span = knots[-1] - fence          # 0 when three quarters of the results tie at the best
        warped[~below] = c + (1.0 - c) * (knots[~below] - fence) / span if span > 0 else 1.0
        return cls(knots, warped)

    def __call__(self, u: np.ndarray) -> np.ndarray:
        return np.interp(u, self.knots, self.warped)

    def inverse(self, w: np.ndarray) -> np.ndarray:
        """The normalized value of warped ``w``: the map undone between the results, extended
        linearly past them with the end segments' slopes (an upper confidence bound above the
        best result stays above it on the objective's scale)."""
        k, f = self.knots, self.warped
        w = np.asarray(w, dtype=float)
        u = np.interp(w, f, k)
        lo, hi = w < 0.0, w > 1.0
        u[lo] = k[0] + w[lo] * (k[1] - k[0]) / (f[1] - f[0])
        u[hi] = k[-1] + (w[hi] - 1.0) * (k[-1] - k[-2]) / (f[-1] - f[-2])
        return u


OUTPUT_WARPS = ("none", "copula", "tail", "none-or-copula", "tail-or-copula", "auto")
TAIL_SHARE = 0.25       # output_warp tail: the most of [0, 1] the results below the fence take


def normalized(trials: Sequence[Trial], mode: str, lo: float, hi: float,
               values: Sequence[float] | None = None, warp: RankWarp | None = None) -> np.ndarray:
    """The trials' objective values (or ``values``) mapped to [0, 1] over [lo, hi], as a
    maximization, then through ``warp`` if given."""
    vals = np.array([tr.value for tr in trials] if values is None else values, dtype=float)
    u = np.clip((mode_sign(mode) * vals - lo) / (hi - lo), 0.0, 1.0)
    return u if warp is None else warp(u)
