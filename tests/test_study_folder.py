"""A study folder that lost or damaged its state: ``--resume`` never starts over silently, a new
start never overwrites an earlier run's records, ``--fresh`` checks everything before it moves
anything, and a damaged file is one line naming it, never a traceback or a wrong answer.  (The
folder and its files are real; the study is prepared as ``tuner run`` prepares it, without
starting Ray.)"""

import io
import json
import os

import pytest

from tuner import Optimizer
from tuner.study.callbacks import SaveState, TrialTable
from tuner.study.config import load_study
from tuner.study.progress import Progress
from tuner.study.runner import StudyRunner
from tuner.study.schema import ConfigError
from tuner.study.state import StudyStateFile, backup_path
from tuner.study.study import Session, Study


def config(tmp_path, **extra):
    return load_study({"study": "s", "trainable": "logreg", "output": str(tmp_path / "runs"),
                       "space": {"C": {"type": "float", "low": 0.01, "high": 10.0}},
                       "objective": {"metric": "accuracy", "mode": "max"}, **extra})


def saved_study(cfg, n=3, wholes=1):
    """A study folder as a run of ``n`` finished trials leaves it (state, journal, trials.csv);
    ``wholes`` whole writes of the state (from the second on, a backup is kept)."""
    cfg.directory.mkdir(parents=True)
    opt = Optimizer(cfg.space, cfg.settings, clock=lambda: 0.0)
    study = Study(cfg, opt, Session(), lambda: 0.0, 0.0)
    saver = SaveState(study, StudyStateFile(cfg.directory / "state.json"))
    for _ in range(wholes):
        saver.save()
    for k in range(n):
        tid = opt.suggest().trial_id
        opt.tell(tid, 0.5 + 0.1 * k, {"runtime": 1.0})
        saver.save(whole=False)
    TrialTable(study, cfg.directory / "trials.csv").write()
    return study


def prepare(cfg, **flags):
    out = io.StringIO()
    runner = StudyRunner(cfg, executor=None, make_tracker=None, clock=lambda: 0.0,
                         progress=Progress(stream=out), **flags)
    return runner._prepare(), out.getvalue()


def space_of(state, space):
    return {**state, "optimizer": {**state["optimizer"], "space": space}}


def listing(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_resume_without_the_state_refuses_and_changes_nothing(tmp_path):
    cfg = config(tmp_path)
    saved_study(cfg, wholes=2)
    (cfg.directory / "state.json").unlink()
    before = listing(cfg.directory)
    with pytest.raises(ConfigError) as err:
        prepare(cfg, resume=True)
    text = str(err.value)
    state = cfg.directory / "state.json"
    assert f"--resume: {state} is missing, but {cfg.directory} holds " in text
    assert "trials.csv" in text and "--fresh" in text
    assert f"{backup_path(cfg.directory / 'state.json')} is the state as of" in text
    assert listing(cfg.directory) == before


def test_a_new_start_never_overwrites_an_earlier_runs_records(tmp_path):
    cfg = config(tmp_path)
    saved_study(cfg)
    (cfg.directory / "state.json").unlink()
    before = listing(cfg.directory)
    with pytest.raises(ConfigError, match=r"study 's' already has .*trials.csv.* in .*; pass "
                                          r"--resume .* or --fresh"):
        prepare(cfg)
    assert listing(cfg.directory) == before
    (optimizer, _), said = prepare(cfg, fresh=True)           # --fresh keeps it aside
    assert optimizer is not None and "--fresh: moved the earlier study folder to" in said
    kept = [p for p in cfg.directory.parent.iterdir() if p.name.startswith("s.")]
    assert len(kept) == 1 and listing(kept[0]) == before


def test_resume_with_nothing_there_starts_a_new_study_and_says_so(tmp_path):
    (optimizer, restart), said = prepare(config(tmp_path), resume=True)
    assert optimizer is not None and restart == []
    assert "--resume: no study at" in said and "starting a new one" in said


def test_fresh_checks_everything_before_it_moves_the_study(tmp_path):
    cfg = config(tmp_path, warm_start=["no-such-study"])
    saved_study(cfg)
    before = listing(cfg.directory)
    with pytest.raises(ConfigError, match="no-such-study"):
        prepare(cfg, fresh=True)
    assert listing(cfg.directory) == before
    assert [p.name for p in cfg.directory.parent.iterdir()] == ["s"]


@pytest.mark.parametrize("damage, words", [
    (lambda p: p.write_bytes(b"\xff\xfe not text"), "is not a readable tuner.study state"),
    (lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]),
     "is not a readable tuner.study state"),
    (lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "session": [1, 2]})),
     "holds a damaged study state"),
    (lambda p: p.write_text(json.dumps(space_of(json.loads(p.read_text()), 5))),
     "holds a damaged study state"),
])
def test_a_damaged_state_is_one_line_naming_the_file(tmp_path, damage, words):
    cfg = config(tmp_path)
    saved_study(cfg)
    damage(cfg.directory / "state.json")
    with pytest.raises(ConfigError) as err:
        prepare(cfg, resume=True)
    text = str(err.value)
    assert text.startswith("--resume: ") and words in text and "state.json" in text
    assert "\n" not in text


def test_the_backup_is_the_state_before_the_last_whole_write(tmp_path):
    """A whole write keeps the state it replaces (a hard link) and its journal (a copy)."""
    from tuner.study.state import read_study_state

    cfg = config(tmp_path)
    study = saved_study(cfg, n=3, wholes=1)
    path = cfg.directory / "state.json"
    _, before = read_study_state(path)
    SaveState(study, StudyStateFile(path)).save()        # a whole write
    _, backup = read_study_state(backup_path(path))
    assert backup["optimizer"]["trials"] == before["optimizer"]["trials"]
    assert os.stat(backup_path(path)).st_nlink == 1      # the old file itself, not a copy of it


def run_cli(capsys, *args):
    from tuner.app.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("damage", [
    lambda p: p.write_bytes(b"\xff\xfe not text"),
    lambda p: p.write_text(p.read_text()[:200]),
    lambda p: p.write_text(json.dumps(space_of(json.loads(p.read_text()), None) | {"config": 3})),
])
def test_show_and_best_of_a_damaged_state_say_so_in_one_line(tmp_path, capsys, damage):
    cfg = config(tmp_path)
    saved_study(cfg)
    damage(cfg.directory / "state.json")
    for command in ("show", "best"):
        code, out, err = run_cli(capsys, command, "s", "--output", cfg.output)
        assert code == 2 and out == ""
        assert err.startswith(f"tuner: {cfg.directory / 'state.json'} cannot be read (")
        assert err.count("\n") == 1 and "Traceback" not in err
    code, out, _ = run_cli(capsys, "list", "--output", cfg.output)
    assert code == 0 and "state.json unreadable" in out


@pytest.mark.parametrize("damage, problem", [
    (lambda p: p.write_text(p.read_text()[: p.read_text().rindex("\n", 0, -1) + 30]),
     "has a cut or malformed row"),
    (lambda p: p.write_text(p.read_text()[: p.read_text().rindex("\n", 0, -1) + 1]),
     "lacks 1 of the 3 trials that ended"),
    (lambda p: p.write_bytes(b"trial,status\n\xff\xfe\n"), "cannot be read"),
    (lambda p: p.unlink(), "is missing (3 trials ended)"),
])
def test_a_damaged_trial_table_never_names_a_wrong_best(tmp_path, capsys, damage, problem):
    """The best trial (trial 2, 0.7) is the table's last row: a table cut before it would name
    trial 1; the state names trial 2, and a warning says the table was not used."""
    cfg = config(tmp_path)
    saved_study(cfg)
    damage(cfg.directory / "trials.csv")
    code, out, err = run_cli(capsys, "best", "s", "--output", cfg.output, "--json")
    assert code == 0 and json.loads(out)["trial"] == 2 and json.loads(out)["accuracy"] == 0.7
    assert err.startswith(f"warning: {cfg.directory / 'trials.csv'} {problem}")
    assert "; shown from the study's state instead" in err and err.count("\n") == 1
    code, out, _ = run_cli(capsys, "show", "s", "--output", cfg.output)
    assert code == 0 and "trial: 2" in out
    with pytest.warns(UserWarning, match=problem.split(" (")[0]):
        from tuner import load_study as load

        loaded = load("s", output=cfg.output)
    assert sorted(loaded.trials["trial"]) == [0, 1, 2]


@pytest.mark.parametrize("metric", ["loss", "val_loss", "valLoss", "rmse", "error_rate"])
def test_a_metric_that_reads_as_a_loss_needs_its_direction_said(tmp_path, metric):
    """Optuna minimizes by default and Ray Tune asks for the mode; a study maximizes, so a
    metric named like a loss is refused until its mode is said, either way."""
    import tuner
    from tuner.app.api import study_mapping

    space = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
    with pytest.raises(ConfigError, match=rf"objective.mode: '{metric}' reads as something to "
                                          r"minimize.*mode: min"):
        tuner.run(lambda c: {metric: c["x"]}, space=space, objective=metric,
                  output=str(tmp_path))
    for mode in ("min", "max"):
        cfg = load_study(study_mapping(lambda c: {metric: c["x"]}, space=space,
                                       objective={"metric": metric, "mode": mode}))
        assert cfg.settings.mode == mode
    assert load_study(study_mapping(lambda c: {"f1": c["x"]}, space=space,
                                    objective="f1")).settings.mode == "max"


def test_the_first_line_says_what_the_study_maximizes_or_minimizes(tmp_path):
    from tuner.study.report import banner

    cfg = config(tmp_path)
    assert banner(cfg, "a local Ray", []).startswith("study s: maximize accuracy; logreg, ")
    cfg = config(tmp_path, objective={"metric": "accuracy", "mode": "min"})
    assert "study s: minimize accuracy; " in banner(cfg, "a local Ray", [])


def test_the_summary_names_a_stopped_run_that_had_reached_more_than_the_best_finished(tmp_path):
    from tuner.core.trial import Status
    from tuner.study.report import best_stopped_line

    cfg = config(tmp_path, objective={"metric": "accuracy", "mode": "max"})
    opt = Optimizer(cfg.space, cfg.settings, clock=lambda: 0.0)
    study = Study(cfg, opt, Session(), lambda: 0.0, 0.0)
    done, cut = opt.suggest().trial_id, opt.suggest().trial_id
    opt.tell(done, 0.93)
    opt.report(cut, 0.96, progress=0.25)
    opt.fail(cut, "ASHA: at rung 1", status=Status.STOPPED)
    line = best_stopped_line(study)
    assert line.startswith(f"a run stopped early had reached more: trial {cut}, accuracy 0.96")
    assert "(ASHA: at rung 1); the best finished run has 0.93" in line
    assert study.row(cut)["accuracy"] == 0.96 and study.row(cut)["status"] == "STOPPED"
    snap = study.snapshot(1.0)
    assert (snap.done, snap.stopped, snap.failed) == (1, 1, 0)


def test_a_run_killed_while_it_started_leaves_nothing_that_stops_the_next(tmp_path):
    """A driver killed before its first save leaves only the MLflow tracker's files: the next
    start (plain or --resume) begins the study; the tracker adopts its parent run."""
    cfg = config(tmp_path)
    cfg.directory.mkdir(parents=True)
    (cfg.directory / "mlflow_tracker.json").write_text("{}")
    for flags in ({}, {"resume": True}):
        (optimizer, restart), _ = prepare(cfg, **flags)
        assert optimizer is not None and restart == []
