"""The shipped lookup tables (tuner/bench/tables) and one tiny paper-001 HPO replay on them."""

import numpy as np
import pytest

from conftest import load_script
from trainables import get_trainable
from tuner import SearchSpace
from tuner.bench.lookup import NAMES, available, load_table

paper001_hpo = load_script("scripts/reproduce/reproduce_paper001_hpo.py")


@pytest.mark.parametrize("name", NAMES)
def test_table_loads_with_documented_columns_and_ranges(name):
    assert available(name)
    t = load_table(name)
    assert t.space == get_trainable(name).space
    n = len(t.accuracy)
    assert n >= 100 and t.X.shape == (n, len(t.space)) and t.train_time.shape == (n,)
    assert np.all((t.accuracy >= 0) & (t.accuracy <= 1)) and np.all(t.train_time > 0)
    for j, spec in enumerate(t.space.values()):
        assert np.all((t.X[:, j] >= spec["low"]) & (t.X[:, j] <= spec["high"]))
    assert t.meta["n_points"] == n and t.meta["build_seconds"] > 0
    assert t.accuracy.max() > 0.9          # the best configuration really learned something
    assert len(np.unique(t.U, axis=0)) == n  # no two rows at the same point


@pytest.mark.parametrize("name", NAMES)
def test_nearest_finds_grid_points_and_their_neighbourhood(name):
    t = load_table(name)
    space = SearchSpace.from_dict(t.space)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(t.accuracy), 10, replace=False):
        assert t.nearest(dict(zip(t.names, t.X[i]))) == i
        assert t.nearest(t.config(i)) == i
        # a small step in the unit cube (well inside the grid cell) stays at row i
        u = space.encode(t.config(i)) + rng.uniform(-0.01, 0.01, space.dim)
        assert t.nearest(space.decode(np.clip(u, 0, 1))) == i
    # a far-off perturbation lands on a row that is at least as close as row i
    u = np.clip(space.encode(t.config(0)) + 0.2, 0, 1)
    j = t.nearest(space.decode(u))
    d = ((t.U - space.encode(space.decode(u))) ** 2).sum(1)
    assert d[j] == d.min()


def test_tiny_paper001_run_has_non_increasing_regret():
    for algo in ("gp-ucb-sdf", "gp-ucb"):
        regret, distinct = paper001_hpo.run("svm", "poisson", algo, seed=0, T=30)
        assert regret.shape == (30,) and 1 <= distinct <= 30
        done = regret[np.isfinite(regret)]
        assert len(done) > 10 and np.all(done >= 0) and np.all(np.diff(done) <= 0)
