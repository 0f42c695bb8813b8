"""Whether a refactoring left the optimizer's choices alone: fingerprints of a fixed set of
simulated harness runs, saved once and compared after the change.

    python scripts/checks/same_runs.py --save /tmp/before.json     # on the commit before
    python scripts/checks/same_runs.py --check /tmp/before.json    # after: lists what differs

A fingerprint is the SHA-256 of every trial of a run as the optimizer holds it (configuration,
value, status, start and finish times, metrics; JSON with floats written exactly), or of a
curve run's result row.  The runs cover the product's paths on one machine in a few minutes:

* the harness (``tuner.bench.compare.harness_run``) with a study's defaults (``study``), the
  bare Optimizer's (``tuner``) and paper-exact GP-UCB-SDF, GP-TS-SDF and CBO on the paper's
  rules (``paper``, ``gp-ts-sdf``, ``tuner-cbo``), on smooth, rough, mixed, constrained and
  recorded problems, 4 and 16 workers;
* the learning-curve benchmark with ASHA and the curve rule on a study's defaults;
* a contextual study, a study past ``exact_until`` (the subset GP) and deferred fits
  (``refit_apply: next``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

HARNESS = [(problem, workers, method, seed)
           for problem, workers in (("branin", 4), ("hartmann6", 4), ("levy5", 4),
                                    ("hpo-mixed-budget", 4), ("gardner", 4),
                                    ("sin-constrained", 4), ("budgeted-training", 4),
                                    ("mlp-car-budget", 4), ("nb201-cifar10", 4),
                                    ("branin", 16), ("hpo-mixed-budget", 16))
           for method in ("study", "tuner", "paper", "gp-ts-sdf", "tuner-cbo")
           for seed in (0, 1)]
CURVES = [(problem, 4, method, 0) for problem in ("crossing", "crossing-budget")
          for method in ("tuner-study", "tuner-study-asha", "tuner-study-curve")]
SPECIAL = ["context", "subset", "deferred"]


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _trials(opt: Any) -> list[dict[str, Any]]:
    return [tr.to_dict() for tr in opt.trials]


def _harness(key: tuple[str, int, str, int]) -> str:
    from tuner.bench.compare import harness_run
    from tuner.bench.peers import applies
    from tuner.bench.problems import get_problem

    problem, workers, method, seed = key
    p = get_problem(problem)
    if not applies(method, p) or (method == "tuner-cbo" and p.constraint is None):
        return "n/a"
    return _digest(_trials(harness_run(p, workers, method, seed).optimizer))


def _curve(key: tuple[str, int, str, int]) -> str:
    from tuner.bench.curves import one_run

    row = one_run(*key, rounds=6.0)
    row.pop("run_seconds")
    return _digest(row)


def _special(name: str) -> str:
    import numpy as np

    from tuner import Optimizer, Settings
    from tuner.loop.simulator import RunTime, simulate
    from tuner.study.defaults import study_optimizer_defaults

    branin = {"x0": {"type": "float", "low": -5.0, "high": 10.0},
              "x1": {"type": "float", "low": 0.0, "high": 15.0}}

    def f(c: dict[str, Any]) -> float:
        x, y = c["x0"], c["x1"]
        return -((y - 5.1 / (4 * np.pi ** 2) * x ** 2 + 5 / np.pi * x - 6) ** 2
                 + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x) + 10)

    study = study_optimizer_defaults(context=name == "context")
    if name == "context":
        opt = Optimizer(branin, Settings.from_dict({**study, "seed": 3}),
                        context_space={"shift": {"type": "float", "low": 0.0, "high": 2.0}})
        t = 0.0
        opt.clock = lambda: t
        for k in range(40):
            z = {"shift": float(k // 10) / 2}
            s = opt.suggest(context=z)
            t += 1.0
            opt.tell(s.trial_id, f(s.config) - z["shift"] * s.config["x0"])
        return _digest(_trials(opt))
    extra = ({"exact_until": 40, "subset_size": 30, "refit_every": 5} if name == "subset"
             else {"refit_apply": "next", "fit_max_points": 20})
    opt = Optimizer(branin, Settings.from_dict({**study, **extra, "seed": 5}))
    res = simulate(opt, f, RunTime(lambda c: 1.0 + c["x0"] / 20, 0.3), n_trials=90, workers=4,
                   seed=7)
    return _digest(_trials(res.optimizer))


def _one(job: tuple[str, Any]) -> tuple[str, str]:
    kind, key = job
    run: Callable[[Any], str] = {"harness": _harness, "curve": _curve, "special": _special}[kind]
    return f"{kind}:{key if isinstance(key, str) else '/'.join(map(str, key))}", run(key)


def fingerprints(processes: int) -> dict[str, str]:
    jobs = ([("harness", k) for k in HARNESS] + [("curve", k) for k in CURVES]
            + [("special", k) for k in SPECIAL])
    with ProcessPoolExecutor(processes) as pool:
        return dict(pool.map(_one, jobs))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path, help="write the fingerprints to this JSON file")
    group.add_argument("--check", type=Path, help="compare with the fingerprints in this file")
    ap.add_argument("--processes", type=int, default=2)
    args = ap.parse_args(argv)
    now = fingerprints(args.processes)
    if args.save:
        args.save.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"{len(now)} runs fingerprinted: {args.save}")
        return 0
    before = json.loads(args.check.read_text())
    differ = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    for k in differ:
        print(f"differs: {k}")
    print(f"{len(now) - len(differ)} of {len(set(before) | set(now))} runs identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
