"""Per-run metrics and their summaries over seeds."""

from __future__ import annotations

import math
import warnings
from typing import Any, Iterable

import numpy as np

from tuner.loop.simulator import SimulationResult

from .problems import Problem


def mean_se(R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over runs (axis 0); a run with no value yet (nan) is left out."""
    k = np.sum(np.isfinite(R), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # columns with no result at all
        return np.nanmean(R, 0), np.nanstd(R, 0) / np.sqrt(np.maximum(k, 1))


def sample_mean_se(values: Iterable[float]) -> tuple[float, float, int]:
    """Mean, sample standard error (ddof = 1) and count of the finite values; the error is nan
    with fewer than two values (the window study's tables)."""
    v = np.array([x for x in values if np.isfinite(x)], dtype=float)
    if v.size == 0:
        return math.nan, math.nan, 0
    return (float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan,
            v.size)


GRID_POINTS = 41          # best-feasible curve on 0, H/40, ..., H
FRACTIONS = (0.25, 0.5, 1.0)


def best_feasible_curve(
    res: SimulationResult, feasible: np.ndarray, grid: np.ndarray
) -> np.ndarray:
    """Best noise-free f over completed, feasible trials whose result arrived by each time
    (``nan`` before the first one)."""
    ok = res.completed & feasible
    out = np.full(len(grid), np.nan)
    for k, tau in enumerate(grid):
        sel = ok & (res.finish <= tau)
        if sel.any():
            out[k] = float(res.f_true[sel].max())
    return out


def run_metrics(res: SimulationResult, problem: Problem, horizon: float) -> dict[str, Any]:
    """The row of one run: best feasible score at 1/4, 1/2 and the full horizon, time to the
    target, trials on infeasible configurations and their worker-seconds, suggestion time."""
    feasible = np.array([problem.feasible(c) for c in res.configs], dtype=bool)
    grid = np.linspace(0.0, horizon, GRID_POINTS)
    curve = best_feasible_curve(res, feasible, grid)
    ok = res.completed & feasible & (res.finish <= horizon)
    target = problem.target()
    hit = ok & (res.f_true >= target)
    used = np.clip(np.minimum(res.finish, horizon) - res.start, 0.0, None)
    done = res.completed & (res.finish <= horizon)
    first = float(res.f_true[done][np.argmin(res.finish[done])]) if done.any() else math.nan
    row: dict[str, Any] = {
        "trials": len(res.start), "completed": int(done.sum()),
        "first_score": first,
        "target": target,
        "time_to_target": float(res.finish[hit].min()) if hit.any() else math.inf,
        "infeasible_trials": int((~feasible).sum()),
        "infeasible_share": float((~feasible).mean()) if len(feasible) else 0.0,
        "infeasible_seconds": float(used[~feasible].sum()),
        "worker_seconds": float(used.sum()),
        "suggest_ms_median": 1e3 * float(np.median(res.suggest_seconds)),
        "suggest_ms_mean": 1e3 * float(np.mean(res.suggest_seconds)),
    }
    for q in FRACTIONS:
        row[f"best_{q:g}"] = float(curve[int(round(q * (GRID_POINTS - 1)))])
    row["curve"] = ";".join(f"{v:.6g}" for v in curve)
    return row


def worst_nan(values: Iterable[float]) -> np.ndarray:
    """Scores with ``nan`` (nothing feasible yet) as -inf, so it ranks last in medians."""
    v = np.asarray(list(values), dtype=float)
    return np.where(np.isnan(v), -np.inf, v)


def quartiles(values: Iterable[float]) -> tuple[float, float, float]:
    """(25 %, median, 75 %) with nan as -inf (``lower`` interpolation keeps infinities exact)."""
    v = worst_nan(values)
    if len(v) == 0:
        return (math.nan,) * 3
    q = np.quantile(v, [0.25, 0.5, 0.75], method="lower" if np.isinf(v).any() else "linear")
    return float(q[0]), float(q[1]), float(q[2])
