"""Posterior views, exploration weights and the estimates h_t(x) the algorithms maximize.

* ``Posterior``: mean from one GP with given targets, (co)variance from a GP over possibly more
  inputs.  Censoring (001 eq. 1): both are the GP over every started trial.  Ignoring pending
  trials (GP-UCB, asy-TS): both are the GP over usable results.  Hallucination (GP-BUCB,
  GP-BTS; 001 §4): mean from usable results, variance from every started trial.
* ``exploration_weight``: nu_t = beta_t + B_y * sum_s sigma_{t-1}(x_s)   (001 eq. 2).
* Estimates: UCB mu + nu sigma (001 eq. 2), LCB mu - nu sigma, RandGP-UCB mu + Z sigma with a
  single Z ~ N(0, nu^2) shared by all x (003 Def. 2 / Cor. 3), and a Thompson sample
  f_t ~ GP(mu, nu^2 sigma^2) drawn jointly over a finite candidate set (001 eq. 3).
* ``LogExpectedImprovement``: log EI over a plug-in incumbent (not from the papers; the
  acquisition of Optuna's GPSampler and BoTorch's default, Ament et al. 2023).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy.linalg import cholesky, eigh
from scipy.special import erfcx, log_ndtr, ndtr

from .gp import blas_threads
from .posterior import Posterior

EstimateFn = Callable[[np.ndarray], np.ndarray]


def exploration_weight(beta: float, sigma_pending: np.ndarray, b_y: float = 1.0) -> float:
    """nu_t = beta_t + B_y * sum_s sigma_{t-1}(x_s)  (paper 001 eq. 2)."""
    return float(beta + b_y * np.sum(sigma_pending))


class Shifted:
    """h(x) = mu(x) + weight * sigma(x): UCB (weight = nu), LCB (-nu), RandGP-UCB (Z).

    ``top(U, k)`` gives the same values where they can be among the k largest and -inf
    elsewhere, at a fraction of the cost (``Posterior.shifted_top``); ``maximize`` uses it.
    """

    def __init__(self, post: Posterior, weight: float):
        self.post, self.weight = post, float(weight)

    def __call__(self, U: np.ndarray) -> np.ndarray:
        mean, var = self.post.predict(U)
        return mean + self.weight * np.sqrt(var)

    def top(self, U: np.ndarray, k: int) -> np.ndarray:
        return self.post.shifted_top(U, self.weight, k)


def shifted(post: Posterior, weight: float) -> Shifted:
    """h(x) = mu(x) + weight * sigma(x): UCB (weight = nu), LCB (-nu), RandGP-UCB (Z)."""
    return Shifted(post, weight)


_SQRT_2PI = math.sqrt(2.0 * math.pi)
_LOG_SQRT_2PI = math.log(_SQRT_2PI)
_SQRT_HALF_PI = math.sqrt(0.5 * math.pi)


def log_h(z: np.ndarray) -> np.ndarray:
    """log(phi(z) + z Phi(z)), the log of EI / sigma at z = (mu - best) / sigma, accurate for every
    z (Ament et al. 2023, eq. 9): direct above z = -1; below, log phi(z) + log1p(z Phi(z) / phi(z))
    with Phi / phi = sqrt(pi / 2) erfcx(-z / sqrt 2), and the asymptote -2 log|z| past |z| = 1e6.
    Written here: scipy has the pieces (log_ndtr, erfcx) but no log EI."""
    z = np.asarray(z, dtype=float)
    out = np.empty_like(z)
    hi, far = z > -1.0, z < -1e6
    mid = ~hi & ~far
    zh = z[hi]
    out[hi] = np.log(np.exp(-0.5 * zh * zh) / _SQRT_2PI + zh * ndtr(zh))
    zm = z[mid]
    out[mid] = (-0.5 * zm * zm - _LOG_SQRT_2PI
                + np.log1p(zm * _SQRT_HALF_PI * erfcx(-zm / math.sqrt(2.0))))
    zf = z[far]
    out[far] = -0.5 * zf * zf - _LOG_SQRT_2PI - 2.0 * np.log(-zf)
    return out


class LogExpectedImprovement:
    """h(x) = log E[max(f(x) - best, 0)] = log sigma(x) + log_h((mu(x) - best) / sigma(x)) under
    the posterior; ``best`` is the plug-in incumbent (the largest posterior mean among the
    configurations tried, Picheny et al. 2013), which noise cannot inflate as it does the largest
    result.  Pending trials act through the censored posterior, as for the UCB."""

    def __init__(self, post: Posterior, best: float):
        self.post, self.best = post, float(best)

    def __call__(self, U: np.ndarray) -> np.ndarray:
        mean, var = self.post.predict(U)
        sigma = np.sqrt(np.maximum(var, 1e-12))
        return np.log(sigma) + log_h((mean - self.best) / sigma)


def estimate(kind: str, post: Posterior, nu: float, C: np.ndarray, optimistic: float,
             rng: np.random.Generator, best: float | None = None) -> EstimateFn:
    """h_t of the algorithm's ``kind``: UCB / LCB mu + optimistic x nu sigma (``optimistic`` +1
    for the objective, -1 for a constraint), a Thompson draw on C, RandGP-UCB's mu + Z sigma,
    or log EI over the incumbent ``best``."""
    if kind == "ei":
        return LogExpectedImprovement(post, best)
    if kind == "ts":
        return on_candidates(C, thompson_sample(post, C, nu, rng))
    weight = optimistic * nu if kind == "ucb" else float(rng.normal(0.0, nu))
    return shifted(post, weight)


def on_candidates(C: np.ndarray, values: np.ndarray) -> EstimateFn:
    """A function known only on the candidate set C (a Thompson draw), looked up by row."""

    def h(U: np.ndarray) -> np.ndarray:
        if U is C:
            return values
        idx = [int(np.flatnonzero(np.all(C == u, axis=1))[0]) for u in np.atleast_2d(U)]
        return values[idx]

    return h


def probability_feasible(post: Posterior, log: bool = False) -> EstimateFn:
    """P(g(x) <= 0) = Phi(-mu_g(x) / sigma_g(x)) under the constraint's posterior (``log``: its
    log, for log EI)."""
    cdf = log_ndtr if log else ndtr

    def p(U: np.ndarray) -> np.ndarray:
        mean, var = post.predict(U)
        return cdf(-mean / np.sqrt(np.maximum(var, 1e-12)))

    return p


@blas_threads
def thompson_sample(post: Posterior, C: np.ndarray, nu: float,
                    rng: np.random.Generator) -> np.ndarray:
    """One joint draw of f_t ~ GP(mu, nu^2 sigma^2) on the rows of C (paper 001 eq. 3).

    On the GP's anchor set, when every input is one of its points, the draw uses pathwise
    conditioning (Matheron's rule, Wilson et al. 2020): f0 ~ GP(0, k) on D, then
    f0 + k(D, X)(K + lambda I)^{-1}(-f0(X) - eps) has exactly the posterior covariance, at
    O(m^2 + n m) per draw instead of O(n m^2 + m^3).
    """
    gp = post.var_gp
    if (
        isinstance(post, Posterior)
        and C is gp.anchor
        and gp.n
        and bool((gp.anchor_index >= 0).all())
    ):
        mean, _ = post.predict(C)
        f0 = gp.anchor_prior_chol() @ rng.standard_normal(len(C))
        eps = np.sqrt(gp.hyper.noise) * rng.standard_normal(gp.n)
        delta = f0 + gp.VD.T @ gp.whiten(-(f0[gp.anchor_index] + eps))
        return mean + nu * delta
    mean, cov = post.predict(C, full_cov=True)
    z = rng.standard_normal(len(C))
    return mean + nu * _sqrt_psd(cov) @ z


def _sqrt_psd(cov: np.ndarray) -> np.ndarray:
    """A square root A with A A^T = cov: Cholesky with jitter, eigendecomposition as fallback."""
    scale = max(float(np.max(np.diag(cov))), 1e-12)
    for jitter in (1e-10, 1e-8, 1e-6):
        try:
            return cholesky(cov + jitter * scale * np.eye(len(cov)), lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            continue
    w, Q = eigh(cov, check_finite=False)
    return Q * np.sqrt(np.clip(w, 0.0, None))


# --- beta_t schedules --------------------------------------------------------------------------

def beta_constant(value: float) -> Callable[[int, float], float]:
    """beta_t = value (paper 001 App. C uses 1 for every method)."""
    return lambda t, info_gain: float(value)


def beta_srinivas_finite(size: int, delta: float = 0.1) -> Callable[[int, float], float]:
    """sqrt of beta_t = 2 log(|D| t^2 pi^2 / (6 delta))  (paper 002 Thm 1).

    Paper 002 writes UCB as mu + beta^{1/2} sigma; paper 001 multiplies sigma by beta itself,
    so the square root is returned.
    """
    return lambda t, info_gain: math.sqrt(2.0 * math.log(size * t * t * math.pi ** 2 / (6 * delta)))


def beta_srinivas_continuous(dim: int, delta: float = 0.1, a: float = 1.0, b: float = 1.0,
                             r: float = 1.0) -> Callable[[int, float], float]:
    """sqrt of beta_t = 2 log(2 t^2 pi^2 / (3 delta)) + 2 d log(t^2 d b r sqrt(log(4 d a / delta)))
    (paper 002 Thm 2; a, b bound the kernel-derivative tails, r the domain [0, r]^d)."""

    def beta(t: int, info_gain: float) -> float:
        inner = t * t * dim * b * r * math.sqrt(math.log(4 * dim * a / delta))
        return math.sqrt(2 * math.log(2 * t * t * math.pi ** 2 / (3 * delta))
                         + 2 * dim * math.log(max(inner, 1.0)))

    return beta


def beta_sdf(b_f: float = 1.0, noise_r: float = 0.1, b_y: float = 1.0,
             delta: float = 0.1) -> Callable[[int, float], float]:
    """beta_t = B_f + (R + B_y) sqrt(2 (gamma_{t-1} + 1 + log(2 / delta)))  (paper 001, eq. 2).

    gamma_{t-1} (maximum information gain) is replaced by the information gain of the inputs
    actually chosen, 1/2 log det(I + K / lambda), which the GP's Cholesky factor gives for free:
    a lower bound of gamma, as no closed form exists for a fitted kernel.
    """
    return lambda t, info_gain: b_f + (noise_r + b_y) * math.sqrt(
        2 * (info_gain + 1 + math.log(2 / delta)))


BETA_SCHEDULES = ("constant", "srinivas-finite", "srinivas-continuous", "sdf")
