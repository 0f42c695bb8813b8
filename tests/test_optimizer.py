import json
import re

import numpy as np
import pytest

from conftest import optimizer
from tuner import ALGORITHMS, Optimizer, SpaceError
from tuner.core.gp import GaussianProcess, Hyperparameters
from tuner.core.posterior import Posterior
from tuner.core.kernels import SquaredExponential
from tuner.core.maximize import maximize
from tuner.loop.problems import gp_sample_1d
from tuner.loop.simulator import Fixed, Poisson, RunTime, SimClock, simulate
from tuner.core.space import SearchSpace

MIXED = {"lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
         "width": {"type": "int", "low": 8, "high": 64},
         "act": {"type": "categorical", "choices": ["relu", "tanh"]}}


def mixed_objective(cfg):
    return float(np.exp(-((np.log10(cfg["lr"]) + 2.0) ** 2)) * (0.7 + 0.3 * (cfg["act"] == "relu"))
                 - 0.002 * abs(cfg["width"] - 40))


def test_refinement_finds_the_known_argmax_of_a_smooth_function():
    space = SearchSpace.from_dict({"a": {"type": "float", "low": 0, "high": 1},
                                   "b": {"type": "float", "low": 0, "high": 1}})
    h = lambda U: -((U[:, 0] - 0.3712) ** 2) - 2 * (U[:, 1] - 0.8123) ** 2
    C = space.snap(np.random.default_rng(0).random((64, 2)))
    x = maximize(h, C, space, smooth=True)
    assert np.allclose(x, [0.3712, 0.8123], atol=2e-3)


@pytest.mark.parametrize("algo", ["gp-ucb-sdf", "gp-ucb", "gp-ts-sdf", "asy-ts", "randgp-ucb",
                                  "gp-ei-sdf"])
def test_each_acquisition_picks_the_argmax_of_its_estimate(algo):
    """On a finite domain with a posterior known by hand, the choice is the argmax of h_t."""
    D = np.linspace(0, 1, 51)[:, None]
    opt = Optimizer({"x": {"type": "float", "low": 0, "high": 1}}, algorithm=algo, domain=D,
                    objective_bounds=(0, 1), window=100, n_initial=0, clock=SimClock(), seed=3,
                    beta=0.5, research={"b_y": 0.0})
    for x, v in [(0.1, 0.2), (0.5, 0.9), (0.9, 0.3)]:
        opt.tell(opt.suggest(config={"x": x}).trial_id, v)
    state = opt.rng.bit_generator.state
    chosen = opt.suggest().config["x"]
    gp = GaussianProcess(SquaredExponential(), Hyperparameters(1.0, np.array([0.2]), 1e-3))
    gp.set_anchor(opt.domain)
    gp.extend(np.array([[0.1], [0.5], [0.9]]))
    post = Posterior(gp, np.array([0.2, 0.9, 0.3]), gp)
    mean, var = post.predict(opt.domain)
    if algo in ("gp-ucb-sdf", "gp-ucb"):
        expect = D[np.argmax(mean + 0.5 * np.sqrt(var)), 0]
    elif algo == "gp-ei-sdf":   # EI over the largest posterior mean at the points tried
        from scipy.stats import norm
        best = post.predict(np.array([[0.1], [0.5], [0.9]]))[0].max()
        sd = np.sqrt(var)
        ei = (mean - best) * norm.cdf((mean - best) / sd) + sd * norm.pdf((mean - best) / sd)
        expect = D[np.argmax(ei), 0]
    else:   # replay the optimizer's random draw
        from tuner.core.acquisition import thompson_sample
        rng = np.random.default_rng(0)
        rng.bit_generator.state = state
        if algo == "randgp-ucb":
            vals = mean + rng.normal(0.0, 0.5) * np.sqrt(var)
        else:
            vals = thompson_sample(post, opt.domain, 0.5, rng)
        expect = D[np.argmax(vals), 0]
    assert chosen == pytest.approx(expect)


def test_log_ei_is_exact_where_ei_is_representable_and_still_ranks_where_it_underflows():
    from scipy.stats import norm

    from tuner.core.acquisition import log_h
    z = np.linspace(-8, 6, 141)
    assert np.allclose(log_h(z), np.log(norm.pdf(z) + z * norm.cdf(z)), rtol=1e-9, atol=0)
    far = -np.logspace(1.5, 8, 60)[::-1]          # -1e8 ... -31.6, increasing
    assert np.all(norm.pdf(far[-1]) + far[-1] * norm.cdf(far[-1]) < 1e-200)
    v = log_h(far)
    assert np.all(np.isfinite(v)) and np.all(np.diff(v) > 0)


def test_auto_is_log_ei_on_categories_only_in_a_small_pool_and_gp_ucb_sdf_elsewhere():
    """``algorithm="auto"`` suggests what ``gp-ei-sdf`` suggests on a space of categoricals
    only while at most 3 trials run, and what ``gp-ucb-sdf`` suggests in a wider pool, with a
    float among the parameters or with a constraint."""
    cats = {"a": ["x", "y", "z"], "b": ["p", "q"],
            "c": {"type": "categorical", "choices": [1, 2, 3, 4]}}
    mixed = {**cats, "lr": {"type": "float", "low": 1e-3, "high": 1.0, "log": True}}
    budget = [{"metric": "runtime", "limit": 1.0, "type": "budget", "runtime": True}]

    def score(c):
        return ({"x": 0.1, "y": 0.5, "z": 0.3}[c["a"]] + (c["b"] == "q") * 0.2
                + 0.1 * c["c"] + 0.3 * (c["a"] == "y" and c["c"] == 2) + 0.2 * c.get("lr", 0))

    def run(space, algorithm, pool=1, **kw):
        """Suggestions with ``pool`` trials out at once, the oldest told first."""
        opt = Optimizer(space, algorithm=algorithm, seed=4, clock=SimClock(), **kw)
        out, picked = [], []
        for _ in range(16):
            s = opt.suggest()
            out.append(s)
            picked.append(s.config)
            if len(out) == pool:
                done = out.pop(0)
                opt.tell(done.trial_id, score(done.config), {"runtime": 0.5} if kw else None)
        return picked

    assert run(cats, "auto") == run(cats, "gp-ei-sdf") != run(cats, "gp-ucb-sdf")
    assert run(cats, "auto", pool=4) == run(cats, "gp-ei-sdf", pool=4)
    assert run(cats, "auto", pool=5) == run(cats, "gp-ucb-sdf", pool=5) != run(
        cats, "gp-ei-sdf", pool=5)
    assert run(mixed, "auto") == run(mixed, "gp-ucb-sdf")
    assert run(cats, "auto", constraints=budget) == run(cats, "gp-ucb-sdf", constraints=budget)


@pytest.mark.parametrize("algo", ["gp-ucb-sdf", "gp-ts-sdf", "gp-ei-sdf"])
def test_finds_the_optimum_of_a_smooth_2d_function(algo):
    space = {"a": {"type": "float", "low": 0, "high": 1},
             "b": {"type": "float", "low": 0, "high": 1}}
    f = lambda c: float(np.exp(-8 * ((c["a"] - 0.3) ** 2 + (c["b"] - 0.7) ** 2)))
    opt = Optimizer(space, algorithm=algo, objective_bounds=(0, 1), window=10, seed=1)
    res = simulate(opt, f, Fixed(2), n_trials=60, seed=1, f_opt=1.0)
    assert res.simple_regret()[-1] < 0.01
    rnd = simulate(Optimizer(space, algorithm="random", seed=1), f, Fixed(2), 60, seed=1, f_opt=1.0)
    assert res.simple_regret()[-1] < rnd.simple_regret()[-1]


@pytest.mark.parametrize("algo", sorted(ALGORITHMS))
def test_save_load_round_trip_gives_the_identical_next_suggestion(algo, tmp_path):
    clock = SimClock()
    opt = Optimizer(MIXED, algorithm=algo, objective_bounds=(-0.2, 1.0), refit_every=5,
                    window_unit="seconds", window="auto", clock=clock, seed=7)
    simulate(opt, mixed_objective, RunTime(lambda c: 1 + c["width"] / 32), n_trials=37,
             workers=3, seed=2)
    opt.fail(opt.suggest().trial_id, "killed", status="KILLED")
    opt.suggest()                                       # one still running
    path = tmp_path / "state.json"
    opt.save(path)
    assert json.loads(path.read_text())["version"] == 2
    loaded = Optimizer.load(path, clock=opt.clock)   # simulate() installed its clock
    for gp in ("gp_all", "gp_done"):
        a, b = getattr(opt.objective, gp), getattr(loaded.objective, gp)
        assert a.n == b.n and np.array_equal(a.L, b.L)
    for _ in range(3):
        a, b = opt.suggest(), loaded.suggest()
        assert a == b
        opt.tell(a.trial_id, 0.5)
        loaded.tell(b.trial_id, 0.5)


RUNTIME_BUDGET = [{"metric": "runtime", "limit": 2.0, "type": "budget", "runtime": True}]


@pytest.mark.parametrize(
    "algo, constrained",
    [
        ("gp-ucb-sdf", {"constraint_handler": "rpol", "stop_margin": 0.1}),
        ("gp-ucb-sdf", {"constraint_handler": "rpol", "sliding_window": 12}),
        ("gp-ts-sdf", {"constraint_handler": "cbo"}),
        ("randgp-ucb", {"constraint_handler": "cbo", "handler_options": {"rho": 5.0}}),
        ("gp-ucb-sdf", {"constraint_handler": "penalty", "handler_options": {"epoch": 4}}),
        (
            "gp-ucb",
            {
                "constraint_handler": "penalty",
                "handler_options": {"update": "additive", "epoch": 5},
            },
        ),
    ],
)
def test_save_load_round_trip_with_constraints(algo, constrained, tmp_path):
    """The handler's multipliers, epoch sums and the set of constraint values already fed to it
    are in the state: the loaded optimizer makes the identical next suggestions."""
    opt = Optimizer(MIXED, algorithm=algo, objective_bounds=(-0.2, 1.0), refit_every=5,
                    window_unit="seconds", window="auto", seed=7, constraints=RUNTIME_BUDGET,
                    n_candidates=256, **constrained)
    simulate(opt, mixed_objective, RunTime(lambda c: 0.5 + c["width"] / 32), n_trials=24,
             workers=3, seed=2)
    opt.save(tmp_path / "state.json")
    loaded = Optimizer.load(tmp_path / "state.json", clock=opt.clock)
    assert loaded.handler.state_dict() == opt.handler.state_dict()
    opt.clock.now += 1.0
    for k in range(3):
        a, b = opt.suggest(), loaded.suggest()
        assert a == b
        assert loaded.handler.state_dict() == opt.handler.state_dict()
        opt.tell(a.trial_id, 0.5, metrics={"runtime": 1.0 + k})
        loaded.tell(b.trial_id, 0.5, metrics={"runtime": 1.0 + k})


def test_simulation_is_deterministic_per_seed_and_iteration_delays_are_exact():
    fn = gp_sample_1d(n=200, seed=0)
    runs = [
        simulate(
            Optimizer(
                fn.space, objective_bounds=(0, 1), window=20, domain=fn.grid[:, None], seed=4
            ),
            fn,
            Poisson(5),
            80,
            seed=9,
            f_opt=fn.f_opt,
        )
        for _ in range(2)
    ]
    assert runs[0].configs == runs[1].configs
    assert np.array_equal(runs[0].simple_regret(), runs[1].simple_regret(), equal_nan=True)
    opt = runs[0].optimizer
    for tr in opt.trials:
        if tr.status == "COMPLETED":
            assert tr.delay("iterations") == pytest.approx(
                runs[0].finish[tr.trial_id] - tr.start_index - 0.5
            )


def test_workers_are_kept_busy():
    opt = Optimizer(MIXED, algorithm="random", seed=0)
    res = simulate(opt, mixed_objective, RunTime(lambda c: 2.0), n_trials=40, workers=4, seed=0)
    # at any start time no more than 4 trials are running, and a free worker never waits
    for t in res.start:
        running = np.sum((res.start <= t) & (res.finish > t))
        assert running <= 4
    assert max(tr.pending_at_suggest for tr in opt.trials) == 3


@pytest.mark.parametrize("kw, words", [
    ({"algorithm": "gp-foo"}, ["algorithm", "gp-ucb-sdf"]),
    ({"mode": "maximize"}, ["mode", "'max'", "'min'"]),
    ({"window_unit": "minutes"}, ["window_unit", "iterations", "seconds"]),
    ({"window": -3}, ["window.size", "positive", "'inf'", "'auto'"]),
    ({"window": "wide"}, ["window.size", "positive", "'inf'", "'auto'"]),
    ({"objective_bounds": (1.0, 0.0)}, ["objective_bounds", "low < high"]),
    ({"kernel": "rbf"}, ["kernel", "matern52", "se"]),
    ({"beta_schedule": "fast"}, ["beta_schedule", "constant"]),
    ({"refit_every": 0}, ["refit_every", ">= 1", "(got 0)"]),
    ({"n_initial": "many"}, ["n_initial", "a whole number or 'auto' or 'lean'", "'many'"]),
    ({"delay_lambda_power": 2}, ["delay_lambda_power", "in [0, 1]"]),
    ({"stop_margin": True}, ["stop_margin", "number or null"]),
    ({"lengthscale_prior": "yes"}, ["lengthscale_prior", "true or false"]),
    ({"windw": 3}, ["unknown", "windw"]),
])
def test_bad_settings_name_the_field_and_allowed_values(kw, words):
    with pytest.raises(ValueError) as err:
        optimizer(MIXED, **kw)
    for w in words:
        assert w in str(err.value)


def test_bad_tells_are_clear():
    opt = Optimizer(MIXED, seed=0)
    s = opt.suggest()
    with pytest.raises(KeyError, match="unknown trial_id 99"):
        opt.tell(99, 1.0)
    opt.tell(s.trial_id, 0.3)
    with pytest.raises(ValueError, match="already FINISHED"):
        opt.tell(s.trial_id, 0.3)
    s2 = opt.suggest()
    opt.tell(s2.trial_id, float("nan"))
    assert opt.trials[s2.trial_id].status == "FAILED"
    with pytest.raises(ValueError, match="not a tuner.optimizer state"):
        Optimizer.from_state({"format": "something"})


@pytest.mark.parametrize("value", [None, [0.5], "0.5", True, {"v": 1}])
def test_a_result_that_is_no_number_is_refused_naming_the_trial_and_the_value(value):
    opt = Optimizer(MIXED, seed=0)
    tid = opt.suggest().trial_id
    with pytest.raises(ValueError, match=rf"tell\(trial {tid}\): the value must be a number, "
                                         rf"got {re.escape(repr(value))}"):
        opt.tell(tid, value)
    with pytest.raises(ValueError, match=rf"tell\(trial {tid}\): metrics\['cost'\] must be a "
                                         r"number, got '3'"):
        opt.tell(tid, 0.5, {"cost": "3"})
    with pytest.raises(ValueError, match=rf"report\(trial {tid}\): the value must be a number"):
        opt.report(tid, value, progress=1)
    opt.tell(tid, 0.5)                   # the refusals left the trial running
    assert opt.trials[tid].value == 0.5


def test_a_configuration_outside_the_space_is_refused_not_clipped():
    opt = Optimizer(MIXED, seed=0)
    config = dict(opt.suggest().config)
    name = next(k for k, p in MIXED.items() if p["type"] == "float")
    with pytest.raises(SpaceError, match=rf"suggest\(config\)\.{name}: value .* is outside"):
        opt.suggest(config={**config, name: MIXED[name]["high"] * 10})
    with pytest.raises(SpaceError, match=r"suggest\(config\) lacks parameter\(s\)"):
        opt.suggest(config={name: config[name]})
    assert len(opt.trials) == 1
