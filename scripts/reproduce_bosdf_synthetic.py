"""Reproduce paper 001 (BO-SDF) Fig. 1a-1d and Fig. 5: the synthetic experiment.

Objective: a GP sample (SE kernel, lengthscale 0.02) on 1000 equally spaced points of [0, 1],
normalized into [0, 1] (App. C.1); a new sample per run.  One query per iteration, delays in
iterations: Poisson(mu) (stochastic) or fixed (deterministic); beta = 1; SE kernel with
marginal-likelihood refits every 10 iterations; simple regret over *completed* evaluations.

    fig1a  GP-UCB-SDF for mu in {2, 5, 10, 20}, m = 2 mu
    fig1b  GP-UCB-SDF for mu = 10 and m in {2, 5, 10, 20, 40}
    fig1c  GP-UCB-SDF vs GP-UCB vs GP-BUCB, Poisson(10), m = 20
    fig1d  the same with every delay fixed at 10, m = 20
    fig5a  GP-TS-SDF vs asy-TS vs GP-BTS, Poisson(10), m = 20
    fig5b  the same with every delay fixed at 10

    python scripts/reproduce_bosdf_synthetic.py --runs 20 --T 200 --out bench_results/bosdf_synthetic
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tuner import Optimizer  # noqa: E402
from tuner.problems import gp_sample_1d  # noqa: E402
from tuner.simulator import Fixed, Poisson, simulate  # noqa: E402

# (figure, label, algorithm, delay kind, delay value, window m)
SETTINGS = (
    [("fig1a", f"mu={mu}", "gp-ucb-sdf", "poisson", mu, 2 * mu) for mu in (2, 5, 10, 20)]
    + [("fig1b", f"m={m}", "gp-ucb-sdf", "poisson", 10, m) for m in (2, 5, 10, 20, 40)]
    + [("fig1c", a, a, "poisson", 10, 20) for a in ("gp-ucb-sdf", "gp-ucb", "gp-bucb")]
    + [("fig1d", a, a, "fixed", 10, 20) for a in ("gp-ucb-sdf", "gp-ucb", "gp-bucb")]
    + [("fig5a", a, a, "poisson", 10, 20) for a in ("gp-ts-sdf", "asy-ts", "gp-bts")]
    + [("fig5b", a, a, "fixed", 10, 20) for a in ("gp-ts-sdf", "asy-ts", "gp-bts")]
)


def one_run(args: tuple) -> tuple:
    (fig, label, algo, kind, value, m), run, T, noise = args
    fn = gp_sample_1d(1000, 0.02, seed=1000 + run)
    opt = Optimizer(fn.space, algorithm=algo, objective_bounds=(0.0, 1.0), window=m, beta=1.0,
                    domain=fn.grid[:, None], seed=run)
    delay = Poisson(value) if kind == "poisson" else Fixed(value)
    t0 = time.perf_counter()
    res = simulate(opt, fn, delay, T, noise_std=noise, seed=run, f_opt=fn.f_opt)
    return fig, label, run, res.simple_regret(), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--T", type=int, default=200)
    ap.add_argument("--noise", type=float, default=0.0, help="observation noise std")
    ap.add_argument("--figs", nargs="*", default=None, help="subset, e.g. fig1c fig5a")
    ap.add_argument("--workers", type=int, default=2, help="processes")
    ap.add_argument("--out", default="bench_results/bosdf_synthetic")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = [s for s in SETTINGS if args.figs is None or s[0] in args.figs]
    jobs = [(s, r, args.T, args.noise) for s in settings for r in range(args.runs)]
    curves: dict[tuple[str, str], list[np.ndarray]] = {}
    seconds = []
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        for i, (fig, label, run, regret, sec) in enumerate(pool.map(one_run, jobs, chunksize=1)):
            curves.setdefault((fig, label), []).append(regret)
            seconds.append(sec)
            if (i + 1) % max(1, len(jobs) // 20) == 0:
                print(f"{i + 1}/{len(jobs)} runs, {time.perf_counter() - t0:.0f}s", flush=True)

    marks = [t for t in (25, 50, 100, 150, 200, 300, 500) if t <= args.T]
    rows = []
    for (fig, label), rs in curves.items():
        R = np.array(rs)
        for t in marks:
            col = R[:, t - 1]
            rows.append({"figure": fig, "setting": label, "T": t, "runs": len(col),
                         "mean": float(np.nanmean(col)),
                         "stderr": float(np.nanstd(col) / np.sqrt(np.sum(np.isfinite(col))))})
    with open(out / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = [f"Simple regret (mean ± standard error over {args.runs} runs), T = iteration.\n",
             "| figure | setting | " + " | ".join(f"T={t}" for t in marks) + " |",
             "|---|---|" + "---|" * len(marks)]
    for (fig, label) in curves:
        cells = [next(f"{r['mean']:.4f} ± {r['stderr']:.4f}" for r in rows
                      if r["figure"] == fig and r["setting"] == label and r["T"] == t) for t in marks]
        lines.append(f"| {fig} | {label} | " + " | ".join(cells) + " |")
    lines.append(f"\nmedian wall time of one run: {np.median(seconds):.2f} s")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    plot(curves, out)


def plot(curves: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = sorted({f for f, _ in curves})
    titles = {"fig1a": "GP-UCB-SDF, Poisson(mu), m = 2 mu", "fig1b": "GP-UCB-SDF, mu = 10",
              "fig1c": "UCB-based, Poisson(10)", "fig1d": "UCB-based, fixed delay 10",
              "fig5a": "TS-based, Poisson(10)", "fig5b": "TS-based, fixed delay 10"}
    fig, axes = plt.subplots(1, len(figs), figsize=(4.2 * len(figs), 3.4), squeeze=False)
    for ax, f in zip(axes[0], figs):
        for (ff, label), rs in curves.items():
            if ff != f:
                continue
            R = np.array(rs)
            mean = np.nanmean(R, 0)
            se = np.nanstd(R, 0) / np.sqrt(np.maximum(np.sum(np.isfinite(R), 0), 1))
            t = np.arange(1, R.shape[1] + 1)
            ax.plot(t, mean, label=label)
            ax.fill_between(t, mean - se, mean + se, alpha=0.2)
        ax.set_title(f"{f}: {titles.get(f, '')}", fontsize=9)
        ax.set_xlabel("iteration")
        ax.set_ylabel("simple regret")
        ax.set_yscale("symlog", linthresh=1e-3)   # regret reaches exactly 0 on a grid
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "simple_regret.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
