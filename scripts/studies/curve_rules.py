"""Early-stopping rules on simulated crossing learning curves
(``tuner.loop.problems.CrossingCurves``, 27 epochs, run times 1-6 s): the default GP searcher with
no stopping, with ASHA (grace 1, eta 3) and with the curve rule (``CurveRule``, kappa 2 and 1), W
simulated workers, each seed a study of ``H`` simulated seconds.  Prints the median over seeds of
the best full-length score of a finished run by H/4, H/2 and H, and the median number of trials
started.

    python scripts/studies/curve_rules.py --horizon 40 --workers 4 --seeds 6
"""

from __future__ import annotations

import argparse

import numpy as np

from tuner import Optimizer, Settings
from tuner.core.curves import CurveModel
from tuner.loop.problems import CrossingCurves
from tuner.loop.simulator import simulate
from tuner.loop.stopping import ASHA, CurveRule, Fidelity

CURVES = CrossingCurves(epochs=27)
FIDELITY = Fidelity("epoch", 27)
RULES = ("none", "asha", "curve-k2", "curve-k1")


def one(rule: str, seed: int, workers: int, horizon: float) -> tuple[list[float], int]:
    opt = Optimizer(CURVES.space, Settings(), objective_bounds=(0.0, 1.0), seed=seed)
    rules = {
        "none": [],
        "asha": [ASHA(27, 1, 3)],
        "curve-k2": [
            CurveRule(CurveModel(2, 27, seed), lambda t: opt.trials[t].x, FIDELITY, kappa=2.0)
        ],
        "curve-k1": [
            CurveRule(CurveModel(2, 27, seed), lambda t: opt.trials[t].x, FIDELITY, kappa=1.0)
        ],
    }[rule]
    res = simulate(opt, CURVES, CURVES.run_time(), 100_000, workers=workers, seed=seed,
                   fidelity=FIDELITY, stopping=rules, time_limit=horizon)
    best = []
    for frac in (0.25, 0.5, 1.0):
        ok = res.completed & (res.finish <= frac * horizon)
        best.append(
            max((CURVES.score(c, 27) for c, o in zip(res.configs, ok) if o), default=np.nan)
        )
    return best, len(opt.trials)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--horizon", type=float, default=40.0)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=6)
    args = ap.parse_args()
    print(f"| rule | best by H/4 | H/2 | H | trials | (H = {args.horizon:g} s, W = {args.workers}, "
          f"{args.seeds} seeds, medians) |\n|---|---|---|---|---|---|")
    for rule in RULES:
        runs = [one(rule, s, args.workers, args.horizon) for s in range(args.seeds)]
        med = np.nanmedian([r[0] for r in runs], axis=0)
        print(f"| {rule} | {med[0]:.3f} | {med[1]:.3f} | {med[2]:.3f} | "
              f"{np.median([r[1] for r in runs]):.0f} | |", flush=True)


if __name__ == "__main__":
    main()
