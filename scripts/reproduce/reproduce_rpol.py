"""Reproduce paper 004 (RPOL) Figs. 1-2 and paper 000 App. E.1 on the constrained sin problem.

f(x) = -sin x1 - x2, g(x) = sin x1 sin x2 + 0.95 on [0, 6]^2 (tuner.loop.problems.SinConstrained;
f* = 1 - arcsin 0.95 = -0.2532; the unconstrained maximum is infeasible).  One query per round
(the simulator's iteration mode), metrics on the noise-free f and g of the chosen x_t:
R(t)/t = sum (f* - f(x_s)) / t and V(t)/t = sum g^+(x_s) / t (004 eqs. 9-10).

    fig1   004 Fig. 1: noise N(0, 0.05) on f and g (variance 0.05), no delay;
           RPOL-UCB vs CBO-UCB (the primal-dual analogue of the paper's CKB-UCB baseline).
    fig2   004 Fig. 2: the same with Poisson(15) delays (one delay per trial for f and g);
           RPOL-CensoredUCB (censored feedback, window m = 30, delay terms in v_t) vs RPOL-UCB
           and CBO-UCB (both use only the results that have arrived).
    fig2-ablation  RPOL-CensoredUCB without the delay term of v_t^g (b_c = 0), and without
           both delay terms (b_y = b_c = 0): which part makes the censored variant violate more.
    e1     000 App. E.1: f noise N(0, 0.01); Alg. 2 (noiseless g, multiplicative update,
           psi = exp, S = 20) and Alg. 3 (g noise N(0, 0.01), additive update, mu = 0.5,
           S = 20), with RPOL-UCB and CBO-UCB on the same two settings for reference.

Every method: SE-ARD GP on the unit cube, marginal-likelihood refit every 10 results, beta = 1
for f and g, 512 Sobol + 64 local candidates and one L-BFGS-B refinement per round (for speed;
the same for every method), objective bounds [-7, 1] (the GP's [0, 1] targets; the handlers see f on
its own
scale).  CBO: B = 7 (the bound on |f|), G = 2 (on |g|), rho = 4 B / delta with Slater slack
delta = 0.05 (003 Thm 1: rho >= 4B/delta; -min g = 0.05), V = G sqrt(T) / rho.

    python scripts/reproduce/reproduce_rpol.py --runs 20 --T 300 --out \
        docs/research/results/constraints
    python scripts/reproduce/reproduce_rpol.py --runs 20 --T 300 --figs fig2-ablation \
        --out docs/research/results/constraints/ablation
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tuner.bench.constraint_runs import (average_curves, markdown_table, pivot, plot_panels,
                                         run_pool, summarize)
from tuner.core.persist import write_table

import numpy as np  # noqa: E402  (tuner.bench.constraint_runs sets the BLAS threads first)

from tuner import PAPER_EXACT, Optimizer, Settings  # noqa: E402
from tuner.loop.problems import SinConstrained  # noqa: E402
from tuner.loop.simulator import Fixed, Poisson, simulate  # noqa: E402

PAPER_NOISE = float(np.sqrt(0.05))      # N(0, 0.05): variance 0.05
E1_NOISE = 0.1                          # 000 App. E.1: "noise variance of 0.01"
B, G, DELTA = 7.0, 2.0, 0.05
MAXIMIZER = {"n_candidates": 512, "n_local": 64, "n_starts": 1}


def methods(T: int) -> dict[str, dict]:
    cbo = {"constraint_handler": "cbo",
           "handler_options": {"rho": 4 * B / DELTA, "horizon": T, "clip_f": B, "clip_g": G}}
    return {
        "RPOL-UCB": {"algorithm": "gp-ucb", "constraint_handler": "rpol"},
        "RPOL-CensoredUCB": {"algorithm": "gp-ucb-sdf", "constraint_handler": "rpol", "window": 30},
        "RPOL-CensoredUCB b_c=0": {"algorithm": "gp-ucb-sdf", "constraint_handler": "rpol",
                                   "window": 30, "b_c": 0.0},
        "RPOL-CensoredUCB b_y=b_c=0": {"algorithm": "gp-ucb-sdf", "constraint_handler": "rpol",
                                       "window": 30, "b_c": 0.0, "b_y": 0.0},
        "CBO-UCB": {"algorithm": "gp-ucb", **cbo},
        "Penalty-Alg2": {
            "algorithm": "gp-ucb",
            "constraint_handler": "penalty",
            "handler_options": {"update": "multiplicative", "psi": "exp", "epoch": 20},
        },
        "Penalty-Alg3": {"algorithm": "gp-ucb", "constraint_handler": "penalty",
                         "handler_options": {"update": "additive", "step": 0.5, "epoch": 20}},
    }


# (figure, method, delay mean or None, f noise, g noise)
def settings(T: int) -> list[tuple]:
    return (
        [("fig1", m, None, PAPER_NOISE, PAPER_NOISE) for m in ("RPOL-UCB", "CBO-UCB")]
        + [
            ("fig2", m, 15, PAPER_NOISE, PAPER_NOISE)
            for m in ("RPOL-CensoredUCB", "RPOL-UCB", "CBO-UCB")
        ]
        + [
            ("fig2-ablation", m, 15, PAPER_NOISE, PAPER_NOISE)
            for m in ("RPOL-CensoredUCB b_c=0", "RPOL-CensoredUCB b_y=b_c=0")
        ]
        + [
            ("e1-noiseless", m, None, E1_NOISE, 0.0)
            for m in ("Penalty-Alg2", "RPOL-UCB", "CBO-UCB")
        ]
        + [
            ("e1-noisy", m, None, E1_NOISE, E1_NOISE)
            for m in ("Penalty-Alg3", "RPOL-UCB", "CBO-UCB")
        ]
    )


def one_run(args: tuple) -> tuple:
    (fig, method, delay, f_noise, g_noise), run, T = args
    p = SinConstrained()
    opt = Optimizer(p.space, Settings.from_dict({
        **PAPER_EXACT, "objective_bounds": p.f_range, "constraints": [p.constraint], "beta": 1.0,
        "seed": run, **MAXIMIZER, **methods(T)[method]}))
    t0 = time.perf_counter()
    res = simulate(opt, p, Fixed(0) if delay is None else Poisson(delay), T, noise_std=f_noise,
                   metric_noise=g_noise, seed=10_000 + run, f_opt=p.f_opt)
    curves = average_curves(res.f_true, res.g_true(0), p.f_opt)
    feasible = res.g_true(0) <= 0
    best = float(res.f_true[feasible].max()) if feasible.any() else float("nan")
    return fig, method, run, curves, best, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--T", type=int, default=300)
    ap.add_argument("--figs", nargs="*", default=None, help="subset of fig1 fig2 fig2-ablation "
                                                            "e1-noiseless e1-noisy")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="docs/research/results/constraints")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = [
        s for s in settings(args.T) if (s[0] in args.figs if args.figs else s[0] != "fig2-ablation")
    ]
    jobs = [(s, r, args.T) for s in chosen for r in range(args.runs)]
    results = run_pool(one_run, jobs, args.workers)

    marks = [t for t in (25, 50, 100, 200, 300, 500) if t <= args.T]
    for fig in dict.fromkeys(s[0] for s in chosen):
        per = [r for r in results if r[0] == fig]
        labels = list(dict.fromkeys(r[1] for r in per))
        curves = {k: {m: [r[3][k] for r in per if r[1] == m] for m in labels}
                  for k in ("R/t", "V/t", "softV/t", "violations")}
        np.savez_compressed(
            out / f"rpol_{fig}_curves.npz",
            **{f"{k}|{m}": np.vstack(v) for k, c in curves.items() for m, v in c.items()},
        )
        plot_panels([("R(t)/t", curves["R/t"]), ("V(t)/t", curves["V/t"])],
                    f"{fig}: f = -sin x1 - x2, g = sin x1 sin x2 + 0.95 ({args.runs} runs, "
                    "mean and 25-75 %)", out / f"rpol_{fig}.png", yscale=["symlog", "log"])
        rows, md = [], [f"## {fig} ({args.runs} runs, T = {args.T})"]
        for k in ("R/t", "V/t", "violations"):
            summary = summarize(curves[k], marks)
            rows += [{"figure": fig, "metric": k, **r} for r in summary]
            md += [f"\n### {fig}: {k}\n", markdown_table(pivot(summary, k, marks),
                                                           ["method"] + [f"t={t}" for t in marks])]
        best = [
            {"method": m, "best feasible f": f"{np.nanmean([r[4] for r in per if r[1] == m]):.3f}",
             "runs without a feasible x": sum(np.isnan(r[4]) for r in per if r[1] == m)}
            for m in labels
        ]
        seconds = [r[5] for r in per]
        md += [
            f"\n{fig}: best feasible f among the chosen x_t (f* = {SinConstrained().f_opt:.4f})\n",
            markdown_table(best, ["method", "best feasible f", "runs without a feasible x"]),
            f"\nseconds per run: mean {np.mean(seconds):.1f}, max {np.max(seconds):.1f}\n",
        ]
        write_table(out / f"rpol_{fig}.csv", rows)
        (out / f"rpol_{fig}.md").write_text("\n".join(md) + "\n")
        print("\n".join(md))
    (out / "rpol_config.json").write_text(json.dumps({"runs": args.runs, "T": args.T,
                                                      "methods": methods(args.T)}, indent=1))


if __name__ == "__main__":
    main()
