"""``output_warp: auto``: the rank warp or none, chosen by held-out ranks (tuner.core.warp_choice)."""

import numpy as np
import pytest

from tuner import Optimizer
from tuner.core.gp import GaussianProcess, Hyperparameters, Posterior
from tuner.core.kernels import Matern52
from tuner.core.warp_choice import loo_means
from tuner.loop.simulator import SimClock

SQUARE = {"x": {"type": "float", "low": 0.0, "high": 1.0}, "y": {"type": "float", "low": 0.0, "high": 1.0}}


def smooth(x, y):
    return np.sin(3 * x) + np.cos(2 * y)


def diverging(x, y):
    """Like training runs: scores crowd near the top, and far from the middle runs diverge."""
    return 0.9 + 0.05 * np.sin(3 * x) * np.cos(2 * y) - (0.8 if (x - 0.5) ** 2 + (y - 0.5) ** 2 > 0.15 else 0.0)


def auto_run(f, n=30, seed=0, **kw):
    opt = Optimizer(SQUARE, clock=SimClock(), seed=seed, objective_bounds=None, output_warp="auto",
                    kernel="matern52", noise_floor=1e-3, n_initial=8, **kw)
    choices = []
    for _ in range(n):
        s = opt.suggest()
        opt.tell(s.trial_id, float(f(s.config["x"], s.config["y"])))
        choices.append(opt.warp_on)
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
        assert fast[i] == pytest.approx(Posterior(gp, y[keep], gp).predict(X[i:i + 1])[0][0], abs=1e-8)


def test_auto_drops_the_warp_on_a_smooth_function_and_keeps_it_where_runs_diverge():
    """sin + cos: the gaps between results are information, and the plain GP ranks held-out
    results better (it then fits its noise under the warp's floor); a crowded top over a
    diverged region: the warped one does.  Warped until the first choice, in every run."""
    smooth_runs = [auto_run(smooth, seed=seed) for seed in range(5)]
    diverging_runs = [auto_run(diverging, seed=seed) for seed in range(5)]
    assert all(choices[0] for _, choices in smooth_runs + diverging_runs)
    plain = [opt for opt, choices in smooth_runs if not choices[-1]]
    assert len(plain) >= 4
    assert all(opt._warp() is None and opt.objective.bounds.noise[0] < 1e-3 for opt in plain)
    warped = [opt for opt, choices in diverging_runs if choices[-1]]
    assert len(warped) >= 4
    assert all(opt._warp() is not None and opt.objective.bounds.noise[0] == 1e-3 for opt in warped)


def test_the_choice_is_made_again_as_results_grow_and_survives_a_save(tmp_path):
    opt, _ = auto_run(smooth, n=34)
    assert opt._warp_chosen_at == 32          # first at 20 results, then at 25, 32 (x 1.25)
    opt.save(tmp_path / "s.json")
    back = Optimizer.load(tmp_path / "s.json", clock=opt.clock)
    assert (back.warp_on, back._warp_chosen_at) == (opt.warp_on, opt._warp_chosen_at)
    assert back.objective.bounds == opt.objective.bounds
    assert back.suggest().config == opt.suggest().config


def test_while_the_warp_is_kept_the_choices_are_the_warped_optimizers():
    """The choice draws from a random stream of its own and changes nothing it keeps."""
    auto, choices = auto_run(diverging, n=30)
    assert all(choices)
    warped = Optimizer(SQUARE, clock=SimClock(), seed=0, objective_bounds=None, output_warp="copula",
                       kernel="matern52", noise_floor=1e-3, n_initial=8)
    for tr in auto.trials:
        s = warped.suggest()
        assert s.config == tr.config
        warped.tell(s.trial_id, float(diverging(s.config["x"], s.config["y"])))


def test_with_the_warp_or_without_it_the_choice_is_not_made():
    """Past the 20 results at which ``auto`` chooses."""
    for warp in ("none", "copula"):
        opt = Optimizer(SQUARE, clock=SimClock(), seed=0, output_warp=warp, n_initial=4)
        for _ in range(24):
            s = opt.suggest()
            opt.tell(s.trial_id, float(smooth(s.config["x"], s.config["y"])))
        assert opt._warp_chosen_at == 0 and opt.warp_on == (warp == "copula")
