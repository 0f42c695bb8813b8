"""Reproduce paper 001 Fig. 4c-d: contextual GP bandits for non-stationary BO (§6.3).

The paper tunes an SVM on 20 progressively growing datasets (Pima diabetes, which this machine
cannot download), the dataset's index z in {0, ..., 19} as the context, contexts in order, each
for 30 queries; Poisson(3) delays, m = 6; cumulative regret sum_t max_x g(z_t, x) - g(z_t, x_t).
Here: a data set scikit-learn ships (``--dataset``: breast cancer, the SVM trainable's default,
or digits), standardized and split 70/30 as ``trainables.svm`` does; the training split shuffled
once and cut into 20 growing prefixes (5 %, 10 %, ..., 100 %), the validation split fixed; the
SVM's (C, gamma) on a 20 x 20 grid (``tuner.bench.build_tables``'s cell-centred grid), one fit
per (subset, configuration): ``tuner/bench/tables/svm-growing-{dataset}.csv``, built by this
script when missing or with ``--build`` (8 000 fits: 1 min for breast cancer, 3 min for digits
on 2 processes).  A suggestion is looked up at its nearest grid point.

Methods (paper-exact settings, ``tuner.PAPER_EXACT``, m = 6, nu_t over the window as printed):
  cgp-ucb-sdf / cgp-ts-sdf    one GP on (configuration, subset index): paper 001 §5
  gp-ucb-sdf / gp-ts-sdf      one GP on the configuration, the context ignored
  restart-ucb / restart-ts    a fresh GP-UCB-SDF / GP-TS-SDF for each dataset (results of the
                              previous dataset's pending queries are dropped)
  cgp-ucb-shared / -ts-shared the contextual GP with the shared-context kernel
                              k_x (w + (1 - w) k_z) (``context_kernel: shared``, the product's
                              default; cgp-*-sdf keep the paper's product kernel)
  cgp-ucb-shared-mean         and the posterior mean at a context until its first result
                              (``new_context: mean``)
  cgp-ucb-level-mean / -ts-   and a level of each context (``context_kernel: shared-level``)
  cgp-ei-level(-mean), gp-ei-sdf  log EI on the censored GP (``algorithm: gp-ei-sdf``)
  cgp-ucb-level-mean-copula, gp-ucb-sdf-copula  the results warped by rank (``output_warp: copula``)
  cgp-ucb-level-mean-copula-matern, gp-ucb-sdf-copula-matern  and ``kernel: matern52``
  ...-copula-matern-floor     a study's defaults of 2026-11-27 (and ``noise_floor: 1e-3``)
  ...-study-nowarp            those without the rank warp (``output_warp: none``)
  ...-study                   a study's defaults as they are now (``study_optimizer_defaults``)
  ...-study-NAME              with ``--variant NAME='{"setting": value}'``: the four -study methods
                              with those settings over a study's defaults
Candidate sets are cut to 256 Sobol points + 32 local ones for every method (the same code
paths; Thompson draws on 1 152 candidates at n = 600 would take a minute per run).

    python scripts/reproduce/reproduce_contextual.py --dataset digits --runs 10 \
        # add --defaults for the product settings
        --out docs/research/results/contextual/digits
"""

from __future__ import annotations

import tuner.bench.threads  # noqa: F401,E402  (before numpy: one BLAS thread per process)

import argparse  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Mapping  # noqa: E402

import numpy as np  # noqa: E402

from tuner.bench.build_tables import grid_configs  # noqa: E402
from tuner.bench.metrics import mean_se  # noqa: E402
from tuner.bench.peers import STUDY_2026_11_26 as COPULA_MATERN  # noqa: E402
from tuner.bench.peers import STUDY_2026_11_27 as FLOOR  # noqa: E402
from tuner import PAPER_EXACT, Optimizer, Settings  # noqa: E402
from tuner.core.optimizer import Suggestion  # noqa: E402
from tuner.core.space import SearchSpace  # noqa: E402
from tuner.loop.simulator import SimClock  # noqa: E402
from tuner.study.defaults import study_optimizer_defaults  # noqa: E402

TABLES = Path(__file__).resolve().parents[2] / "tuner" / "bench" / "tables"
DATASETS = ("breast_cancer", "digits")


def table_path(dataset: str) -> Path:
    return TABLES / f"svm-growing-{dataset}.csv"


N_SUBSETS, PER_TASK, DELAY_MEAN, WINDOW = 20, 30, 3.0, 6
NO_WARP = {**FLOOR, "output_warp": "none"}
# UCB and TS, contextual (with a level of each context) and the context ignored
FOUR = (("cgp-ucb-level-mean", "gp-ucb-sdf", "context-level-mean"),
        ("gp-ucb-sdf", "gp-ucb-sdf", "ignore"),
        ("cgp-ts-level-mean", "gp-ts-sdf", "context-level-mean"),
        ("gp-ts-sdf", "gp-ts-sdf", "ignore"))
METHODS = {
    "cgp-ucb-sdf": ("gp-ucb-sdf", "context"),
    "gp-ucb-sdf": ("gp-ucb-sdf", "ignore"),
    "restart-ucb": ("gp-ucb-sdf", "restart"),
    "cgp-ts-sdf": ("gp-ts-sdf", "context"),
    "gp-ts-sdf": ("gp-ts-sdf", "ignore"),
    "restart-ts": ("gp-ts-sdf", "restart"),
    # peers: a new Optuna study per task, warm-started with add_trials of every result of
    # the earlier tasks (what Optuna's users do); not in the default --methods
    "optuna-tpe-warm": ("tpe", "optuna"),
    "optuna-gp-warm": ("gp", "optuna"),
    # the shared-context kernel k_x (w + (1 - w) k_z) (``context_kernel: shared``)
    "cgp-ucb-shared": ("gp-ucb-sdf", "context-shared"),
    "cgp-ts-shared": ("gp-ts-sdf", "context-shared"),
    # the same, with the posterior mean (no exploration) at a context until its first result
    "cgp-ucb-shared-mean": ("gp-ucb-sdf", "context-shared-mean"),
    # and a level of each context (``context_kernel: shared-level``)
    "cgp-ucb-level-mean": ("gp-ucb-sdf", "context-level-mean"),
    "cgp-ucb-level": ("gp-ucb-sdf", "context-level"),  # UCB at a new context too
    "cgp-ts-level-mean": ("gp-ts-sdf", "context-level-mean"),
    # log EI on the censored GP (``algorithm: gp-ei-sdf``): contextual with the level,
    # the posterior mean or log EI at a new context, and the context ignored
    "cgp-ei-level-mean": ("gp-ei-sdf", "context-level-mean"),
    "cgp-ei-level": ("gp-ei-sdf", "context-level"),
    "gp-ei-sdf": ("gp-ei-sdf", "ignore"),
    # the results warped by rank (``output_warp: copula``), contextual and context ignored
    "cgp-ucb-level-mean-copula": ("gp-ucb-sdf", "context-level-mean", {"output_warp": "copula"}),
    "gp-ucb-sdf-copula": ("gp-ucb-sdf", "ignore", {"output_warp": "copula"}),
    # and with the Matern kernel (a study's defaults of 2026-11-26)
    "cgp-ucb-level-mean-copula-matern": ("gp-ucb-sdf", "context-level-mean", COPULA_MATERN),
    "gp-ucb-sdf-copula-matern": ("gp-ucb-sdf", "ignore", COPULA_MATERN),
    "cgp-ts-level-mean-copula-matern": ("gp-ts-sdf", "context-level-mean", COPULA_MATERN),
    "gp-ts-sdf-copula-matern": ("gp-ts-sdf", "ignore", COPULA_MATERN),
    # and a floor on the objective GP's noise: a study's defaults of 2026-11-27
    "cgp-ucb-level-mean-copula-matern-floor": ("gp-ucb-sdf", "context-level-mean", FLOOR),
    "gp-ucb-sdf-copula-matern-floor": ("gp-ucb-sdf", "ignore", FLOOR),
    "cgp-ts-level-mean-copula-matern-floor": ("gp-ts-sdf", "context-level-mean", FLOOR),
    "gp-ts-sdf-copula-matern-floor": ("gp-ts-sdf", "ignore", FLOOR),
    # a study's defaults as they are now (``study_optimizer_defaults``: TS with a context
    # without the rank warp)
    **{
        f"{name}-study": (algorithm, kind, study_optimizer_defaults(algorithm, kind != "ignore"))
        for name, algorithm, kind in FOUR
    },
    # a study's defaults without the rank warp (Matern and the noise floor kept)
    **{f"{name}-study-nowarp": (algorithm, kind, NO_WARP) for name, algorithm, kind in FOUR},
}
PAPER_METHODS = [m for m in METHODS if not m.startswith("optuna") and "shared" not in m
                 and "level" not in m]
SETTINGS = {**PAPER_EXACT, "window": float(WINDOW), "nu_terms": "window", "beta": 1.0,
            "objective_bounds": (0.0, 1.0), "n_candidates": 256, "n_local": 32}
# --defaults: the product's default settings instead (soft censoring, the lengthscale prior...)
PRODUCT = {"window": float(WINDOW), "objective_bounds": (0.0, 1.0), "n_candidates": 256,
           "n_local": 32}


def _fit(job: tuple[str, int, float, float]) -> tuple[int, int, float, float, float]:
    """(subset, its rows, C, gamma, validation accuracy) of one SVC fit."""
    from sklearn.svm import SVC

    from trainables import data

    dataset, k, C, gamma = job
    split = data.tabular(dataset)
    order = np.random.default_rng(0).permutation(len(split.y_train))
    n = int(round(len(order) * (k + 1) / N_SUBSETS))
    X, y = split.X_train[order[:n]], split.y_train[order[:n]]
    assert len(set(y.tolist())) > 1, f"subset {k} holds one class"
    acc = SVC(kernel="rbf", C=C, gamma=gamma).fit(X, y).score(split.X_val, split.y_val)
    return k, n, C, gamma, float(acc)


def build_table(dataset: str, workers: int = 2) -> None:
    """One SVC fit per (growing subset, grid configuration): the training split shuffled once,
    subset k its first (k + 1) / 20; accuracy on the fixed validation split."""
    from multiprocessing import Pool

    from trainables.svm import SPACE

    configs = grid_configs(SearchSpace.from_dict(SPACE), (20, 20))
    jobs = [(dataset, k, c["C"], c["gamma"]) for k in range(N_SUBSETS) for c in configs]
    t0 = time.perf_counter()
    with Pool(workers) as pool:
        rows = pool.map(_fit, jobs, chunksize=20)
    path = table_path(dataset)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["subset", "n_train", "C", "gamma", "accuracy"])
        w.writerows(rows)
    print(f"{path}: {len(rows)} fits in {time.perf_counter() - t0:.0f} s")


@dataclass(frozen=True)
class Tasks:
    """A sequence of tuning tasks on one space, each with its context: ``value(k, config, rng)``
    is (what a trial observes, its noise-free value) on task k; ``best[k]`` task k's optimum."""

    space: dict[str, Any]
    context_space: dict[str, Any]
    contexts: list[dict[str, Any]]
    value: Callable[[int, Mapping[str, Any], np.random.Generator], tuple[float, float]]
    best: np.ndarray


def growing(dataset: str) -> Tasks:
    """Non-stationary BO (§6.3): the SVM on 20 growing subsets, the subset's index as context."""
    from trainables.svm import SPACE

    space = SearchSpace.from_dict(SPACE)
    with table_path(dataset).open() as fh:
        rows = list(csv.DictReader(fh))
    grid: dict[tuple[float, float], int] = {}
    acc = np.zeros((N_SUBSETS, len(rows) // N_SUBSETS))
    for r in rows:
        i = grid.setdefault((float(r["C"]), float(r["gamma"])), len(grid))
        acc[int(r["subset"]), i] = float(r["accuracy"])
    U = np.vstack([space.encode({"C": c, "gamma": g}) for c, g in grid])

    def value(k: int, config: Mapping[str, Any], rng: np.random.Generator) -> tuple[float, float]:
        i = int(np.argmin(((U - space.encode(config)) ** 2).sum(axis=1)))   # nearest grid point
        return float(acc[k, i]), float(acc[k, i])

    return Tasks(SPACE, {"subset": {"type": "int", "low": 0, "high": N_SUBSETS - 1}},
                 [{"subset": k} for k in range(N_SUBSETS)], value, acc.max(axis=1))


# Multi-task BO (§6.3): HPOBench's MLP tables as tasks, in this order, with each data set's
# meta-features as the context (OpenML's description of the data set: the tables hold none).
MLP_TASKS = {"car": (1728, 6, 4), "phoneme": (5404, 5, 2), "vehicle": (846, 18, 4),
             "australian": (690, 14, 2), "segment": (2310, 19, 7)}
META_SPACE = {"rows": {"type": "int", "low": 500, "high": 6000, "log": True},
              "features": {"type": "int", "low": 4, "high": 20},
              "classes": {"type": "int", "low": 2, "high": 8}}


def multitask() -> Tasks:
    """The five MLP tables in sequence; a trial replays one recorded run of its configuration."""
    from tuner.bench import recorded

    tables = [recorded.load(f"mlp-{name}") for name in MLP_TASKS]

    def value(k: int, config: Mapping[str, Any], rng: np.random.Generator) -> tuple[float, float]:
        table = tables[k]
        i = table.index(config)
        runs = table.scores[i][np.isfinite(table.scores[i])]
        return float(rng.choice(runs)), float(table.mean_score[i])

    return Tasks(recorded.SPACES["mlp"], META_SPACE,
                 [dict(zip(("rows", "features", "classes"), m)) for m in MLP_TASKS.values()],
                 value, np.array([float(np.nanmax(t.mean_score)) for t in tables]))


def load_tasks(setting: str) -> Tasks:
    return multitask() if setting == "multitask" else growing(setting)


def one_run(job: tuple[str, int, bool, str]) -> tuple[str, int, np.ndarray, float]:
    """One method, one seed: the instantaneous regret of each query (``PER_TASK`` per task)."""
    method, run, product, setting = job
    algorithm, kind, *extra = METHODS[method]
    tasks = load_tasks(setting)
    rng = np.random.default_rng(run)
    T = len(tasks.contexts) * PER_TASK
    delays = np.maximum(rng.poisson(DELAY_MEAN, T), 1)   # query s's result is known at s + d
    regret = np.zeros(T)
    # (arrival, trial id, value, epoch, config)
    pending: list[tuple[int, int, float, int, dict]] = []
    history: list[tuple[dict, float]] = []                  # every result delivered so far
    opt, epoch = None, -1
    t0 = time.perf_counter()
    for t in range(T):
        k = t // PER_TASK
        if opt is None or (kind in ("restart", "optuna") and t % PER_TASK == 0):
            epoch += 1
            opt = (OptunaWarm(tasks.space, algorithm, run + 1000 * k, history) if kind == "optuna"
                   else _make(tasks, algorithm, kind, run + 1000 * k, product, *extra))
        for item in [p for p in pending if p[0] <= t]:
            pending.remove(item)
            history.append((item[4], item[2]))
            if item[3] == epoch:                         # a restarted GP never sees the old ones
                opt.tell(item[1], item[2])
        s = opt.suggest(context=tasks.contexts[k]) if kind.startswith("context") else opt.suggest()
        observed, true = tasks.value(k, s.config, rng)
        regret[t] = tasks.best[k] - true
        pending.append((t + int(delays[t]), s.trial_id, observed, epoch, dict(s.config)))
    return method, run, regret, time.perf_counter() - t0


class OptunaWarm:
    """An Optuna study (TPE with the constant liar, or GPSampler) warm-started with
    ``add_trials`` of earlier results; ask/tell like the Optimizer."""

    def __init__(self, space: Mapping[str, Any], sampler: str, seed: int,
                 earlier: list[tuple[dict, float]]):
        import warnings

        import optuna

        from tuner.bench.peers import optuna_distributions

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.simplefilter("ignore")          # Optuna's experimental-feature warnings
        self.dists = optuna_distributions(space)
        s = (optuna.samplers.TPESampler(constant_liar=True, seed=seed) if sampler == "tpe"
             else optuna.samplers.GPSampler(seed=seed))
        self.study = optuna.create_study(direction="maximize", sampler=s)
        self.study.add_trials(
            [
                optuna.trial.create_trial(params=c, distributions=self.dists, value=v)
                for c, v in earlier
            ]
        )
        self.live: dict[int, Any] = {}

    def suggest(self) -> Any:
        trial = self.study.ask(self.dists)
        self.live[trial.number] = trial
        return Suggestion(trial.number, dict(trial.params))

    def tell(self, trial_id: int, value: float) -> None:
        self.study.tell(self.live.pop(trial_id), value)


def _make(tasks: Tasks, algorithm: str, kind: str, seed: int, product: bool,
          extra: Mapping[str, Any] | None = None) -> Optimizer:
    settings = {**(PRODUCT if product else SETTINGS),      # cgp-*-sdf: the paper's product kernel
                "context_kernel": ("shared-level" if kind.startswith("context-level") else
                                   "shared" if kind.startswith("context-shared") else "product"),
                "new_context": "mean" if kind.endswith("-mean") else "ucb", **(extra or {})}
    return Optimizer(tasks.space,
                     Settings.from_dict({**settings, "algorithm": algorithm, "seed": seed}),
                     clock=SimClock(),
                     context_space=tasks.context_space if kind.startswith("context") else None)


def add_variant(name: str, extra: dict) -> None:
    """``<method>-<name>`` for the four ``-study`` methods: ``extra`` over their settings."""
    for method in (f"{four}-study" for four, _, _ in FOUR):
        algorithm, kind, settings = METHODS[method]
        METHODS[f"{method}-{name}"] = (algorithm, kind, {**settings, **extra})


def main() -> None:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--variant", action="append", default=[], help="NAME=JSON settings "
                                                                    "(repeatable)")
    for spec in pre.parse_known_args()[0].variant:
        name, _, extra = spec.partition("=")
        add_variant(name, json.loads(extra))
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, parents=[pre]
    )
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--methods", nargs="*", default=PAPER_METHODS, choices=list(METHODS))
    ap.add_argument("--workers", type=int, default=2, help="processes")
    ap.add_argument("--dataset", choices=[*DATASETS, "multitask"], default="breast_cancer",
                    help="growing subsets of a data set (non-stationary), or multitask")
    ap.add_argument("--build", action="store_true", help="(re)build the lookup table first")
    ap.add_argument("--defaults", action="store_true",
                    help="the product's default settings (m = 6) instead of the paper's")
    ap.add_argument("--out", default="bench_results/contextual")
    args = ap.parse_args()
    if args.dataset != "multitask" and (args.build or not table_path(args.dataset).exists()):
        build_table(args.dataset, args.workers)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(m, r, args.defaults, args.dataset) for r in range(args.runs) for m in args.methods]
    curves: dict[str, list[np.ndarray]] = {m: [] for m in args.methods}
    regrets: dict[str, list[np.ndarray]] = {m: [] for m in args.methods}
    seconds = []
    with ProcessPoolExecutor(args.workers) as pool:
        for method, run, regret, sec in pool.map(one_run, jobs, chunksize=1):
            curves[method].append(np.cumsum(regret))
            regrets[method].append(regret)
            seconds.append(sec)
            print(
                f"{method} run {run}: cumulative regret {curves[method][-1][-1]:.2f} ({sec:.0f} s)",
                flush=True,
            )
    write_results(out, curves, args.runs, float(np.median(seconds)), args)
    write_retune(out, regrets, load_tasks(args.dataset).best)


def trials_to_target(regret: np.ndarray, best: np.ndarray, share: float = 0.99) -> np.ndarray:
    """For each task after the first: the number of queries on that task until one scored at
    least ``share`` x the task's best (noise-free value), or nan if none of its ``PER_TASK``
    did (the re-tune target: a warm start from the earlier tasks against a cold start)."""
    out = np.full(len(best) - 1, np.nan)
    for k in range(1, len(best)):
        hit = np.flatnonzero(regret[k * PER_TASK:(k + 1) * PER_TASK] <= (1 - share) * best[k])
        if hit.size:
            out[k - 1] = hit[0] + 1
    return out


def write_retune(out: Path, regrets: dict[str, list[np.ndarray]], best: np.ndarray) -> None:
    """retune.csv (method, run, task, queries to 99 % of the task's best) and retune.md."""
    rows, lines = [], ["# Re-tune: queries until 99 % of the task's best", "",
                       f"Tasks 2-{len(best)} of each run (task 1 has nothing to learn from); "
                       f"a task not reached within its {PER_TASK} queries counts as "
                       f"{PER_TASK + 1} in the median.", "",
                       "| method | reached within 30 | median queries | mean (not reached = 31) |",
                       "|---|---|---|---|"]
    for method, rs in regrets.items():
        hits = np.array([trials_to_target(r, best) for r in rs])
        for run, h in enumerate(hits):
            rows += [[method, run, k + 2, "" if np.isnan(v) else int(v)] for k, v in enumerate(h)]
        filled = np.where(np.isnan(hits), PER_TASK + 1, hits)
        lines.append(f"| {method} | {np.mean(~np.isnan(hits)):.0%} | {np.median(filled):g} | "
                     f"{filled.mean():.1f} ± {filled.std(ddof=1) / np.sqrt(filled.size):.1f} |")
    with (out / "retune.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([["method", "run", "task", "queries_to_99"], *rows])
    (out / "retune.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def write_results(out: Path, curves: dict[str, list[np.ndarray]], runs: int, median_s: float,
                  args: argparse.Namespace) -> None:
    T = len(next(iter(curves.values()))[0])
    marks = [T // 4, T // 2, 3 * T // 4, T]
    with (out / "results.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["method", "run", *[f"T={m}" for m in marks]])
        for m, cs in curves.items():
            for r, c in enumerate(cs):
                w.writerow([m, r, *[f"{c[k - 1]:.4f}" for k in marks]])
    lines = [
        "# Paper 001 Fig. 4: contextual GP bandits",
        "",
        f"Cumulative regret (mean ± s.e. over {runs} runs; "
        + ("the 5 MLP tables" if args.dataset == "multitask"
           else "20 growing subsets of " + args.dataset) +
        f" x 30 queries, Poisson(3) delays, m = 6; "
        f"{'product default' if args.defaults else 'paper-exact'} settings). Median wall time "
        f"of one run: {median_s:.0f} s.",
        "",
        "| method | " + " | ".join(f"T = {m}" for m in marks) + " |",
        "|---|" + "---|" * len(marks),
    ]
    for m, cs in curves.items():
        A = np.array(cs)
        cells = [f"{mu:.2f} ± {se:.2f}" for mu, se in (mean_se(A[:, k - 1]) for k in marks)]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # a panel per family that ran (UCB-based, TS-based); Optuna's warm starts, dashed, in each
    families = [f for f in ("ucb", "ts") if any(f in m for m in curves)] or ["ucb"]
    fig, axes = plt.subplots(1, len(families), figsize=(5 * len(families), 4), sharey=True,
                             squeeze=False)
    for ax, family in zip(axes[0], families):
        for m, cs in curves.items():
            peer = m.startswith("optuna")
            if family in m or peer:
                A = np.array(cs)
                mu, se = mean_se(A)
                x = np.arange(1, A.shape[1] + 1)
                ax.plot(x, mu, "--" if peer else "-", label=m)
                ax.fill_between(x, mu - se, mu + se, alpha=0.2)
        ax.set_xlabel("iteration t")
        ax.set_title(f"{family.upper()}-based")
        if ax.lines:
            ax.legend()
    axes[0][0].set_ylabel("cumulative regret")
    fig.tight_layout()
    fig.savefig(out / "cumulative_regret.png", dpi=120)


if __name__ == "__main__":
    main()
