"""Suggestion latency vs number of observations, side by side with Optuna's GPSampler.

For each n and d, both optimizers hold n completed observations of the same function at the same
random points and have made one untimed suggestion (ours factorizes and fits there); then
suggest+tell cycles are timed, wall clock and process CPU time.  Ours refits its hyperparameters
every 10 results, or once they grew by 5 % past 200 (``research.refit_growth``), so ``--reps``
is raised to that interval at each n: the timed cycles hold exactly one refit (the last), the
median is a suggestion between refits, the mean the cost amortized over a refit cycle.
Optuna's GPSampler refits on every call.  Ratios ours / Optuna come from the same run on the same
machine; the load average is recorded with them (the machine is shared).

Each (n, d) runs in a process of its own, so the peak resident memory (RSS) reported is that
case's alone (numpy, scipy and the optimizer; torch too for GPSampler).

    python scripts/bench/bench_latency.py --out docs/research/results/latency
    python scripts/bench/bench_latency.py --n 400 2000 10000 30000 100000 --dims 3 8 --pending 8
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np


from tuner.core.model import refit_interval  # noqa: E402
from tuner.core.persist import write_table  # noqa: E402
from tuner import PAPER_EXACT, Optimizer, Settings  # noqa: E402


def objective(X: np.ndarray) -> np.ndarray:
    """A smooth multimodal test function on [0, 1]^d with values in about [0, 1]."""
    return 0.5 + 0.5 * np.sin(3 * X).mean(1) * np.cos(2 * X[:, :1].sum(1))


def timed(fn):
    """(result, wall seconds, CPU seconds of this process, all threads)."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def time_ours(n: int, d: int, reps: int, seed: int, settings: Settings | None = None,
              pending: int = 0, context: bool = False) -> list[tuple[float, float]]:
    """Suggestion times after n results, with ``pending`` trials left running throughout;
    with ``context``, each trial at a random value of one float context (paper 001 §5)."""
    rng = np.random.default_rng(seed)
    space = {f"x{i}": {"type": "float", "low": 0.0, "high": 1.0} for i in range(d)}
    opt = Optimizer(
        space,
        settings,
        algorithm="gp-ucb-sdf",
        objective_bounds=(0.0, 1.0),
        window=float("inf"),
        seed=seed,
        context_space={"c": {"type": "float", "low": 0.0, "high": 1.0}} if context else None,
    )
    X = rng.random((n + pending, d))
    y = objective(X)
    z = (lambda: {"c": float(rng.random())}) if context else (lambda: None)
    for x, v in zip(X[:n], y[:n]):
        s = opt.suggest(config={f"x{i}": float(x[i]) for i in range(d)}, context=z())
        opt.tell(s.trial_id, float(v))
    for x in X[n:]:
        opt.suggest(config={f"x{i}": float(x[i]) for i in range(d)}, context=z())
    step(opt, d, z)  # untimed: factorizes the n told points and fits; refits then fall every 10
    return [step(opt, d, z) for _ in range(reps)]


def step(opt: Optimizer, d: int, z=lambda: None) -> tuple[float, float]:
    """One timed suggest (at the context ``z()`` gives, if any), then tell its value."""
    context = z()
    s, wall, cpu = timed(lambda: opt.suggest(context=context))
    opt.tell(s.trial_id, float(objective(np.array([[s.config[f"x{i}"] for i in range(d)]]))[0]))
    return wall, cpu


def time_optuna(n: int, d: int, reps: int, seed: int) -> list[tuple[float, float]]:
    import optuna
    from optuna.distributions import FloatDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rng = np.random.default_rng(seed)
    dists = {f"x{i}": FloatDistribution(0.0, 1.0) for i in range(d)}
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.GPSampler(seed=seed))
    X = rng.random((n, d))
    y = objective(X)
    study.add_trials([optuna.trial.create_trial(params={f"x{i}": float(x[i]) for i in range(d)},
                                                distributions=dists, value=float(v))
                      for x, v in zip(X, y)])
    def step() -> tuple[float, float]:
        trial, wall, cpu = timed(lambda: study.ask(dists))
        study.tell(
            trial, float(objective(np.array([[trial.params[f"x{i}"] for i in range(d)]]))[0])
        )
        return wall, cpu

    step()           # untimed, as for ours
    return [step() for _ in range(reps)]


def in_process(
    which: str, n: int, d: int, args: argparse.Namespace
) -> tuple[list[tuple[float, float]], float]:
    """Time one case in a fresh process: (times, peak RSS of that process in MB)."""
    cmd = [sys.executable, __file__, "--one", which, str(n), str(d), "--seed", str(args.seed),
           "--reps", str(args.reps), "--optuna-reps", str(args.optuna_reps), "--pending",
           str(args.pending)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    return [tuple(t) for t in res["times"]], res["rss_mb"]


def one(args: argparse.Namespace) -> None:
    """The ``--one`` case: warm up on a small problem, time, print JSON."""
    which, n, d = args.one[0], int(args.one[1]), int(args.one[2])
    if which == "ours":
        time_ours(20, 2, 1, args.seed)
        s = Settings()
        # one refit per cycle
        cycle = refit_interval(s.refit_every, s.research.fitting.refit_growth, n)
        times = time_ours(n, d, max(args.reps, cycle), args.seed, pending=args.pending)
    else:
        time_optuna(20, 2, 1, args.seed)
        times = time_optuna(n, d, args.optuna_reps, args.seed)
    print(
        json.dumps(
            {"times": times, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
        )
    )


def summary(times: list[tuple[float, float]], prefix: str) -> dict[str, float]:
    nan = float("nan")
    wall = [1e3 * w for w, _ in times]
    cpu = [1e3 * c for _, c in times]
    return {f"{prefix}_median_ms": statistics.median(wall) if wall else nan,
            f"{prefix}_mean_ms": statistics.mean(wall) if wall else nan,
            f"{prefix}_max_ms": max(wall) if wall else nan,
            f"{prefix}_cpu_median_ms": statistics.median(cpu) if cpu else nan}


def side_by_side(args: argparse.Namespace, name: str, labels: tuple[str, str],
                 kw_a: dict, kw_b: dict) -> None:
    """Median suggestion time of two variants of ``time_ours`` (keywords ``kw_a``, ``kw_b``)
    at each (d, n), in the same run, and their ratio b / a: ``{out}/{name}.md``."""
    time_ours(20, 2, 1, args.seed)
    lines = [f"Command: `python scripts/bench/bench_latency.py {' '.join(sys.argv[1:])}`", "",
             f"| d | n | pending | {labels[0]} median ms | {labels[1]} median ms | ratio | "
             f"{labels[1]} mean ms |", "|---|---|---|---|---|---|---|"]
    for d in args.dims:
        for n in args.n:
            a = summary(time_ours(n, d, args.reps, args.seed, pending=args.pending, **kw_a), "a")
            b = summary(time_ours(n, d, args.reps, args.seed, pending=args.pending, **kw_b), "b")
            lines.append(
                f"| {d} | {n} | {args.pending} | {a['a_median_ms']:.1f} | {b['b_median_ms']:.1f} | "
                f"{b['b_median_ms'] / a['a_median_ms']:.2f} | {b['b_mean_ms']:.1f} |"
            )
            print(lines[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+",
                    default=[100, 400, 1000, 2000, 5000, 10000, 30000, 100000])
    # ours|optuna N D, in a child process
    ap.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--dims", type=int, nargs="+", default=[3, 8])
    ap.add_argument("--reps", type=int, default=10, help="timed suggestions of ours per (n, d)")
    ap.add_argument("--optuna-reps", type=int, default=5, help="timed GPSampler suggestions")
    ap.add_argument("--optuna-max-n", type=int, default=2000,
                    help="skip Optuna above this n (its cost grows as n^3 per call)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pending", type=int, default=0, help="trials left running during the timing")
    ap.add_argument(
        "--against-paper",
        action="store_true",
        help="time the default Settings and Settings.from_dict(PAPER_EXACT) in the same run "
        "instead of Optuna",
    )
    ap.add_argument("--against-settings", metavar="JSON",
                    help="time the default Settings and the default with these overrides in the "
                         "same run, e.g. '{\"output_warp\": \"copula\"}'")
    ap.add_argument("--against-context", action="store_true",
                    help="time suggestions with one context dimension and without, same run")
    ap.add_argument("--context-kernel", default=None,
                    help="with --against-context: the context kernel of the side with a context "
                         "(default: Settings' default)")
    ap.add_argument("--out", default="bench_results/latency", help="directory for latency.csv/.md")
    args = ap.parse_args()
    if args.one:
        return one(args)
    if args.against_paper:     # the default settings against the paper-exact ones
        return side_by_side(args, "against_paper", ("paper-exact", "default"),
                            {"settings": Settings.from_dict(PAPER_EXACT)}, {})
    if args.against_settings:  # the default against the default with some settings changed
        return side_by_side(args, "against_settings", ("default", args.against_settings),
                            {}, {"settings": Settings.from_dict(json.loads(args.against_settings))})
    if args.against_context:   # one context dimension against none (paper 001 §5)
        kernel = {} if args.context_kernel is None else {
            "settings": Settings(research={"context_kernel": args.context_kernel})}
        return side_by_side(args, "against_context", ("no context", "with a context"),
                            {}, {"context": True, **kernel})
    import optuna
    rows = []
    load0 = os.getloadavg()
    for d in args.dims:
        for n in args.n:
            row: dict[str, float | int] = {"d": d, "n": n, "load_1min": os.getloadavg()[0]}
            ours, row["ours_rss_mb"] = in_process("ours", n, d, args)
            row.update(summary(ours, "ours"))
            theirs, row["optuna_rss_mb"] = (
                in_process("optuna", n, d, args) if n <= args.optuna_max_n else ([], float("nan"))
            )
            row.update(summary(theirs, "optuna"))
            row["ratio_median"] = row["ours_median_ms"] / row["optuna_median_ms"]
            row["ratio_mean"] = row["ours_mean_ms"] / row["optuna_mean_ms"]
            row["ratio_cpu_median"] = row["ours_cpu_median_ms"] / row["optuna_cpu_median_ms"]
            rows.append(row)
            print(
                f"d={d} n={n}: ours median {row['ours_median_ms']:.1f} ms (mean "
                f"{row['ours_mean_ms']:.1f}, CPU {row['ours_cpu_median_ms']:.1f}), GPSampler "
                "median "
                f"{row['optuna_median_ms']:.1f} ms (mean {row['optuna_mean_ms']:.1f}, CPU "
                f"{row['optuna_cpu_median_ms']:.1f}), ratio {row['ratio_median']:.3f}, RSS ours "
                f"{row['ours_rss_mb']:.0f} MB, GPSampler {row['optuna_rss_mb']:.0f} MB, "
                f"load {row['load_1min']:.1f}",
                flush=True,
            )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_table(out / "latency.csv", rows)

    def f(v: float, fmt: str = ".1f") -> str:
        return "skipped" if v != v else format(v, fmt)

    lines = [
        f"Command: `python scripts/bench/bench_latency.py {' '.join(sys.argv[1:])}`  ",
        f"Machine: {os.cpu_count()} cores (shared with other jobs), {platform.python_version()}, "
        f"numpy {np.__version__}, optuna {optuna.__version__}; 1-min load average "
        f"{load0[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end.  Times in ms per suggestion; "
        f"ours: {args.reps} suggestions (one holds the refit), GPSampler: {args.optuna_reps} "
        f"(each refits); one untimed suggestion before each; {args.pending} trials left "
        "running during ours.  RSS: peak resident memory of the case's own process, MB.\n",
        "| d | n | ours median | ours mean | ours CPU median | ours RSS | GPSampler median | "
        "GPSampler mean | GPSampler CPU median | GPSampler RSS | ratio median | ratio mean | "
        "ratio CPU | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['d']} | {r['n']} | {f(r['ours_median_ms'])} | {f(r['ours_mean_ms'])} | "
            f"{f(r['ours_cpu_median_ms'])} | {f(r['ours_rss_mb'], '.0f')} | "
            f"{f(r['optuna_median_ms'])} | "
            f"{f(r['optuna_mean_ms'])} | {f(r['optuna_cpu_median_ms'])} | "
            f"{f(r['optuna_rss_mb'], '.0f')} | {f(r['ratio_median'], '.3f')} | "
            f"{f(r['ratio_mean'], '.3f')} | {f(r['ratio_cpu_median'], '.3f')} | "
            f"{r['load_1min']:.1f} |"
        )
    (out / "latency.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
