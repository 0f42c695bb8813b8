"""Paper 001 (BO-SDF) §6.2, Figs. 2-3, App. C.2: hyperparameter tuning of SVM, LR and CNN under
stochastic and fixed delays, replayed on the lookup tables of ``tuner.bench.build_tables``.

    python scripts/reproduce/reproduce_paper001_hpo.py [--runs N] [--T 105] [--quick] [--out \
        DIR] [--cache DIR]

Objective: validation accuracy from the table at the grid point nearest to the proposed
configuration (``LookupTable.nearest``, unit-cube distance); the optimizers search the
continuous space and may propose off-grid points.  f* = the table's maximum accuracy.

Protocol (the conventions of ``scripts/reproduce/reproduce_bosdf_synthetic.py``):

* one query per iteration (``tuner.loop.simulator.simulate`` with ``workers=None``); 5 random
  initial queries, then ``T - 5`` BO queries (the authors' released script: 5 + 100);
* delays: Poisson(10), window m = 20 (= 2 x mean); or every delay fixed at 10, m = 10 (batch
  BO with B_x = 11, §6.2; released code: m = batch size); eq. 1's convention: a query s with
  delay d is available when query s + max(d, 1) is chosen, so the simulator is given
  max(d, 1) - 1; an SDF method never receives a result with d > m, the baselines (GP-UCB,
  GP-BUCB, asy-TS, GP-BTS) have no window;
* App. C: SE kernel refit by marginal likelihood every 10 results, beta_t = 1 for every method,
  nu_t as printed in eq. 2 (sum of sigma over the last m queries, ``nu_terms="window"``),
  objective bounds [0, 1] (pending trials are censored at accuracy 0);
* simple regret at T = f* - max accuracy over the evaluations completed before query T + 1
  starts (``SimulationResult.simple_regret``; pending ones ignored, App. C);
* run r uses optimizer seed r and delay seed r for every algorithm (same initial points and
  delay sequence), so methods are compared on common random numbers.
"""

from __future__ import annotations

import tuner.bench.threads  # noqa: F401,E402  (before numpy: one BLAS thread per process)

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Mapping  # noqa: E402

import numpy as np  # noqa: E402

from tuner import PAPER_EXACT, Optimizer, Settings  # noqa: E402
from tuner.core.persist import write_table  # noqa: E402
from tuner.loop.simulator import simulate  # noqa: E402

from tuner.bench.lookup import NAMES, load_table  # noqa: E402
from tuner.bench.metrics import mean_se  # noqa: E402

SDF = ("gp-ucb-sdf", "gp-ts-sdf")
GROUPS: dict[str, tuple[str, ...]] = {"ucb": ("gp-ucb-sdf", "gp-ucb", "gp-bucb"),
                                      "ts": ("gp-ts-sdf", "asy-ts", "gp-bts")}
DELAYS: dict[str, tuple[str, int, int]] = {      # setting: (kind, value, window m of SDF)
    "poisson": ("poisson", 10, 20), "fixed": ("fixed", 10, 10)}
N_INITIAL = 5
NEVER = 1e12          # a delay that never ends within the run: the result is not delivered
MARKS = (10, 25, 50, 75, 105)
PAPER_FIG = {"svm": "Fig. 2a-d", "cnn": "Fig. 2e-h", "logreg": "Fig. 3a-d"}


class PaperDelay:
    """Eq. 1 delays on the simulator's clock (see module docstring)."""

    def __init__(self, kind: str, value: int, window: int | None):
        self.kind, self.value, self.window = kind, value, window

    def __call__(self, config: Mapping[str, Any], rng: np.random.Generator) -> float:
        d = int(rng.poisson(self.value)) if self.kind == "poisson" else int(self.value)
        if self.window is not None and d > self.window:
            return NEVER
        return float(max(d, 1) - 1)


def run(table: str, delay: str, algorithm: str, seed: int, T: int) -> tuple[np.ndarray, int]:
    """One run: simple regret at T' = 1..T (results known before query T' + 1) and the number
    of distinct grid points evaluated."""
    tab = load_table(table)
    kind, value, m = DELAYS[delay]
    sdf = algorithm in SDF
    opt = Optimizer(tab.space, Settings.from_dict({
        **PAPER_EXACT, "algorithm": algorithm, "objective_bounds": (0.0, 1.0),
        "window": float(m) if sdf else float("inf"), "nu_terms": "window", "beta": 1.0,
        "kernel": "se", "refit_every": 10, "n_initial": N_INITIAL, "seed": seed}))
    cells: list[int] = []

    def objective(config: Mapping[str, Any]) -> float:
        cells.append(tab.nearest(config))
        return float(tab.accuracy[cells[-1]])

    res = simulate(opt, objective, PaperDelay(kind, value, m if sdf else None), T + 1,
                   seed=seed, f_opt=tab.f_opt)
    return res.simple_regret()[1:], len(set(cells[:T]))


def _job(args: tuple) -> tuple:
    key, seed, T = args
    t0 = time.perf_counter()
    regret, distinct = run(*key, seed, T)
    return key, seed, regret, distinct, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20, help="seeds per (table, delay, algorithm)")
    ap.add_argument("--T", type=int, default=105, help="queries per run, 5 random initial included")
    ap.add_argument("--quick", action="store_true", help="2 runs, T = 30 (a smoke run)")
    ap.add_argument("--tables", default=",".join(NAMES))
    ap.add_argument("--algorithms", default=",".join(a for g in GROUPS.values() for a in g),
                    help="subset of the six; the UCB- and TS-based groups are plotted apart")
    ap.add_argument("--delays", default=",".join(DELAYS))
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("docs/research/results/paper001_hpo"))
    ap.add_argument("--cache", type=Path, default=None,
                    help="directory keeping each run's curve; runs found there are not redone")
    args = ap.parse_args(argv)
    args.command = " ".join(["python scripts/reproduce/reproduce_paper001_hpo.py",
                             *(sys.argv[1:] if argv is None else argv)])
    if args.quick:
        args.runs, args.T = min(args.runs, 2), min(args.T, 30)
    split = lambda s: [x.strip() for x in s.split(",") if x.strip()]    # noqa: E731
    algorithms = [a for g in GROUPS.values() for a in g]
    for given, allowed, what in ((args.tables, NAMES, "tables"),
                                 (args.delays, list(DELAYS), "delays"),
                                 (args.algorithms, algorithms, "algorithms")):
        if set(split(given)) - set(allowed):
            ap.error(f"--{what}: unknown {sorted(set(split(given)) - set(allowed))}; allowed: "
                     f"{list(allowed)}")
    keys = [(t, d, a) for t in split(args.tables) for d in split(args.delays)
            for a in split(args.algorithms)]
    curves: dict[tuple, dict[int, tuple[np.ndarray, int]]] = {}
    jobs = []
    for seed in range(args.runs):              # seeds outermost: a partial run stays balanced
        for key in keys:
            f = _cache_file(args.cache, key, seed, args.T)
            if f is not None and f.exists():
                with np.load(f) as z:
                    curves.setdefault(key, {})[seed] = (z["regret"], int(z["distinct"]))
            else:
                jobs.append((key, seed, args.T))
    print(f"{len(jobs)} runs to do, {sum(map(len, curves.values()))} from the cache", flush=True)
    seconds: list[float] = []
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.processes) as pool:
        for i, (key, seed, regret, distinct, sec) in enumerate(pool.map(_job, jobs, chunksize=1)):
            curves.setdefault(key, {})[seed] = (regret, distinct)
            seconds.append(sec)
            f = _cache_file(args.cache, key, seed, args.T)
            if f is not None:
                f.parent.mkdir(parents=True, exist_ok=True)
                np.savez(f, regret=regret, distinct=distinct)
            if (i + 1) % max(1, len(jobs) // 20) == 0:
                print(f"{i + 1}/{len(jobs)} runs, {time.perf_counter() - t0:.0f} s", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    R = {k: (np.array([curves[k][s][0] for s in range(args.runs)]),
             np.array([curves[k][s][1] for s in range(args.runs)])) for k in keys}
    write_tables(R, keys, args, float(np.median(seconds)) if seconds else float("nan"),
                 time.perf_counter() - t0)
    plot(R, keys, args.out)


def _cache_file(cache: Path | None, key: tuple, seed: int, T: int) -> Path | None:
    return None if cache is None else cache / f"{'_'.join(key)}_T{T}_run{seed}.npz"


def write_tables(R: dict, keys: list[tuple], args: argparse.Namespace, median_run_s: float,
                 total_s: float) -> None:
    """results.csv (mean and standard error at every 5th T) and results.md."""
    marks = [t for t in MARKS if t < args.T] + [args.T]
    rows = []
    for key in keys:
        regret, distinct = R[key]
        mean, se = mean_se(regret)
        for t in range(1, args.T + 1):
            if t in marks or t % 5 == 0:
                rows.append({"table": key[0], "delay": key[1], "algorithm": key[2],
                             "group": next(g for g, a in GROUPS.items() if key[2] in a),
                             "m": DELAYS[key[1]][2] if key[2] in SDF else "", "T": t,
                             "runs": args.runs, "regret_mean": round(float(mean[t - 1]), 6),
                             "regret_se": round(float(se[t - 1]), 6),
                             "runs_with_result": int(np.sum(np.isfinite(regret[:, t - 1]))),
                             "solved": int(np.sum(regret[:, t - 1] == 0)),
                             "distinct_points_mean": round(float(distinct.mean()), 1)})
    write_table(args.out / "results.csv", rows)

    def cell(r: dict) -> str:
        if not np.isfinite(r["regret_mean"]):
            return "–"
        k = r["runs_with_result"]
        return f"{r['regret_mean']:.4f} ± {r['regret_se']:.4f}" + (
            "" if k == args.runs else f" (n={k})"
        )

    by = {(r["table"], r["delay"], r["algorithm"], r["T"]): r for r in rows}
    lines = [
        f"Simple regret (f* - best accuracy completed), mean ± standard error over {args.runs} "
        f"runs; T = queries started ({N_INITIAL} random initial ones included).  Poisson: "
        f"delays ~ Poisson(10), m = 20; fixed: every delay 10, m = 10.  solved = runs at "
        f"regret 0 at T = {args.T}; distinct = grid points evaluated (mean).  Command: "
        f"`{args.command}`.\n",
        "| table | delay | algorithm | "
        + " | ".join(f"T={t}" for t in marks)
        + " | solved | distinct |",
        "|---|---|---|" + "---|" * (len(marks) + 2),
    ]
    for key in keys:
        last = by[(*key, args.T)]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | "
                     + " | ".join(cell(by[(*key, t)]) for t in marks)
                     + f" | {last['solved']}/{args.runs} | {last['distinct_points_mean']:.0f} |")
    lines += ["", *paired_summary(R, keys, args.T)]
    if median_run_s == median_run_s:
        lines.append(f"\nmedian wall time of one run: {median_run_s:.1f} s; whole run "
                     f"{total_s / 60:.0f} min ({args.processes} processes).")
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def paired_summary(R: dict, keys: list[tuple], T: int, start: int = 11) -> list[str]:
    """The SDF method against each baseline of its group, paired by seed: mean regret over
    T' = start..T (the area under the curve; every delay-10 run has a result from T' = 10 on)
    and the final regret; W/T/L = seeds where the SDF method is lower / equal / higher."""
    def auc(key: tuple) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(R[key][0][:, start - 1:T], axis=1)

    lines = [
        f"Paired by seed, the SDF method against each baseline: mean regret over T = {start}..{T} "
        f"(area under the curve) and regret at T = {T}; W/T/L = seeds where the SDF method is "
        f"lower / equal / higher.\n",
        "| table | delay | SDF method | its mean regret | baseline | baseline's | W/T/L | "
        "final W/T/L |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for table, delay in dict.fromkeys(k[:2] for k in keys):
        for sdf, *baselines in GROUPS.values():
            if (table, delay, sdf) not in R:
                continue
            a, fa = auc((table, delay, sdf)), R[(table, delay, sdf)][0][:, T - 1]
            for base in baselines:
                if (table, delay, base) not in R:
                    continue
                b, fb = auc((table, delay, base)), R[(table, delay, base)][0][:, T - 1]
                wtl = lambda x, y: f"{np.sum(x < y)}/{np.sum(x == y)}/{np.sum(x > y)}"  # noqa: E731
                lines.append(
                    f"| {table} | {delay} | {sdf} | {a.mean():.4f} ± "
                    f"{a.std() / np.sqrt(len(a)):.4f} "
                    f"| {base} | {b.mean():.4f} ± {b.std() / np.sqrt(len(b)):.4f} | "
                    f"{wtl(a, b)} | {wtl(fa, fb)} |"
                )
    return lines


def plot(R: dict, keys: list[tuple], out: Path) -> None:
    """One figure per (table, delay), UCB-based and TS-based panels (as Figs. 2-3)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for table in dict.fromkeys(k[0] for k in keys):
        for delay in dict.fromkeys(k[1] for k in keys):
            groups = [(g, [a for a in algos if (table, delay, a) in R]) for g,
                      algos in GROUPS.items()]
            groups = [(g, a) for g, a in groups if a]
            if not groups:
                continue
            fig, axes = plt.subplots(
                1, len(groups), figsize=(4.8 * len(groups), 3.6), squeeze=False
            )
            for ax, (group, algos) in zip(axes[0], groups):
                for algo in algos:
                    regret = R[(table, delay, algo)][0]
                    mean, se = mean_se(regret)
                    t = np.arange(1, regret.shape[1] + 1)
                    full = np.isfinite(regret).all(0)   # dotted where some runs have no result yet
                    line, = ax.plot(t, np.where(full, mean, np.nan), label=algo,
                                    lw=2 if algo in SDF else 1.2)
                    ax.plot(t, np.where(full, np.nan, mean), color=line.get_color(), ls=":", lw=0.8)
                    ax.fill_between(t, mean - se, mean + se, alpha=0.2, color=line.get_color())
                kind, value, m = DELAYS[delay]
                what = (
                    f"Poisson({value}), m = {m}"
                    if kind == "poisson"
                    else f"fixed delay {value}, m = {m}"
                )
                ax.set_title(f"{table} ({PAPER_FIG.get(table, '')}): {group.upper()}-based, {what}",
                             fontsize=9)
                ax.set_xlabel("T (queries started)")
                ax.set_ylabel("simple regret (accuracy)")
                ax.legend(fontsize=8)
                ax.set_yscale("symlog", linthresh=1e-2)   # regret reaches exactly 0 on a grid
                ax.set_ylim(bottom=0)
            fig.tight_layout()
            fig.savefig(out / f"{table}_{delay}.png", dpi=100)
            plt.close(fig)


if __name__ == "__main__":
    main()
