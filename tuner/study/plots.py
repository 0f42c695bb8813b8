"""The plots a study's parent MLflow run holds: score and run time over the study's wall clock,
and the learning curves of runs that report progress.

``study_plots`` draws them from the trial records the tracker logs
(``tuner.integrations.mlflow.tracking``) and returns the PNG paths for
``StudyTracker.log_artifacts``.  Matplotlib with the Agg backend (no display needed).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

from tuner.core.trial import mode_sign  # noqa: E402
from tuner.study.record import TrialRecord  # noqa: E402

SCORE_PNG = "score_vs_wallclock.png"
RUNTIME_PNG = "runtime_vs_budget.png"
CURVES_PNG = "learning_curves.png"
_STATUS_STYLE = {"FINISHED": ("tab:blue", "o"), "FAILED": ("tab:red", "x"),
                 "KILLED": ("tab:gray", "s"), "TIMED_OUT": ("tab:orange", "v"),
                 "STOPPED": ("tab:purple", "D")}


def feasible(record: TrialRecord) -> bool:
    """All logged constraint values (metrics named ``g_*``, g <= 0 is feasible) are satisfied."""
    return all(v <= 0 for k, v in record.metrics.items() if k.startswith("g_"))


def best_so_far(records: Sequence[TrialRecord], metric: str, mode: str = "max"
                ) -> list[tuple[float, float]]:
    """(end time, best feasible score among the FINISHED trials ended by then), one point per
    improvement, in end-time order."""
    sign = mode_sign(mode)
    out: list[tuple[float, float]] = []
    for r in sorted(records, key=lambda r: r.end_time):
        if r.status != "FINISHED" or metric not in r.metrics or not feasible(r):
            continue
        if not out or sign * r.metrics[metric] > sign * out[-1][1]:
            out.append((r.end_time, r.metrics[metric]))
    return out


def study_clock(spans: Sequence[tuple[float, float]], gap: float = 5.0):
    """A map from wall-clock time to the study's own time: seconds since the first start with
    the stretches in which no trial ran and that last over ``gap`` seconds (a study stopped and
    resumed later) cut out.  Returns (the map, the study times at which such a cut falls)."""
    cuts: list[tuple[float, float]] = []          # (wall time the pause ended, its length)
    spans = sorted((s, e) for s, e in spans if e is not None)
    reach = spans[0][0] if spans else 0.0
    for s, e in spans:
        if s - reach > gap:
            cuts.append((s, s - reach))
        reach = max(reach, e)
    t0 = spans[0][0] if spans else 0.0

    def clock(t: float) -> float:
        return t - t0 - sum(length for end, length in cuts if end <= t)

    return clock, [clock(end) for end, _ in cuts]


def study_plots(records: Sequence[TrialRecord], out_dir: str | os.PathLike, metric: str,
                budget: float | None = None, mode: str = "max",
                runtime_metric: str = "runtime",
                curves: Mapping[int, Sequence[tuple[float, float]]] | None = None,
                fidelity: str = "step") -> list[Path]:
    """Write ``score_vs_wallclock.png`` (every finished trial's score at its end time, infeasible
    ones hollow, and the best feasible score so far as a step line) and ``runtime_vs_budget.png``
    (each trial's ``runtime_metric`` by trial id and status, with the budget as a line) into
    ``out_dir``, and with ``curves`` (runs that reported progress: ``callbacks.read_curves``)
    ``learning_curves.png``; returns their paths.  Time is seconds since the first trial
    started."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [_score_plot(records, out / SCORE_PNG, metric, mode),
             _runtime_plot(records, out / RUNTIME_PNG, runtime_metric, budget)]
    if curves:
        paths.append(curves_plot(records, curves, out / CURVES_PNG, metric, mode, fidelity))
    return paths


def curves_plot(records: Sequence[TrialRecord], curves: Mapping[int, Sequence[tuple[float, float]]],
                path: Path, metric: str, mode: str = "max", fidelity: str = "step") -> Path:
    """Every run's learning curve (``metric`` against the ``fidelity`` step), coloured by how it
    ended; a stopped run's last point marked where it was stopped; the best finished run in
    black."""
    fig, ax = plt.subplots(figsize=(7, 4))
    status = {r.trial_id: r.status for r in records}
    finished = [
        r for r in records if r.status == "FINISHED" and metric in r.metrics and feasible(r)
    ]
    best = (max if mode == "max" else min)(finished, key=lambda r: r.metrics[metric]).trial_id \
        if finished else None
    labelled: set[str] = set()
    for tid, curve in sorted(curves.items()):
        if not curve or tid not in status or tid == best:
            continue
        st = status[tid]
        color, marker = _STATUS_STYLE.get(st, ("tab:gray", "."))
        xs, ys = zip(*curve)
        ax.plot(xs, ys, color=color, alpha=0.45, lw=0.9,
                label=None if st in labelled else f"{st.lower()} run")
        labelled.add(st)
        if st != "FINISHED":
            ax.scatter([xs[-1]], [ys[-1]], color=color, marker=marker, s=18, zorder=3)
    if best is not None and curves.get(best):
        xs, ys = zip(*curves[best])
        ax.plot(xs, ys, color="black", lw=2.0, label=f"best run (trial {best})")
    n_stopped = sum(s == "STOPPED" for s in status.values())
    ax.set_xlabel(fidelity)
    ax.set_ylabel(metric)
    ax.set_title(f"learning curves: {len(curves)} runs, {n_stopped} stopped early (marked)")
    return _save(fig, path)


def _score_plot(records: Sequence[TrialRecord], path: Path, metric: str, mode: str) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    clock, resumed = study_clock([(r.start_time, r.end_time) for r in records])
    done = [r for r in records if r.status == "FINISHED" and metric in r.metrics]
    for ok, style in ((True, {"color": "tab:blue"}), (False, {"facecolors": "none",
                                                             "edgecolors": "tab:red"})):
        pts = [(clock(r.end_time), r.metrics[metric]) for r in done if feasible(r) == ok]
        if pts:
            ax.scatter(*zip(*pts), s=18, label="trial" if ok else "trial (infeasible)", **style)
    best = best_so_far(records, metric, mode)
    if best:
        end = clock(max(r.end_time for r in records))
        xs = [clock(t) for t, _ in best] + [end]
        ys = [v for _, v in best] + [best[-1][1]]
        ax.step(xs, ys, where="post", color="black", label="best so far")
    for k, t in enumerate(resumed):
        ax.axvline(t, color="gray", linestyle=":", label=None if k else "resumed (pause cut out)")
    ax.set_xlabel("seconds of the study since the first trial started (pauses cut out)")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} over wall-clock ({len(done)} finished of {len(records)} trials)")
    return _save(fig, path)


def _runtime_plot(records: Sequence[TrialRecord], path: Path, runtime_metric: str,
                  budget: float | None) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    for status, (color, marker) in _STATUS_STYLE.items():
        pts = [(r.trial_id, r.metrics[runtime_metric]) for r in records
               if r.status == status and runtime_metric in r.metrics]
        if pts:
            ax.scatter(*zip(*pts), color=color, marker=marker, s=20, label=status)
    if budget is not None:
        ax.axhline(budget, color="black", linestyle="--", label=f"budget {budget:g} s")
    ax.set_xlabel("trial id")
    ax.set_ylabel(f"{runtime_metric} (s)")
    ax.set_title(f"{runtime_metric} per trial")
    return _save(fig, path)


def _save(fig: plt.Figure, path: Path, legend: bool = True) -> Path:
    for ax in fig.axes:
        if legend and ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
