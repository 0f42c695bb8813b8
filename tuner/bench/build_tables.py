"""Build the lookup tables of the three trainables: one real training run per grid point.

    python -m tuner.bench.build_tables [--only svm,logreg,cnn] [--points N] [--processes 2]

Each trainable (``trainables.get_trainable``: SVM, logistic regression, CNN) is trained once
per configuration of a full grid over its default search space, with its default options (no
injected delay, ``threads=1``) and training seed 0.  The grid is cell-centred in the unit-cube
encoding of ``tuner.core.space.SearchSpace``: level i of n on a coordinate is u = (i + 0.5) / n, so
under nearest-neighbour lookup every grid point owns an equal box of the cube (log-scaled
parameters are log-spaced; an integer is the decoded, rounded value).  Default levels:
``GRIDS``; ``--points N`` scales every grid to about N points with the same proportions.

Writes ``tuner/bench/tables/{name}.csv`` (the hyperparameters in space order, accuracy,
train_time in seconds) and ``{name}.json`` (grid, seed, options, versions, build seconds,
command).  Evaluations run in a pool of ``--processes`` processes, one BLAS/torch thread each.
train_time is the fit's wall time as the trainable measures it, or the CPU time of the whole
call where that is smaller (a process starved by other jobs on a shared machine).
"""

from __future__ import annotations

import os

import tuner.bench.threads  # noqa: F401,E402  (before numpy: one BLAS thread per process)

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from multiprocessing import Pool  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from trainables import get_trainable  # noqa: E402
from tuner.core.persist import write_table  # noqa: E402
from tuner.core.space import SearchSpace  # noqa: E402

TABLES_DIR = Path(__file__).resolve().parent / "tables"
NAMES = ("svm", "logreg", "cnn")
GRIDS: dict[str, tuple[int, ...]] = {"svm": (20, 20), "logreg": (5, 11, 11), "cnn": (5, 11, 11)}
SEED = 0            # training seed of every run (torch init and minibatch order; SVC ignores it)
OPTIONS: dict[str, Any] = {"delay": "none", "threads": 1}


def grid_levels(name: str, points: int | None = None) -> tuple[int, ...]:
    """Levels per dimension: ``GRIDS[name]``, or scaled to about ``points`` points."""
    base = GRIDS[name]
    if points is None:
        return base
    scale = (points / float(np.prod(base))) ** (1.0 / len(base))
    return tuple(max(2, int(round(n * scale))) for n in base)


def grid_configs(space: SearchSpace, levels: tuple[int, ...]) -> list[dict[str, Any]]:
    """Cell-centred full grid in the unit cube, decoded; the last parameter varies fastest.
    Integer levels that round to the same value are kept once."""
    axes = [(np.arange(n) + 0.5) / n for n in levels]
    configs, seen = [], set()
    for u in itertools.product(*axes):
        config = space.decode(np.array(u))
        key = tuple(config.values())
        if key not in seen:
            seen.add(key)
            configs.append(config)
    return configs


def run_options(name: str) -> dict[str, Any]:
    """The trainable's default options with no injected delay and one thread where it has one."""
    specs = get_trainable(name).option_specs
    return {k: v for k, v in OPTIONS.items() if k in specs}


def _evaluate(job: tuple[str, dict[str, Any]]) -> tuple[float, float, float, float]:
    """(accuracy, train_time, the trainable's wall fit time, CPU seconds of the whole call).

    train_time is the smaller of the fit's wall time and the call's CPU time: on a shared
    machine a starved process's wall clock also counts time it did not run (one-thread
    training, so CPU time is the uncontended fit time plus the small evaluation)."""
    name, config = job
    cpu0 = time.process_time()
    out = get_trainable(name)(config, run_options(name), SEED)
    cpu = time.process_time() - cpu0
    return out["accuracy"], min(out["train_time"], cpu), out["train_time"], cpu


def _versions() -> dict[str, str]:
    import sklearn
    import torch
    return {"python": platform.python_version(), "numpy": np.__version__,
            "scikit-learn": sklearn.__version__, "torch": torch.__version__,
            "platform": platform.platform(), "cpus": str(os.cpu_count())}


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def build(name: str, pool: Any, points: int | None, out_dir: Path, processes: int) -> dict:
    """Evaluate every grid point of ``name``, write its CSV and JSON, return the metadata."""
    trainable = get_trainable(name)
    space = SearchSpace.from_dict(trainable.space)
    levels = grid_levels(name, points)
    configs = grid_configs(space, levels)
    t0 = time.perf_counter()
    results = []
    for i, r in enumerate(pool.imap(_evaluate, [(name, c) for c in configs], chunksize=2)):
        results.append(r)
        if (i + 1) % max(1, len(configs) // 10) == 0:
            print(f"  {name}: {i + 1}/{len(configs)} ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    seconds = time.perf_counter() - t0
    out_dir.mkdir(parents=True, exist_ok=True)
    write_table(out_dir / f"{name}.csv",
                [{**{k: f"{config[k]:.10g}" for k in space.names},
                  "accuracy": f"{acc:.6f}", "train_time": f"{train_time:.5f}"}
                 for config, (acc, train_time, _, _) in zip(configs, results)])
    acc = np.array([r[0] for r in results])
    meta = {
        "name": name,
        "how": ("one training run per grid point (trainables.get_trainable(name)(config, options, "
                "seed)); cell-centred full grid in the unit-cube encoding of the space: level i "
                "of n is u = (i + 0.5) / n, decoded (log scale where the space says log; integers "
                "rounded, duplicates dropped); last parameter varies fastest"),
        "space": trainable.space,
        "levels": dict(zip(space.names, levels)),
        "n_points": len(configs),
        "options": get_trainable(name).options | run_options(name),
        "seed": SEED,
        "objective": "accuracy (validation accuracy of the default split)",
        "accuracy_max": float(acc.max()),
        "accuracy_min": float(acc.min()),
        "argmax": configs[int(acc.argmax())],
        "build_seconds": round(seconds, 1),
        "train_time": ("seconds: min(wall time of the fit as the trainable measures it, CPU time "
                       "of the whole call); the build shares the machine, and a starved "
                       "process's wall clock counts time it did not run"),
        "train_time_sum": round(float(sum(r[1] for r in results)), 1),
        "wall_fit_seconds_sum": round(float(sum(r[2] for r in results)), 1),
        "cpu_seconds_sum": round(float(sum(r[3] for r in results)), 1),
        "rows_where_cpu_time_was_smaller": int(sum(r[3] < r[2] for r in results)),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "processes": processes,
        "command": "python -m tuner.bench.build_tables " + " ".join(sys.argv[1:]),
        "git_commit": _git_commit(),
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "versions": _versions(),
    }
    (out_dir / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{name}: {len(configs)} points in {seconds:.0f} s, accuracy "
          f"{acc.min():.4f}..{acc.max():.4f}", flush=True)
    return meta


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(NAMES), help="comma-separated subset of "
                                                            "svm,logreg,cnn")
    ap.add_argument("--points", type=int, default=None, help="about N points per table (default: "
                                                             "GRIDS)")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--out", type=Path, default=TABLES_DIR)
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        ap.error(f"unknown table(s) {unknown}; allowed: {list(NAMES)}")
    t0 = time.perf_counter()
    with Pool(args.processes) as pool:
        for name in names:
            build(name, pool, args.points, args.out, args.processes)
    print(f"total {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
