"""What ``finish_by_deadline`` (``--after study-finish``, the default pair) or
``idle_near_deadline`` (``--before study-finish --after study-idle``) changes at the end of a study
(the harness's horizon is the study's wall-clock limit): paired by seed, the share of the pool's
worker-seconds spent on runs still going at the horizon (killed there), the share of them used at
all (a study that starts nothing more ends early), the runs finished by it, those over a budget,
and the best feasible score they reached.

One harness run per (problem, method, seed), as ``tuner.bench.compare`` runs it; rows are appended
to ``--out`` (a run already there is skipped), and a summary is printed.

    python scripts/studies/deadline_runs.py --workers 16 --seeds 5 --out killed16.csv \\
        --problems nb201-cifar10 mlp-phoneme mlp-segment fcnet-naval fcnet-parkinsons mlp-vehicle
"""
from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from tuner.bench.compare import get_problem, harness_run
from tuner.core.persist import append_row

BEFORE, AFTER = "study-believe3", "study-finish"     # tuner/bench/peers.py: without and with


def one_run(problem: str, method: str, seed: int, workers: int) -> dict[str, Any]:
    p = get_problem(problem)
    horizon = p.horizon(workers)
    res = harness_run(p, workers, method, seed)
    done = res.completed & (res.finish <= horizon)
    feasible = np.array([p.feasible(c) for c in res.configs], dtype=bool)
    killed = float(np.clip(horizon - res.start[~done], 0.0, None).sum())
    used = float(np.clip(np.minimum(res.finish, horizon) - res.start, 0.0, None).sum())
    return {
        "problem": problem,
        "method": method,
        "seed": seed,
        "workers": workers,
        "trials": len(res.start),
        "finished": int(done.sum()),
        "killed_share": killed / (workers * horizon),
        "used_share": used / (workers * horizon),
        "over_budget": int((done & ~feasible).sum()),
        "best": float(res.f_true[done & feasible].max())
        if (done & feasible).any()
        else float("nan"),
    }


def summary(path: Path, before: str = BEFORE, after: str = AFTER) -> None:
    runs: dict[tuple[str, str], dict[str, dict[str, str]]] = defaultdict(dict)
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            runs[(r["problem"], r["seed"])][r["method"]] = r
    for problem in sorted({p for p, _ in runs}):
        pairs = [m for (p, _), m in runs.items() if p == problem and before in m and after in m]
        mean = lambda k, m: statistics.mean(float(x[m][k]) for x in pairs)  # noqa: E731
        better = sum(float(x[after]["best"]) > float(x[before]["best"]) for x in pairs)
        worse = sum(float(x[after]["best"]) < float(x[before]["best"]) for x in pairs)
        used = (f", used share {mean('used_share', before):.3f} -> {mean('used_share', after):.3f}"
                if all("used_share" in x[m] for x in pairs for m in (before, after)) else "")
        print(
            f"{problem:18s} {len(pairs)} seeds: killed share {mean('killed_share', before):.3f} -> "
            f"{mean('killed_share', after):.3f}{used}, finished {mean('finished', before):.1f} -> "
            f"{mean('finished', after):.1f}, over the budget {mean('over_budget', before):.1f} -> "
            f"{mean('over_budget', after):.1f}, best better/worse {better}/{worse}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", nargs="+", required=True)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--before", default=BEFORE, help=f"harness method without the rule ({BEFORE})")
    ap.add_argument("--after", default=AFTER, help=f"harness method with it ({AFTER})")
    args = ap.parse_args()
    seen = set()
    if args.out.exists():
        with open(args.out, newline="") as fh:
            seen = {(r["problem"], r["method"], r["seed"]) for r in csv.DictReader(fh)}
    for seed in range(args.seeds):
        for problem in args.problems:
            for method in (args.before, args.after):
                if (problem, method, str(seed)) not in seen:
                    row = one_run(problem, method, seed, args.workers)
                    append_row(args.out, row)
                    print(row, flush=True)
    summary(args.out, args.before, args.after)


if __name__ == "__main__":
    main()
