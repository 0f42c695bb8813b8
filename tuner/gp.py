"""Zero-mean Gaussian-process regression with a Cholesky factor that grows one row at a time.

Posterior (paper 001 eq. 1, with lambda = ``noise``):
    mu(x)      = k(x)^T (K + lambda I)^{-1} y
    sigma^2(x) = k(x, x) - k(x)^T (K + lambda I)^{-1} k(x)

Targets are passed per call rather than stored: with censored feedback they change every time a
result arrives or a window closes, while the inputs (every started trial) only grow.  Adding an
input costs O(n^2) (``append``: one triangular solve for the new row of L); a full O(n^3)
factorization happens only when the hyperparameters change (``set_hyperparameters``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_solve, cholesky, lapack, solve_triangular
from scipy.optimize import minimize

from .kernels import Kernel, scaled_sqdist

JITTER = 1e-10


@dataclass
class Hyperparameters:
    """Kernel amplitude a, ARD lengthscales l and noise (regularization) lambda."""

    amplitude: float
    lengthscales: np.ndarray
    noise: float

    def to_dict(self) -> dict:
        return {"amplitude": float(self.amplitude),
                "lengthscales": [float(v) for v in self.lengthscales],
                "noise": float(self.noise)}

    @classmethod
    def from_dict(cls, d: dict) -> "Hyperparameters":
        return cls(float(d["amplitude"]), np.asarray(d["lengthscales"], dtype=float),
                   float(d["noise"]))


@dataclass
class HyperBounds:
    """Box bounds for the marginal-likelihood fit (inputs live in the unit cube)."""

    amplitude: tuple[float, float] = (1e-2, 10.0)
    lengthscale: tuple[float, float] = (5e-3, 10.0)
    noise: tuple[float, float] = (1e-6, 0.5)

    def log_box(self, dim: int) -> list[tuple[float, float]]:
        return ([tuple(np.log(self.amplitude))] + [tuple(np.log(self.lengthscale))] * dim
                + [tuple(np.log(self.noise))])


@dataclass
class GaussianProcess:
    """GP over a growing set of inputs; see the module docstring for the contract."""

    kernel: Kernel
    hyper: Hyperparameters
    _X: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _L: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    n: int = 0
    anchor: np.ndarray | None = field(default=None, repr=False)
    _VD: np.ndarray | None = field(default=None, repr=False)
    _didx: list[int] = field(default_factory=list, repr=False)
    _prior_chol: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        dim = len(self.hyper.lengthscales)
        self._X = np.zeros((16, dim))
        self._L = np.zeros((16, 16))

    @property
    def dim(self) -> int:
        return self._X.shape[1]

    @property
    def X(self) -> np.ndarray:
        return self._X[: self.n]

    @property
    def L(self) -> np.ndarray:
        """Lower Cholesky factor of K + lambda I over the current inputs."""
        return self._L[: self.n, : self.n]

    def set_anchor(self, D: np.ndarray) -> None:
        """Fix a finite set of test points D and keep V_D = L^{-1} k(X, D) up to date.

        With it a posterior on D costs O(n m) per new input instead of O(n^2 m), and Thompson
        samples on D can use pathwise conditioning (see ``anchor_prior_chol``).
        """
        self.anchor = np.asarray(D, dtype=float)
        self._lookup = {row.tobytes(): i for i, row in enumerate(self.anchor)}
        self._VD = np.zeros((self._X.shape[0], len(self.anchor)))
        self._didx = [self._lookup.get(x.tobytes(), -1) for x in self.X]
        self._refresh_anchor()

    @property
    def VD(self) -> np.ndarray:
        assert self._VD is not None
        return self._VD[: self.n]

    @property
    def anchor_index(self) -> np.ndarray:
        """Row of D equal to each input (-1 where an input is not a point of D)."""
        return np.asarray(self._didx, dtype=int)

    def anchor_prior_chol(self) -> np.ndarray:
        """Cholesky factor of the prior k(D, D) (cached until the hyperparameters change)."""
        if self._prior_chol is None:
            K = self.k(self.anchor, self.anchor)
            K[np.diag_indices_from(K)] += JITTER * 1e2 * self.hyper.amplitude
            self._prior_chol = cholesky(K, lower=True, check_finite=False)
        return self._prior_chol

    def _refresh_anchor(self) -> None:
        self._prior_chol = None
        if self.anchor is not None and self.n:
            self._VD[: self.n] = solve_triangular(self.L, self.k(self.X, self.anchor), lower=True,
                                                  check_finite=False)

    def k(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return self.kernel(A, B, self.hyper.amplitude, self.hyper.lengthscales)

    def _reserve(self, n: int) -> None:
        cap = self._X.shape[0]
        if n <= cap:
            return
        new = max(n, 2 * cap)
        X = np.zeros((new, self.dim))
        X[: self.n] = self.X
        L = np.zeros((new, new))
        L[: self.n, : self.n] = self.L
        self._X, self._L = X, L
        if self._VD is not None:
            VD = np.zeros((new, self._VD.shape[1]))
            VD[: self.n] = self._VD[: self.n]
            self._VD = VD

    def append(self, x: np.ndarray) -> None:
        """Add one input and grow L by one row in O(n^2) (no refactorization)."""
        x = np.asarray(x, dtype=float).reshape(1, -1)
        self._reserve(self.n + 1)
        n = self.n
        kxx = self.hyper.amplitude + self.hyper.noise
        if n:
            kx = self.k(self.X, x)[:, 0]
            row = solve_triangular(self.L, kx, lower=True, check_finite=False)
            d2 = kxx - row @ row
            self._L[n, :n] = row
        else:
            d2 = kxx
        self._L[n, n] = np.sqrt(max(d2, JITTER * kxx))
        self._X[n] = x[0]
        if self.anchor is not None:
            kd = self.k(x, self.anchor)[0]
            self._VD[n] = (kd - self._L[n, :n] @ self._VD[:n]) / self._L[n, n]
            self._didx.append(self._lookup.get(x[0].tobytes(), -1))
        self.n = n + 1

    def extend(self, X: np.ndarray) -> None:
        for x in np.atleast_2d(X):
            self.append(x)

    def refactor(self) -> None:
        """Full O(n^3) factorization of the current inputs (after a hyperparameter change)."""
        self._prior_chol = None
        if self.n == 0:
            return
        K = self.k(self.X, self.X)
        K[np.diag_indices_from(K)] += self.hyper.noise
        try:
            L = cholesky(K, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            K[np.diag_indices_from(K)] += JITTER * 1e4 * (self.hyper.amplitude + self.hyper.noise)
            L = cholesky(K, lower=True, check_finite=False)
        self._L[: self.n, : self.n] = L
        self._refresh_anchor()

    def set_hyperparameters(self, hyper: Hyperparameters) -> None:
        self.hyper = hyper
        self.refactor()

    def reset(self, X: np.ndarray) -> None:
        """Replace the inputs by ``X`` and factorize from scratch."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        self.n = 0
        self._reserve(len(X))
        self._X[: len(X)] = X
        self.n = len(X)
        if self.anchor is not None:
            self._didx = [self._lookup.get(x.tobytes(), -1) for x in self.X]
        self.refactor()

    def whiten(self, y: np.ndarray) -> np.ndarray:
        """w = L^{-1} y, so that mu(x) = (L^{-1} k(x))^T w."""
        return solve_triangular(self.L, np.asarray(y, dtype=float), lower=True, check_finite=False)

    def predict(self, Xs: np.ndarray, y: np.ndarray | None = None,
                full_cov: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean (zero when ``y`` is None) and variance (or covariance) at ``Xs``."""
        return Posterior(self, y, self).predict(Xs, full_cov)

    def log_det(self) -> float:
        """log det(K + lambda I)."""
        return float(2.0 * np.log(np.diag(self.L)).sum()) if self.n else 0.0


@dataclass
class Posterior:
    """Mean from ``mean_gp`` with targets ``y``; variance from ``var_gp`` (same GP or a superset)."""

    mean_gp: GaussianProcess
    y: np.ndarray | None
    var_gp: GaussianProcess

    def __post_init__(self) -> None:
        has_y = self.y is not None and self.mean_gp.n
        self._w = self.mean_gp.whiten(self.y) if has_y else None

    def predict(self, U: np.ndarray, full_cov: bool = False) -> tuple[np.ndarray, np.ndarray]:
        U = U if U.ndim == 2 else np.atleast_2d(U)
        gp = self.var_gp
        if gp.n == 0:
            cov = gp.k(U, U)
            return np.zeros(len(U)), (cov if full_cov else np.diag(cov).copy())
        V = _whitened_cross(gp, U)
        if self._w is None:
            mean = np.zeros(len(U))
        else:
            Vm = V if self.mean_gp is gp else _whitened_cross(self.mean_gp, U)
            mean = Vm.T @ self._w
        if full_cov:
            return mean, gp.k(U, U) - V.T @ V
        var = gp.hyper.amplitude - np.einsum("ij,ij->j", V, V)
        return mean, np.maximum(var, 0.0)

    def std(self, U: np.ndarray) -> np.ndarray:
        return np.sqrt(self.predict(U)[1])



def _whitened_cross(gp: GaussianProcess, U: np.ndarray) -> np.ndarray:
    """L^{-1} k(X, U), from the anchored cache when U is the GP's anchor set."""
    if U is gp.anchor:
        return gp.VD
    return solve_triangular(gp.L, gp.k(gp.X, U), lower=True, check_finite=False)


def pairwise_sqdiff(X: np.ndarray) -> np.ndarray:
    """S[j] = (x_j - x'_j)^2 for every pair of rows, flattened to shape (d, n * n)."""
    n, d = X.shape
    return ((X.T[:, :, None] - X.T[:, None, :]) ** 2).reshape(d, n * n)


def negative_log_marginal_likelihood(theta: np.ndarray, kernel: Kernel, S: np.ndarray,
                                     y: np.ndarray) -> tuple[float, np.ndarray]:
    """-log p(y | X, theta) and its gradient, theta = (log a, log l_1..l_d, log lambda).

    Rasmussen & Williams (2006) eqs. 2.30 and 5.9; ``S = pairwise_sqdiff(X)``.
    """
    d, n = S.shape[0], len(y)
    a, ls, lam = np.exp(theta[0]), np.exp(theta[1:1 + d]), np.exp(theta[-1])
    inv_l2 = 1.0 / ls ** 2
    r2 = (inv_l2 @ S).reshape(n, n)
    Kf = a * kernel.rho(r2)
    K = Kf + lam * np.eye(n)
    L, info = lapack.dpotrf(K, lower=1)
    if info != 0:
        return 1e25, np.zeros_like(theta)
    alpha = cho_solve((L, True), y, check_finite=False)
    nll = 0.5 * y @ alpha + np.log(np.diag(L)).sum() + 0.5 * n * np.log(2 * np.pi)
    Kinv, _ = lapack.dpotri(L, lower=1)
    Kinv = np.tril(Kinv) + np.tril(Kinv, -1).T
    W = np.outer(alpha, alpha) - Kinv
    grad = np.empty_like(theta)
    grad[0] = -0.5 * np.sum(W * Kf)
    G = a * kernel.drho(r2) * W
    grad[1:1 + d] = -0.5 * (S @ G.ravel()) * inv_l2
    grad[-1] = -0.5 * lam * np.trace(W)
    return float(nll), grad


def fit_hyperparameters(kernel: Kernel, X: np.ndarray, y: np.ndarray, start: Hyperparameters,
                        rng: np.random.Generator, bounds: HyperBounds | None = None,
                        n_restarts: int = 2) -> Hyperparameters:
    """Maximize the marginal likelihood by multi-start L-BFGS-B (scipy).

    Starts: the current hyperparameters plus ``n_restarts`` log-uniform draws in the box.
    """
    bounds = bounds or HyperBounds()
    d = X.shape[1]
    box = bounds.log_box(d)
    lo, hi = np.array([b[0] for b in box]), np.array([b[1] for b in box])
    theta0 = np.clip(np.concatenate([[np.log(start.amplitude)], np.log(start.lengthscales),
                                     [np.log(start.noise)]]), lo, hi)
    starts = [theta0] + [lo + rng.random(len(lo)) * (hi - lo) for _ in range(n_restarts)]
    S = pairwise_sqdiff(X)
    best_theta, best_val = theta0, np.inf
    for th in starts:
        res = minimize(negative_log_marginal_likelihood, th, args=(kernel, S, y), jac=True,
                       method="L-BFGS-B", bounds=box, options={"maxiter": 200})
        if np.isfinite(res.fun) and res.fun < best_val:
            best_theta, best_val = res.x, res.fun
    return Hyperparameters(float(np.exp(best_theta[0])), np.exp(best_theta[1:1 + d]),
                           float(np.exp(best_theta[-1])))
