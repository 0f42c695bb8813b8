"""`tuner run` end to end on real Ray and a real MLflow sqlite store: every trial once in MLflow
and once in the optimizer, failures and budget stops recorded with their status, Ctrl-C and
--resume without a lost or duplicated trial, a two-node cluster, clear config errors."""

import csv
import io
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tuner.core.trial import Status
from tuner.app.wiring import study_runner
from tuner.study.schema import ConfigError
from tuner.study.config import load_study
from tuner.study.progress import Progress
from tuner.study.state import read_study_state
from stores import sqlite_store

pytestmark = pytest.mark.slow      # real Ray and MLflow: `pytest -m "not slow"` skips them

FAST = {"n_candidates": 256, "research": {"n_local": 32, "n_starts": 1}}


def study(tmp_path: Path, **sections) -> dict:
    base = {"study": "e2e", "trainable": "synthetic",
            "trainable_options": {"time_scale": 0.1, "cv": 0.5},
            "optimizer": dict(FAST), "run": {"trials": 12, "max_concurrent": 2, "seed": 0},
            "mlflow": {"tracking_uri": sqlite_store(tmp_path)},
            "output": str(tmp_path / "runs")}
    for key, value in sections.items():
        base[key] = {**base[key], **value} if isinstance(base.get(key), dict) else value
    return base


def child_runs(uri: str, experiment: str) -> tuple[object, list]:
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1
    assert all(c.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for c in children)
    return parents[0], children


def run_quietly(cfg, **kw):
    out = io.StringIO()
    result = study_runner(cfg, progress=Progress(stream=out), **kw).run()
    return result, out.getvalue()


def test_every_trial_once_in_mlflow_and_in_the_optimizer(ray_session, tmp_path):
    cfg = load_study(study(tmp_path, trainable_options={"fail_above": 0.8}))
    result, printed = run_quietly(cfg)
    opt = result.optimizer
    assert result.status == "FINISHED" and len(opt.trials) == 12
    assert all(tr.status != Status.RUNNING for tr in opt.trials)
    parent, children = child_runs(cfg.mlflow.tracking_uri, "e2e")
    ids = sorted(int(c.data.tags["trial_id"]) for c in children)
    assert ids == list(range(12))                                   # once each
    for c in children:
        tid = int(c.data.tags["trial_id"])
        tr, outcome = opt.trials[tid], result.outcomes[tid]
        assert c.data.tags["status"] == outcome["status"]
        assert {k: float(v) for k, v in c.data.params.items()} == pytest.approx(
            {k: float(v) for k, v in tr.config.items()})
        assert int(c.data.tags["pending_at_suggest"]) == tr.pending_at_suggest
        assert c.data.metrics["runtime"] == pytest.approx(tr.metrics["runtime"])
        if outcome["status"] == "FINISHED":
            assert tr.status == Status.FINISHED
            assert c.data.metrics["accuracy"] == pytest.approx(tr.value)
            assert c.data.metrics["train_time"] > 0 and c.data.tags["node"]
        else:   # raised: x above fail_above
            assert tr.status == Status.FAILED and tr.config["x"] > 0.8
            assert "RuntimeError: diverged" in c.data.tags["reason"]
    assert all((o["status"] == "FAILED") == (opt.trials[t].config["x"] > 0.8)
               for t, o in result.outcomes.items())
    # the parent holds the study: params, progress metrics, config and trial table artifacts
    assert parent.data.params["algorithm"] == "gp-ucb-sdf" and parent.data.params["trials"] == "12"
    assert parent.data.metrics["finished"] == sum(o["status"] == "FINISHED"
                                                  for o in result.outcomes.values())
    client = MlflowClient(cfg.mlflow.tracking_uri)
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"config.json", "trials.csv"} <= artifacts
    assert (result.directory / "trials.csv").read_text().count("\n") == 13
    assert f"{result.count('FINISHED')} finished" in printed
    # the summary lists the trials that did not finish, with their reasons
    failed = [t for t, o in result.outcomes.items() if o["status"] == "FAILED"]
    assert 0 < len(failed) < 12                   # the study's x > 0.8 region was tried
    assert "not finished:" in printed
    assert f"trial {failed[0]}: FAILED, " in printed and "RuntimeError: diverged" in printed


def test_a_trial_past_its_budget_is_stopped_and_counts_as_a_violation(ray_session, tmp_path):
    # Every run would sleep 2.4 s or more; the budget is 0.4 s, trials stop at 1.5 x 0.4 s.
    cfg = load_study(study(tmp_path, study="slow", trainable_options={"time_scale": 4.0, "cv": 0.1},
                           budget={"limit": 0.4, "stop_margin": 0.5},
                           run={"trials": 4, "max_concurrent": 2}))
    result, printed = run_quietly(cfg)
    opt = result.optimizer
    assert [o["status"] for o in result.outcomes.values()] == ["TIMED_OUT"] * 4
    for tr in opt.trials:
        # stopped, not waited for
        assert tr.status == Status.TIMED_OUT and 0.6 <= tr.metrics["runtime"] < 2.4
        assert opt.constraints[0].observed(tr) >= math.log(1.5)   # g = ln(runtime / T), a violation
    _, children = child_runs(cfg.mlflow.tracking_uri, "slow")
    assert sorted(c.data.tags["status"] for c in children) == ["TIMED_OUT"] * 4
    assert all(c.data.metrics["g_runtime"] >= math.log(1.5) for c in children)
    # said while it ran, and diagnosed at the end, with the fastest run time and what to change
    assert re.search(r"warning: none of the [34] trials so far finished within the budget", printed)
    assert "the fastest took" in printed and "--budget" in printed
    assert result.diagnosis.startswith("all 4 trials were stopped past the budget")
    assert "budget.limit" in result.diagnosis and "no trial finished:" in printed


def test_with_no_trial_within_the_budget_the_best_one_over_it_is_shown(ray_session, tmp_path):
    # Runs of 0.15-0.6 s against a 0.05 s budget, never stopped (stop_margin: null): all
    # finish, all over budget.
    cfg = load_study(
        study(tmp_path, study="tight", trainable_options={"time_scale": 0.3, "cv": 0.1},
              budget={"limit": 0.05, "stop_margin": None}, run={"trials": 4, "max_concurrent": 2})
    )
    result, printed = run_quietly(cfg)
    assert result.count("FINISHED") == 4 and result.diagnosis is None
    best = result.optimizer.best()
    assert result.optimizer.best(feasible=True) is None
    assert f"best: trial {best.trial_id}, accuracy {best.value:.4g}, OVER BUDGET" in printed
    assert "no trial finished within the budget" in printed
    assert "best - (" in printed and "over budget, trial" in printed    # the progress line too


def test_a_cpu_time_budget_is_measured_in_the_worker_and_ignores_waiting(ray_session, tmp_path):
    """``budget.metric: cpu_time``: the reference run and every trial are measured in CPU
    seconds of the worker process. The synthetic trainable sleeps (wall time, no CPU), so its
    CPU time is a small part of its run time, and the limit is measured in it too."""
    cfg = load_study(study(tmp_path, study="cpu", budget={"limit": "3x", "metric": "cpu_time"},
                           trainable_options={"time_scale": 0.3, "cv": 0.1},
                           run={"trials": 4, "max_concurrent": 2}))
    result, printed = run_quietly(cfg)
    opt = result.optimizer
    state = json.loads((result.directory / "state.json").read_text())
    budget = state["config"]["budget"]
    assert budget["metric"] == "cpu_time" and budget["seconds"] == pytest.approx(
        3 * budget["reference_seconds"]
    )
    finished = [tr for tr in opt.trials if tr.status == Status.FINISHED]
    assert len(finished) == 4
    for tr in finished:
        assert 0 < tr.metrics["cpu_time"] < 0.5 * tr.metrics["runtime"]   # asleep most of it
    assert budget["reference_seconds"] < 0.5 * min(tr.metrics["runtime"] for tr in finished)
    assert f"budget: cpu_time <= 3 x {budget['reference_seconds']:.3g} s" in printed
    _, children = child_runs(cfg.mlflow.tracking_uri, "cpu")
    assert all(c.data.metrics["cpu_time"] > 0 for c in children)
    assert "cpu_time" in (result.directory / "trials.csv").read_text().splitlines()[0]


def test_cli_exits_non_zero_with_a_diagnosis_when_no_trial_finishes(tmp_path):
    cfg = study(tmp_path, study="hopeless", trainable_options={"time_scale": 4.0, "cv": 0.1},
                budget={"limit": 0.2, "stop_margin": 0.5}, run={"trials": 2, "max_concurrent": 2},
                mlflow={"tracking_uri": f"sqlite:///{tmp_path}/new.db"})   # a store it creates
    path = config_file(tmp_path, cfg, "hopeless.yaml")
    p = subprocess.run([sys.executable, "-m", "tuner.app.cli", "run", str(path)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("tuner: no trial finished: all 2 trials were stopped past the budget")
    # the start-up steps were said before the first trial, each with its time
    for step in ("starting Ray (local) ...", "warming up 2 worker(s)", "MLflow sqlite:"):
        assert step in p.stdout
    assert p.stdout.count("  done in ") >= 2


def test_the_warm_up_of_a_sleeping_trainable_skips_its_sleep(ray_session):
    """The warm-up is for imports: the synthetic trainable's "training" (a sleep of 30 x 1.75 s
    per run at this time_scale) is not run before the study clock starts."""
    from trainables import validate_options
    from tuner.integrations.ray.executor import warm_up

    options = validate_options("synthetic", {"time_scale": 30.0, "cv": 0.0})
    task = ray_session.remote(num_cpus=0.5, max_retries=0)(warm_up)
    start = time.perf_counter()
    node = ray_session.get(task.remote("synthetic", {"x": 0.5, "y": 0.5, "width": 5}, options),
                           timeout=120)
    assert time.perf_counter() - start < 20.0       # the run itself would sleep 52.5 s
    assert node == ray_session.get_runtime_context().get_node_id()


def test_wall_clock_limit_kills_the_running_trials(ray_session, tmp_path):
    cfg = load_study(study(tmp_path, study="limited", trainable_options={"time_scale": 30.0},
                           run={"trials": 10, "wall_clock_limit": 1.0, "max_concurrent": 2}))
    result, _ = run_quietly(cfg)
    assert [o["status"] for o in result.outcomes.values()] == ["KILLED", "KILLED"]
    assert "wall_clock_limit" in result.outcomes[0]["reason"]
    assert len(result.optimizer.trials) == 2
    # the optimizer was told when the study ends, on its own clock (finish_by_deadline)
    opt = result.optimizer
    assert opt.settings.finish_by_deadline and 0 < opt.deadline - opt.trials[0].start_time <= 1.0


def test_a_study_starts_no_run_that_could_not_finish_before_its_wall_clock_limit(ray_session,
                                                                                 tmp_path):
    """A study's default ``idle_near_deadline``: once less time is left than the shortest run
    took, no run starts; a study that ends so says why.  Runs of 2.25-2.5 s (widths 7-8), so
    that a worker almost always frees in the last stretch, where the rule holds it."""
    space = {"x": {"type": "float", "low": 0.0, "high": 1.0},
             "y": {"type": "float", "low": 0.0, "high": 1.0},
             "width": {"type": "int", "low": 7, "high": 8}}
    cfg = load_study(study(tmp_path, study="idle", space=space,
                           trainable_options={"time_scale": 1.0, "cv": 0.0},
                           run={"trials": 100, "wall_clock_limit": 8.0, "max_concurrent": 2}))
    result, printed = run_quietly(cfg)
    opt = result.optimizer
    assert opt.settings.idle_near_deadline
    shortest = min(
        tr.finish_time - tr.start_time for tr in opt.trials if tr.status == Status.FINISHED
    )
    last_start = max(tr.start_time for tr in opt.trials)
    assert opt.deadline - last_start > shortest - 0.5     # the suggestion's time after the check
    if not any(tr.status == Status.KILLED for tr in opt.trials):   # it ended before the limit
        assert "none could finish" in printed


def finished(progress_line: str) -> int:
    """The count of finished trials on a progress line."""
    return int(re.search(r"finished (\d+)/", progress_line).group(1))


def read_until_finished(p: subprocess.Popen, n: int) -> list[str]:
    """The lines a running ``tuner run`` printed until its progress line showed ``n``
    finished trials."""
    lines = []
    for line in p.stdout:
        lines.append(line)
        if line.startswith("[") and finished(line) >= n:
            break
    return lines


def config_file(tmp_path: Path, cfg: dict, name: str = "study.yaml") -> Path:
    """``cfg`` written as a config file for ``tuner run`` (JSON is YAML)."""
    path = tmp_path / name
    path.write_text(json.dumps(cfg))
    return path


def cli(*args, cwd, **kw):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "tuner.app.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def test_ctrl_c_then_resume_loses_and_duplicates_nothing(tmp_path):
    # A relative budget (3 x a reference run): measured once, kept on --resume.
    cfg = study(tmp_path, study="resumable", run={"trials": 8, "max_concurrent": 2},
                trainable_options={"time_scale": 0.4, "cv": 0.3}, budget={"limit": "3x"})
    path = config_file(tmp_path, cfg)
    p = cli("run", str(path), cwd=tmp_path, start_new_session=True)
    lines = read_until_finished(p, 3)
    os.killpg(p.pid, signal.SIGINT)     # as a terminal's Ctrl-C: every process of the group
    out = "".join(lines) + p.communicate(timeout=120)[0]
    assert p.returncode == 130, out
    assert "interrupted" in out and "--resume" in out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out   # the writer's neither
    assert "plots: not drawn on an interruption (tuner plot resumable draws them)" in out
    state = json.loads((tmp_path / "runs" / "resumable" / "state.json").read_text())
    statuses = [t["status"] for t in state["optimizer"]["trials"]]
    assert 3 <= statuses.count("FINISHED") < 8 and "RUNNING" in statuses
    budget = state["config"]["budget"]
    assert (
        budget["seconds"] == pytest.approx(3 * budget["reference_seconds"])
        and budget["seconds"] > 0
    )
    assert state["optimizer"]["settings"]["constraints"][0]["limit"] == budget["seconds"]
    assert f"budget: runtime <= 3 x {budget['reference_seconds']:.3g} s" in out

    again = cli("run", str(path), cwd=tmp_path)
    out2 = again.communicate(timeout=300)[0]
    assert again.returncode == 2 and "--resume" in out2      # refuses to overwrite silently
    resumed = cli("run", str(path), "--resume", cwd=tmp_path)
    out3 = resumed.communicate(timeout=300)[0]
    assert resumed.returncode == 0, out3
    assert "interrupted trial(s) start again" in out3
    assert "reference run for the budget" not in out3 and "(measured when the study started" in out3
    state = json.loads((tmp_path / "runs" / "resumable" / "state.json").read_text())
    trials = state["optimizer"]["trials"]
    assert len(trials) == 8 and all(t["status"] == "FINISHED" for t in trials)
    assert state["config"]["budget"] == budget                       # the same limit
    parent, children = child_runs(cfg["mlflow"]["tracking_uri"], "resumable")
    assert sorted(int(c.data.tags["trial_id"]) for c in children) == list(range(8))
    assert float(parent.data.params["budget_limit"]) == pytest.approx(budget["seconds"])
    assert parent.data.params["budget_spec"] == "3x"


@pytest.fixture
def two_nodes():
    """A ``ray.cluster_utils.Cluster``: a head and one worker node, one CPU each (not
    connected; the study connects with --address); yields (cluster, worker node)."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, connect=False,
                      head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        worker = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster, worker
    finally:
        cluster.shutdown()


def test_a_two_node_cluster_runs_trials_on_both_nodes(tmp_path, two_nodes):
    cluster, _ = two_nodes
    cfg = study(tmp_path, study="cluster", run={"trials": 6, "max_concurrent": 2},
                trainable_options={"time_scale": 0.5, "cv": 0.1})
    path = config_file(tmp_path, cfg, "cluster.yaml")
    p = cli("run", str(path), "--address", cluster.address, cwd=tmp_path)
    out = p.communicate(timeout=300)[0]
    assert p.returncode == 0, out
    assert cluster.address in out
    state = json.loads((tmp_path / "runs" / "cluster" / "state.json").read_text())
    nodes = {w["node"] for w in state["session"]["where"].values()}
    assert len(nodes) == 2
    _, children = child_runs(cfg["mlflow"]["tracking_uri"], "cluster")
    assert {c.data.tags["node"] for c in children} == nodes


@pytest.mark.parametrize("change, message", [
    ({"colour": "red"}, "config: unknown key(s) ['colour']"),
    ({"trainable": "xgboost"}, "unknown trainable 'xgboost'"),
    ({"run": {"trials": 0}}, "run.trials: must be > 0"),
    ({"run": {"max_concurrent": "two"}}, "run.max_concurrent: expected a whole number"),
    ({"budget": {"limit": -1}}, "budget.limit: must be > 0"),
    ({"budget": {"limit": "fast"}}, "budget.limit: expected seconds (a number > 0) or a multiple "
                                    "of the reference run such as '1.5x' (got 'fast')"),
    ({"budget": {"limit": "0x"}}, "budget.limit: the multiple must be > 0"),
    ({"budget": {"limit": 2, "reference": "warmup"}}, "budget.reference: only a relative limit"),
    ({"budget": {"limit": "2x", "reference": "median"}}, "budget.reference: must be one of "
                                                          "['warmup'] or a mapping"),
    ({"budget": {"limit": "2x", "reference": {"x": 0.5}}}, "budget.reference: config of trainable "
                                                           "'synthetic' must have exactly"),
    ({"budget": {"limit": 1, "metric": "memory"}}, "budget.metric: must be one of ['runtime', "
                                                   "'cpu_time', 'train_time']"),
    ({"budget": {"limit": 1, "metric": "cpu_time", "stop_margin": 1.0}},
     "budget.stop_margin: needs budget.metric: runtime"),
    ({"objective": {"mode": "maximize"}}, "objective.mode: must be one of ['max', 'min']"),
    ({"optimizer": {"algorithm": "tpe"}}, "optimizer.algorithm: must be one of ['asy-ts',"),
    ({"optimizer": {"mode": "min"}}, "optimizer.mode: set it as objective.mode"),
    ({"space": {"x": {"type": "float", "low": 1, "high": 0}}}, "space.x: low (1.0) must be < high"),
    ({"trainable_options": {"epochs": 3}}, "trainable_options: unknown key(s) ['epochs']; "
                                           "allowed: ['cv',"),
    ({"trainable_options": {"cv": -1}}, "trainable_options.cv: must be >= 0 (got -1.0)"),
    ({"space": {"x": {"type": "float", "low": 0}}}, "space.x.high is required"),
    ({"budget": {"limit": 1, "stop_margin": -0.5}}, "budget.stop_margin: must be >= 0 or null "
                                                    "(got -0.5)"),
])
def test_bad_configs_name_the_field(tmp_path, change, message):
    cfg = {"trainable": "synthetic", **change}
    with pytest.raises(ConfigError) as err:
        load_study(cfg)
    assert message in str(err.value)


def test_more_slots_than_cpus_is_refused_naming_both_fields(ray_session, tmp_path):
    """Trials past Ray's CPUs would queue, and the wait would count as their run time."""
    cfg = load_study(
        study(tmp_path, study="crowded", run={"max_concurrent": 3, "cpus_per_trial": 1})
    )
    with pytest.raises(
        ConfigError,
        match=r"run.max_concurrent x run.cpus_per_trial = 3 x 1 = 3 CPU, "
        r"but Ray has 2.*run.cpus_per_trial to 0.667 or "
        r"run.max_concurrent to 2",
    ):
        run_quietly(cfg)


def test_cli_reports_config_errors_without_a_traceback(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("trainable: svm\nrun: {trials: -3}\n")
    p = subprocess.run([sys.executable, "-m", "tuner.app.cli", "run", str(path)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2
    assert "configuration error: run.trials: must be > 0" in p.stderr
    assert "Traceback" not in p.stderr


def test_an_address_where_nothing_answers_fails_at_once_naming_the_field(tmp_path):
    with socket.socket() as s:                  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # "at once": no retry loop (Ray's own waits minutes); the timeout bounds it without timing
    # the run, which a busy machine stretches (37 s seen with every core taken)
    p = subprocess.run([sys.executable, "-m", "tuner.app.cli", "run", "--trials", "2",
                        "--address", f"127.0.0.1:{port}", "--output", str(tmp_path / "runs"),
                        "--tracking-uri", sqlite_store(tmp_path)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"ray.address: nothing answers at 127.0.0.1:{port}" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_study_without_an_address_starts_its_own_ray_past_a_stale_cluster_file(tmp_path):
    """A `ray start` killed without `ray stop` leaves ray_current_cluster naming a dead
    cluster; ray.init() with no address would try to join it and fail."""
    ray_tmp = Path(tempfile.mkdtemp(prefix="tuner-stale-"))     # short: Ray's socket paths
    try:
        (ray_tmp / "ray").mkdir()
        (ray_tmp / "ray" / "ray_current_cluster").write_text("192.0.2.2:37337")
        p = subprocess.run([sys.executable, "-m", "tuner.app.cli", "run", "--trials", "2",
                            "--output", str(tmp_path / "runs"),
                            "--tracking-uri", sqlite_store(tmp_path)],
                           capture_output=True, text=True, cwd=tmp_path, timeout=300,
                           env={**os.environ, "RAY_TMPDIR": str(ray_tmp)})
        assert p.returncode == 0, p.stdout + p.stderr
        assert "2 finished" in p.stdout
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_a_failed_start_leaves_no_running_parent_and_the_next_start_adopts_it(tmp_path):
    """A start-up failure (here the budget's reference run raises) ends the MLflow parent run
    as FAILED; a hard kill before the first state save leaves one behind; the next start of
    the study reuses that parent run, so the experiment never holds an empty second parent."""
    cfg = study(tmp_path, study="adopt", budget={"limit": "2x"},
                run={"trials": 3, "max_concurrent": 2},
                trainable_options={"time_scale": 0.1, "fail_above": 0.0})
    uri = cfg["mlflow"]["tracking_uri"]
    path = config_file(tmp_path, cfg)
    p = cli("run", str(path), cwd=tmp_path)
    out = p.communicate(timeout=300)[0]
    assert (
        p.returncode == 2 and "your trainable synthetic raised in the study's first run" in out
    ), out
    parent, _ = child_runs(uri, "adopt")
    assert parent.info.status == "FAILED"

    # a hard kill after the parent run exists, before any trial: slow reference runs
    cfg["trainable_options"] = {"time_scale": 20.0, "cv": 0.1}
    config_file(tmp_path, cfg)
    p = cli("run", str(path), cwd=tmp_path)
    tracker = Path(cfg["output"]) / "adopt" / "mlflow_tracker.json"
    for line in p.stdout:
        if "reference run for the budget" in line:
            break
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and '"run_id": "' not in (
        tracker.read_text() if tracker.exists() else ""
    ):
        time.sleep(0.2)
    time.sleep(1.0)
    p.kill()
    p.communicate(timeout=60)
    assert not (Path(cfg["output"]) / "adopt" / "state.json").exists()

    cfg["trainable_options"] = {"time_scale": 0.1, "cv": 0.1}
    config_file(tmp_path, cfg)
    p = cli("run", str(path), cwd=tmp_path)
    out = p.communicate(timeout=300)[0]
    assert p.returncode == 0, out
    parent, children = child_runs(uri, "adopt")      # one parent run, the first one
    assert parent.info.status == "FINISHED"
    assert sorted(int(c.data.tags["trial_id"]) for c in children) == [0, 1, 2]


def test_driver_killed_then_resume_loses_reruns_and_logs_nothing_twice(tmp_path, busy_machine):
    """SIGKILL the driver mid-study, on a machine two other jobs keep busy: trials.csv holds
    what the state holds; --resume finishes the study with every trial once in the state, the
    table and MLflow."""
    busy_machine(2)
    cfg = study(tmp_path, study="killed", run={"trials": 10, "max_concurrent": 2},
                trainable_options={"time_scale": 0.3, "cv": 0.3})
    path = config_file(tmp_path, cfg)
    folder = Path(cfg["output"]) / "killed"
    p = cli("run", str(path), cwd=tmp_path)
    read_until_finished(p, 4)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    with (folder / "trials.csv").open() as fh:
        before = list(csv.DictReader(fh))
    _, state = read_study_state(folder / "state.json")     # the state file and its journal
    ended = [t for t in state["optimizer"]["trials"] if t["status"] != "RUNNING"]
    assert len(before) >= 4        # appended as they ended, in that order
    assert sorted(int(r["trial"]) for r in before) == [t["trial_id"] for t in ended]

    p = cli("run", str(path), "--resume", cwd=tmp_path)
    out = p.communicate(timeout=300)[0]
    assert p.returncode == 0, out
    assert "ended without closing it (killed?); this run takes it over" in out
    state = json.loads((folder / "state.json").read_text())
    assert [t["status"] for t in state["optimizer"]["trials"]] == ["FINISHED"] * 10
    with (folder / "trials.csv").open() as fh:
        assert [int(r["trial"]) for r in csv.DictReader(fh)] == list(range(10))
    for r in before:    # what had finished before the kill was kept, not run again
        t = state["optimizer"]["trials"][int(r["trial"])]
        assert t["finish_time"] == pytest.approx(float(r["finish"]))
    _, children = child_runs(cfg["mlflow"]["tracking_uri"], "killed")
    assert sorted(int(c.data.tags["trial_id"]) for c in children) == list(range(10))


def _can_mount_a_small_disk() -> bool:
    """A tmpfs mounted in a user namespace of its own (``unshare -rm``): no privileges needed
    where the kernel allows user namespaces, and the mount goes with the namespace."""
    try:
        return subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                              capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _can_mount_a_small_disk(), reason="needs unshare -rm to mount a tmpfs")
def test_a_full_disk_stops_the_study_in_one_line_and_resume_completes_it(tmp_path):
    """The study folder on a 48 kB filesystem: the study stops with one line naming the file
    (exit 3, no traceback) and its MLflow parent run closed; once there is room, --resume
    finishes it with every trial once in trials.csv and MLflow."""
    cfg = study(tmp_path, study="full", run={"trials": 40, "max_concurrent": 2})
    out = Path(cfg["output"])
    out.mkdir()
    path = config_file(tmp_path, cfg)
    run = f"{sys.executable} -m tuner.app.cli run {path}"
    parent = (f"{sys.executable} -c \"from mlflow.tracking import MlflowClient as C; "
              f"c = C('{cfg['mlflow']['tracking_uri']}'); "
              "e = c.get_experiment_by_name('full'); "
              "print('parent', *[r.info.status for r in c.search_runs([e.experiment_id]) "
              "if 'mlflow.parentRunId' not in r.data.tags])\"")
    script = (f"mount -t tmpfs -o size=48k tmpfs {out} && {{ {run}; echo exit $?; {parent}; "
              f"mount -o remount,size=8m {out} && {run} --resume; echo exit $?; "
              f"grep -c FINISHED {out}/full/trials.csv; }}")
    p = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=tmp_path, text=True,
                       capture_output=True, timeout=600)
    said = p.stdout + p.stderr
    assert re.findall(r"^exit (\d+)$", p.stdout, re.M) == ["3", "0"], said
    errors = [line for line in p.stderr.splitlines() if line.startswith("tuner:")]
    assert len(errors) == 1 and "No space left on device" in errors[0], said
    assert "make room, then run it again with --resume" in errors[0]
    assert "Traceback" not in said
    assert "parent FAILED" in p.stdout, said         # closed, not left RUNNING
    assert p.stdout.splitlines()[-1] == "40"         # trials.csv: 40 rows FINISHED
    parent, children = child_runs(cfg["mlflow"]["tracking_uri"], "full")
    assert parent.info.status == "FINISHED"
    assert sorted(int(c.data.tags["trial_id"]) for c in children) == list(range(40))


@pytest.mark.skipif(not _can_mount_a_small_disk(), reason="needs unshare -rm to mount a tmpfs")
def test_an_mlflow_store_in_a_read_only_folder_holds_nothing_up(tmp_path):
    """The sqlite store on a filesystem gone read-only: every trial runs, the summary says how
    many items wait in the study folder, and the exit code is 0 (411 s of waiting seen
    before mlflow.timeout bounded it)."""
    store = tmp_path / "store"
    store.mkdir()
    uri = f"sqlite:///{store}/mlflow.db"
    cfg = study(tmp_path, study="readonly", run={"trials": 6, "max_concurrent": 2},
                mlflow={"tracking_uri": uri, "timeout": 10})
    path = config_file(tmp_path, cfg)
    create = (f"{sys.executable} -c \"from mlflow.tracking import MlflowClient as C; "
              f"C('{uri}').search_experiments()\"")
    script = (f"mount -t tmpfs tmpfs {store} && {create} && mount -o remount,ro {store} && "
              f"{sys.executable} -m tuner.app.cli run {path}")
    p = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=tmp_path, text=True,
                       capture_output=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "6 finished" in p.stdout
    assert re.search(r"\d+ MLflow item\(s\) are not logged yet \(kept in .*readonly\); "
                     "--resume sends them", p.stdout), p.stdout


def test_a_second_start_of_a_running_study_is_refused_and_the_first_finishes(tmp_path):
    """One writer per study: while a study runs, starting it again (plain, --resume or
    --fresh) exits 2 naming the process that runs it, and changes nothing; the first finishes
    with every trial once in its folder and in MLflow."""
    cfg = study(tmp_path, study="twice", run={"trials": 8, "max_concurrent": 2},
                trainable_options={"time_scale": 0.3, "cv": 0.3})
    path = config_file(tmp_path, cfg)
    folder = Path(cfg["output"]) / "twice"
    first = cli("run", str(path), cwd=tmp_path)
    read_until_finished(first, 1)
    for flags in ([], ["--resume"], ["--fresh"]):
        second = subprocess.run([sys.executable, "-m", "tuner.app.cli", "run", str(path), *flags],
                                cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"study 'twice' is running: process {first.pid} on " in second.stderr
        assert sorted(p.name for p in folder.parent.iterdir()) == [".twice.lock", "twice"]
    out = first.communicate(timeout=300)[0]
    assert first.returncode == 0, out
    with (folder / "trials.csv").open() as fh:
        assert [int(r["trial"]) for r in csv.DictReader(fh)] == list(range(8))
    _, children = child_runs(cfg["mlflow"]["tracking_uri"], "twice")
    assert sorted(int(c.data.tags["trial_id"]) for c in children) == list(range(8))


def test_a_node_removed_mid_study_fails_its_trials_and_the_study_finishes(tmp_path, two_nodes):
    cluster, worker = two_nodes
    cfg = study(tmp_path, study="nodeloss", run={"trials": 6, "max_concurrent": 2},
                trainable_options={"time_scale": 2.0, "cv": 0.1})
    path = config_file(tmp_path, cfg, "nodeloss.yaml")
    p = cli("run", str(path), "--address", cluster.address, cwd=tmp_path)
    lines = []
    for line in p.stdout:                 # the study's trials are running on both nodes
        lines.append(line)
        if line.startswith("[") and "running 2" in line:
            break
    time.sleep(1.0)
    cluster.remove_node(worker)
    out = "".join(lines) + p.communicate(timeout=300)[0]
    assert p.returncode == 0, out
    state = json.loads((tmp_path / "runs" / "nodeloss" / "state.json").read_text())
    trials = state["optimizer"]["trials"]
    lost = [t for t in trials if t["status"] == "FAILED"]
    assert len(trials) == 6 and lost and all("worker or node lost" in t["reason"] for t in lost)
    assert sum(t["status"] == "FINISHED" for t in trials) == 6 - len(lost)


@pytest.mark.slow
def test_a_lost_worker_is_run_again_up_to_run_retries_times(ray_session, tmp_path):
    """Every trial's first attempt kills its own Ray worker: with ``run.retries: 1`` each trial
    runs again and finishes; with 0 each is FAILED (worker lost) and the study still ends."""
    marks = tmp_path / "marks"
    marks.mkdir()

    def dies_once(config):
        mark = marks / f"{config['x']!r}"
        if not mark.exists():
            mark.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return {"score": config["x"]}

    def run(name, retries):
        cfg = load_study(
            {
                "study": name,
                "trainable": dies_once,
                "space": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
                "objective": {"metric": "score", "mode": "max"},
                "optimizer": {"algorithm": "random"},
                "run": {"trials": 3, "max_concurrent": 2, "retries": retries, "fail_fast": 0,
                        "seed": retries},
                "mlflow": {"tracking_uri": sqlite_store(tmp_path)},
                "output": str(tmp_path / "runs"),
            }
        )
        return run_quietly(cfg)[0].optimizer.trials

    again = run("retried", 1)
    assert [t.status for t in again] == [Status.FINISHED] * 3
    assert all((marks / repr(t.config["x"])).exists() for t in again)     # each one died once
    assert all(t.metrics["runtime"] < 1.0 for t in again)                 # the run that finished
    lost = run("not-retried", 0)
    assert [t.status for t in lost] == [Status.FAILED] * 3
    assert all("worker or node lost" in t.reason for t in lost)


@pytest.mark.slow
def test_a_study_against_a_dead_server_finishes_and_resume_sends_the_backlog(ray_session, tmp_path):
    """MLflow down for a whole study: every trial runs and is recorded (logging happens in the
    writer process and spools); once a real ``mlflow server`` answers on that address,
    ``--resume`` sends the backlog, each trial once."""
    from mlflow_server import Server, free_port

    port = free_port()
    cfg = study(tmp_path, study="offline", run={"trials": 6, "max_concurrent": 2},
                mlflow={"tracking_uri": f"http://127.0.0.1:{port}"})
    result, printed = run_quietly(load_study(cfg))
    assert result.count("FINISHED") == 6 and result.unlogged > 0
    assert "--resume sends them" in printed
    assert (tmp_path / "runs" / "offline" / "mlflow_spool.jsonl").exists()
    sqlite_store(tmp_path, "server.db")
    server = Server(tmp_path, port, tmp_path / "server.db")
    server.start()
    try:
        again, _ = run_quietly(load_study(cfg), resume=True)
        assert again.unlogged == 0 and again.count("FINISHED") == 6
        _, children = child_runs(server.uri, "offline")
        assert sorted(int(c.data.tags["trial_id"]) for c in children) == list(range(6))
    finally:
        server.kill()


def test_a_study_never_waits_long_for_an_mlflow_that_does_not_answer(tmp_path):
    """MLflow at a server that takes connections and never answers (every call hangs until its
    own timeout): the study waits ``mlflow.timeout`` (5 s) at its start and at its end at most,
    says so, and keeps every trial; --resume, with MLflow back, logs each of them once."""
    deaf = socket.socket()
    deaf.bind(("127.0.0.1", 0))
    deaf.listen(128)
    uri = f"http://127.0.0.1:{deaf.getsockname()[1]}"
    cfg = study(tmp_path, study="deaf", run={"trials": 6, "max_concurrent": 2},
                trainable_options={"time_scale": 0.1, "cv": 0.3},
                mlflow={"tracking_uri": uri, "timeout": 5})
    path = config_file(tmp_path, cfg)
    t0 = time.monotonic()
    p = cli("run", str(path), cwd=tmp_path)
    out = p.communicate(timeout=300)[0]
    took = time.monotonic() - t0
    deaf.close()
    assert p.returncode == 0, out
    assert f"MLflow {uri} has not answered in 5 s: the study goes on" in out
    assert "MLflow item(s) are not logged yet" in out and "--resume sends them" in out
    busy = float(re.search(r"workers busy \d+% of (\d+) s", out).group(1))
    assert took - busy < 45, out     # start-up and its end, bounded (HTTP calls alone take 40 s+)
    with (Path(cfg["output"]) / "deaf" / "trials.csv").open() as fh:
        assert [int(r["trial"]) for r in csv.DictReader(fh)] == list(range(6))
    back = sqlite_store(tmp_path)
    p = cli("run", str(path), "--resume", "--tracking-uri", back, cwd=tmp_path)
    out = p.communicate(timeout=300)[0]
    assert p.returncode == 0, out
    _, children = child_runs(back, "deaf")
    assert sorted(int(c.data.tags["trial_id"]) for c in children) == list(range(6))


def _started(proc: subprocess.Popen, timeout: float = 120.0) -> str:
    """What a ``ray start --block`` printed until its runtime started (or it exited)."""
    out, t0 = [], time.monotonic()
    for line in proc.stdout:
        out.append(line)
        if "Ray runtime started" in line or time.monotonic() - t0 > timeout:
            break
    return "".join(out)


def test_two_nodes_started_as_the_cluster_docs_say_run_the_studys_trials(tmp_path):
    """docs/how-to/ray-cluster.md with real `ray start` processes: a head with token
    authentication on, a node without the head's token refused, a node with it joining, and
    a study whose driver has the token running its trials on both nodes."""
    ray_cli = str(Path(sys.executable).parent / "ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    homes = {name: tmp_path / name for name in ("head", "node")}
    for home in homes.values():
        home.mkdir()
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}
    on = {name: {**env, "HOME": str(home)} for name, home in homes.items()}
    subprocess.run([ray_cli, "get-auth-token", "--generate"], env=on["head"], check=True,
                   capture_output=True, timeout=120)
    started = []

    # Each node's own short --temp-dir (socket paths stay short), so `ray start` leaves no
    # /tmp/ray/ray_current_cluster behind that a later ray.init() would try to join.
    temps = {name: tempfile.mkdtemp(prefix=f"tuner-{name}-") for name in homes}

    def ray_start(*args, where):
        proc = subprocess.Popen([ray_cli, "start", *args, "--num-cpus", "1", "--block",
                                 "--disable-usage-stats", "--temp-dir", temps[where]],
                                env=on[where], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        started.append(proc)
        return proc

    try:
        head = ray_start("--head", "--port", str(port), "--include-dashboard=false", where="head")
        assert "Ray runtime started" in _started(head)
        refused = ray_start("--address", f"127.0.0.1:{port}", where="node")
        out = refused.communicate(timeout=120)[0]
        assert refused.returncode != 0 and "no authentication token was found" in out
        (homes["node"] / ".ray").mkdir()
        (homes["node"] / ".ray" / "auth_token").write_bytes(
            (homes["head"] / ".ray" / "auth_token").read_bytes())      # the token, copied
        node = ray_start("--address", f"127.0.0.1:{port}", where="node")
        assert "Ray runtime started" in _started(node)
        cfg = study(tmp_path, study="twonodes", run={"trials": 8, "max_concurrent": 2},
                    trainable_options={"time_scale": 0.3, "cv": 0.3})
        path = config_file(tmp_path, cfg)
        p = subprocess.run([sys.executable, "-m", "tuner.app.cli", "run", str(path), "--address",
                            f"127.0.0.1:{port}"], cwd=tmp_path, env=on["node"], text=True,
                           capture_output=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        with (Path(cfg["output"]) / "twonodes" / "trials.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        assert len(rows) == 8 and len({r["node"] for r in rows}) == 2
    finally:
        for proc in reversed(started):      # what this test started, by process group
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=60)
        for temp in temps.values():
            shutil.rmtree(temp, ignore_errors=True)
