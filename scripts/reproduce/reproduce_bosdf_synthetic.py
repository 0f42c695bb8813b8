"""Reproduce paper 001 (BO-SDF) Fig. 1a-1d and Fig. 5: the synthetic experiment (§6.1, App. C.1).

Objective: a GP sample (SE kernel, lengthscale 0.02) on 1000 equally spaced points of [0, 1],
normalized into [0, 1]; a new sample per run (the same sample for every setting of one run).
One query per iteration; beta = 1; SE kernel refit by marginal likelihood every 10 results;
5 random initial queries (as the authors' released code does); no observation noise unless
``--noise``.

    fig1a  GP-UCB-SDF, Poisson(mu) delays, mu in {2, 5, 10, 20}, m = 2 mu
    fig1b  GP-UCB-SDF, Poisson(10), m in {2, 5, 10, 20, 40}
    fig1c  GP-UCB-SDF vs GP-UCB vs GP-BUCB, Poisson(10), m = 20
    fig1d  the same with every delay fixed at 10, m = 10 (batch BO, §4: m = B_x - 1, rho_m = 1)
    fig5a  GP-TS-SDF vs asy-TS vs GP-BTS, Poisson(10), m = 20
    fig5b  the same with every delay fixed at 10, m = 10

How the paper's protocol is mapped onto ``tuner.loop.simulator`` (see
docs/research/results/bosdf_synthetic.md):

* Delays follow eq. 1: a query s with delay d is available when query s + max(d, 1) is chosen
  (d <= t - s), so d = 0 and d = 1 both mean "known before the next query".  The simulator
  counts a delay as the number of queries started in between, so it is given max(d, 1) - 1.
* The SDF algorithms observe a result only if d <= m (§3.2: "observes y_t only after a delay of
  d_t iff d_t <= m"); later results are never delivered to them.  The baselines (GP-UCB,
  GP-BUCB, asy-TS, GP-BTS) have no window and see every result when it arrives.
* nu_t sums sigma over the last m queries, as eq. 2 is printed (``nu_terms="window"``); the rows
  marked "(pending)" use the product default, the running trials of the last m queries only.
* Simple regret at T = f* - max f(x_s) over the evaluations converted by the time query T + 1 is
  chosen (App. C: pending ones ignored); for an SDF method "converted" means d <= m (what the
  authors' code records).  ``regret_arrived`` in results.csv counts every result that has
  arrived, also the ones an SDF method discarded as too late.

    python scripts/reproduce/reproduce_bosdf_synthetic.py --runs 30 --T 200 --out \
        docs/research/results/bosdf_synthetic
"""

from __future__ import annotations

import tuner.bench.threads  # noqa: F401,E402  (before numpy: one BLAS thread per process)

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Mapping  # noqa: E402

import numpy as np  # noqa: E402


from tuner.bench.metrics import mean_se  # noqa: E402
from tuner.core.persist import write_table  # noqa: E402
from tuner import PAPER_EXACT, Optimizer, Settings  # noqa: E402
from tuner.loop.problems import gp_sample_1d  # noqa: E402
from tuner.loop.simulator import simulate  # noqa: E402

SDF = ("gp-ucb-sdf", "gp-ts-sdf")
NEVER = 1e12          # a delay that never ends within the run: the result is not delivered
N_INITIAL = 5
DEFAULT_OVERRIDES: dict[str, Any] = {}   # --default-settings: try a variant as the "default" row


def _s(fig: str, label: str, algo: str, kind: str, value: int, m: int, nu: str = "window") -> tuple:
    return fig, label, algo, kind, value, m, nu


# (figure, label, algorithm, delay kind, delay value, window m, nu_terms)
SETTINGS = (
    [_s("fig1a", f"mu={mu}", "gp-ucb-sdf", "poisson", mu, 2 * mu) for mu in (2, 5, 10, 20)]
    + [_s("fig1b", f"m={m}", "gp-ucb-sdf", "poisson", 10, m) for m in (2, 5, 10, 20, 40)]
    + [s for f, algos, k, m in (("fig1c", ("gp-ucb-sdf", "gp-ucb", "gp-bucb"), "poisson", 20),
                                ("fig1d", ("gp-ucb-sdf", "gp-ucb", "gp-bucb"), "fixed", 10),
                                ("fig5a", ("gp-ts-sdf", "asy-ts", "gp-bts"), "poisson", 20),
                                ("fig5b", ("gp-ts-sdf", "asy-ts", "gp-bts"), "fixed", 10))
       for s in [_s(f, a, a, k, 10, m) for a in algos]
       + [_s(f, f"{algos[0]} (pending)", algos[0], k, 10, m, "pending")]]
    # the product's default Settings (not a figure of the paper): Fig. 1c's delays, m = inf
    + [_s("default", "tuner default", "default", "poisson", 10, 0)]
)


class PaperDelays:
    """Delays of eq. 1 on the simulator's clock; records the drawn delays d (see module doc)."""

    def __init__(self, kind: str, value: float, window: float | None):
        self.kind, self.value, self.window = kind, value, window
        self.drawn: list[int] = []

    def __call__(self, config: Mapping[str, Any], rng: np.random.Generator) -> float:
        d = int(rng.poisson(self.value)) if self.kind == "poisson" else int(self.value)
        self.drawn.append(d)
        if self.window is not None and d > self.window:
            return NEVER
        return float(max(d, 1) - 1)


def regret_curves(f: np.ndarray, delays: np.ndarray, window: float | None,
                  f_opt: float) -> tuple[np.ndarray, np.ndarray]:
    """r_T for T = 1..N: over results available when query T + 1 is chosen (s + max(d, 1) <= T,
    0-based s), counting only d <= window (``window`` None: all), and counting all arrived."""
    N = len(f)
    arrival = np.arange(N) + np.maximum(delays, 1)
    kept = delays <= (np.inf if window is None else window)
    out = []
    for mask in (kept, np.ones(N, bool)):
        r = np.full(N, np.nan)
        for T in range(1, N + 1):
            ok = mask & (arrival <= T)
            if ok.any():
                r[T - 1] = f_opt - f[ok].max()
        out.append(r)
    return out[0], out[1]


def one_run(args: tuple) -> tuple:
    (algo, kind, value, m, nu), run, T, noise = args
    fn = gp_sample_1d(1000, 0.02, seed=1000 + run)
    window = m if algo in SDF else None
    if algo == "default":
        opt = Optimizer(fn.space, Settings.from_dict({"objective_bounds": (0.0, 1.0), "seed": run,
                                                      **DEFAULT_OVERRIDES}),
                        domain=fn.grid[:, None])
    else:
        opt = Optimizer(fn.space, Settings.from_dict({
            **PAPER_EXACT, "algorithm": algo, "objective_bounds": (0.0, 1.0),
            "window": float(m) if algo in SDF else float("inf"), "nu_terms": nu, "beta": 1.0,
            "n_initial": N_INITIAL, "seed": run}), domain=fn.grid[:, None])
    delay = PaperDelays(kind, value, window)
    t0 = time.perf_counter()
    res = simulate(opt, fn, delay, T, noise_std=noise, seed=run, f_opt=fn.f_opt)
    paper, arrived = regret_curves(res.f_true, np.array(delay.drawn), window, fn.f_opt)
    return (algo, kind, value, m, nu), run, paper, arrived, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--T", type=int, default=200, help="queries per run (5 initial included)")
    ap.add_argument("--noise", type=float, default=0.0, help="observation noise std")
    ap.add_argument("--figs", nargs="*", default=None, help="subset, e.g. fig1c fig5a")
    ap.add_argument("--workers", type=int, default=2, help="processes")
    ap.add_argument("--out", default="bench_results/bosdf_synthetic")
    ap.add_argument("--cache", default=None,
                    help="directory keeping each run's curves; runs found there are not redone")
    ap.add_argument("--default-settings", default=None,
                    help='JSON overrides of the "default" row, e.g. \'{"censor_noise": 0.01}\'')
    args = ap.parse_args()
    if args.default_settings:
        DEFAULT_OVERRIDES.update(json.loads(args.default_settings))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = [s for s in SETTINGS if args.figs is None or s[0] in args.figs]
    keys = sorted({s[2:] for s in settings}, key=str)      # one run serves every figure using it
    cache = Path(args.cache) if args.cache else None
    runs: dict[tuple, dict[int, tuple[np.ndarray, np.ndarray]]] = {}
    jobs = []
    for r in range(args.runs):                 # seeds outermost: a partial run stays balanced
        for k in keys:
            f = cache_file(cache, k, r, args)
            if f is not None and f.exists():
                with np.load(f) as z:
                    runs.setdefault(k, {})[r] = (z["paper"], z["arrived"])
            else:
                jobs.append((k, r, args.T, args.noise))
    print(f"{len(jobs)} runs to do, {sum(map(len, runs.values()))} from the cache", flush=True)
    seconds = []
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        for i, (key, run, paper, arrived, sec) in enumerate(pool.map(one_run, jobs, chunksize=1)):
            runs.setdefault(key, {})[run] = (paper, arrived)
            seconds.append(sec)
            f = cache_file(cache, key, run, args)
            if f is not None:
                f.parent.mkdir(parents=True, exist_ok=True)
                np.savez(f, paper=paper, arrived=arrived)
            if (i + 1) % max(1, len(jobs) // 20) == 0:
                print(f"{i + 1}/{len(jobs)} runs, {time.perf_counter() - t0:.0f}s", flush=True)
    curves = {
        (s[0], s[1]): [np.array([runs[s[2:]][r][j] for r in range(args.runs)]) for j in (0, 1)]
        for s in settings
    }
    write_tables(curves, settings, args, out,
                 float(np.median(seconds)) if seconds else float("nan"), time.perf_counter() - t0)
    plot(curves, out)


def cache_file(cache: Path | None, key: tuple, run: int, args: argparse.Namespace) -> Path | None:
    if cache is None:
        return None
    return cache / f"{'_'.join(map(str, key))}_T{args.T}_noise{args.noise}_run{run}.npz"


def write_tables(curves: dict, settings: list, args: argparse.Namespace, out: Path,
                 median_run_s: float, total_s: float) -> None:
    marks = [t for t in (25, 50, 100, 150, 200, 300, 500) if t <= args.T]
    rows = []
    for fig, label, algo, kind, value, m, nu in settings:
        paper, arrived = curves[(fig, label)]
        (mp, sp), (ma, sa) = mean_se(paper), mean_se(arrived)
        for t in range(1, args.T + 1):
            if t in marks or t % 5 == 0:
                rows.append(
                    {"figure": fig, "setting": label, "algorithm": algo, "delay": kind,
                     "delay_value": value, "m": m if algo in SDF else "",
                     "nu_terms": nu if algo in SDF else "", "T": t, "runs": args.runs,
                     "regret_mean": mp[t - 1], "regret_se": sp[t - 1],
                     "regret_arrived_mean": ma[t - 1], "regret_arrived_se": sa[t - 1],
                     "runs_with_result": int(np.sum(np.isfinite(paper[:, t - 1])))}
                )
    write_table(out / "results.csv", rows)

    def cell(mean: float, se: float, k: int) -> str:
        if not np.isfinite(mean):
            return "–"
        return f"{mean:.4f} ± {se:.4f}" + ("" if k == args.runs else f" (n={k})")

    def table(mean_key: str, se_key: str, only_sdf: bool) -> list[str]:
        lines = ["| figure | setting | " + " | ".join(f"T={t}" for t in marks) + " |",
                 "|---|---|" + "---|" * len(marks)]
        for s in settings:
            if only_sdf and s[2] not in SDF:
                continue
            by_t = {r["T"]: r for r in rows if r["figure"] == s[0] and r["setting"] == s[1]}
            lines.append(
                f"| {s[0]} | {s[1]} | "
                + " | ".join(
                    cell(by_t[t][mean_key], by_t[t][se_key],
                         by_t[t]["runs_with_result"] if mean_key == "regret_mean" else args.runs)
                    for t in marks
                )
                + " |"
            )
        return lines

    cmd = "python scripts/reproduce/reproduce_bosdf_synthetic.py " + " ".join(sys.argv[1:])
    lines = [
        f"Simple regret, mean ± standard error over {args.runs} runs (one GP sample per run, "
        f"shared by all settings).  T = number of queries started (5 random initial ones "
        f"included); noise std {args.noise}.  Command: `{cmd}`.\n",
        "Converted evaluations only (App. C; for an SDF method, delay <= m).  (n=k): only k runs "
        "had a converted evaluation by then; the mean is over those k (selection bias).\n",
        *table("regret_mean", "regret_se", False),
        "\nSDF methods, counting every result that has arrived (also those discarded as later "
        "than m):\n",
        *table("regret_arrived_mean", "regret_arrived_se", True),
        f"\nRuns stuck (regret still above 0.001 at T = {args.T}, converted evaluations), of "
        f"{args.runs}: "
        + "; ".join(
            f"{s[0]} {s[1]}: {int(np.sum(curves[(s[0], s[1])][0][:, -1] > 1e-3))}" for s in settings
        ),
        ""
        if median_run_s != median_run_s
        else f"\nmedian wall time of one run: {median_run_s:.1f} s; whole run {total_s / 60:.0f} "
             "min "
        f"({args.workers} processes).",
    ]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def plot(curves: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = sorted({f for f, _ in curves})
    titles = {"fig1a": "GP-UCB-SDF, Poisson(mu), m = 2 mu", "fig1b": "GP-UCB-SDF, Poisson(10)",
              "fig1c": "UCB-based, Poisson(10), m = 20",
              "fig1d": "UCB-based, fixed delay 10, m = 10",
              "fig5a": "TS-based, Poisson(10), m = 20", "fig5b": "TS-based, fixed delay 10, m = 10"}
    cols = min(3, len(figs))
    rows = int(np.ceil(len(figs) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False)
    for ax, f in zip(axes.ravel(), figs):
        for (ff, label), (paper, _) in curves.items():
            if ff != f:
                continue
            mean, se = mean_se(paper)
            t = np.arange(1, paper.shape[1] + 1)
            full = np.isfinite(paper).all(0)      # thin dotted where some runs have no result yet
            line, = ax.plot(t, np.where(full, mean, np.nan), label=label,
                            ls="--" if "pending" in label else "-")
            ax.plot(t, np.where(full, np.nan, mean), color=line.get_color(), ls=":", lw=0.8)
            ax.fill_between(t, mean - se, mean + se, alpha=0.2, color=line.get_color())
        ax.set_title(f"{f}: {titles.get(f, '')}", fontsize=9)
        ax.set_xlabel("T (queries started)")
        ax.set_ylabel("simple regret")
        ax.set_yscale("symlog", linthresh=1e-2)   # regret reaches exactly 0 on a grid
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
    for ax in axes.ravel()[len(figs):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out / "simple_regret.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
