"""The learning-curve benchmark: runs that report their score every epoch, stopped early by each
method's own rule, on one simulated worker pool and clock (``tuner.loop.simulator.simulate``).

    python -m tuner.bench.curves --quick                        # a few minutes
    nice -n 19 python -m tuner.bench.curves                     # docs/research/results/curves
    python -m tuner.bench.curves --report-only --out DIR        # tables and plot from runs.csv
    (also: tuner bench curves ...)

Problems (``CurveProblem``; synthetic families with run times that depend on the
configuration, ``tuner.loop.problems.CrossingCurves`` and its variants):

* ``crossing``: crossing curves (slow starters end best), 27 epochs;
* ``plateau``: the same with a third choice, ``optimizer`` in {sgd, adam}: adam learns three
  times faster and plateaus 0.04 lower; learning rates over 0.1 diverge (the curve rises, then
  falls back to chance), the hopeless runs early stopping is for;
* ``noisy``: ``crossing`` with N(0, 0.02^2) noise on every reported score;
* ``crossing-budget``: ``crossing`` with a run-time budget at the median run time of the space
  (ours learn it as a constraint and stop runs by pace; the peers do not know it);
* ``cnn-table``, ``logreg-table``, ``cnn-table-budget``: real per-epoch curves of the built-in
  CNN (80 epochs) and logistic regression (500, every 5th kept), 128 configurations x 2 seeds
  (``tuner.bench.curve_tables``; built by ``tuner.bench.build_curve_tables``); the budgeted one at
  the median run time of the table.

Per run (W workers, horizon H simulated seconds): the best *full-length* true score among runs
that finished (within the budget, on a budgeted problem) by H/4, H/2 and H; the time to a target
score (98 % of the way from the median random configuration to the best; H if never reached);
the worker-seconds spent on runs that were stopped early and on runs over the budget; trials
started.  Methods: ``tuner.bench.curve_peers``.  Rows are appended to ``runs.csv`` as runs
finish (resumable).
"""

from __future__ import annotations

import tuner.bench.threads  # noqa: F401,E402  (before numpy: one BLAS thread per process)

import math  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Mapping, Sequence  # noqa: E402

import numpy as np  # noqa: E402

from tuner.core.persist import write_table  # noqa: E402
from tuner.core.trial import Status  # noqa: E402
from tuner.loop.problems import CrossingCurves  # noqa: E402
from tuner.loop.simulator import simulate  # noqa: E402
from tuner.loop.stopping import Fidelity  # noqa: E402

from .compare import harness_args, parse_deadline, read_rows, run_all  # noqa: E402
from .curve_peers import METHODS, available, make, worker_seconds  # noqa: E402
from .problems import uniform_configs  # noqa: E402

KEY = ("problem", "workers", "method", "seed")
# Two medians this close are a tie: far below one validation example of the real tables (1/540
# of digits, 1/114 of breast cancer), above the 5e-6 by which two medians of the same recorded
# accuracy can differ (a median of two stored values, each rounded apart).
TIE = 1e-4
FRACTIONS = (0.25, 0.5, 1.0)
# the target score: this share of the way from the median configuration's final score to the
# best's (0.9 let the first wave of random runs decide it)
TARGET_SHARE = 0.98


class PlateauCurves(CrossingCurves):
    """``CrossingCurves`` plus ``optimizer`` (sgd, adam) and diverging large learning rates
    (module docstring)."""

    space = {**CrossingCurves.space,
             "optimizer": {"type": "categorical", "choices": ["sgd", "adam"]}}

    def score(self, config: Mapping[str, Any], t: float) -> float:
        adam = config.get("optimizer") == "adam"
        y = super().score(config, min(3.0 * t, self.epochs) if adam else t)
        y -= 0.04 * adam * min(3.0 * t / self.epochs, 1.0)
        if float(config["lr"]) > 0.1:        # diverges after a few epochs, back to chance
            fall = min(max(t - 3.0, 0.0) / 4.0, 1.0)
            y = (1 - fall) * y + fall * 0.1
        return float(y)


@dataclass
class CurveProblem:
    """A learning-curve problem: the family, its noise, an optional run-time budget."""

    name: str
    family: CrossingCurves
    noise_std: float = 0.0
    budgeted: bool = False
    rounds: float = 12.0            # horizon at W = 4, in mean run times (half of it at W = 16)

    def __post_init__(self) -> None:
        configs = getattr(self.family, "configs", None) or uniform_configs(self.family.space, 2048,
                                                                           seed=0)
        self.space = self.family.space
        self.epochs = self.family.epochs
        finals = np.array([self.family.score(c, self.epochs) for c in configs])
        times = np.array([self.family.mean_run_time(c) for c in configs])
        self.mean_runtime = float(times.mean())
        self.budget = float(np.median(times)) if self.budgeted else None
        ok = times <= self.budget if self.budget is not None else np.ones(len(times), bool)
        self.f_opt = float(self._best(ok, configs, finals))
        self.target = float(np.median(finals) + TARGET_SHARE * (self.f_opt - np.median(finals)))
        self.constraint = (None if self.budget is None else
                           {"metric": "runtime", "limit": self.budget, "type": "budget",
                            "runtime": True})

    def _best(self, ok: np.ndarray, configs: list, finals: np.ndarray) -> float:
        """The best feasible final score: the sample's best, refined on a grid of lr (a
        synthetic family)."""
        best = float(finals[ok].max())
        if hasattr(self.family, "configs"):        # a table: every configuration is in it
            return best
        for c in np.array(configs, dtype=object)[ok][np.argsort(-finals[ok])[:20]]:
            for lr in np.geomspace(1e-4, 1.0, 400):
                best = max(best, self.family.score({**c, "lr": float(lr)}, self.epochs))
        return best

    def feasible(self, config: Mapping[str, Any]) -> bool:
        return self.budget is None or self.family.mean_run_time(config) <= self.budget

    def horizon(self, workers: int) -> float:
        return self.rounds * self.mean_runtime * (1.0 if workers <= 4 else 0.5)


def _table(name: str, budgeted: bool = False) -> CurveProblem:
    from .curve_tables import CurveTable

    return CurveProblem(f"{name}-table" + ("-budget" if budgeted else ""), CurveTable(name),
                        budgeted=budgeted)


PROBLEMS = {
    "crossing": lambda: CurveProblem("crossing", CrossingCurves(epochs=27)),
    "plateau": lambda: CurveProblem("plateau", PlateauCurves(epochs=27)),
    "noisy": lambda: CurveProblem("noisy", CrossingCurves(epochs=27), noise_std=0.02),
    "crossing-budget": lambda: CurveProblem("crossing-budget", CrossingCurves(epochs=27),
                                            budgeted=True),
    # real curves (tuner.bench.build_curve_tables): the built-in CNN and logistic regression
    "cnn-table": lambda: _table("cnn"),
    "logreg-table": lambda: _table("logreg"),
    "cnn-table-budget": lambda: _table("cnn", budgeted=True),
}
TABLE_PROBLEMS = ("cnn-table", "logreg-table", "cnn-table-budget")


def one_run(problem: str, workers: int, method: str, seed: int,
            rounds: float | None = None,
            overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Simulate one (problem, W, method, seed); the CSV row.  ``rounds``: a shorter horizon;
    ``overrides``: optimizer settings over a study's defaults, for the ``tuner-study*`` methods
    (a candidate default: ``tuner.bench.no_regression``)."""
    p = PROBLEMS[problem]()
    if rounds is not None:
        p.rounds = rounds
    horizon = p.horizon(workers)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        searcher, rules = make(method, p, seed, overrides)
        res = simulate(searcher, p.family, p.family.run_time(), n_trials=10 ** 6, workers=workers,
                       noise_std=p.noise_std, seed=1000 + seed, time_limit=horizon,
                       fidelity=Fidelity("epoch", p.epochs), stopping=rules)
    finals = np.array([p.family.score(c, p.epochs) for c in res.configs])
    feasible = np.array([p.feasible(c) for c in res.configs], dtype=bool)
    planned = np.array([m["runtime"] for m in res.metrics_true])
    full = (res.status == Status.FINISHED) & feasible
    if p.budget is not None:
        full &= planned <= p.budget
    stopped = (res.status == Status.STOPPED) | (res.status == Status.TIMED_OUT)
    over = planned > p.budget if p.budget is not None else np.zeros(len(planned), bool)
    row: dict[str, Any] = {"problem": problem, "workers": workers, "method": method, "seed": seed,
                           "horizon": round(horizon, 3), "f_opt": p.f_opt, "target": p.target,
                           "trials": len(res.configs), "finished": int(full.sum()),
                           "stopped": int(stopped.sum())}
    for q in FRACTIONS:
        ok = full & (res.finish <= q * horizon)
        row[f"best_{q:g}"] = float(finals[ok].max()) if ok.any() else math.nan
    hit = full & (finals >= p.target)
    # a run that never reaches the target counts as the horizon
    row["time_to_target"] = float(res.finish[hit].min()) if hit.any() else horizon
    row["stopped_seconds"] = worker_seconds(res.start, res.finish, stopped, horizon)
    row["over_budget_seconds"] = worker_seconds(res.start, res.finish, over, horizon)
    row["worker_seconds"] = worker_seconds(res.start, res.finish, np.ones(len(planned), bool),
                                           horizon)
    row["run_seconds"] = round(time.perf_counter() - t0, 2)
    return row


def summarize(rows: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Medians over seeds per (problem, W, method), and where each method ranks."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["problem"], int(r["workers"]), r["method"]), []).append(r)
    table = []
    for (prob, w, m), rs in sorted(groups.items()):
        med = {k: float(np.median([float(r[k]) if r[k] not in ("", "nan") else -math.inf
                                   for r in rs]))
               for k in ("best_0.25", "best_0.5", "best_1", "time_to_target", "stopped_seconds",
                         "over_budget_seconds", "trials")}
        table.append({"problem": prob, "W": w, "method": m, "seeds": len(rs), **med})
    lines = []
    for prob, w in dict.fromkeys((t["problem"], t["W"]) for t in table):
        sub = [t for t in table if (t["problem"], t["W"]) == (prob, w)]
        best = {k: max(t[k] for t in sub) for k in ("best_0.25", "best_1")}
        fastest = min(t["time_to_target"] for t in sub)
        lines += [
            f"\n### {prob}, W = {w} (medians over seeds)\n",
            "| method | best by H/4 | H/2 | H | time to target (s) | worker-s on stopped runs "
            "| worker-s over budget | trials | seeds |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for t in sorted(sub, key=lambda t: -t["best_0.25"]):
            mark = {k: "**" if t[k] >= best[k] - TIE else "" for k in best}
            ttt = "-" if math.isinf(t["time_to_target"]) else f"{t['time_to_target']:.1f}"
            if t["time_to_target"] <= fastest + 1e-9 and ttt != "-":
                ttt = f"**{ttt}**"
            lines.append(
                f"| {t['method']} | {mark['best_0.25']}{t['best_0.25']:.4f}{mark['best_0.25']} "
                f"| {t['best_0.5']:.4f} | {mark['best_1']}{t['best_1']:.4f}{mark['best_1']} "
                f"| {ttt} | {t['stopped_seconds']:.0f} | {t['over_budget_seconds']:.0f} "
                f"| {t['trials']:.0f} | {t['seeds']} |"
            )
    return "\n".join(lines) + "\n" + scoreboard(table), table


def scoreboard(table: list[dict[str, Any]]) -> str:
    """Per method of ours: on how many (problem, W) its median best by H/4 and by H is at least
    every peer's (and within 0.002 of it), and its median time to target over the fastest
    peer's."""
    from .curve_peers import OURS, PEERS

    keys = list(dict.fromkeys((t["problem"], t["W"]) for t in table))
    lines = ["\n### Against every peer\n",
             "| ours | best or tied by H/4 | within 0.002 by H/4 | best or tied by H | "
             "time to target / fastest peer's (median over problems) |", "|---|---|---|---|---|"]
    for m in OURS:
        h4 = hh = near = 0
        ratios, n = [], 0
        for k in keys:
            sub = {t["method"]: t for t in table if (t["problem"], t["W"]) == k}
            peers = [sub[p] for p in PEERS if p in sub]
            if m not in sub or not peers:
                continue
            n += 1
            h4 += sub[m]["best_0.25"] >= max(p["best_0.25"] for p in peers) - TIE
            near += sub[m]["best_0.25"] >= max(p["best_0.25"] for p in peers) - 0.002
            hh += sub[m]["best_1"] >= max(p["best_1"] for p in peers) - TIE
            fastest = min(p["time_to_target"] for p in peers)
            ratios.append(
                sub[m]["time_to_target"] / fastest if math.isfinite(fastest) else math.nan
            )
        if n:
            ratio = float(np.nanmedian(ratios)) if not all(map(math.isnan, ratios)) else math.nan
            lines.append(f"| {m} | {h4}/{n} | {near}/{n} | {hh}/{n} | {ratio:.2f} |")
    return "\n".join(lines) + "\n"


def write_report(out: Path) -> str:
    rows = read_rows(out / "runs.csv")
    text, table = summarize(rows)
    write_table(out / "summary.csv", table)
    head = (
        "# Learning-curve benchmark\n\nBest full-length score by H/4, H/2 and H (bold: best "
        "or tied), median time to the target score (bold: fastest), worker-seconds on runs "
        "stopped early and on runs over the budget. Command and problems: "
        "`tuner/bench/curves.py`.\n"
    )
    (out / "tables.md").write_text(head + text)
    _plot(rows, out)
    return head + text


def _plot(rows: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({(r["problem"], int(r["workers"])) for r in rows})
    if not keys:
        return
    cols = min(4, len(keys))
    rows_n = -(-len(keys) // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.0 * cols, 3.3 * rows_n), squeeze=False)
    for ax in axes.flat[len(keys):]:
        ax.set_visible(False)
    for ax, (prob, w) in zip(axes.flat, keys):
        sub = [r for r in rows if r["problem"] == prob and int(r["workers"]) == w]
        present = {r["method"] for r in sub}
        for k, m in enumerate(METHODS):           # one colour per method in every panel
            if m not in present:
                continue
            ys = [
                np.median(
                    [
                        float(r[f"best_{q:g}"]) if r[f"best_{q:g}"] not in ("", "nan") else np.nan
                        for r in sub
                        if r["method"] == m
                    ]
                )
                for q in FRACTIONS
            ]
            ax.plot(FRACTIONS, ys, marker="o", lw=2.4 if m.startswith("tuner") else 1.0,
                    color=plt.get_cmap("tab20")((2 * k) % 20 + (2 * k) // 20), label=m)
        ax.set_title(f"{prob}, W = {w}", fontsize=9)
        ax.set_xlabel("fraction of the horizon", fontsize=8)
        lo = np.nanmin([np.median([float(r["best_1"]) for r in sub if r["method"] == m])
                        for m in dict.fromkeys(r["method"] for r in sub)])
        ax.set_ylim(max(lo, float(np.nanmax([float(r["best_1"]) for r in sub])) - 0.08), None)
    for ax in axes[:, 0]:
        ax.set_ylabel("best full-length score (median)", fontsize=8)
    axes.flat[0].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "best_vs_time.png", dpi=100)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> Path:
    args, out = harness_args(argv, __doc__, "2 problems, W = 4, 2 seeds", "curves",
                             problems=list(PROBLEMS), methods=list(METHODS))
    if not args.report_only:
        problems = args.problems or (["crossing", "plateau"] if args.quick else list(PROBLEMS))
        methods = [m for m in (args.methods or METHODS) if available(m) or
                   print(f"note: skipping {m}: its package is not installed")]
        workers = args.workers or ([4] if args.quick else [4, 16])
        seeds = args.seeds or (2 if args.quick else 10)
        jobs = [
            (p, w, m, s) for s in range(seeds) for w in workers for p in problems for m in methods
        ]
        print(f"{len(jobs)} runs -> {out}", flush=True)
        run_all(jobs, out / "runs.csv", parse_deadline(args.deadline), run=one_run)
    print(write_report(out))
    print(f"results: {out}")
    return out


if __name__ == "__main__":
    main()
