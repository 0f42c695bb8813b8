"""The MLflow writer process (TrackerProcess) against a real sqlite store: what the driver hands
over is logged in order, warnings reach the driver's loggers, and a writer whose driver died
stops instead of racing a resumed study."""

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from mlflow.tracking import MlflowClient

from tuner.study.record import TrialRecord
from tuner.integrations.mlflow.writer import TrackerProcess
from stores import sqlite_store

pytestmark = pytest.mark.slow


def record(tid: int) -> TrialRecord:
    t = time.time()
    return TrialRecord(tid, {"x": tid / 10}, "FINISHED", {"score": float(tid)}, {"node": "n"}, t,
                       t + 1)


def test_trials_handed_over_are_all_logged_once_in_order(tmp_path):
    uri = sqlite_store(tmp_path)
    writer = TrackerProcess(uri, "exp", tmp_path / "spool", run_name="study")
    try:
        run_id = writer.start({"algorithm": "random"})
        for tid in range(30):
            writer.log_trial(record(tid))
        assert writer.finish() == 0 and writer.behind == 0
        assert writer.logged_trial_ids() == set(range(30))
    finally:
        writer.close()
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("exp").experiment_id], max_results=100)
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == run_id]
    assert sorted(int(r.data.tags["trial_id"]) for r in children) == list(range(30))
    assert all(r.data.metrics["score"] == float(r.data.tags["trial_id"]) for r in children)
    assert client.get_run(run_id).info.status == "FINISHED"


def test_the_writers_warnings_reach_the_drivers_loggers(tmp_path, caplog):
    # nothing listens on port 9: every call fails, the tracker spools and warns
    writer = TrackerProcess("http://127.0.0.1:9", "exp", tmp_path / "spool")
    try:
        with caplog.at_level(logging.WARNING, logger="tuner"):
            assert writer.start({"a": 1}).startswith("pending:")
            writer.log_trial(record(0))
            assert writer.finish() >= 2                      # the start and the trial, kept
    finally:
        writer.close()
    assert any("not reachable" in r.getMessage() and r.name.startswith("tuner.integrations.mlflow")
               for r in caplog.records)
    assert (tmp_path / "spool" / "mlflow_spool.jsonl").exists()


def test_a_writer_whose_driver_was_killed_stops(tmp_path):
    driver = textwrap.dedent(f"""
        import os, sys, time
        from tuner.integrations.mlflow.writer import TrackerProcess
        w = TrackerProcess("{sqlite_store(tmp_path)}", "exp", "{tmp_path}/spool")
        w.start({{"a": 1}})
        print(w._proc.pid, flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", driver], stdout=subprocess.PIPE, text=True)
    child = int(p.stdout.readline())
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)              # still there?
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)         # the test started it (through its driver)
    pytest.fail("the writer process outlived its driver by 20 s")
