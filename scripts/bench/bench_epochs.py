"""The built-in CNN study with runs that report every epoch (``configs/cnn-epochs.yaml``: the pace
stop and ASHA) against the same study reporting only at the end (``configs/cnn.yaml``), on one
local Ray, same seeds, MLflow on (sqlite in a temporary folder).

Per run: the best accuracy within the budget, the loop's wall time (from the first trial's
start to the last trial's end: Ray's and MLflow's start-up are left out, as they are the same
for both), how many trials finished, were stopped, went over the budget, and the worker-seconds
spent on runs that did not finish.  ``--trials`` sets the trials of both; ``--epochs-trials``
lets the reporting study run more trials (it spends less per trial); ``--rules`` runs it again
with other ``early_stopping`` rules (none, asha, curve; ``asha:auto`` or ``asha:9`` with that
grace).

    python scripts/bench/bench_epochs.py --seeds 3 --out docs/research/results/epochs
"""

from __future__ import annotations

import argparse
import io
import re
import statistics
import tempfile
from pathlib import Path

import ray

from tuner.app.wiring import study_runner
from tuner.core.persist import write_table
from tuner.core.trial import Status
from tuner.integrations.ray.executor import local_ray_config
from tuner.study.config import load_study, read_yaml
from tuner.study.progress import Progress

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def one_run(name: str, seed: int, trials: int, root: Path, rule: str | None = None) -> dict:
    data = read_yaml(CONFIGS / f"{name}.yaml")
    if rule is not None:      # "asha:auto": the rule and its grace
        name_, _, grace = rule.partition(":")
        data["early_stopping"] = {
            **data["early_stopping"],
            "rule": name_,
            **({"grace": grace if grace == "auto" else float(grace)} if grace else {}),
        }
    cfg = load_study(data, {"seed": seed, "trials": trials, "output": str(root / "runs"),
                            "tracking_uri": f"sqlite:///{root}/mlflow.db"})
    result = study_runner(cfg, progress=Progress(stream=io.StringIO())).run()
    trs = result.optimizer.trials
    start = min(tr.start_time for tr in trs)
    end = max(tr.finish_time for tr in trs if tr.finish_time is not None)
    best = result.best
    wasted = sum(tr.metrics.get("runtime", 0.0) for tr in trs if tr.status != Status.FINISHED)
    return {"study": name if rule is None else f"{name} ({rule})", "seed": seed, "trials": len(trs),
            "best": None if best is None else round(best["value"], 4),
            "loop_s": round(end - start, 2),
            "finished": sum(tr.status == Status.FINISHED for tr in trs),
            "stopped": sum(tr.status == Status.STOPPED for tr in trs),
            "timed_out": sum(tr.status == Status.TIMED_OUT for tr in trs),
            "over_budget": sum(result.optimizer.constraints[0].observed(tr) is not None
                               and result.optimizer.constraints[0].observed(tr) > 0 for tr in trs),
            "worker_s_not_finished": round(wasted, 2),
            "budget_s": round(result.optimizer.constraints[0].limit, 3),
            "learned_rung": next((m.group(1) for tr in trs for m in
                                  [re.search(r"first rung learned: ([0-9.]+)", tr.reason or "")]
                                  if m), "")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--epochs-trials", type=int, nargs="*", default=[],
                    help="also run the reporting study with these trial counts")
    ap.add_argument("--rules", nargs="*", default=[],
                    help="also run the reporting study with these early_stopping rules")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False, _system_config=local_ray_config(2))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            for name, trials, rule in [("cnn", args.trials, None),
                                       ("cnn-epochs", args.trials, None),
                                       *[("cnn-epochs", n, None) for n in args.epochs_trials],
                                       *[("cnn-epochs", args.trials, r) for r in args.rules]]:
                root = Path(tmp) / f"{name}-{trials}-{rule}-{seed}"
                rows.append({**one_run(name, seed, trials, root, rule), "trials_asked": trials})
                print(rows[-1], flush=True)
    ray.shutdown()
    lines = [
        "| study | trials | median best | best per seed | median loop time | finished | stopped "
        "| over budget | worker-s on runs not finished |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key in dict.fromkeys((r["study"], r["trials_asked"]) for r in rows):
        rs = [r for r in rows if (r["study"], r["trials_asked"]) == key]
        best = [r["best"] for r in rs if r["best"] is not None]
        lines.append(f"| {key[0]} | {key[1]} | {statistics.median(best) if best else '-'} | "
                     f"{', '.join(str(r['best']) for r in rs)} | "
                     f"{statistics.median(r['loop_s'] for r in rs):.1f} s | "
                     f"{statistics.median(r['finished'] for r in rs):g} | "
                     f"{statistics.median(r['stopped'] for r in rs):g} | "
                     f"{statistics.median(r['over_budget'] for r in rs):g} | "
                     f"{statistics.median(r['worker_s_not_finished'] for r in rs):.1f} |")
    print("\n".join(lines))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_table(out / "runs.csv", rows)
        extra = (
            f" --epochs-trials {' '.join(map(str, args.epochs_trials))}"
            if args.epochs_trials
            else ""
        )
        extra += f" --rules {' '.join(args.rules)}" if args.rules else ""
        (out / "summary.md").write_text(
            "# The built-in CNN study: reporting every epoch against reporting at the end\n\n"
            f"Command: `python scripts/bench/bench_epochs.py --seeds {args.seeds} --trials "
            f"{args.trials}{extra} --out {args.out}`\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
