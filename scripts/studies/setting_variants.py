"""The study default with one setting changed, on one harness problem: median best score by 1/4,
1/2 and all of the horizon over seeds (feasible runs only), per variant: a quick look before a
full harness run.

    python scripts/studies/setting_variants.py nb201-cifar10 --workers 16 --seeds 20 \\
        --variants '{"beta4": {"beta": 4.0}, "se": {"kernel": "se"}}'
"""
from __future__ import annotations

import argparse
import json
import statistics

import numpy as np

from benchmarks.compare import get_problem, harness_run
from benchmarks.peers import ABLATION

BASE = "study"      # benchmarks/peers.py: the study default


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problem")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--variants", default="{}", help="JSON: name -> settings over the study default")
    args = ap.parse_args()
    p = get_problem(args.problem)
    horizon = p.horizon(args.workers)
    for name, extra in {"study default": {}, **json.loads(args.variants)}.items():
        ABLATION["_variant"] = {**ABLATION[BASE], **extra}
        best: list[list[float]] = [[], [], []]
        for seed in range(args.seeds):
            res = harness_run(p, args.workers, "_variant", seed)
            feasible = np.array([p.feasible(c) for c in res.configs], dtype=bool)
            for i, q in enumerate((0.25, 0.5, 1.0)):
                ok = res.completed & feasible & (res.finish <= q * horizon)
                best[i].append(float(res.f_true[ok].max()) if ok.any() else float("-inf"))
        print(f"{name:16s} H/4 {statistics.median(best[0]):.4g}  H/2 {statistics.median(best[1]):.4g}  "
              f"H {statistics.median(best[2]):.4g}", flush=True)


if __name__ == "__main__":
    main()
