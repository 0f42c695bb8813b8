"""Best or tied against every peer, per candidate default, from several harness ``runs.csv`` files.

For each candidate (one of this project's methods) and each (problem, W, horizon fraction) where
it and at least one peer ran: is its median best feasible score over the seeds ``< --seeds`` the
best or tied (medians apart by at most 0.1 % of their summed magnitudes, about 0.2 % of
either: ``tuner.bench.report._winner``) against every peer's median over the same
seeds?  Rows of a later file replace those of an earlier one for the same (problem, W, method);
``FILE:OLD=NEW`` reads FILE's rows of method OLD as NEW's (a variant that became the default).

The last two columns count the losses and the leads that the seeds' spread bears out: a peer
with the better median ranks above the candidate over the seeds (each such peer is tested; the
smallest p is shown), or the candidate ranks above every peer's
(Mann-Whitney U, one-sided, p < ``--alpha``; scipy).  The target counts every loss; these say
how many of them, and of the leads, stand out from the seeds' spread.  Nothing corrects for the
many pairs tested, nor for the several peers tested per loss: at p < 0.05 over 45 pairs more
than two such losses are expected by chance alone.

    python scripts/studies/best_or_tied.py docs/research/results/compare/runs.csv \
        docs/research/results/recorded/runs.csv \
        RUNS.csv --candidates tuner default-copula --seeds 10

``--table`` prints every method's medians per problem, the comparison in full.
``--peers optuna-gp --problems ...`` asks whether a candidate is behind `GPSampler` at any
horizon on the given problems; ``--budget`` adds the budget check: on every constrained (problem,
W), at most half the trials over the limit of the peer with the best median score at H, at an equal
or better score (a tie as above).
"""
from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import mannwhitneyu

from tuner.bench.ablation import COMPETITORS, best_scoring_peer
from tuner.bench.metrics import FRACTIONS, worst_nan
from tuner.bench.report import _winner, fmt, headline, load_runs, median_best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="runs.csv files; FILE:OLD=NEW reads FILE's method OLD "
                                            "as NEW")
    ap.add_argument("--candidates", nargs="+", required=True)
    ap.add_argument("--seeds", type=int, default=10, help="use seeds 0 .. N-1 of every method")
    ap.add_argument("--workers", type=int, nargs="*", help="only these W")
    ap.add_argument("--alpha", type=float, default=0.05, help="the one-sided test's level")
    ap.add_argument("--peers", nargs="+", default=list(COMPETITORS), help="default: every peer")
    ap.add_argument("--problems", nargs="+", help="only these problems")
    ap.add_argument("--budget", action="store_true",
                    help="also the trials over the limit against the best-scoring peer's")
    ap.add_argument("--table", action="store_true",
                    help="also every method's median at H/2 and H per problem "
                         "(tuner.bench.report.headline)")
    args = ap.parse_args()
    cells = {}
    for spec in args.runs:
        path, _, alias = spec.rpartition(":") if "=" in spec.rpartition(":")[2] else (spec, "", "")
        old, _, new = alias.partition("=")
        if alias and not (old and new):
            ap.error(f"{spec}: the alias must be FILE:OLD=NEW")
        if not Path(path).is_file():
            ap.error(f"{path}: no such runs file")
        for (p, w, m), rows in load_runs(Path(path)).items():
            if args.problems is None or p in args.problems:
                cells[(p, w, new if alias and m == old else m)] = [
                    r for r in rows if r["seed"] < args.seeds
                ]
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
            peers = [c for c in args.peers if cells.get((p, w, c))]
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
                    pv = {c: beyond_spread(cells[(p, w, c)], rows, q) for c in beaten}
                    by = min(beaten, key=lambda c: (pv[c], -theirs[c]))
                    pval = pv[by]
                    if pval < args.alpha:
                        borne.append(f"{p} W={w} {q:g} ({by}, p = {pval:.2g})")
                else:
                    leads += (
                        max(beyond_spread(rows, cells[(p, w, c)], q) for c in peers) < args.alpha
                    )
        losses = "; ".join(f"{k} ({', '.join(v)})" for k, v in lost.items())
        print(f"| {cand} | {ok}/{total} ({100 * ok / max(total, 1):.0f} %) | {losses} "
              f"| {len(borne)}: {'; '.join(borne) or 'none'} | {leads} of {total} |")
    if args.budget:
        print("\n" + "\n".join(budget_table(cells, args.candidates, args.peers, args.workers)))
    if args.table:
        shown = {k: v for k, v in cells.items() if v and k[2] in args.candidates + args.peers}
        for w in sorted({w for _, w, _ in shown if not args.workers or w in args.workers}):
            print(f"\nW = {w}: median best at H/2 / H (trials over the limit / trials)\n")
            print("\n".join(headline(shown, w)))


def budget_table(cells: dict, candidates: list[str], peers: list[str],
                 workers: list[int] | None) -> list[str]:
    """Per constrained (problem, W): the candidate's median trials over the limit and best at H
    against the best-scoring peer's; met when at most half of them at an equal or better score."""
    out = ["| candidate | problem | W | over the limit / trials | best at H | best-scoring peer "
           "| its over / trials | its best at H | ratio | met | share of worker time over, "
           "its share |", "|---" * 11 + "|"]
    med = lambda rows, k: float(np.median([r[k] for r in rows]))
    share = lambda rs: (
        f"{np.median([r['infeasible_seconds'] / r['worker_seconds'] for r in rs]):.0%}"
        if "infeasible_seconds" in rs[0]
        else "–"
    )
    for cand in candidates:
        for (p, w, m), rows in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            if m != cand or not rows or (workers and w not in workers):
                continue
            found = best_scoring_peer(cells, p, w, peers)
            if found is None:
                continue
            top, top_score = found
            mine, theirs = (med(rows, "infeasible_trials"),
                            med(cells[(p, w, top)], "infeasible_trials"))
            score = median_best(rows, 1.0)
            met = mine <= theirs / 2 and _winner(score, top_score) != "peer"
            n_mine = f"{med(rows, 'trials'):.0f}" if "trials" in rows[0] else "–"
            n_top = f"{med(cells[(p, w, top)], 'trials'):.0f}"
            out.append(f"| {cand} | {p} | {w} | {mine:g} / {n_mine} | {fmt(score)} | {top} "
                       f"| {theirs:g} / {n_top} | {fmt(top_score)} "
                       f"| {mine / theirs if theirs else math.inf:.2f} | {'yes' if met else 'no'} "
                       f"| {share(rows)}, {share(cells[(p, w, top)])} |")
    return out


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
