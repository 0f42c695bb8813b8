"""The GP's hyperparameters fit by marginal likelihood (paper 001 App. C: refit every k results;
Rasmussen & Williams 2006 eq. 5.8 and its gradient eq. 5.9), optionally MAP with Optuna
GPSampler's lengthscale prior, by multi-start L-BFGS-B (scipy); and the evidence that chooses
between kernels."""

from __future__ import annotations

import functools

import numpy as np
from scipy.linalg import cho_solve, lapack
from scipy.optimize import minimize

from .gp import HyperBounds, Hyperparameters, blas_threads
from .kernels import Kernel


# the box of logit w and u (the shared-context kernel): in [0.0025, 0.9975]
SHARE_LOGIT = (-6.0, 6.0)


def pairwise_sqdiff(X: np.ndarray) -> np.ndarray:
    """S[j] = (x_j - x'_j)^2 for every pair of rows, flattened to shape (d, n * n)."""
    n, d = X.shape
    return ((X.T[:, :, None] - X.T[:, None, :]) ** 2).reshape(d, n * n)


def negative_log_marginal_likelihood(theta: np.ndarray, kernel: Kernel, S: np.ndarray,
                                     y: np.ndarray, context: np.ndarray | None = None,
                                     level: bool = False) -> tuple[float, np.ndarray]:
    """-log p(y | X, theta) and its gradient, theta = (log a, log l_1..l_d, log lambda), or
    with ``context`` (a mask of the rows of S that are context columns) theta = (log a, log l,
    logit w, log lambda) for the kernel a (w rho(r_x) + (1 - w) rho(r)), and with ``level``
    theta = (log a, log l, logit w, logit u, log lambda) for
    a ((1 - u) (w rho(r_x) + (1 - w) rho(r)) + u rho(r_z)) (``Kernel``).

    Rasmussen & Williams (2006) eqs. 2.30 and 5.9; ``S = pairwise_sqdiff(X)``.  Every matrix
    in the gradient is symmetric, so W = alpha alpha^T - K^{-1} is formed from the lower triangle
    of K^{-1} (what LAPACK's potri gives) with weights 2 below the diagonal and 1 on it.
    """
    d, n = S.shape[0], len(y)
    a, ls, lam = np.exp(theta[0]), np.exp(theta[1:1 + d]), np.exp(theta[-1])
    inv_l2 = 1.0 / ls ** 2
    r2 = (inv_l2 @ S).reshape(n, n)
    rho, drho = kernel.rho_and_drho(r2)
    u = 0.0
    if context is None:
        K = a * rho
    else:                       # the shared-context kernel: w over the configuration's columns
        w, x = _sigmoid(theta[1 + d]), ~context
        rho_x, drho_x = kernel.rho_and_drho((inv_l2[x] @ S[x]).reshape(n, n))
        M = w * rho_x + (1.0 - w) * rho
        if level:               # the contexts' level: u over the context's columns alone
            u = _sigmoid(theta[2 + d])
            rho_z, drho_z = kernel.rho_and_drho((inv_l2[context] @ S[context]).reshape(n, n))
            K = a * ((1.0 - u) * M + u * rho_z)
        else:
            K = a * M
    K.flat[:: n + 1] += lam
    L, info = lapack.dpotrf(K, lower=1)
    if info != 0:
        return 1e25, np.zeros_like(theta)
    alpha = cho_solve((L, True), y, check_finite=False)
    nll = 0.5 * y @ alpha + np.log(np.diag(L)).sum() + 0.5 * n * np.log(2 * np.pi)
    Kinv, _ = lapack.dpotri(L, lower=1)
    W = np.outer(alpha, alpha)
    W -= Kinv
    W *= _lower_weights(n)
    trace_w = float(np.trace(W))
    grad = np.empty_like(theta)
    grad[0] = -0.5 * (float(np.sum(W * K)) - lam * trace_w)     # K = K_f + lambda I
    grad[-1] = -0.5 * lam * trace_w
    if context is None:
        W *= drho
        W *= a
        grad[1:1 + d] = -0.5 * (S @ W.ravel()) * inv_l2
        return float(nll), grad
    grad[1 + d] = -0.5 * a * (1.0 - u) * w * (1.0 - w) * float(np.sum(W * (rho_x - rho)))
    gl = S @ (W * drho).ravel() * ((1.0 - w) * (1.0 - u) * a)
    gl[x] += S[x] @ (W * drho_x).ravel() * (w * (1.0 - u) * a)
    if level:
        grad[2 + d] = -0.5 * a * u * (1.0 - u) * float(np.sum(W * (rho_z - M)))
        gl[context] += S[context] @ (W * drho_z).ravel() * (u * a)
    grad[1:1 + d] = -0.5 * gl * inv_l2
    return float(nll), grad


@functools.lru_cache(maxsize=4)
def _lower_weights(n: int) -> np.ndarray:
    """2 below the diagonal, 1 on it, 0 above: sum(M * B) = sum(A * B) for symmetric A, B when
    M = A * weights."""
    w = np.tril(np.full((n, n), 2.0), -1)
    w.flat[:: n + 1] = 1.0
    w.flags.writeable = False
    return w


def lengthscale_log_prior(theta: np.ndarray, d: int) -> tuple[float, np.ndarray]:
    """-log p of the lengthscales (up to a constant) and its gradient in theta: the prior
    Optuna's GPSampler puts on s = 1/l^2, log p(s) = -(0.1 / s + 0.1 s), i.e. 0.1 (l^2 + l^-2),
    which keeps l near 1 on the unit cube unless the data say otherwise."""
    l2 = np.exp(2.0 * theta[1:1 + d])
    grad = np.zeros_like(theta)
    grad[1:1 + d] = 0.2 * (l2 - 1.0 / l2)
    return float(0.1 * np.sum(l2 + 1.0 / l2)), grad


def _posterior_objective(theta: np.ndarray, kernel: Kernel, S: np.ndarray, y: np.ndarray,
                         prior: bool, context: np.ndarray | None = None, level: bool = False
                         ) -> tuple[float, np.ndarray]:
    nll, grad = negative_log_marginal_likelihood(theta, kernel, S, y, context, level)
    if not prior or nll >= 1e25:
        return nll, grad
    p, pg = lengthscale_log_prior(theta, S.shape[0])
    return nll + p, grad + pg


def fit_hyperparameters(kernel: Kernel, X: np.ndarray, y: np.ndarray, start: Hyperparameters,
                        rng: np.random.Generator, bounds: HyperBounds | None = None,
                        n_restarts: int = 2, lengthscale_prior: bool = False,
                        groups: np.ndarray | None = None) -> Hyperparameters:
    """The hyperparameters of ``fit_and_score``."""
    return fit_and_score(
        kernel=kernel,
        X=X,
        y=y,
        start=start,
        rng=rng,
        bounds=bounds,
        n_restarts=n_restarts,
        lengthscale_prior=lengthscale_prior,
        groups=groups,
    )[0]


@blas_threads
def fit_and_score(kernel: Kernel, X: np.ndarray, y: np.ndarray, start: Hyperparameters,
                  rng: np.random.Generator, bounds: HyperBounds | None = None,
                  n_restarts: int = 2, lengthscale_prior: bool = False,
                  groups: np.ndarray | None = None) -> tuple[Hyperparameters, float]:
    """Maximize the marginal likelihood (times ``lengthscale_log_prior`` if asked: a MAP fit)
    by multi-start L-BFGS-B (scipy); returns the hyperparameters and the minimized
    -log(marginal likelihood x prior), comparable across kernels on the same data.

    Starts: the current hyperparameters plus ``n_restarts`` log-uniform draws in the box.
    ``groups[j]`` (0..g-1) ties the lengthscales of input columns: one lengthscale per group,
    fit on the group's summed squared differences (a categorical's one-hot block is one group:
    its distance is then 2 x the mismatch, a Hamming kernel, as Optuna's GPSampler uses).
    """
    bounds = bounds or HyperBounds()
    S = pairwise_sqdiff(X)
    ls0 = np.log(start.lengthscales)
    if groups is not None:
        G = np.zeros((int(groups.max()) + 1, X.shape[1]))
        G[groups, np.arange(X.shape[1])] = 1.0
        S = G @ S
        ls0 = (G @ ls0) / G.sum(axis=1)
    d = S.shape[0]
    box = bounds.log_box(d)
    # the shared-context kernel (``Kernel``): logit w (and logit u) after the lengthscales
    context = None
    share0: list[float] = []
    shared = bool(kernel.n_context and start.share is not None)
    level = shared and start.level is not None
    if shared:
        cols = np.zeros(X.shape[1], dtype=bool)
        cols[-kernel.n_context:] = True
        context = cols if groups is None else np.isin(np.arange(d), groups[cols])
        share0 = [_logit(start.share)] + ([_logit(start.level)] if level else [])
        box = box[:-1] + [SHARE_LOGIT] * len(share0) + box[-1:]
    lo, hi = np.array([b[0] for b in box]), np.array([b[1] for b in box])
    theta0 = np.clip(
        np.concatenate([[np.log(start.amplitude)], ls0, share0, [np.log(start.noise)]]), lo, hi
    )
    starts = [theta0] + [lo + rng.random(len(lo)) * (hi - lo) for _ in range(n_restarts)]
    best_theta, best_val = theta0, np.inf
    for th in starts:
        res = minimize(_posterior_objective, th,
                       args=(kernel, S, y, lengthscale_prior, context, level), jac=True,
                       method="L-BFGS-B", bounds=box, options={"maxiter": 200})
        if np.isfinite(res.fun) and res.fun < best_val:
            best_theta, best_val = res.x, res.fun
    ls = np.exp(best_theta[1:1 + d])
    share = None if context is None else float(_sigmoid(best_theta[1 + d]))
    lev = float(_sigmoid(best_theta[2 + d])) if level else None
    return Hyperparameters(float(np.exp(best_theta[0])), ls if groups is None else ls[groups],
                           float(np.exp(best_theta[-1])), share, lev), float(best_val)


def _logit(p: float) -> float:
    p = min(max(p, 1e-3), 1 - 1e-3)
    return float(np.log(p / (1 - p)))


def _sigmoid(t: float) -> float:
    """The inverse of ``_logit``: a weight (w, u) from its fitted logit."""
    return 1.0 / (1.0 + np.exp(-t))
