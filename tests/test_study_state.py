"""The study state's journal: a step appends what changed; reading applies it, so the state
read back equals the whole state, and a resumed optimizer continues exactly."""

import json

from tuner import Optimizer
from tuner.study.state import StudyStateFile, journal_path, read_study_state

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0},
         "y": {"type": "float", "low": 0.0, "high": 1.0}}
CONFIG = {"study": "s"}


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def steps(opt, clock, n, save, where):
    """n loop steps of two starts and one end, each saved as the loop saves it."""
    running = [s.trial_id for s in (opt.suggest(), opt.suggest())]
    for _ in range(n):
        clock.now += 1.0
        tid = running.pop(0)
        x = opt.trials[tid].config
        opt.tell(tid, -(x["x"] - 0.3) ** 2 - (x["y"] - 0.6) ** 2, {"runtime": 1.0})
        where[tid] = {"node": f"n{tid % 2}"}
        s = opt.suggest()
        opt.started(s.trial_id, clock.now)
        running.append(s.trial_id)
        save(new={tid})


def whole(opt, where, session):
    return {"config": CONFIG, "optimizer": json.loads(json.dumps(opt.state_dict())),
            "session": json.loads(json.dumps({**session, "where": where}))}


def test_the_state_read_back_is_the_whole_state_and_the_optimizer_continues_exactly(tmp_path):
    clock, where, session = Clock(), {}, {"elapsed_before": 0.0, "busy_seconds": 0.0, "run_id": "r"}
    opt = Optimizer(SPACE, algorithm="gp-ucb", seed=3, n_initial=4, clock=clock)
    f = StudyStateFile(tmp_path / "state.json")

    def save(new, whole=False):
        session["busy_seconds"] += 1.0
        f.save(lambda: CONFIG, opt, session, where, new, whole=whole)

    save(set(), whole=True)
    for _ in range(6):
        steps(opt, clock, 2, save, where)
        assert journal_path(tmp_path / "state.json").exists()   # the last steps are in the journal
        save(set(), whole=True)
    steps(opt, clock, 3, save, where)
    assert journal_path(tmp_path / "state.json").exists()
    _, state = read_study_state(tmp_path / "state.json")
    assert {k: state[k] for k in ("config", "optimizer", "session")} == whole(opt, where, session)
    again = Optimizer.from_state(state["optimizer"], clock=clock)
    assert again.suggest().config == opt.suggest().config


def test_a_line_cut_by_a_crash_and_lines_of_an_older_state_file_are_not_applied(tmp_path):
    clock, where, session = (Clock(), {},
                             {"elapsed_before": 0.0, "busy_seconds": 0.0, "run_id": None})
    opt = Optimizer(SPACE, algorithm="random", seed=1, clock=clock)
    path = tmp_path / "state.json"
    f = StudyStateFile(path)
    save = lambda new, whole=False: f.save(lambda: CONFIG, opt, session, where, new, whole=whole)  # noqa: E731
    save(set(), whole=True)
    steps(opt, clock, 3, save, where)
    expected = whole(opt, where, session)
    journal = journal_path(path)
    with open(journal, "a") as fh:
        fh.write('{"generation": 1, "optimizer": {"cut')          # a crash mid-line
    _, state = read_study_state(path)
    assert {k: state[k] for k in ("config", "optimizer", "session")} == expected
    old_lines = journal.read_text()
    steps(opt, clock, 2, save, where)
    save(set(), whole=True)              # a new state file; then a crash before the journal went
    journal.write_text(old_lines)
    _, state = read_study_state(path)
    assert {k: state[k] for k in ("config", "optimizer", "session")} == whole(opt, where, session)


def test_the_journal_is_folded_into_the_state_file_once_it_outgrows_it(tmp_path):
    clock, where, session = (Clock(), {},
                             {"elapsed_before": 0.0, "busy_seconds": 0.0, "run_id": None})
    opt = Optimizer(SPACE, algorithm="random", seed=1, clock=clock)
    path = tmp_path / "state.json"
    f = StudyStateFile(path)
    sizes = []

    def save(new, whole=False):
        f.save(lambda: CONFIG, opt, session, where, new, whole=whole)
        journal = journal_path(path)
        sizes.append(journal.stat().st_size if journal.exists() else 0)

    save(set(), whole=True)
    steps(opt, clock, 200, save, where)
    folds = [i for i in range(1, len(sizes)) if sizes[i] < sizes[i - 1]]
    assert len(folds) >= 3                                    # the state file was rewritten
    assert max(sizes) <= 2 * path.stat().st_size             # the journal never ran away
    assert sum(s > 0 for s in sizes) > len(sizes) / 2         # most steps were journal lines


BUDGET = [{"metric": "runtime", "limit": 2.0, "type": "budget", "runtime": True}]


def budgeted_study(tmp_path, n):
    """A budgeted GP study of ``n`` steps saved as the loop saves it (one whole write first);
    the expected whole state and the journal's line lengths."""
    clock, where, session = (Clock(), {},
                             {"elapsed_before": 0.0, "busy_seconds": 0.0, "run_id": None})
    opt = Optimizer(SPACE, seed=2, n_initial=4, n_candidates=64, constraints=BUDGET, clock=clock)
    path = tmp_path / "state.json"
    f = StudyStateFile(path)
    save = lambda new, whole=False: f.save(lambda: CONFIG, opt, session, where, new, whole=whole)  # noqa: E731
    save(set(), whole=True)
    f._state_bytes = 10 ** 9        # no fold into the state file: every step a journal line
    steps(opt, clock, n, save, where)
    lengths = [len(line) for line in journal_path(path).read_text().splitlines()]
    return path, whole(opt, where, session), lengths, opt, clock


def test_a_journal_line_does_not_grow_with_the_study(tmp_path):
    path, expected, lengths, opt, clock = budgeted_study(tmp_path, 120)
    # the trials each model absorbed and those whose run time arrived are written as new tails
    assert sum(lengths[-20:]) < 1.2 * sum(lengths[10:30])
    _, state = read_study_state(path)
    assert {k: state[k] for k in ("config", "optimizer", "session")} == expected
    assert (
        Optimizer.from_state(state["optimizer"], clock=clock).suggest().config
        == opt.suggest().config
    )


def test_a_study_saved_by_the_version_before_reads_back_whole(tmp_path, monkeypatch):
    import tuner.study.state as st

    monkeypatch.setattr(st, "changes", lambda before, now: now)     # version 2: whole lists
    monkeypatch.setattr(st, "STATE_VERSION", 2)
    path, expected, lengths, _, _ = budgeted_study(tmp_path, 30)
    assert json.loads(path.read_text())["version"] == 2 and len(lengths) == 30
    monkeypatch.undo()
    _, state = read_study_state(path)
    assert {k: state[k] for k in ("config", "optimizer", "session")} == expected


def test_a_learning_curve_the_tracker_has_not_logged_survives_a_crash(tmp_path):
    """SaveState keeps the curve of an ended trial in the state until the tracker has logged it,
    and a resumed study has it back for its child run (a hard kill between the two)."""
    from tuner.loop.loop import Report
    from tuner.study.callbacks import Curves, SaveState
    from tuner.study.config import load_study
    from tuner.study.runner import StudyRunner
    from tuner.study.study import Session, Study

    cfg = load_study({"study": "curves", "trainable": "logreg", "output": str(tmp_path),
                      "space": {"C": {"type": "float", "low": 0.01, "high": 10.0}},
                      "objective": {"metric": "accuracy", "mode": "max"},
                      "fidelity": {"metric": "epoch", "max": 3}})
    cfg.directory.mkdir(parents=True)
    clock = Clock()
    opt = Optimizer(cfg.space, cfg.settings, clock=clock)
    study = Study(cfg, opt, Session(), clock, 0.0)
    saver, curves = SaveState(study, StudyStateFile(cfg.directory / "state.json")), Curves(study)
    done, running = opt.suggest().trial_id, opt.suggest().trial_id
    for tid in (done, running):
        opt.started(tid, 0.0)
    for epoch in (1, 2, 3):
        clock.now = float(epoch)
        curves.on_report(Report(done, clock.now, {"epoch": epoch, "accuracy": 0.5 + epoch / 10}))
    curves.on_report(Report(running, clock.now, {"epoch": 1, "accuracy": 0.4}))
    opt.tell(done, 0.8, {"runtime": 3.0})
    saver.save()                                     # then killed before the tracker logged it

    runner = StudyRunner(cfg, executor=None, make_tracker=None, resume=True, clock=clock)
    optimizer, restart = runner._prepare()
    runner._open(optimizer)
    assert restart == [running]
    assert list(runner.study.curves) == [done]        # the running trial starts again from scratch
    record = runner.study.record(done)
    assert [p["step"] for p in record.curve] == [1, 2, 3]
    assert record.curve[-1]["metrics"]["accuracy"] == 0.8


def resumed_after_an_upgrade(before, today, clock, edit=None):
    """A study saved with ``before``'s config after one finished trial (the state file then
    changed by ``edit``, as code of before would have written it), resumed with ``today``'s:
    (the optimizer, the runner, what it said)."""
    import io
    import json

    from tuner.study.callbacks import SaveState
    from tuner.study.progress import Progress
    from tuner.study.runner import StudyRunner
    from tuner.study.study import Session, Study

    before.directory.mkdir(parents=True)
    opt = Optimizer(before.space, before.settings, clock=clock, context_space=before.context_space)
    tid = opt.suggest(context=before.context).trial_id
    opt.started(tid, 0.0)
    opt.tell(tid, 0.8, {"runtime": 1.0})
    SaveState(Study(before, opt, Session(), clock, 0.0),
              StudyStateFile(before.directory / "state.json")).save()
    if edit is not None:
        path = before.directory / "state.json"
        state = json.loads(path.read_text())
        edit(state)
        path.write_text(json.dumps(state))
    out = io.StringIO()
    runner = StudyRunner(today, executor=None, make_tracker=None, resume=True, clock=clock,
                         progress=Progress(stream=out))
    return (*runner._prepare()[:1], runner, out)


def test_resume_after_an_upgrade_that_changed_a_default_keeps_the_studys_settings(tmp_path):
    """A default that changed since the study started (the user set neither value) does not
    stop --resume: the study goes on with the settings it started with, and says so; a setting
    the user changed still does, and the error names it."""
    import dataclasses

    import pytest

    from tuner.core.settings import Settings
    from tuner.study.schema import ConfigError
    from tuner.study.config import load_study
    from tuner.study.runner import StudyRunner

    def config(**optimizer):
        return load_study({"study": "upgraded", "trainable": "logreg", "output": str(tmp_path),
                           "space": {"C": {"type": "float", "low": 0.01, "high": 10.0}},
                           "objective": {"metric": "accuracy", "mode": "max"},
                           "optimizer": optimizer})

    today = config()
    old_default = today.settings.research.fitting.fit_max_points * 2   # an earlier version's
    before = dataclasses.replace(today, settings=Settings(research={"fit_max_points": old_default}))
    clock = Clock()
    optimizer, runner, out = resumed_after_an_upgrade(before, today, clock)
    assert optimizer.settings.research.fitting.fit_max_points == old_default
    # saved and logged from now
    assert runner.cfg.settings.research.fitting.fit_max_points == old_default
    said = out.getvalue()
    assert "--resume: the study keeps the settings it started with: " in said
    assert (f"optimizer.research.fit_max_points = {old_default} "
            f"(the default is now {today.settings.research.fitting.fit_max_points})") in said

    asked = config(research={"fit_max_points": 300})
    with pytest.raises(ConfigError,
                       match=r"the config changed \['optimizer: research.fit_max_points'\]"):
        StudyRunner(asked, executor=None, make_tracker=None, resume=True, clock=clock)._prepare()


def test_a_thompson_study_with_a_context_started_with_the_rank_warp_resumes_with_it(tmp_path):
    """Since 2026-11-27 TS with a context starts without the rank warp; a study of that kind
    saved before resumes with the warp it started with, and says so."""
    import dataclasses

    from tuner.core.settings import Settings
    from tuner.study.config import load_study

    today = load_study({"study": "ts-context", "trainable": "logreg", "output": str(tmp_path),
                        "space": {"C": {"type": "float", "low": 0.01, "high": 10.0}},
                        "objective": {"metric": "accuracy", "mode": "max"},
                        "optimizer": {"algorithm": "gp-ts-sdf"}, "context": {"rows": 100},
                        "context_space": {"rows": {"type": "float", "low": 10, "high": 1000}}})
    assert today.settings.output_warp == "none"
    before = dataclasses.replace(today, settings=Settings.from_dict(
        {**today.settings.to_dict(), "output_warp": "copula"}))
    optimizer, _, out = resumed_after_an_upgrade(before, today, Clock())
    assert optimizer.settings.output_warp == "copula"
    assert ('keeps the settings it started with: optimizer.output_warp = "copula" '
            '(the default is now "none")') in out.getvalue()


def test_a_study_of_categories_started_with_gp_ucb_sdf_resumes_with_it(tmp_path):
    """A study of categoricals only saved when a study's algorithm was ``gp-ucb-sdf`` goes on
    picking by UCB after ``auto`` became the default (log EI there), and says so."""
    import dataclasses

    from tuner.core.settings import Settings
    from tuner.study.config import load_study

    today = load_study({"study": "cats", "trainable": "svm", "output": str(tmp_path),
                        "space": {"C": {"type": "categorical", "choices": [0.1, 1.0, 10.0]},
                                  "gamma": {"type": "categorical", "choices": [1e-3, 1e-2]}},
                        "objective": {"metric": "accuracy", "mode": "max"}})
    assert today.algorithm == "gp-ei-sdf"
    before = dataclasses.replace(today, settings=Settings.from_dict(
        {**today.settings.to_dict(), "algorithm": "gp-ucb-sdf"}))
    optimizer, runner, out = resumed_after_an_upgrade(before, today, Clock())
    assert optimizer.settings.algorithm == "gp-ucb-sdf"
    assert runner.cfg.algorithm == "gp-ucb-sdf"
    assert ('keeps the settings it started with: optimizer.algorithm = "gp-ucb-sdf" '
            '(the default is now "auto")') in out.getvalue()


def test_a_study_started_when_auto_meant_none_or_copula_resumes_with_it(tmp_path):
    """A study without a budget saved with ``output_warp: auto`` before auto became
    tail-or-copula there (its state names no rule) goes on with the rule it ran, and says so."""
    from tuner.study.config import load_study

    today = load_study({"study": "warp-rule", "trainable": "logreg", "output": str(tmp_path),
                        "space": {"C": {"type": "float", "low": 0.01, "high": 10.0}},
                        "objective": {"metric": "accuracy", "mode": "max"}})
    assert today.settings.output_warp == "auto" and today.budget is None
    optimizer, runner, out = resumed_after_an_upgrade(
        today, today, Clock(), edit=lambda state: state["optimizer"]["warp"].pop("rule"))
    assert (optimizer.settings.output_warp, optimizer.scale.rule) == ("none-or-copula",
                                                                      "none-or-copula")
    assert runner.cfg.settings.output_warp == "none-or-copula"
    assert ('keeps the settings it started with: optimizer.output_warp = "none-or-copula" '
            '(the default is now "auto")') in out.getvalue()


def test_the_built_in_study_started_before_its_budget_changed_resumes_with_the_old_budget(tmp_path):
    """The built-in study budgets CPU seconds since 2026-11-27 (wall seconds, stopped at twice
    the limit, before): one started before resumes with the budget it started with, limit and
    stop included, and says so; a budget the user changed is still refused."""
    import pytest

    from tuner.study.defaults import DEFAULT_STUDY, EARLIER_DEFAULT_BUDGETS
    from tuner.study.schema import ConfigError
    from tuner.study.config import load_study
    from tuner.study.runner import StudyRunner

    def built_in(**budget):
        return load_study({**DEFAULT_STUDY, "output": str(tmp_path),
                           "budget": {**DEFAULT_STUDY["budget"], **budget}})

    today = built_in()
    assert today.budget.metric == "cpu_time" and today.budget_pending
    before = load_study({**DEFAULT_STUDY, "output": str(tmp_path),
                         "budget": EARLIER_DEFAULT_BUDGETS[0]}).with_budget(0.9, 0.6)
    optimizer, runner, out = resumed_after_an_upgrade(before, today, Clock())
    b = runner.cfg.budget
    assert (b.metric, b.stop_margin, b.seconds, b.reference_seconds) == ("runtime", 1.0, 0.9, 0.6)
    assert runner.cfg.settings.constraints[-1]["metric"] == "runtime"
    assert runner.cfg.settings.stop_margin == 1.0 == optimizer.settings.stop_margin
    assert ("keeps the budget it started with: runtime <= 1.5 x 0.6 s (the reference run) = "
            "0.9 s; a run is stopped at 1.8 s (the built-in study's budget is now cpu_time)"
            ) in out.getvalue()

    with pytest.raises(ConfigError, match=r"the config changed \['budget'"):
        StudyRunner(built_in(limit="2x"), executor=None, make_tracker=None, resume=True,
                    clock=Clock())._prepare()


def test_a_study_started_before_wall_time_budgets_stopped_runs_resumes_without_the_stop(tmp_path):
    """A wall-time budget stops a run at 1.5 x the limit since 2026-12-06 (``stop_margin:
    auto``): a study started before, without a stop, resumes without one and says so, its
    stopped runs still at eq. 1's minimum."""
    from tuner.study.config import load_study

    base = {"study": "wall", "trainable": "logreg", "output": str(tmp_path),
            "space": {"C": {"type": "float", "low": 0.01, "high": 10.0}},
            "budget": {"limit": 2.0, "metric": "runtime"}}
    before = load_study({**base, "budget": {**base["budget"], "stop_margin": None},
                         "optimizer": {"research": {"stopped_objective": "minimum"}}})
    today = load_study(base)
    assert (before.budget.stop_at, today.budget.stop_at) == (None, 3.0)
    optimizer, runner, out = resumed_after_an_upgrade(before, today, Clock())
    assert runner.cfg.budget.stop_margin is None and runner.cfg.budget.stop_at is None
    assert optimizer.settings.stop_margin is None
    assert optimizer.settings.research.censored.stopped_objective == "minimum"
    assert "keeps the budget it started with" in out.getvalue()
    assert "no run stopped over it" in out.getvalue()
