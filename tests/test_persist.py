"""The one atomic-write helper: the old file survives a failed write, no temporary file is left."""

import json

import pytest

from tuner.core.persist import StateError, read_state, write_atomic, write_json, write_state


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "state.json"
    write_json(path, {"trials": [1, 2]})
    with pytest.raises(TypeError):
        write_atomic(path, b"not text")           # fails while writing the temporary file
    with pytest.raises(TypeError):
        write_json(path, {"bad": object()})       # fails before any file is touched
    assert json.loads(path.read_text()) == {"trials": [1, 2]}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
    write_atomic(path, "{}")
    assert path.read_text() == "{}"


def test_a_state_carries_its_kind_and_version_and_another_is_refused_by_name(tmp_path):
    path = tmp_path / "state.json"
    write_state(path, "tuner.study", 2, {"config": {"a": 1}})
    assert read_state(path, "tuner.study", (1, 2)) == (2, {"format": "tuner.study", "version": 2,
                                                           "config": {"a": 1}})
    with pytest.raises(StateError, match=r"state.json is not a tuner.optimizer state \(format "
                                         r"'tuner.study'\)"):
        read_state(path, "tuner.optimizer", (2,))
    with pytest.raises(StateError, match=r"tuner.study version 2 is not one this version of tuner "
                                         r"reads \(1\)"):
        read_state(path, "tuner.study", (1,))
    path.write_text('{"format": "tuner.st')
    with pytest.raises(StateError, match="not a readable tuner.study state"):
        read_state(path, "tuner.study", (2,))


def test_an_optimizer_state_of_version_1_loads_with_its_statuses_renamed():
    """Version 1 said COMPLETED for FINISHED, and packed TIMED_OUT / KILLED into a FAILED
    trial's reason; loading it gives the one status vocabulary."""
    from tuner import Optimizer
    from tuner.core.trial import Status

    opt = Optimizer({"x": {"type": "float", "low": 0, "high": 1}}, algorithm="random", seed=0)
    for _ in range(4):
        opt.suggest()
    opt.tell(0, 0.5)
    opt.fail(1, "ran longer than run.trial_timeout = 2 s", status="TIMED_OUT")
    opt.fail(2, "RuntimeError: diverged")
    state = json.loads(json.dumps(opt.state_dict()))
    state["version"] = 1
    old = {"FINISHED": "COMPLETED", "TIMED_OUT": "FAILED"}
    for t in state["trials"]:
        if t["status"] == "TIMED_OUT":
            t["reason"] = f"TIMED_OUT: {t['reason']}"
        t["status"] = old.get(t["status"], t["status"])
    loaded = Optimizer.from_state(state)
    assert [(tr.status, tr.reason) for tr in loaded.trials] == [
        (Status.FINISHED, None), (Status.TIMED_OUT, "ran longer than run.trial_timeout = 2 s"),
        (Status.FAILED, "RuntimeError: diverged"), (Status.RUNNING, None)]
