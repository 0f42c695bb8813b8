"""The least time to the target score any method can have on the learning-curve problems.

A target once asked for a median time to the target at most 0.5x the fastest peer's.  The time to
target counts a *full-length* run that reached the target (``tuner.bench.curves``), so no method
can beat an oracle that starts, at time 0 on every one of the W workers, the configuration that
reaches the target fastest (the least mean run time among the feasible configurations whose
final score is at or above the target; on a recorded table each worker replays one of its
recorded runs, on a simulated family its run time is drawn as the simulator draws it).  This
prints that oracle's median time to target beside the fastest peer's median and ours (from a
``tuner.bench.curves`` summary), and the ratios: where the oracle's ratio to the peer is over
0.5, no method meets the target on that (problem, W).

    python scripts/studies/ttt_floor.py [--summary docs/research/results/curves/summary.csv]
        [--ours tuner tuner-study] [--out docs/research/results/curves/ttt_floor.md]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tuner.bench.compare import read_rows  # noqa: E402
from tuner.bench.curve_peers import PEERS  # noqa: E402
from tuner.bench.curves import PROBLEMS, CurveProblem  # noqa: E402
from tuner.bench.problems import uniform_configs  # noqa: E402

DRAWS = 20_000


def within_budget(p: CurveProblem, times: np.ndarray) -> np.ndarray:
    """Run times, a run over the budget as never reaching the target (``inf``)."""
    return times if p.budget is None else np.where(times <= p.budget, times, np.inf)


def oracle_times(p: CurveProblem, workers: int, rng: np.random.Generator) -> np.ndarray:
    """``DRAWS`` times to target of the oracle (module docstring)."""
    fam = p.family
    if hasattr(fam, "configs"):                              # a recorded table
        recorded = [within_budget(p, np.array([fam.runs[(i, s)][-1][2] for s in fam.seeds[i]]))
                    for i, c in zip(fam.ids, fam.configs)
                    if fam.score(c, p.epochs) >= p.target and p.feasible(c)]
        draws = rng.choice(min(recorded, key=np.mean), size=(DRAWS, workers))
    else:                                                    # a simulated family: search densely
        configs = uniform_configs(fam.space, 2 ** 15, seed=0)
        config = min((c for c in configs if fam.score(c, p.epochs) >= p.target and p.feasible(c)),
                     key=fam.mean_run_time)
        run_time = fam.run_time()
        draws = within_budget(p, np.array([run_time(config, rng) for _ in range(DRAWS * workers)])
                              ).reshape(DRAWS, workers)
    return draws.min(axis=1)


def read_summary(path: Path) -> dict[tuple[str, int], dict[str, float]]:
    """{(problem, W): {method: median time to target}} from a ``tuner.bench.curves`` summary."""
    out: dict[tuple[str, int], dict[str, float]] = {}
    for r in read_rows(path):
        out.setdefault((r["problem"], int(r["W"])), {})[r["method"]] = float(r["time_to_target"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--summary", type=Path, default=Path("docs/research/results/curves/summary.csv")
    )
    ap.add_argument("--ours", nargs="+", default=["tuner", "tuner-study"])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    summary = read_summary(args.summary)
    rng = np.random.default_rng(args.seed)
    head = ("| problem | W | oracle (s) | fastest peer (s) | oracle / peer | "
            + " | ".join(f"{m} / peer" for m in args.ours) + " |")
    lines = [head, "|" + "---|" * (5 + len(args.ours))]
    reachable = total = 0
    for (prob, w), ttt in sorted(summary.items()):
        peers = {m: t for m, t in ttt.items() if m in PEERS and math.isfinite(t)}
        if not peers:
            continue
        fastest = min(peers.values())
        oracle = float(np.median(oracle_times(PROBLEMS[prob](), w, rng)))
        total += 1
        reachable += oracle / fastest <= 0.5
        ours = " | ".join(f"{ttt[m] / fastest:.2f}" if m in ttt else "-" for m in args.ours)
        lines.append(f"| {prob} | {w} | {oracle:.2f} | {fastest:.2f} ({min(peers, key=peers.get)}) "
                     f"| {oracle / fastest:.2f} | {ours} |")
    lines.append(f"\nThe oracle is at or under 0.5 x the fastest peer on {reachable} of {total} "
                 "(problem, W) pairs.")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(
            "# Time to target: the oracle's floor\n\n`python scripts/studies/ttt_floor.py "
            f"--out {args.out}`. The oracle starts, at time 0 on every worker, the feasible "
            "configuration that reaches the target with the least mean run time; its median time "
            f"to target over {DRAWS:,} draws is a floor for any method. Peers and ours: medians "
            f"over seeds from `{args.summary}`.\n\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
