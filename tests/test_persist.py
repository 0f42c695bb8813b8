"""The one atomic-write helper: the old file survives a failed write, no temporary file is left."""

import json

import pytest

from tuner.core.persist import write_atomic, write_json


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
