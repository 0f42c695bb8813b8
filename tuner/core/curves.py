"""One model of partial learning curves over configuration x progress: a GP that predicts the
gain still to come of a run from where it is.  The search reads it (a running or stopped run
enters the objective's GP at its predicted final value: ``Optimizer.use_curves``) and so do the
stop decisions (``tuner.loop.stopping.CurveRule``).

Every finished run gives, for each of its kept steps k (its first report at or past 1, 2, 4,
8, ...), one example: the
inputs (x, s_k, y_k) -- its configuration in the unit cube, its progress on a log scale
s = ln(step) / ln(max) (0 after the first step, 1 at full length), and the value it had
then -- and the target y_final - y_k.  A run at step k with value y_k is predicted to end at

    y_k + mu(x, s_k, y_k),   with variance sigma^2(x, s_k, y_k) + lambda,

from a GP with a squared-exponential kernel, one lengthscale per input and noise lambda, fit by
marginal likelihood with a lengthscale prior (``marginal_likelihood.fit_hyperparameters``) as
runs finish.  Conditioning on y_k tells a slow starter on course (a learning rate that starts
low and ends high, as finished runs showed) from one that is not; the noise lambda in the
predictive variance keeps the model from being sure of a gain no run showed reliably.

Learning the gain from the runs of this study, with no parametric curve family, is the design
choice: freeze-thaw BO (Swersky et al. 2014) models the curve itself with an exponential-decay
kernel over progress, and Ax feeds progress to its GP as an input.  Examples from stopped and
running runs (the gain they showed up to their last step, with that step as a fifth input) were
tried and made the rule stop 203 of 263 runs on ``crossing`` (180 of them would have beaten the
best run): a squared-exponential kernel over the end step does not tell a gain to step 4 from
one to full length.  Values are maximized (pass -loss).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .kernels import SquaredExponential
from .trial import Status, Trial


# gains are differences of values in [0, 1]-like ranges; the fit is a MAP fit with the
# lengthscale prior of Optuna's GPSampler (few examples early on must not overfit)
BOUNDS = {"amplitude": (1e-4, 1.0), "lengthscale": (0.05, 10.0), "noise": (1e-6, 0.1)}
# at most this many examples in the GP (the newest runs' are kept: O(n^3) per rebuild)
MAX_EXAMPLES = 400


class CurveModel:
    """The model of partial curves (module docstring).

    Args:
        dim: the configuration's dimension in the unit cube.
        max_step: the progress at full length (``fidelity.max``).
        seed: the seed of the hyperparameter fit's restarts.
    """

    def __init__(self, dim: int, max_step: float, seed: int = 0):
        from .gp import Hyperparameters   # scipy: loaded where a study runs, not for --help

        self.dim, self.max_step = dim, float(max_step)
        self.rng = np.random.default_rng(seed)
        self.kernel = SquaredExponential()
        self.hyper = Hyperparameters(0.1, np.full(dim + 2, 0.5), 1e-3)
        self.points: dict[int, dict[float, float]] = {}   # trial -> {step: value}, kept steps
        self.x: dict[int, np.ndarray] = {}
        self.done: dict[int, float] = {}                  # finished trial -> final value
        self._fitted_at = 0                               # finished runs at the last fit
        self._version = 0                                 # bumped by each finished run
        self._cache: tuple | None = None        # (version, gp, residuals, trend, calibration)
        # trial -> ((version, furthest point), (mean, sd)): ``predicted_finals``
        self._predicted: dict[int, tuple[tuple, tuple[float, float]]] = {}

    def state(self) -> dict[str, Any]:
        """What the model learned, as JSON-ready data (``load_state`` restores it exactly)."""
        return {"points": {str(t): {repr(k): v for k, v in kept.items()}
                           for t, kept in self.points.items()},
                "x": {str(t): x.tolist() for t, x in self.x.items()},
                "done": {str(t): v for t, v in self.done.items()},
                "hyper": self.hyper.to_dict(), "fitted_at": self._fitted_at,
                "rng": self.rng.bit_generator.state}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore ``state()``.

        Args:
            state: what ``state`` returned.
        """
        from .gp import Hyperparameters

        self.points = {int(t): {float(k): float(v) for k, v in kept.items()}
                       for t, kept in state["points"].items()}
        self.x = {int(t): np.asarray(x, dtype=float) for t, x in state["x"].items()}
        self.done = {int(t): float(v) for t, v in state["done"].items()}
        self.hyper = Hyperparameters.from_dict(state["hyper"])
        self._fitted_at = int(state["fitted_at"])
        self.rng.bit_generator.state = state["rng"]
        self._version += 1

    def s(self, step: float) -> float:
        """Progress on the model's scale: 0 after one step, 1 at full length."""
        if self.max_step <= 1:
            return 1.0
        return float(np.clip(math.log(max(step, 1.0)) / math.log(self.max_step), 0.0, 1.0))

    def observe(self, trial_id: int, x: np.ndarray, step: float, value: float) -> None:
        """A value ``trial_id`` (at ``x``) reported at ``step``, as a maximization; a run keeps
        its first report at or past each of 1, 2, 4, 8, ... (``step_level``), below full length.

        Args:
            trial_id: the run.
            x: its configuration in the unit cube.
            step: its progress (``fidelity`` units).
            value: its value there, as a maximization.
        """
        self.x[trial_id] = np.asarray(x, dtype=float)
        if not (1 <= step < self.max_step and math.isfinite(value)):
            return
        kept = self.points.setdefault(trial_id, {})
        if float(step) in kept or all(step_level(k) != step_level(step) for k in kept):
            kept[float(step)] = float(value)

    def finish(self, trial_id: int, x: np.ndarray, value: float) -> None:
        """A run's value at full length.

        Args:
            trial_id: the run.
            x: its configuration in the unit cube.
            value: its final value, as a maximization.
        """
        self.x[trial_id] = np.asarray(x, dtype=float)
        self.done[trial_id] = float(value)
        self._version += 1

    def learn_from(self, trials: Sequence[Trial], sign: float
                   ) -> Callable[[Sequence[Trial]], list[tuple[float, float] | None]]:
        """Take in an optimizer's trials so far (each with its last report, and its result if
        it finished), and give the search's reading of the model: trials -> each one's
        predicted final value as (mean, sd) in the objective's units, or None.

        Args:
            trials: the optimizer's trials.
            sign: +1 to maximize the objective, -1 to minimize it.
        """
        for tr in trials:
            if tr.progress is not None and tr.partial is not None:
                self.observe(tr.trial_id, tr.x, tr.progress * self.max_step, sign * tr.partial)
            if tr.status == Status.FINISHED:
                self.finish(tr.trial_id, tr.x, sign * tr.value)

        def finals(of: Sequence[Trial]) -> list[tuple[float, float] | None]:
            predicted = self.predicted_finals([tr.trial_id for tr in of])
            return [None if f is None else (sign * f[0], f[1]) for f in predicted]

        return finals

    def forget(self, trial_id: int) -> None:
        """A run that starts over (a resumed study's running trial): its points are dropped.

        Args:
            trial_id: the run.
        """
        self.points.pop(trial_id, None)

    def _features(self, x: np.ndarray, step: float, value: float) -> np.ndarray:
        return np.r_[x, self.s(step), value]

    def data(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The examples: per finished run, from each kept point to its final value (the newest
        runs' ``MAX_EXAMPLES``): inputs, gains, and the run each came from."""
        rows = []
        for t in sorted(self.done, reverse=True):
            rows += [(self._features(self.x[t], k, v), self.done[t] - v, t)
                     for k, v in sorted(self.points.get(t, {}).items())]
            if len(rows) >= MAX_EXAMPLES:
                break
        rows = rows[:MAX_EXAMPLES]
        X = np.array([r for r, _, _ in rows]).reshape(len(rows), self.dim + 2)
        return (X, np.array([g for _, g, _ in rows], dtype=float),
                np.array([t for _, _, t in rows], dtype=int))

    def _gp(self) -> tuple:
        from .gp import GaussianProcess, HyperBounds
        from .marginal_likelihood import fit_hyperparameters

        if self._cache is None or self._cache[0] != self._version:
            X, g, runs = self.data()
            F = trend(X, self.max_step)
            beta = trend_coefficients(F, g)
            r = g - F @ beta
            # refit as runs finish (each finished run adds the examples that reach s = 1)
            if len(g) > 3 and len(self.done) > self._fitted_at:
                self.hyper = fit_hyperparameters(self.kernel, X, r, self.hyper, self.rng,
                                                 HyperBounds(**BOUNDS), n_restarts=1,
                                                 lengthscale_prior=True)
                self._fitted_at = len(self.done)
            gp = GaussianProcess(self.kernel, self.hyper)
            gp.reset(X)
            self._cache = (self._version, gp, r, beta, calibration(gp, r, runs))
        return self._cache[1:]

    def final(self, x: np.ndarray, step: float, value: float) -> tuple[float, float]:
        """Mean and standard deviation (the GP's, plus its noise) of the value at full length of
        a run at ``x`` that reached ``value`` at ``step``.

        Args:
            x: its configuration in the unit cube.
            step: its progress.
            value: its value there, as a maximization.
        """
        return self.finals(np.asarray(x, dtype=float)[None, :], [step], [value])[0]

    def finals(self, X: np.ndarray, steps: list[float],
               values: list[float]) -> list[tuple[float, float]]:
        """``final`` for several runs at once (rows of ``X``)."""
        from .posterior import Posterior

        gp, r, beta, scale = self._gp()
        U = np.array([self._features(x, k, v)
                      for x, k, v in zip(X, steps, values)]).reshape(len(steps), self.dim + 2)
        m, var = Posterior(gp, r, gp).predict(U)
        m = m + trend(U, self.max_step) @ beta
        noise = self.hyper.noise
        return [(float(v + mi), scale * float(math.sqrt(max(vi, 0.0) + noise)))
                for v, mi, vi in zip(values, m, var)]

    def predicted_finals(self, trial_ids: list[int]) -> list[tuple[float, float] | None]:
        """Partial runs' predicted final values, as (mean, standard deviation) from each run's
        furthest kept point (``final``); None for a run that kept no point.  A prediction is
        kept until the model or the run's furthest point changes: a stopped run's is computed
        once per finished run, not once per suggestion.

        Args:
            trial_ids: the runs.
        """
        known = [t for t in trial_ids if self.points.get(t) and t in self.x]
        last = {t: max(self.points[t].items()) for t in known}
        stale = [t for t in known if self._predicted.get(t, (None,))[0] != (self._version,
                                                                            last[t])]
        if stale:
            predicted = self.finals(np.array([self.x[t] for t in stale]),
                                    [last[t][0] for t in stale], [last[t][1] for t in stale])
            for t, final in zip(stale, predicted):
                self._predicted[t] = ((self._version, last[t]), final)
        return [self._predicted[t][1] if t in last else None for t in trial_ids]


def trend(X: np.ndarray, max_step: float) -> np.ndarray:
    """The gain's trend terms: per ``step_level`` of the kept step k (1, 2, 4, ... below
    ``max_step``), 1 and y_k (the last two inputs are s = ln k / ln max_step and y_k)."""
    levels = max(1, math.ceil(math.log2(max_step))) if max_step > 1 else 1
    s, y = X[:, -2], X[:, -1]
    scale = math.log2(max_step) if max_step > 1 else 0.0
    at = np.clip(np.floor(s * scale + 1e-9), 0, levels - 1).astype(int)     # ``step_level``
    F = np.zeros((len(X), 2 * levels))
    F[np.arange(len(X)), 2 * at] = 1.0
    F[np.arange(len(X)), 2 * at + 1] = y
    return F


def trend_coefficients(F: np.ndarray, g: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """Ridge least squares of the gains on their ``trend`` terms: the GP models what the trend
    leaves.  At each kept step the final value is then linear in the value reached (as a
    learning-curve regression predicts it), so a run better than any seen at its step is
    predicted to gain as the trend says (a saturating curve's gain grows with the value
    reached), not the average gain that a stationary kernel reverts to away from its data."""
    if not len(g):
        return np.zeros(F.shape[1])
    return np.linalg.solve(F.T @ F + ridge * np.eye(F.shape[1]), F.T @ g)


def calibration(gp: Any, g: np.ndarray, runs: np.ndarray) -> float:
    """How much wider the model's predictive spread must be to cover what it did not see: the
    root mean square of the leave-one-run-out standardized errors of its examples, at least 1.

    With K^-1 from the GP's factor, leaving run r's block B out gives the residuals
    (K^-1)_BB^-1 (K^-1 g)_B and their covariance (K^-1)_BB^-1, K with the noise (Rasmussen &
    Williams 2006, eq. 5.12, per block), so the check costs one inverse.  The examples of one
    run share its curve: leaving them out one at a time would let the run's other points vouch
    for it.
    """
    from scipy.linalg import cho_solve

    n = len(g)
    if n < 2 or len(set(runs.tolist())) < 3:
        return 1.0
    Kinv = cho_solve((gp.L, True), np.eye(n))
    alpha = Kinv @ g
    z2 = []
    for r in set(runs.tolist()):
        B = np.flatnonzero(runs == r)
        cov = np.linalg.inv(Kinv[np.ix_(B, B)])
        resid = cov @ alpha[B]
        z2 += list(resid ** 2 / np.diag(cov))
    return max(1.0, float(math.sqrt(np.mean(z2))))


def step_level(step: float) -> int:
    """The power of two a step is at or past: 0 for steps 1 to 2, 1 for 2 to 4, ..."""
    return int(math.floor(math.log2(max(step, 1.0)) + 1e-9))
