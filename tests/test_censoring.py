import numpy as np
import pytest

from conftest import optimizer
from tuner.core.optimizer import Optimizer
from tuner.core.settings import PAPER_EXACT
from tuner.loop.simulator import SimClock

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0}}


def make(**kw):
    """Paper 001's censoring (eq. 1 as printed), whatever the product's defaults."""
    clock = SimClock()
    kw.setdefault("objective_bounds", (0.0, 1.0))
    return optimizer(SPACE, PAPER_EXACT, clock=clock, seed=0, **kw), clock


def test_pending_trials_enter_at_the_minimum_and_results_replace_it():
    opt, clock = make(window=10)
    ids = [opt.suggest().trial_id for _ in range(3)]
    assert np.array_equal(opt.censored_targets(), [0.0, 0.0, 0.0])
    opt.tell(ids[1], 0.8)
    assert np.allclose(opt.censored_targets(), [0.0, 0.8, 0.0])
    # every started trial is an input of the GP, pending or not
    assert opt.objective.gp_all.n == 3


def test_minimum_comes_from_objective_bounds_and_mode():
    opt, _ = make(window=10, mode="min", objective_bounds=(0.0, 4.0))
    a, _ = opt.suggest().trial_id, opt.suggest().trial_id
    opt.tell(a, 1.0)   # loss 1 of [0, 4]: 0.75 of the way from worst to best
    assert np.allclose(opt.censored_targets(), [0.75, 0.0])


def test_result_arriving_after_its_window_stays_censored_for_good():
    opt, _ = make(window=2)
    first = opt.suggest().trial_id
    for _ in range(3):          # three more queries start: delay d = 3 > m = 2
        opt.suggest()
    opt.tell(first, 0.9)
    assert opt.censored_targets()[0] == 0.0
    assert opt.counted() == (2.0, [])
    for _ in range(20):
        opt.suggest()
    assert opt.censored_targets()[0] == 0.0
    # one that arrives within the window counts
    s = opt.suggest().trial_id
    opt.suggest()               # d = 1 <= 2
    opt.tell(s, 0.5)
    assert opt.censored_targets()[s] == 0.5


@pytest.mark.parametrize("algorithm", ["gp-ucb", "gp-bucb", "asy-ts", "gp-bts"])
def test_baselines_count_a_late_result_whenever_it_arrives(algorithm):
    """The window belongs to censored feedback: 001 §6's baselines have none."""
    opt, _ = make(window=2, algorithm=algorithm)
    first = opt.suggest().trial_id
    for _ in range(3):          # d = 3 > m = 2: GP-UCB-SDF would censor it for good
        opt.suggest()
    opt.tell(first, 0.9)
    assert [tr.trial_id for tr in opt.counted()[1]] == [first]
    post = opt.objective_posterior()
    assert post.predict(opt.trials[0].x[None, :])[0][0] > 0.8


def test_by_default_a_late_result_counts_when_it_arrives():
    """Default m = inf (docs/research/notes/evidence.md, "Censoring window"): censored while
    running, never after."""
    opt = Optimizer(SPACE, clock=SimClock(), seed=0, objective_bounds=(0.0, 1.0))
    assert opt.window.size == float("inf")
    first = opt.suggest().trial_id
    for _ in range(30):
        opt.suggest()
    assert opt.censored_targets()[first] == 0.0         # pending: at the minimum
    opt.tell(first, 0.9)
    assert opt.censored_targets()[first] == 0.9
    as_text = Optimizer(SPACE, window="inf", seed=0)     # YAML's "inf" as a string
    assert as_text.window.size == float("inf")


def test_time_window_follows_the_injected_clock():
    opt, clock = make(window_unit="seconds", window=10.0)
    fast = opt.suggest().trial_id
    slow = opt.suggest().trial_id
    clock.now = 4.0
    opt.tell(fast, 0.6)          # took 4 s <= 10 s
    clock.now = 15.0
    opt.tell(slow, 0.7)          # took 15 s > 10 s: censored for good
    assert np.allclose(opt.censored_targets(), [0.6, 0.0])


def test_failed_trial_is_censored_and_not_pending():
    opt, _ = make(window=10)
    a = opt.suggest().trial_id
    opt.suggest()
    opt.fail(a, "raised ValueError")
    assert opt.censored_targets()[0] == 0.0
    assert [t.trial_id for t in opt.running] == [1]
    assert opt.trials[0].status == "FAILED" and opt.trials[0].reason == "raised ValueError"


def test_auto_window_is_twice_the_mean_delay():
    opt, clock = make(window="auto", window_unit="seconds")
    a, _ = opt.suggest().trial_id, opt.suggest().trial_id
    clock.now = 3.0
    opt.tell(a, 0.5)
    clock.now = 5.0
    # a took 3 s, b has been running 5 s: mean 4, m = 8
    assert opt.window.resolve(opt.trials, 5.0, 2) == pytest.approx(8.0)


def test_nu_matches_hand_computation():
    opt, clock = make(window=5, beta=1.0, b_y=1.0, n_initial=3)
    ids = [opt.suggest().trial_id for _ in range(3)]
    opt.tell(ids[0], 0.4)
    opt.suggest()                       # t = 3: pending in window are ids[1], ids[2]
    post_gp = opt.objective.gp_all
    # recompute by hand with the same GP state as at that suggest (inputs of trials 0..2)
    from tuner.core.gp import GaussianProcess
    from tuner.core.posterior import Posterior
    gp = GaussianProcess(post_gp.kernel, post_gp.hyper)
    gp.extend(np.vstack([opt.trials[i].x for i in range(3)]))
    _, var = Posterior(gp, None, gp).predict(np.vstack([opt.trials[1].x, opt.trials[2].x]))
    assert opt.last_nu == pytest.approx(1.0 + np.sqrt(var).sum(), rel=1e-9)

    # literal eq. 2 ("window"): every one of the last m queries counts, finished or not
    opt2, _ = make(window=5, beta=1.0, n_initial=3, nu_terms="window")
    ids = [opt2.suggest().trial_id for _ in range(3)]
    opt2.tell(ids[0], 0.4)
    opt2.suggest()
    _, var3 = Posterior(gp, None, gp).predict(np.vstack([opt2.trials[i].x for i in range(3)]))
    assert opt2.last_nu == pytest.approx(1.0 + np.sqrt(var3).sum(), rel=1e-9)


def test_baselines_ignore_pending_and_hallucination_keeps_the_mean():
    opts = {
        a: make(algorithm=a, window=50, n_initial=4)[0] for a in ("gp-ucb", "gp-bucb", "gp-ucb-sdf")
    }
    for opt in opts.values():
        ids = [opt.suggest(config={"x": x}).trial_id for x in (0.1, 0.3, 0.5, 0.52)]
        opt.tell(ids[0], 0.2)
        opt.tell(ids[1], 0.9)
        opt.suggest()                     # builds the posteriors, trials 2, 3 pending
    U = np.linspace(0, 1, 101)[:, None]
    m_ign, v_ign = opts["gp-ucb"].objective_posterior().predict(U)
    m_hal, v_hal = opts["gp-bucb"].objective_posterior().predict(U)
    assert np.allclose(m_hal, m_ign, atol=1e-10)          # mean untouched by pending points
    assert np.all(v_hal <= v_ign + 1e-12)                 # variance only shrinks ...
    assert v_hal[51] < 0.5 * v_ign[51]                    # ... and most near the pending x=0.5
    m_cen, _ = opts["gp-ucb-sdf"].objective_posterior().predict(U)
    assert m_cen[51] < m_hal[51] - 0.05                   # censoring pulls the mean down there
