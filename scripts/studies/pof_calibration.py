"""Is the budget model's probability of feasibility calibrated, near the budget's edge too?

For every suggestion the default optimizer makes on the harness's run-time-budget problems
(``tuner.bench.problems``, simulated workers), record the probability of feasibility (PoF) its
run-time model gives the suggested configuration at that moment (``Optimizer.constraint_posterior``
and ``acquisition.probability_feasible``, the pof handler's estimate) and whether that
configuration is truly feasible (its mean run time within the budget).  Binned by PoF: the share
truly feasible should match the bin's PoF.  "Near the edge": configurations whose true mean run
time is within 25 % of the budget.  The suggestions are the configurations the search chose
(PoF high by design); every 5th suggestion also probes 32 uniformly spread configurations
(``tuner.bench.problems.uniform_configs``), which cover every PoF.

    python scripts/studies/pof_calibration.py --seeds 5 --out docs/research/results/pof
"""

from __future__ import annotations

import tuner.bench.threads  # noqa: F401  (one BLAS thread)

import argparse
import csv
from pathlib import Path
from typing import Any

import numpy as np

from tuner.bench.peers import make_method
from tuner.bench.problems import get_problem, uniform_configs
from tuner.core.acquisition import probability_feasible
from tuner.loop.simulator import RunTime, simulate

PROBLEMS = ("hpo-mixed-budget", "budgeted-training", "mlp-vehicle-budget", "mlp-segment-budget",
            "fcnet-parkinsons-budget", "fcnet-naval-budget")
BINS = np.array([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0 + 1e-9])
EDGE = 0.25


class Recording:
    """The optimizer as the simulation drives it, recording each suggestion's PoF."""

    def __init__(self, opt: Any, problem: Any):
        self.opt, self.problem, self.rows, self.probes = opt, problem, [], []
        self.probe_configs = uniform_configs(problem.space, n=32, seed=11)
        self.probe_X = np.vstack([opt.space.encode(c) for c in self.probe_configs])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.opt, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "clock":
            self.opt.clock = value
        else:
            super().__setattr__(name, value)

    def suggest(self, config: Any = None) -> Any:
        s = self.opt.suggest(config)
        if s.trial_id < self.opt.n_initial:
            return s
        pof = probability_feasible(self.opt.constraint_posterior(0))
        self.rows.append(self._row(s.config, pof(self.opt.trials[s.trial_id].x[None, :])[0]))
        if len(self.rows) % 5 == 0:
            self.probes += [self._row(c, v) for c, v in zip(self.probe_configs, pof(self.probe_X))]
        return s

    def _row(self, config: Any, pof: float) -> dict[str, Any]:
        ratio = self.problem.mean_runtime(config) / self.problem.budget
        return {"pof": float(pof), "feasible": ratio <= 1.0, "ratio": ratio}


def run(problem: str, seed: int, workers: int, method: str = "tuner") -> list[dict[str, Any]]:
    p = get_problem(problem)
    rec = Recording(make_method(method, p, seed), p)
    simulate(rec, p, RunTime(p.mean_runtime, p.cv), n_trials=10 ** 6, workers=workers,
             noise_std=p.noise_std, seed=1000 + seed, time_limit=p.horizon(workers))
    return ([dict(r, problem=problem, seed=seed, kind="suggestion") for r in rec.rows]
            + [dict(r, problem=problem, seed=seed, kind="probe") for r in rec.probes])


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| PoF bin | suggestions | truly feasible | near the edge: suggestions | truly feasible |",
        "|---|---|---|---|---|",
    ]
    pof = np.array([r["pof"] for r in rows])
    feas = np.array([r["feasible"] for r in rows])
    edge = np.abs(np.array([r["ratio"] for r in rows]) - 1.0) <= EDGE
    for lo, hi in zip(BINS[:-1], BINS[1:]):
        m = (pof >= lo) & (pof < hi)
        e = m & edge
        share = f"{feas[m].mean():.2f}" if m.any() else "-"
        eshare = f"{feas[e].mean():.2f}" if e.any() else "-"
        out.append(f"| {lo:.1f}-{min(hi, 1.0):.1f} | {m.sum()} | {share} | {e.sum()} | {eshare} |")
    brier = float(np.mean((pof - feas) ** 2)) if len(pof) else float("nan")
    ebrier = float(np.mean((pof[edge] - feas[edge]) ** 2)) if edge.any() else float("nan")
    out.append(f"\nBrier score {brier:.3f} over {len(pof)} suggestions; near the edge "
               f"{ebrier:.3f} over {int(edge.sum())}.")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    ap.add_argument("--method", default="tuner", help="tuner, or an ablation variant of "
                    "tuner.bench.peers (default-linear-budget: the budget's model on the ratio)")
    ap.add_argument("--out", default="docs/research/results/pof")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for problem in args.problems:
        for seed in range(args.seeds):
            rows += run(problem, seed, args.workers, args.method)
            print(f"{problem} seed {seed}: {len(rows)} suggestions so far", flush=True)
    with (out / "suggestions.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = [
        "# Calibration of the budget model's probability of feasibility\n",
        f"`python scripts/studies/pof_calibration.py --seeds {args.seeds} --workers "
        f"{args.workers} --method {args.method}`: every suggestion after the start-up design on "
        f'{", ".join(args.problems)}, and 32 probe configurations at every 5th; "near the '
        f'edge": true mean run time within {EDGE:.0%} of the budget.\n',
    ]
    for kind in ("suggestion", "probe"):
        lines += [f"## All problems, {kind}s\n", *table([r for r in rows if r["kind"] == kind])]
    for problem in args.problems:
        for kind in ("suggestion", "probe"):
            sub = [r for r in rows if r["problem"] == problem and r["kind"] == kind]
            lines += [f"\n## {problem}, {kind}s\n", *table(sub)]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
