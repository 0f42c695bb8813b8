"""``output_warp: none-or-copula``, ``tail-or-copula`` and ``auto``: the rank warp (the copula) or
the targets under it, chosen by held-out ranks (tuner.core.warp_choice)."""

import json

import numpy as np
import pytest

from conftest import optimizer
from tuner import Optimizer
from tuner.core.gp import GaussianProcess, Hyperparameters
from tuner.core.posterior import Posterior
from tuner.core.kernels import Matern52
import tuner.core.warp_choice as warp_choice
from tuner.core.targets import RankWarp, normalized
from tuner.core.trial import Status
from tuner.core.warp_choice import WARP_CHOICE_FROM, loo_means, prefer_copula, warp_rule
from tuner.loop.simulator import SimClock

SQUARE = {"x": {"type": "float", "low": 0.0, "high": 1.0},
          "y": {"type": "float", "low": 0.0, "high": 1.0}}


def smooth(x, y):
    return np.sin(3 * x) + np.cos(2 * y)


def diverging(x, y):
    """Like training runs: scores crowd near the top, and far from the middle runs diverge."""
    return (
        0.9
        + 0.05 * np.sin(3 * x) * np.cos(2 * y)
        - (0.8 if (x - 0.5) ** 2 + (y - 0.5) ** 2 > 0.15 else 0.0)
    )


def rarely_diverging(x, y):
    """A few runs diverge (x > 0.8), below the others' lower fence."""
    return 0.9 + 0.05 * np.sin(3 * x) * np.cos(2 * y) - (0.8 if x > 0.8 else 0.0)


def auto_run(f, n=30, seed=0, rule="none-or-copula", **kw):
    opt = Optimizer(SQUARE, clock=SimClock(), seed=seed, objective_bounds=None, output_warp=rule,
                    kernel="matern52", n_initial=8, **kw, research={"noise_floor": 1e-3})
    choices = []
    for _ in range(n):
        s = opt.suggest()
        opt.tell(s.trial_id, float(f(s.config["x"], s.config["y"])))
        choices.append(opt.scale.warp_on)
    return opt, choices


def test_leave_one_out_means_are_the_gp_without_each_point():
    rng = np.random.default_rng(3)
    X, y = rng.random((25, 2)), rng.normal(size=25)
    hyper = Hyperparameters(0.7, np.array([0.3, 0.5]), 1e-2)
    fast = loo_means(Matern52(), hyper, X, y)
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        gp = GaussianProcess(Matern52(), hyper)
        gp.extend(X[keep])
        assert fast[i] == pytest.approx(Posterior(gp, y[keep], gp).predict(X[i : i + 1])[0][0],
                                        abs=1e-8)


def test_auto_is_tail_or_copula_unless_there_is_a_constraint_or_a_context():
    assert warp_rule("auto", False, False) == "tail-or-copula"
    assert warp_rule("auto", True, False) == warp_rule("auto", False, True) == "none-or-copula"
    assert warp_rule("tail", True, True) == "tail"
    budget = [{"metric": "time", "limit": 1.0, "type": "budget", "runtime": True}]
    plain = Optimizer(SQUARE, output_warp="auto")
    assert (plain.scale.rule, plain.scale.base_warp, plain.scale.warp_on) == ("tail-or-copula",
                                                                              "tail", False)
    assert Optimizer(SQUARE, output_warp="auto", constraints=budget).scale.rule == "none-or-copula"
    ctx = Optimizer(SQUARE, output_warp="auto",
                    context_space={"z": {"type": "float", "low": 0, "high": 1}})
    assert (ctx.scale.rule, ctx.scale.warp_on) == ("none-or-copula", True)


def test_none_or_copula_drops_the_warp_on_a_smooth_function_and_keeps_it_where_runs_diverge():
    """sin + cos: the gaps between results are information, and the plain GP ranks held-out
    results better (it then fits its noise under the warp's floor); a crowded top over a
    diverged region: the warped one does.  Warped until the first choice, in every run."""
    smooth_runs = [auto_run(smooth, seed=seed) for seed in range(5)]
    diverging_runs = [auto_run(diverging, seed=seed) for seed in range(5)]
    assert all(choices[0] for _, choices in smooth_runs + diverging_runs)
    plain = [opt for opt, choices in smooth_runs if not choices[-1]]
    assert len(plain) >= 4
    assert all(opt.scale.warp() is None and opt.objective.bounds.noise[0] < 1e-3 for opt in plain)
    warped = [opt for opt, choices in diverging_runs if choices[-1]]
    assert len(warped) >= 4
    assert all(
        opt.scale.warp() is not None and opt.objective.bounds.noise[0] == 1e-3 for opt in warped
    )


def test_tail_or_copula_keeps_the_tail_when_smooth_and_takes_the_copula_where_runs_diverge():
    """The tail warp (with the Optimizer's noise floor) until the first choice, in every run;
    the copula (with ``noise_floor``) where its GP ranks the held-out better half better."""
    smooth_runs = [auto_run(smooth, seed=seed, rule="tail-or-copula") for seed in range(5)]
    diverging_runs = [auto_run(diverging, seed=seed, rule="tail-or-copula") for seed in range(5)]
    assert not any(choices[0] for _, choices in smooth_runs + diverging_runs)
    assert not any(any(choices) for _, choices in smooth_runs)
    assert all(
        opt.scale.warp() is not None and opt.objective.bounds.noise[0] < 1e-3
        for opt, _ in smooth_runs
    )
    # at the first choice
    assert sum(choices[WARP_CHOICE_FROM] for _, choices in diverging_runs) >= 4
    on = [opt for opt, choices in diverging_runs if choices[-1]]
    assert on and all(opt.objective.bounds.noise[0] == 1e-3 for opt in on)


@pytest.mark.parametrize("rule, scores, copula", [
    ("tail-or-copula", (0.5, 0.65), True), ("tail-or-copula", (0.5, 0.55), False),
    ("tail-or-copula", (0.9, 0.3), False),
    ("none-or-copula", (0.85, 0.7), False), ("none-or-copula", (0.75, 0.2), True),
    ("none-or-copula", (0.85, 0.8), True)])
def test_the_two_rules_weigh_the_held_out_ranks_differently(monkeypatch, rule, scores, copula):
    """(base's rho, copula's rho): tail-or-copula takes the copula only when it ranks better by
    more than the margin; none-or-copula drops it only for a plain GP at rho >= 0.8 that ranks
    better by more than the margin."""
    given = iter(scores)
    monkeypatch.setattr(warp_choice, "loo_rank_score", lambda **kw: next(given))
    assert (
        prefer_copula(rule, None, None, None, None, None, None, (None, None), 0, False, None, False,
                      margin=0.1)
        is copula
    )


def test_tied_top_scores_choose_without_a_warning():
    """A plateau of equal best scores (a table's accuracy, a capped metric) leaves the better
    half's ranks undefined: the choice reads that as no ranking, and the user sees no scipy
    warning about it."""
    import warnings

    from scipy.stats import ConstantInputWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantInputWarning)
        for rule in ("tail-or-copula", "none-or-copula"):
            _, choices = auto_run(lambda x, y: 0.9 if x < 0.8 else 0.1, n=WARP_CHOICE_FROM + 6,
                                  rule=rule)
            assert len(choices) == WARP_CHOICE_FROM + 6


def test_tail_or_copula_compares_the_tails_gp_in_its_box_with_the_copulas_in_its_own(monkeypatch):
    """The base targets are the tail warp's (not the plain scores), fit with the Optimizer's
    noise floor; the copula's with ``noise_floor``."""
    opt = Optimizer(SQUARE, clock=SimClock(), seed=0, objective_bounds=None,
                    output_warp="tail-or-copula", kernel="matern52", n_initial=8,
                    research={"noise_floor": 1e-3})
    seen, score = [], warp_choice.loo_rank_score

    def spy(**kw):
        finished = [tr for tr in opt.trials if tr.status == Status.FINISHED]
        u = normalized(finished, opt.settings.mode, *opt.scale.reward_range())
        seen.append((np.sort(kw["y"]), kw["bounds"].noise[0], np.sort(RankWarp.fit_tail(u)(u)),
                     np.sort(u)))
        return score(**kw)

    monkeypatch.setattr(warp_choice, "loo_rank_score", spy)
    for _ in range(WARP_CHOICE_FROM + 1):
        s = opt.suggest()
        opt.tell(s.trial_id, float(rarely_diverging(s.config["x"], s.config["y"])))
    (base, base_floor, tail, plain), (cop, cop_floor, _, u) = seen
    assert np.allclose(base, tail) and not np.allclose(base, plain) and not np.allclose(base, cop)
    assert np.allclose(cop, RankWarp.fit(u)(u))
    assert (base_floor, cop_floor) == (1e-6, 1e-3)


def test_a_study_saved_before_tail_or_copula_resumes_with_the_rule_it_ran(tmp_path):
    """A state saved with ``auto`` before it meant tail-or-copula (no rule in it) resumes as
    ``none-or-copula``; an old ``tail`` state's ``on`` (then: a warp applies) is not read as
    the copula."""
    for rule, saved_as, on in (("none-or-copula", "auto", None), ("tail", "tail", True)):
        opt, _ = auto_run(smooth, n=24, rule=rule)
        state = opt.state_dict()
        state["settings"]["output_warp"] = saved_as
        del state["warp"]["rule"]
        if on is not None:
            state["warp"]["on"] = on
        back = Optimizer.from_state(json.loads(json.dumps(state)), clock=opt.clock)
        assert (back.settings.output_warp, back.scale.warp_on) == (rule, opt.scale.warp_on)
        assert back.suggest().config == opt.suggest().config


@pytest.mark.parametrize("rule", ["none-or-copula", "tail-or-copula"])
def test_the_choice_is_made_again_as_results_grow_and_survives_a_save(tmp_path, rule):
    opt, _ = auto_run(smooth if rule == "none-or-copula" else diverging, n=34, rule=rule)
    assert opt.scale.chosen_at == 32          # first at 20 results, then at 25, 32 (x 1.25)
    opt.save(tmp_path / "s.json")
    back = Optimizer.load(tmp_path / "s.json", clock=opt.clock)
    assert (back.scale.warp_on, back.scale.chosen_at) == (opt.scale.warp_on, opt.scale.chosen_at)
    assert back.objective.bounds == opt.objective.bounds
    assert back.suggest().config == opt.suggest().config


@pytest.mark.parametrize("rule, f, fixed", [
    ("none-or-copula", diverging, {"output_warp": "copula", "noise_floor": 1e-3}),
    ("tail-or-copula", smooth, {"output_warp": "tail", "noise_floor": 1e-6})])
def test_while_a_choice_is_kept_the_suggestions_are_those_of_its_fixed_warp(rule, f, fixed):
    """The choice draws from a random stream of its own and changes nothing it keeps: the
    copula kept is ``output_warp: copula``; the tail kept is ``output_warp: tail`` with the
    Optimizer's noise floor."""
    chooser, choices = auto_run(f, n=30, rule=rule)
    assert len(set(choices)) == 1
    same = optimizer(SQUARE, clock=SimClock(), seed=0, objective_bounds=None, kernel="matern52",
                     n_initial=8, **fixed)
    for tr in chooser.trials:
        s = same.suggest()
        assert s.config == tr.config
        same.tell(s.trial_id, float(f(s.config["x"], s.config["y"])))


def test_with_the_warp_or_without_it_the_choice_is_not_made():
    """Past the 20 results at which the choosing rules choose."""
    for warp in ("none", "copula", "tail"):
        opt = Optimizer(SQUARE, clock=SimClock(), seed=0, output_warp=warp, n_initial=4)
        for _ in range(24):
            s = opt.suggest()
            opt.tell(s.trial_id, float(smooth(s.config["x"], s.config["y"])))
        assert opt.scale.chosen_at == 0 and opt.scale.warp_on == (warp == "copula")
