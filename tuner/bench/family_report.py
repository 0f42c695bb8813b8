"""Results on problem families (``tuner.bench.families``): one table per family and W, each
method's standing over the family's instances, not over a single problem.

    python -m tuner.bench.family_report RUNS.csv [RUNS.csv ...] --ours study [--out report.md]

An instance's score is normalized to its own range: (best - median) / (top - median), with
median and top the median and the best noise-free score of 2048 spread configurations (the
feasible ones; ``problems.random_values``), or the known optimum for top: 0 is a random
configuration's score, 1 the best.  Per (family, W, method, horizon) the table gives the mean
over instances of the median over seeds.  ``ours`` is best or tied on a (family, W, horizon)
unless a peer is ahead beyond the instances' spread: a paired Wilcoxon test over the instances
of the per-instance medians (``tuner.bench.paired.behind``; at least 6 instances are needed to
see anything).  A nothing-feasible run counts as the worst score seen in its cell.
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from tuner.core.persist import write_atomic

from .families import FAMILIES, parse
from .metrics import FRACTIONS
from .paired import behind, merged
from .problems import get_problem, random_values

HORIZONS = tuple(f"best_{q:g}" for q in FRACTIONS)
LABELS = ("H/4", "H/2", "H")


def normalizer(problem: str) -> tuple[float, float]:
    """(median, top) of an instance's scores over spread configurations (module docstring)."""
    p = get_problem(problem)
    values = random_values(p)
    top = p.f_opt if p.f_opt is not None else float(np.max(values))
    return float(np.median(values)), float(top)


def instance_scores(cells: dict[tuple[str, int, str], list[dict[str, Any]]]
                    ) -> dict[tuple[str, int, str, str], dict[str, float]]:
    """(family, W, method, horizon) -> instance -> normalized median best over the seeds."""
    out: dict[tuple[str, int, str, str], dict[str, float]] = defaultdict(dict)
    for (problem, w, method), rows in cells.items():
        parsed = parse(problem)
        if parsed is None:
            continue
        med, top = normalizer(problem)
        span = (top - med) or 1.0
        for h in HORIZONS:
            vals = [r[h] for r in rows]
            finite = [v for v in vals if isinstance(v, float) and math.isfinite(v)]
            worst = min(finite) if finite else med - span
            best = float(np.median([v if isinstance(v, float) and math.isfinite(v) else worst
                                    for v in vals]))
            out[(parsed[0], w, method, h)][problem] = (best - med) / span
    return out


def against_best_peer(scores: dict[tuple[str, int, str, str], dict[str, float]], family: str,
                      w: int, h: str, ours: str, methods: Sequence[str]) -> str:
    """`` (vs PEER, the best other mean: ahead on a, behind on b of n instances)``, or ``""``
    without another method."""
    others = [m for m in methods if m != ours]
    if not others:
        return ""
    peer = max(others, key=lambda m: np.mean(list(scores[(family, w, m, h)].values())))
    mine, theirs = scores[(family, w, ours, h)], scores[(family, w, peer, h)]
    common = sorted(set(mine) & set(theirs))
    up = sum(mine[i] > theirs[i] + 1e-9 for i in common)
    down = sum(mine[i] < theirs[i] - 1e-9 for i in common)
    return f" (vs {peer}: ahead on {up}, behind on {down} of {len(common)} instances)"


def report(paths: Sequence[Path], ours: str, alpha: float = 0.05) -> tuple[str, int, int]:
    """The markdown report, and how many (family, W, horizon) ``ours`` is best or tied on, of
    how many.

    Args:
        paths: harness ``runs.csv`` files (``tuner.bench.compare``), read as one.
        ours: the method judged against every other one in the files.
        alpha: the paired test's level.
    """
    scores = instance_scores(merged(paths))
    groups = sorted({(f, w) for f, w, _, _ in scores}, key=lambda k: (FAMILIES.index(k[0]), k[1]))
    lines, ok, total = [], 0, 0
    for family, w in groups:
        methods = sorted({m for f, ww, m, _ in scores if (f, ww) == (family, w)})
        n = len(scores.get((family, w, ours, HORIZONS[-1]), {}))
        lines += [f"### {family}, W = {w} ({n} instances)", "",
                  "| method | " + " | ".join(LABELS) + " |", "|---|" + "---|" * len(LABELS)]
        for m in methods:
            cells = [f"{np.mean(list(scores[(family, w, m, h)].values())):.3f}"
                     for h in HORIZONS]
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        if (family, w, ours, HORIZONS[-1]) in scores:
            verdict = []
            for h, label in zip(HORIZONS, LABELS):
                mine = scores[(family, w, ours, h)]
                ahead = [m for m in methods if m != ours
                         and behind(mine, scores[(family, w, m, h)], alpha)]
                total += 1
                ok += not ahead
                verdict.append(f"{label}: " + ("best or tied" if not ahead
                                               else "behind " + ", ".join(ahead))
                               + against_best_peer(scores, family, w, h, ours, methods))
            lines += ["", f"{ours}: " + "; ".join(verdict)]
        lines.append("")
    head = [f"Mean over instances of the normalized median best score (0: a random "
            f"configuration, 1: the best); {ours} best or tied on {ok} of {total} "
            f"(family, W, horizon).", ""]
    return "\n".join(head + lines) + "\n", ok, total


def main(argv: Sequence[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--ours", default="study")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    text, _, _ = report(args.runs, args.ours)
    if args.out:
        write_atomic(args.out, text)
    print(text)
    return text


if __name__ == "__main__":
    main()
