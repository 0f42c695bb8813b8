import numpy as np
import pytest

from tuner.core.space import SearchSpace, SpaceError

SPEC = {"C": {"type": "float", "low": 1e-4, "high": 100.0, "log": True},
        "batch": {"type": "int", "low": 32, "high": 128},
        "kernel": {"type": "categorical", "choices": ["rbf", "poly", "linear"]},
        "lr": {"type": "float", "low": 0.0, "high": 1.0, "q": 0.25}}


def test_encode_decode_round_trip_and_unit_cube():
    space = SearchSpace.from_dict(SPEC)
    assert space.dim == 1 + 1 + 3 + 1
    cfg = {"C": 0.01, "batch": 77, "kernel": "poly", "lr": 0.75}
    u = space.encode(cfg)
    assert np.all((u >= 0) & (u <= 1))
    back = space.decode(u)
    assert back["batch"] == 77 and back["kernel"] == "poly" and back["lr"] == 0.75
    assert back["C"] == pytest.approx(0.01)
    # log scale: the middle of the cube is the geometric mean
    mid = space.decode(np.full(space.dim, 0.5))
    assert mid["C"] == pytest.approx(np.sqrt(1e-4 * 100.0))


def test_snap_gives_valid_configs_and_is_idempotent():
    space = SearchSpace.from_dict(SPEC)
    U = np.random.default_rng(0).random((200, space.dim))
    S = space.snap(U)
    assert np.allclose(space.snap(S), S)
    for u in S:
        cfg = space.decode(u)
        assert isinstance(cfg["batch"], int) and 32 <= cfg["batch"] <= 128
        assert cfg["lr"] in (0.0, 0.25, 0.5, 0.75, 1.0)
        assert np.allclose(space.encode(cfg), u)
    # every integer is reachable, ends included
    got = {
        space.decode(u)["batch"]
        for u in space.snap(np.random.default_rng(1).random((5000, space.dim)))
    }
    assert got == set(range(32, 129))


@pytest.mark.parametrize(
    "spec, words",
    [
        ({}, ["empty"]),
        ({"a": {"type": "float", "low": 1.0, "high": 1.0}}, ["space.a", "low", "high"]),
        ({"a": {"type": "float", "low": 0.0, "high": 1.0, "log": True}},
         ["space.a", "log", "low > 0"]),
        ({"a": {"type": "int", "low": 5, "high": 2}}, ["space.a", "low"]),
        ({"a": {"type": "categorical", "choices": []}}, ["space.a", "empty"]),
        (
            {"a": {"type": "uniform", "low": 0, "high": 1}},
            ["space.a", "float", "int", "categorical"],
        ),
        ({"a": {"type": "float", "low": 0, "high": 1, "step": 2}}, ["space.a", "step", "allowed"]),
        ({"a": {"type": "float", "high": 1}}, ["space.a", "low"]),
    ],
)
def test_bad_spaces_name_parameter_and_rule(spec, words):
    with pytest.raises(SpaceError) as err:
        SearchSpace.from_dict(spec)
    for w in words:
        assert w in str(err.value)


def test_ray_tune_domains_convert():
    tune = pytest.importorskip("ray.tune")
    from tuner.integrations.ray.tune_space import from_tune

    space = from_tune({
        "a": tune.uniform(0.0, 2.0),
        "b": tune.loguniform(1e-4, 1.0),
        "c": tune.randint(1, 10),
        "d": tune.choice(["x", "y"]),
        "e": tune.quniform(0.0, 1.0, 0.1),
        "f": tune.lograndint(1, 1000),
        "fixed": 3,
    })
    d = space.to_dict()
    assert d["a"] == {"type": "float", "low": 0.0, "high": 2.0, "log": False}
    assert d["b"]["log"] is True and d["b"]["low"] == 1e-4
    # tune.randint's upper bound is exclusive
    assert d["c"] == {"type": "int", "low": 1, "high": 9, "log": False}
    assert d["d"] == {"type": "categorical", "choices": ["x", "y"]}
    assert d["e"]["q"] == pytest.approx(0.1)
    assert d["f"]["log"] is True and d["f"]["high"] == 999
    assert "fixed" not in d

    with pytest.raises(SpaceError, match="space.g: "):
        from_tune({"g": tune.sample_from(lambda spec: 1)})


MIXED = {"act": {"type": "categorical", "choices": ["relu", "tanh", "gelu"]},
         "depth": {"type": "int", "low": 1, "high": 3},
         "width": {"type": "int", "low": 16, "high": 1024, "log": True},
         "lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True}}


def test_neighbours_change_one_discrete_parameter_by_one_move():
    sp = SearchSpace.from_dict(MIXED)
    start = {"act": "relu", "depth": 2, "width": 64, "lr": 0.01}
    N = sp.neighbours(sp.encode(start))
    moved = [{k: v for k, v in sp.decode(u).items() if k != "lr" and v != start[k]} for u in N]
    assert all(len(m) == 1 for m in moved)                           # one parameter each
    assert all(sp.decode(u)["lr"] == pytest.approx(0.01) for u in N)   # floats left alone
    assert sorted(map(str, moved)) == sorted(map(str, [
        {"act": "tanh"}, {"act": "gelu"}, {"depth": 1}, {"depth": 3},  # every other value
        {"width": 63}, {"width": 65}]))                              # many values: +- 1
    assert np.allclose(sp.snap(N), N)                                # valid points


def test_local_search_reaches_the_discrete_optimum_that_rounding_misses():
    """The acquisition peaks at one combination of a category and an int; from a valid start
    elsewhere, hill climbing over one-move neighbours reaches it (a relaxed optimum rounded once
    would need the peak to lie near the start)."""
    from tuner.core.maximize import local_search, maximize

    sp = SearchSpace.from_dict(MIXED)
    best = sp.encode({"act": "gelu", "depth": 3, "width": 64, "lr": 0.01})
    h = lambda U: -np.sum((np.atleast_2d(U) - best) ** 2, axis=1)       # noqa: E731
    start = sp.encode({"act": "relu", "depth": 1, "width": 64, "lr": 0.01})
    assert sp.decode(local_search(h, start, sp)) == sp.decode(best)
    C = sp.snap(np.random.default_rng(0).uniform(size=(8, sp.dim)))
    x = maximize(h, C, sp, smooth=True, n_starts=2, discrete=True)
    assert sp.decode(x)["act"] == "gelu" and sp.decode(x)["depth"] == 3


def test_paper_exact_settings_round_instead_of_searching():
    from tuner import PAPER_EXACT, Settings

    assert Settings().research.search.discrete_search == "local"
    assert Settings.from_dict(PAPER_EXACT).research.search.discrete_search == "round"


def test_a_categorical_gets_one_lengthscale_by_default_and_one_per_choice_as_before():
    """Shared: the one-hot block of a categorical is fit with one lengthscale (a Hamming kernel,
    every two distinct choices equally far apart); per-choice (PAPER_EXACT): one per column."""
    from tuner import Optimizer

    space = {"act": {"type": "categorical", "choices": ["a", "b", "c", "d"]},
             "x": {"type": "float", "low": 0.0, "high": 1.0}}
    f = {"a": 0.0, "b": 0.2, "c": 0.9, "d": 0.95}
    fitted = {}
    for mode in ("shared", "per-choice"):
        opt = Optimizer(space, refit_every=1, seed=0, research={"categorical_lengthscale": mode})
        for _ in range(14):
            s = opt.suggest()
            opt.tell(s.trial_id, f[s.config["act"]] + 0.3 * s.config["x"])
        fitted[mode] = opt.objective.gp_all.hyper.lengthscales
    shared, per_choice = fitted["shared"], fitted["per-choice"]
    assert np.allclose(shared[:4], shared[0]) and shared[4] != shared[0]
    assert not np.allclose(per_choice[:4], per_choice[0])
