"""A model of learning curves, for deciding whether a running trial can still beat the best
finished one: a GP that predicts the *gain still to come* of a run from where it is.

Every finished run gives, for each of its kept steps k (1, 2, 4, 8, ...), one example: the
inputs (x, s_k, y_k) -- its configuration in the unit cube, its progress on a log scale
s = 1 + ln(step) / ln(max) (0 after the first step, 1 at full length), and the value it had
then -- and the target y_final - y_k.  A running run at step k is predicted to end at

    y_k + mu(x, s_k, y_k),   with standard deviation sigma(x, s_k, y_k),

from a GP with a squared-exponential kernel, one lengthscale per input, fit by marginal
likelihood with a lengthscale prior (``marginal_likelihood.fit_hyperparameters``) each time a run
finishes. Conditioning on y_k is what lets it tell a slow starter that is on course (a learning rate
that starts low and ends high, as finished runs showed) from one that is not; learning the gain from
the runs of this study, not from a parametric curve family, is the design choice (freeze-thaw and
DyHPO model the curve itself with a special kernel).  Values are maximized (pass -loss).
"""

from __future__ import annotations

import math

import numpy as np

from .kernels import SquaredExponential


# gains are differences of values in [0, 1]-like ranges; the fit is a MAP fit with the
# lengthscale prior of Optuna's GPSampler (few examples early on must not overfit)
BOUNDS = {"amplitude": (1e-4, 1.0), "lengthscale": (0.05, 10.0), "noise": (1e-6, 0.1)}


class CurveModel:
    def __init__(self, dim: int, max_step: float, seed: int = 0):
        from .gp import Hyperparameters   # scipy: loaded where a study runs, not for --help

        self.dim, self.max_step = dim, float(max_step)
        self.rng = np.random.default_rng(seed)
        self.kernel = SquaredExponential()
        self.hyper = Hyperparameters(0.1, np.full(dim + 2, 0.5), 1e-3)
        self.points: dict[int, dict[float, float]] = {}   # trial -> {step: value}, kept steps
        self.x: dict[int, np.ndarray] = {}
        self.done: dict[int, float] = {}                  # finished trial -> final value
        self._cache: tuple | None = None                  # (gp, targets, mean) for the data

    def s(self, step: float) -> float:
        """Progress on the model's scale: 0 after one step, 1 at full length."""
        if self.max_step <= 1:
            return 1.0
        return float(np.clip(1.0 + math.log(max(step, 1.0)) / math.log(self.max_step), 0.0, 1.0))

    def observe(self, trial_id: int, x: np.ndarray, step: float, value: float) -> None:
        """A value ``trial_id`` (at ``x``) reported at ``step``, as a maximization; steps off
        the grid 1, 2, 4, ... are not kept."""
        self.x[trial_id] = np.asarray(x, dtype=float)
        if _on_grid(step) and step < self.max_step:
            self.points.setdefault(trial_id, {})[float(step)] = float(value)

    def finish(self, trial_id: int, x: np.ndarray, value: float) -> None:
        """A run's value at full length: its kept steps become examples of the gain to come."""
        self.x[trial_id] = np.asarray(x, dtype=float)
        self.done[trial_id] = float(value)
        self._cache = None

    def _features(self, x: np.ndarray, step: float, value: float) -> np.ndarray:
        return np.r_[x, self.s(step), value]

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        rows = [(self._features(self.x[t], k, v), final - v) for t, final in self.done.items()
                for k, v in self.points.get(t, {}).items()]
        X = np.array([r for r, _ in rows]).reshape(len(rows), self.dim + 2)
        return X, np.array([g for _, g in rows], dtype=float)

    def final(self, x: np.ndarray, step: float, value: float) -> tuple[float, float]:
        """Mean and standard deviation of the value at full length of a run at ``x`` that
        reached ``value`` at ``step``."""
        from .gp import GaussianProcess, HyperBounds
        from .marginal_likelihood import fit_hyperparameters
        from .posterior import Posterior

        if self._cache is None:
            X, g = self.data()
            if len(g) > 3:
                self.hyper = fit_hyperparameters(self.kernel, X, g - g.mean(), self.hyper,
                                                 self.rng, HyperBounds(**BOUNDS), n_restarts=1,
                                                 lengthscale_prior=True)
            gp = GaussianProcess(self.kernel, self.hyper)
            gp.reset(X)
            self._cache = (gp, g - g.mean(), float(g.mean()) if len(g) else 0.0)
        gp, g, mean = self._cache
        m, var = Posterior(gp, g, gp).predict(
            self._features(np.asarray(x, dtype=float), step, value)[None, :])
        return float(value + m[0] + mean), float(math.sqrt(max(var[0], 0.0)))


def _on_grid(step: float) -> bool:
    """Steps 1, 2, 4, 8, ...: the points a curve keeps."""
    k = int(round(step))
    return k >= 1 and abs(step - k) < 1e-9 and (k & (k - 1)) == 0
