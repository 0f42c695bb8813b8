"""The pace rule against today's budget stop, on simulated crossing learning curves with a
run-time budget (``CrossingCurves``, 27 epochs, run time 1 + 0.02 width seconds, cv 0.2; the
budget is the median mean run time of the space).  Two rules, the same GP searcher (the study's
default settings with the budget as a run-time constraint and ``stop_margin`` = 1):

* ``margin``: today's rule without progress: a run is stopped once it passes the budget by
  ``stop_margin`` (at 2 x the limit);
* ``paceM``: ``PaceBudget`` (``budget.pace_margin`` = M; the default is 0) on top: a run whose
  pace puts its full length over (1 + M) x the limit by more than z = 2 standard errors of the
  projection is stopped, from its third report on, after 10 % of the limit; ``paceM zZ``: with
  z = Z (0: by the projection alone).  ``--step-cv``: epochs of uneven length (a noisy pace).

Prints medians over seeds: for runs whose *mean* run time is over the budget (their median pace
puts them over it), the share stopped early and when (elapsed / limit); the worker-seconds spent
on runs whose run time was over the budget; the mean number of runs within the budget that the
pace rule stopped (wrongly); the best feasible full-length score at H/4, H/2, H.

    python scripts/studies/pace_budget.py --horizon 60 --workers 4 --seeds 10 --step-cv 0.3
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from tuner import Optimizer, Settings
from tuner.core.trial import Status
from tuner.loop.problems import CrossingCurves
from tuner.loop.simulator import simulate
from tuner.loop.stopping import Fidelity, PaceBudget

CURVES = CrossingCurves(epochs=27)
FIDELITY = Fidelity("epoch", 27)
WIDTHS = np.exp(np.random.default_rng(0).uniform(np.log(8), np.log(256), 4096))
LIMIT = float(np.median([CURVES.mean_run_time({"width": round(w)}) for w in WIDTHS]))


class JitteredSteps:
    """``CrossingCurves`` whose epochs take uneven shares of the run: each epoch's time is
    log-normal with coefficient of variation ``cv`` (a busy machine, data loading stalls)."""

    def __init__(self, cv: float, seed: int):
        self.cv, self.rng = cv, np.random.default_rng(seed)
        self.space = CURVES.space

    def __call__(self, config):
        final, metrics, curve = CURVES(config)
        if self.cv <= 0:
            return final, metrics, curve
        s = math.sqrt(math.log1p(self.cv ** 2))
        steps = self.rng.lognormal(-s * s / 2, s, len(curve))
        fractions = np.cumsum(steps) / steps.sum()
        return final, metrics, [(float(f), m) for f, (_, m) in zip(fractions, curve)]


def one(
    rule: str, seed: int, workers: int, horizon: float, step_cv: float = 0.0
) -> dict[str, float]:
    settings = Settings(constraints=[{"metric": "runtime", "limit": LIMIT, "type": "budget",
                                      "runtime": True}], stop_margin=1.0)
    opt = Optimizer(CURVES.space, settings, objective_bounds=(0.0, 1.0), seed=seed)
    if rule.startswith("pace"):
        margin, _, z = rule[4:].partition(" z")
        rules = [PaceBudget(LIMIT, FIDELITY, float(margin), z=float(z or 2.0))]
    else:
        rules = []
    res = simulate(opt, JitteredSteps(step_cv, seed), CURVES.run_time(), 100_000, workers=workers,
                   seed=seed, fidelity=FIDELITY, stopping=rules, time_limit=horizon)
    ran = res.finish - res.start
    planned = np.array([m["runtime"] for m in res.metrics_true])
    slow = np.array([CURVES.mean_run_time(c) > LIMIT for c in res.configs])
    ended_early = (res.status == Status.STOPPED) | (res.status == Status.TIMED_OUT)
    over = planned > LIMIT
    wrong = (res.status == Status.STOPPED) & ~over
    out = {
        "trials": len(res.configs),
        "slow": int(slow.sum()),
        "slow_stopped": float(np.mean(ended_early[slow])) if slow.any() else np.nan,
        "stop_at": float(np.median(ran[slow & ended_early] / LIMIT))
        if (slow & ended_early).any()
        else np.nan,
        "wrong": int(wrong.sum()),
        "over_seconds": float(ran[over].sum()),
        "all_seconds": float(ran.sum()),
    }
    ok = res.completed & ~over
    for frac in (0.25, 0.5, 1.0):
        done = ok & (res.finish <= frac * horizon)
        out[f"best_{frac:g}"] = max((CURVES.score(c, 27) for c, d in zip(res.configs, done) if d),
                                    default=np.nan)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--horizon", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--pace-margins", type=float, nargs="+", default=[0.1, 0.0])
    ap.add_argument("--z", type=float, nargs="+", default=[2.0, 1.0, 0.0])
    ap.add_argument("--step-cv", type=float, default=0.0,
                    help="uneven epochs: each epoch's share of the run varies with this cv")
    args = ap.parse_args()
    print(f"budget {LIMIT:.3g} s; H = {args.horizon:g} s, W = {args.workers}, {args.seeds} seeds, "
          f"step cv {args.step_cv:g}; medians\n")
    print("| rule | trials | slow runs | slow runs stopped early | stopped at (x limit) | "
          "runs within the budget stopped | worker-s on over-budget runs | share of all worker-s | "
          "best by H/4 | H/2 | H |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rules = ["margin", *(f"pace{m:g} z{z:g}" for m in args.pace_margins for z in args.z)]
    for rule in rules:
        runs = [one(rule, s, args.workers, args.horizon, args.step_cv) for s in range(args.seeds)]
        med = {k: float(np.nanmedian([r[k] for r in runs])) for k in runs[0]}
        share = np.median([r["over_seconds"] / r["all_seconds"] for r in runs])
        print(
            f"| {rule} | {med['trials']:.0f} | {med['slow']:.0f} | {med['slow_stopped']:.0%} | "
            f"{med['stop_at']:.2f} | {np.mean([r['wrong'] for r in runs]):.1f} | "
            f"{med['over_seconds']:.1f} | {share:.1%} | "
            f"{med['best_0.25']:.3f} | {med['best_0.5']:.3f} | {med['best_1']:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
