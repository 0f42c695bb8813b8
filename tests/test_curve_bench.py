"""The learning-curve benchmark (tuner.bench.curves) end to end on a short horizon: every method
whose package is installed runs through its own API, and the rows say what happened."""

from __future__ import annotations

import math

import pytest

from tuner.bench.curve_peers import METHODS, available
from tuner.bench.curves import PROBLEMS, one_run, write_report

STOPPING = {"tuner-asha", "random-topk", "ray-asha-random", "ray-asha-tpe", "optuna-tpe-hyperband",
            "optuna-tpe-sh", "syne-asha", "syne-bohb"}


@pytest.mark.parametrize("method", METHODS)
def test_each_method_runs_and_its_row_adds_up(method):
    if not available(method):
        pytest.skip(f"{method}: its package is not installed (the bench extra)")
    row = one_run("plateau", 4, method, seed=1, rounds=4)
    assert 0 < row["finished"] <= row["trials"] and row["stopped"] < row["trials"]
    assert row["best_1"] <= PROBLEMS["plateau"]().f_opt + 1e-9
    assert not math.isnan(row["best_1"])
    assert math.isnan(row["best_0.25"]) or row["best_0.25"] <= row["best_0.5"] <= row["best_1"]
    assert 0 <= row["stopped_seconds"] <= row["worker_seconds"]
    if method in STOPPING:
        assert row["stopped"] > 0 and row["stopped_seconds"] > 0   # the rule stopped runs
    if method == "tuner":
        assert row["stopped"] == 0


def test_a_budgeted_problem_counts_over_budget_seconds_and_ours_stop_by_pace(tmp_path):
    rows = [one_run("crossing-budget", 4, m, seed=0, rounds=4)
            for m in ("tuner", "random-topk", "ray-asha-tpe", "optuna-tpe-hyperband")]
    # ours learn the budget and stop runs by pace: a small share of the worker-seconds over it,
    # where random search (which does not know the budget) spends most of them there
    assert rows[1]["over_budget_seconds"] > 0.3 * rows[1]["worker_seconds"]
    assert rows[0]["over_budget_seconds"] < 0.2 * rows[1]["over_budget_seconds"]
    from tuner.core.persist import write_table

    write_table(tmp_path / "runs.csv", rows)
    text = write_report(tmp_path)
    assert "crossing-budget, W = 4" in text and "| tuner |" in text
    assert (tmp_path / "best_vs_time.png").stat().st_size > 0


@pytest.mark.parametrize("name", ["cnn", "logreg"])
def test_the_shipped_curve_tables_hold_whole_real_runs(name):
    from tuner.bench.curve_tables import CurveTable

    t = CurveTable(name)
    assert len(t.configs) == 128 and all(len(s) == 2 for s in t.seeds.values())
    kept = 80 if name == "cnn" else 100
    for run in t.runs.values():
        assert len(run) == kept and run[-1][0] == t.epochs
        seconds = [sec for _, _, sec in run]
        assert all(b > a for a, b in zip(seconds, seconds[1:]))      # time runs forward
        assert all(0.0 <= a <= 1.0 for _, a, _ in run)
    c = t.configs[5]
    # a table point snaps to itself
    assert t.nearest(c) == t.ids[5]
    nudged = {k: (v * 1.001 if isinstance(v, float) else v) for k, v in c.items()}
    assert t.nearest(nudged) == t.ids[5]
    final, _, curve = t(c)
    assert curve[-1][0] == 1.0 and curve[-1][1]["objective"] == final
    assert t.run_time()(c, None) == t.runs[(t.ids[5], 0)][-1][2] or \
        t.run_time()(c, None) == t.runs[(t.ids[5], 1)][-1][2]      # the drawn seed's own time


def test_a_study_on_recorded_cnn_curves_stops_runs_and_finds_a_good_one():
    row = one_run("cnn-table", 4, "tuner-asha", seed=0, rounds=6)
    assert row["stopped"] > 0 and row["finished"] > 0
    assert row["best_1"] > 0.8                  # half the table sits at chance (0.1)
