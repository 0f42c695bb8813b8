"""Variants against a reference method, paired by seed: for each (problem, W, horizon fraction),
each variant's median best feasible score and on how many seeds it beat or lost to the
reference's run with the same seed (same simulated clock and run times: a paired comparison).

    python -m tuner.bench.paired RUNS.csv [RUNS.csv ...] --base tuner [--methods A B] [--out \
        paired.md]

Several runs.csv files are read as one (e.g. a variant's runs beside the reference's).
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .metrics import FRACTIONS
from .report import Cell, fmt, load_runs, median_best, order


def merged(paths: Sequence[Path]) -> dict[Cell, list[dict[str, Any]]]:
    """The rows of every file, grouped by (problem, W, method); a seed seen twice keeps the last."""
    by_seed: dict[Cell, dict[int, dict[str, Any]]] = defaultdict(dict)
    for path in paths:
        for cell, rows in load_runs(path).items():
            for r in rows:
                by_seed[cell][int(r["seed"])] = r
    return {cell: list(rows.values()) for cell, rows in by_seed.items()}


def wins_losses(
    rows: list[dict[str, Any]], base: list[dict[str, Any]], q: float
) -> tuple[int, int, int]:
    """Seeds on which ``rows`` beat / lost to ``base`` at fraction q, and the seeds in common."""
    key = f"best_{q:g}"
    ref = {int(r["seed"]): r[key] for r in base}
    common = [(r[key], ref[int(r["seed"])]) for r in rows if int(r["seed"]) in ref]
    won = sum(a > b for a, b in common)
    lost = sum(a < b for a, b in common)
    return won, lost, len(common)


def behind(ours: Mapping[int, float], ref: Mapping[int, float], alpha: float = 0.05) -> bool:
    """``ours`` below ``ref`` beyond the seeds' spread: a two-sided paired Wilcoxon signed-rank
    test over the seeds both have (scipy; differences under 1e-9 are ties and left out)
    rejects at ``alpha``, and the differences lean below.  Fewer than 5 seeds, or 5 untied
    differences, never count as behind (the exact test cannot reject at 0.05 with under 6).

    Args:
        ours: seed -> score (higher is better; a run with no score as a very low one).
        ref: seed -> the reference's score.
        alpha: the test's level.
    """
    from scipy.stats import wilcoxon

    seeds = sorted(set(ours) & set(ref))
    d = np.array([ours[s] - ref[s] for s in seeds], dtype=float)
    nz = d[np.abs(d) > 1e-9]
    if len(seeds) < 5 or len(nz) < 5:
        return False
    return bool(wilcoxon(nz).pvalue < alpha and np.median(d) <= 0 and nz.mean() < 0)


def over(rows: list[dict[str, Any]], q: float, limited: bool) -> str:
    """At the full horizon of a constrained problem (``limited``): the median trials over the
    limit."""
    counts = [v for r in rows if not math.isnan(v := r.get("infeasible_trials", math.nan))]
    if q < 1 or not limited or not counts:
        return ""
    return f"; {fmt(float(np.median(counts)))} over"


def constrained(cells: dict[Cell, list[dict[str, Any]]], p: str, w: int) -> bool:
    """Any run of any method on (p, w) with a trial over the limit."""
    return any(r.get("infeasible_trials", 0) > 0 for (pp, ww, _), rows in cells.items()
               if (pp, ww) == (p, w) for r in rows)


def table(cells: dict[Cell, list[dict[str, Any]]], base: str,
          methods: Sequence[str] | None = None) -> list[str]:
    variants = [m for m in order({m for _, _, m in cells}) if m != base
                and (methods is None or m in methods)]
    lines = [f"| problem | W | at | {base} | " + " | ".join(variants) + " |",
             "|---" * (len(variants) + 4) + "|"]
    for p, w in sorted({(p, w) for p, w, _ in cells}, key=lambda pw: (pw[1], pw[0])):
        ref = cells.get((p, w, base))
        if not ref:
            continue
        limited = constrained(cells, p, w)
        for q in FRACTIONS:
            row = [p, str(w), f"H/{round(1 / q)}" if q < 1 else "H",
                   fmt(median_best(ref, q)) + over(ref, q, limited)]
            for m in variants:
                rows = cells.get((p, w, m))
                if not rows:
                    row.append("")
                    continue
                won, lost, n = wins_losses(rows, ref, q)
                row.append(
                    f"{fmt(median_best(rows, q))} ({won}/{lost} of {n})" + over(rows, q, limited)
                )
            lines.append("| " + " | ".join(row) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="runs.csv files of tuner.bench.compare")
    ap.add_argument("--base", default="tuner", help="the reference method (default: tuner)")
    ap.add_argument(
        "--methods", nargs="*", default=None, help="the variants to show (default: all)"
    )
    ap.add_argument("--out", default=None, help="write the table here (markdown) as well")
    args = ap.parse_args(argv)
    cells = merged([Path(p) for p in args.runs])
    if not any(m == args.base for _, _, m in cells):
        raise SystemExit(f"--base {args.base!r}: no runs of it in {args.runs}")
    text = "\n".join(
        [
            f"Median best feasible score; (won/lost of n): seeds on which the variant "
            f"beat / lost to `{args.base}` with the same seed; at H on a constrained problem, "
            f"the median trials on configurations over the limit.",
            "",
            *table(cells, args.base, args.methods),
        ]
    )
    if args.out:
        Path(args.out).write_text(text + "\n")
    try:
        print(text)
    except BrokenPipeError:      # piped into head
        pass
    return text


if __name__ == "__main__":
    main()
