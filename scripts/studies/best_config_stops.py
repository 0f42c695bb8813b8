"""What the curve rule does to the best configuration of a recorded curve table: per seed of
the learning-curve benchmark's run (``tuner.bench.curves``, the same simulation and seeds), the
runs of the table's configuration with the best mean final accuracy, the recorded seed each drew
(its own final accuracy), and, for a run the rule stopped, where it stopped and what the curve
model predicted there.  Answers why stopping costs the result on the CNN table at W = 16: the
best configuration is at chance at epoch 2, the rule stops its first run there on many seeds, and
the search does not come back to it.

    python scripts/studies/best_config_stops.py --problem cnn-table --workers 16 --seeds 20
"""

from __future__ import annotations

import argparse
import re
import warnings
from typing import Any

import numpy as np

from tuner.bench.curve_peers import make
from tuner.bench.curve_tables import CurveTable
from tuner.bench.curves import PROBLEMS
from tuner.core.trial import Status
from tuner.loop.simulator import simulate
from tuner.loop.stopping import CurveRule, Fidelity

PREDICTED = re.compile(r"predicted final value is ([-\d.e]+) \+- ([-\d.e]+)")


def one_seed(problem: str, workers: int, method: str, seed: int) -> dict[str, Any]:
    """One benchmark run with the draws and stop decisions recorded."""
    drawn: list[tuple[int, float]] = []           # per trial: table config, its seed's final
    stops: dict[int, tuple[float, float, float, str]] = {}   # trial -> step, value, best, why
    draw, decide = CurveTable.__call__, CurveRule.decide

    def recorded_draw(table: CurveTable, config: Any) -> Any:
        out = draw(table, config)
        drawn.append((table.nearest(config), out[0]))
        return out

    def recorded_decide(rule: CurveRule, trial: int, step: float, value: float,
                        elapsed: float) -> str | None:
        why = decide(rule, trial, step, value, elapsed)
        if why is not None:
            stops[trial] = (step, value, rule.sign * rule.best, why)
        return why

    CurveTable.__call__, CurveRule.decide = recorded_draw, recorded_decide
    try:
        p = PROBLEMS[problem]()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            searcher, rules = make(method, p, seed)
            res = simulate(searcher, p.family, p.family.run_time(), n_trials=10 ** 6,
                           workers=workers, noise_std=p.noise_std, seed=1000 + seed,
                           time_limit=p.horizon(workers), fidelity=Fidelity("epoch", p.epochs),
                           stopping=rules)
    finally:
        CurveTable.__call__, CurveRule.decide = draw, decide
    table: CurveTable = p.family
    means = {i: table.score(table.configs[k], p.epochs) for k, i in enumerate(table.ids)}
    best_config = max(means, key=means.get)
    finals = np.array([table.score(c, p.epochs) for c in res.configs])
    finished = res.status == Status.FINISHED
    runs = [(t, drawn[t][1], res.status[t], stops.get(t)) for t in range(len(res.configs))
            if drawn[t][0] == best_config]
    return {"seed": seed, "best": float(finals[finished].max()), "best_mean": means[best_config],
            "runs": runs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", default="cnn-table", choices=["cnn-table", "logreg-table"])
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--method", default="tuner-study-curve")
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args()
    for seed in range(args.seeds):
        r = one_seed(args.problem, args.workers, args.method, seed)
        first = r["runs"][0] if r["runs"] else None
        line = (f"seed {seed}: best credited {r['best']:.4f} (the best configuration's mean "
                f"{r['best_mean']:.4f}); its runs {len(r['runs'])}")
        if first is not None:
            _, own, status, stop = first
            line += f"; the first drew a seed ending at {own:.4f} and was {status.name}"
            if stop is not None:
                step, value, best, why = stop
                m = PREDICTED.search(why)
                line += (f" at epoch {step:g} (value {value:.3f}, best finished {best:.4f}, "
                         f"predicted {m.group(1)} +- {m.group(2)})" if m else f" at {step:g}")
        print(line, flush=True)


if __name__ == "__main__":
    main()
