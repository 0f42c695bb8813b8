"""Build the learning-curve tables of the built-in CNN and logistic regression: real training
runs, every epoch's validation accuracy and the seconds spent so far.

    python -m tuner.bench.build_curve_tables [--configs 128] [--seeds 2]

Each trainable (``trainables.get_trainable``) trains with its default options (no injected
delay, one thread) on a scrambled Sobol sample of ``--configs`` configurations of its default
space, ``--seeds`` training seeds each (``Trainable.progress``: one report per epoch).  The
seconds are the process's CPU time since the run started (data, model, every epoch and its
evaluation), so a build on a busy machine records the times an idle one would; the first run
of each trainable (imports) is discarded.  The CNN keeps every epoch (80); logistic regression
every ``LR_EVERY``-th of its 500.

Writes ``tuner/bench/tables/curves-{name}.csv.gz`` (config index, the hyperparameters, seed,
epoch, accuracy, seconds) and ``curves-{name}.json`` (configs, seeds, options, build seconds,
machine, command); rows are appended per run, so an interrupted build continues.
"""

from __future__ import annotations

import tuner.bench.threads  # noqa: F401,E402  (before numpy: one BLAS thread per process)

import argparse  # noqa: E402
import csv  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from trainables import get_trainable  # noqa: E402
from tuner.core.persist import csv_text, write_json  # noqa: E402

from .problems import uniform_configs  # noqa: E402

TABLES_DIR = Path(__file__).resolve().parent / "tables"
NAMES = ("cnn", "logreg")
OPTIONS: dict[str, Any] = {"delay": "none", "threads": 1}
LR_EVERY = 5
SOBOL_SEED = 11


def table_path(name: str) -> Path:
    return TABLES_DIR / f"curves-{name}.csv.gz"


def one_run(name: str, index: int, config: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """One training run: a row per kept epoch."""
    tr = get_trainable(name)
    every = LR_EVERY if name == "logreg" else 1
    rows = []
    c0 = time.process_time()
    for m in tr.progress(config, OPTIONS, seed):
        if int(m["epoch"]) % every == 0:
            rows.append({"config": index, **config, "seed": seed, "epoch": int(m["epoch"]),
                         "accuracy": round(float(m["accuracy"]), 5),
                         "seconds": round(time.process_time() - c0, 4)})
    return rows


def done_runs(path: Path) -> set[tuple[int, int]]:
    if not path.exists():
        return set()
    with gzip.open(path, "rt") as fh:
        return {(int(r["config"]), int(r["seed"])) for r in csv.DictReader(fh)}


def build(name: str, n_configs: int, seeds: int) -> float:
    tr = get_trainable(name)
    configs = uniform_configs(tr.space, n_configs, seed=SOBOL_SEED)
    path = table_path(name)
    done = done_runs(path)
    one_run(name, -1, configs[0], 0)          # imports and first-call costs, discarded
    t0 = time.perf_counter()
    for i, config in enumerate(configs):
        for seed in range(seeds):
            if (i, seed) in done:
                continue
            rows = one_run(name, i, config, seed)
            new = not path.exists()
            with gzip.open(path, "at") as fh:
                fh.write(csv_text(rows, header=new))
            done.add((i, seed))
        print(f"{name}: {i + 1}/{len(configs)} configurations", flush=True)
    spent = time.perf_counter() - t0
    meta_path = path.with_suffix("").with_suffix(".json")
    previous = json.loads(meta_path.read_text())["build_seconds"] if meta_path.exists() else 0.0
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor()) \
        if os.path.exists("/proc/cpuinfo") else platform.processor()
    write_json(
        meta_path,
        {"trainable": name, "configs": configs, "seeds": seeds, "options": OPTIONS,
         "every": LR_EVERY if name == "logreg" else 1, "sobol_seed": SOBOL_SEED,
         "build_seconds": round(previous + spent, 1),
         "machine": {"cpu": cpu, "cores": os.cpu_count()}, "date": time.strftime("%Y-%m-%d"),
         "command": "python -m tuner.bench.build_curve_tables " + " ".join(sys.argv[1:])},
        indent=1,
    )
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=128)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--only", default=",".join(NAMES))
    args = ap.parse_args()
    for name in args.only.split(","):
        print(f"{name}: built in {build(name, args.configs, args.seeds):.0f} s", flush=True)


if __name__ == "__main__":
    main()
