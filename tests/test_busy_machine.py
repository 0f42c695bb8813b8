"""The README's main job on a machine three times slower: the built-in study (fewer trials,
same shape) run from the command line while four CPU-burning processes share the two cores
with its two workers (each gets a third of a core).  Its relative budget is measured under the
same load, so it ends with finished trials and a best model."""

import json
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient
from stores import sqlite_store

pytestmark = pytest.mark.slow


def test_the_built_in_study_finishes_trials_while_other_jobs_use_every_core(tmp_path, busy_machine):
    uri = sqlite_store(tmp_path)
    pids = busy_machine(4)
    assert all(pid > 0 for pid in pids)
    p = subprocess.run([sys.executable, "-m", "tuner.app.cli", "run", "--trials", "4",
                        "--output", str(tmp_path / "runs"), "--tracking-uri", uri],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    state = json.loads((tmp_path / "runs" / "cnn-digits" / "state.json").read_text())
    statuses = [t["status"] for t in state["optimizer"]["trials"]]
    assert len(statuses) == 4
    assert statuses.count("FINISHED") >= 3, p.stdout
    assert "best: trial" in p.stdout
    budget = state["config"]["budget"]
    assert budget["limit"] == "1.5x" and budget["seconds"] == pytest.approx(
        1.5 * budget["reference_seconds"]
    )
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("cnn-digits")
    parent = [r for r in client.search_runs([exp.experiment_id])
              if "mlflow.parentRunId" not in r.data.tags][0]
    assert float(parent.data.params["budget_limit"]) == pytest.approx(budget["seconds"])
