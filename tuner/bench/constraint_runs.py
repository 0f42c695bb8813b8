"""Shared pieces of the constraint benchmarks (reproduce_rpol, reproduce_cbo, compare_budget_hpo):
a process pool, per-round metrics, mean/spread tables and plots.

Single-threaded BLAS is forced before numpy loads: the GPs here are small, and on a shared
2-core machine OpenBLAS threads spinning against other processes made the marginal-likelihood
fits about 17x slower (measured: 11 s vs 0.63 s for one 70-step study).
"""

from __future__ import annotations

import tuner.bench.threads  # noqa: F401,E402  (before numpy: one BLAS thread per process)

import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Iterable, Mapping, Sequence  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def run_pool(fn: Callable[[Any], Any], jobs: Sequence[Any], workers: int) -> list[Any]:
    """``fn`` over ``jobs`` in ``workers`` processes (in order), printing progress."""
    t0, out = time.perf_counter(), []
    with ProcessPoolExecutor(workers) as pool:
        for i, r in enumerate(pool.map(fn, jobs, chunksize=1)):
            out.append(r)
            if (i + 1) % max(1, len(jobs) // 20) == 0 or i + 1 == len(jobs):
                print(f"{i + 1}/{len(jobs)} runs, {time.perf_counter() - t0:.0f} s", flush=True)
    return out


def average_curves(f_true: np.ndarray, g_true: np.ndarray, f_opt: float) -> dict[str, np.ndarray]:
    """R(t)/t = sum_{s<=t} (f* - f(x_s)) / t (004 eq. 9), V(t)/t = sum g^+(x_s) / t (eq. 10),
    the soft violation [sum g(x_s)]^+ / t (003) and the number of violating rounds (003 §5)."""
    t = np.arange(1, len(f_true) + 1)
    return {"R/t": np.cumsum(f_opt - f_true) / t,
            "V/t": np.cumsum(np.maximum(g_true, 0.0)) / t,
            "softV/t": np.maximum(np.cumsum(g_true), 0.0) / t,
            "violations": np.cumsum(g_true > 0).astype(float)}


def summarize(
    curves: Mapping[str, Sequence[np.ndarray]], marks: Iterable[int]
) -> list[dict[str, Any]]:
    """One row per (label, mark): mean, std and quartiles over runs of curve[mark - 1]."""
    rows = []
    for label, runs in curves.items():
        A = np.vstack(runs)
        for t in marks:
            if t > A.shape[1]:
                continue
            v = A[:, t - 1]
            rows.append({"label": label, "t": t, "mean": float(np.nanmean(v)),
                         "std": float(np.nanstd(v)), "q25": float(np.nanpercentile(v, 25)),
                         "q75": float(np.nanpercentile(v, 75)), "runs": len(v)})
    return rows


def markdown_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], digits: int = 3
) -> str:
    def fmt(v: Any) -> str:
        return f"{v:.{digits}f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def pivot(
    rows: Sequence[Mapping[str, Any]], metric: str, marks: Sequence[int]
) -> list[dict[str, Any]]:
    """Rows label x columns t = mark: 'mean ± std' of one metric's summary."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        out.setdefault(r["label"], {"method": r["label"]})[f"t={r['t']}"] = \
            f"{r['mean']:.3f} ± {r['std']:.3f}"
    return [{k: v.get(k, "") for k in ["method"] + [f"t={t}" for t in marks]} for v in out.values()]


def plot_panels(panels: Sequence[tuple[str, Mapping[str, Sequence[np.ndarray]]]], title: str,
                path: Path, x: np.ndarray | None = None, xlabel: str = "round t",
                yscale: Sequence[str] | None = None) -> None:
    """One panel per (ylabel, {label: runs}): mean line and the 25-75 % band over runs;
    ``yscale`` per panel: "linear", "log" or "symlog" (log that also shows values <= 0)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8))
    axes = np.atleast_1d(axes)
    for k, (ax, (ylabel, curves)) in enumerate(zip(axes, panels)):
        for label, runs in curves.items():
            A = np.vstack(runs)
            xs = np.arange(1, A.shape[1] + 1) if x is None else x
            mean = np.nanmean(A, axis=0)
            (line,) = ax.plot(xs, mean, label=label, lw=1.6)
            ax.fill_between(xs, np.nanpercentile(A, 25, axis=0), np.nanpercentile(A, 75, axis=0),
                            color=line.get_color(), alpha=0.18, lw=0)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if yscale is not None and yscale[k] == "symlog":
            ax.set_yscale("symlog", linthresh=0.01)
        elif yscale is not None:
            ax.set_yscale(yscale[k])
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
