"""Your own training function: `trainable: module:function` in YAML (`tuner run`, real Ray in a
subprocess, the module imported from the directory the user runs in) and `tuner.run(fn, ...)`
from Python (the session's Ray, real MLflow); config errors that name the field."""

import json
import math
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

import tuner
from tuner.app.cli import main as cli_main
from tuner.study.schema import ConfigError
from tuner.study.config import load_study
from trainables import FunctionTrainable, get_trainable

from stores import sqlite_store

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0},
         "depth": {"type": "int", "low": 1, "high": 4}}
USER_MODULE = '''
import time

def fit(config):
    """A user's training function: a score that peaks at x = 0.3, depth 2."""
    time.sleep(0.02 * config["depth"])
    return {"score": 1.0 - (config["x"] - 0.3) ** 2 - 0.05 * abs(config["depth"] - 2),
            "loss": (config["x"] - 0.3) ** 2}
'''


def fit(config):
    """The same function, defined in this test module (shipped to the workers by value); it
    also returns a value that is not a number (kept as the trial's attribute)."""
    time.sleep(0.02 * config["depth"])
    return {"score": 1.0 - (config["x"] - 0.3) ** 2 - 0.05 * abs(config["depth"] - 2),
            "note": f"depth {config['depth']}"}


def user_study(**kw):
    base = {"study": "mine", "trainable": "tests_user_fit_missing:fit", "space": SPACE,
            "objective": {"metric": "score"}}
    return {**base, **kw}


# --- config errors (no Ray) ---------------------------------------------------------------------

@pytest.mark.parametrize(
    "study, words",
    [
        (user_study(trainable="no_such_module_xyz:fit"),
         ["trainable", "no_such_module_xyz", "import"]),
        (user_study(trainable="tuner:no_such_function"), ["trainable", "no_such_function"]),
        (user_study(trainable="cnnn"), ["trainable", "cnn", "module:function"]),
        ({**user_study(trainable=fit), "space": None}, ["space", "required", "fit"]),
        ({**user_study(trainable=fit), "objective": {"mode": "max"}},
         ["objective.metric", "required"]),
        ({**user_study(trainable=fit), "trainable_options": {"epochs": 3}},
         ["trainable_options", "built-in"]),
    ],
)
def test_user_trainable_config_errors_name_the_field(study, words):
    with pytest.raises(ConfigError) as err:
        load_study(study)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_a_function_is_named_module_and_qualname_and_must_return_metrics():
    t = get_trainable(fit)
    assert isinstance(t, FunctionTrainable) and t.name == f"{__name__}:fit"
    assert t({"x": 0.3, "depth": 2}) == {"score": 1.0, "note": "depth 2"}
    with pytest.raises(TypeError, match="dict of metrics"):
        get_trainable(lambda config: 0.5)({"x": 0.1})
    cfg = load_study(user_study(trainable=fit))
    assert cfg.trainable == f"{__name__}:fit" and cfg.trainable_fn is fit
    assert cfg.objective.metric == "score"


# --- real runs
# -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_tuner_run_from_python_tunes_a_function_within_its_budget(ray_session, tmp_path, capsys):
    uri = sqlite_store(tmp_path)
    result = tuner.run(fit, space=SPACE, objective="score", budget=2.0, trials=10, max_concurrent=2,
                       optimizer={"n_candidates": 256, "research": {"n_local": 32}},
                       mlflow={"tracking_uri": uri}, output=str(tmp_path / "runs"))
    assert result.status == "FINISHED" and result.count("FINISHED") == 10
    best = result.best
    assert best is not None and best["metrics"]["runtime"] <= 2.0
    assert best["value"] == max(o.value for o in result.optimizer.trials)
    assert set(best["config"]) == {"x", "depth"}
    # what a user takes away: best.json / best.yaml, the parent run's best.json, over_budget tags
    saved = json.loads((result.directory / "best.json").read_text())
    assert saved == yaml.safe_load((result.directory / "best.yaml").read_text())
    assert saved["trial"] == best["trial_id"] and saved["config"] == best["config"]
    assert saved["within_budget"] is True and saved["score"] == best["value"]
    name = f"{__name__.rpartition('.')[2]}.fit"          # the default: module and function
    assert result.directory.name == name
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(name)
    runs = client.search_runs([exp.experiment_id], max_results=100)
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(children) == 10 and all(r.data.tags["over_budget"] == "0" for r in children)
    assert all(r.data.tags["attr.note"] == f"depth {r.data.params['depth']}" for r in children)
    parent = next(r for r in runs if "mlflow.parentRunId" not in r.data.tags)
    # the parent run: a name of its own (study + start time), the best trial's tag and values
    assert parent.info.run_name.startswith(f"{name} 20")
    assert parent.data.tags["best_trial"] == str(best["trial_id"])
    assert parent.data.tags["best.depth"] == str(best["config"]["depth"])
    assert parent.data.metrics["best.score"] == pytest.approx(best["value"])
    local = client.download_artifacts(parent.info.run_id, "best.json", str(tmp_path))
    assert json.loads(Path(local).read_text()) == saved
    # tuner list / show / best read the study folder alone
    out = str(tmp_path / "runs")
    capsys.readouterr()
    assert cli_main(["list", "--output", out]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[2].split()[:4] == [name, f"{__name__}:fit", "10", "10"]
    assert cli_main(["best", name, "--output", out, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == saved
    assert cli_main(["show", name, "--output", out]) == 0
    shown = capsys.readouterr().out
    assert "best_trial" not in shown and f"trial: {saved['trial']}" in shown
    assert cli_main(["show", name, "--output", out, "--csv"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("trial,status,score") and len(table) == 11
    assert cli_main(["show", name, "--output", out, "--all"]) == 0
    assert len([ln for ln in capsys.readouterr().out.splitlines() if " FINISHED " in ln]) == 10
    # analysis in Python: the trials as a DataFrame, the best trial, the config
    loaded = tuner.load_study(name, output=out)
    assert len(loaded.trials) == 10 and loaded.best == saved
    assert (
        loaded.trials.loc[loaded.trials["trial"] == saved["trial"], "score"].item()
        == saved["score"]
    )
    assert (
        set(SPACE) <= set(loaded.trials.columns) and loaded.config["objective"]["metric"] == "score"
    )
    assert tuner.load_study(result.directory).name == name
    # the same name again: the error names the Python arguments too
    with pytest.raises(ConfigError, match=r"resume=True.*fresh=True"):
        tuner.run(fit, space=SPACE, objective="score", trials=1, mlflow={"tracking_uri": uri},
                  output=out)
    assert cli_main(["best", "nope", "--output", out]) == 2


@pytest.mark.slow
def test_tuner_run_cli_tunes_module_function_from_yaml(tmp_path):
    (tmp_path / "usertrain.py").write_text(textwrap.dedent(USER_MODULE))
    config = {"study": "from-yaml", "trainable": "usertrain:fit", "space": SPACE,
              "objective": {"metric": "score", "mode": "max"}, "budget": {"limit": 5.0},
              "run": {"trials": 6, "max_concurrent": 2},
              "optimizer": {"n_candidates": 256, "research": {"n_local": 32}},
              "mlflow": {"tracking_uri": sqlite_store(tmp_path)}}
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(config))
    cli = Path(sys.executable).parent / "tuner"          # the console script users run
    p = subprocess.run([str(cli), "run", "study.yaml"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "6 finished, 0 stopped, 0 failed" in p.stdout
    assert "best: trial" in p.stdout and "usertrain:fit" in p.stdout
    state = (Path(tmp_path) / "tuner_runs" / "from-yaml" / "state.json")
    assert state.exists()


def _run_failing(tmp_path, name, module, function, **sections):
    """``tuner run`` in a subprocess on ``name.py:function`` (written from ``module``), which
    must fail the study (exit code 2); returns the config and the last line on stderr."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(module))
    config = {"study": name, "trainable": f"{name}:{function}", "space": SPACE,
              "objective": {"metric": "score"},
              "mlflow": {"tracking_uri": sqlite_store(tmp_path)}, **sections}
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(config))
    p = subprocess.run([sys.executable, "-m", "tuner.app.cli", "run", "study.yaml"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
    assert "Traceback" not in p.stdout + p.stderr
    return config, p.stderr.strip().splitlines()[-1]


BROKEN_MODULE = '''
def typo(config):
    return {"score": config["lrr"]}          # the space says "x": every trial fails alike

def wrong_metric(config):
    return {"accuracy": config["x"]}         # the study optimizes "score"
'''


@pytest.mark.slow
@pytest.mark.parametrize("function, cause", [
    ("typo", "KeyError: 'lrr'"),
    ("wrong_metric", "the trial reported no 'score' (objective.metric); it reported ['accuracy',"),
])
def test_a_mistake_that_fails_every_trial_stops_the_study_with_its_cause(tmp_path, function, cause):
    config, last = _run_failing(tmp_path, "broken", BROKEN_MODULE, function,
                                run={"trials": 20, "max_concurrent": 2})
    assert last.startswith("tuner: study stopped: the first 3 trials all failed") and cause in last
    state = json.loads((tmp_path / "tuner_runs" / "broken" / "state.json").read_text())
    assert len(state["optimizer"]["trials"]) < 20            # it stopped early
    runs = MlflowClient(config["mlflow"]["tracking_uri"]).search_runs(
        [MlflowClient(config["mlflow"]["tracking_uri"]).get_experiment_by_name("broken").experiment_id])
    parent = next(r for r in runs if "mlflow.parentRunId" not in r.data.tags)
    assert parent.info.status == "FAILED"
    if function != "typo":
        return                    # the commands below read the study alike whatever failed it
    # nothing finished: `tuner best` says so and exits 1, so a script does not go on
    p = subprocess.run([sys.executable, "-m", "tuner.app.cli", "best", "broken"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "no trial finished" in p.stdout
    # a reader that closes the pipe early (`tuner show broken | head -0`): a quiet end
    reader = subprocess.Popen([sys.executable, "-m", "tuner.app.cli", "show", "broken"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reader.stdout.close()
    assert reader.wait(timeout=60) == 0
    assert reader.stderr.read() == b""


REFERENCE_MODULE = '''
import math


def typo(config):
    lr = config["lrr"]                       # line 6: the space says "x"
    return {"score": lr}
'''


@pytest.mark.slow
def test_a_function_that_fails_its_reference_run_is_reported_as_the_function_failing(tmp_path):
    _, last = _run_failing(tmp_path, "ref", REFERENCE_MODULE, "typo", budget={"limit": "1.5x"},
                           run={"trials": 4, "max_concurrent": 1})
    words = ["raised in the study's first run", "KeyError: 'lrr'", "ref.py:6 in typo",
             'lr = config["lrr"]', "Fix the function"]
    assert last.startswith("tuner: your trainable ref:typo ") and all(w in last for w in words), (
        last
    )
    assert "budget.limit in seconds" not in last and "configuration error" not in last


@pytest.mark.parametrize("metrics, words", [
    ({"score": math.nan, "runtime": 1e-5}, "returned score = nan in the study's first run"),
    ({"loss": 0.1}, "returned no 'score' (it returned ['loss'])"),
])
def test_a_reference_run_without_a_finite_objective_sets_no_budget(metrics, words):
    """A reference run that did not train (NaN, or not the objective) would set a budget of
    microseconds: refused, naming the function."""
    from tuner.study.budget import _check_reference
    from tuner.study.executor import TrainableFailed

    cfg = load_study(user_study(trainable=fit, budget={"limit": "1.5x"}))
    with pytest.raises(TrainableFailed) as err:
        _check_reference(cfg, {"x": 0.5, "depth": 2}, {"metrics": metrics})
    assert words in str(err.value) and "a study needs a finite score" in str(err.value)
