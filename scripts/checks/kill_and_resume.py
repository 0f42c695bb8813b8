"""SIGKILL a study's driver again and again, `--resume` after each kill, and check that nothing
was lost or run twice: at the end the state, trials.csv and MLflow hold every trial once, and
every trial trials.csv showed before a kill kept its finish time (it was not run again).

    python scripts/checks/kill_and_resume.py --kills 30 --out /tmp/kills

Half the kills come the moment a new row reaches trials.csv (the window where a row could show
a result the state does not hold yet), half at a random moment of the run (start-up included).
Prints one line per kill and a verdict; exits 1 if anything disagrees.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

STUDY = """study: killed
trainable: synthetic
trainable_options: {{time_scale: 0.2, cv: 0.5}}
run: {{trials: {trials}, max_concurrent: 2, seed: 0}}
mlflow: {{tracking_uri: "sqlite:///{db}"}}
output: {out}
"""


def rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open() as fh:
        return [r for r in csv.DictReader(fh) if r.get("finish")]


def start(config: Path, resume: bool) -> subprocess.Popen:
    args = [sys.executable, "-m", "tuner.app.cli", "run", str(config)] + (["--resume"] * resume)
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def kill_at(proc: subprocess.Popen, table: Path, on_row: bool, rng: random.Random) -> str:
    """Kill ``proc`` (its whole process group: the driver and its MLflow writer) when a new row
    reaches ``table`` (``on_row``) or after a random 1-8 s; returns when."""
    t0, before = time.monotonic(), table.stat().st_size if table.exists() else 0
    wait = rng.uniform(1.0, 8.0)
    while proc.poll() is None:
        now = time.monotonic() - t0
        if (on_row and table.exists() and table.stat().st_size > before) or (
                not on_row and now >= wait) or now > 60:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return f"{'a new row' if on_row else 'random'} at {now:.2f} s"
        time.sleep(0.001)
    return "ended before the kill"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--trials", type=int, default=300)   # more than 30 kills finish
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    from mlflow.tracking import MlflowClient

    rng = random.Random(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    db = args.out / "mlflow.db"
    config = args.out / "study.yaml"
    config.write_text(STUDY.format(trials=args.trials, db=db, out=args.out / "runs"))
    folder = args.out / "runs" / "killed"
    table = folder / "trials.csv"
    seen: dict[str, str] = {}          # trial -> its finish time, as trials.csv showed it
    missed = 0                         # kills that came after the study had ended
    for k in range(args.kills):
        proc = start(config, resume=k > 0)
        when = kill_at(proc, table, on_row=k % 2 == 0, rng=rng)
        shown = rows(table)
        seen.update({r["trial"]: r["finish"] for r in shown})
        missed += when == "ended before the kill"
        print(f"kill {k + 1}: {when}; trials.csv has {len(shown)} rows", flush=True)
    final = subprocess.run([sys.executable, "-m", "tuner.app.cli", "run", str(config), "--resume"],
                           capture_output=True, text=True)
    state = json.loads((folder / "state.json").read_text())["optimizer"]["trials"]
    table_ids = sorted(int(r["trial"]) for r in rows(table))
    client = MlflowClient(f"sqlite:///{db}")
    exp = client.get_experiment_by_name("killed")
    runs = client.search_runs([exp.experiment_id], max_results=10_000)
    children = sorted(int(r.data.tags["trial_id"]) for r in runs
                      if "mlflow.parentRunId" in r.data.tags)
    rerun = [t for t, finish in seen.items()
             if abs(float(state[int(t)]["finish_time"]) - float(finish)) > 1e-6]
    checks = {
        f"all {args.kills} kills hit a running study": not missed,
        "the resume finished": final.returncode == 0,
        "every trial ended, in the state": ([t["status"] for t in state]
                                             == ["FINISHED"] * args.trials),
        "trials.csv holds each trial once": table_ids == list(range(args.trials)),
        "MLflow holds each trial once": children == list(range(args.trials)),
        "no trial shown before a kill ran again": not rerun,
    }
    for what, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if rerun:
        print(f"run again: {rerun}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
