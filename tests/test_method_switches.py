"""The method's switches beyond paper 001 (soft censoring, start-up design, dense refits, prior
mean, eq. 2's lambda factor, the feasibility-weighted handler), each against a hand computation
or scikit-learn, and the paper-exact settings that keep the reproductions as they were."""

import math

import numpy as np
import pytest
from scipy.special import ndtr
from scipy.stats import qmc
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from conftest import optimizer
from tuner import PAPER_EXACT, Optimizer, Settings
from tuner.core.trial import Status
from tuner.core.gp import GaussianProcess, Hyperparameters
from tuner.core.posterior import Posterior
from tuner.core.soft_censoring import SoftCensoredPosterior
from tuner.core.kernels import SquaredExponential
from tuner.core.model import soft_view
from tuner.core.targets import RankWarp
from tuner.loop.simulator import SimClock

LINE = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
GRID = np.linspace(0.0, 1.0, 101)[:, None]
BOX = {f"x{i}": {"type": "float", "low": 0.0, "high": 1.0} for i in range(3)}
LS = np.array([0.3, 0.5, 0.8])


def make(space=LINE, **kw):
    clock = SimClock()
    kw.setdefault("objective_bounds", (0.0, 1.0))
    kw.setdefault("seed", 0)
    return optimizer(space, clock=clock, **kw), clock


# --- soft censoring -----------------------------------------------------------------------------

@pytest.mark.parametrize("n_done", [0, 30, 300])
def test_soft_censored_posterior_is_the_gp_with_per_point_noise(n_done):
    """Usable results at lambda, censored entries at lambda_c: scikit-learn with a per-sample
    alpha gives the same mean, variance and covariance."""
    rng = np.random.default_rng(1)
    X, Xc, U = rng.random((n_done, 3)), rng.random((6, 3)), rng.random((40, 3))
    y, yc = np.sin(5 * X[:, 0]) + X[:, 1], np.zeros(6)
    gp = GaussianProcess(SquaredExponential(), Hyperparameters(1.3, LS, 1e-3))
    gp.reset(X) if n_done else None
    post = SoftCensoredPosterior(gp, y, Xc, yc, 0.07)
    ref = GaussianProcessRegressor(ConstantKernel(1.3, "fixed") * RBF(LS, "fixed"),
                                   alpha=np.r_[np.full(n_done, 1e-3), np.full(6, 0.07)],
                                   optimizer=None).fit(np.vstack([X, Xc]), np.r_[y, yc])
    mean, var = post.predict(U)
    rmean, rcov = ref.predict(U, return_cov=True)
    assert np.allclose(mean, rmean, atol=1e-8)
    assert np.allclose(var, np.diag(rcov), atol=1e-8)
    assert np.allclose(post.predict(U, full_cov=True)[1], rcov, atol=1e-8)


@pytest.mark.parametrize("n_done", [0, 30, 300])
def test_sigma_at_the_censored_inputs_is_the_full_computation(n_done):
    """nu_t's sigma at the pending trials (rows of X_c) comes from the setup's factors; it
    equals predict's, in any order and repeated; other inputs take the full path."""
    rng = np.random.default_rng(3)
    X, Xc = rng.random((n_done, 3)), rng.random((12, 3))
    gp = GaussianProcess(SquaredExponential(), Hyperparameters(1.3, LS, 1e-3))
    gp.reset(X) if n_done else None
    post = SoftCensoredPosterior(gp, np.sin(5 * X[:, 0]), Xc, np.zeros(12), 0.07)
    pick = Xc[[5, 0, 11, 5]]
    assert post._censored_rows(pick).tolist() == [5, 0, 11, 5]
    assert np.allclose(post.std(pick), np.sqrt(post.predict(pick)[1]), rtol=1e-9, atol=1e-12)
    other = np.vstack([Xc[:2], rng.random((1, 3))])
    assert post._censored_rows(other) is None
    assert np.allclose(post.std(other), np.sqrt(post.predict(other)[1]))


def test_soft_posterior_top_candidates_equal_the_full_computation():
    """shifted_top skips candidates by bounds; the ones it keeps are exact, and the best ones
    are the best of the full computation."""
    rng = np.random.default_rng(2)
    X, Xc, U = rng.random((400, 2)), rng.random((8, 2)), rng.random((3000, 2))
    gp = GaussianProcess(SquaredExponential(), Hyperparameters(0.8, np.array([0.1, 0.2]), 1e-4))
    gp.reset(X)
    post = SoftCensoredPosterior(gp, np.cos(7 * X[:, 0]) * X[:, 1], Xc, np.zeros(8), 0.05)
    post.offset = 0.3
    mean, var = post.predict(U)
    full = mean + 2.0 * np.sqrt(var)
    top = post.shifted_top(U, 2.0, 3)
    kept = np.isfinite(top)
    assert kept.sum() < len(U) // 4
    assert np.allclose(top[kept], full[kept], atol=1e-10)
    assert set(np.argsort(-full)[:3]) <= set(np.flatnonzero(kept))


def test_a_running_trial_next_to_the_incumbent_is_a_soft_pull_not_a_hole():
    """Hard censoring (001 eq. 1) pins a running trial at the minimum with the fitted noise, so
    the mean next to the best result collapses; soft censoring leaves most of it."""
    means = {}
    for censoring in ("hard", "soft"):
        opt, _ = make(censoring=censoring, censor_noise=0.1, n_initial=0, refit_every=10 ** 6,
                      noise=1e-6, lengthscale=0.2, prior_mean="zero")
        for x, v in ((0.2, 0.3), (0.5, 0.9), (0.8, 0.4)):
            opt.tell(opt.suggest(config={"x": x}).trial_id, v)
        opt.suggest(config={"x": 0.52})                    # still running
        means[censoring] = opt.objective_posterior().predict(np.array([[0.52]]))[0][0]
    assert means["hard"] < 0.05
    assert means["soft"] > 0.6


def test_believe_past_leaves_the_mean_of_a_wide_pool_and_lowers_its_variance():
    """``believe_past: k``: with more than k trials running, each enters at the posterior mean of
    the results (the mean stays where the results put it, the variance there falls), not at
    the minimum; with k or fewer running, the minimum as before."""
    def posterior(running, **kw):
        opt, _ = make(censoring="soft", n_initial=0, refit_every=10 ** 6, noise=1e-6,
                      lengthscale=0.2, prior_mean="zero", **kw)
        for x, v in ((0.2, 0.3), (0.5, 0.9), (0.8, 0.4)):
            opt.tell(opt.suggest(config={"x": x}).trial_id, v)
        for i in range(running):
            opt.suggest(config={"x": 0.56 + 0.02 * i})
        return opt, opt.objective_posterior()

    opt, results_only = posterior(0)
    U = np.array([[0.6], [0.65]])
    mean0, var0 = results_only.predict(U)
    mean_b, var_b = posterior(4, believe_past=3)[1].predict(U)
    assert np.allclose(mean_b, mean0, atol=1e-6) and np.all(var_b < 0.5 * var0)
    mean_c = posterior(4)[1].predict(U)[0]                   # censored at the minimum
    assert np.all(mean_c < mean0 - 0.3)
    assert np.allclose(posterior(3, believe_past=3)[1].predict(U)[0], posterior(3)[1].predict(U)[0])


def _running_beside_three_results(running, metrics=None, **kw):
    """Results 0.3, 0.9, 0.5 at x = 0.1, 0.3, 0.4, then trials left running at ``running``:
    the optimizer and the objective posterior the next suggestion would use."""
    opt, _ = make(censoring="soft", n_initial=0, refit_every=10 ** 6, noise=1e-3,
                  lengthscale=0.1, prior_mean="zero", **kw)
    for x, v in ((0.1, 0.3), (0.3, 0.9), (0.4, 0.5)):
        opt.tell(opt.suggest(config={"x": x}).trial_id, v, metrics=metrics)
    for x in running:
        opt.suggest(config={"x": x})
    return opt, opt.objective_posterior()


def test_running_objective_blend_keeps_a_known_result_and_the_minimum_where_nothing_is_known():
    """``running_objective: blend``: a trial running next to the best result leaves the mean
    there where the result put it (eq. 1's minimum pulls it down by half); one far from every
    result enters at the minimum, as in eq. 1 (the same posterior there); one in between at the
    hand formula y_min + (1 - sigma_D^2 / a)(mu_D - y_min)^+."""
    def posterior(running, **kw):
        return _running_beside_three_results(running, **kw)[1]

    results_only = posterior([])
    near = np.array([[0.32]])                    # next to the best result (0.9 at 0.3)
    known = posterior([0.32], running_objective="blend").predict(near)[0][0]
    assert known == pytest.approx(results_only.predict(near)[0][0], abs=0.01)
    assert posterior([0.32]).predict(near)[0][0] < results_only.predict(near)[0][0] - 0.4
    far = np.array([[0.95]])
    for a, b in zip(posterior([0.95], running_objective="blend").predict(far),
                    posterior([0.95]).predict(far)):
        assert np.allclose(a, b, atol=1e-6)
    # in between: the entry is the hand formula's, seen through soft censoring's own view
    opt_b, post_b = _running_beside_three_results([0.47], running_objective="blend")
    gp = opt_b.objective.gp_done
    mu, var = results_only.predict(np.array([[0.47]]))
    y = mu[0] * (1.0 - var[0] / gp.hyper.amplitude)            # y_min = 0 (objective_bounds)
    assert 0.05 < y < mu[0] - 0.05
    hand = soft_view(gp, np.array([0.3, 0.9, 0.5]), np.array([[0.47]]), np.array([y]),
                     opt_b.settings.research.censored.censor_noise)
    assert np.allclose(post_b.predict(GRID)[0], hand.predict(GRID)[0], atol=1e-9)


def test_running_objective_auto_keeps_the_minimum_only_under_a_budget():
    """``running_objective: auto`` (a study's default): ``blend`` without a budget, also beside
    an upper bound on another metric (Gardner's g), eq. 1's ``minimum`` under a budget or a
    run-time limit (near a budget's edge the pull on slow runs keeps the pool apart)."""
    runtime = [{"metric": "runtime", "limit": 1.0, "runtime": True}]
    cost = [{"metric": "cpu_time", "limit": 1.0, "type": "budget"}]
    untyped = [{"metric": "cpu_time", "limit": 1.0}]              # type: budget by default
    runtime_upper = [{"metric": "runtime", "limit": 1.0, "type": "upper", "runtime": True}]
    upper = [{"metric": "g", "limit": 0.0, "type": "upper"}]

    def mean_next_to_best(**kw):
        metrics = {"runtime": 0.5, "cpu_time": 0.5, "g": -1.0}
        post = _running_beside_three_results([0.32], metrics=metrics, **kw)[1]
        return post.predict(np.array([[0.32]]))[0][0]

    auto = mean_next_to_best(running_objective="auto")
    assert auto == mean_next_to_best(running_objective="blend")
    for budget in (runtime, cost, untyped, runtime_upper):
        assert mean_next_to_best(running_objective="auto", constraints=budget) == \
            mean_next_to_best(running_objective="minimum", constraints=budget)
        assert auto > mean_next_to_best(running_objective="auto", constraints=budget) + 0.3
    assert mean_next_to_best(running_objective="auto", constraints=upper) == \
        mean_next_to_best(running_objective="blend", constraints=upper)


def test_stopped_objective_mean_leaves_a_budget_stopped_trial_at_the_posterior_mean():
    """``stopped_objective: mean``: a trial stopped past its run-time budget (TIMED_OUT) enters
    the objective at the results' posterior mean, not the minimum; a trial that raised (FAILED)
    stays at the minimum; "minimum" (001 eq. 1) pulls the mean there down."""
    def posterior(status, **kw):
        opt, clock = make(censoring="soft", n_initial=0, refit_every=10 ** 6, noise=1e-6,
                          lengthscale=0.2, prior_mean="zero", stop_margin=0.0,
                          constraints=[{"metric": "runtime", "limit": 1.0, "runtime": True}], **kw)
        for x, v in ((0.2, 0.3), (0.5, 0.9), (0.8, 0.4)):
            opt.tell(opt.suggest(config={"x": x}).trial_id, v, metrics={"runtime": 0.5})
        stopped = opt.suggest(config={"x": 0.6}).trial_id
        clock.now += 1.5
        opt.fail(stopped, "past the budget", status=status)
        return opt.objective_posterior().predict(np.array([[0.6]]))[0][0]

    plain, _ = make(censoring="soft", n_initial=0, refit_every=10 ** 6, noise=1e-6,
                    lengthscale=0.2, prior_mean="zero")
    for x, v in ((0.2, 0.3), (0.5, 0.9), (0.8, 0.4)):
        plain.tell(plain.suggest(config={"x": x}).trial_id, v)
    results_only = plain.objective_posterior().predict(np.array([[0.6]]))[0][0]
    believed = posterior(Status.TIMED_OUT, stopped_objective="mean")
    assert believed == pytest.approx(results_only, abs=1e-3)
    assert posterior(Status.TIMED_OUT) < results_only - 0.3
    assert posterior(Status.FAILED, stopped_objective="mean") < results_only - 0.3


# --- the study's deadline ------------------------------------------------------------------------

def _fast_and_slow(**kw):
    """Twelve runs, one at a time: the result grows with x, a run with x < 0.5 takes 1 s and
    one with x >= 0.5 takes 10 s (the best configurations are the slow ones)."""
    opt, clock = make(n_initial=6, **kw)
    for _ in range(12):
        s = opt.suggest()
        clock.now += 1.0 if s.config["x"] < 0.5 else 10.0
        opt.tell(s.trial_id, s.config["x"])
    return opt, clock


def test_finish_by_deadline_chooses_among_the_runs_that_fit_the_time_left():
    """With ``finish_by_deadline``, 3 s before the deadline the next run is a fast one (the
    best of them); far from it, or without the switch, the slow best one, exactly as with no
    deadline; with less time left than any run takes, one of the fastest."""
    def next_x(left, **kw):
        opt, clock = _fast_and_slow(**kw)
        if left is not None:
            opt.deadline = clock.now + left
        return opt.suggest().config["x"]

    unbounded = next_x(None, finish_by_deadline=True)
    assert unbounded > 0.9
    assert 0.4 < next_x(3.0, finish_by_deadline=True) < 0.5
    assert next_x(100.0, finish_by_deadline=True) == unbounded
    assert next_x(3.0) == next_x(None) == unbounded
    assert next_x(0.5, finish_by_deadline=True) < 0.5


def test_the_loop_gives_the_optimizer_its_deadline():
    """``simulate(time_limit=...)`` runs the study loop with that deadline (``run.wall_clock_limit``
    in a study), and the optimizer hears of it."""
    from tuner.loop.simulator import Fixed, simulate

    opt, _ = make(finish_by_deadline=True)
    simulate(opt, lambda c: c["x"], Fixed(1.0), n_trials=20, workers=2, time_limit=5.0)
    assert opt.deadline == 5.0


def test_idle_near_deadline_starts_nothing_once_no_run_could_finish():
    """``idle_near_deadline``: with less time left than the fastest finished run took (1 s), no
    run may start (``Optimizer.can_start``); with more left, without the switch or without a
    deadline, any may."""
    opt, clock = _fast_and_slow(idle_near_deadline=True)
    assert opt.can_start()                               # no deadline
    opt.deadline = clock.now + 0.5
    assert not opt.can_start()
    assert opt.can_start(now=clock.now - 1.0)            # 1.5 s left
    plain, clock = _fast_and_slow()
    plain.deadline = clock.now + 0.5
    assert plain.can_start()


def test_a_study_that_no_run_could_finish_in_time_ends_without_killing_runs():
    """Runs of 1 s on 2 workers and a 5.5 s limit: with ``idle_near_deadline`` the loop starts
    nothing at 5 s (0.5 s left) and the study ends then, 10 runs finished and none killed; without
    it two more start and are killed at the limit."""
    from tuner.loop.simulator import Fixed, simulate

    ends = {}
    for idle in (True, False):
        opt, _ = make(idle_near_deadline=idle)
        res = simulate(opt, lambda c: c["x"], Fixed(1.0), n_trials=100, workers=2, time_limit=5.5)
        ends[idle] = (sorted(str(s) for s in res.status), float(res.finish.max()))
    assert ends[True] == (["FINISHED"] * 10, pytest.approx(5.0))
    assert ends[False][0] == ["FINISHED"] * 10 + ["KILLED"] * 2


def test_soft_censoring_keeps_failed_trials_censored_and_results_exact():
    opt, _ = make(censoring="soft", censor_noise=0.2, n_initial=0, refit_every=10 ** 6)
    a = opt.suggest(config={"x": 0.3}).trial_id
    b = opt.suggest(config={"x": 0.7}).trial_id
    opt.tell(a, 0.8)
    opt.fail(b, "worker lost")
    post = opt.objective_posterior()
    assert isinstance(post, SoftCensoredPosterior)
    assert np.allclose(post.Xc, [[0.7]])
    # the finished trial is an observation at the GP's own small noise
    assert post.predict(np.array([[0.3]]))[0][0] == pytest.approx(0.8, abs=0.02)


@pytest.mark.parametrize("handler", ["rpol", "pof"])
def test_soft_censoring_save_load_gives_the_identical_next_suggestion(tmp_path, handler):
    opt, clock = make(censoring="soft", n_initial="auto", refit_dense_until=20, prior_mean="mean",
                      lengthscale_prior=True, constraints=[COST], constraint_handler=handler)
    ids = [opt.suggest().trial_id for _ in range(6)]
    for i in ids[:4]:
        clock.now += 1.0
        x = float(opt.trials[i].x[0])
        opt.tell(i, float(np.sin(3 * x)), metrics={"cost": x})
    opt.suggest()
    opt.save(tmp_path / "s.json")
    again = Optimizer.load(tmp_path / "s.json", clock=clock)
    assert again.handler.feasible_found == opt.handler.feasible_found
    assert opt.suggest().config == again.suggest().config


# --- start-up design, refits, prior mean ---------------------------------------------------------

def test_start_up_design_is_sobol_in_start_order_whatever_order_results_arrive():
    """n_initial="auto": 2 x 3 = 6 scrambled Sobol points, the same however the results are told."""
    sobol = qmc.Sobol(3, scramble=True, seed=0).random(8)[:6]
    for order in ([0, 1, 2], [2, 0, 1]):
        opt, _ = make(BOX, n_initial="auto")
        assert opt.n_initial == 6
        first = [opt.suggest() for _ in range(3)]
        for i in order:
            opt.tell(first[i].trial_id, 0.5)
        rest = [opt.suggest() for _ in range(3)]
        xs = np.array([opt.trials[s.trial_id].x for s in first + rest])
        assert np.allclose(xs, opt.space.snap(sobol))


def test_a_lean_start_up_design_is_one_point_per_parameter_and_one_more_at_least_five():
    """n_initial="lean": max(parameters + 1, 5), a categorical counting once, but never more
    than "auto"'s 2 x parameters (1 and 2 parameters: 2 and 4); the first of the Sobol points
    "auto" would start with."""
    six = {f"x{i}": {"type": "float", "low": 0.0, "high": 1.0} for i in range(6)}
    mixed = {**six, "opt": {"type": "categorical", "choices": ["a", "b", "c", "d"]}}
    two = {"x0": six["x0"], "x1": six["x1"]}
    for space, n in ((BOX, 5), (six, 7), (mixed, 8), (two, 4), ({"x0": six["x0"]}, 2)):
        assert make(space, n_initial="lean")[0].n_initial == n
    lean, auto = make(six, n_initial="lean")[0], make(six, n_initial="auto")[0]
    xs = [[opt.trials[opt.suggest().trial_id].x for _ in range(7)] for opt in (lean, auto)]
    assert np.allclose(xs[0], xs[1])


def test_random_fraction_spends_that_share_of_the_choices_away_from_the_peak():
    """Past the start-up design a share random_fraction of the choices is a random point: on a
    sharp peak the GP keeps near it, with random_fraction 0.5 about half the choices land
    anywhere; the same seed gives the same choices."""
    def far_share(fraction):
        opt, _ = make(random_fraction=fraction, n_candidates=128, n_local=16, n_starts=1)
        xs = []
        for t in range(40):
            s = opt.suggest()
            x = float(opt.trials[s.trial_id].x[0])
            opt.tell(s.trial_id, float(np.exp(-((x - 0.3) / 0.05) ** 2)))
            if t >= 10:
                xs.append(x)
        return float(np.mean(np.abs(np.array(xs) - 0.3) > 0.15)), xs

    none, _ = far_share(0.0)
    half, xs = far_share(0.5)
    assert none <= 0.1
    assert 0.3 <= half <= 0.7
    assert far_share(0.5)[1] == xs


def test_random_fraction_must_be_below_one():
    with pytest.raises(ValueError, match=r"random_fraction.*\[0, 1\)"):
        Settings(research={"random_fraction": 1.0}).validate()


def test_startup_until_result_keeps_to_sobol_while_no_result_has_arrived():
    """A pool wider than the design: with startup_until_result the suggestions made before any
    result continue the Sobol sequence (the GP would choose from pending trials alone); the
    first result hands over to the GP.  Off (the default), the GP chooses from n_initial on."""
    sobol = qmc.Sobol(3, scramble=True, seed=0).random(8)
    opt, _ = make(BOX, n_initial=2, startup_until_result=True)
    first = [opt.suggest() for _ in range(6)]
    assert np.allclose([opt.trials[s.trial_id].x for s in first], opt.space.snap(sobol[:6]))
    opt.tell(first[0].trial_id, 0.5)
    after = opt.trials[opt.suggest().trial_id].x
    assert not np.allclose(after, opt.space.snap(sobol[6:7])[0])
    off, _ = make(BOX, n_initial=2)
    xs = [off.trials[off.suggest().trial_id].x for _ in range(3)]
    assert np.allclose(xs[:2], off.space.snap(sobol[:2])) and not np.allclose(xs[2], sobol[2])


def test_a_study_fills_a_wide_pool_inside_the_box_before_any_result():
    """16 workers on 2 parameters: a study (``startup_until_result`` among its defaults) starts
    16 Sobol points, none on a face of the box; past the 4-point design, a GP with no result
    would pick the points farthest from the pending ones, on the faces and corners."""
    from tuner.study.defaults import STUDY_OPTIMIZER_DEFAULTS

    square = {f"x{i}": {"type": "float", "low": 0.0, "high": 1.0} for i in range(2)}

    def on_faces(**settings):
        opt, _ = make(square, **{**STUDY_OPTIMIZER_DEFAULTS, **settings})
        xs = np.array([opt.trials[opt.suggest().trial_id].x for _ in range(16)])
        return int(np.sum(np.any((xs < 1e-6) | (xs > 1 - 1e-6), axis=1)))

    assert on_faces() == 0
    assert on_faces(startup_until_result=False) >= 8


def test_dense_refits_follow_every_result_then_every_k():
    opt, clock = make(refit_dense_until=5, refit_every=10, n_initial=0)
    fits = []
    for i in range(14):
        s = opt.suggest()
        opt.tell(s.trial_id, float(opt.trials[s.trial_id].x[0]))
        fits.append(opt.objective.fit_n)
    # the fit happens at the suggestion after each result: 2, 3, 4, 5 results, then 5 + 10
    assert fits[:6] == [0, 0, 2, 3, 4, 5]
    assert fits[6:] == [5] * 8
    opt.tell(opt.suggest().trial_id, 0.5)
    opt.suggest()
    assert opt.objective.fit_n == 15


def test_mean_prior_reverts_to_the_results_mean_far_from_data():
    for prior, expect in (("zero", 0.0), ("mean", (0.6 + 0.8) / 2)):
        opt, _ = make(prior_mean=prior, n_initial=0, lengthscale=0.05, refit_every=10 ** 6)
        for x, v in ((0.1, 0.6), (0.15, 0.8)):
            opt.tell(opt.suggest(config={"x": x}).trial_id, v)
        mean, _ = opt.objective_posterior().predict(np.array([[0.9]]))
        assert mean[0] == pytest.approx(expect, abs=1e-6)


# --- eq. 2's delay term -------------------------------------------------------------------------

@pytest.mark.parametrize("power", [0.0, 0.5, 1.0])
def test_delay_term_scales_with_lambda_to_the_minus_power(power):
    """nu_t = beta + B_y lambda^-p sum_s sigma(x_s); p = 0 as eq. 2 is printed, p = 1 the
    factor the proof of Thm 1 carries when lambda < 1 (lambda: censored noise / amplitude)."""
    opt, _ = make(censoring="soft", censor_noise=0.04, delay_lambda_power=power, beta=1.0,
                  b_y=0.5, n_initial=0, refit_every=10 ** 6, domain=GRID)
    opt.tell(opt.suggest(config={"x": 0.2}).trial_id, 0.7)
    running = [opt.suggest(config={"x": x}) for x in (0.5, 0.9)]
    post = opt.objective_posterior()
    sigma = post.std(np.array([[0.5], [0.9]]))
    opt.suggest()
    assert opt.last_nu == pytest.approx(1.0 + 0.5 * 0.04 ** -power * sigma.sum())
    assert len(running) == 2


# --- the feasibility-weighted handler and RPOL's constraint estimate -----------------------------

COST = {"metric": "cost", "limit": 0.6, "type": "upper"}        # g = x - 0.6 <= 0


def _gp(xs, ys):
    gp = GaussianProcess(SquaredExponential(), Hyperparameters(1.0, np.array([0.2]), 1e-3))
    gp.extend(np.array(xs)[:, None])
    return Posterior(gp, np.array(ys), gp).predict(GRID)


def test_pof_handler_weights_the_ucb_by_the_probability_of_feasibility():
    opt, _ = make(constraints=[COST], constraint_handler="pof", domain=GRID, n_initial=0,
                  beta=0.5, b_y=0.0, refit_every=10 ** 6)
    xs, f, cost = (0.1, 0.5, 0.75), (0.2, 0.5, 0.9), (0.2, 0.5, 0.7)
    for x, v, c in zip(xs, f, cost):
        opt.tell(opt.suggest(config={"x": x}).trial_id, v, metrics={"cost": c})
    (mf, vf), (mg, vg) = _gp(xs, f), _gp(xs, [c - 0.6 for c in cost])
    weighted = np.maximum(mf + 0.5 * np.sqrt(vf), 0) * ndtr(-mg / np.sqrt(vg))
    unweighted = mf + 0.5 * np.sqrt(vf)
    assert np.argmax(weighted) != np.argmax(unweighted)
    assert opt.suggest().config["x"] == pytest.approx(GRID[np.argmax(weighted), 0])


def test_pof_handler_searches_for_feasibility_until_a_feasible_result():
    opt, _ = make(constraints=[COST], constraint_handler="pof", domain=GRID, n_initial=0,
                  beta=0.5, b_y=0.0, refit_every=10 ** 6)
    xs, f, cost = (0.1, 0.5, 0.75), (0.2, 0.5, 0.9), (0.8, 0.7, 0.9)     # all infeasible
    for x, v, c in zip(xs, f, cost):
        opt.tell(opt.suggest(config={"x": x}).trial_id, v, metrics={"cost": c})
    _, (mg, vg) = None, _gp(xs, [c - 0.6 for c in cost])
    assert opt.suggest().config["x"] == pytest.approx(GRID[np.argmax(ndtr(-mg / np.sqrt(vg))), 0])
    assert not opt.handler.feasible_found


@pytest.mark.parametrize("g, shift", [("mean", 0.0), ("ucb", 1.0)])
def test_rpol_constraint_estimate_option(g, shift):
    opt, _ = make(constraints=[COST], constraint_handler="rpol", handler_options={"g": g},
                  domain=GRID, n_initial=0, beta=0.5, beta_g=2.0, b_y=0.0, b_c=0.0,
                  refit_every=10**6)
    xs, f, cost = (0.1, 0.5, 0.75), (0.2, 0.5, 0.9), (0.2, 0.5, 0.7)
    for x, v, c in zip(xs, f, cost):
        opt.tell(opt.suggest(config={"x": x}).trial_id, v, metrics={"cost": c})
    (mf, vf), (mg, vg) = _gp(xs, f), _gp(xs, [c - 0.6 for c in cost])
    Q = max(1.0 + 0.1, math.sqrt(3))
    score = mf + 0.5 * np.sqrt(vf) - Q * np.maximum(mg + shift * 2.0 * np.sqrt(vg), 0)
    assert opt.suggest().config["x"] == pytest.approx(GRID[np.argmax(score), 0])


@pytest.mark.parametrize("kw, words", [
    ({"censoring": "medium"}, ["censoring", "hard", "soft"]),
    ({"censor_noise": 0}, ["censor_noise", "> 0"]),
    ({"delay_lambda_power": 2}, ["delay_lambda_power", "[0, 1]"]),
    ({"n_initial": "many"}, ["n_initial", "auto"]),
    ({"kernel": "rbf"}, ["kernel", "se", "matern52", "auto"]),
    ({"constraint_kernel": "rbf"}, ["constraint_kernel", "same", "auto"]),
    ({"prior_mean": "median"}, ["prior_mean", "zero", "mean"]),
    ({"refit_dense_until": -1}, ["refit_dense_until", ">= 0"]),
    ({"output_warp": "rank"}, ["output_warp", "none", "copula"]),
    ({"noise_floor": 0.0}, ["noise_floor", "(0, 0.5)"]),
    ({"constraints": [COST], "constraint_handler": "rpol", "handler_options": {"g": "max"}},
     ["handler_options.g", "lcb", "ucb"]),
])
def test_bad_switches_name_the_field_and_allowed_values(kw, words):
    with pytest.raises(ValueError) as err:
        optimizer(LINE, **kw)
    assert all(w in str(err.value) for w in words)


# --- the kernel chosen by the evidence -----------------------------------------------------------

SQUARE = {"x": {"type": "float", "low": 0.0, "high": 1.0},
          "y": {"type": "float", "low": 0.0, "high": 1.0}}


def told(f, n=40, **kw):
    """An optimizer told ``f`` at its ``n`` start-up points, then asked once more (a fit)."""
    opt, _ = make(SQUARE, kernel="auto", n_initial=n, objective_bounds=None, **kw)
    for _ in range(n):
        s = opt.suggest()
        opt.tell(s.trial_id, float(f(s.config["x"], s.config["y"])))
    opt.suggest()
    return opt


def test_kernel_auto_fits_both_and_keeps_the_one_the_evidence_favours():
    """kernel: auto fits SE and Matern-5/2 at each refit and keeps the one of higher marginal
    likelihood x prior: SE for a smooth function, Matern for one with kinks (|.|^0.3)."""
    smooth = told(lambda x, y: np.sin(3 * x) + np.cos(2 * y))
    rough = told(lambda x, y: abs(np.sin(9 * x)) ** 0.3 + abs(y - 0.37) ** 0.3)
    assert smooth.objective.gp_all.kernel.name == "se"
    assert rough.objective.gp_all.kernel.name == "matern52"
    assert rough.objective.gp_done.kernel.name == "matern52"


def test_the_chosen_kernel_is_saved_and_the_resumed_optimizer_suggests_the_same(tmp_path):
    opt = told(lambda x, y: abs(np.sin(9 * x)) ** 0.3 + abs(y - 0.37) ** 0.3, n=30)
    opt.save(tmp_path / "state.json")
    again = Optimizer.load(tmp_path / "state.json", clock=opt.clock)
    assert again.objective.gp_all.kernel.name == "matern52"
    assert opt.suggest().config == again.suggest().config


def test_constraint_kernel_sets_the_constraint_models_apart_from_the_objective():
    opt, _ = make(kernel="matern52", constraint_kernel="se", constraints=[COST])
    assert opt.objective.gp_all.kernel.name == "matern52"
    assert [m.gp_all.kernel.name for m in opt.constraint_models] == ["se"]
    same, _ = make(kernel="matern52", constraints=[COST])
    assert [m.gp_all.kernel.name for m in same.constraint_models] == ["matern52"]


# --- the output warp ---------------------------------------------------------------------------

def test_the_copula_warp_keeps_the_order_of_the_results_and_spreads_a_crowded_top():
    u = np.array([0.0, 0.97, 0.96, 0.98, 0.5, 0.97, 1.0, 0.1])
    w = RankWarp.fit(u)(u)
    assert w.min() == 0.0 and w.max() == 1.0
    assert np.array_equal(np.sign(u[:, None] - u[None, :]), np.sign(w[:, None] - w[None, :]))
    # the four results within 0.04 of the best span more than a third of the GP's scale
    assert w[6] - w[2] > 0.33 and w[4] < 0.5


def test_the_copula_warp_is_undone_exactly_and_extended_past_the_results():
    """Handlers that weigh the objective's own scale get the UCB back through the inverse."""
    u = np.array([0.0, 0.97, 0.96, 0.98, 0.5, 0.97, 1.0, 0.1])
    w = RankWarp.fit(u)
    grid = np.linspace(0.0, 1.0, 201)
    assert np.allclose(w.inverse(w(grid)), grid)
    past = w.inverse(np.array([-0.5, -0.1, 0.0, 1.0, 1.1, 1.5]))
    assert np.all(np.diff(past) > 0) and past[3] == 1.0 and past[4] > 1.0


def test_the_tail_warp_keeps_the_gaps_between_good_results_and_ranks_the_diverged_ones_below():
    """Two diverged runs among results within 0.18 of the best: plain, the good ones are
    squeezed into the top fifth of the GP's scale; with the tail warp their gaps keep their
    ratios and span twice as much, the diverged runs ranked under them in their share (2/10)."""
    u = np.array([0.0, 0.05, 0.82, 0.86, 0.90, 0.93, 0.95, 0.97, 0.99, 1.0])
    w = RankWarp.fit_tail(u)
    good = w(u[2:])
    assert np.allclose(np.diff(good) / np.diff(u[2:]), (good[-1] - good[0]) / (u[-1] - u[2]))
    assert good[-1] == 1.0 and good[-1] - good[0] > 2 * (u[-1] - u[2])
    assert w(u[0]) == 0.0 and 0.0 < w(u[1]) < 0.2 < good[0]
    assert np.allclose(w.inverse(w(np.linspace(0, 1, 101))), np.linspace(0, 1, 101))
    # no result below the fence (a smooth objective): the results as they are
    smooth = np.linspace(0.0, 1.0, 9) ** 1.5
    assert np.allclose(RankWarp.fit_tail(smooth)(smooth), smooth)
    assert RankWarp.fit_tail(np.array([0.4, 0.4])) is None
    # most results tied at the best (a lookup table's top): the fence is the best itself
    tied = np.array([0.0, 0.3, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    assert np.allclose(RankWarp.fit_tail(tied)(tied), [0.0, 0.1] + [1.0] * 8)


def test_the_optimizer_with_the_tail_warp_sees_a_diverged_run_under_the_good_ones():
    opt, _ = make(SQUARE, objective_bounds=None, output_warp="tail", n_initial=8)
    for v in (0.90, 0.92, 0.93, 0.91, 0.94, 0.95, 0.93, -5.0):      # the last one diverged
        s = opt.suggest()
        opt.tell(s.trial_id, v)
    y = opt.censored_targets()
    assert y[7] == 0.0 and y[:7].min() > 0.125 and y[5] == 1.0 and y[:7].max() - y[:7].min() > 0.5
    # the good results' gaps as they were: 0.92 sits 2/5 of the way from 0.90 to 0.95
    assert np.isclose((y[1] - y[0]) / (y[5] - y[0]), 0.4)
    plain, _ = make(SQUARE, objective_bounds=None, output_warp="none", n_initial=8)
    for tr in opt.trials:
        s = plain.suggest()
        plain.tell(s.trial_id, tr.value)
    assert plain.censored_targets()[:7].max() - plain.censored_targets()[:7].min() < 0.01


def rank_run(transform, warp, n=16):
    """The configurations an optimizer tries when told ``transform`` of a smooth function."""
    opt, _ = make(SQUARE, objective_bounds=None, output_warp=warp, n_initial=5)
    for _ in range(n):
        s = opt.suggest()
        opt.tell(
            s.trial_id, float(transform(np.sin(3 * s.config["x"]) + np.cos(2 * s.config["y"])))
        )
    return [tr.x.tolist() for tr in opt.trials]


def test_with_the_copula_warp_the_choices_depend_only_on_the_order_of_the_results():
    """Told exp(4 f) instead of f, the warped optimizer makes the same choices; the unwarped
    one does not (it sees the gaps between results)."""
    exp4 = lambda v: np.exp(4 * v)
    assert rank_run(lambda v: v, "copula") == rank_run(exp4, "copula")
    assert rank_run(lambda v: v, "none") != rank_run(exp4, "none")


def test_a_running_trial_stays_at_the_minimum_under_the_warp():
    opt, _ = make(SQUARE, objective_bounds=None, output_warp="copula", n_initial=4)
    for v in (0.3, 0.9, 0.95, 0.2):
        s = opt.suggest()
        opt.tell(s.trial_id, v)
    opt.suggest()                      # running
    y = opt.censored_targets()
    assert y[4] == 0.0 and y[3] == 0.0 and y[2] == 1.0 and 0.0 < y[0] < y[1] < 1.0


def test_the_noise_floor_bounds_the_objective_gps_fitted_noise_from_below():
    """Deterministic results: the fit drives the noise to the box's edge; ``noise_floor`` is
    that edge for the objective's GP (the rank warp's near-ties read as noise, not as a rough
    function); the constraint models keep theirs."""
    def fit(**kw):
        opt, _ = make(SQUARE, objective_bounds=None, output_warp="copula", kernel="matern52",
                      n_initial=30, constraints=[COST], **kw)
        for _ in range(30):
            s = opt.suggest()
            x, y = s.config["x"], s.config["y"]
            opt.tell(s.trial_id, float(np.sin(3 * x) + np.cos(2 * y)), metrics={"cost": x})
        opt.suggest()
        return opt.objective.gp_all.hyper, opt.constraint_models[0].gp_all.hyper
    (free, cost_free), (floored, cost_floored) = fit(), fit(noise_floor=1e-3)
    assert free.noise < 1e-3 <= floored.noise
    assert cost_floored.noise < 1e-3 and cost_floored.to_dict() == cost_free.to_dict()


# --- the paper-exact settings -------------------------------------------------------------------

def test_paper_exact_settings_are_001_app_c_whatever_the_defaults():
    paper = Settings.from_dict(PAPER_EXACT)
    r = paper.research
    assert (r.censored.censoring, paper.kernel, paper.n_initial, paper.refit_every) == ("hard",
                                                                                        "se", 1, 10)
    assert (r.model.prior_mean, r.exploration.delay_lambda_power, r.fitting.refit_dense_until) == (
        "zero",
        0.0,
        0,
    )
    assert paper.constraint_handler == "rpol" and paper.handler_options == {}
    opt, _ = make(**PAPER_EXACT)
    opt.suggest()
    opt.suggest()
    # hard censoring: a running trial is a GP input at exactly the minimum (eq. 1)
    assert isinstance(opt.objective_posterior(), Posterior)
    assert np.array_equal(opt.censored_targets(), [0.0, 0.0])


def test_a_state_saved_before_the_new_switches_resumes_with_the_rules_it_ran_with(tmp_path):
    """An optimizer state written before soft censoring and the prior existed has no such keys;
    it resumes with hard censoring and no prior (what it ran with), not the new defaults."""
    opt, clock = make(**PAPER_EXACT)
    for _ in range(3):
        s = opt.suggest()
        opt.tell(s.trial_id, float(opt.trials[s.trial_id].x[0]))
    opt.suggest()
    state = opt.state_dict()
    # saved flat, as then, without the switches that did not exist yet
    state["settings"] = {k: v for k, v in opt.settings.flat().items() if k not in (
        "censoring", "censor_noise", "delay_lambda_power", "prior_mean", "refit_dense_until",
        "lengthscale_prior")}
    again = Optimizer.from_state(state, clock=clock)
    research = again.settings.research
    assert research.censored.censoring == "hard" and research.fitting.lengthscale_prior is False
    assert opt.suggest().config == again.suggest().config
