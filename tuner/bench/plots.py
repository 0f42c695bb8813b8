"""Best feasible score against simulated wall clock: one figure per problem, one panel per W."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .metrics import worst_nan  # noqa: E402
from .peers import METHODS, PEERS  # noqa: E402
from .problems import get_problem  # noqa: E402


def _quantile(C: np.ndarray, q: float) -> np.ndarray:
    """Column quantiles, interpolated unless a column holds -inf (nothing feasible yet)."""
    lower = np.quantile(C, q, axis=0, method="lower")
    with np.errstate(invalid="ignore"):
        linear = np.quantile(C, q, axis=0)
    return np.where(np.isinf(C).any(axis=0), lower, linear)


def plot_problem(cells: dict[tuple[str, int, str], list[dict[str, Any]]], problem: str,
                 out: Path) -> Path:
    """Median and 25-75 % band over seeds per method; dashed lines for the peers."""
    workers = sorted({w for p, w, _ in cells if p == problem})
    fig, axes = plt.subplots(1, len(workers), figsize=(6.0 * len(workers), 4.2), squeeze=False)
    f_opt = get_problem(problem).f_opt
    for ax, w in zip(axes[0], workers):
        for i, m in enumerate(m for m in METHODS if (problem, w, m) in cells):
            rows = cells[(problem, w, m)]
            C = worst_nan(np.concatenate([r["curve"] for r in rows])).reshape(len(rows), -1)
            x = np.linspace(0.0, rows[0]["horizon"], C.shape[1])
            lo, med, hi = (_quantile(C, q) for q in (0.25, 0.5, 0.75))
            style = "--" if m in PEERS else ("-" if m != "random" else ":")
            line, = ax.plot(x, np.where(np.isfinite(med), med, np.nan), style, label=m,
                            color=f"C{i}", lw=2.0 if m == "tuner" else 1.2)
            ax.fill_between(x, np.where(np.isfinite(lo), lo, np.nan),
                            np.where(np.isfinite(hi), hi, np.nan), color=line.get_color(),
                            alpha=0.08)
        if f_opt is not None:
            ax.axhline(f_opt, color="k", lw=0.6, alpha=0.5)
        n = sorted({len(rs) for (p, ww, _), rs in cells.items() if p == problem and ww == w})
        seeds = f"{n[0]}" if len(n) == 1 else f"{n[0]}-{n[-1]}"
        ax.set_title(f"{problem}, W = {w} ({seeds} seeds per method)")
        ax.set_xlabel("simulated wall clock (s)")
        ax.set_ylabel("best feasible score (noise-free)")
        finite = [v for (p, ww, _), rs in cells.items() if p == problem and ww == w
                  for r in rs for v in r["curve"] if np.isfinite(v)]
        if finite:
            top = max(finite + ([f_opt] if f_opt is not None else []))
            lo_y = np.quantile(finite, 0.1)
            ax.set_ylim(lo_y - 0.05 * (top - lo_y), top + 0.05 * (top - lo_y))
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = out / f"{problem}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
