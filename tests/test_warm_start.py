"""Re-tuning (docs/how-to/retune-when-data-changes.md): a study's context, and earlier studies it
learns from, read from their folders or from MLflow once a folder is gone.  Config errors and
the carry-over without Ray; real studies on the session's Ray with real MLflow."""

import json
import re
import shutil

import pytest
from mlflow.tracking import MlflowClient

import tuner
from tuner.app.cli import context_pairs
from tuner.app.cli import main as cli_main
from tuner.core.optimizer import Optimizer
from tuner.study.schema import ConfigError
from tuner.study.config import load_study
from tuner.study.warm import Earlier, carry, context_space, earlier_studies
from stores import sqlite_store

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0},
         "depth": {"type": "int", "low": 1, "high": 4}}


def fit(config):
    """Peaks at x = 0.3 for the small data set, 0.6 for the large one (the context moves it)."""
    peak = 0.3 if config.get("rows", 100) < 500 else 0.6
    return {"score": 1.0 - (config["x"] - peak) ** 2 - 0.05 * abs(config["depth"] - 2)}


def study(name, **kw):
    return {"study": name, "trainable": fit, "space": SPACE, "objective": {"metric": "score"},
            **kw}


def earlier(name, context, trials, **kw):
    base = dict(trainable=f"{__name__}:fit", space=SPACE,
                objective={"metric": "score", "mode": "max"})
    base.update(kw)
    return Earlier(name, "folder", base["trainable"], base["space"], base["objective"], context,
                   trials)


def finished(x, depth, value, **metrics):
    return {"config": {"x": x, "depth": depth}, "status": "FINISHED", "value": value,
            "metrics": {"runtime": 1.0, **metrics}, "reason": None}


# --- without Ray ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, words", [
    ({"trainable": "svm"}, ["warm_start", "'a'", "svm"]),
    ({"space": {"x": SPACE["x"]}}, ["warm_start", "parameters", "depth"]),
    ({"objective": {"metric": "loss", "mode": "min"}}, ["warm_start", "loss", "score"]),
])
def test_an_earlier_study_of_another_function_space_or_objective_is_refused(tmp_path, kw, words):
    cfg = load_study(study("b", warm_start=["a"], output=str(tmp_path)))
    bad = earlier("a", None, [], **kw)
    with pytest.raises(ConfigError) as err:
        earlier_studies(cfg, lambda name, c: bad)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_missing_studies_and_mismatched_contexts_name_the_study(tmp_path):
    cfg = load_study(study("b", warm_start=["gone"], output=str(tmp_path)))
    with pytest.raises(ConfigError, match="no study 'gone'.*MLflow"):
        earlier_studies(cfg, lambda name, c: None)
    cfg = load_study(study("b", warm_start=["a"], context={"rows": 1000}, output=str(tmp_path)))
    with pytest.raises(ConfigError, match=r"'a' has the context keys \[\]; this study has "
                                          r"\['rows'\]"):
        earlier_studies(cfg, lambda name, c: earlier("a", None, []))
    with pytest.raises(ConfigError, match="is this study"):
        earlier_studies(load_study(study("b", warm_start=["b"], output=str(tmp_path))))


def test_the_context_space_is_inferred_from_the_contexts_seen_or_checked_when_declared():
    cfg = load_study(study("b", context={"rows": 12000, "version": "v3"}))
    seen = [earlier("a", {"rows": 100, "version": "v1"}, []),
            earlier("c", {"rows": 1000, "version": "v2"}, [])]
    assert context_space(cfg, seen) == {
        "rows": {"type": "float", "low": 100.0, "high": 12000.0, "log": True},
        "version": {"type": "categorical", "choices": ["v1", "v2", "v3"]}}
    assert context_space(load_study(study("b", context={"rows": 5})), [])["rows"] == {
        "type": "float", "low": 2.5, "high": 10.0, "log": False}
    declared = load_study(study("b", context={"rows": 12000},
                                context_space={"rows": {"type": "int", "low": 500, "high": 20000}}))
    with pytest.raises(ConfigError, match="context_space.rows: study 'a' has rows=100"):
        context_space(declared, [earlier("a", {"rows": 100}, [])])


def test_earlier_trials_are_told_at_their_context_and_the_unusable_ones_are_counted():
    cfg = load_study(study("b", context={"rows": 1000}, budget={"limit": 5.0}))
    trials = [finished(0.3, 2, 1.0), finished(0.5, 2, 0.96),
              {"config": {"x": 0.9, "depth": 3}, "status": "TIMED_OUT", "value": None,
               "metrics": {"runtime": 10.0}, "reason": "passed the budget"},
              finished(1.5, 2, 0.5),                                   # outside the space
              {"config": {"x": 0.1, "depth": 1}, "status": "RUNNING", "value": None,
               "metrics": {}, "reason": None},
              {**finished(0.2, 2, 0.9), "metrics": {}}]               # no run time for the budget
    seen = [earlier("a", {"rows": 100}, trials)]
    opt = Optimizer(cfg.space, cfg.settings, context_space=context_space(cfg, seen))
    got = carry(opt, seen)[0]
    assert got.carried == 3 and got.skipped == {
        "outside this study's space": 1, "still running when that study stopped": 1,
        "no runtime recorded": 1}
    assert "3 trials from a (folder, context rows=100)" in got.text()
    assert [tr.origin for tr in opt.trials] == ["a"] * 3
    assert [str(tr.status) for tr in opt.trials] == ["FINISHED", "FINISHED", "TIMED_OUT"]
    assert all(tr.context == {"rows": 100} for tr in opt.trials)
    s = opt.suggest(context={"rows": 1000})            # the GP now has data: no Sobol start-up
    assert opt.trials[s.trial_id].origin is None and s.trial_id == 3


def test_context_on_the_command_line():
    assert context_pairs(["rows=120000", "version=2026-11", "frac=0.5"]) == {
        "rows": 120000, "version": "2026-11", "frac": 0.5}
    with pytest.raises(ConfigError, match="--context: expected KEY=VALUE"):
        context_pairs(["rows"])
    cfg = load_study(study("b", context={"rows": 5, "v": "a"}), {"context": {"rows": 7},
                                                                 "warm_start": ["x", "y"]})
    assert cfg.context == {"rows": 7, "v": "a"} and cfg.warm_start == ("x", "y")


# --- real studies: the session's Ray, real MLflow
# --------------------------------------------------

@pytest.mark.slow
def test_a_study_learns_from_earlier_ones_in_folders_and_in_mlflow(ray_session, tmp_path, capsys):
    uri, out = sqlite_store(tmp_path), str(tmp_path / "runs")
    common = dict(space=SPACE, objective="score", max_concurrent=2, mlflow={"tracking_uri": uri},
                  output=out, optimizer={"n_candidates": 256, "research": {"n_local": 32}})
    a = tuner.run(fit, study="small", context={"rows": 100}, trials=8, **common)
    assert a.status == "FINISHED" and a.count("FINISHED") == 8
    capsys.readouterr()
    b = tuner.run(
        fit, study="large", context={"rows": 1000}, warm_start="small", trials=4, **common
    )
    printed = capsys.readouterr().out
    assert "warm start: 8 trials from small (folder" in printed and "context rows=100" in printed
    assert re.search(r"learned from earlier studies \(not in this table\): 8 trials of small "
                     r"\(context rows=100, correlation [01]\.\d\d with this one's\)", printed)
    # the study's own results leave the carried trials out; the optimizer has them all
    assert b.count("FINISHED") == 4 and len(b.outcomes) == 4
    assert [tr.origin for tr in b.optimizer.trials] == ["small"] * 8 + [None] * 4
    assert min(b.outcomes) == 8 and b.best["trial_id"] >= 8
    saved = json.loads((b.directory / "best.json").read_text())
    assert saved["warm_start"] == {"small": 8} and saved["context"] == {"rows": 1000}
    assert len((b.directory / "trials.csv").read_text().splitlines()) == 1 + 4
    capsys.readouterr()
    assert cli_main(["list", "--output", out]) == 0
    listed = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[2:]}
    assert listed["large"][2:4] == ["4", "4"] and listed["small"][2:4] == ["8", "8"]
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("large").experiment_id])
    parent = next(r for r in runs if "mlflow.parentRunId" not in r.data.tags)
    assert json.loads(parent.data.params["context"]) == {"rows": 1000}
    assert json.loads(parent.data.params["warm_start"]) == ["small"]
    assert sum("mlflow.parentRunId" in r.data.tags for r in runs) == 4
    # the first study's folder is gone: it is read back from MLflow; the second from its folder
    shutil.rmtree(tmp_path / "runs" / "small")
    capsys.readouterr()
    code = cli_main(
        ["run", str(_yaml(tmp_path, "again", fit)), "--trials", "2", "--tracking-uri", uri,
         "--output", out, "--from", "small", "--from", "large", "--context", "rows=2000"]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "warm start: 8 trials from small (MLflow run" in printed
    assert "warm start: 4 trials from large (folder" in printed
    state = json.loads((tmp_path / "runs" / "again" / "state.json").read_text())
    origins = [t.get("origin") for t in state["optimizer"]["trials"]]
    assert origins == ["small"] * 8 + ["large"] * 4 + [None] * 2
    contexts = [t["context"]["rows"] for t in state["optimizer"]["trials"]]
    assert contexts == [100] * 8 + [1000] * 4 + [2000] * 2
    assert {k: state["optimizer"]["context_space"]["rows"][k] for k in ("low", "high", "log")} == {
        "low": 100.0, "high": 2000.0, "log": True}
    # --resume goes on from the state (the earlier studies are not read again)
    shutil.rmtree(tmp_path / "runs" / "large")
    args = ["run", str(tmp_path / "again.yaml"), "--tracking-uri", uri, "--output", out,
            "--from", "small", "--from", "large", "--resume"]
    assert cli_main(args + ["--context", "rows=2000", "--trials", "3"]) == 0
    state = json.loads((tmp_path / "runs" / "again" / "state.json").read_text())
    assert [t.get("origin") for t in state["optimizer"]["trials"]] == origins + [None]
    assert cli_main(args + ["--context", "rows=3000"]) == 2
    assert "the config changed ['context']" in capsys.readouterr().err
    # --resume of a study whose folder is gone and whose trials MLflow holds: refused, not
    # begun anew beside them
    small = ["run", str(_yaml(tmp_path, "small", fit)), "--tracking-uri", uri, "--output", out]
    assert cli_main(small + ["--resume"]) == 2
    said = capsys.readouterr().err
    assert f"but MLflow ({uri}) holds 8 trials of study 'small' (MLflow run" in said
    assert "warm_start: [small]" in said and not (tmp_path / "runs" / "small").exists()


def _yaml(tmp_path, name, fn):
    import yaml

    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "study": name, "trainable": f"{fn.__module__}:{fn.__name__}", "space": SPACE,
        "objective": {"metric": "score"}, "run": {"max_concurrent": 2},
        "optimizer": {"n_candidates": 256, "research": {"n_local": 32}}}))
    return path
