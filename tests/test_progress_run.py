"""Runs that report progress on a real Ray, logged to a real MLflow sqlite store: a user's
function that yields its score every epoch runs as a Ray generator task, ASHA stops runs
mid-curve, each stopped run is recorded with its status, the last epoch it reached and the
reason, and every run's learning curve is a metric history of its MLflow child run."""

import csv
import re
import signal
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tuner.core.trial import Status
from tuner.loop.problems import CrossingCurves
from tuner.study.callbacks import read_curves
from tuner.study.config import load_study

from test_run import child_runs, run_quietly, study

pytestmark = pytest.mark.slow

EPOCHS = 9
CURVES = CrossingCurves(epochs=EPOCHS)


def epochs_of(config, seconds):
    """The curve of ``config``, one report per epoch of ``seconds``."""
    for epoch in range(1, EPOCHS + 1):
        time.sleep(seconds)
        yield {"epoch": epoch, "score": CURVES.score(config, epoch)}


def fit_by_epoch(config):
    """A training job that reports its validation score after each epoch."""
    yield from epochs_of(config, 0.02)


def slow_fit_by_epoch(config):
    """The same curves at 0.25 s an epoch: stopped at its third report, a run still has six
    epochs (1.5 s) to go, so a slow driver cannot see it finish before the stop."""
    yield from epochs_of(config, 0.25)


def progress_study(tmp_path, trainable=fit_by_epoch, **sections):
    sections = {"run": {"trials": 14}, **sections}
    base = study(tmp_path, trainable=trainable, space=CURVES.space,
                 objective={"metric": "score", "mode": "max"},
                 fidelity={"metric": "epoch", "max": EPOCHS}, **sections)
    del base["trainable_options"]        # a user's function takes none
    return load_study(base)


def test_asha_stops_runs_mid_curve_and_each_curve_is_in_mlflow(ray_session, tmp_path):
    cfg = progress_study(tmp_path, early_stopping={"rule": "asha", "grace": 1, "eta": 3})
    result, printed = run_quietly(cfg)
    opt = result.optimizer
    assert result.status == "FINISHED" and len(opt.trials) == 14
    stopped = [tr for tr in opt.trials if tr.status == Status.STOPPED]
    finished = [tr for tr in opt.trials if tr.status == Status.FINISHED]
    assert stopped and finished
    assert result.best is not None and result.best["trial_id"] in {tr.trial_id for tr in finished}
    with open(result.directory / "trials.csv") as fh:
        rows = {int(r["trial"]): r for r in csv.DictReader(fh)}
    for tr in stopped:
        row = rows[tr.trial_id]
        assert row["status"] == "STOPPED" and row["reason"].startswith("ASHA")
        assert 1 <= float(row["epoch"]) < EPOCHS                     # the last epoch it reached
        assert tr.partial == pytest.approx(CURVES.score(tr.config, float(row["epoch"])))
        assert float(row["score"]) == pytest.approx(tr.partial)        # the value it reached
    assert all(float(rows[tr.trial_id]["epoch"]) == EPOCHS for tr in finished)
    # stopped runs are counted apart from failed ones, on the progress line and at the end
    assert f"{len(finished)} finished, {len(stopped)} stopped, 0 failed, " in printed
    assert re.search(r"finished \d+/14  stopped \d+  failed 0  ", printed)
    curves = read_curves(result.directory / "curves.csv", "score")     # the plot's data
    assert sorted(curves) == list(range(14))
    for tr in stopped + finished:
        assert [s for s, _ in curves[tr.trial_id]] == list(
            range(1, int(float(rows[tr.trial_id]["epoch"])) + 1)
        )
    assert (result.directory / "learning_curves.png").stat().st_size > 0

    _, children = child_runs(cfg.mlflow.tracking_uri, "e2e")
    client = MlflowClient(cfg.mlflow.tracking_uri)
    by_trial = {int(c.data.tags["trial_id"]): c for c in children}
    assert sorted(by_trial) == list(range(14))                       # every trial once
    for tr in stopped + finished:
        child = by_trial[tr.trial_id]
        assert child.data.tags["status"] == str(tr.status)
        history = client.get_metric_history(child.info.run_id, "score")
        steps = sorted({m.step for m in history})
        reached = float(rows[tr.trial_id]["epoch"])
        assert steps == list(range(1, int(reached) + 1))             # one point per epoch
        assert max(history, key=lambda m: m.step).value == pytest.approx(
            CURVES.score(tr.config, reached))


def test_a_study_whose_every_run_is_stopped_still_ends_with_a_best_and_a_summary(ray_session,
                                                                                    tmp_path):
    """A budget every run's pace breaks (2.25 s of epochs against 0.05 s): all are stopped
    early by their pace (no stop at 1.5 x the limit beside it, which would come first), and
    the study says so and shows the best run it saw."""
    cfg = progress_study(tmp_path, trainable=slow_fit_by_epoch, run={"trials": 4},
                         budget={"limit": 0.05, "pace_margin": 0.1, "stop_margin": None})
    result, printed = run_quietly(cfg)
    opt = result.optimizer
    assert all(tr.status == Status.STOPPED for tr in opt.trials)
    assert all("pace" in tr.reason for tr in opt.trials)
    assert result.diagnosis is not None and "STOPPED" in result.diagnosis
    assert "no trial finished" in printed
    best = max(opt.trials, key=lambda tr: tr.partial)
    assert f"best run so far: trial {best.trial_id}, score {best.partial:.4g} at epoch" in printed


CURVE_MODULE = '''
import time


def fit(config):
    """Ten epochs of 0.06 s; the score grows towards a level set by x."""
    for epoch in range(1, 11):
        time.sleep(0.06)
        yield {"epoch": epoch, "score": config["x"] * (1 - 0.5 ** epoch)}
'''


def test_driver_killed_mid_curve_then_resume_loses_and_logs_nothing_twice(tmp_path,
                                                                          busy_machine):
    """SIGKILL the driver while runs are mid-curve, with two CPU-bound jobs beside the study:
    --resume starts the interrupted runs over, and every trial ends once in the state,
    trials.csv and MLflow, each MLflow curve with one point per epoch it reached (none lost,
    none logged twice: a curve stays in the saved state until the tracker has it)."""
    from test_run import cli, config_file
    from tuner.study.state import read_study_state

    busy_machine(2)

    (tmp_path / "curvefit.py").write_text(CURVE_MODULE)
    cfg = study(tmp_path, study="killed-curves", trainable="curvefit:fit",
                space={"x": {"type": "float", "low": 0.0, "high": 1.0}},
                objective={"metric": "score", "mode": "max"},
                fidelity={"metric": "epoch", "max": 10},
                early_stopping={"rule": "asha", "grace": 2, "eta": 2},
                run={"trials": 10, "max_concurrent": 2})
    del cfg["trainable_options"]
    path = config_file(tmp_path, cfg)
    folder = Path(cfg["output"]) / "killed-curves"
    p = cli("run", str(path), cwd=tmp_path)
    for line in p.stdout:
        m = re.search(r"finished (\d+)/\d+  stopped (\d+)  failed (\d+)", line)
        if m and int(m.group(1)) + int(m.group(2)) + int(m.group(3)) >= 4:
            break
    time.sleep(0.15)                                   # the next runs are mid-curve
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    _, state = read_study_state(folder / "state.json")
    assert any(t["status"] == "RUNNING" for t in state["optimizer"]["trials"])

    p = cli("run", str(path), "--resume", cwd=tmp_path)
    out = p.communicate(timeout=300)[0]
    assert p.returncode == 0, out
    _, state = read_study_state(folder / "state.json")
    statuses = [t["status"] for t in state["optimizer"]["trials"]]
    assert len(statuses) == 10 and set(statuses) <= {"FINISHED", "STOPPED"}
    with (folder / "trials.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert sorted(int(r["trial"]) for r in rows) == list(range(10))
    _, children = child_runs(cfg["mlflow"]["tracking_uri"], "killed-curves")
    assert sorted(int(c.data.tags["trial_id"]) for c in children) == list(range(10))
    client = MlflowClient(cfg["mlflow"]["tracking_uri"])
    by_trial = {int(r["trial"]): r for r in rows}
    for c in children:
        steps = [m.step for m in client.get_metric_history(c.info.run_id, "epoch")]
        reached = int(float(by_trial[int(c.data.tags["trial_id"])]["epoch"]))
        assert sorted(set(steps)) == list(range(1, reached + 1))
