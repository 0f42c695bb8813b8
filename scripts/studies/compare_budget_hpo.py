"""A simulated HPO study with a per-run time budget: constrained methods, the run-time-aware
improvements and the baselines, on the same simulated worker pool and wall clock.

Job (tuner.loop.problems.BudgetedTraining): validation accuracy grows with the model's width (and
peaks in lr and dropout); run time = 5 + 0.1 width seconds with log-normal noise (cv 0.25).
Budget: each run should finish within T = 30 s, i.e. g = runtime / 30 - 1 <= 0, declared as
``{"metric": "runtime", "limit": 30, "type": "budget", "runtime": True}``.  The unconstrained
optimum (width 512, 56 s) is over budget; the best configuration whose mean run time is within
it scores 0.886 (0.942 unconstrained).  4 simulated workers, a new trial the moment one frees,
a wall clock of H seconds, accuracy noise N(0, 0.01^2); censoring window in seconds, "auto"
(paper 001's m = 2 mu) unless a method says otherwise;
objective bounds [0.5, 1] (the job's chance level is its known minimum, the censored value of
paper 001; with bounds [0, 1] the censored value lies far below every real score, pending
trials repel too strongly and the GP methods stalled at small models, best 0.65 after 600 s in
a pilot).

Methods (all GP methods: SE-ARD GP, refit every 10, beta = 1, 512 Sobol + 64 local candidates):

    random              random search
    gp-ucb-sdf          unconstrained GP-UCB-SDF (paper 001)
    gp-ucb              unconstrained GP-UCB that ignores running trials (001's baseline)
    rpol                RPOL-CensoredUCB (004 §5), the paper's rule: run times censored like
                        any delayed feedback, no stopping
    cbo-ts              CBO with GP-TS-SDF (003 Alg. 1), paper rule
    penalty             penalty epochs, Alg. 3 (000, additive; the run time is noisy), paper rule
    rpol+bound          rpol with the run-time-aware model (use_elapsed_bound): a running trial
                        past the budget is a known violation, run times are never censored
    rpol+bound m=inf    rpol+bound with the product's default window (a result counts whenever
                        it arrives; every other GP method here uses "auto", the paper's 2 mu)
    rpol+stop0.2        rpol with the stop rule at 1.2 x budget (stop_margin = 0.2) only
    rpol+bound+stop0.2  both
    rpol+stop0.5        the stop rule at 1.5 x budget only
    rpol+bound+stop0.5  both, stop at 1.5 x budget
    rpol+bound+stop1.0  both, stop at 2 x budget
    ... b_c=0           without the delay term of the constraint's LCB (v_t^g = beta_t, 004 §5
                        has beta_t + B_c sum sigma): the sin-problem ablation found it raises V
    cbo-ts+bound+stop0.2, penalty+bound+stop0.2   the improvements on the other handlers

Metrics up to the wall clock H: best feasible score (noise-free accuracy of the best trial that
completed within the budget) over time; violation sum over trials of (time used / T - 1)^+;
number of runs over budget; worker-seconds spent on runs over budget (their whole time used:
their result is infeasible or, if stopped, absent) and its share of all worker-seconds.

    python scripts/studies/compare_budget_hpo.py --runs 40 --horizon 900 --out \
        docs/research/results/constraints
    python scripts/studies/compare_budget_hpo.py --runs 40 --horizon 900 --out \
        docs/research/results/constraints/window \
        --methods "rpol+bound" "rpol+bound m=inf" "rpol+bound+stop0.5 m=inf" \
            "rpol+bound+stop1.0 m=inf"
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tuner.bench.constraint_runs import markdown_table, plot_panels, run_pool
from tuner.core.persist import write_table

import numpy as np  # noqa: E402

from tuner import PAPER_EXACT, Optimizer, Settings  # noqa: E402
from tuner.loop.problems import BudgetedTraining  # noqa: E402
from tuner.loop.simulator import simulate  # noqa: E402

LIMIT, WORKERS, NOISE = 30.0, 4, 0.01
BUDGET = {"metric": "runtime", "limit": LIMIT, "type": "budget", "runtime": True}
PLAIN = {"use_elapsed_bound": False}
RPOL = {"algorithm": "gp-ucb-sdf", "constraint_handler": "rpol"}
CBO_TS = {"algorithm": "gp-ts-sdf", "constraint_handler": "cbo"}
PENALTY = {"algorithm": "gp-ucb-sdf", "constraint_handler": "penalty",
           "handler_options": {"update": "additive", "epoch": 20}}
METHODS = {"random": {"algorithm": "random"}, "gp-ucb-sdf": {"algorithm": "gp-ucb-sdf"},
           "gp-ucb": {"algorithm": "gp-ucb"}, "rpol": {**RPOL, **PLAIN},
           "cbo-ts": {**CBO_TS, **PLAIN}, "penalty": {**PENALTY, **PLAIN}, "rpol+bound": {**RPOL},
           "rpol+bound m=inf": {**RPOL, "window": "inf"},
           "rpol+bound+stop0.5 m=inf": {**RPOL, "window": "inf", "stop_margin": 0.5},
           "rpol+bound+stop1.0 m=inf": {**RPOL, "window": "inf", "stop_margin": 1.0},
           "rpol+stop0.2": {**RPOL, **PLAIN, "stop_margin": 0.2},
           "rpol+bound+stop0.2": {**RPOL, "stop_margin": 0.2},
           "rpol+stop0.5": {**RPOL, **PLAIN, "stop_margin": 0.5},
           "rpol+bound+stop0.5": {**RPOL, "stop_margin": 0.5},
           "rpol+bound+stop1.0": {**RPOL, "stop_margin": 1.0},
           "rpol+bound b_c=0": {**RPOL, "b_c": 0.0},
           "rpol+bound+stop0.5 b_c=0": {**RPOL, "stop_margin": 0.5, "b_c": 0.0},
           "cbo-ts+bound+stop0.2": {**CBO_TS, "stop_margin": 0.2},
           "penalty+bound+stop0.2": {**PENALTY, "stop_margin": 0.2}}


# The plot shows these (the table has every method; budget_hpo_curves.npz every curve).
PLOTTED = ("random", "gp-ucb-sdf", "gp-ucb", "rpol", "cbo-ts", "penalty", "rpol+bound",
           "rpol+bound m=inf", "rpol+bound+stop0.5 m=inf")


def one_run(args: tuple) -> tuple:
    method, run, horizon = args
    job = BudgetedTraining()
    kw = dict(METHODS[method])
    cons = [] if kw["algorithm"] == "random" or method in ("gp-ucb-sdf", "gp-ucb") else [BUDGET]
    kw.setdefault("window", "auto")
    opt = Optimizer(job.space, Settings.from_dict({
        **PAPER_EXACT, "objective_bounds": (0.5, 1.0), "window_unit": "seconds", "beta": 1.0,
        "constraints": cons, "seed": run, "n_candidates": 512, "n_local": 64, **kw}))
    t0 = time.perf_counter()
    res = simulate(opt, job, job.run_time(), n_trials=100_000, workers=WORKERS, noise_std=NOISE,
                   seed=10_000 + run, time_limit=horizon)
    duration = np.array([m["runtime"] for m in res.metrics_true])
    margin = kw.get("stop_margin")
    used = np.minimum(duration, np.inf if margin is None else LIMIT * (1 + margin))
    over = duration > LIMIT
    grid = np.linspace(0.0, horizon, 121)
    ok = res.completed & ~over
    best = np.array([np.max(res.f_true[ok & (res.finish <= tau)], initial=-np.inf) for tau in grid])
    best[~np.isfinite(best)] = np.nan
    over_seconds = np.array(
        [
            np.sum(np.clip(np.minimum(res.start + used, tau) - res.start, 0, None)[over])
            for tau in grid
        ]
    )
    stats = {"trials": len(res.start), "violation": float(np.sum(np.maximum(used / LIMIT - 1, 0))),
             "over-budget runs": int(over.sum()), "over-budget s": float(np.sum(used[over])),
             "over-budget share": float(np.sum(used[over]) / np.sum(used)),
             "stopped": int(res.stopped.sum()), "best feasible": float(best[-1]),
             "suggest ms": 1e3 * float(np.mean(res.suggest_seconds))}
    return method, run, grid, best, over_seconds, stats, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--horizon", type=float, default=900.0, help="simulated wall clock, seconds")
    ap.add_argument("--methods", nargs="*", default=None)
    ap.add_argument("--workers", type=int, default=2, help="processes")
    ap.add_argument("--out", default="docs/research/results/constraints")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = [m for m in METHODS if args.methods is None or m in args.methods]
    results = run_pool(one_run, [(m, r, args.horizon) for m in names for r in range(args.runs)],
                       args.workers)
    grid = results[0][2]
    best = {m: [r[3] for r in results if r[0] == m] for m in names}
    over = {m: [r[4] for r in results if r[0] == m] for m in names}
    target = 0.85
    rows = []
    for m in names:
        per = [r for r in results if r[0] == m]
        B = np.vstack(best[m])
        row = {"method": m}
        for tau in (args.horizon / 4, args.horizon / 2, args.horizon):
            k = int(np.argmin(np.abs(grid - tau)))
            row[f"best@{tau:.0f}s"] = f"{np.nanmean(B[:, k]):.4f} ± {np.nanstd(B[:, k]):.4f}"
        reach = [grid[np.argmax(b >= target)] if np.any(b >= target) else np.inf for b in B]
        row[f"time to {target}"] = (f"{np.median(reach):.0f} s" if np.isfinite(np.median(reach))
                                    else "never (median)")
        row["reached"] = f"{int(np.sum(np.isfinite(reach)))}/{len(reach)}"
        for key in ("trials", "violation", "over-budget runs", "over-budget s", "over-budget share",
                    "stopped", "suggest ms"):
            v = [r[5][key] for r in per]
            row[key] = (
                f"{np.mean(v):.1f}" if key != "over-budget share" else f"{100 * np.mean(v):.1f} %"
            )
        rows.append(row)
    cols = list(rows[0])
    md = [f"# Budgeted HPO simulation: {args.runs} runs, {WORKERS} workers, budget {LIMIT:g} s, "
          f"wall clock {args.horizon:g} s\n",
          f"best feasible score of the job: {BudgetedTraining().best_feasible(LIMIT):.4f} "
          "(configuration with mean run time within the budget)\n", markdown_table(rows, cols)]
    shown = [m for m in PLOTTED if m in names] if len(names) > len(PLOTTED) else names
    np.savez_compressed(out / "budget_hpo_curves.npz", grid=grid,
                        **{f"{k}|{m}": np.vstack(v[m]) for k, v in (("best", best), ("over", over))
                           for m in names})
    plot_panels(
        [("best feasible accuracy", {m: best[m] for m in shown}),
         ("worker-seconds on over-budget runs", {m: over[m] for m in shown})],
        f"budgeted HPO: {WORKERS} workers, budget {LIMIT:g} s ({args.runs} runs, mean and 25-75 %)",
        out / "budget_hpo.png",
        x=grid,
        xlabel="simulated wall clock (s)",
    )
    write_table(out / "budget_hpo_summary.csv", rows)
    seconds = [r[6] for r in results]
    md.append(f"\nseconds per run: mean {np.mean(seconds):.1f}, max {np.max(seconds):.1f}")
    (out / "budget_hpo_summary.md").write_text("\n".join(md) + "\n")
    (out / "budget_hpo_config.json").write_text(json.dumps(METHODS, indent=1))
    print("\n".join(md))


if __name__ == "__main__":
    main()
