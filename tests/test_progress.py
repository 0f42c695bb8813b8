"""Runs that report progress, on the simulated backend: the optimizer hears each report, the
stopping rules stop runs mid-curve (STOPPED, with the last step they reached), a stopped run is
censored at the value it reached, and a run-time budget sees its run time projected from its
pace."""

import math

import numpy as np
import pytest

from tuner import PAPER_EXACT, Optimizer, Settings
from tuner.core.trial import Status
from tuner.loop.problems import CrossingCurves
from tuner.loop.simulator import Fixed, simulate
from tuner.loop.stopping import ASHA, Fidelity, PaceBudget, asha_rule

CURVES = CrossingCurves(epochs=27)
FIDELITY = Fidelity("epoch", 27)


def test_asha_rungs_and_cutoff_follow_successive_halving():
    """Rungs at grace * eta^k below max_t; a run reaching a rung goes on only if its value is in
    the top 1/eta of the values recorded there (the quantile 1 - 1/eta, as Ray Tune's ASHA)."""
    rule = ASHA(max_t=27, grace=1, eta=3)
    assert [m for m, _ in rule.rungs] == [9, 3, 1]
    assert rule.decide(0, 1, 0.5, 1.0) is None            # first at the rung: nothing to compare
    assert rule.decide(1, 1, 0.9, 1.0) is None
    reason = rule.decide(2, 1, 0.6, 1.0)                   # cutoff = 66.7th pct of (0.5, 0.9)
    assert reason is not None and "rung 1" in reason
    assert rule.decide(3, 1, 0.8, 1.0) is None             # 0.8 >= pct of (0.5, 0.9, 0.6) = 0.7
    assert rule.decide(1, 2, 0.95, 2.0) is None            # between rungs: no decision
    assert sorted(rule.rungs[2][1]) == [0, 1, 2, 3]
    low = ASHA(max_t=27, grace=1, eta=3, mode="min")
    low.decide(0, 1, 0.5, 1.0)
    low.decide(1, 1, 0.9, 1.0)
    assert low.decide(2, 1, 0.95, 1.0) is not None         # minimizing: the large value stops


def test_asha_with_syne_tunes_rank_stops_fewer_runs_where_a_rung_has_few_values():
    """``cutoff: rank`` (Syne Tune's ASHA): a run goes on unless more than 1/eta of the rung's
    values, its own included, are strictly better. With 0.1 and 0.5 at a rung a new 0.3 goes on
    (one of three is better), where Ray Tune's quantile (0.37) stops it; with many values the
    two agree that a run in the bottom stops and a run in the top goes on; min mode mirrors it."""
    for cutoff, stopped in (("quantile", True), ("rank", False)):
        rule = ASHA(max_t=27, grace=1, eta=3, cutoff=cutoff)
        rule.decide(0, 1, 0.1, 1.0)
        rule.decide(1, 1, 0.5, 1.0)
        assert (rule.decide(2, 1, 0.3, 1.0) is not None) is stopped
        for run, v in enumerate(np.linspace(0.0, 1.0, 30), start=3):
            rule.decide(run, 1, float(v), 1.0)
        assert rule.decide(40, 1, 0.2, 1.0) is not None and rule.decide(41, 1, 0.95, 1.0) is None
    low = ASHA(max_t=27, grace=1, eta=3, mode="min", cutoff="rank")
    low.decide(0, 1, 0.9, 1.0)
    low.decide(1, 1, 0.5, 1.0)
    assert low.decide(2, 1, 0.7, 1.0) is None and low.decide(3, 1, 0.95, 1.0) is not None
    learned = asha_rule(27, "auto", 3, cutoff="rank")
    assert learned.cutoff == "rank"
    with pytest.raises(ValueError, match="cutoff: expected one of"):
        ASHA(max_t=27, cutoff="median")


def _report(rule, run, curve, upto=None):
    """Every step of ``curve`` ({step: value}) up to ``upto``; the first reason to stop."""
    for step, value in sorted(curve.items()):
        if upto is not None and step > upto:
            return None
        reason = rule.decide(run, step, value, float(step))
        if reason is not None:
            return reason
    return None


def test_asha_with_grace_auto_learns_its_first_rung_where_the_winners_would_have_been_kept():
    """grace: auto.  Eight runs whose ranks at epochs 1 and 3 are the reverse of their final
    ranks (slow starters end best) and agree from epoch 9: nothing is stopped before the eighth
    finishes, then the first rung is 9 and ASHA applies from there, its rung holding every
    value reported at 9 so far; a run that is low at epochs 1 and 3 is not stopped there."""
    rule = asha_rule(27, "auto", 3)
    finals = np.linspace(0.5, 0.9, 8)
    for run, final in enumerate(finals):
        curve = {1: 1.0 - final, 3: 1.1 - final, 9: final - 0.1, 27: final}
        assert _report(rule, run, curve) is None
        assert rule.asha is None
        rule.on_end(run, Status.FINISHED, final)
    assert rule.grace == 9 and [m for m, _ in rule.asha.rungs] == [9]
    assert sorted(rule.asha.rungs[0][1]) == list(range(8))
    assert _report(rule, 8, {1: 0.01, 3: 0.02}) is None          # the slow start goes on
    reason = _report(rule, 8, {9: 0.45})                          # below the cutoff at 9
    assert reason is not None and "rung 9" in reason and "first rung learned: 9" in reason
    assert _report(rule, 9, {9: 0.85}) is None
    loss = asha_rule(27, "auto", 3, mode="min")                   # the same, minimizing -value
    for run, final in enumerate(finals):
        _report(loss, run, {1: final - 1.0, 3: final - 1.1, 9: 0.1 - final, 27: -final})
        loss.on_end(run, Status.FINISHED, -final)
    assert loss.grace == 9 and _report(loss, 8, {9: -0.45}) is not None


def test_a_study_says_once_which_first_rung_grace_auto_learned():
    import io

    from tuner.study.callbacks import ShowProgress
    from tuner.study.progress import Progress

    class Quiet(Progress):            # no progress line due: only the messages print
        def due(self, news=False):
            return False

    out = io.StringIO()
    rule = asha_rule(27, "auto", 3)
    show = ShowProgress(None, Quiet(stream=out), [rule], "epoch")
    show.on_step(None)
    assert out.getvalue() == ""                                   # nothing learned yet
    for run, final in enumerate(np.linspace(0.5, 0.9, 8)):
        _report(rule, run, {1: 1.0 - final, 3: 1.1 - final, 9: final - 0.1, 27: final})
        rule.on_end(run, Status.FINISHED, final)
    show.on_step(None)
    show.on_step(None)
    assert out.getvalue() == ("ASHA (grace: auto): first rung at epoch 9, the lowest where the "
                              "best of the first 8 finished runs were in the top 1/3\n")
    never = asha_rule(27, "auto", 3, mode="min")
    for run in range(8):
        never.on_end(run, Status.FINISHED, 0.1)
    assert never.learned_text("epoch").endswith("so ASHA stops no run")


def test_asha_with_grace_auto_stops_nothing_where_no_rung_keeps_the_winners():
    rule = asha_rule(27, "auto", 3)
    finals = np.linspace(0.5, 0.9, 8)
    for run, final in enumerate(finals):       # reversed ranks at every rung below 27
        _report(rule, run, {1: 1.0 - final, 3: 1.1 - final, 9: 1.2 - final, 27: final})
        rule.on_end(run, Status.FINISHED, final)
    assert rule.grace == 27 and rule.asha is None
    assert _report(rule, 8, {1: 0.0, 3: 0.0, 9: 0.0}) is None
    with pytest.raises(ValueError, match="grace: expected a number > 0 or 'auto'"):
        asha_rule(27, "fast", 3)


def test_on_crossing_curves_grace_auto_keeps_the_slow_starters_that_asha_stops():
    """Simulated study on crossing curves: ASHA from epoch 1 stops the slow starters that end
    best; with grace auto the first rung is learned above epoch 3 and the study ends higher."""
    opt1, _ = curves_study([ASHA(max_t=27, grace=1, eta=3)], n=60)
    auto = asha_rule(27, "auto", 3)
    opt2, _ = curves_study([auto], n=60)
    assert auto.grace is not None and auto.grace > 3
    assert opt2.best().value > opt1.best().value + 0.02


def test_pace_budget_projects_the_full_run_from_its_pace_after_its_start_up():
    """The pace is taken from the first report on: a slow first step (start-up) is counted once;
    a run is judged from its third report on, once it has run 10 % of the limit."""
    rule = PaceBudget(limit=10.0, fidelity=FIDELITY)
    assert rule.decide(0, 1, 0.5, 2.0) is None             # a first report: no pace yet
    assert rule.decide(0, 5, 0.5, 3.0) is None
    assert rule.decide(0, 9, 0.5, 4.0) is None             # 2 + 0.25 s/step x 26: 8.5 s
    rule.decide(1, 1, 0.5, 1.0)
    assert rule.decide(1, 2, 0.5, 1.4) is None             # one gap: no spread yet
    reason = rule.decide(1, 3, 0.5, 1.8)                   # 1.8 + 0.4 x 24 = 11.4 s > 10
    assert reason is not None and "11.4 s" in reason and "budget of 10 s" in reason
    rule.decide(2, 1, 0.5, 1.0)
    rule.decide(2, 14, 0.5, 15.0)
    assert rule.decide(2, 27, 0.5, 30.0) is None           # at full length: the budget stop's job
    rule.decide(3, 1, 0.5, 0.1)
    rule.decide(3, 2, 0.5, 0.5)
    assert rule.decide(3, 3, 0.5, 0.9) is None             # under 10 % of the limit: too early
    assert rule.decide(3, 4, 0.5, 1.3) is not None         # 1.3 + 0.4 x 23 s
    margin = PaceBudget(limit=10.0, fidelity=FIDELITY, margin=0.2)
    for step, t in ((1, 1.0), (2, 1.4), (3, 1.8)):
        assert margin.decide(1, step, 0.5, t) is None      # 11.4 s is within 12 s


def test_pace_budget_waits_until_the_jitter_of_the_step_times_cannot_explain_the_excess():
    """Steps alternating 0.2 s and 0.6 s (0.4 s on average: 11.4 s projected) are not stopped
    while the spread of the mean pace covers the budget; the same mean with even steps is."""
    rules = {"jittery": PaceBudget(10.0, FIDELITY), "even": PaceBudget(10.0, FIDELITY),
             "jittery, z = 0": PaceBudget(10.0, FIDELITY, z=0.0)}
    times = {name: 1.0 for name in rules}
    stopped_at = {}
    for step in range(1, 27):
        for name, rule in rules.items():
            if step > 1:
                times[name] += 0.4 if name == "even" else 0.2 if step % 2 else 0.6
            if name not in stopped_at and rule.decide(0, step, 0.5, times[name]):
                stopped_at[name] = step
    assert stopped_at["even"] == stopped_at["jittery, z = 0"] == 3
    assert stopped_at["jittery"] > 6                    # later, once the mean pace is sure


def test_a_stopped_run_is_censored_at_the_value_it_reached():
    """Optimizer.report: the censored target of a running or stopped trial is its last reported
    value (normalized), not the minimum; the paper's eq. 1 (censor_at_partial off) keeps 0."""
    for settings, expect in ((Settings(), 0.6), (Settings.from_dict(PAPER_EXACT), 0.0)):
        opt = Optimizer({"x": {"type": "float", "low": 0.0, "high": 1.0}}, settings,
                        objective_bounds=(0.0, 1.0), clock=lambda: 0.0)
        a, b = opt.suggest().trial_id, opt.suggest().trial_id
        opt.report(a, 0.4, 0.25)
        opt.report(a, 0.6, 0.5)
        assert opt.censored_targets()[a] == pytest.approx(expect)
        opt.fail(a, "stopped early", status=Status.STOPPED)
        assert opt.trials[a].status == Status.STOPPED and opt.trials[a].progress == 0.5
        assert opt.censored_targets()[a] == pytest.approx(expect)
        assert opt.censored_targets()[b] == 0.0                 # no report: the minimum
        opt.report(b, 0.5, 0.5)
        with pytest.raises(ValueError, match="progress"):
            opt.report(b, 0.5, 0.25)                     # progress only grows
        saved = Optimizer.from_state(opt.state_dict(), clock=lambda: 0.0)
        assert saved.trials[a].partial == pytest.approx(0.6) and saved.trials[a].progress == 0.5


def curve_of(level, k):
    return level * (1 - 0.7 ** k)


def stopped_after_five_curves(stopped_at=(1, 2)):
    """An optimizer with a model of curves, five finished runs (x = their level) and one run at
    x = 0.85 stopped after the steps ``stopped_at``: (optimizer, the stopped run's id)."""
    from tuner.core.curves import CurveModel

    space = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
    opt = Optimizer(space, Settings(), objective_bounds=(0.0, 1.0), clock=lambda: 0.0)
    opt.use_curves(CurveModel(1, 16, seed=0))
    for level in (0.5, 0.6, 0.7, 0.8, 0.9):
        t = opt.suggest(config={"x": level}).trial_id
        for k in (1, 2, 4, 8):
            opt.report(t, curve_of(level, k), k / 16)
        opt.tell(t, curve_of(level, 16))
    stopped = opt.suggest(config={"x": 0.85}).trial_id
    for k in stopped_at:
        opt.report(stopped, curve_of(0.85, k), k / 16)
    opt.fail(stopped, "stopped early", status=Status.STOPPED)
    return opt, stopped


def test_with_a_model_of_curves_a_stopped_run_enters_the_gp_at_its_predicted_final_value():
    """Optimizer.use_curves: the reports and results feed the model, and a stopped run that was
    on the course of the best finished curves is censored near where that course ends, not at
    the value it had when it was stopped."""
    opt, stopped = stopped_after_five_curves()
    curve = curve_of
    target = opt.censored_targets()[stopped]
    assert target > curve(0.85, 2) + 0.2                       # not its value at step 2 (0.43)
    assert target == pytest.approx(curve(0.85, 16), abs=0.05)   # near where its curve ends
    assert opt.curves.done[0] == pytest.approx(curve(0.5, 16))


def test_a_predicted_final_value_weighs_as_much_as_the_model_of_curves_is_sure_of_it():
    """The stopped run's predicted final value enters the GP with the prediction's variance
    added to its noise: the surer the model, the lower the GP's spread at that configuration,
    down to that of a result the model is certain of (a spread of 0)."""
    opt, stopped = stopped_after_five_curves()
    mean, sd = opt.curves.predicted_finals([stopped])[0]
    assert 0 < sd < 0.5
    x = opt.trials[stopped].x[None, :]

    def spread(scale):
        opt.chooser.finals = lambda trials: [(mean, sd * scale) for _ in trials]
        post = opt.objective_posterior()
        return float(post.predict(x)[1][0]), float(post.predict(x)[0][0])

    (unsure, m_unsure), (model, m_model), (sure, m_sure) = spread(10.0), spread(1.0), spread(0.0)
    assert unsure > model > sure
    # the GP's mean there is pulled towards the prediction the more, the surer it is
    assert abs(m_sure - mean) < abs(m_model - mean) < abs(m_unsure - mean)


def curves_study(stopping, n=40, workers=4, seed=0, constraints=()):
    opt = Optimizer(CURVES.space, Settings(), objective_bounds=(0.0, 1.0), seed=seed,
                    constraints=list(constraints))
    res = simulate(opt, CURVES, CURVES.run_time(), n, workers=workers, seed=seed,
                   fidelity=FIDELITY, stopping=stopping)
    return opt, res


def test_asha_stops_runs_mid_curve_and_the_study_still_ends_with_a_best():
    opt, res = curves_study([ASHA(max_t=27, grace=1, eta=3)])
    stopped = [tr for tr in opt.trials if tr.status == Status.STOPPED]
    assert len(stopped) >= 10 and len(opt.trials) == 40
    for tr in stopped:
        assert 0 < tr.progress < 1 and tr.reason.startswith("ASHA")
        assert tr.metrics["epoch"] == pytest.approx(tr.progress * 27)   # the last step it reached
        assert tr.metrics["objective"] == pytest.approx(tr.partial)
        assert tr.metrics["runtime"] < CURVES.mean_run_time(tr.config) * 2
    best = opt.best()
    assert best is not None and best.status == Status.FINISHED
    # the stopped runs freed their workers: the same 40 trials took less simulated time
    _, plain = curves_study([])
    assert res.finish.max() < plain.finish.max()


def test_a_run_over_the_budget_by_its_pace_is_stopped_early_and_counts_as_a_violation():
    budget = 3.0     # width above ~100 is over it (mean run time 1 + 0.02 width)
    cons = [{"metric": "runtime", "limit": budget, "type": "budget", "runtime": True}]
    opt, res = curves_study([PaceBudget(budget, FIDELITY)], constraints=cons)
    paced = [tr for tr in opt.trials if tr.status == Status.STOPPED]
    assert paced, "some configurations are over the budget"
    for tr in paced:
        assert tr.metrics["runtime"] <= budget + 1e-9            # stopped before the limit
        g = opt.constraints[0].observed(tr)                      # the projected full run
        assert g == pytest.approx(np.log(tr.projected_runtime / budget))   # budget_scale: log
        assert g > 0                                             # a known violation
        # even steps: the projection is the run's full duration
        full = res.finish[res.configs.index(tr.config)] - res.start[res.configs.index(tr.config)]
        assert tr.projected_runtime == pytest.approx(tr.metrics["runtime"] / tr.progress)
        assert full == pytest.approx(tr.metrics["runtime"])      # the worker freed when stopped


def test_reports_reach_the_optimizer_only_with_a_fidelity():
    opt = Optimizer(CURVES.space, Settings(), objective_bounds=(0.0, 1.0), seed=1)
    simulate(opt, CURVES, Fixed(1.0), 6, workers=2, seed=1)           # no fidelity: final only
    assert all(tr.progress is None for tr in opt.trials)
    assert all(tr.status == Status.FINISHED for tr in opt.trials)
    assert np.isfinite([tr.value for tr in opt.trials]).all() and not math.isnan(opt.best().value)


def test_the_curve_rule_learns_the_gain_still_to_come_and_stops_only_hopeless_runs():
    """CurveRule: no decision before min_finished runs finished; a run on the course of a low
    finished curve is stopped, one on the course of the best run is not."""
    from tuner.core.curves import CurveModel
    from tuner.loop.stopping import CurveRule

    xs = {0: np.array([0.1, 0.5]), 1: np.array([0.3, 0.5]), 2: np.array([0.5, 0.5]),
          3: np.array([0.7, 0.5]), 4: np.array([0.5, 0.5]), 5: np.array([0.15, 0.5])}
    rule = CurveRule(CurveModel(2, 27, 0), xs.__getitem__, FIDELITY)
    level = lambda x: 0.9 - abs(x[0] - 0.5)              # noqa: E731
    curve = lambda x, k: level(x) * (1 - 0.7 ** k)       # noqa: E731
    for t in range(3):
        for k in (1, 2, 4, 8, 16):
            assert rule.decide(t, k, curve(xs[t], k), k) is None      # too few finished yet
        rule.on_end(t, Status.FINISHED, curve(xs[t], 27))
    for k in (1, 2, 4, 8, 16):        # trial 3 is on a low curve too, but goes on to the end
        rule.model.observe(3, xs[3], k, curve(xs[3], k))
    rule.on_end(3, Status.FINISHED, curve(xs[3], 27))
    assert rule.decide(4, 2, curve(xs[4], 2), 2) is None               # on course
    assert rule.decide(4, 4, curve(xs[4], 4), 4) is None
    reason = None
    for k in (1, 2, 4, 8):
        reason = reason or rule.decide(5, k, curve(xs[5], k), k)        # on a low curve
    assert reason is not None and "unlikely to beat the best run" in reason


def test_a_run_stopped_after_one_report_does_not_teach_the_budget_its_start_up_as_its_pace():
    """ASHA stops a run at its first report: that report's time is mostly start-up, and
    projecting it over every epoch would read as a violation far over the budget.  Such a run
    gives the run-time constraint nothing; one stopped later gives its projected run time."""
    cons = [{"metric": "runtime", "limit": 10.0, "type": "budget", "runtime": True}]
    opt = Optimizer({"x": {"type": "float", "low": 0.0, "high": 1.0}}, Settings(constraints=cons),
                    objective_bounds=(0.0, 1.0), clock=lambda: 0.0)
    early, later = opt.suggest().trial_id, opt.suggest().trial_id
    opt.report(early, 0.3, 1 / 27, elapsed=1.5)                 # start-up 1.4 s + one 0.1 s epoch
    opt.fail(early, "ASHA", metrics={"runtime": 1.5}, status=Status.STOPPED)
    opt.report(later, 0.3, 1 / 27, elapsed=1.5)
    opt.report(later, 0.5, 3 / 27, elapsed=1.7)
    opt.fail(later, "ASHA", metrics={"runtime": 1.7}, status=Status.STOPPED)
    c = opt.constraints[0]
    assert c.observed(opt.trials[early]) is None                # not 1.5 x 27 = 40 s
    assert c.observed(opt.trials[later]) == pytest.approx(np.log((1.7 + 0.1 * 24) / 10.0))
    assert opt.suggest().trial_id == 2                          # the constraint model takes both


def test_a_resumed_study_gives_asha_and_the_curve_rule_what_the_ended_trials_reported():
    """--resume builds the stopping rules afresh; ``replay_stopping`` tells them what the
    trials that had ended reported (curves.csv) and how they ended, in the order they ended.
    ASHA's rungs then hold the same values as in the run that was cut off, the curve model
    knows the finished runs, and a trial still running in the saved state (it starts over) is
    left out."""
    from tuner.core.curves import CurveModel
    from tuner.loop.stopping import ASHA, CurveRule
    from tuner.study.budget import replay_stopping

    opt = Optimizer({"x": {"type": "float", "low": 0.0, "high": 1.0}}, seed=0, clock=lambda: 0.0)
    ids = [opt.suggest().trial_id for _ in range(5)]
    curves = {t: [(k, 0.1 * t + 0.01 * k) for k in (1, 2, 3, 4)] for t in ids}
    for t in ids[:3]:
        opt.tell(t, curves[t][-1][1] + 0.1)
    opt.fail(ids[3], "ASHA", status=Status.STOPPED)
    before = ASHA(27, 1, 3)                       # the rule as the cut-off run had built it
    for t in ids[:4]:
        for step, value in curves[t]:
            before.decide(t, step, value, 0.0)

    asha = ASHA(27, 1, 3)
    curve = CurveRule(CurveModel(1, 27, 0), lambda t: opt.trials[t].x, FIDELITY)
    assert replay_stopping([asha, curve], opt, curves) == 4
    assert asha.rungs == before.rungs                         # ids[4] (still running) left out
    assert sorted(curve.model.done) == ids[:3] and curve.best == pytest.approx(0.2 + 0.04 + 0.1)
    assert replay_stopping([asha], opt, {}) == 0


def test_a_resumed_study_gives_grace_auto_its_learned_rung_and_rungs_back():
    """``replay_stopping`` rebuilds ``grace: auto`` as the cut-off run had it: the first rung
    learned from the same 8 finished runs and ASHA's rungs with the same values."""
    from tuner.study.budget import replay_stopping

    opt = Optimizer({"x": {"type": "float", "low": 0.0, "high": 1.0}}, seed=0, clock=lambda: 0.0)
    ids = [opt.suggest().trial_id for _ in range(11)]
    curves = {t: [(k, 0.05 * t + 0.01 * k) for k in range(1, 28)] for t in ids}
    before = asha_rule(27, "auto", 3)
    for t in ids[:10]:
        for step, value in curves[t]:
            before.decide(t, step, value, 0.0)
        opt.tell(t, curves[t][-1][1])
        before.on_end(t, Status.FINISHED, curves[t][-1][1])
    assert before.grace == 1
    again = asha_rule(27, "auto", 3)
    assert replay_stopping([again], opt, curves) == 10
    assert again.grace == before.grace and again.asha.rungs == before.asha.rungs


def _by_epoch(config):
    for epoch in range(1, 4):
        yield {"epoch": epoch, "score": config["x"] * epoch}


def test_a_study_takes_grace_auto_and_names_the_field_for_a_bad_grace(tmp_path):
    from tuner.study.budget import stopping_rules
    from tuner.study.schema import ConfigError
    from tuner.study.config import load_study

    def config(grace, **more):
        return load_study({"study": "s", "trainable": _by_epoch,
                           "space": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
                           "objective": {"metric": "score", "mode": "max"},
                           "fidelity": {"metric": "epoch", "max": 3}, "output": str(tmp_path),
                           "early_stopping": {"rule": "asha", "grace": grace, **more}})

    cfg = config("auto")
    rules = stopping_rules(cfg, Optimizer(cfg.space, cfg.settings))
    assert [type(r).__name__ for r in rules] == ["LearnedGraceASHA"]
    assert rules[0].cutoff == "quantile"
    ranked = config(1, cutoff="rank")
    assert [r.cutoff for r in stopping_rules(ranked, Optimizer(ranked.space, ranked.settings))] == [
        "rank"
    ]
    with pytest.raises(ConfigError, match=r"early_stopping.grace: expected a number or 'auto', "
                                          r"got 'fast'"):
        config("fast")
    with pytest.raises(ConfigError, match=r"early_stopping.cutoff.*quantile.*rank"):
        config(1, cutoff="median")
