"""Large studies: what the subset GP (``Settings.exact_until``, ``tuner.core.subset``) costs in
score and what it saves in time, in simulated asynchronous studies on the harness's problems.

    # the approximation against the exact GP, paired by seed: W = 16, 800 trials, the subset
    # switched on early (past 200 trials, 150 of them) so that it covers most of each run
    python scripts/bench/bench_scale.py quality --out docs/research/results/scale
    # 20 000 trials on 256 workers: the default, random search and Optuna's TPE, one process each
    python scripts/bench/bench_scale.py study --methods tuner random optuna-tpe --out \
        docs/research/results/scale

Rows are appended to ``quality.csv`` / ``study.csv`` as runs finish (an interrupted run resumes);
the tables ``quality.md`` / ``study.md`` are written from every row at the end.  Scores are the
best noise-free objective over the completed feasible trials among the first k started.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tuner.bench.compare import read_rows as rows  # noqa: E402
from tuner import Optimizer, Settings  # noqa: E402
from tuner.bench.peers import make_method  # noqa: E402
from tuner.bench.problems import get_problem  # noqa: E402
from tuner.core.persist import append_row  # noqa: E402
from tuner.loop.simulator import RunTime, simulate  # noqa: E402

QUALITY_PROBLEMS = ("hartmann6", "levy5", "ackley5", "hpo-mixed-budget", "gardner")
VARIANTS = {"exact": {"exact_until": None}, "subset": {"exact_until": 200, "subset_size": 150}}


def best_by_trials(res: Any, feasible: np.ndarray, ks: list[int]) -> list[float]:
    """Best noise-free f over the completed feasible trials among the first k started."""
    ok = res.completed & feasible
    out = []
    for k in ks:
        sel = ok[:k]
        out.append(float(res.f_true[:k][sel].max()) if sel.any() else math.nan)
    return out


def run(problem: str, method: str, seed: int, workers: int, n_trials: int,
        overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    p = get_problem(problem)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = make_method(method, p, seed)
        if overrides:
            opt = Optimizer(p.space, Settings.from_dict({**opt.settings.flat(), **overrides}))
        w, c = time.perf_counter(), time.process_time()
        res = simulate(opt, p, RunTime(p.mean_runtime, p.cv), n_trials=n_trials, workers=workers,
                       noise_std=p.noise_std, seed=1000 + seed)
        wall, cpu = time.perf_counter() - w, time.process_time() - c
    feasible = np.array([p.feasible(cfg) for cfg in res.configs], dtype=bool)
    ks = [n_trials // 4, n_trials // 2, n_trials]
    b = best_by_trials(res, feasible, ks)
    return {"problem": problem, "method": method, "seed": seed, "workers": workers,
            "trials": len(res.start), "best_0.25": b[0], "best_0.5": b[1], "best_1": b[2],
            "infeasible_trials": int((~feasible).sum()),
            "suggest_ms_median": 1e3 * float(np.median(res.suggest_seconds)),
            "suggest_ms_mean": 1e3 * float(np.mean(res.suggest_seconds)),
            "wall_s": wall, "cpu_s": cpu,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "load_1min": os.getloadavg()[0]}


def quality_table(path: Path, base: str = "exact", other: str = "subset") -> str:
    """Per problem: mean best of the runs of ``base`` and of ``other`` (their ``method``) at 1/4,
    1/2 and all trials, and the paired difference other - base (mean and standard error over
    seeds, wins/ties/losses)."""
    data = rows(path)
    lines = [f"| problem | trials | at | {base} mean | {other} mean | {other} - {base} (se) | "
             f"{other} better / tied / worse | {base} ms mean | {other} ms mean |",
             "|---|---|---|---|---|---|---|---|---|"]
    for prob in dict.fromkeys(r["problem"] for r in data):
        by = {(r["method"], r["seed"]): r for r in data if r["problem"] == prob}
        seeds = sorted({s for m, s in by if ((base, s) in by and (other, s) in by)}, key=int)
        if not seeds:
            continue
        for q in ("0.25", "0.5", "1"):
            e = np.array([float(by[base, s][f"best_{q}"]) for s in seeds])
            u = np.array([float(by[other, s][f"best_{q}"]) for s in seeds])
            d = u - e
            se = d.std(ddof=1) / math.sqrt(len(d)) if len(d) > 1 else math.nan
            tol = 1e-9 * (1 + np.abs(e))
            ms = [
                np.mean([float(by[m, s]["suggest_ms_mean"]) for s in seeds]) for m in (base, other)
            ]
            lines.append(
                f"| {prob} | {by[base, seeds[0]]['trials']} | {q} | {e.mean():.4g} | "
                f"{u.mean():.4g} | "
                f"{d.mean():+.3g} ({se:.2g}) | {int((d > tol).sum())} / "
                f"{int((abs(d) <= tol).sum())} / "
                f"{int((d < -tol).sum())} | {ms[0]:.1f} | {ms[1]:.1f} |"
            )
    return "\n".join(lines)


def study_table(path: Path) -> str:
    data = rows(path)
    lines = [
        "| problem | W | trials | method | seed | best at 1/4 | best at 1/2 | best at the end | "
        "infeasible | suggest ms median | suggest ms mean | wall min | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data:
        lines.append(
            f"| {r['problem']} | {r['workers']} | {r['trials']} | {r['method']} | {r['seed']} | "
            f"{float(r['best_0.25']):.4g} | {float(r['best_0.5']):.4g} | {float(r['best_1']):.4g} "
            "| "
            f"{r['infeasible_trials']} | {float(r['suggest_ms_median']):.1f} | "
            f"{float(r['suggest_ms_mean']):.1f} | {float(r['wall_s']) / 60:.1f} | "
            f"{float(r['peak_rss_mb']):.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("quality", "study"))
    ap.add_argument("--problems", nargs="+")
    ap.add_argument("--methods", nargs="+", default=["tuner", "random", "optuna-tpe"])
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--trials", type=int, default=None)
    ap.add_argument("--out", default="bench_results/scale")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = f"Command: `python scripts/bench/bench_scale.py {' '.join(sys.argv[1:])}`\n\n"
    if args.what == "quality":
        path = out / "quality.csv"
        have = {(r["problem"], r["method"], r["seed"]) for r in rows(path)}
        workers, n = args.workers or 16, args.trials or 800
        for seed in range(args.seeds or 5):
            for prob in args.problems or QUALITY_PROBLEMS:
                for name, over in VARIANTS.items():
                    if (prob, name, str(seed)) in have:
                        continue
                    row = run(prob, "tuner", seed, workers, n, over)
                    row["method"] = name
                    append_row(path, row)
                    print(
                        f"{prob} {name} seed {seed}: best {row['best_1']:.4g}, "
                        f"{row['suggest_ms_mean']:.1f} ms mean, {row['wall_s']:.0f} s",
                        flush=True,
                    )
        (out / "quality.md").write_text(command + quality_table(path) + "\n")
        print(quality_table(path))
    else:
        path = out / "study.csv"
        workers, n = args.workers or 256, args.trials or 20000
        for seed in range(args.seeds or 1):
            for prob in args.problems or ["hartmann6"]:
                for method in args.methods:
                    row = run(prob, method, seed, workers, n)
                    append_row(path, row)
                    print(
                        f"{prob} {method} seed {seed}: best {row['best_1']:.4g} "
                        f"({row['wall_s'] / 60:.1f} min, {row['peak_rss_mb']:.0f} MB)",
                        flush=True,
                    )
        (out / "study.md").write_text(command + study_table(path) + "\n")
        print(study_table(path))


if __name__ == "__main__":
    main()
