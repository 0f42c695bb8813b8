"""`tuner run`'s loop against a bare Ray-task loop, in one run: true utilization and overhead.

Every trial sleeps U(lo, hi) ms (seeded by its configuration) in a Ray task with
``num_cpus = 2 / slots``.  Three ways, at each slot count:

* ``bare``: ``ray.remote`` tasks and ``ray.wait(num_returns=1)``, random configurations, no
  optimizer, no state, no MLflow: the floor;
* ``tuner-random``: ``study_runner`` (the README's ``tuner run``) with ``algorithm: random``,
  the study state, the trial table and MLflow (sqlite) all on;
* ``tuner-gp``: the same with ``gp-ucb-sdf``.

True utilization = the trials' own sleeps / (slots x span), span = first start to last end of
the trials (in the trials for ``bare``, the loop's launch and collection times for ``tuner``);
overhead per trial = (slots x span - sleeps) / trials.  A throw-away 40-trial study runs first
(``--cold``: not), so that Ray's workers and the driver's imports are warm.  ``wall``: the whole
call, with the MLflow writer's start-up and the MLflow backlog it sends after the last trial.
Ray is started as ``tuner run`` starts it (``local_ray_config``).  Also: the peak memory (RSS)
of the driver, and of the MLflow writer process (the largest child process waited for).

    python scripts/bench/bench_run_loop.py --trials 200 --slots 2 8 --out \
        docs/research/results/run_loop
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import tempfile
import time
from pathlib import Path

import ray

from tuner.core.persist import write_table
from tuner.app.wiring import study_runner
from tuner.integrations.ray.executor import local_ray_config
from tuner.study.config import load_study
from tuner.study.progress import Progress

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0},
         "y": {"type": "float", "low": 0.0, "high": 1.0}}
LOW, HIGH = 0.05, 0.5


def sleep_trial(config: dict) -> dict:
    """Sleep U(LOW, HIGH) s, seeded by the configuration; the score peaks at (0.3, 0.6)."""
    d = random.Random(int(config["x"] * 1e9) ^ int(config["y"] * 1e9)).uniform(LOW, HIGH)
    t0 = time.time()
    time.sleep(d)
    return {"score": -(config["x"] - 0.3) ** 2 - (config["y"] - 0.6) ** 2, "slept": d,
            "t_start": t0, "t_end": time.time()}


def run_bare(n: int, slots: int) -> dict:
    task = ray.remote(num_cpus=2 / slots, max_retries=0)(sleep_trial)
    ray.get([task.remote({"x": 0.0, "y": 0.0}) for _ in range(slots)])   # warm the workers
    rng = random.Random(0)
    running, out, started = [], [], 0
    t0 = time.time()
    while len(out) < n:
        while len(running) < slots and started < n:
            running.append(task.remote({"x": rng.random(), "y": rng.random()}))
            started += 1
        ready, running = ray.wait(running, num_returns=1)
        out += ray.get(ready)
    span = max(r["t_end"] for r in out) - min(r["t_start"] for r in out)
    return {"trials": n, "work": sum(r["slept"] for r in out), "span": span,
            "wall": time.time() - t0}


def run_tuner(n: int, slots: int, algorithm: str, root: Path, settings: dict | None = None) -> dict:
    study = f"bench-{algorithm}-{slots}"
    cfg = load_study({"study": study, "trainable": sleep_trial, "space": SPACE,
                      "objective": {"metric": "score", "mode": "max"},
                      "optimizer": {"algorithm": algorithm, **(settings or {})},
                      "run": {"trials": n, "max_concurrent": slots, "cpus_per_trial": 2 / slots},
                      "mlflow": {"tracking_uri": f"sqlite:///{root}/mlflow.db"},
                      "output": str(root / "runs")})
    t0 = time.time()
    result = study_runner(cfg, progress=Progress(stream=open("/dev/null", "w"))).run()
    trials = result.optimizer.trials
    work = sum(tr.metrics.get("slept", 0.0) for tr in trials)
    span = max(tr.finish_time for tr in trials) - min(tr.start_time for tr in trials)
    return {"trials": sum(tr.status == "FINISHED" for tr in trials), "work": work,
            "span": span, "wall": time.time() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--slots", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--ways", nargs="+", default=["bare", "tuner-random", "tuner-gp"])
    ap.add_argument("--ms", type=float, nargs=2, default=[50, 500], metavar=("LOW", "HIGH"),
                    help="each trial sleeps U(LOW, HIGH) milliseconds")
    ap.add_argument(
        "--cold",
        action="store_true",
        help="no throw-away study first (the first study then pays MLflow's cold start)",
    )
    ap.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="optimizer settings for the tuner ways (VALUE as JSON), e.g. fit_restarts=0",
    )
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    settings = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
    global LOW, HIGH
    LOW, HIGH = args.ms[0] / 1e3, args.ms[1] / 1e3
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False,
             _system_config=local_ray_config(max(args.slots)))   # as `tuner run` starts it
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if not args.cold:   # a throw-away study first: MLflow's store and SQLAlchemy warmed up
            run_tuner(40, 2, "random", Path(tmp) / "warm")
        for slots in args.slots:
            for way in args.ways:
                r = (
                    run_bare(args.trials, slots)
                    if way == "bare"
                    else run_tuner(args.trials, slots,
                                   "random" if way == "tuner-random" else "gp-ucb-sdf", Path(tmp),
                                   settings)
                )
                util = r["work"] / (slots * r["span"])
                over = (slots * r["span"] - r["work"]) / max(r["trials"], 1)
                rows.append(
                    {
                        "slots": slots,
                        "way": way,
                        "trials": r["trials"],
                        "utilization": round(util, 3),
                        "overhead_ms": round(1e3 * over, 1),
                        "trials_per_s": round(r["trials"] / r["span"], 2),
                        "span_s": round(r["span"], 1),
                        "wall_s": round(r["wall"], 1),
                        "driver_peak_mb": round(
                            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                        ),
                        # the largest child waited for: the MLflow writer processes
                        "writer_peak_mb": round(
                            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
                        ),
                    }
                )
                print(rows[-1], flush=True)
    ray.shutdown()
    lines = [
        "| slots | way | trials | true utilization | overhead per trial | trials/s | span | wall "
        "| driver peak RSS so far | MLflow writer peak RSS |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['slots']} | {r['way']} | {r['trials']} | {100 * r['utilization']:.0f} % | "
            f"{r['overhead_ms']:.0f} ms | {r['trials_per_s']} | {r['span_s']} s | "
            f"{r['wall_s']} s | {r['driver_peak_mb']} MB | {r['writer_peak_mb']} MB |"
        )
    print("\n".join(lines))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_table(out / "runs.csv", rows)
        (out / "summary.md").write_text(
            f"# `tuner run` against a bare Ray-task loop ({args.trials} trials of "
            f"{1e3 * LOW:.0f}-{1e3 * HIGH:.0f} ms)\n\nCommand: `python "
            "scripts/bench/bench_run_loop.py "
            f"--trials {args.trials} --slots {' '.join(map(str, args.slots))} --ms {args.ms[0]:g} "
            f"{args.ms[1]:g} --ways {' '.join(args.ways)}{' --cold' if args.cold else ''}"
            f"{' --set ' + ' '.join(args.set) if args.set else ''}`\n\n" + "\n".join(lines) + "\n"
        )


if __name__ == "__main__":
    main()
