"""Censoring window m (paper 001 eq. 1, §6 m = 2 mu, App. A.4): which unit and size to default to.

Eq. 1 gives a trial the objective's minimum while it runs and keeps it there *for good* when its
result arrives later than the window m.  This script measures what that costs, on W simulated
workers (``tuner.loop.simulator.simulate``) with heterogeneous run times, for these windows:

    auto-iter   m = 2 x mean delay, counted in queries started (paper 001 §6; the default before
                this study, which made m = inf the default)
    auto-sec    m = 2 x mean run time, in seconds (App. A.4)
    2W-iter     m = 2W queries;  5W-iter  m = 5W queries
    inf         m = infinity: a result always counts once it arrives (pending trials are still
                censored while they run)
    .../nu-window   the same with ``nu_terms="window"`` (eq. 2 summed over the last m queries)

Problems (defined here, maximized, with known bounds and optimum):
    branin    negated Branin on [-5, 10] x [0, 15]                          (2-D)
    hartmann6 negated Hartmann-6 on [0, 1]^6                                (6-D)
    mixed     an HPO-like function of lr (float, log), layers (int), batch (int, log) and
              optimizer (categorical): accuracy-like, in [0, 1]             (6 encoded dims)
Run times: log-normal with coefficient of variation cv around a mean that is
    indep     1 for every configuration
    corr      ratio ** size(x) / Z: slower closer to the optimum (the good configurations are
              the slow ones: bigger models, smaller batches)
    anti      ratio ** (1 - size(x)) / Z: faster closer to the optimum
with ratio = 5 and Z such that the mean over uniformly random configurations is 1 s; size(x) is
closeness to the nearest global optimizer (branin, hartmann6) or depth and small batch (mixed).
One "trial's worth" of wall-clock on W workers is therefore 1 / W seconds.

Each run stops once the simulated clock has passed ``n`` trials' worth and ``n`` results have
arrived (``n`` = 100, or 30 with --quick).  Recorded per run: simple regret over completed
evaluations (001 App. C) at 5, 10, ..., n trials' worth of wall-clock and after 5, 10, ..., n
completions; the share of completed results censored for good at the end; whether the best
completed trial was; and the share of suggestions made while the best result so far was
censored.  Rows are appended to ``runs.csv`` as they finish (a rerun resumes); the report
(``tables.md``, ``*.png``) is written from that file.

    # full study (hours, 2 processes)
    nice -n 10 python scripts/studies/censoring_window.py
    python scripts/studies/censoring_window.py --quick                    # about a minute
    # tables and plots from runs.csv
    python scripts/studies/censoring_window.py --report-only
    python scripts/studies/censoring_window.py --paper-only --seeds 50    # section F only (minutes)
    # section G only (about an hour)
    python scripts/studies/censoring_window.py --pending-only --seeds 8
"""

from __future__ import annotations

import tuner.bench.threads  # noqa: F401,E402  (before numpy: one BLAS thread per process)

import argparse  # noqa: E402
import csv  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from functools import lru_cache  # noqa: E402
from multiprocessing import Pool  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Iterable, Mapping  # noqa: E402

import numpy as np  # noqa: E402
from scipy.stats import wilcoxon  # noqa: E402


from tuner import PAPER_EXACT, Optimizer, Settings  # noqa: E402

PAPER = dict(PAPER_EXACT)
from tuner.core.persist import append_row  # noqa: E402
from tuner.core.trial import Status  # noqa: E402
from tuner.loop.problems import BRANIN, HARTMANN6, gp_sample_1d  # noqa: E402
from tuner.loop.simulator import Poisson, RunTime, simulate  # noqa: E402
from tuner.core.space import SearchSpace  # noqa: E402

from tuner.bench.metrics import mean_se, sample_mean_se  # noqa: E402
from tuner.bench.problems import Problem, uniform_configs  # noqa: E402

# --- problems ---------------------------------------------------------------------------------


# log10 lr*, peak
_MIXED_OPT = {"sgd": (-1.0, 0.90), "momentum": (-1.7, 0.94), "adam": (-3.0, 0.97)}


def _mixed(c: Mapping[str, Any]) -> float:
    """Accuracy-like: the best learning rate depends on the optimizer and grows with the batch
    size; depth helps with diminishing returns; large batches cost a little."""
    lr_star, peak = _MIXED_OPT[c["optimizer"]]
    batch, layers = float(c["batch"]), float(c["layers"])
    lr_star += 0.5 * math.log10(batch / 64.0)
    lr_fit = math.exp(-0.5 * ((math.log10(float(c["lr"])) - lr_star) / 0.6) ** 2)
    depth = 1.0 - 0.25 * math.exp(-(layers - 1.0) / 2.0)
    batch_cost = 1.0 - 0.03 * (math.log2(batch / 16.0) / 5.0) ** 2
    return peak * depth * batch_cost * (0.1 + 0.9 * lr_fit)


def _mixed_size(c: Mapping[str, Any]) -> float:
    """Deeper and smaller-batch runs are slower (and better)."""
    return 0.5 * (float(c["layers"]) - 1) / 7 + 0.5 * (
        1 - math.log(float(c["batch"]) / 16) / math.log(32)
    )


def _distance_size(
    space: dict, optimizers: Iterable[Mapping[str, Any]]
) -> Callable[[Mapping[str, Any]], float]:
    """How "big" a configuration is, in [0, 1]: closeness to the nearest global maximizer
    (1 at the optimum; drives the run time)."""
    sp = SearchSpace.from_dict(space)
    optimizers = tuple(optimizers)
    ell = 0.25 * math.sqrt(sp.dim)

    def size(c: Mapping[str, Any]) -> float:
        u = sp.encode(c)
        d2 = min(float(np.sum((u - sp.encode(o)) ** 2)) for o in optimizers)
        return math.exp(-0.5 * d2 / ell ** 2)

    return size


def _problem(name: str, space: dict, f: Callable[[Mapping[str, Any]], float], f_opt: float,
             bounds: tuple[float, float], size: Callable[[Mapping[str, Any]], float]) -> Problem:
    """A harness problem; its run-time model is chosen per run (``mean_runtime(name, mode)``)."""
    return Problem(name, space, f, f_opt, mean_runtime=lambda c: 1.0, bounds=bounds, size=size)


_H6_XOPT = (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573)
_BRANIN_SPACE = BRANIN.space(["x1", "x2"])
_H6_SPACE = HARTMANN6.space()
PROBLEMS: dict[str, Problem] = {
    "branin": _problem(
        "branin",
        _BRANIN_SPACE,
        BRANIN.of_config(["x1", "x2"]),
        BRANIN.optimum,
        (-308.1291, -0.397887),
        _distance_size(
            _BRANIN_SPACE,
            (
                {"x1": a, "x2": b}
                for a, b in ((-math.pi, 12.275), (math.pi, 2.275), (9.42478, 2.475))
            ),
        ),
    ),
    "hartmann6": _problem(
        "hartmann6",
        _H6_SPACE,
        HARTMANN6.of_config(),
        HARTMANN6.optimum,
        (0.0, 3.32237),
        _distance_size(_H6_SPACE, ({f"x{i}": v for i, v in enumerate(_H6_XOPT)},)),
    ),
    "mixed": _problem(
        "mixed",
        {"lr": {"type": "float", "low": 1e-5, "high": 1.0, "log": True},
         "layers": {"type": "int", "low": 1, "high": 8},
         "batch": {"type": "int", "low": 16, "high": 512, "log": True},
         "optimizer": {"type": "categorical", "choices": ["sgd", "momentum", "adam"]}},
        _mixed,
        0.97 * (1 - 0.25 * math.exp(-3.5)),
        (0.0, 1.0),
        _mixed_size,
    ),
}


@lru_cache(maxsize=None)
def _uniform_configs(name: str) -> tuple[dict, ...]:
    return tuple(uniform_configs(PROBLEMS[name].space, 4096, seed=12345))


@lru_cache(maxsize=None)
def objective_sd(name: str) -> float:
    """Standard deviation of f over uniformly random configurations (scales the noise)."""
    p = PROBLEMS[name]
    return float(np.std([p.f(c) for c in _uniform_configs(name)]))


# --- run-time models --------------------------------------------------------------------------

RATIO = 5.0          # mean run time at size 1 over mean run time at size 0
RUNTIMES = ("indep", "corr", "anti")
NOISE_FRACTION = 0.05   # observation noise std = 5 % of sd(f) over the space


def _exponent(problem: Problem, mode: str, c: Mapping[str, Any]) -> float:
    s = problem.size(c)
    return {"indep": 0.0, "corr": s, "anti": 1.0 - s}[mode]


@lru_cache(maxsize=None)
def _runtime_norm(name: str, mode: str) -> float:
    p = PROBLEMS[name]
    return float(np.mean([RATIO ** _exponent(p, mode, c) for c in _uniform_configs(name)]))


def mean_runtime(name: str, mode: str) -> Callable[[Mapping[str, Any]], float]:
    """Mean run time of a configuration, 1 s on average over uniformly random ones."""
    p, z = PROBLEMS[name], _runtime_norm(name, mode)
    return lambda c: RATIO ** _exponent(p, mode, c) / z


# --- windows ----------------------------------------------------------------------------------

WINDOWS_MAIN = ("auto-iter", "auto-sec", "2W-iter", "5W-iter", "inf")


def window_settings(window: str, workers: int) -> dict[str, Any]:
    """Optimizer settings (window_unit, window, nu_terms) for a window label."""
    label, _, nu = window.partition("/")
    out: dict[str, Any] = {"nu_terms": "window" if nu == "nu-window" else "pending"}
    if label == "inf":
        return {**out, "window_unit": "iterations", "window": math.inf}
    size, unit = label.split("-")
    out["window_unit"] = {"iter": "iterations", "sec": "seconds"}[unit]
    out["window"] = "auto" if size == "auto" else float(int(size[:-1]) * workers)
    return out


# --- one run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    problem: str
    workers: int
    runtime: str
    cv: float
    noise: int          # 0 or 1 (NOISE_FRACTION x sd(f))
    window: str
    algorithm: str
    seed: int
    n: int              # budget: n trials' worth of wall-clock and at least n results

    FIELDS = ("problem", "workers", "runtime", "cv", "noise", "window", "algorithm", "seed", "n")

    def key(self) -> tuple[str, ...]:
        """As the fields read back from the CSV (``str`` of each value)."""
        return tuple(str(getattr(self, k)) for k in self.FIELDS)


KEY_FIELDS = Job.FIELDS
MARKS_STEP = 5


class _BudgetReached(Exception):
    """Raised from the progress callback to end a simulation at the wall-clock budget."""


def run_one(job: Job) -> dict[str, Any]:
    t0 = time.perf_counter()
    p = PROBLEMS[job.problem]
    W, n = job.workers, job.n
    opt = Optimizer(p.space, Settings.from_dict({
        **PAPER, "algorithm": job.algorithm, "objective_bounds": p.bounds, "seed": job.seed,
        **window_settings(job.window, W)}))
    f_true: list[float] = []
    durations: list[float] = []

    def objective(c: Mapping[str, Any]) -> float:
        f_true.append(p.f(c))
        return f_true[-1]

    runtime = RunTime(mean_runtime(job.problem, job.runtime), job.cv)

    def delay(c: Mapping[str, Any], rng: np.random.Generator) -> float:
        durations.append(runtime(c, rng))
        return durations[-1]

    t_budget = n / W                        # n trials' worth: mean run time over the space is 1 s
    inc_censored = [0, 0]                   # suggestions made with a result in hand; of which the
                                            # best result so far was censored

    def progress(_: int) -> None:
        now = opt.clock()
        done = [tr for tr in opt.trials if tr.status == Status.FINISHED]
        if done and job.algorithm != "random":
            best = max(done, key=lambda tr: tr.value)
            inc_censored[0] += 1
            inc_censored[1] += best.trial_id not in {tr.trial_id for tr in opt.counted(now)[1]}
        if now >= t_budget and sum(tr.status != "RUNNING" for tr in opt.trials) >= n:
            raise _BudgetReached

    noise_std = NOISE_FRACTION * objective_sd(job.problem) if job.noise else 0.0
    reached = False
    try:
        simulate(opt, objective, delay, 4 * n, workers=W, noise_std=noise_std, seed=job.seed,
                 f_opt=p.f_opt, progress=progress)
    except _BudgetReached:
        reached = True
    stop = float(opt.clock())
    f = np.asarray(f_true)
    start = np.array([tr.start_time for tr in opt.trials])
    finish = start + np.asarray(durations)
    regret_scale = p.bounds[1] - p.bounds[0]
    row: dict[str, Any] = {k: getattr(job, k) for k in KEY_FIELDS}
    marks = range(MARKS_STEP, n + 1, MARKS_STEP)
    for k in marks:                         # wall-clock: k trials' worth = k / W seconds
        seen = f[finish <= k / W]
        row[f"rt{k}"] = (p.f_opt - seen.max()) / regret_scale if seen.size else math.nan
    order = np.argsort(finish, kind="stable")
    best_by_done = np.maximum.accumulate(f[order])
    n_final = int(np.sum(finish <= stop))
    for k in marks:                         # after k completed evaluations
        row[f"rc{k}"] = (p.f_opt - best_by_done[k - 1]) / regret_scale if k <= n_final else math.nan
    done = [tr for tr in opt.trials if tr.status == Status.FINISHED]
    if job.algorithm != "random" and done:
        m, counted = opt.counted(stop)
        ids = {tr.trial_id for tr in counted}
        cens = [tr.trial_id not in ids for tr in done]
        best = int(np.argmax([f_true[tr.trial_id] for tr in done]))
        row.update(censored_end=float(np.mean(cens)), best_censored_end=float(cens[best]),
                   incumbent_censored=inc_censored[1] / max(inc_censored[0], 1), m_end=m)
    else:
        row.update(censored_end=math.nan, best_censored_end=math.nan,
                   incumbent_censored=math.nan, m_end=math.nan)
    row.update(started=len(opt.trials), completed_at_budget=int(np.sum(finish <= t_budget)),
               truncated=int(not reached), seconds=round(time.perf_counter() - t0, 3))
    return row


# --- the paper's own setting (001 §6.1, Fig. 1b) -----------------------------------------------

PAPER_WINDOWS = ("2", "5", "10", "20", "40", "inf", "20/nu-window", "inf/nu-window")


@dataclass(frozen=True)
class PaperJob:
    """One query per iteration, Poisson(10) delays in iterations, a 1-D GP sample on a
    1000-point grid (lengthscale 0.02), beta = 1: the setting of paper 001 Fig. 1b."""

    window: str
    seed: int
    T: int

    FIELDS = ("window", "seed", "T")

    def key(self) -> tuple[str, ...]:
        return tuple(str(getattr(self, k)) for k in self.FIELDS)


PAPER_MARKS = (25, 50, 100, 200)


def run_paper(job: PaperJob) -> dict[str, Any]:
    size, _, nu = job.window.partition("/")
    fn = gp_sample_1d(1000, 0.02, seed=1000 + job.seed)
    opt = Optimizer(fn.space, Settings.from_dict({
        **PAPER, "algorithm": "gp-ucb-sdf", "objective_bounds": (0.0, 1.0), "beta": 1.0,
        "window": math.inf if size == "inf" else float(size),
        "nu_terms": "window" if nu == "nu-window" else "pending", "seed": job.seed}),
                    domain=fn.grid[:, None])
    nus: list[float] = []

    def progress(_: int) -> None:
        if opt.last_nu is not None:
            nus.append(opt.last_nu)

    res = simulate(opt, fn, Poisson(10), job.T, seed=job.seed, f_opt=fn.f_opt, progress=progress)
    regret = res.simple_regret()
    ids = {tr.trial_id for tr in opt.counted()[1]}
    done = [tr for tr in opt.trials if tr.status == Status.FINISHED]
    row: dict[str, Any] = {k: getattr(job, k) for k in PaperJob.FIELDS}
    row.update({f"r{t}": regret[t - 1] for t in PAPER_MARKS if t <= job.T})
    row.update(censored_end=float(np.mean([tr.trial_id not in ids for tr in done])),
               nu_mean=float(np.mean(nus)) if nus else math.nan,
               nu_max=float(np.max(nus)) if nus else math.nan)
    return row


def paper_report(path: Path) -> str:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        return ""
    T = max(int(r["T"]) for r in rows)
    marks = [t for t in PAPER_MARKS if t <= T]
    lines = [
        "## F. The paper's own setting (001 §6.1, Fig. 1b): one query per iteration, "
        "Poisson(10) delays, 1-D GP sample, GP-UCB-SDF, beta = 1\n",
        "Simple regret (f in [0, 1]) at iteration T, mean ± standard error over seeds (a new "
        "GP sample per seed); nu_t: mean and largest exploration weight over the run.\n",
        "| m | "
        + " | ".join(f"T={t}" for t in marks)
        + " | censored for good | mean nu_t | max nu_t | runs |",
        "|---|" + "---|" * (len(marks) + 4),
    ]
    for w in PAPER_WINDOWS:
        rs = [r for r in rows if r["window"] == w and int(r["T"]) == T]
        if not rs:
            continue
        cells = [_fmt(*sample_mean_se(float(r[f"r{t}"]) for r in rs)[:2], 4) for t in marks]
        lines.append(f"| {w} | " + " | ".join(cells)
                     + f" | {_fmt(*sample_mean_se(float(r['censored_end']) for r in rs)[:2], 3)}"
                     f" | {np.mean([float(r['nu_mean']) for r in rs]):.3f}"
                     f" | {np.max([float(r['nu_max']) for r in rs]):.3f} | {len(rs)} |")
    return "\n".join(lines) + "\n"


# --- censored feedback against the baselines that ignore running trials (section G) -------------

PENDING_ALGOS = ("gp-ucb-sdf", "gp-ucb", "gp-ts-sdf", "asy-ts")


def pending_grid(seeds: int, n: int) -> list[Job]:
    """GP-UCB-SDF / GP-TS-SDF against GP-UCB / asy-TS, all with m = inf (a result counts when it
    arrives; only the treatment of running trials differs), paired by seed."""
    return [
        Job(problem=p, workers=W, runtime=rt, cv=1.0, noise=0, window="inf", algorithm=a, seed=seed,
            n=n)
        for seed in range(seeds)
        for p in PROBLEMS
        for W in (2, 8)
        for rt in ("indep", "corr")
        for a in PENDING_ALGOS
    ]


def pending_report(path: Path, n: int) -> str:
    rows = [r for r in _read_rows(path) if r["n"] == n]
    if not rows:
        return ""
    budgets = [b for b in BUDGETS if b <= n] or [n]
    key = lambda r: (r["problem"], r["workers"], r["runtime"], r["seed"])
    by = {a: {key(r): r for r in rows if r["algorithm"] == a} for a in PENDING_ALGOS}
    lines = [
        "## G. Censored feedback against ignoring running trials (m = inf for all)\n",
        "Paired runs (same problem, W, run-time model and seed; cv 1.0, noise-free). Mean "
        "normalized simple regret at b trials' worth of wall-clock; `geo`: geometric mean "
        f"(regret floored at {FLOOR:g}); `wins`: share of paired runs where the censored method "
        "has the lower regret at the largest budget; p: Wilcoxon signed-rank.\n",
        "| pair | runs | "
        + " | ".join(f"@{b}" for b in budgets)
        + f" | geo @{budgets[-1]} | wins | p |",
        "|---|---|" + "---|" * (len(budgets) + 3),
    ]
    for sdf, base in (("gp-ucb-sdf", "gp-ucb"), ("gp-ts-sdf", "asy-ts")):
        common = sorted(set(by[sdf]) & set(by[base]))
        if not common:
            continue
        cells = []
        for b in budgets:
            a = np.array([by[sdf][k][f"rt{b}"] for k in common])
            c = np.array([by[base][k][f"rt{b}"] for k in common])
            cells.append(f"{a.mean():.4f} vs {c.mean():.4f}")
        b = budgets[-1]
        a = np.array([by[sdf][k][f"rt{b}"] for k in common])
        c = np.array([by[base][k][f"rt{b}"] for k in common])
        geo = lambda v: float(np.exp(np.mean(np.log(np.maximum(v, FLOOR)))))
        p = float(wilcoxon(a - c).pvalue) if np.any(a != c) else math.nan
        lines.append(f"| {sdf} vs {base} | {len(common)} | " + " | ".join(cells)
                     + f" | {geo(a):.5f} vs {geo(c):.5f} | {np.mean(a < c):.2f} | {_pval(p)} |")
    lines.append("")
    for sdf, base in (("gp-ucb-sdf", "gp-ucb"), ("gp-ts-sdf", "asy-ts")):
        common = sorted(set(by[sdf]) & set(by[base]))
        if not common:
            continue
        lines += [f"By slice, {sdf} vs {base}, mean regret @{budgets[-1]}:\n", "| slice | runs | "
                  f"{sdf} | {base} |", "|---|---|---|---|"]
        for field, i in (("problem", 0), ("workers", 1), ("runtime", 2)):
            for v in sorted({k[i] for k in common}):
                ks = [k for k in common if k[i] == v]
                lines.append(f"| {field} = {v} | {len(ks)} | "
                             f"{np.mean([by[sdf][k][f'rt{budgets[-1]}'] for k in ks]):.4f} | "
                             f"{np.mean([by[base][k][f'rt{budgets[-1]}'] for k in ks]):.4f} |")
        lines.append("")
    return "\n".join(lines) + "\n"


# --- the grid ---------------------------------------------------------------------------------


def grid(quick: bool, seeds: int, n: int) -> list[Job]:
    """Jobs in priority order, seed-major within each part (partial results cover every cell)."""
    P = tuple(PROBLEMS)
    if quick:
        parts = [dict(problems=("branin", "mixed"), workers=(2,), runtimes=("indep", "corr"),
                      cvs=(1.0,), noise=(0,), windows=("auto-iter", "auto-sec", "inf"),
                      algorithms=("gp-ucb-sdf",))]
    else:
        parts = [
            # A. the main factorial: GP-UCB-SDF, noise-free (cv 0.3 on W = 2 and 8 only)
            dict(problems=P, workers=(2, 4, 8), runtimes=RUNTIMES, cvs=(1.0,), noise=(0,),
                 windows=WINDOWS_MAIN, algorithms=("gp-ucb-sdf",)),
            dict(problems=P, workers=(2, 8), runtimes=RUNTIMES, cvs=(0.3,), noise=(0,),
                 windows=WINDOWS_MAIN, algorithms=("gp-ucb-sdf",)),
            # B. reference baselines (each with every result counted) and the random floor
            dict(problems=P, workers=(2, 8), runtimes=RUNTIMES, cvs=(1.0,), noise=(0,),
                 windows=("inf",), algorithms=("gp-ucb", "gp-bucb", "random")),
            # C. small observation noise
            dict(problems=P, workers=(2, 8), runtimes=RUNTIMES, cvs=(1.0,), noise=(1,),
                 windows=("auto-iter", "auto-sec", "inf"), algorithms=("gp-ucb-sdf",)),
            # D. eq. 2 literally (nu sums over the last m queries)
            dict(problems=P, workers=(2, 8), runtimes=("indep", "corr"), cvs=(1.0,), noise=(0,),
                 windows=("auto-iter/nu-window", "5W-iter/nu-window"), algorithms=("gp-ucb-sdf",)),
            # E. GP-TS-SDF (about 4x the cost of a UCB run)
            dict(problems=P, workers=(2, 8), runtimes=("indep", "corr"), cvs=(1.0,), noise=(0,),
                 windows=("auto-iter", "inf"), algorithms=("gp-ts-sdf",)),
        ]
    jobs: list[Job] = []
    for part in parts:
        for seed in range(seeds):
            for prob, W, rt, cv, nz, win, algo in itertools.product(
                    part["problems"], part["workers"], part["runtimes"], part["cvs"],
                    part["noise"], part["windows"], part["algorithms"]):
                jobs.append(
                    Job(problem=prob, workers=W, runtime=rt, cv=cv, noise=nz, window=win,
                        algorithm=algo, seed=seed, n=n)
                )
    seen: set[tuple] = set()
    return [j for j in jobs if not (j.key() in seen or seen.add(j.key()))]


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k, v in r.items():
            if k in ("problem", "runtime", "window", "algorithm"):
                continue
            r[k] = float(v) if v not in ("", "nan") else math.nan
        for k in ("workers", "noise", "seed", "n"):
            r[k] = int(r[k])
    return rows


def run_all(
    worker: Callable[[Any], dict[str, Any]], jobs: list, path: Path, processes: int
) -> None:
    """Run ``worker(job)`` for the jobs not yet in ``path``, appending one row per finished run."""
    done: set[tuple[str, ...]] = set()
    if jobs and path.exists():
        with open(path, newline="") as fh:
            done = {tuple(r[k] for k in jobs[0].FIELDS) for r in csv.DictReader(fh)}
    todo = [j for j in jobs if j.key() not in done]
    print(f"{len(jobs)} runs in the grid, {len(jobs) - len(todo)} already in {path}, "
          f"{len(todo)} to go ({processes} processes)", flush=True)
    if not todo:
        return
    t0 = time.perf_counter()
    every = max(1, len(todo) // 50)
    with Pool(processes) as pool:
        for i, row in enumerate(pool.imap_unordered(worker, todo, chunksize=1), 1):
            append_row(path, row)
            if i % every == 0 or i == len(todo):
                el = time.perf_counter() - t0
                print(f"  {i}/{len(todo)} runs  {el / 60:6.1f} min elapsed, about "
                      f"{el / i * (len(todo) - i) / 60:6.1f} min to go", flush=True)


# --- the report -------------------------------------------------------------------------------

BUDGETS = (30, 60, 100)


def _cells(rows: Iterable[Mapping[str, Any]], by: tuple[str, ...]) -> dict[tuple, list]:
    out: dict[tuple, list] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in by), []).append(r)
    return out


def _fmt(m: float, se: float, digits: int = 3) -> str:
    if not np.isfinite(m):
        return "–"
    return f"{m:.{digits}f} ± {se:.{digits}f}" if np.isfinite(se) else f"{m:.{digits}f}"


def _pval(p: float) -> str:
    return "–" if not np.isfinite(p) else f"{p:.1g}"


FLOOR = 1e-6   # normalized regret below this counts as this (log ratios, plots)
CELL = ("problem", "workers", "runtime", "cv", "noise", "algorithm")


def ratio_to(rows: list[dict], ref: str, windows: Iterable[str], metric: str) -> dict[str, dict]:
    """Per window: geometric mean over cells of mean-regret(window) / mean-regret(ref), the share
    of cells where the window's mean regret is lower than ref's, and the paired comparison of
    runs (same cell and seed): mean difference, Wilcoxon signed-rank p-value, and mean log10 of
    the regret ratio (regrets floored at FLOOR)."""
    cells = _cells(rows, CELL)
    out = {}
    for w in windows:
        logs, wins, diffs, logdiffs = [], [], [], []
        for key, rs in cells.items():
            a = {r["seed"]: r[metric] for r in rs if r["window"] == w}
            b = {r["seed"]: r[metric] for r in rs if r["window"] == ref}
            common = [s for s in a if s in b and np.isfinite(a[s]) and np.isfinite(b[s])]
            if not common:
                continue
            ma, mb = np.mean([a[s] for s in common]), np.mean([b[s] for s in common])
            logs.append(math.log(max(ma, 1e-12) / max(mb, 1e-12)))
            wins.append(ma < mb)
            diffs.extend(a[s] - b[s] for s in common)
            logdiffs.extend(math.log10(max(a[s], FLOOR) / max(b[s], FLOOR)) for s in common)
        if not logs:
            continue
        d = np.array(diffs)
        p = float(wilcoxon(d).pvalue) if w != ref and np.any(d != 0) else math.nan
        out[w] = {"ratio": math.exp(np.mean(logs)), "wins": float(np.mean(wins)),
                  "cells": len(logs), "diff": float(d.mean()), "diff_se": sample_mean_se(d)[1],
                  "p": p, "runs": d.size, "log10": float(np.mean(logdiffs)),
                  "log10_se": sample_mean_se(logdiffs)[1]}
    return out


def report(path: Path, out: Path, n: int) -> str:
    rows = [r for r in _read_rows(path) if r["n"] == n]
    if not rows:
        raise SystemExit(f"no runs with n = {n} in {path}")
    budgets = [b for b in BUDGETS if b <= n] or [n]
    lines: list[str] = []
    add = lines.append
    seeds = {r["seed"] for r in rows}
    add(f"Simple regret over completed evaluations, divided by the objective's range "
        f"(f* - f_min); mean ± standard error over seeds ({len(seeds)} seeds per cell unless "
        f"noted). Budget b = b trials' worth of simulated wall-clock (b / W seconds on W "
        f"workers; mean run time over the space is 1 s). Source: `runs.csv` "
        f"({len(rows)} runs).\n")

    def section(title: str, sel: list[dict], windows: list[str], ref: str = "auto-iter") -> None:
        if not sel:
            return
        add(f"## {title}\n")
        add("### Against auto-iter (paper 001's m = 2 mu, the default before this study), over all "
            "cells of this slice\n")
        add(
            "`ratio`: geometric mean over cells of mean regret / mean regret of auto-iter; "
            "`wins`: share "
            "of cells where the window's mean regret is lower; `paired diff`: mean over runs of "
            "(regret - regret of auto-iter, same cell and seed), Wilcoxon signed-rank p; `log10 "
            "ratio`: "
            "mean over runs of log10(regret / regret of auto-iter), same cell and seed (-1 = ten "
            "times "
            "smaller).\n"
        )
        add("| window | " + " | ".join(f"ratio @{b}" for b in budgets) + " | wins @"
            f"{budgets[-1]} | paired diff @{budgets[-1]} | p | log10 ratio @{budgets[-1]} | "
            "censored for good | best censored "
            "at end | incumbent censored | runs |")
        add("|---|" + "---|" * (len(budgets) + 8))
        stats = {b: ratio_to(sel, ref, windows, f"rt{b}") for b in budgets}
        by_w = _cells(sel, ("window",))
        for w in windows:
            if w not in stats[budgets[-1]] or (w,) not in by_w:
                continue
            s = stats[budgets[-1]][w]
            rs = by_w[(w,)]
            ce = sample_mean_se(r["censored_end"] for r in rs)
            be = sample_mean_se(r["best_censored_end"] for r in rs)
            ic = sample_mean_se(r["incumbent_censored"] for r in rs)
            add(
                f"| {w} | "
                + " | ".join(f"{stats[b][w]['ratio']:.2f}" for b in budgets)
                + f" | {s['wins']:.2f} | {s['diff']:+.4f} ± {s['diff_se']:.4f} | "
                f"{_pval(s['p'])} | {s['log10']:+.2f} ± {s['log10_se']:.2f} | "
                f"{_fmt(ce[0], ce[1])} | {_fmt(be[0], be[1], 2)} | {_fmt(ic[0], ic[1], 2)} | "
                f"{len(rs)} |"
            )
        add("")
        b = budgets[-1]
        add(f"### Ratio to auto-iter at {b} trials' worth, by slice (geometric mean over cells)\n")
        add("| slice | " + " | ".join(windows) + " |")
        add("|---|" + "---|" * len(windows))
        for field in ("problem", "workers", "runtime", "cv"):
            for value, rs in sorted(_cells(sel, (field,)).items()):
                st = ratio_to(rs, ref, windows, f"rt{b}")
                add(f"| {field} = {value[0]} | " + " | ".join(
                    f"{st[w]['ratio']:.2f}" if w in st else "–" for w in windows) + " |")
        add("")
        for group, label in ((("workers", "runtime"), "W, run time"), (("problem",), "problem"),
                             (("cv",), "cv")):
            cells = _cells(sel, group)
            if len(cells) < 2 and group != ("workers", "runtime"):
                continue
            b = budgets[-1]
            add(f"### Mean normalized regret at {b} trials' worth, by {label}\n")
            add(f"| {label} | " + " | ".join(windows) + " |")
            add("|---|" + "---|" * len(windows))
            for key in sorted(cells):
                rs = cells[key]
                vals = []
                means = {}
                for w in windows:
                    m, se, _ = sample_mean_se(r[f"rt{b}"] for r in rs if r["window"] == w)
                    means[w] = m
                    vals.append((m, se))
                best = (
                    np.nanmin([m for m, _ in vals])
                    if any(np.isfinite(m) for m, _ in vals)
                    else None
                )
                cells_txt = [
                    ("**" + _fmt(m, se) + "**") if best is not None and m == best else _fmt(m, se)
                    for m, se in vals
                ]
                add(f"| {', '.join(str(k) for k in key)} | " + " | ".join(cells_txt) + " |")
            add("")
        cells = _cells(sel, ("workers", "runtime"))
        add("### Share of completed results censored for good at the end (mean over runs)\n")
        add("| W, run time | " + " | ".join(windows) + " |")
        add("|---|" + "---|" * len(windows))
        for key in sorted(cells):
            rs = cells[key]
            add(f"| {', '.join(str(k) for k in key)} | " + " | ".join(
                _fmt(*sample_mean_se(r["censored_end"] for r in rs if r["window"] == w)[:2], 2)
                for w in windows) + " |")
        add("")
        add("### Regret after a number of *completed* evaluations (mean over the slice)\n")
        marks = [k for k in (30, 60, 100) if k <= n]
        add("| window | " + " | ".join(f"{k} done" for k in marks) + " |")
        add("|---|" + "---|" * len(marks))
        for w in windows:
            rs = [r for r in sel if r["window"] == w]
            add(
                f"| {w} | "
                + " | ".join(_fmt(*sample_mean_se(r[f"rc{k}"] for r in rs)[:2]) for k in marks)
                + " |"
            )
        add("")

    ucb = [r for r in rows if r["algorithm"] == "gp-ucb-sdf"]
    present = {r["window"] for r in rows}
    main_w = [w for w in WINDOWS_MAIN if w in present]
    section("A. GP-UCB-SDF, noise-free (main factorial)", [r for r in ucb if r["noise"] == 0],
            main_w)
    section("B. GP-UCB-SDF with observation noise (5 % of sd f)",
            [r for r in ucb if r["noise"] == 1], main_w)
    nu_rows = [
        r
        for r in ucb
        if r["noise"] == 0
        and r["cv"] == 1.0
        and r["runtime"] in ("indep", "corr")
        and r["workers"] in (2, 8)
    ]
    nu_w = [w for w in ("auto-iter", "auto-iter/nu-window", "5W-iter", "5W-iter/nu-window", "inf")
            if w in present]
    if any("/" in r["window"] for r in nu_rows):
        section("C. nu_terms = window (eq. 2 as printed) vs pending", nu_rows, nu_w)
    ts = [r for r in rows if r["algorithm"] == "gp-ts-sdf"]
    section(
        "D. GP-TS-SDF, noise-free", ts, [w for w in main_w if any(r["window"] == w for r in ts)]
    )
    algo_table(rows, budgets, add)
    text = "\n".join(lines) + "\n"
    (out / "tables.md").write_text(text)
    plot(rows, out, n)
    return text


def algo_table(rows: list[dict], budgets: list[int], add: Callable[[str], None]) -> None:
    """Algorithms side by side on the cells the baselines ran in (cv 1.0, noise-free)."""
    base = [r for r in rows if r["algorithm"] in ("gp-ucb", "gp-bucb", "random")]
    if not base:
        return
    cells = {(r["problem"], r["workers"], r["runtime"]) for r in base}
    sel = [r for r in rows if (r["problem"], r["workers"], r["runtime"]) in cells and r["cv"] == 1.0
           and r["noise"] == 0]
    add("## E. Algorithms (cv 1.0, noise-free, cells where the baselines ran)\n")
    add("| algorithm | window | " + " | ".join(f"regret @{b}" for b in budgets)
        + " | censored for good | runs |")
    add("|---|---|" + "---|" * (len(budgets) + 2))
    for (algo, w), rs in sorted(_cells(sel, ("algorithm", "window")).items()):
        if algo in ("gp-ucb-sdf", "gp-ts-sdf") and w not in ("auto-iter", "auto-sec", "inf"):
            continue
        add(f"| {algo} | {w if algo != 'random' else '–'} | "
            + " | ".join(_fmt(*sample_mean_se(r[f"rt{b}"] for r in rs)[:2]) for b in budgets)
            + f" | {_fmt(*sample_mean_se(r['censored_end'] for r in rs)[:2], 2)} | {len(rs)} |")
    add("\nBy W and run time at the largest budget:\n")
    groups = sorted(_cells(sel, ("workers", "runtime")))
    combos = [c for c in sorted(_cells(sel, ("algorithm", "window")))
              if not (c[0] in ("gp-ucb-sdf", "gp-ts-sdf") and c[1] not in ("auto-iter", "inf"))]
    b = budgets[-1]
    add("| algorithm / window | " + " | ".join(f"W={w}, {rt}" for w, rt in groups) + " |")
    add("|---|" + "---|" * len(groups))
    for algo, w in combos:
        add(
            f"| {algo} / {w if algo != 'random' else '–'} | "
            + " | ".join(
                _fmt(
                    *sample_mean_se(
                        r[f"rt{b}"]
                        for r in sel
                        if r["algorithm"] == algo
                        and r["window"] == w
                        and r["workers"] == g[0]
                        and r["runtime"] == g[1]
                    )[:2]
                )
                for g in groups
            )
            + " |"
        )
    add("")


def plot(rows: list[dict], out: Path, n: int) -> None:
    """Regret curves of GP-UCB-SDF (noise-free, cv 1.0): by run-time model x W, against
    wall-clock and against completions, and by problem x W against wall-clock."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    marks = np.arange(MARKS_STEP, n + 1, MARKS_STEP)
    sel = [r for r in rows if r["algorithm"] == "gp-ucb-sdf" and r["noise"] == 0 and r["cv"] == 1.0]
    if not sel:
        return
    windows = [w for w in WINDOWS_MAIN if any(r["window"] == w for r in sel)]
    Ws = sorted({r["workers"] for r in sel})
    rts = [rt for rt in RUNTIMES if any(r["runtime"] == rt for r in sel)]
    probs = [p for p in PROBLEMS if any(r["problem"] == p for r in sel)]
    wallclock = "simulated wall-clock (trials' worth = W x seconds)"
    figures = (
        ("runtime", rts, "rt", wallclock, "regret_vs_wallclock.png", "problems pooled"),
        (
            "runtime",
            rts,
            "rc",
            "completed evaluations",
            "regret_vs_completed.png",
            "problems pooled",
        ),
        ("problem", probs, "rt", wallclock, "regret_by_problem.png", "run-time models pooled"),
    )
    for field, values, prefix, xlabel, fname, pooled in figures:
        fig, axes = plt.subplots(len(values), len(Ws), figsize=(4.0 * len(Ws), 3.0 * len(values)),
                                 squeeze=False, sharex=True)
        for i, v in enumerate(values):
            for j, W in enumerate(Ws):
                ax = axes[i][j]
                for w in windows:
                    rs = [
                        r for r in sel if r[field] == v and r["workers"] == W and r["window"] == w
                    ]
                    if not rs:
                        continue
                    # geometric mean over runs: problems differ in scale even after normalizing
                    Y = np.array([[r[f"{prefix}{k}"] for k in marks] for r in rs], dtype=float)
                    Y = np.log10(np.maximum(Y, FLOOR))
                    mean, se = mean_se(Y)
                    ax.plot(marks, 10 ** mean, label=w, lw=2 if w in ("auto-iter", "inf") else 1)
                    ax.fill_between(marks, 10 ** (mean - se), 10 ** (mean + se), alpha=0.15)
                ax.set_yscale("log")
                ax.set_title(f"W = {W}, {field} {v}", fontsize=9)
                if i == len(values) - 1:
                    ax.set_xlabel(xlabel, fontsize=8)
                if j == 0:
                    ax.set_ylabel("normalized simple regret\n(geometric mean ± se of log)",
                                  fontsize=8)
                ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"GP-UCB-SDF, noise-free, cv 1.0, {pooled}", fontsize=10)
        fig.tight_layout()
        fig.savefig(out / fname, dpi=100)
        plt.close(fig)


# --- main -------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a small grid that finishes in about a "
                                                         "minute")
    ap.add_argument("--seeds", type=int, default=None, help="runs per cell (default 20; 2 with "
                                                            "--quick)")
    ap.add_argument("--n", type=int, default=None, help="budget in trials' worth (default 100; 30 "
                                                        "with --quick)")
    ap.add_argument(
        "--processes", type=int, default=2, help="pool size (at most 2 on this machine)"
    )
    ap.add_argument(
        "--out",
        default=None,
        help="output directory (default docs/research/results/censoring_window; with --quick a "
        "temporary directory)",
    )
    ap.add_argument("--report-only", action="store_true", help="only rebuild tables and plots")
    ap.add_argument("--paper-only", action="store_true",
                    help="run only the paper's own setting (section F), not the main grid")
    ap.add_argument("--pending-only", action="store_true",
                    help="run only section G (censored feedback vs ignoring running trials)")
    args = ap.parse_args()
    seeds = args.seeds or (2 if args.quick else 20)
    n = args.n or (30 if args.quick else 100)
    default_out = "/tmp/windows_quick" if args.quick else "docs/research/results/censoring_window"
    out = Path(args.out or default_out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "runs.csv"
    processes = max(1, min(args.processes, 2))
    paper_path = out / "paper_setting.csv"
    pending_path = out / "pending_rules.csv"
    if args.pending_only and not args.report_only:
        run_all(run_one, pending_grid(seeds, n), pending_path, processes)
    elif not args.report_only:
        if not args.paper_only:
            run_all(run_one, grid(args.quick, seeds, n), path, processes)
        paper_windows = ("20", "inf") if args.quick else PAPER_WINDOWS
        run_all(run_paper, [PaperJob(w, s, 40 if args.quick else 200) for s in range(seeds)
                            for w in paper_windows], paper_path, processes)
    text = report(path, out, n)
    if paper_path.exists():
        text += "\n" + paper_report(paper_path)
    if pending_path.exists():
        text += "\n" + pending_report(pending_path, n)
    (out / "tables.md").write_text(text)
    print(text)
    print(f"wrote {out}/{{runs.csv, paper_setting.csv, tables.md, regret_vs_wallclock.png, "
          f"regret_vs_completed.png, regret_by_problem.png}}")


if __name__ == "__main__":
    main()
