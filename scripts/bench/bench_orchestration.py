"""Ray tasks driven by the tuner's loop vs Ray Tune trials: per-trial overhead and utilization.

The same trivial trainable (sleep a random 50-500 ms, seeded) and the same optimizer
(``tuner.Optimizer``, algorithm ``random`` to isolate orchestration, and ``gp-ucb-sdf`` to see
the suggestion cost inside each loop) run three ways on one local Ray instance:

* ``tasks``: ``ray.remote`` tasks and ``ray.wait``, a new suggestion the moment one returns
  (what ``tuner.study.runner.StudyRunner`` on ``tuner.integrations.ray.executor.RayExecutor`` \
      does, without MLflow);
* ``tune``: ``tune.Tuner`` with ``TunerSearch`` and ``max_concurrent_trials`` (default settings);
* ``tune-reuse``: the same with ``reuse_actors=True``.

Utilization = sum of the sleeps / (slots x span), span = first trial start to last trial end,
both measured inside the trials; overhead per trial = (slots x span - sum of sleeps) / trials.

    python scripts/bench/bench_orchestration.py --trials 60 --slots 2 8 --out \
        docs/research/results/orchestration
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path


import ray  # noqa: E402
from ray import tune  # noqa: E402

from tuner.core.persist import write_table  # noqa: E402
from tuner import Optimizer  # noqa: E402
from tuner.integrations.ray.tune_search import TunerSearch  # noqa: E402

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0},
         "y": {"type": "float", "low": 0.0, "high": 1.0}}


def sleep_trial(config: dict) -> dict:
    """Sleep U(50, 500) ms, seeded by the configuration (so every way draws the same sleeps)."""
    start = time.time()
    d = random.Random(int(config["x"] * 1e9)).uniform(0.05, 0.5)
    time.sleep(d)
    return {"score": -(config["x"] - 0.3) ** 2 - (config["y"] - 0.6) ** 2, "slept": d,
            "t_start": start, "t_end": time.time()}


def tune_trainable(config: dict) -> None:
    tune.report(sleep_trial(config))


def run_tasks(n: int, slots: int, algorithm: str) -> list[dict]:
    opt = Optimizer(SPACE, algorithm=algorithm, seed=0)
    task = ray.remote(num_cpus=2 / slots, max_retries=0)(sleep_trial)
    running: dict = {}
    out = []
    while len(out) < n:
        while len(running) < slots and len(opt.trials) < n:
            s = opt.suggest()
            running[task.remote(s.config)] = s.trial_id
        ready, _ = ray.wait(list(running), num_returns=1)
        for ref in ready:
            r = ray.get(ref)
            opt.tell(running.pop(ref), r["score"])
            out.append(r)
    return out


def run_tune(n: int, slots: int, algorithm: str, reuse: bool, storage: Path) -> list[dict]:
    search = TunerSearch(SPACE, metric="score", mode="max", algorithm=algorithm, seed=0)
    trainable = tune.with_resources(tune_trainable, {"cpu": 2 / slots})
    tuner = tune.Tuner(
        trainable,
        tune_config=tune.TuneConfig(search_alg=search, num_samples=n, max_concurrent_trials=slots,
                                    reuse_actors=reuse),
        run_config=tune.RunConfig(name=f"bench-{slots}-{reuse}-{algorithm}", verbose=0,
                                  storage_path=str(storage)))
    results = tuner.fit()
    return [r.metrics for r in results]


def summarize(rows: list[dict], slots: int) -> dict:
    span = max(r["t_end"] for r in rows) - min(r["t_start"] for r in rows)
    work = sum(r["slept"] for r in rows)
    return {"trials": len(rows), "span_s": span, "utilization": work / (slots * span),
            "overhead_ms_per_trial": 1e3 * (slots * span - work) / len(rows)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--slots", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--algorithms", nargs="+", default=["random", "gp-ucb-sdf"])
    ap.add_argument("--out", default="bench_results/orchestration")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    rows = []
    storage = Path("/tmp/tuner_bench_orchestration")
    for slots in args.slots:
        for algorithm in args.algorithms:
            for way in ("tasks", "tune", "tune-reuse"):
                t0 = time.perf_counter()
                trials = (run_tasks(args.trials, slots, algorithm) if way == "tasks" else
                          run_tune(args.trials, slots, algorithm, way == "tune-reuse", storage))
                row = {"slots": slots, "algorithm": algorithm, "way": way,
                       **summarize(trials, slots), "total_s": time.perf_counter() - t0}
                rows.append(row)
                print(
                    f"slots {slots} {algorithm:10s} {way:10s} utilization "
                    f"{100 * row['utilization']:5.1f}%  overhead "
                    f"{row['overhead_ms_per_trial']:7.1f} "
                    f"ms/trial  span {row['span_s']:.1f}s  total {row['total_s']:.1f}s",
                    flush=True,
                )
    ray.shutdown()
    write_table(out / "results.csv", rows)
    lines = [
        f"{args.trials} trials sleeping U(50, 500) ms each; utilization = sleep / (slots x span).",
        "",
        "| slots | algorithm | way | utilization | overhead per trial | ratio to tasks |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        base = next(b for b in rows if b["slots"] == r["slots"] and b["algorithm"] == r["algorithm"]
                    and b["way"] == "tasks")
        lines.append(
            f"| {r['slots']} | {r['algorithm']} | {r['way']} | {100 * r['utilization']:.0f}% | "
            f"{r['overhead_ms_per_trial']:.0f} ms | "
            f"{r['overhead_ms_per_trial'] / max(base['overhead_ms_per_trial'], 1e-9):.1f}x |"
        )
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
