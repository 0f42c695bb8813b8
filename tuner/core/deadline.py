"""Runs that can finish before the study's deadline.

A study with a wall-clock limit kills the runs still going when it ends, and the worker time they
took gives it nothing; a pool of W workers ends every study with W such runs.  Near the deadline
(``Optimizer.deadline``, which the study loop sets from ``run.wall_clock_limit``), with
``Settings.finish_by_deadline``, a run is chosen only among the configurations predicted to
finish in the time left.  The product's rule, not a paper's: the papers have no deadline.

The prediction: a GP on the log run time of the finished runs (seconds from start to result on
the optimizer's clock, the newest ``MAX_POINTS``), its hyperparameters a MAP fit with the
lengthscale prior (as ``tuner.core.curves`` fits its GP) on the first runs to finish, refit each
time they grow by ``GROWTH`` (so a resumed study fits the same ones).  A candidate is late when
its predicted median run time, exp(mu(x)), exceeds the time left; if every candidate is, only
those predicted within the run-to-run noise (the fit's noise sd, on the log scale) of the
fastest are left, the best chance of a result.  The model is used only once the time left is
under ``SLACK`` times the longest run seen, where a candidate could be late; before that nothing
changes.

With ``Settings.idle_near_deadline`` a worker that frees is left idle once the time left is under
the shortest run time of any finished run (``shortest_run``): whatever it started would be
killed at the deadline, so the study ends when its running trials do.  Model-free on purpose:
the fastest run seen is already an optimistic guess, and a wrong guess costs a result.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from .gp import GaussianProcess, HyperBounds, Hyperparameters
from .posterior import Posterior
from .marginal_likelihood import fit_hyperparameters
from .kernels import Matern52
from .maximize import Mask
from .trial import Status, Trial

SLACK = 1.5          # used once the time left is under SLACK x the longest run seen
MAX_POINTS = 128     # the newest finished runs the model learns from
MIN_RUNS = 3         # fewer finished runs: no prediction, nothing is late
GROWTH = 1.2         # the hyperparameters are refit each time the finished runs grow by this
BOUNDS = HyperBounds(amplitude=(1e-3, 10.0), lengthscale=(0.05, 10.0), noise=(1e-4, 1.0))


class RunTimeModel:
    """The log run time of a configuration, from the finished runs (module docstring)."""

    def __init__(self, seed: int = 0):
        self.seed = seed
        self._key: tuple[int, ...] | None = None        # the runs the cached mean is on
        self._mean: tuple[Callable[[np.ndarray], np.ndarray], float] | None = None
        self._fit: tuple[int, Hyperparameters] | None = None     # (runs fit on, the fit)

    def late(self, trials: Sequence[Trial], now: float, deadline: float, C: np.ndarray,
             inputs: Callable[[np.ndarray], np.ndarray] = lambda U: U) -> Mask | None:
        """A mask of the configurations predicted not to finish by ``deadline`` (the threshold
        set on the candidates ``C``), or None when no candidate can be late.  ``inputs`` maps
        configurations to the GP's inputs (a context appended)."""
        left = deadline - now
        finished = sorted((tr for tr in trials if tr.status == Status.FINISHED
                           and tr.finish_time is not None),
                          key=lambda tr: (tr.finish_time, tr.trial_id))
        if left <= 0 or len(finished) < MIN_RUNS:
            return None
        newest = finished[-MAX_POINTS:]
        y = log_run_times(newest)
        if left >= SLACK * math.exp(float(y.max())):
            return None
        mean, noise_sd = self._posterior_mean(finished, newest, y)
        limit = max(math.log(left), float(mean(inputs(C)).min()) + noise_sd)
        return lambda U: mean(inputs(U)) > limit

    def _posterior_mean(self, finished: list[Trial], newest: list[Trial], y: np.ndarray
                        ) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
        """The posterior mean of the log run time given the ``newest`` runs (and the fit's
        noise sd), with the hyperparameters of ``_hyper``."""
        key = tuple(tr.trial_id for tr in newest)
        if key != self._key or self._mean is None:
            hyper = self._hyper(finished)
            gp = GaussianProcess(Matern52(), hyper)
            gp.reset(np.vstack([tr.x for tr in newest]))
            ybar = float(y.mean())
            w = y - ybar

            def mean(U: np.ndarray) -> np.ndarray:
                return Posterior(gp, w, gp).predict(np.atleast_2d(U))[0] + ybar

            self._key, self._mean = key, (mean, math.sqrt(hyper.noise))
        return self._mean

    def _hyper(self, finished: list[Trial]) -> Hyperparameters:
        """The MAP fit on the first ``fit_size(len(finished))`` runs to finish (the newest
        ``MAX_POINTS`` of them)."""
        k = fit_size(len(finished))
        if self._fit is None or self._fit[0] != k:
            first = finished[:k][-MAX_POINTS:]
            X, y = np.vstack([tr.x for tr in first]), log_run_times(first)
            start = Hyperparameters(float(max(y.var(), 1e-2)), np.full(X.shape[1], 0.5), 1e-2)
            self._fit = (k, fit_hyperparameters(Matern52(), X, y - y.mean(), start,
                                                np.random.default_rng([self.seed, k]), BOUNDS,
                                                n_restarts=1, lengthscale_prior=True))
        return self._fit[1]


def shortest_run(trials: Sequence[Trial]) -> float:
    """The shortest run time of the finished trials, or 0 with fewer than ``MIN_RUNS`` of them:
    with less time left than this, no run started now is expected to finish."""
    finished = [tr for tr in trials if tr.status == Status.FINISHED and tr.finish_time is not None]
    if len(finished) < MIN_RUNS:
        return 0.0
    return math.exp(float(log_run_times(finished).min()))


def fit_size(n: int) -> int:
    """How many of n finished runs the hyperparameters are fit on: ``MIN_RUNS``, then at each
    step the larger of one more and ``GROWTH`` times as many; the last such count <= n."""
    k = MIN_RUNS
    while (nxt := max(k + 1, math.ceil(k * GROWTH))) <= n:
        k = nxt
    return k


def log_run_times(runs: Sequence[Trial]) -> np.ndarray:
    """ln(seconds from start to result) of finished runs."""
    return np.log(np.maximum([tr.finish_time - tr.start_time for tr in runs], 1e-6))
