"""Best or tied against every peer, per candidate default, from several harness ``runs.csv`` files.

For each candidate (one of this project's methods) and each (problem, W, horizon fraction) where
it and at least one peer ran: is its median best feasible score over the seeds ``< --seeds`` the
best or tied (0.1 %, ``benchmarks.report._winner``) against every peer's median over the same
seeds?  Rows of a later file replace those of an earlier one for the same (problem, W, method).

The last two columns count the losses and the leads that the seeds' spread bears out: the best
peer's results rank above the candidate's over the seeds, or the candidate's above every peer's
(Mann-Whitney U, one-sided, p < ``--alpha``; scipy).  The target counts every loss; these say
how many of them, and of the leads, stand out from the seeds' spread.  Nothing corrects for the
many pairs tested: at p < 0.05 over 45 pairs two or so such losses are expected by chance alone.

    python scripts/studies/best_or_tied.py docs/results/compare/runs.csv docs/results/recorded/runs.csv \
        RUNS.csv --candidates tuner default-copula --seeds 10
"""
from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from scipy.stats import mannwhitneyu

from benchmarks.ablation import COMPETITORS
from benchmarks.metrics import FRACTIONS, worst_nan
from benchmarks.report import _winner, load_runs, median_best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--candidates", nargs="+", required=True)
    ap.add_argument("--seeds", type=int, default=10, help="use seeds 0 .. N-1 of every method")
    ap.add_argument("--workers", type=int, nargs="*", help="only these W")
    ap.add_argument("--alpha", type=float, default=0.05, help="the one-sided test's level")
    args = ap.parse_args()
    cells = {}
    for path in args.runs:
        for key, rows in load_runs(path).items():
            cells[key] = [r for r in rows if r["seed"] < args.seeds]
    print("| candidate | best or tied vs every peer | losses (problem, W, at: best peer) "
          "| losses beyond the seeds' spread | leads beyond it |\n|---|---|---|---|---|")
    for cand in args.candidates:
        ok = total = 0
        lost: dict[str, list[str]] = defaultdict(list)
        borne: list[str] = []
        leads = 0
        for (p, w, m), rows in sorted(cells.items()):
            if m != cand or not rows or (args.workers and w not in args.workers):
                continue
            peers = [c for c in COMPETITORS if cells.get((p, w, c))]
            if not peers:
                continue
            for q in FRACTIONS:
                mine = median_best(rows, q)
                theirs = {c: median_best(cells[(p, w, c)], q) for c in peers}
                beaten = [c for c, v in theirs.items() if _winner(mine, v) == "peer"]
                total += 1
                ok += not beaten
                if beaten:
                    top = max(beaten, key=theirs.get)
                    lost[f"{p} W={w}"].append(f"{q:g}: {top}")
                    pval = beyond_spread(cells[(p, w, top)], rows, q)
                    if pval < args.alpha:
                        borne.append(f"{p} W={w} {q:g} ({top}, p = {pval:.2g})")
                else:
                    leads += max(beyond_spread(rows, cells[(p, w, c)], q) for c in peers) < args.alpha
        losses = "; ".join(f"{k} ({', '.join(v)})" for k, v in lost.items())
        print(f"| {cand} | {ok}/{total} ({100 * ok / max(total, 1):.0f} %) | {losses} "
              f"| {len(borne)}: {'; '.join(borne) or 'none'} | {leads} of {total} |")


def beyond_spread(peer: list[dict], mine: list[dict], q: float) -> float:
    """p of the one-sided Mann-Whitney U test that ``peer``'s best scores by q x H rank above
    ``mine`` (no feasible result: -inf, the lowest rank; all tied: 1)."""
    key = f"best_{q:g}"
    a, b = worst_nan(r[key] for r in peer), worst_nan(r[key] for r in mine)
    if len(set(a) | set(b)) == 1:
        return 1.0
    return float(mannwhitneyu(a, b, alternative="greater").pvalue)


if __name__ == "__main__":
    main()
