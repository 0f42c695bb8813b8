"""Reproduce paper 003 (CBO) §5 / App. F.1, the synthetic setting: CBO-UCB, CBO-TS, CBO-Rand.

X = 100 equally spaced points of [0, 1]; f = sum_{i<=100} a_i k(., x_i), a_i ~ U[-1, 1], SE kernel
with lengthscale 0.2; g = -f + h with h = B/4 or B/2, B = ||f||_k
(tuner.loop.problems.RKHSConstrained; a new draw per run).  Noise N(0, 0.1^2) on f and on g
(the paper leaves R to "as in the unconstrained case").  One query per round, no delay.  As the
paper assumes a known kernel, the GPs use the true SE kernel (lengthscale 0.2, amplitude 1, lambda =
0.01) without refits.
beta_t = sqrt(2 log(|X| t^2 pi^2 / (6 delta))) (Srinivas et al. Thm 1) for f and g; CBO with
B = max |f| over X (the objective range), G = max |g|, rho = 4 B / delta_S with the Slater slack
delta_S = -min g (003 Thm 1), V = G sqrt(T) / rho.

The paper runs T = 10,000 rounds and reports the number of violating rounds N (CBO-UCB 1.1 /
3.25, CBO-TS 0.7 / 2.9, CBO-Rand 1.1 / 5 for h = B/4 / B/2) and cumulative regret curves (TS and
Rand well below UCB).  Here T = 1000 by default (the GP's cost grows with T), with RPOL-UCB on
the same draws for reference.

    python scripts/reproduce/reproduce_cbo.py --runs 20 --T 1000 --out \
        docs/research/results/constraints
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tuner.bench.constraint_runs import (average_curves, markdown_table, pivot, plot_panels,
                                         run_pool, summarize)
from tuner.core.persist import write_table

import numpy as np  # noqa: E402

from tuner import PAPER_EXACT, Optimizer, Settings  # noqa: E402
from tuner.loop.problems import RKHSConstrained  # noqa: E402
from tuner.loop.simulator import Fixed, simulate  # noqa: E402

NOISE = 0.1
METHODS = {"CBO-UCB": ("gp-ucb", "cbo"), "CBO-TS": ("asy-ts", "cbo"),
           "CBO-Rand": ("randgp-ucb", "cbo"), "RPOL-UCB": ("gp-ucb", "rpol")}
# asy-ts / randgp-ucb without delays: pending trials never exist, so "ignore" and "censor" agree


def one_run(args: tuple) -> tuple:
    (h_frac, method), run, T = args
    p = RKHSConstrained.sample(seed=run, h_fraction=h_frac)
    algo, handler = METHODS[method]
    lo, hi = float(p.f_values.min()), float(p.f_values.max())
    B, G = max(abs(lo), abs(hi)), float(np.abs(p.g_values).max())
    slack = max(-float(p.g_values.min()), 1e-3)
    opts = (
        {"rho": 4 * B / slack, "horizon": T, "clip_f": B, "clip_g": G} if handler == "cbo" else {}
    )
    opt = Optimizer(
        p.space,
        Settings.from_dict(
            {**PAPER_EXACT, "algorithm": algo, "objective_bounds": (lo, hi),
             "constraints": [p.constraint], "constraint_handler": handler, "handler_options": opts,
             "beta_schedule": "srinivas-finite", "delta": 0.1, "lengthscale": 0.2, "amplitude": 1.0,
             "noise": 0.01, "refit_every": 10**9, "seed": run}
        ),
        domain=p.grid[:, None],
    )
    t0 = time.perf_counter()
    res = simulate(opt, p, Fixed(0), T, noise_std=NOISE, metric_noise=NOISE, seed=10_000 + run)
    curves = average_curves(res.f_true, res.g_true(0), p.f_opt)
    curves["R"] = curves["R/t"] * np.arange(1, T + 1)
    return f"h=B/{int(round(1 / h_frac))}", method, run, curves, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--T", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="docs/research/results/constraints")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [((h, m), r, args.T) for h in (0.25, 0.5) for m in METHODS for r in range(args.runs)]
    results = run_pool(one_run, jobs, args.workers)

    marks = [t for t in (100, 300, 1000, 3000, 10000) if t <= args.T] or [args.T]
    rows, md = [], [f"# Paper 003 synthetic setting: {args.runs} runs, T = {args.T}\n"]
    for case in dict.fromkeys(r[0] for r in results):
        per = [r for r in results if r[0] == case]
        curves = {k: {m: [r[3][k] for r in per if r[1] == m] for m in METHODS}
                  for k in ("R", "violations", "V/t", "softV/t")}
        plot_panels([("cumulative regret R(t)", curves["R"]),
                     ("violating rounds N(t)", curves["violations"])],
                    f"paper 003 synthetic, {case} ({args.runs} runs, mean and 25-75 %)",
                    out / f"cbo_synthetic_{case.replace('/', '')}.png")
        for k in ("R", "violations", "V/t", "softV/t"):
            summary = summarize(curves[k], marks)
            rows += [{"case": case, "metric": k, **r} for r in summary]
            md += [f"\n## {case}: {k}\n", markdown_table(pivot(summary, k, marks),
                                                          ["method"] + [f"t={t}" for t in marks])]
    write_table(out / "cbo_summary.csv", rows)
    seconds = [r[4] for r in results]
    md.append(f"\nseconds per run: mean {np.mean(seconds):.1f}, max {np.max(seconds):.1f}")
    (out / "cbo_summary.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
