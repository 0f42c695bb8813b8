"""The study default with one setting changed, on one harness problem: median best score by 1/4,
1/2 and all of the horizon over seeds (feasible runs only) and median trials on configurations
over the limit, per variant: a quick look before a full harness run.  ``--out`` appends one row
per (variant, seed) to a CSV (``default`` is the study default) that ``python -m tuner.bench.paired
OUT.csv --base default`` pairs by seed.

    python scripts/studies/setting_variants.py nb201-cifar10 --workers 16 --seeds 20 \\
        --variants '{"beta4": {"beta": 4.0}, "se": {"kernel": "se"}}'
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from tuner.bench.compare import get_problem, harness_run
from tuner.bench.metrics import FRACTIONS, run_metrics, worst_nan
from tuner.bench.peers import ABLATION
from tuner.core.persist import append_row

BASE = "study"      # tuner/bench/peers.py: the study default


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problem")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument(
        "--variants", default="{}", help="JSON: name -> settings over the study default"
    )
    ap.add_argument("--out", type=Path, help="CSV to append a row per (variant, seed) to")
    args = ap.parse_args()
    p = get_problem(args.problem)
    horizon = p.horizon(args.workers)
    for name, extra in {"default": {}, **json.loads(args.variants)}.items():
        ABLATION["_variant"] = {**ABLATION[BASE], **extra}
        best: list[list[float]] = [[] for _ in FRACTIONS]
        over: list[int] = []
        for seed in range(args.seeds):
            row = run_metrics(harness_run(p, args.workers, "_variant", seed), p, horizon)
            scores = worst_nan(row[f"best_{q:g}"] for q in FRACTIONS)   # nothing feasible: -inf
            for i, v in enumerate(scores):
                best[i].append(float(v))
            over.append(row["infeasible_trials"])
            if args.out:
                append_row(
                    args.out,
                    {"problem": args.problem, "workers": args.workers, "method": name, "seed": seed,
                     **{f"best_{q:g}": float(v) for q, v in zip(FRACTIONS, scores)},
                     "trials": row["trials"], "infeasible_trials": over[-1]},
                    sync=False,
                )
        print(
            f"{name:16s} H/4 {statistics.median(best[0]):.4g}  H/2 "
            f"{statistics.median(best[1]):.4g}  "
            f"H {statistics.median(best[2]):.4g}  over the limit {statistics.median(over):g}",
            flush=True,
        )


if __name__ == "__main__":
    main()
