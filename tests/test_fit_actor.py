"""The deferred fits of a real Ray study run in an actor of their own (``RayFitPool``), beside
the trials, and the suggestions are those of the fits run in the driver."""

import io
import os

import pytest

from tuner.app.wiring import study_runner
from tuner.integrations.ray.fits import RayFitPool
from tuner.study.config import load_study
from tuner.study.progress import Progress

from test_deferred_fit import make, run
from stores import sqlite_store

pytestmark = pytest.mark.slow      # real Ray


def test_fits_in_the_actor_give_the_suggestions_of_fits_in_the_driver(ray_session):
    alone, _ = run(make(), 40)
    pool = RayFitPool()
    try:
        assert pool.submit(os.getpid).result(timeout=60) != os.getpid()   # another process
        opt = make()
        opt.run_fits_in(pool)
        pooled, _ = run(opt, 40)
        assert opt.objective.deferred.future is not None
    finally:
        pool.close()
    assert pooled == alone


def test_a_study_past_fit_max_points_runs_its_fits_in_the_actor(ray_session, tmp_path):
    cfg = load_study({"study": "fits", "trainable": "synthetic",
                      "trainable_options": {"time_scale": 0.02, "cv": 0.5},
                      "optimizer": {"n_candidates": 256, "refit_every": 3,
                                    "research": {"n_local": 32, "n_starts": 1, "fit_max_points": 6,
                                                 "refit_apply": "next"}},
                      "run": {"trials": 24, "max_concurrent": 2, "seed": 0},
                      "mlflow": {"tracking_uri": sqlite_store(tmp_path)},
                      "output": str(tmp_path / "runs")})
    runner = study_runner(cfg, progress=Progress(stream=io.StringIO()))
    assert runner.executor.fits_due            # its actor starts with Ray
    result = runner.run()
    opt = result.optimizer
    assert result.status == "FINISHED" and opt.objective.fit_n > 6
    assert runner.executor.fit_pool().submitted > 0
    assert runner.executor.fit_pool()._actor is None      # ended with the study
    # the optimizer outlives the study's Ray: it lets go of the pool, and a later fit runs here
    assert opt.view.fit_pool is None
    for _ in range(6):
        s = opt.suggest()
        opt.tell(s.trial_id, 0.5)
