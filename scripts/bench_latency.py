"""Suggestion latency vs number of observations, side by side with Optuna's GPSampler.

For each n and d, both optimizers hold n completed observations of the same function at the same
random points; then ``--reps`` suggest+tell cycles are timed (refits included where they fall:
ours every 10 results, Optuna's on every call).  Reports the median and mean per suggestion and
the ratio ours / Optuna, measured in the same run on the same machine.

    python scripts/bench_latency.py --out bench_results/latency.csv
    python scripts/bench_latency.py --n 100 400 1000 2000 5000 --dims 3 8 --optuna-max-n 2000
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tuner import Optimizer  # noqa: E402


def objective(X: np.ndarray) -> np.ndarray:
    """A smooth multimodal test function on [0, 1]^d with values in about [0, 1]."""
    return 0.5 + 0.5 * np.sin(3 * X).mean(1) * np.cos(2 * X[:, :1].sum(1))


def time_ours(n: int, d: int, reps: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    space = {f"x{i}": {"type": "float", "low": 0.0, "high": 1.0} for i in range(d)}
    opt = Optimizer(space, algorithm="gp-ucb-sdf", objective_bounds=(0.0, 1.0), window=float("inf"),
                    seed=seed)
    X = rng.random((n, d))
    y = objective(X)
    for x, v in zip(X, y):
        s = opt.suggest(config={f"x{i}": float(x[i]) for i in range(d)})
        opt.tell(s.trial_id, float(v))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        s = opt.suggest()
        times.append(time.perf_counter() - t0)
        opt.tell(s.trial_id, float(objective(np.array([[s.config[f"x{i}"] for i in range(d)]]))[0]))
    return times


def time_optuna(n: int, d: int, reps: int, seed: int) -> list[float]:
    import optuna
    from optuna.distributions import FloatDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rng = np.random.default_rng(seed)
    dists = {f"x{i}": FloatDistribution(0.0, 1.0) for i in range(d)}
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.GPSampler(seed=seed))
    X = rng.random((n, d))
    y = objective(X)
    study.add_trials([optuna.trial.create_trial(params={f"x{i}": float(x[i]) for i in range(d)},
                                                distributions=dists, value=float(v))
                      for x, v in zip(X, y)])
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        trial = study.ask(dists)
        times.append(time.perf_counter() - t0)
        x = np.array([[trial.params[f"x{i}"] for i in range(d)]])
        study.tell(trial, float(objective(x)[0]))
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[100, 400, 1000, 2000, 5000])
    ap.add_argument("--dims", type=int, nargs="+", default=[3, 8])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--optuna-max-n", type=int, default=2000,
                    help="skip Optuna above this n (its cost grows as n^3 per call)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="bench_results/latency.csv")
    args = ap.parse_args()

    rows = []
    for d in args.dims:
        for n in args.n:
            ours = time_ours(n, d, args.reps, args.seed)
            theirs = time_optuna(n, d, args.reps, args.seed) if n <= args.optuna_max_n else []
            row = {"d": d, "n": n,
                   "ours_median_ms": 1e3 * statistics.median(ours),
                   "ours_mean_ms": 1e3 * statistics.mean(ours),
                   "optuna_median_ms": 1e3 * statistics.median(theirs) if theirs else float("nan"),
                   "optuna_mean_ms": 1e3 * statistics.mean(theirs) if theirs else float("nan")}
            row["ratio_median"] = row["ours_median_ms"] / row["optuna_median_ms"]
            rows.append(row)
            print(f"d={d} n={n}: ours median {row['ours_median_ms']:.1f} ms (mean "
                  f"{row['ours_mean_ms']:.1f}), Optuna GPSampler median "
                  f"{row['optuna_median_ms']:.1f} ms, ratio {row['ratio_median']:.3f}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("\n| d | n | ours median ms | ours mean ms | GPSampler median ms | ratio (median) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['d']} | {r['n']} | {r['ours_median_ms']:.1f} | {r['ours_mean_ms']:.1f} | "
              f"{r['optuna_median_ms']:.1f} | {r['ratio_median']:.3f} |")


if __name__ == "__main__":
    main()
