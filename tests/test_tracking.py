"""StudyTracker against real MLflow: a sqlite store, and a real `mlflow server` that is killed
and restarted mid-study.  Each trial must end up as exactly one child run, nothing lost."""

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mlflow_server import Server, free_port
from tuner.study.plots import RUNTIME_PNG, SCORE_PNG, best_so_far, study_plots
from tuner.integrations.mlflow.tracking import PENDING, StudyTracker, TrialRecord
from stores import sqlite_store

pytestmark = pytest.mark.slow      # real MLflow / Ray processes: `pytest -m "not slow"` skips them

STATUSES = ["FINISHED", "FAILED", "KILLED", "TIMED_OUT"]
T0 = 1_700_000_000.0


def record(tid: int, accuracy: float | None = None) -> TrialRecord:
    status = STATUSES[tid % 4]
    metrics = {"runtime": 1.0 + tid / 4, "g_runtime": (1.0 + tid / 4) / 2.5 - 1}
    if status == "FINISHED":
        metrics["accuracy"] = 0.5 + tid / 100 if accuracy is None else accuracy
    return TrialRecord(tid, {"C": 10.0 ** -tid, "kernel": "rbf", "batch_size": 32 + tid}, status,
                       metrics, {"pending_at_suggest": str(tid % 2), "node": "node-a",
                                 **({"reason": "boom"} if status != "FINISHED" else {})},
                       T0 + 10 * tid, T0 + 10 * tid + metrics["runtime"])


def children(client: MlflowClient, parent: str) -> dict[int, list]:
    exp = client.get_run(parent).info.experiment_id
    by_trial: dict[int, list] = {}
    for run in client.search_runs(
        [exp], f"tags.`mlflow.parentRunId` = '{parent}'", max_results=1000
    ):
        by_trial.setdefault(int(run.data.tags["trial_id"]), []).append(run)
    return by_trial


def assert_logged_once(client: MlflowClient, parent: str, trial_ids) -> None:
    """Every trial exactly once under ``parent``, with its params, metrics, tags, status, times."""
    runs = children(client, parent)
    assert sorted(runs) == sorted(trial_ids)
    for tid, found in runs.items():
        assert len(found) == 1, f"trial {tid} logged {len(found)} times"
        run, rec = found[0], record(tid)
        assert run.info.run_name == f"trial-{tid:04d}"
        assert run.info.status == ("KILLED" if rec.status == "TIMED_OUT" else rec.status)
        assert run.data.tags["status"] == rec.status
        assert run.data.tags["pending_at_suggest"] == rec.tags["pending_at_suggest"]
        assert run.data.tags["node"] == "node-a"
        assert run.data.params == {k: str(v) for k, v in rec.params.items()}
        assert run.data.metrics == pytest.approx(rec.metrics)
        assert (run.info.start_time, run.info.end_time) == (round(rec.start_time * 1000),
                                                            round(rec.end_time * 1000))


@pytest.fixture(scope="module")
def sqlite_uri(tmp_path_factory):
    """One sqlite store for the module; artifacts go to MLflow's default ./mlruns, so the
    module runs inside its temporary folder."""
    root = tmp_path_factory.mktemp("mlflow")
    uri = sqlite_store(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        yield uri


def test_parent_and_one_child_per_trial_then_resume(sqlite_uri, tmp_path):
    space = {f"x{i}": {"type": "float", "low": 0, "high": 1} for i in range(200)}
    params = {"algorithm": "gp-ucb-sdf", "max_concurrent": 2, "trials": 6, "budget_limit": 2.5,
              "space": json.dumps(space)}            # > 6000 characters: truncated + artifact
    tracker = StudyTracker(sqlite_uri, "study-a", tmp_path / "study", run_name="study-a")
    run_id = tracker.start(params, {"study": "study-a"})
    assert not run_id.startswith(PENDING) and tracker.run_id == run_id
    for tid in range(6):
        tracker.log_trial(record(tid))
        tracker.log_progress(tid + 1, {"best_so_far": 0.5 + tid / 100, "utilization": 0.9,
                                       "nothing_yet": float("nan")}, timestamp=T0 + 10 * tid)
    tracker.log_trial(record(0, accuracy=0.0))        # a second call for a trial: no effect
    inf = record(7)
    inf.metrics["accuracy"] = float("inf")            # not a number MLflow should chart
    tracker.log_trial(inf)
    table = tmp_path / "trials.csv"
    table.write_text("trial,status\n0,FINISHED\n")
    tracker.log_artifacts([table])
    tracker.log_dict({"space": space}, "config.json")
    assert tracker.logged_trial_ids() == {0, 1, 2, 3, 4, 5, 7}
    assert tracker.finish() == 0 and tracker.unlogged == 0
    assert not (tmp_path / "study" / "mlflow_spool.jsonl").exists()

    client = MlflowClient(sqlite_uri)
    parent = client.get_run(run_id)
    assert parent.info.status == "FINISHED" and parent.info.run_name == "study-a"
    assert client.get_experiment(parent.info.experiment_id).name == "study-a"
    assert parent.data.params["algorithm"] == "gp-ucb-sdf" and parent.data.params["trials"] == "6"
    assert len(parent.data.params["space"]) == 6000 and "truncated" in parent.data.params["space"]
    history = client.get_metric_history(run_id, "best_so_far")
    assert [(m.step, m.value, m.timestamp) for m in history] == [
        (t + 1, pytest.approx(0.5 + t / 100), round((T0 + 10 * t) * 1000)) for t in range(6)]
    assert (
        "nothing_yet" not in parent.data.metrics
        and "nothing_yet" in parent.data.tags["skipped_metrics"]
    )
    assert {a.path for a in client.list_artifacts(run_id)} == {"trials.csv", "config.json",
                                                              "params_full.json"}
    full = json.loads(
        Path(client.download_artifacts(run_id, "params_full.json", str(tmp_path))).read_text()
    )
    assert json.loads(full["space"]) == space
    inf_trial = children(client, run_id)[7][0]
    assert (
        "accuracy" not in inf_trial.data.metrics
        and inf_trial.data.tags["skipped_metrics"] == "accuracy=inf"
    )
    assert_logged_once(client, run_id, [0, 1, 2, 3, 4, 5, 7])

    # The study stopped; a new session (a new tracker on the same folder) resumes the parent.
    resumed = StudyTracker(sqlite_uri, "study-a", tmp_path / "study", run_name="study-a")
    assert (
        resumed.start({**params, "trials": 10, "wall_clock_limit": 60}, resume_run_id=run_id)
        == run_id
    )
    assert client.get_run(run_id).info.status == "RUNNING"
    assert resumed.logged_trial_ids() == {0, 1, 2, 3, 4, 5, 7}
    for tid in range(10):
        resumed.log_trial(record(tid))
    assert resumed.finish("KILLED") == 0
    parent = client.get_run(run_id)
    assert parent.info.status == "KILLED"
    assert parent.data.params["trials"] == "6" and parent.data.tags["resumed.trials"] == "10"
    assert parent.data.params["wall_clock_limit"] == "60"
    assert_logged_once(client, run_id, range(10))


def test_a_child_cut_off_mid_logging_is_completed_not_duplicated(sqlite_uri, tmp_path):
    tracker = StudyTracker(sqlite_uri, "study-b", tmp_path)
    run_id = tracker.start({"algorithm": "gp-ts-sdf"})
    tracker.log_trial(record(0))
    # A crash after the child run was created and before it was completed leaves it RUNNING.
    client = MlflowClient(sqlite_uri)
    exp = client.get_run(run_id).info.experiment_id
    partial = client.create_run(exp, start_time=round(record(1).start_time * 1000),
                                run_name="trial-0001",
                                tags={"mlflow.parentRunId": run_id, "trial_id": "1"}).info.run_id
    resumed = StudyTracker(sqlite_uri, "study-b", tmp_path)
    resumed.start({"algorithm": "gp-ts-sdf"}, resume_run_id=run_id)
    assert resumed.logged_trial_ids() == {0}
    resumed.log_trial(record(0))
    resumed.log_trial(record(1))
    assert resumed.finish() == 0
    assert_logged_once(client, run_id, [0, 1])
    assert children(client, run_id)[1][0].info.run_id == partial


def test_store_unreachable_at_start_then_replayed_by_the_resumed_study(
    sqlite_uri, tmp_path, caplog
):
    """The store's folder is missing when the study starts (think: a network mount that is not
    up): the study starts anyway, everything is spooled, the process dies; the resumed study on
    the same folder sends it all, once, even when the replay itself is repeated."""
    store_dir = tmp_path / "mount"
    store_dir.write_text("not mounted")               # MLflow cannot create its database here
    uri = f"sqlite:///{store_dir / Path(sqlite_uri[len('sqlite:///'):]).name}"
    spool = tmp_path / "study"
    caplog.set_level(logging.WARNING, logger="tuner.integrations.mlflow.tracking")
    tracker = StudyTracker(uri, "study-c", spool, retries=1, backoff=0.01)
    pending = tracker.start({"algorithm": "gp-ucb-sdf"})
    assert pending.startswith(PENDING)
    for tid in range(4):
        tracker.log_trial(record(tid))
        tracker.log_progress(tid + 1, {"best_so_far": 0.5})
    tracker.log_dict({"a": 1}, "config.json")
    assert tracker.flush() == tracker.unlogged == 10
    assert sum("not reachable" in r.message for r in caplog.records) == 1
    del tracker                                        # killed without finish()

    store_dir.unlink()                                 # the mount comes back
    store_dir.symlink_to(Path(sqlite_uri[len("sqlite:///"):]).parent)
    kept = {
        name: (spool / name).read_text() for name in ("mlflow_spool.jsonl", "mlflow_tracker.json")
    }
    resumed = StudyTracker(uri, "study-c", spool)
    run_id = resumed.start({"algorithm": "gp-ucb-sdf"}, resume_run_id=pending)
    assert not run_id.startswith(PENDING) and resumed.unlogged == 0
    assert resumed.logged_trial_ids() == {0, 1, 2, 3}
    for tid in range(6):
        resumed.log_trial(record(tid))
    assert resumed.finish() == 0

    # A crash in the middle of that replay, even before the new parent's id was saved, sends
    # everything again: still one parent, one run per trial.
    for name, text in kept.items():
        (spool / name).write_text(text)
    again = StudyTracker(uri, "study-c", spool)
    assert again.start({"algorithm": "gp-ucb-sdf"}, resume_run_id=pending) == run_id
    assert again.finish() == 0
    client = MlflowClient(sqlite_uri)
    assert_logged_once(client, run_id, range(6))
    exp = client.get_run(run_id).info.experiment_id
    assert len(client.search_runs([exp])) == 7        # one parent, six children
    assert len(client.get_metric_history(run_id, "best_so_far")) == 4
    assert client.get_run(run_id).info.status == "FINISHED"


# --- a real tracking server, killed and restarted ----------------------------------------------

def test_server_killed_mid_study_nothing_lost(sqlite_uri, tmp_path, caplog, capsys):
    # The module's store (its tables exist already, which saves the server seconds at start).
    server = Server(tmp_path, free_port(), Path(sqlite_uri[len("sqlite:///"):]))
    caplog.set_level(logging.WARNING, logger="tuner.integrations.mlflow.tracking")
    server.start()
    try:
        tracker = StudyTracker(server.uri, "study-d", tmp_path / "study", retries=1,
                               backoff=0.05, probe_interval=0.2)
        run_id = tracker.start({"algorithm": "gp-ucb-sdf", "max_concurrent": 2})
        for tid in range(4):
            tracker.log_trial(record(tid))
            tracker.log_progress(tid + 1, {"best_so_far": 0.5 + tid / 100})
        assert tracker.unlogged == 0

        server.kill()
        plot_dir = tmp_path / "plots"
        for tid in range(4, 8):                       # no exception, the study goes on
            tracker.log_trial(record(tid))
            tracker.log_progress(tid + 1, {"best_so_far": 0.5 + tid / 100})
            time.sleep(0.1)
        pngs = study_plots([record(t) for t in range(8)], plot_dir, "accuracy", budget=2.5)
        tracker.log_artifacts(pngs)
        for p in pngs:
            p.unlink()                                 # the spool keeps its own copies
        assert tracker.unlogged == 9 and tracker.flush() == 9
        spooled = (tmp_path / "study" / "mlflow_spool.jsonl").read_text().splitlines()
        assert [json.loads(line)["op"] for line in spooled] == ["trial", "progress"] * 4 + [
            "artifacts"
        ]

        server.start()                                 # same port, same store
        assert tracker.flush() == 0 and tracker.unlogged == 0
        assert tracker.finish() == 0
        messages = [r.message for r in caplog.records]
        assert sum("not reachable" in m for m in messages) == 1
        assert sum("reachable again: 9 buffered" in m for m in messages) == 1
        assert "View run" not in capsys.readouterr().out   # no MLflow line per trial

        client = MlflowClient(server.uri)
        assert_logged_once(client, run_id, range(8))
        parent = client.get_run(run_id)
        assert parent.info.status == "FINISHED"
        assert [m.step for m in client.get_metric_history(run_id, "best_so_far")] == list(
            range(1, 9)
        )
        assert {a.path for a in client.list_artifacts(run_id)} == {SCORE_PNG, RUNTIME_PNG}
        assert len(list((tmp_path / "artifacts").rglob(SCORE_PNG))) == 1
        assert not (tmp_path / "study" / "mlflow_spool.jsonl").exists()
        assert not (tmp_path / "study" / "mlflow_spool_files").exists()
    finally:
        server.kill()


def test_best_so_far_counts_only_feasible_finished_trials():
    recs = [record(t) for t in range(9)]              # trials 0, 4, 8 finished
    recs[8].metrics["g_runtime"] = 0.3                 # over budget: not feasible
    recs[8].metrics["accuracy"] = 0.99
    assert best_so_far(recs, "accuracy") == [(recs[0].end_time, 0.5), (recs[4].end_time, 0.54)]
    assert best_so_far(recs, "accuracy", mode="min") == [(recs[0].end_time, 0.5)]


LOCKER = '''
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
con.execute("COMMIT")
'''


def test_a_store_locked_by_another_process_loses_nothing(sqlite_uri, tmp_path):
    """Another process holds the sqlite store's exclusive lock while trials are logged: they
    are spooled (or wait for the lock), and all of them are in MLflow once it is free."""
    tracker = StudyTracker(sqlite_uri, "study-locked", tmp_path, backoff=0.1, probe_interval=0.5)
    run_id = tracker.start({"algorithm": "gp-ucb-sdf"})
    tracker.log_trial(record(0))
    db = sqlite_uri[len("sqlite:///"):]
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, db, "8"], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert locker.stdout.readline().strip() == "locked"
        for tid in range(1, 5):
            tracker.log_trial(record(tid))
    finally:
        locker.wait(timeout=60)
    assert tracker.finish() == 0
    assert_logged_once(MlflowClient(sqlite_uri), run_id, range(5))
