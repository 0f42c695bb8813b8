"""Plots of what a study found, drawn from its trial table (``trials.csv`` rows), so that
``tuner plot STUDY`` draws them from a folder alone and a study writes them when it ends:

* ``slice.png``: the score against each setting, one panel per parameter (log axes where the
  space is log-scaled), trials over the budget hollow;
* ``parallel.png``: parallel coordinates, one line per finished trial across the settings
  (each on its own scale) and the score, coloured by score, the best ten on top;
* ``importance.png``: how much each setting matters: permutation importance of a random forest
  fit to the finished trials (scikit-learn's ``RandomForestRegressor`` and
  ``permutation_importance``; settings on their encoded scale, categories as their index);
* ``timeline.png``: each trial as a bar from its start to its end on the worker slot it ran in
  (slots assigned in start order per node), coloured by status, budget stops marked: the
  picture of asynchrony.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from tuner.core.space import SearchSpace  # noqa: E402

from .plots import _STATUS_STYLE, _save, study_clock  # noqa: E402

Row = Mapping[str, Any]


def space_plots(rows: Sequence[Row], space: Mapping[str, Any], metric: str, mode: str,
                out_dir: Path, budget: float | None = None) -> list[Path]:
    """The four plots (module docstring) into ``out_dir``; returns their paths (the score
    plots need finished trials, the timeline start and end times)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    sp = SearchSpace.from_dict(space)
    done = [r for r in rows if r.get("status") == "FINISHED" and _number(r.get(metric))]
    paths = []
    if done:
        paths += [slice_plot(done, sp, metric, out_dir / "slice.png"),
                  parallel_plot(done, sp, metric, mode, out_dir / "parallel.png")]
        if len(done) >= 4:
            paths.append(importance_plot(done, sp, metric, out_dir / "importance.png"))
    if any(_number(r.get("start")) and _number(r.get("finish")) for r in rows):
        paths.append(timeline_plot(rows, out_dir / "timeline.png", budget))
    return paths


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)


def _position(sp: SearchSpace, name: str, value: Any) -> float:
    """A setting on its own [0, 1] scale (log where the space is; a category by its index)."""
    p = sp.params[name]
    if p.kind == "categorical":
        idx = next((i for i, c in enumerate(p.choices) if str(c) == str(value)), 0)
        return idx / max(len(p.choices) - 1, 1)
    return float(p.encode(float(value))[0])


def slice_plot(done: Sequence[Row], sp: SearchSpace, metric: str, path: Path) -> Path:
    names = sp.names
    cols = min(len(names), 3)
    nrows = -(-len(names) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False,
                             sharey=True)
    for ax, name in zip(axes.flat, names):
        p = sp.params[name]
        for over, style in ((False, {"color": "tab:blue"}),
                            (True, {"facecolors": "none", "edgecolors": "tab:red"})):
            pts = [r for r in done if bool(r.get("over_budget")) == over]
            if not pts:
                continue
            xs = [_position(sp, name, r[name]) * (len(p.choices) - 1) if p.kind == "categorical"
                  else float(r[name]) for r in pts]
            label = None if ax is not axes.flat[0] else "over budget" if over else "trial"
            ax.scatter(xs, [r[metric] for r in pts], s=16, label=label, **style)   # one legend
        if p.kind == "categorical":
            ax.set_xticks(range(len(p.choices)), [str(c) for c in p.choices], fontsize=7)
        elif getattr(p, "log", False):
            ax.set_xscale("log")
        ax.set_xlabel(name)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel(metric)
    fig.suptitle(f"{metric} against each setting ({len(done)} finished trials)")
    return _save(fig, path)


def parallel_plot(done: Sequence[Row], sp: SearchSpace, metric: str, mode: str, path: Path) -> Path:
    names = sp.names
    scores = np.array([float(r[metric]) for r in done])
    lo, hi = float(scores.min()), float(scores.max())
    order = np.argsort(scores if mode == "max" else -scores)      # the best drawn last
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * (len(names) + 1)), 4.2))
    cmap = plt.get_cmap("viridis")
    for rank, i in enumerate(order):
        r = done[i]
        ys = [_position(sp, n, r[n]) for n in names] + [(scores[i] - lo) / (hi - lo or 1.0)]
        top = rank >= len(order) - 10
        shade = (scores[i] - lo) / (hi - lo or 1.0)
        ax.plot(range(len(ys)), ys, color=cmap(shade if mode == "max" else 1 - shade),
                alpha=0.9 if top else 0.25, lw=1.6 if top else 0.8)
    ax.set_xticks(range(len(names) + 1), names + [metric])
    ax.set_yticks([0, 1], ["low", "high"])
    ax.set_xlim(-0.1, len(names) + 0.1)
    sm = plt.cm.ScalarMappable(cmap=cmap if mode == "max" else cmap.reversed(),
                               norm=plt.Normalize(lo, hi))
    fig.colorbar(sm, ax=ax, label=metric)
    ax.set_title(f"parallel coordinates: {len(done)} finished trials, the best 10 bold")
    return _save(fig, path)


def importance(
    done: Sequence[Row], sp: SearchSpace, metric: str, seed: int = 0
) -> dict[str, float]:
    """Permutation importance of each setting for a random forest fit to the finished trials
    (scikit-learn), normalized to sum to 1 (all zero if none matters)."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.inspection import permutation_importance

    X = np.array([[_position(sp, n, r[n]) for n in sp.names] for r in done])
    y = np.array([float(r[metric]) for r in done])
    forest = RandomForestRegressor(n_estimators=64, min_samples_leaf=2, random_state=seed).fit(X, y)
    imp = permutation_importance(forest, X, y, n_repeats=5, random_state=seed).importances_mean
    imp = np.clip(imp, 0.0, None)
    total = imp.sum()
    return {n: float(v / total) if total > 0 else 0.0 for n, v in zip(sp.names, imp)}


def importance_plot(done: Sequence[Row], sp: SearchSpace, metric: str, path: Path) -> Path:
    imp = importance(done, sp, metric)
    names = sorted(imp, key=imp.get)
    fig, ax = plt.subplots(figsize=(6, 0.5 * len(names) + 1.5))
    ax.barh(names, [imp[n] for n in names], color="tab:blue")
    for y, n in enumerate(names):
        ax.text(imp[n], y, f" {imp[n]:.2f}", va="center", fontsize=8)
    ax.set_xlim(0, 1.1)
    ax.set_xlabel(f"share of the explained variation of {metric} (permutation importance)")
    ax.set_title(f"what matters: a random forest on {len(done)} finished trials")
    return _save(fig, path)


def lanes(rows: Sequence[Row]) -> dict[int, tuple[str, int]]:
    """Each trial's (node, slot): slots assigned in start order, a trial taking the first slot
    of its node free at its start."""
    free: dict[str, list[float]] = {}
    out: dict[int, tuple[str, int]] = {}
    for r in sorted(rows, key=lambda r: (r["start"], r["trial"])):
        node = str(r.get("node") or "local")[:12]
        ends = free.setdefault(node, [])
        slot = next((k for k, end in enumerate(ends) if end <= r["start"] + 1e-6), len(ends))
        if slot == len(ends):
            ends.append(r["finish"])
        else:
            ends[slot] = r["finish"]
        out[int(r["trial"])] = (node, slot)
    return out


def timeline_plot(rows: Sequence[Row], path: Path, budget: float | None = None) -> Path:
    rows = [r for r in rows if _number(r.get("start")) and _number(r.get("finish"))]
    where = lanes(rows)
    keys = sorted(set(where.values()))
    index = {k: i for i, k in enumerate(keys)}
    clock, resumed = study_clock([(r["start"], r["finish"]) for r in rows])
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(keys) + 1.8))
    labelled: set[str] = set()
    for r in rows:
        y = index[where[int(r["trial"])]]
        st = str(r["status"])
        color, _ = _STATUS_STYLE.get(st, ("tab:gray", "."))
        if st == "FINISHED" and r.get("over_budget"):
            st, color = "FINISHED over budget", "tab:pink"
        ax.barh(y, clock(r["finish"]) - clock(r["start"]), left=clock(r["start"]), height=0.7,
                color=color, alpha=0.8, edgecolor="white", label=None if st in labelled else st)
        labelled.add(st)
        if st == "TIMED_OUT" and r.get("over_budget"):
            ax.scatter([clock(r["finish"])], [y], marker="x", color="black", s=30, zorder=3,
                       label=None if "stop" in labelled else "budget stop")
            labelled.add("stop")
    one_node = len({node for node, _ in keys}) == 1
    ax.set_yticks(range(len(keys)), [f"slot {slot + 1}" if one_node else f"{node} #{slot + 1}"
                                     for node, slot in keys], fontsize=8)
    for k, t in enumerate(resumed):
        ax.axvline(t, color="gray", linestyle=":", label=None if k else "resumed (pause cut out)")
    ax.set_xlabel("seconds of the study since the first trial started (pauses cut out)")
    ax.invert_yaxis()
    title = f"trials on workers: {len(rows)} trials on {len(keys)} slots"
    ax.set_title(title + ("" if budget is None else f", budget {budget:.3g} s per trial"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)   # beside the bars
    return _save(fig, path, legend=False)
