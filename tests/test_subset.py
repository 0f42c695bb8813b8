"""Large studies: past ``exact_until`` started trials the GPs are built on a bounded subset
(``tuner.core.subset``), and soft censoring keeps one factor, not two."""

import json

import numpy as np
import pytest

from conftest import optimizer
from tuner import Optimizer, Settings
from tuner.core.subset import choose_subset
from tuner.loop.simulator import SimClock

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0},
         "y": {"type": "float", "low": 0.0, "high": 1.0}}


def f(c):
    return -((c["x"] - 0.3) ** 2 + (c["y"] - 0.7) ** 2)


def run(opt, n, running=4):
    """n suggestions, each told when ``running`` later ones have started (a pool of workers)."""
    live = []
    for _ in range(n):
        s = opt.suggest()
        live.append(s)
        if len(live) > running:
            done = live.pop(0)
            opt.tell(done.trial_id, f(done.config))
    return live


def test_choose_subset_keeps_the_running_the_neighbours_of_the_best_and_a_spread():
    rng = np.random.default_rng(0)
    X = rng.random((500, 2))
    scores = -np.linalg.norm(X - [0.3, 0.7], axis=1)
    running = np.zeros(500, dtype=bool)
    running[[3, 250, 499]] = True
    scores[running] = np.nan
    rows = choose_subset(X, running, scores, np.array([0.2, 0.2]), 100, np.random.default_rng(1))
    assert len(rows) == 103 and np.all(np.diff(rows) > 0)
    assert {3, 250, 499} <= set(rows)
    # the 50 finished trials nearest to the best five are all in
    best = np.argsort(-np.nan_to_num(scores, nan=-np.inf))[:5]
    d = np.min([((X - X[i]) ** 2).sum(1) for i in best], axis=0)
    d[running] = np.inf
    assert set(np.argsort(d)[:50]) <= set(rows)
    # the other half spreads over the space: some of it far from the best
    far = [i for i in rows if d[i] > 0.25]
    assert len(far) >= 10
    # few trials: every one is kept
    assert len(choose_subset(X[:50], running[:50], scores[:50], np.ones(2), 100,
                             np.random.default_rng(1))) == 50


def test_past_exact_until_the_gps_hold_a_bounded_subset_and_every_running_trial():
    opt = Optimizer(SPACE, objective_bounds=(-1.0, 0.0), seed=0, clock=SimClock(),
                    exact_until=60, subset_size=40, refit_every=10)
    live = run(opt, 59)
    opt.objective_posterior()          # brings the GPs up to the results told since
    assert not opt.subset_active and opt.objective.gp_done.n == 59 - len(live)
    live = run(opt, 150)
    assert opt.subset_active
    members = set(opt.objective.members)
    assert len(members) <= 40 + len(opt.running) + 10
    assert {opt.trials[s.trial_id].start_index for s in live} <= members
    best = opt.best()
    if best.finish_index <= opt.objective.built_at:      # the best result when it was chosen
        assert best.start_index in members
    assert opt.objective.gp_done.n <= 40 + 10
    # the optimizer still finds the optimum's neighbourhood
    assert best.value > -0.01


def test_exact_until_none_keeps_every_trial_and_the_default_keeps_one_factor():
    opt = Optimizer(SPACE, objective_bounds=(-1.0, 0.0), seed=0, clock=SimClock(),
                    exact_until=None)
    live = run(opt, 80)
    opt.objective_posterior()
    assert not opt.subset_active and opt.objective.gp_done.n == 80 - len(live)
    # soft censoring (the default) needs no GP over every started trial
    assert opt.objective.gp_all.n == 0
    hard = Optimizer(SPACE, objective_bounds=(-1.0, 0.0), seed=0, clock=SimClock(),
                     research={"censoring": "hard"})
    run(hard, 20)
    assert hard.objective.gp_all.n == 20


def test_trials_registered_without_a_choice_keep_the_subset_bounded():
    """Earlier studies or a user's points, told by the thousand, never grow the factor past
    1.5 x subset_size plus the running trials."""
    opt = Optimizer(SPACE, objective_bounds=(-1.0, 0.0), seed=0, clock=SimClock(),
                    exact_until=100, subset_size=50)
    rng = np.random.default_rng(0)
    largest = 0
    for _ in range(600):
        c = {"x": float(rng.random()), "y": float(rng.random())}
        opt.add_earlier(c, f(c))
        largest = max(largest, opt.objective.gp_done.n)
    assert opt.subset_active and largest <= 100
    assert opt.suggest().config


def test_a_saved_study_past_exact_until_resumes_with_identical_suggestions(tmp_path):
    opt = Optimizer(SPACE, objective_bounds=(-1.0, 0.0), seed=3, clock=SimClock(),
                    exact_until=40, subset_size=30, refit_every=7)
    run(opt, 75)
    assert opt.subset_active
    opt.save(tmp_path / "s.json")
    assert "members" in json.loads((tmp_path / "s.json").read_text())["objective"]
    again = Optimizer.load(tmp_path / "s.json", clock=opt.clock)
    assert np.array_equal(again.objective.gp_done.L, opt.objective.gp_done.L)
    for _ in range(12):       # across a new choice of the subset
        a, b = opt.suggest(), again.suggest()
        assert a == b
        opt.tell(a.trial_id, f(a.config))
        again.tell(b.trial_id, f(b.config))


def test_subset_size_above_exact_until_is_refused_naming_both():
    with pytest.raises(ValueError, match="subset_size .*exact_until"):
        Settings(exact_until=100, subset_size=200).validate()
    with pytest.raises(ValueError, match="exact_until"):
        Settings(exact_until=0).validate()


def test_a_batch_for_workers_that_freed_at_once_spreads_out():
    """Each suggestion of a batch sees the ones before it running: k distinct points near the
    best, not one argmax k times, which is what a sure GP gives when copies of a running trial
    are allowed (``running_correlation: None``, paper 001's rule)."""
    def batch(**kw):
        opt = optimizer(SPACE, objective_bounds=(-1.0, 0.0), seed=0, clock=SimClock(), **kw)
        for _ in range(12):
            s = opt.suggest()
            opt.tell(s.trial_id, f(s.config))
        X = np.array([[s.config["x"], s.config["y"]] for s in opt.suggest_batch(6)])
        gaps = [np.linalg.norm(a - b) for i, a in enumerate(X) for b in X[i + 1:]]
        return min(gaps), np.linalg.norm(X - [0.3, 0.7], axis=1).max()

    gap, spread = batch()
    assert gap > 0.01 and spread < 0.15
    assert batch(running_correlation=None)[0] < 1e-4      # copies of one configuration
    assert batch(algorithm="gp-ts-sdf")[0] > 0.01
    with pytest.raises(ValueError, match="k must be"):
        Optimizer(SPACE).suggest_batch(0)


def test_the_study_says_when_its_gps_switch_to_a_subset():
    from tuner.study.callbacks import subset_text
    from tuner.study.config import load_study
    from tuner.study.report import banner

    cfg = load_study({"trainable": "svm", "run": {"trials": 3000}})
    assert "exact GP up to 2000 trials, then on a subset of 1000" in banner(cfg, "local Ray", [])
    small = load_study({"trainable": "svm", "run": {"trials": 30}})
    assert "subset" not in banner(small, "local Ray", [])
    opt = Optimizer(SPACE, objective_bounds=(-1.0, 0.0), seed=0, clock=SimClock(),
                    exact_until=40, subset_size=30)
    run(opt, 45)
    assert opt.subset_active
    assert subset_text(opt).startswith("45 trials started: the GPs now use 30 of the finished ones")
