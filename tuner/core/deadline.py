"""Runs that can finish before the study's deadline.

A study with a wall-clock limit kills the runs still going when it ends, and the worker time they
took gives it nothing; a pool of W workers ends every study with W such runs.  Near the deadline
(``Optimizer.deadline``, which the study loop sets from ``run.wall_clock_limit``), with
``Settings.finish_by_deadline``, a run is chosen only among the configurations predicted to
finish in the time left.  The product's rule, not a paper's: the papers have no deadline.

The prediction: a GP on the log run time of the finished runs (seconds from start to result on
the optimizer's clock, the newest ``MAX_POINTS``), fit by marginal likelihood with the lengthscale
prior, as ``tuner.core.curves`` fits its GP.  A candidate is late when its predicted median run
time, exp(mu(x)), exceeds the time left; if every candidate is, only those predicted within the
run-to-run noise (the fit's noise sd, on the log scale) of the fastest are left, the best chance
of a result.  The model is fit only once the time left is under ``SLACK``
times the longest run seen, where a candidate could be late; before that nothing changes.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from .kernels import Matern52
from .maximize import Mask
from .trial import Status, Trial

SLACK = 1.5          # fit once the time left is under SLACK x the longest run seen
MAX_POINTS = 256     # the newest finished runs the model learns from
MIN_RUNS = 3         # fewer finished runs: no prediction, nothing is late


class RunTimeModel:
    """The log run time of a configuration, from the finished runs (module docstring)."""

    def __init__(self, seed: int = 0):
        self.seed = seed
        self._key: tuple[int, ...] | None = None
        self._mean_fn: tuple[Callable[[np.ndarray], np.ndarray], float] | None = None

    def late(self, trials: Sequence[Trial], now: float, deadline: float, C: np.ndarray,
             inputs: Callable[[np.ndarray], np.ndarray] = lambda U: U) -> Mask | None:
        """A mask of the configurations predicted not to finish by ``deadline`` (the threshold
        set on the candidates ``C``), or None when no candidate can be late.  ``inputs`` maps
        configurations to the GP's inputs (a context appended)."""
        left = deadline - now
        done = [tr for tr in trials if tr.status == Status.FINISHED and tr.finish_time is not None]
        if left <= 0 or len(done) < MIN_RUNS:
            return None
        done = sorted(done, key=lambda tr: tr.finish_time)[-MAX_POINTS:]
        y = np.log(np.maximum([tr.finish_time - tr.start_time for tr in done], 1e-6))
        if left >= SLACK * math.exp(float(y.max())):
            return None
        mean, noise_sd = self._mean(done, y)
        limit = max(math.log(left), float(mean(inputs(C)).min()) + noise_sd)
        return lambda U: mean(inputs(U)) > limit

    def _mean(self, done: list[Trial], y: np.ndarray) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
        from .gp import GaussianProcess, HyperBounds, Hyperparameters, fit_hyperparameters

        key = tuple(tr.trial_id for tr in done)
        if key != self._key:
            X = np.vstack([tr.x for tr in done])
            ybar = float(y.mean())
            kernel = Matern52()
            start = Hyperparameters(float(max(y.var(), 1e-2)), np.full(X.shape[1], 0.5), 1e-2)
            bounds = HyperBounds(amplitude=(1e-3, 10.0), lengthscale=(0.05, 10.0), noise=(1e-4, 1.0))
            hyper = fit_hyperparameters(kernel, X, y - ybar, start,
                                        np.random.default_rng([self.seed, len(done)]), bounds,
                                        n_restarts=1, lengthscale_prior=True)
            gp = GaussianProcess(kernel, hyper)
            gp.reset(X)
            w = y - ybar

            def mean(U: np.ndarray) -> np.ndarray:
                return gp.predict(np.atleast_2d(U), w)[0] + ybar

            self._key, self._mean_fn = key, (mean, math.sqrt(hyper.noise))
        return self._mean_fn
