"""TunerScheduler driven through Ray Tune's scheduler API with Ray's own ``Trial`` objects (no
Ray processes: the calls the tune controller makes, in its order), against Ray's own ASHA, with
TunerSearch, and through a save and restore.  The run on a real Ray is in
test_tune_search.py."""

import math

import numpy as np
import pytest
from ray import tune
from ray.tune.experiment import Trial
from ray.tune.schedulers import AsyncHyperBandScheduler, TrialScheduler

from tuner.core.trial import Status
from tuner.integrations.ray import TunerScheduler, TunerSearch
from tuner.loop.problems import CrossingCurves

EPOCHS = 9
CURVES = CrossingCurves(epochs=EPOCHS)
SPACE = {"lr": tune.loguniform(1e-4, 1.0), "width": tune.lograndint(8, 256)}
FAST = dict(n_candidates=128, research={"n_local": 16, "n_starts": 1})


def drive(scheduler, trials, configs, workers=3, search=None):
    """The controller's calls for ``trials`` run ``workers`` at a time, one epoch per turn:
    on_trial_add, on_trial_result per epoch (and the searcher's), then on a STOP or at the
    end on_trial_complete (scheduler first, then the searcher).  Returns {id: last epoch}."""
    reached, queue, running = {}, list(trials), []
    while queue or running:
        while queue and len(running) < workers:
            t = queue.pop(0)
            scheduler.on_trial_add(None, t)
            running.append(t)
        for t in list(running):
            epoch = reached.get(t.trial_id, 0) + 1
            reached[t.trial_id] = epoch
            result = {"epoch": epoch, "score": CURVES.score(configs[t.trial_id], epoch),
                      "time_total_s": 0.1 * epoch, "training_iteration": epoch}
            decision = scheduler.on_trial_result(None, t, result)
            if decision == TrialScheduler.CONTINUE and search is not None:
                search.on_trial_result(t.trial_id, result)
            if decision == TrialScheduler.STOP or epoch == EPOCHS:
                scheduler.on_trial_complete(None, t, result)
                if search is not None:
                    search.on_trial_complete(t.trial_id, result)
                running.remove(t)
    return reached


def random_trials(n, seed=0):
    rng = np.random.default_rng(seed)
    configs = [{"lr": float(10 ** rng.uniform(-4, 0)), "width": int(rng.integers(8, 257))}
               for _ in range(n)]
    trials = [Trial("__fake", config=c, stub=True) for c in configs]
    return trials, {t.trial_id: c for t, c in zip(trials, configs)}


def test_the_asha_rule_stops_exactly_the_trials_rays_asha_stops():
    trials, configs = random_trials(30)
    ours = TunerScheduler(metric="score", mode="max", time_attr="epoch", max_t=EPOCHS,
                          rule="asha", grace=1, eta=3)
    theirs = AsyncHyperBandScheduler(metric="score", mode="max", time_attr="epoch",
                                     max_t=EPOCHS, grace_period=1, reduction_factor=3)
    reached_ours = drive(ours, trials, configs)
    # the same stream for Ray's ASHA: the same configurations in the same order
    twins = [Trial("__fake", config=t.config, stub=True) for t in trials]
    reached_theirs = drive(theirs, twins, {tw.trial_id: configs[t.trial_id]
                                           for tw, t in zip(twins, trials)})
    assert [reached_ours[t.trial_id] for t in trials] == [reached_theirs[t.trial_id] for t in twins]
    assert min(reached_ours.values()) < EPOCHS == max(reached_ours.values())
    stopped = [t.trial_id for t in trials if reached_ours[t.trial_id] < EPOCHS]
    assert set(ours.reasons) == set(stopped) and all("ASHA" in ours.reasons[t] for t in stopped)


def test_with_tuner_search_stopped_runs_are_censored_with_the_reason_and_the_best_finishes():
    search = TunerSearch(SPACE, metric="score", mode="max", seed=0, time_attr="epoch",
                         max_t=EPOCHS, **FAST)
    sched = TunerScheduler(search=search, time_attr="epoch", max_t=EPOCHS)
    assert sched.set_search_properties("score", "max") and sched.rule == "curve"
    trials = []
    configs = {}
    for i in range(24):
        t = Trial("__fake", config={}, stub=True)
        configs[t.trial_id] = search.suggest(t.trial_id)
        t.config = configs[t.trial_id]
        trials.append(t)
    reached = drive(sched, trials, configs, search=search)
    opt, ids = search.optimizer, search.trial_ids
    stopped = [t.trial_id for t in trials if reached[t.trial_id] < EPOCHS]
    assert stopped, "the curve rule stopped no run"
    for rid in stopped:
        tr = opt.trials[ids[rid]]
        assert tr.status == Status.STOPPED and "unlikely to beat the best run" in tr.reason
        assert tr.partial == pytest.approx(CURVES.score(configs[rid], reached[rid]))
        assert tr.progress == pytest.approx(reached[rid] / EPOCHS)
    finished = [opt.trials[ids[t.trial_id]] for t in trials if reached[t.trial_id] == EPOCHS]
    best = max(tr.value for tr in finished)
    # a stopped run was judged unlikely to beat the best run: none would have by more than 0.01
    # (a crossing curve can fool the model a little), most would have ended far below
    finals = [CURVES.score(configs[rid], EPOCHS) for rid in stopped]
    assert max(finals) < best + 0.01
    assert np.mean([f < best - 0.05 for f in finals]) > 0.5


def saturating(config, epoch):
    """Curves that rise to a plateau set by the learning rate, at one pace: a run's rank early
    is its rank at the end (what early stopping is for)."""
    plateau = 0.92 - 0.06 * (math.log10(config["lr"]) + 2.5) ** 2 + 0.02 * config["width"] / 256
    return plateau * (1 - math.exp(-epoch / 2.0))


def test_metric_mode_time_attr_and_max_t_are_enough_as_for_rays_asha():
    """The drop-in for ASHAScheduler: no search=, no space= (learned from the trials'
    configurations), with random configurations; the runs stopped early say why in their last
    result, and the run with the highest final value is never one of them."""
    sched = TunerScheduler(metric="score", mode="max", time_attr="epoch", max_t=EPOCHS)
    trials, configs = random_trials(40, seed=3)
    reached, last = {}, {}
    queue, running = list(trials), []
    while queue or running:
        while queue and len(running) < 3:
            running.append(queue.pop(0))
            sched.on_trial_add(None, running[-1])
        for t in list(running):
            epoch = reached[t.trial_id] = reached.get(t.trial_id, 0) + 1
            last[t.trial_id] = {"epoch": epoch, "score": saturating(configs[t.trial_id], epoch)}
            if (sched.on_trial_result(None, t, last[t.trial_id]) == TrialScheduler.STOP
                    or epoch == EPOCHS):
                t.run_metadata.last_result = dict(last[t.trial_id])   # as Ray keeps it
                sched.on_trial_complete(None, t, last[t.trial_id])
                running.remove(t)
    stopped = [t for t in trials if reached[t.trial_id] < EPOCHS]
    assert len(stopped) >= len(trials) / 3
    best = max(trials, key=lambda t: saturating(configs[t.trial_id], EPOCHS))
    assert reached[best.trial_id] == EPOCHS
    for t in stopped:
        assert "unlikely to beat the best run" in t.last_result["stopped_early"]
    assert all("stopped_early" not in t.last_result for t in trials if t not in stopped)


def test_asha_with_grace_auto_stops_nothing_until_eight_runs_finished():
    """rule="asha", grace="auto" under Ray Tune's calls: no trial is stopped before 8 have
    finished.  With the learning rate fixed the curves keep their order, so the first rung is
    learned at epoch 1 and later trials are stopped there; with crossing curves (random
    learning rates) no rung keeps the winners and none is stopped."""
    rng = np.random.default_rng(3)
    configs = [{"lr": 0.003, "width": int(w)} for w in rng.integers(8, 257, 30)]
    trials = [Trial("__fake", config=c, stub=True) for c in configs]
    sched = TunerScheduler(metric="score", mode="max", time_attr="epoch", max_t=EPOCHS,
                           rule="asha", grace="auto")
    reached = drive(sched, trials, {t.trial_id: c for t, c in zip(trials, configs)}, workers=2)
    assert sched.rules()[0].grace == 1
    ids = [t.trial_id for t in trials]
    assert all(reached[i] == EPOCHS for i in ids[:8])
    stopped = [i for i in ids if reached[i] < EPOCHS]
    assert len(stopped) >= 5 and all("first rung learned: 1" in sched.reasons[i] for i in stopped)

    crossing = TunerScheduler(metric="score", mode="max", time_attr="epoch", max_t=EPOCHS,
                              rule="asha", grace="auto")
    trials, configs = random_trials(30, seed=3)
    reached = drive(crossing, trials, configs, workers=2)
    assert crossing.rules()[0].grace == EPOCHS and set(reached.values()) == {EPOCHS}


def test_the_pace_rule_stops_a_run_whose_pace_passes_the_budget():
    sched = TunerScheduler(metric="score", mode="max", time_attr="epoch", max_t=EPOCHS,
                           rule="none", budget=0.5)
    trials, configs = random_trials(2)
    reached = drive(sched, trials, configs)               # 0.1 s per epoch: 0.9 s > 0.5 s
    assert all(r < EPOCHS for r in reached.values())
    assert all("over the budget of 0.5 s" in sched.reasons[t.trial_id] for t in trials)


def test_the_state_travels_in_the_search_checkpoint_and_the_rules_continue(tmp_path):
    def pair():
        search = TunerSearch(SPACE, metric="score", mode="max", seed=3, time_attr="epoch",
                             max_t=EPOCHS, **FAST)
        return search, TunerScheduler(search=search, time_attr="epoch", max_t=EPOCHS)

    search, sched = pair()
    trials, configs = [], {}
    for _ in range(12):
        t = Trial("__fake", config={}, stub=True)
        configs[t.trial_id] = t.config = search.suggest(t.trial_id)
        trials.append(t)
    drive(sched, trials, configs, search=search)
    search.save(str(tmp_path / "search.json"))
    again_search, again = pair()
    again_search.restore(str(tmp_path / "search.json"))   # what Tuner.restore does
    assert again.reasons == sched.reasons and again.events == sched.events
    rule, rule_again = sched.rules()[0], again.rules()[0]
    assert rule.best == rule_again.best and rule.model.done == rule_again.model.done
    probe = Trial("__fake", config={}, stub=True)
    for s in (search, again_search):
        s.optimizer.clock = lambda: 0.0
    c1, c2 = search.suggest(probe.trial_id), again_search.suggest(probe.trial_id)
    assert c1 == c2
    probe.config = c1
    for s in (sched, again):
        s.on_trial_add(None, probe)
    for epoch in (1, 2, 4):
        result = {"epoch": epoch, "score": CURVES.score(c1, epoch) - 0.3}
        assert sched.on_trial_result(None, probe, result) == again.on_trial_result(None, probe,
                                                                                   result)


@pytest.mark.parametrize("kwargs, match", [
    ({"rule": "median"}, r"rule: 'median' is not one of \['curve', 'asha', 'none'\]"),
    ({"rule": "asha", "mode": "up"}, r"mode: 'up' is not one of"),
    ({"rule": "asha", "max_t": 0}, "max_t must be a number > 0"),
    ({"rule": "asha", "budget": -1}, "budget must be a number of seconds > 0"),
    ({"rule": "asha", "eta": 1}, "ASHA needs eta > 1"),
    ({"rule": "asha", "grace": "fast"}, "grace: expected a number > 0 or 'auto'"),
])
def test_bad_arguments_name_the_argument_and_the_allowed_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TunerScheduler(**kwargs)


def test_a_result_without_the_metric_or_the_time_attr_goes_on():
    sched = TunerScheduler(metric="score", mode="max", time_attr="epoch", max_t=EPOCHS,
                           space=SPACE, budget=0.01)
    t = Trial("__fake", config={"lr": 0.01, "width": 32}, stub=True)
    sched.on_trial_add(None, t)
    assert sched.on_trial_result(None, t, {"epoch": 1}) == TrialScheduler.CONTINUE
    assert sched.on_trial_result(None, t, {"score": 0.5}) == TrialScheduler.CONTINUE
    assert (
        sched.on_trial_result(None, t, {"score": math.nan, "epoch": 2}) == TrialScheduler.CONTINUE
    )
    assert sched.on_trial_result(None, t, {"score": 0.5, "epoch": EPOCHS}) == TrialScheduler.STOP


def test_a_space_learned_from_configurations_keeps_each_encoding():
    """SeenSpace: numbers scaled by the first configurations' range (log where they span over
    two decades), choices coded in the order seen; a configuration encodes the same after more
    arrive, so the curve model's inputs never move under it."""
    from tuner.core.seen_space import SeenSpace

    first = {"lr": 1e-4, "width": 16, "act": "relu"}
    space = SeenSpace(first, settle=3)
    space.add({"lr": 1e-1, "width": 64, "act": "tanh"})
    space.add({"lr": 1e-2, "width": 32, "act": "relu"})
    before = space.encode(first)
    space.add({"lr": 10.0, "width": 512, "act": "gelu"})      # after the scaling settled
    assert np.array_equal(space.encode(first), before)
    x = dict(zip(space.names, space.encode({"lr": 1e-1, "width": 40, "act": "tanh"})))
    assert x["lr"] == pytest.approx(1.0) and x["width"] == pytest.approx(0.5)   # log; linear
    assert x["act"] == pytest.approx(0.25) and space.encode({"act": "gelu"})[0] == 0.5
