"""The method ablation: each of the optimizer's switches alone and combined, against the peers.

The variants (``tuner.bench.peers.ABLATION``) run through the side-by-side harness like any
method, their rows in ``runs.csv`` files under the ablation folder; the peers' rows are read
from the side-by-side benchmark's own ``runs.csv`` (same problems, seeds and simulated clock,
so every comparison is paired):

    python -m tuner.bench.compare --methods paper soft-0.05 --out \
        docs/research/results/ablation/part1
    python -m tuner.bench.ablation                   # docs/research/results/ablation/summary.md

For each variant and (problem, W, horizon fraction) pair, the median best feasible score over
seeds is compared with every peer's median (a tie is within 0.1 %, as in the benchmark report).
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .metrics import FRACTIONS
from .peers import ABLATION, DEFAULT, PAPER, PEERS, PROJECT
from .report import Cell, _winner, fmt, load_runs, median_best
from .problems import get_problem

COMPETITORS = (*PEERS, "random")


def load(compare_runs: Path, ablation_dir: Path) -> dict[Cell, list[dict[str, Any]]]:
    """The peers' and the project's rows of the benchmark, plus every ablation part's rows."""
    cells = load_runs(compare_runs)
    for path in sorted(ablation_dir.glob("*/runs.csv")):
        for key, rows in load_runs(path).items():
            cells[key] = rows          # a re-run variant replaces the older rows
    return cells


def pairs(cells: dict[Cell, list], method: str) -> list[tuple[str, int, float]]:
    """The (problem, W, fraction) pairs where ``method`` and at least one competitor ran."""
    out = []
    for p, w in dict.fromkeys((p, w) for p, w, m in cells if m == method):
        if any((p, w, c) in cells for c in COMPETITORS):
            out += [(p, w, q) for q in FRACTIONS]
    return out


def normalized(cells: dict[Cell, list], method: str, p: str, w: int, q: float) -> float:
    """(median - random's median) / (f* - random's median): 0 = random search, 1 = the optimum."""
    f_opt = get_problem(p).f_opt
    if f_opt is None or (p, w, "random") not in cells:
        return math.nan
    base = median_best(cells[(p, w, "random")], q)
    v = median_best(cells[(p, w, method)], q)
    if not (math.isfinite(base) and f_opt > base):
        return math.nan
    return max((v - base) / (f_opt - base), -1.0) if math.isfinite(v) else -1.0


def summarize(cells: dict[Cell, list], method: str, reference: str = "paper") -> dict[str, Any]:
    """The figures of one row of the ablation table."""
    best_or_tied = vs_ref = wins_gp = 0
    total = ref_total = gp_total = 0
    norm = []
    by_w: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for p, w, q in pairs(cells, method):
        mine = median_best(cells[(p, w, method)], q)
        peers = [median_best(cells[(p, w, c)], q) for c in COMPETITORS if (p, w, c) in cells]
        ok = all(_winner(mine, v) != "peer" for v in peers)
        best_or_tied += ok
        total += 1
        by_w[w][0] += ok
        by_w[w][1] += 1
        if (p, w, "optuna-gp") in cells:
            gp_total += 1
            wins_gp += _winner(mine, median_best(cells[(p, w, "optuna-gp")], q)) != "peer"
        if (p, w, reference) in cells and method != reference:
            ref_total += 1
            vs_ref += _winner(mine, median_best(cells[(p, w, reference)], q)) == "project"
        norm.append(normalized(cells, method, p, w, q))
    norm_v = np.array([v for v in norm if math.isfinite(v)])
    return {"method": method, "pairs": total, "best_or_tied": best_or_tied, "by_w": dict(by_w),
            "vs_optuna_gp": (wins_gp, gp_total), "beats_ref": (vs_ref, ref_total),
            "normalized": float(norm_v.mean()) if len(norm_v) else math.nan}


def best_scoring_peer(cells: dict[Cell, list], p: str, w: int,
                      peers: Sequence[str] = PEERS) -> tuple[str, float] | None:
    """On a constrained problem p at W = w: the peer with the best median best feasible score at
    H, and that score (None without a constraint or a peer's runs)."""
    if get_problem(p).constraint is None:
        return None
    scores = {c: median_best(cells[(p, w, c)], 1.0) for c in peers if cells.get((p, w, c))}
    if not scores:
        return None
    top = max(scores, key=scores.get)
    return top, scores[top]


def infeasible(cells: dict[Cell, list], method: str) -> list[str]:
    """Per constrained problem and W: median trials on infeasible configurations and the median
    best feasible score at H, against the best-scoring peer."""
    out = []
    for p, w in dict.fromkeys((p, w) for p, w, m in cells if m == method):
        found = best_scoring_peer(cells, p, w)
        if found is None:
            continue
        top, top_score = found
        med = lambda m, k: float(np.median([r[k] for r in cells[(p, w, m)]]))
        mine, theirs = med(method, "infeasible_trials"), med(top, "infeasible_trials")
        out.append(f"| {method} | {p} | {w} | {mine:.0f} / {med(method, 'trials'):.0f} | "
                   f"{fmt(median_best(cells[(p, w, method)], 1.0))} | {top} | "
                   f"{theirs:.0f} / {med(top, 'trials'):.0f} | {fmt(top_score)} | "
                   f"{mine / theirs if theirs else math.inf:.2f} |")
    return out


def table(cells: dict[Cell, list], methods: Sequence[str]) -> list[str]:
    out = [
        "| variant | settings (on the paper-exact rules) | best or tied vs every peer | W = 4 | W "
        "= 16 "
        "| not behind optuna-gp | beats `paper` | normalized score |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in methods:
        s = summarize(cells, m)
        if not s["pairs"]:
            continue
        settings = DEFAULT if m == "tuner" else ABLATION.get(m, PROJECT.get(m, {}))
        diff = {k: v for k, v in settings.items() if PAPER.get(k, "-") != v}
        w = lambda k: (f"{s['by_w'][k][0]}/{s['by_w'][k][1]}" if k in s["by_w"] else "-")
        out.append(
            f"| {m} | {', '.join(f'{k}={v}' for k, v in diff.items()) or '-'} | "
            f"{s['best_or_tied']}/{s['pairs']} ({100 * s['best_or_tied'] / s['pairs']:.0f} %) | "
            f"{w(4)} | {w(16)} | {s['vs_optuna_gp'][0]}/{s['vs_optuna_gp'][1]} | "
            f"{s['beats_ref'][0]}/{s['beats_ref'][1]} | {s['normalized']:.3f} |"
        )
    return out


def write(compare_runs: Path, ablation_dir: Path, methods: Sequence[str] | None = None) -> Path:
    cells = load(compare_runs, ablation_dir)
    present = list(dict.fromkeys(m for _, _, m in cells))
    methods = [m for m in (methods or ["paper", *ABLATION, "tuner-cbo", "tuner"]) if m in present]
    lines = ["# Method ablation", "",
             "Each variant on the side-by-side harness (`python -m tuner.bench.ablation`). Per "
             "(problem, W, horizon fraction) pair: is the variant's median best feasible score "
             "the best or tied (0.1 %) against every peer (Optuna TPE, Optuna GPSampler, Syne Tune "
             "BoTorch, random)? *normalized score*: (median - random's) / (f* - random's), "
             "averaged over the pairs (0 = random search, 1 = the optimum; floored at -1).", ""]
    lines += table(cells, methods)
    lines += ["", "## Constrained problems: trials on infeasible configurations", "",
              "| variant | problem | W | infeasible / trials (median) | best feasible at H | "
              "best-scoring peer | its infeasible / trials | its best at H | ratio |",
              "|---|---|---|---|---|---|---|---|---|"]
    for m in methods:
        lines += infeasible(cells, m)
    path = ablation_dir / "summary.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", default="docs/research/results/compare/runs.csv")
    ap.add_argument("--out", default="docs/research/results/ablation")
    ap.add_argument("--methods", nargs="*", default=None)
    args = ap.parse_args(argv)
    path = write(Path(args.compare), Path(args.out), args.methods)
    print(path.read_text())
    return path


if __name__ == "__main__":
    main()
