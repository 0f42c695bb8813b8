"""Cost of logging a trial to MLflow with ``StudyTracker``, against the peer a user would write
instead: MLflow's fluent API (``mlflow.start_run(nested=True)`` + ``log_params`` +
``log_metrics`` + ``set_tags``), measured in the same run on the same store.

Stores: a local sqlite file, and a real ``mlflow server`` (sqlite backend) on localhost.  With
the server, also what a trial costs while the server is down (buffered to the spool) and what
sending the buffer costs once it is back.

    nice -n 10 python scripts/bench/bench_tracking.py [--trials 50] [--rounds 3] [--out \
        docs/research/results/tracking.json]

Seconds per trial = one child run (params, 4 metrics, tags, status) + one progress step of the
parent; medians over ``rounds`` turns of tracker and peer.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import mlflow
from mlflow.tracking import MlflowClient

from tuner.integrations.mlflow.tracking import StudyTracker, TrialRecord


def trial(tid: int) -> TrialRecord:
    now = time.time()
    return TrialRecord(tid, {"C": 10.0 ** (-tid % 5), "gamma": 0.1 * tid, "kernel": "rbf"},
                       "FINISHED", {"accuracy": 0.9, "runtime": 1.5, "train_time": 1.2,
                                    "g_runtime": -0.4},
                       {"pending_at_suggest": "1", "node": "node-a"}, now - 1.5, now)


def progress(tid: int) -> dict[str, float]:
    return {"best_so_far": 0.9, "finished": tid + 1, "failed": 0, "utilization": 0.95}


def bench_tracker(uri: str, spool: Path, n: int, experiment: str) -> tuple[float, StudyTracker]:
    tracker = StudyTracker(uri, experiment, spool, retries=1, backoff=0.05, probe_interval=1.0)
    tracker.start({"algorithm": "gp-ucb-sdf", "max_concurrent": 2})
    t = time.perf_counter()
    for tid in range(n):
        tracker.log_trial(trial(tid))
        tracker.log_progress(tid + 1, progress(tid))
    return (time.perf_counter() - t) / n, tracker


def bench_fluent(uri: str, n: int, experiment: str) -> float:
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    with mlflow.start_run(run_name=experiment):
        mlflow.log_params({"algorithm": "gp-ucb-sdf", "max_concurrent": 2})
        t = time.perf_counter()
        for tid in range(n):
            rec = trial(tid)
            with mlflow.start_run(run_name=f"trial-{tid:04d}", nested=True):
                mlflow.log_params(rec.params)
                mlflow.log_metrics(rec.metrics)
                mlflow.set_tags({**rec.tags, "trial_id": tid, "status": rec.status})
            mlflow.log_metrics(progress(tid), step=tid + 1)
        return (time.perf_counter() - t) / n


def alternate(uri: str, root: Path, n: int, rounds: int, tag: str) -> tuple[float, float]:
    """Median seconds per trial of the tracker and of the fluent API, run in turns."""
    ours, peer = [], []
    for r in range(rounds):
        ours.append(bench_tracker(uri, root / f"spool-{tag}-{r}", n, f"tracker-{tag}-{r}")[0])
        peer.append(bench_fluent(uri, n, f"fluent-{tag}-{r}"))
    return statistics.median(ours), statistics.median(peer)


def start_server(root: Path, port: int, db: Path) -> subprocess.Popen:
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1",
                             "--port", str(port), "--workers", "1", "--backend-store-uri",
                             f"sqlite:///{db}", "--artifacts-destination", str(root / "artifacts")],
                            cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(root / "server.err", "a"), start_new_session=True)
    for _ in range(1200):
        if proc.poll() is not None:
            raise RuntimeError((root / "server.err").read_text())
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                return proc
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("mlflow server did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3, help="turns of tracker vs fluent API")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    n, rounds, out = args.trials, args.rounds, args.out.resolve() if args.out else None
    root = Path(tempfile.mkdtemp(prefix="bench_tracking_"))
    os.chdir(root)                                    # the sqlite store's ./mlruns
    db = root / "mlflow.db"
    MlflowClient(f"sqlite:///{db}").search_experiments()   # create the tables first
    res: dict[str, float] = {}

    uri = f"sqlite:///{db}"
    res["sqlite_tracker_s"], res["sqlite_fluent_s"] = alternate(uri, root, n, rounds, "sqlite")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = start_server(root, port, db)
    try:
        uri = f"http://127.0.0.1:{port}"
        res["server_tracker_s"], res["server_fluent_s"] = alternate(uri, root, n, rounds, "server")
        _, tracker = bench_tracker(uri, root / "spool-down", n, "tracker-down")
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        t = time.perf_counter()
        tracker.log_trial(trial(n))                   # the first failure: retries, then spool
        res["server_down_first_trial_s"] = time.perf_counter() - t
        t = time.perf_counter()
        for tid in range(n + 1, 2 * n + 1):
            tracker.log_trial(trial(tid))
            tracker.log_progress(tid + 1, progress(tid))
        res["server_down_tracker_s"] = (time.perf_counter() - t) / n
        buffered = tracker.unlogged
        server = start_server(root, port, db)
        t = time.perf_counter()
        left = tracker.flush()
        res["flush_per_buffered_item_s"] = (time.perf_counter() - t) / buffered
        res["buffered_items"], res["left_after_flush"] = buffered, left
    finally:
        os.killpg(server.pid, signal.SIGKILL)
    res["sqlite_ratio_tracker_over_fluent"] = res["sqlite_tracker_s"] / res["sqlite_fluent_s"]
    res["server_ratio_tracker_over_fluent"] = res["server_tracker_s"] / res["server_fluent_s"]
    res["trials"], res["rounds"] = n, rounds
    for k, v in res.items():
        print(f"{k:36s} {v:.4f}" if isinstance(v, float) else f"{k:36s} {v}")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
