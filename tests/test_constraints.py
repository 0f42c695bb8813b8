import math

import numpy as np
import pytest

from conftest import optimizer
from tuner import PAPER_EXACT, Optimizer, Settings
from tuner.core.acquisition import probability_feasible
from tuner.core.constraints import CBO
from tuner.core.gp import GaussianProcess, Hyperparameters
from tuner.core.posterior import Posterior
from tuner.core.kernels import SquaredExponential
from tuner.loop.simulator import Fixed, RunTime, SimClock, simulate

LINE = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
GRID = np.linspace(0.0, 1.0, 101)[:, None]
COST = {"metric": "cost", "limit": 0.6, "type": "upper"}        # g = x - 0.6 <= 0
RUNTIME = {"metric": "runtime", "limit": 10.0, "type": "budget", "runtime": True}


def make(**kw):
    """The papers' rules (RPOL by default, hard censoring), whatever the product's defaults."""
    clock = SimClock()
    kw.setdefault("objective_bounds", (0.0, 1.0))
    kw.setdefault("seed", 0)
    return optimizer(LINE, PAPER_EXACT, clock=clock, **kw), clock


# --- multipliers against hand computations --------------------------------------------------------

def test_rpol_rectified_q_update_uses_values_in_arrival_order():
    """Q_{t+1} = max(Q_t + sum of c^+ that arrived in round t, sqrt t), Q_1 = 1 (004 App. C)."""
    opt, clock = make(constraints=[COST], n_initial=100, window=50)
    Q = []
    for _ in range(3):
        opt.suggest()
        Q.append(float(opt.handler.Q[0]))
    assert Q == pytest.approx([1.0, 1.0, math.sqrt(2)])
    opt.tell(2, 0.5, metrics={"cost": 1.5})          # the last started arrives first: c = 0.9
    opt.suggest()                                     # round t = 3
    assert opt.handler.Q[0] == pytest.approx(max(math.sqrt(2) + 0.9, math.sqrt(3)))
    opt.tell(0, 0.5, metrics={"cost": 0.1})           # c = -0.5: rectified to 0
    opt.tell(1, 0.5, metrics={"cost": 2.6})           # c = 2.0
    opt.suggest()                                     # round t = 4
    assert opt.handler.Q[0] == pytest.approx(math.sqrt(2) + 0.9 + 2.0)
    # nothing arrives: the floor sqrt(t) takes over
    for _ in range(30):
        opt.suggest()
    assert opt.handler.Q[0] == pytest.approx(math.sqrt(34))


def test_several_constraints_keep_one_multiplier_each():
    opt, clock = make(constraints=[COST, RUNTIME], n_initial=100, window=50)
    a, b = opt.suggest().trial_id, opt.suggest().trial_id
    clock.now = 25.0
    opt.tell(a, 0.5, metrics={"cost": 0.1, "runtime": 25.0})       # g = (-0.5, 1.5)
    opt.tell(b, 0.5, metrics={"cost": 1.0, "runtime": 5.0})        # g = (0.4, -0.5)
    opt.suggest()                                                  # round t = 2
    assert opt.handler.Q == pytest.approx([max(1.0 + 0.4, math.sqrt(2)), 1.0 + 1.5])
    f, g1, g2 = np.array([1.0, 1.0]), np.array([0.5, -1.0]), np.array([-2.0, 0.25])
    assert opt.handler.score(2, f, [g1, g2], 1.0) == pytest.approx(
        [1.0 - 1.414214 * 0.5, 1.0 - 2.5 * 0.25]
    )


def test_penalty_epochs_use_the_values_that_arrived_during_the_epoch():
    """000 Alg. 3: kappa <- [kappa + mu * epoch mean]^+; Alg. 2: kappa <- kappa psi(epoch mean)."""
    add, _ = make(constraints=[COST], n_initial=100, window=50, constraint_handler="penalty",
                  handler_options={"update": "additive", "epoch": 3, "step": 0.5})
    mul, _ = make(constraints=[COST], n_initial=100, window=50, constraint_handler="penalty",
                  handler_options={"epoch": 3, "psi": "poly", "c": 2.0, "power": 2.0})
    for opt in (add, mul):
        for _ in range(3):
            opt.suggest()
        opt.tell(1, 0.5, metrics={"cost": 1.0})       # g = 0.4
        opt.tell(0, 0.5, metrics={"cost": 0.4})       # g = -0.2; trial 2 still running
        opt.suggest()                                 # t = 3: end of epoch 1, mean 0.1
    assert add.handler.kappa[0] == pytest.approx(0.5 * 0.1)
    assert mul.handler.kappa[0] == pytest.approx((2.0 * 0.1 + 1.0) ** 2)
    add.tell(2, 0.5, metrics={"cost": 0.0})          # g = -0.6 arrives in epoch 2
    for _ in range(3):
        add.suggest()                                 # t = 6: mean of epoch 2 = -0.6
    assert add.handler.kappa[0] == 0.0                # [0.05 - 0.3]^+


def test_cbo_dual_step_is_the_projected_clipped_estimate():
    """phi_{t+1} = Proj_[0, rho](phi_t + clip_G(g_t(x_t)) / V), V = G sqrt(T) / rho (003 Alg. 1)."""
    h = CBO(1, rho=2.0, horizon=4, clip_g=1.0)        # V = 1 * 2 / 2 = 1
    phis = []
    for g in (0.5, 3.0, 1.0, -5.0, -2.0):
        h.after_choice(0, [g], 1.0)
        phis.append(float(h.phi[0]))
    assert phis == pytest.approx([0.5, 1.5, 2.0, 1.0, 0.0])
    h.phi[:] = 0.7
    s = h.score(0, np.array([5.0, -0.5]), [np.array([-3.0, 0.4])], f_bound=2.0)
    assert s == pytest.approx([2.0 + 0.7, -0.5 - 0.7 * 0.4])   # f clipped to [-B, B], g to [-G, G]


def test_scgp_queue_steps_in_every_round_even_the_initial_design():
    """Q(t+1) = [Q(t) + g_t(x_t) + 1/sqrt(t)]^+, Q(1) = 0 (003 Alg. 2 line 7), from round 1 on:
    the round's sample at x_t is known whoever chose x_t."""
    opt = Optimizer(LINE, objective_bounds=(0.0, 1.0), n_initial=3, seed=0,
                    constraints=[dict(COST, observable=True)], constraint_handler="scgp",
                    samplers={"cost": lambda configs, t: [c["x"] for c in configs]})
    Q = 0.0
    for t in range(1, 5):                            # three initial points, then a chosen one
        x = opt.suggest().config["x"]
        Q = max(Q + (x - 0.6) + 1.0 / math.sqrt(t), 0.0)
        assert opt.handler.Q[0] == pytest.approx(Q)


def _hand_posteriors(opt, xs, f_vals, g_vals):
    gp = GaussianProcess(SquaredExponential(), Hyperparameters(1.0, np.array([0.2]), 1e-3))
    gp.extend(np.array(xs)[:, None])
    return (Posterior(gp, np.array(f_vals), gp).predict(opt.domain),
            Posterior(gp, np.array(g_vals), gp).predict(opt.domain))


@pytest.mark.parametrize("handler", ["rpol", "cbo"])
def test_the_choice_uses_the_lcb_of_g_not_its_mean(handler):
    """RPOL: x_t = argmax UCB_f - Q [LCB_g]^+ (004 eq. 11); CBO-UCB: argmax clip(UCB_f) -
    phi clip(LCB_g), then the dual step with LCB_g(x_t).  Recomputed from a hand-built GP."""
    opt, _ = make(constraints=[COST], constraint_handler=handler, domain=GRID, window=100,
                  n_initial=0, beta=0.5, beta_g=2.0, b_y=0.0, b_c=0.0, refit_every=1000,
                  handler_options={"rho": 10.0, "horizon": 25} if handler == "cbo" else {})
    if handler == "cbo":
        opt.handler.phi[:] = 2.5
    xs, f, cost = (0.1, 0.5, 0.75), (0.2, 0.5, 0.9), (0.2, 0.5, 0.7)
    for x, v, c in zip(xs, f, cost):
        opt.tell(opt.suggest(config={"x": x}).trial_id, v, metrics={"cost": c})
    (mf, vf), (mg, vg) = _hand_posteriors(opt, xs, f, [c - 0.6 for c in cost])
    ucb = mf + 0.5 * np.sqrt(vf)
    lcb = mg - 2.0 * np.sqrt(vg)
    if handler == "rpol":
        Q = max(1.0 + 0.1, math.sqrt(3))              # the three costs arrived before round 3
        by_lcb, by_mean = ucb - Q * np.maximum(lcb, 0), ucb - Q * np.maximum(mg, 0)
    else:
        by_lcb = np.clip(ucb, -1, 1) - 2.5 * np.clip(lcb, -1, 1)
        by_mean = np.clip(ucb, -1, 1) - 2.5 * np.clip(mg, -1, 1)
    assert np.argmax(by_lcb) != np.argmax(by_mean)    # the data tell the two rules apart
    x = opt.suggest().config["x"]
    assert x == pytest.approx(GRID[np.argmax(by_lcb), 0])
    if handler == "cbo":                              # V = G sqrt(T) / rho = 0.5
        step = np.clip(lcb[np.argmax(by_lcb)], -1, 1) / 0.5
        assert opt.handler.phi[0] == pytest.approx(min(max(2.5 + step, 0.0), 10.0))
        assert 0.0 < opt.handler.phi[0] < 2.5


# --- run-time budgets ----------------------------------------------------------------------------

def test_a_pending_trial_past_its_budget_is_a_known_violation():
    opt, clock = make(constraints=[RUNTIME], window=2, window_unit="seconds")
    plain, _ = make(constraints=[RUNTIME], window=2, window_unit="seconds", use_elapsed_bound=False)
    for o in (opt, plain):
        o.suggest()
    clock.now = plain.clock.now = 6.0
    assert opt.constraint_targets(0)[0] == 0.0        # within budget so far: censored (004 §5)
    clock.now = plain.clock.now = 15.0
    assert opt.constraint_targets(0)[0] == pytest.approx(0.5)     # g >= 15 / 10 - 1
    assert plain.constraint_targets(0)[0] == 0.0                  # the paper's censoring
    # finished after the 2 s window: the paper censors it for good, the run-time-aware model not
    for o in (opt, plain):
        o.tell(0, 0.7, metrics={"runtime": 15.0})
    assert opt.constraint_targets(0)[0] == pytest.approx(0.5)
    assert plain.constraint_targets(0)[0] == 0.0


def test_stop_rule_names_trials_past_the_margin_and_fail_records_the_violation():
    opt, clock = make(constraints=[RUNTIME], stop_margin=0.2, n_initial=10)
    a = opt.suggest().trial_id
    clock.now = 5.0
    b = opt.suggest().trial_id
    assert opt.next_stop_time() == pytest.approx(12.0)
    clock.now = 11.9
    assert opt.trials_to_stop() == []
    clock.now = 12.0
    assert opt.trials_to_stop() == [a]
    opt.fail(a, "TIMED_OUT")
    assert opt.trials[a].metrics["runtime"] == pytest.approx(12.0)
    assert opt.constraints[0].observed(opt.trials[a]) == pytest.approx(0.2)
    assert opt.censored_targets()[a] == 0.0           # objective censored for good
    assert opt.trials_to_stop(17.0) == [b] and opt.next_stop_time() == pytest.approx(17.0)
    never, _ = make(constraints=[RUNTIME])
    never.suggest()
    assert never.trials_to_stop(1e9) == [] and never.next_stop_time() is None


def test_simulator_stops_runs_through_the_optimizer_rule():
    opt = Optimizer(LINE, constraints=[RUNTIME], stop_margin=0.5, objective_bounds=(0, 1),
                    n_initial=100, seed=0)
    res = simulate(opt, lambda c: c["x"], RunTime(lambda c: 4.0 + 20.0 * c["x"], cv=0.1), 30,
                   workers=2, seed=0)
    durations = np.array([m["runtime"] for m in res.metrics_true])
    # the simulation runs every started trial to its end: each one past 15 s is stopped at 15 s
    assert np.array_equal(res.stopped, durations >= 15.0) and res.stopped.sum() >= 5
    assert np.allclose((res.finish - res.start)[res.stopped], 15.0)
    for tr in opt.trials:
        if res.stopped[tr.trial_id]:
            assert tr.status == "TIMED_OUT" and tr.reason.startswith("passed the budget")
            assert tr.metrics == {"runtime": pytest.approx(15.0)}
        else:
            assert tr.status == "FINISHED" and tr.metrics["runtime"] < 15.0


# --- convergence on a toy problem whose unconstrained argmax is infeasible ------------------------

def bowl(cfg):
    """f = -(x - 0.9)^2 (argmax 0.9), cost = x, feasible x <= 0.6: optimum at 0.6."""
    x = float(cfg["x"])
    return -(x - 0.9) ** 2, {"cost": x}


def cost_sampler(configs, t):
    noise = np.random.default_rng(1000 + t).normal(0.0, 0.02)
    return [c["x"] + noise for c in configs]


@pytest.mark.parametrize("name, kw", [
    ("unconstrained", {}),
    ("rpol", {"constraint_handler": "rpol"}),
    ("cbo-ucb", {"constraint_handler": "cbo"}),
    ("cbo-ts", {"constraint_handler": "cbo", "algorithm": "gp-ts-sdf"}),
    ("penalty-alg2", {"constraint_handler": "penalty", "handler_options": {"epoch": 5}}),
    ("penalty-alg3", {"constraint_handler": "penalty",
                      "handler_options": {"epoch": 5, "update": "additive", "step": 2.0}}),
    ("scgp", {"constraint_handler": "scgp"}),
    ("pof-log-ei", {"constraint_handler": "pof", "algorithm": "gp-ei-sdf"}),
    ("pof-copula", {"constraint_handler": "pof", "output_warp": "copula"}),
    ("rpol-copula", {"constraint_handler": "rpol", "output_warp": "copula"}),
])
def test_suggestions_converge_to_the_feasible_optimum(name, kw):
    cons = dict(COST, observable=True) if name == "scgp" else COST
    opt = Optimizer(LINE, objective_bounds=(-1.0, 0.0), domain=GRID, window=5, seed=3,
                    constraints=[] if name == "unconstrained" else [cons],
                    samplers={"cost": cost_sampler} if name == "scgp" else None, **kw)
    res = simulate(opt, bowl, Fixed(1), 70, noise_std=0.01, metric_noise=0.01, seed=3)
    last = np.array([c["x"] for c in res.configs[-20:]])
    if name == "unconstrained":
        assert abs(np.median(last) - 0.9) < 0.05     # the constraint is what moves the others
    elif name == "scgp":     # eps_t = 1/sqrt(t) in the queue tightens g <= 0 to about g <= -0.12
        assert 0.6 - 0.2 < np.median(last) <= 0.6 and last.max() <= 0.62, last
    else:
        assert abs(np.median(last) - 0.6) < 0.08, last
        assert np.mean(last > 0.7) <= 0.2, last


def test_log_ei_improves_on_the_best_feasible_result_not_on_an_infeasible_one():
    """Constrained EI (Gardner et al. 2014): with f = x and x <= 0.6 feasible, a result at 0.95
    is the largest but infeasible; improving on it would send the search past the limit."""
    opt = Optimizer(LINE, algorithm="gp-ei-sdf", domain=GRID, objective_bounds=(0.0, 1.0),
                    n_initial=0, constraints=[COST], clock=SimClock(), seed=0,
                    research={"lengthscale": 0.3})
    for x in (0.05, 0.3, 0.5, 0.7, 0.95):
        opt.tell(opt.suggest(config={"x": x}).trial_id, x, metrics={"cost": x})
    assert 0.5 < opt.suggest().config["x"] <= 0.6


# --- configuration errors ------------------------------------------------------------------------

@pytest.mark.parametrize(
    "kw, words",
    [
        ({"constraints": [{"metric": "runtime", "limit": 0}]},
         ["constraints[0].limit", "budget must be > 0"]),
        ({"constraints": [{"metric": "runtime", "limit": -5, "type": "budget"}]},
         ["constraints[0].limit", "> 0"]),
        ({"constraints": [{"metric": "runtime", "limit": "60s"}]},
         ["constraints[0].limit", "number"]),
        ({"constraints": [{"metric": "t", "limit": 0, "type": "upper", "runtime": True}]},
         ["constraints[0].limit", "run-time limit must be > 0"]),
        (
            {
                "constraints": [COST],
                "constraint_handler": "cbo",
                "handler_options": {"horizon": 0.5},
            },
            ["handler_options.horizon", "integer >= 1"],
        ),
        ({"constraints": [{"limit": 60}]}, ["constraints[0].metric", "required"]),
        ({"constraints": [{"metric": "m", "limit": 1, "type": "below"}]},
         ["constraints[0].type", "budget", "upper"]),
        ({"constraints": [{"metric": "m", "limit": 1, "runtme": True}]},
         ["unknown key", "runtme", "runtime"]),
        ({"constraints": [{"metric": "m", "limit": 1, "runtime": "yes"}]},
         ["constraints[0].runtime", "true or false"]),
        ({"constraints": [COST], "constraint_handler": "lagrange"},
         ["constraint_handler", "rpol", "cbo", "penalty", "scgp"]),
        ({"constraints": [COST], "constraint_handler": "rpol", "handler_options": {"Q1": 2}},
         ["handler_options", "Q1", "q1"]),
        (
            {"constraints": [COST], "constraint_handler": "penalty",
             "handler_options": {"psi": "log"}},
            ["handler_options.psi", "exp", "poly"],
        ),
        ({"constraints": [COST], "stop_margin": 0.2}, ["stop_margin", "runtime: true"]),
        ({"constraints": [RUNTIME], "stop_margin": -1}, ["stop_margin", ">= 0"]),
        ({"constraints": [dict(COST, observable=True)]}, ["observable", "scgp"]),
        (
            {"constraints": [COST], "constraint_handler": "scgp"},
            ["scgp", "observable: true", "cost"],
        ),
        ({"constraints": [COST, COST]}, ["once", "cost"]),
        ({"constraints": [COST], "algorithm": "gp-ei-sdf", "constraint_handler": "rpol"},
         ["constraint_handler", "gp-ei-sdf", "pof", "rpol"]),
    ],
)
def test_constraint_configuration_errors_name_the_field(kw, words):
    with pytest.raises(ValueError) as err:
        Optimizer(LINE, **kw)
    for w in words:
        assert w in str(err.value)


def test_a_finished_trial_must_report_each_constrained_metric():
    opt, _ = make(constraints=[COST])
    s = opt.suggest()
    with pytest.raises(ValueError, match=r"constraint metric\(s\) \['cost'\] missing "
                                         r".*\['accuracy'\]"):
        opt.tell(s.trial_id, 0.5, metrics={"accuracy": 0.5})
    with pytest.raises(ValueError, match="samplers must give one function per observable"):
        Optimizer(LINE, constraints=[dict(COST, observable=True)], constraint_handler="scgp")


def test_sliding_window_posterior_is_the_gp_of_the_last_w_trials():
    opt, _ = make(sliding_window=4, window=100, n_initial=100, refit_every=1000, beta=0.0)
    xs = [0.05, 0.3, 0.5, 0.62, 0.8, 0.95]
    for i, x in enumerate(xs):
        s = opt.suggest(config={"x": x})
        if i != 4:                                    # x = 0.8 stays pending (censored at 0)
            opt.tell(s.trial_id, x)
    U = np.linspace(0, 1, 11)[:, None]
    mean, var = opt.objective_posterior().predict(U)
    gp = GaussianProcess(SquaredExponential(), Hyperparameters(1.0, np.array([0.2]), 1e-3))
    gp.extend(np.array(xs[-4:])[:, None])
    m2, v2 = Posterior(gp, np.array([0.5, 0.62, 0.0, 0.95]), gp).predict(U)
    assert np.allclose(mean, m2) and np.allclose(var, v2)


def test_a_budget_on_the_log_scale_keeps_the_feasible_set_and_paper_settings_keep_the_ratio():
    """budget_scale: log models a run-time budget as g = ln(run time / limit) (ratios under 0.05
    read as 0.05); the sign of g, so what is over the budget, is the ratio's.  PAPER_EXACT, and
    a budget on another metric, keep g = value / limit - 1 (papers 000/004)."""
    cons = [{"metric": "runtime", "limit": 10.0, "type": "budget", "runtime": True}]
    space = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
    log = Optimizer(space, Settings(constraints=cons)).constraints[0]
    ratio = Optimizer(space, Settings.from_dict({**PAPER_EXACT, "constraints": cons})).constraints[
        0
    ]
    runs = np.array([0.5, 5.0, 9.99, 10.0, 10.01, 30.0, 400.0])
    assert np.allclose(log.g(runs), np.log(runs / 10.0))               # 0.5 / 10 = the floor
    assert np.allclose(ratio.g(runs), runs / 10.0 - 1.0)
    assert np.array_equal(log.g(runs) <= 0, ratio.g(runs) <= 0)
    assert log.g(0.0) == pytest.approx(np.log(0.05))                  # a run that took no time
    cost = [{"metric": "cost", "limit": 1.0, "type": "budget"}]        # not a run time: a ratio
    assert Optimizer(space, Settings(constraints=cost)).constraints[0].g(0.5) == pytest.approx(-0.5)


def test_a_budget_on_the_mean_run_time_counts_the_log_normal_noise():
    """On the log scale the GP's mean is that of ln T, the log of the median run time.  Runs
    with a median of 0.97 x the budget and a log-sd of 0.3 take 0.97 exp(0.045) = 1.01 x it on
    average: within a budget on the median (the default), over one on the mean
    (``budget_bound: mean``), which adds half the GP's noise variance to g's mean."""
    from scipy.stats import norm
    cons = [{"metric": "runtime", "limit": 10.0, "type": "budget", "runtime": True}]
    times = 9.7 * np.exp(0.3 * norm.ppf((np.arange(100) + 0.5) / 100))
    pof, shift = {}, {}
    for bound in ("median", "mean"):
        opt = Optimizer(LINE, constraints=cons, clock=SimClock(), seed=0, n_initial=0,
                        research={"budget_bound": bound})
        for t in times:
            opt.tell(opt.suggest(config={"x": 0.5}).trial_id, 0.5, metrics={"runtime": float(t)})
        s = opt.suggest()                                        # a choice: the GPs are fitted
        opt.tell(s.trial_id, 0.5, metrics={"runtime": 9.7})
        post = opt.constraint_posterior(0)
        pof[bound] = float(probability_feasible(post)(np.array([[0.5]]))[0])
        shift[bound] = float(post.predict(np.array([[0.5]]))[0][0])
    assert pof["median"] > 0.6 > 0.4 > pof["mean"]
    noise = opt.constraint_models[0].gp_done.hyper.noise
    assert 0.05 < noise < 0.12                                   # about 0.3^2, fitted
    assert shift["mean"] - shift["median"] == pytest.approx(noise / 2)

# --- the constraint GPs' prior mean and running trials --------------------------------------------


def _all_infeasible(running: bool, **kw) -> Optimizer:
    """g = cost - 0.6 = 0.8 at x = 0, 0.1, 0.2; with ``running`` a trial runs at x = 0.3."""
    opt = optimizer(LINE, constraints=[COST], objective_bounds=(0.0, 1.0), clock=SimClock(), seed=0,
                    n_initial=0, **kw)
    for x in (0.0, 0.1, 0.2):
        opt.tell(opt.suggest(config={"x": x}).trial_id, 0.5, metrics={"cost": 1.4})
    if running:
        opt.suggest(config={"x": 0.3})
    return opt


def _g_at(opt: Optimizer, x: float) -> tuple[float, float]:
    mean, var = opt.constraint_posterior(0).predict(np.array([[x]]))
    return float(mean[0]), float(var[0])


def test_a_running_trial_enters_the_constraint_gp_at_zero_or_at_its_posterior_mean():
    """004 §5's c~ = 0 pulls g at a running trial to the boundary, where P(g <= 0) is about 1/2
    and the search for feasibility gathers; ``constraint_pending: mean`` keeps the mean there
    and only lowers the variance (a believer)."""
    without = _g_at(_all_infeasible(False), 0.3)
    zero = _g_at(_all_infeasible(True), 0.3)
    believed = _g_at(_all_infeasible(True, constraint_pending="mean"), 0.3)
    assert zero[0] < 0.5 * without[0]
    assert believed[0] == pytest.approx(without[0], rel=1e-6)
    assert believed[1] < 0.5 * without[1]


def test_the_constraint_gps_prior_mean_is_the_boundary_or_the_values_mean():
    """Far from every result a zero prior mean makes g look half feasible; with
    ``constraint_prior_mean: mean`` it looks like the values seen (all infeasible here)."""
    far_zero = _g_at(_all_infeasible(False), 1.0)
    far_mean = _g_at(_all_infeasible(False, constraint_prior_mean="mean"), 1.0)
    assert abs(far_zero[0]) < 0.05
    assert far_mean[0] == pytest.approx(0.8, abs=0.05)
    assert far_mean[1] == pytest.approx(far_zero[1])


def test_a_study_with_16_workers_finds_a_feasible_region_of_2_percent():
    """Paper 004's sin problem (1.8 % of the box feasible), 16 workers, a study's defaults: the
    constraint GP's prior at the values seen and running trials at its mean send the search for
    feasibility down g; at the boundary g = 0 (004 §5's c~) it went to the box's corners or
    gathered around the running trials, and found nothing in seeds 1 and 2."""
    from tuner.bench.compare import harness_run
    from tuner.bench.problems import get_problem

    problem = get_problem("sin-constrained")
    for seed in (0, 1, 2):
        run = harness_run(problem, 16, "study", seed)
        assert (run.g_true(0) <= 0).any(), seed
