"""The no-regression check: a candidate default against today's, paired by seed, on the
harness's problems, instances of every problem family (``tuner.bench.families``, from its
tuning split unless told) and the learning-curve problems at W = 4 and 16.  It flags every (problem,
W, horizon) where the candidate's best score is behind today's beyond the seeds' spread (a
paired Wilcoxon test, ``tuner.bench.paired.behind``), and where it is ahead.

    python -m tuner.bench.no_regression --candidate '{"kernel": "se"}' --out DIR
    python -m tuner.bench.no_regression --candidate '{...}' --out DIR --problems branin \\
        --curve-problems crossing --family-instances 0 --workers 4 --seeds 10   # a quick look
    python -m tuner.bench.no_regression --report DIR              # the check from DIR/runs.csv

The candidate is a set of optimizer settings over a study's defaults (``tuner.study.defaults``,
the harness's ``study`` method; docs/reference/settings.md).  Today's default runs as the
harness's ``study`` and the curve benchmark's ``tuner-study-curve`` (its curve rule on).  Rows go
to DIR/runs.csv as they finish, so a stopped check goes on where it was; the report is
DIR/check.md, and the exit status is 1 when anything is behind.  Both sides run on the same
simulated clock, run times and noise per seed, so a seed's two runs differ only by the setting.
The whole check (every problem, 10 seeds, both W) takes hours on two cores: put its output in
the note of any change to a default.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from tuner.core.persist import append_row, write_atomic

from .families import FAMILIES, instances
from .metrics import FRACTIONS
from .paired import behind

DEFAULT, CANDIDATE = "default", "candidate"
CURVE_METHOD = "tuner-study-curve"      # today's default with a fidelity (the curve rule on)
HORIZONS = tuple(f"best_{q:g}" for q in FRACTIONS)
COLUMNS = ("suite", "problem", "workers", "method", "seed", *HORIZONS, "infeasible_trials")


def harness_problems() -> list[str]:
    """Every harness problem this machine can run (``tuner.bench.compare.usable_problems``)."""
    from .compare import FULL_PROBLEMS, usable_problems

    return usable_problems(FULL_PROBLEMS)


def curve_problems() -> list[str]:
    """Every learning-curve problem whose table is built."""
    from .curve_tables import available
    from .curves import PROBLEMS, TABLE_PROBLEMS

    return [p for p in PROBLEMS
            if p not in TABLE_PROBLEMS or available(p.split("-")[0])]


def one_run(suite: str, problem: str, workers: int, method: str, seed: int,
            candidate: Mapping[str, Any]) -> dict[str, Any]:
    """One run's row: ``method`` is ``default`` or ``candidate`` (today's settings with
    ``candidate`` over them), ``suite`` ``harness`` or ``curves``."""
    import warnings

    overrides = dict(candidate) if method == CANDIDATE else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if suite == "harness":
            from .compare import get_problem, harness_run
            from .metrics import run_metrics
            from .peers import ABLATION

            ABLATION["study-candidate"] = {**ABLATION["study"], **overrides}
            name = "study-candidate" if method == CANDIDATE else "study"
            p = get_problem(problem)
            row = run_metrics(harness_run(p, workers, name, seed), p, p.horizon(workers))
        else:
            from .curves import one_run as curve_run

            row = curve_run(problem, workers, CURVE_METHOD, seed, overrides=overrides)
            row["infeasible_trials"] = math.nan
    return {"suite": suite, "problem": problem, "workers": workers, "method": method,
            "seed": seed, **{h: row[h] for h in HORIZONS},
            "infeasible_trials": row.get("infeasible_trials", math.nan)}


def invalid(candidate: Mapping[str, Any], problems: Sequence[str],
            curves: Sequence[str] = ()) -> str | None:
    """Why ``candidate`` cannot run on one of the problems (with that problem's constraint:
    ``stop_margin`` needs a run-time budget, for example), or None: a bad setting fails before
    any run, not in a worker.

    Args:
        candidate: optimizer settings over a study's defaults.
        problems: harness problem names.
        curves: learning-curve problem names.
    """
    from tuner.core.settings import Settings
    from tuner.study.defaults import STUDY_OPTIMIZER_DEFAULTS

    from .compare import get_problem
    from .curves import PROBLEMS as CURVES

    named = [(n, get_problem(n).constraint) for n in problems]
    named += [(n, CURVES[n]().constraint) for n in curves if n in CURVES]
    for name, constraint in named or [(None, None)]:
        try:
            Settings.from_dict({**STUDY_OPTIMIZER_DEFAULTS, **candidate,
                                "constraints": [constraint] if constraint else []}).validate()
        except ValueError as exc:
            return f"{exc}" + (f" (on {name})" if name else "")
    return None


def plan(problems: Sequence[str], curves: Sequence[str], workers: Sequence[int], seeds: int
         ) -> list[tuple[str, str, int, str, int]]:
    """Every run, seed-major (an interrupted check still covers every problem)."""
    return [(suite, p, w, m, s) for s in range(seeds) for w in workers
            for suite, names in (("harness", problems), ("curves", curves)) for p in names
            for m in (DEFAULT, CANDIDATE)]


def read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    with path.open() as fh:
        return list(csv.DictReader(fh))


def score(v: Any) -> float:
    """A best score as a number; nothing feasible (NaN, empty) as the worst."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return -1e300
    return x if math.isfinite(x) else -1e300


def shown(value: float) -> str:
    """A median score in the report: 4 digits, or ``none`` where nothing was feasible."""
    return "none" if value <= -1e299 else f"{value:.4g}"


def check(rows: Sequence[Mapping[str, Any]], alpha: float = 0.05
          ) -> tuple[list[str], list[tuple[str, int, str]], list[tuple[str, int, str]]]:
    """The report's lines and the (problem, W, horizon) where the candidate is behind today's
    default beyond the seeds' spread, and where it is ahead (paired by seed).

    Args:
        rows: runs of ``default`` and ``candidate`` (``one_run``'s rows).
        alpha: the paired test's level.
    """
    by: dict[tuple[str, int, str], dict[int, Mapping[str, Any]]] = {}
    for r in rows:
        by.setdefault((r["problem"], int(r["workers"]), r["method"]), {})[int(r["seed"])] = r
    pairs = sorted({(p, w) for p, w, m in by if m == CANDIDATE and (p, w, DEFAULT) in by})
    worse: list[tuple[str, int, str]] = []
    better: list[tuple[str, int, str]] = []
    lines = ["| problem | W | seeds | H/4 | H/2 | H |", "|---|---|---|---|---|---|"]
    for p, w in pairs:
        new, old = by[(p, w, CANDIDATE)], by[(p, w, DEFAULT)]
        cells = []
        for h in HORIZONS:
            a = {s: score(r[h]) for s, r in new.items()}
            b = {s: score(r[h]) for s, r in old.items()}
            mark = ""
            if behind(a, b, alpha):
                worse.append((p, w, h))
                mark = " **worse**"
            elif behind(b, a, alpha):
                better.append((p, w, h))
                mark = " better"
            seeds = sorted(set(a) & set(b))
            cells.append(f"{shown(np.median([a[s] for s in seeds]))} / "
                         f"{shown(np.median([b[s] for s in seeds]))}{mark}")
        lines.append(f"| {p} | {w} | {len(set(new) & set(old))} | {' | '.join(cells)} |")
    total = len(pairs) * len(HORIZONS)
    head = [f"candidate / today's default, median best score over the seeds both ran; "
            f"none: nothing feasible; paired Wilcoxon, p < {alpha:g}",
            f"worse beyond the seeds' spread: {len(worse)} of {total} (problem, W, horizon); "
            f"better: {len(better)}", ""]
    tail = [""] + [f"worse: {p}, W = {w}, {h}" for p, w, h in worse]
    return head + lines + tail, worse, better


def run(jobs: list[tuple[str, str, int, str, int]], path: Path, candidate: Mapping[str, Any],
        procs: int) -> None:
    """The jobs whose rows ``path`` lacks, in ``procs`` processes; each row as it finishes."""
    done = {(r["suite"], r["problem"], int(r["workers"]), r["method"], int(r["seed"]))
            for r in read(path)}
    todo = [j for j in jobs if j not in done]
    print(f"{len(todo)} runs to go ({len(jobs) - len(todo)} done before)", flush=True)
    with ProcessPoolExecutor(max_workers=max(1, procs)) as pool:
        futures = [pool.submit(one_run, *job, candidate) for job in todo]
        for i, f in enumerate(futures, 1):
            append_row(path, f.result(), sync=False)
            if i % 10 == 0 or i == len(todo):
                print(f"  {i}/{len(todo)}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidate", help="JSON: optimizer settings over a study's defaults")
    ap.add_argument("--out", type=Path, help="the check's folder (runs.csv, check.md)")
    ap.add_argument("--report", type=Path, help="only the check, from FOLDER/runs.csv")
    ap.add_argument("--problems", nargs="*", help="harness problems (default: all)")
    ap.add_argument("--curve-problems", nargs="*", help="learning-curve problems (default: all)")
    ap.add_argument("--family-instances", type=int, default=5,
                    help="instances of each problem family (tuner.bench.families), from the "
                         "split --split (default 5, from the tuning split)")
    ap.add_argument("--families", nargs="*", choices=FAMILIES, default=list(FAMILIES),
                    help="the problem families whose instances run (default: all)")
    ap.add_argument("--split", choices=("tuning", "held-out"), default="tuning")
    ap.add_argument("--workers", nargs="*", type=int, default=[4, 16])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--procs", type=int, default=2)
    args = ap.parse_args(argv)
    folder = args.report or args.out
    if folder is None:
        ap.error("give --out FOLDER (with --candidate) or --report FOLDER")
    if args.report is None:
        if args.candidate is None:
            ap.error("--candidate is required to run the check (or --report FOLDER)")
        try:
            candidate = json.loads(args.candidate)
        except json.JSONDecodeError as exc:
            ap.error(f"--candidate is not JSON ({exc})")
        if not isinstance(candidate, dict):
            ap.error("--candidate must be a JSON object of settings, e.g. '{\"kernel\": \"se\"}'")
        problems = harness_problems() if args.problems is None else list(args.problems)
        problems += [p for f in args.families
                     for p in instances(f, args.split, args.family_instances)]
        curves = curve_problems() if args.curve_problems is None else args.curve_problems
        bad = invalid(candidate, problems, curves)
        if bad:
            ap.error(f"--candidate: {bad}")
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "candidate.json", json.dumps(candidate, indent=1))
        run(plan(problems, curves, args.workers, args.seeds), folder / "runs.csv", candidate,
            args.procs)
    lines, worse, _ = check(read(folder / "runs.csv"))
    text = "\n".join(lines) + "\n"
    write_atomic(folder / "check.md", text)
    print(text)
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
