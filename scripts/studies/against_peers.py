"""The curve benchmark's standing of one of ours against every peer: per (problem, W, horizon),
best or tied unless a peer is ahead beyond the seeds' spread (a paired Wilcoxon test over the
seeds, p < 0.05); the median time to target against the fastest peer's (rows of NEW.csv only,
5 seeds or more), beside no stopping and random search; and every method's medians.  Rows of
OLD.csv fill in seeds NEW.csv lacks (the best scores do not depend on the target).

    python scripts/studies/against_peers.py NEW.csv [OLD.csv] --ours tuner-study-curve
        --base tuner-study
"""

from __future__ import annotations

import argparse
import csv

import numpy as np

from tuner.bench.paired import behind

PEERS = ["random", "random-topk", "ray-asha-random", "ray-asha-tpe", "optuna-tpe-hyperband",
         "optuna-tpe-sh", "syne-asha", "syne-bohb", "ax"]
HORIZONS = ("best_0.25", "best_0.5", "best_1")
Runs = dict[tuple[str, int, str], dict[int, dict[str, str]]]


def number(v: str) -> float:
    return float(v) if v not in ("", "nan") else -1.0


def read(path: str) -> Runs:
    out: Runs = {}
    for r in csv.DictReader(open(path)):
        out.setdefault((r["problem"], int(r["workers"]), r["method"]), {})[int(r["seed"])] = r
    return out


def median(runs: dict[int, dict[str, str]], key: str) -> float:
    return float(np.median([number(r[key]) for r in runs.values()]))


def standing(by: Runs, new: Runs, ours: str, base: str) -> list[str]:
    pairs = sorted({k[:2] for k in by if k[2] == ours})
    lines, lost, ok, total = [], [], 0, 0
    ttt = ["| problem | W | ours (s) | fastest peer (s) | ratio | no stopping | random |",
           "|---|---|---|---|---|---|---|"]
    for p, w in pairs:
        peers = [m for m in PEERS if (p, w, m) in by]
        for q in HORIZONS:
            total += 1
            mine = {s: number(r[q]) for s, r in by[(p, w, ours)].items()}
            bad = [m for m in peers if behind(mine, {s: number(r[q])
                                                      for s, r in by[(p, w, m)].items()})]
            ok += not bad
            if bad:
                lost.append(f"  behind on {p}, W = {w}, {q}: {bad}")
        timed = [m for m in peers if m != "random" and len(new.get((p, w, m), {})) >= 5]
        if timed and (p, w, ours) in new:
            fast = min(timed, key=lambda m: median(new[(p, w, m)], "time_to_target"))
            t_ours = median(new[(p, w, ours)], "time_to_target")
            t_fast = median(new[(p, w, fast)], "time_to_target")
            extra = [f"{median(new[(p, w, m)], 'time_to_target'):.2f}"
                     if (p, w, m) in new else "-" for m in (base, "random")]
            ttt.append(f"| {p} | {w} | {t_ours:.2f} | {t_fast:.2f} ({fast}) | "
                       f"{t_ours / t_fast:.2f} | {' | '.join(extra)} |")
    lines.append(f"best or tied against every peer with 5 seeds or more: {ok} of {total} "
                 "(problem, W, horizon) triples")
    return lines + lost + [""] + ttt


def medians(by: Runs, ours: str, base: str) -> list[str]:
    lines = ["| problem | W | method | H/4 | H/2 | H | time to target | stopped / trials | seeds |",
             "|---|---|---|---|---|---|---|---|---|"]
    for p, w in sorted({k[:2] for k in by if k[2] == ours}):
        for m in [base, ours, "ray-asha-tuner", "ray-asha-tuner-last", *PEERS]:
            runs = by.get((p, w, m))
            if runs:
                v = {k: median(runs, k) for k in (*HORIZONS, "time_to_target", "stopped",
                                                  "trials")}
                lines.append(f"| {p} | {w} | {m} | {v['best_0.25']:.4f} | {v['best_0.5']:.4f} | "
                             f"{v['best_1']:.4f} | {v['time_to_target']:.2f} | "
                             f"{v['stopped']:.0f} / {v['trials']:.0f} | {len(runs)} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--ours", default="tuner-study-curve")
    ap.add_argument("--base", default="tuner-study")
    a = ap.parse_args()
    new = read(a.paths[0])
    by = {k: dict(v) for k, v in new.items()}
    for path in a.paths[1:]:
        for k, v in read(path).items():
            for s, r in v.items():
                by.setdefault(k, {}).setdefault(s, r)
    print("\n".join(standing(by, new, a.ours, a.base) + [""] + medians(by, a.ours, a.base)))


if __name__ == "__main__":
    main()
