import numpy as np
import pytest

from tuner.core.space import SearchSpace, SpaceError

SPEC = {
    "C": {"type": "float", "low": 1e-4, "high": 100.0, "log": True},
    "batch": {"type": "int", "low": 32, "high": 128},
    "kernel": {"type": "categorical", "choices": ["rbf", "poly", "linear"]},
    "lr": {"type": "float", "low": 0.0, "high": 1.0, "q": 0.25},
}


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
    got = {space.decode(u)["batch"] for u in space.snap(np.random.default_rng(1).random((5000, space.dim)))}
    assert got == set(range(32, 129))


@pytest.mark.parametrize(
    "spec, words",
    [
        ({}, ["empty"]),
        ({"a": {"type": "float", "low": 1.0, "high": 1.0}}, ["space.a", "low", "high"]),
        ({"a": {"type": "float", "low": 0.0, "high": 1.0, "log": True}}, ["space.a", "log", "low > 0"]),
        ({"a": {"type": "int", "low": 5, "high": 2}}, ["space.a", "low"]),
        ({"a": {"type": "categorical", "choices": []}}, ["space.a", "empty"]),
        ({"a": {"type": "uniform", "low": 0, "high": 1}}, ["space.a", "float", "int", "categorical"]),
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
