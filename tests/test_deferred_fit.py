"""Deferred refits (research.refit_apply: next): past fit_max_points results, the fit started when
one is due is applied when the next is due, so it can run off the suggestion's path (in a pool
the study hands the optimizer) while the suggestions stay what they would be without the pool,
after a resume with a fit in flight, and when the pool's process dies."""

import multiprocessing as mp
import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pytest

from tuner import PAPER_EXACT, Optimizer, Settings
from tuner.loop.simulator import SimClock

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0},
         "y": {"type": "float", "low": 0.0, "high": 1.0}}


def f(c):
    return float(np.sin(6 * c["x"]) * np.cos(4 * c["y"]) + c["x"])


def make(**kw):
    kw.setdefault("fit_max_points", 6)
    kw.setdefault("refit_apply", "next")
    return Optimizer(SPACE,
                     Settings.from_dict({"refit_every": 3, "seed": 4, "n_candidates": 256, **kw}),
                     clock=SimClock())


def run(opt, n, running=3, live=None):
    """n suggestions with ``running`` trials in flight (the oldest told first); the configs
    and the trials still running."""
    live, out = list(live or []), []
    for _ in range(n):
        s = opt.suggest()
        out.append((s.config["x"], s.config["y"]))
        live.append(s)
        if len(live) > running:
            done = live.pop(0)
            opt.tell(done.trial_id, f(done.config))
    return out, live


def spawned_pool():
    return ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"))


def test_a_fit_started_when_due_is_applied_when_the_next_is_due():
    opt = make()
    model = opt.objective
    live = []
    while model.deferred is None:           # fits apply at once up to fit_max_points results
        _, live = run(opt, 1, live=live)
    assert model.fit_n > 6
    first, in_force = model.deferred, model.gp_done.hyper.to_dict()
    fitted, _ = first.result()
    assert fitted.to_dict() != in_force
    while model.deferred is first:
        assert model.gp_done.hyper.to_dict() == in_force    # the lag: the older fit still holds
        _, live = run(opt, 1, live=live)
    assert model.gp_done.hyper.to_dict() == fitted.to_dict()
    assert model.deferred is not None                       # and the next one started


def test_below_fit_max_points_fits_apply_at_once():
    opt = make(fit_max_points=500)
    run(opt, 40)
    assert opt.objective.deferred is None and opt.objective.fit_n > 0


def test_a_process_pool_gives_the_suggestions_of_no_pool():
    alone, _ = run(make(), 40)
    opt = make()
    with spawned_pool() as pool:
        opt.run_fits_in(pool)
        pooled, _ = run(opt, 40)
        assert opt.objective.deferred.future is not None    # the fits did go to the pool
    assert pooled == alone
    now, _ = run(make(refit_apply="now"), 40)
    assert now != alone                                     # the lag is real


def test_a_pool_that_dies_or_is_shut_down_changes_nothing():
    alone, _ = run(make(), 45)
    opt = make()
    pool = spawned_pool()
    opt.run_fits_in(pool)
    first, live = run(opt, 15)
    while opt.objective.deferred is None:
        more, live = run(opt, 1, live=live)
        first += more
    assert pool._processes                  # the pool's own worker process, killed mid-study
    for pid in list(pool._processes):
        os.kill(pid, signal.SIGKILL)
    second, live = run(opt, 10, live=live)
    pool.shutdown()                         # submit now raises: the fits run here
    third, _ = run(opt, 45 - len(first) - len(second), live=live)
    assert first + second + third == alone


class FailingPool:
    """A pool whose every job fails as a killed worker process makes it fail."""

    def __init__(self):
        self.submitted = 0

    def submit(self, fn, *args):
        self.submitted += 1
        future = Future()
        future.set_exception(BrokenProcessPool("the worker process died"))
        return future


def test_a_fit_whose_pool_failed_is_run_here_with_the_same_result():
    alone, _ = run(make(), 40)
    opt, pool = make(), FailingPool()
    opt.run_fits_in(pool)
    failed, _ = run(opt, 40)
    assert pool.submitted > 0 and failed == alone


def test_letting_go_of_the_pool_keeps_a_finished_answer_and_drops_a_pending_one():
    opt = make()
    with spawned_pool() as pool:
        opt.run_fits_in(pool)
        _, live = run(opt, 20)
        fit = opt.objective.deferred
        fit.future.result()
        opt.run_fits_in(None)
    assert opt.view.fit_pool is None and fit.future.done()
    pending = Future()
    fit.future = pending
    fit.detach()
    assert fit.future is None               # runs here when applied: no wait on a closed pool
    ours, _ = run(opt, 10, live=live)
    again = make()
    _, live2 = run(again, 20)
    theirs, _ = run(again, 10, live=live2)
    assert ours == theirs


def test_resumed_with_a_fit_in_flight_suggests_the_same(tmp_path):
    opt = make()
    _, live = run(opt, 15)
    while opt.objective.deferred is None:
        _, live = run(opt, 1, live=live)
    opt.save(tmp_path / "state.json")
    again = Optimizer.load(tmp_path / "state.json", clock=opt.clock)
    assert again.objective.deferred is not None
    assert again.objective.deferred.job.ids == opt.objective.deferred.job.ids
    with spawned_pool() as pool:
        again.run_fits_in(pool)             # the fit in flight starts in the pool
        assert again.objective.deferred.future is not None
        theirs, _ = run(again, 12, live=live)
    ours, _ = run(opt, 12, live=live)
    assert ours == theirs


def test_constraint_models_defer_their_fits_too():
    opt = make(constraints=[{"metric": "cost", "limit": 0.5}])
    live = []
    for _ in range(40):
        s = opt.suggest()
        live.append(s)
        if len(live) > 3:
            d = live.pop(0)
            opt.tell(d.trial_id, f(d.config), {"cost": d.config["x"]})
    assert opt.objective.deferred is not None and opt.constraint_models[0].deferred is not None


def test_the_default_and_paper_exact_apply_each_fit_at_once():
    paper = Settings.from_dict(PAPER_EXACT)
    assert Settings().research.fitting.refit_apply == paper.research.fitting.refit_apply == "now"
    opt = Optimizer(SPACE, Settings.from_dict({**PAPER_EXACT, "fit_max_points": 6}), seed=1,
                    clock=SimClock())
    run(opt, 30)
    assert opt.objective.deferred is None and opt.objective.fit_n > 6


def test_a_bad_value_names_the_field_and_the_choices():
    with pytest.raises(ValueError, match=r"refit_apply.*next.*now"):
        Settings(research={"refit_apply": "later"}).validate()


def test_a_study_that_starts_with_many_results_fits_at_once_first():
    """A resumed or warm-started study past fit_max_points: its first fit is applied at once,
    not after a refit interval on the initial hyperparameters."""
    opt = make()
    start = opt.objective.gp_done.hyper.to_dict()
    rng = np.random.default_rng(0)
    for _ in range(20):
        c = {"x": float(rng.random()), "y": float(rng.random())}
        opt.add_earlier(c, f(c))
    opt.suggest()
    model = opt.objective
    assert model.fit_n == 20 and model.deferred is None
    assert model.gp_done.hyper.to_dict() != start
