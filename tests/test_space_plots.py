"""The plots of what a study found (``tuner plot``): drawn from a trial table, with the
importance pointing at the setting that matters and the timeline's slots never overlapping."""

import numpy as np
import pytest
from matplotlib.image import imread

from tuner.core.space import SearchSpace
from tuner.study.space_plots import importance, lanes, space_plots

SPACE = {"lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
         "depth": {"type": "int", "low": 1, "high": 8},
         "act": {"type": "categorical", "choices": ["relu", "tanh"]}}


def table(n=40, seed=0):
    """Trials of a score that depends on lr alone, two at a time, some over the budget."""
    rng = np.random.default_rng(seed)
    rows, ends = [], [0.0, 0.0]
    for t in range(n):
        lr = float(10 ** rng.uniform(-4, 0))
        slot = int(np.argmin(ends))
        start, run = ends[slot], float(rng.uniform(0.5, 2.0))
        ends[slot] = start + run
        rows.append({"trial": t, "status": "FAILED" if t == 3 else "FINISHED",
                     "score": None if t == 3 else 1 - (np.log10(lr) + 2) ** 2 / 4,
                     "runtime": run, "over_budget": int(run > 1.8), "start": start,
                     "finish": start + run, "node": "n1", "lr": lr,
                     "depth": int(rng.integers(1, 9)), "act": str(rng.choice(["relu", "tanh"]))})
    return rows


def test_the_setting_that_matters_gets_the_importance():
    rows = [r for r in table() if r["status"] == "FINISHED"]
    imp = importance(rows, SearchSpace.from_dict(SPACE), "score")
    assert imp["lr"] > 0.8 and imp["lr"] == max(imp.values())
    assert sum(imp.values()) == pytest.approx(1.0)


def test_trials_on_one_slot_never_overlap():
    rows = table()
    slots = lanes(rows)
    assert len({s for s in slots.values()}) == 2
    for slot in set(slots.values()):
        spans = sorted((r["start"], r["finish"]) for r in rows if slots[r["trial"]] == slot)
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:]))


def test_the_plots_are_written_as_images(tmp_path):
    paths = space_plots(table(), SPACE, "score", "max", tmp_path, budget=1.8)
    assert [p.name for p in paths] == [
        "slice.png",
        "parallel.png",
        "importance.png",
        "timeline.png",
    ]
    for p in paths:
        img = imread(p)
        assert img.shape[0] > 200 and img.shape[1] > 400 and img[..., :3].std() > 0.05
    # a study with nothing finished yet: only the timeline
    assert [p.name for p in space_plots(table()[3:4], SPACE, "score", "max", tmp_path)] == [
        "timeline.png"
    ]


def test_a_pause_between_sessions_is_cut_out_of_the_study_time():
    from tuner.study.plots import study_clock

    clock, resumed = study_clock([(0, 10), (5, 12), (100, 110), (105, 120)])   # resumed at 100
    assert [clock(t) for t in (0, 12, 100, 120)] == [0, 12, 12, 32] and resumed == [12]
    clock, resumed = study_clock([(0, 10), (11, 20)])                           # a 1 s gap stays
    assert clock(20) == 20 and resumed == []
