"""Where each method's trials go on a recorded table (why TPE leads on the MLP tables).

For each method and seed, one harness run (W = 4, the problem's horizon, as ``tuner.bench.compare``
runs it): the trials that land in the table's top 1 % (by mean score over the recorded seeds),
how many distinct ones, the best mean score reached, and the 10 / 50 / 90 % quantiles of each
parameter over the second half of the trials (where a method has left its start-up design).

    python scripts/studies/where_trials_go.py mlp-segment --seeds 6 --methods tuner optuna-tpe \
        random
"""
from __future__ import annotations

import argparse

import numpy as np

from tuner.bench.compare import get_problem, harness_run
from tuner.bench.recorded import load


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problem")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--methods", nargs="*", default=["tuner", "optuna-tpe", "random"])
    args = ap.parse_args()
    p, table = get_problem(args.problem), load(args.problem)
    top = np.quantile(table.mean_score, 0.99)
    print(f"{args.problem}: top 1 % of the table's mean scores from {top:.4f} "
          f"(best {table.mean_score.max():.4f})")
    for method in args.methods:
        in_top, distinct, best, late = [], [], [], []
        for seed in range(args.seeds):
            res = harness_run(p, 4, method, seed)
            rows = np.array([table.index(c) for c in res.configs])
            score = table.mean_score[rows]
            in_top.append(int((score >= top).sum()))
            distinct.append(len(set(rows[score >= top])))
            best.append(float(score.max()))
            late += res.configs[len(res.configs) // 2:]
        print(f"{method}: trials in the top 1 % per seed {in_top} (distinct {distinct}); "
              f"best mean score {np.round(best, 4).tolist()}")
        for name in table.grid:
            q = np.quantile([float(c[name]) for c in late], [0.1, 0.5, 0.9])
            print(f"    {name}: 10/50/90 % {q[0]:.3g} / {q[1]:.3g} / {q[2]:.3g}")


if __name__ == "__main__":
    main()
