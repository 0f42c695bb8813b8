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

import functools
from dataclasses import dataclass, field
from typing import Callable, TypeVar

import numpy as np
from scipy.linalg import cho_solve, cholesky, lapack, solve_triangular
from scipy.optimize import minimize
from threadpoolctl import ThreadpoolController

from .kernels import Kernel

JITTER = 1e-10
BLAS_THREADS = 1
PRUNE_BLOCK = 128      # first row block of Posterior.shifted_top

_F = TypeVar("_F", bound=Callable)
_BLAS = ThreadpoolController()      # created after numpy and scipy.linalg loaded their BLAS


def blas_threads(fn: _F) -> _F:
    """Run ``fn`` with ``BLAS_THREADS`` BLAS threads (numpy's and scipy's OpenBLAS).

    The core's matrices are small (n <= a few thousand) and its solves have few right-hand
    sides; there OpenBLAS threads cost more than they give, and far more when the cores are
    busy with the trials being tuned (measured on 2 shared cores, n = 2000: a 4-column
    triangular solve 1.5 ms with one thread vs 13 ms with two; a 200-point marginal-likelihood
    evaluation 2.5 ms vs 46 ms; scripts/bench/bench_latency.py).  Numbers only change in the last bits.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _BLAS.limit(limits=BLAS_THREADS, user_api="blas"):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@dataclass
class Hyperparameters:
    """Kernel amplitude a, ARD lengthscales l and noise (regularization) lambda; ``share``: the
    weight of the part shared by every context, ``level``: the weight of the contexts' level
    (``Kernel``; None without them)."""

    amplitude: float
    lengthscales: np.ndarray
    noise: float
    share: float | None = None
    level: float | None = None

    def to_dict(self) -> dict:
        return {"amplitude": float(self.amplitude),
                "lengthscales": [float(v) for v in self.lengthscales],
                "noise": float(self.noise),
                **({"share": float(self.share)} if self.share is not None else {}),
                **({"level": float(self.level)} if self.level is not None else {})}

    @classmethod
    def from_dict(cls, d: dict) -> "Hyperparameters":
        return cls(float(d["amplitude"]), np.asarray(d["lengthscales"], dtype=float),
                   float(d["noise"]), None if d.get("share") is None else float(d["share"]),
                   None if d.get("level") is None else float(d["level"]))


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
        self._L = np.zeros((16, 16), order="F")

    @property
    def dim(self) -> int:
        return self._X.shape[1]

    @property
    def X(self) -> np.ndarray:
        return self._X[: self.n]

    @property
    def L(self) -> np.ndarray:
        """Lower Cholesky factor of K + lambda I over the current inputs (a view)."""
        return self._L[: self.n, : self.n]

    def solve(self, B: np.ndarray, trans: bool = False) -> np.ndarray:
        """L^{-1} B (or L^{-T} B), B with n rows.

        L lives in a Fortran-ordered buffer that grows by doubling; its first n columns are
        contiguous, so LAPACK reads the n x n factor in place (leading dimension = capacity).
        scipy's solve_triangular would copy the strided n x n view on every call (measured at
        n = 2000: a 4-column solve 7.7 ms from the view, 1.6 ms in place).
        """
        return self.solve_block(0, self.n, B, trans)

    def solve_block(self, r0: int, r1: int, B: np.ndarray, trans: bool = False) -> np.ndarray:
        """L[r0:r1, r0:r1]^{-1} B (or its transpose's), B with r1 - r0 rows, read in place.

        LAPACK takes the diagonal block as the F-contiguous (capacity x (r1 - r0)) array that
        starts at its first element (leading dimension = capacity, only the first r1 - r0 rows
        read).  Only when that array would run past the buffer's end (r1 = capacity, r0 > 0)
        is the block copied.  From a strided view scipy copies it on every call (4.2 ms against
        0.24 ms for rows 1 024-1 800 and 3 columns), with bit-identical results.
        """
        B = np.asarray(B, dtype=float)
        cap, w = self._L.shape[0], r1 - r0
        start = r0 * (cap + 1)
        if r0 == 0:
            A = self._L[:, :r1]
        elif start + cap * w <= self._L.size and self._L.flags.f_contiguous:
            A = self._L.ravel(order="F")[start:start + cap * w].reshape((cap, w), order="F")
        else:
            A = np.asfortranarray(self._L[r0:r1, r0:r1])
        x, info = lapack.dtrtrs(A, B if B.ndim == 2 else B[:, None], lower=1, trans=int(trans))
        if info != 0:
            raise np.linalg.LinAlgError(f"triangular solve failed (LAPACK info {info})")
        return x if B.ndim == 2 else x[:, 0]

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

    @blas_threads
    def anchor_prior_chol(self) -> np.ndarray:
        """Cholesky factor of the prior k(D, D) (cached until the hyperparameters change)."""
        if self._prior_chol is None:
            K = self.k(self.anchor, self.anchor)
            K[np.diag_indices_from(K)] += JITTER * 1e2 * self.hyper.amplitude
            self._prior_chol = cholesky(K, lower=True, check_finite=False)
        return self._prior_chol

    @blas_threads
    def _refresh_anchor(self) -> None:
        self._prior_chol = None
        if self.anchor is not None and self.n:
            self._VD[: self.n] = self.solve(self.k(self.anchor, self.X).T)

    def k(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        h = self.hyper
        return self.kernel(A, B, h.amplitude, h.lengthscales, h.share, h.level)

    def correlation_apart_from_level(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """The prior correlation of the part of the function that depends on the configuration:
        k / a with the contexts' level left out (``Kernel``), which correlates every two
        configurations at one context by u."""
        h = self.hyper
        return self.kernel(A, B, 1.0, h.lengthscales, h.share)

    def _reserve(self, n: int) -> None:
        cap = self._X.shape[0]
        if n <= cap:
            return
        new = max(n, 2 * cap)
        X = np.zeros((new, self.dim))
        X[: self.n] = self.X
        L = np.zeros((new, new), order="F")
        L[: self.n, : self.n] = self.L
        self._X, self._L = X, L
        if self._VD is not None:
            VD = np.zeros((new, self._VD.shape[1]))
            VD[: self.n] = self._VD[: self.n]
            self._VD = VD

    @blas_threads
    def append(self, x: np.ndarray) -> None:
        """Add one input and grow L by one row in O(n^2) (no refactorization)."""
        x = np.asarray(x, dtype=float).reshape(1, -1)
        self._reserve(self.n + 1)
        n = self.n
        kxx = self.hyper.amplitude + self.hyper.noise
        if n:
            kx = self.k(self.X, x)[:, 0]
            row = self.solve(kx)
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

    @blas_threads
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

    @blas_threads
    def whiten(self, y: np.ndarray) -> np.ndarray:
        """w = L^{-1} y, so that mu(x) = (L^{-1} k(x))^T w."""
        return self.solve(y)

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
    offset: float = 0.0        # a constant prior mean: y holds the targets minus it

    def __post_init__(self) -> None:
        has_y = self.y is not None and self.mean_gp.n
        self._w = self.mean_gp.whiten(self.y) if has_y else None
        self._alpha: np.ndarray | None = None

    @blas_threads
    def predict(self, U: np.ndarray, full_cov: bool = False) -> tuple[np.ndarray, np.ndarray]:
        U = U if U.ndim == 2 else np.atleast_2d(U)
        gp = self.var_gp
        if gp.n == 0:
            cov = gp.k(U, U)
            return np.full(len(U), self.offset), (cov if full_cov else np.diag(cov).copy())
        V = _whitened_cross(gp, U)
        if self._w is None:
            mean = np.zeros(len(U))
        else:
            Vm = V if self.mean_gp is gp else _whitened_cross(self.mean_gp, U)
            mean = Vm.T @ self._w
        mean = mean + self.offset
        if full_cov:
            return mean, gp.k(U, U) - V.T @ V
        var = gp.hyper.amplitude - np.einsum("ij,ij->j", V, V)
        return mean, np.maximum(var, 0.0)

    def std(self, U: np.ndarray) -> np.ndarray:
        return np.sqrt(self.predict(U)[1])

    @blas_threads
    def shifted_top(self, U: np.ndarray, weight: float, k: int) -> np.ndarray:
        """mu + weight * sigma at the rows of U that can be among the k largest; -inf elsewhere.

        Same values as ``predict`` (up to rounding) where finite, at a fraction of the cost for
        many candidates.  sigma^2(x) = a - sum_i V_i(x)^2 with V = L^{-1} k(X, x), and forward
        substitution gives the first r entries of V from the first r rows of L alone, so partial
        sums bound sigma from above, more tightly as r grows.  Rows are processed in doubling
        blocks; after each, a candidate whose bound is below the k-th largest exact value among
        the 2k best-bounded candidates is dropped (it cannot be among the k largest).
        """
        gp = self.var_gp
        if not _pruning_pays(gp, U, k):
            mean, var = self.predict(U)
            return mean + weight * np.sqrt(var)
        K = gp.k(gp.X, U)
        mean = self._mean_at(K, U)

        def exact(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            Vb = gp.solve(K[:, idx])
            return mean[idx], np.maximum(gp.hyper.amplitude - np.einsum("ij,ij->j", Vb, Vb), 0.0)

        cols, ssq, _ = _pruned_rows(gp, K, mean, weight, k, exact)
        out = np.full(len(U), -np.inf)
        out[cols] = mean[cols] + weight * np.sqrt(np.maximum(gp.hyper.amplitude - ssq[cols], 0.0))
        return out

    def _mean_at(self, K: np.ndarray, U: np.ndarray) -> np.ndarray:
        """mu(U) = k(X, U)^T (K + lambda I)^{-1} y, given ``K = var_gp.k(X, U)``."""
        if self._w is None:
            return np.full(len(U), self.offset)
        gp = self.mean_gp
        if self._alpha is None:
            self._alpha = gp.solve(self._w, trans=True)
        return (K if gp is self.var_gp else gp.k(gp.X, U)).T @ self._alpha + self.offset



class SoftCensoredPosterior:
    """Posterior with usable results at the GP's noise lambda and censored entries at their
    own, larger noise lambda_c (soft censoring; the product's deviation from 001 eq. 1, which
    gives every entry the same lambda).

    The usable results keep their incrementally grown factor L_d (``gp``); the p censored
    entries are appended as one block of the joint Cholesky factor
    [[L_d, 0], [A^T, L_S]], A = L_d^{-1} k(X_d, X_c), L_S L_S^T = k(X_c, X_c) + lambda_c I - A^T A,
    at O(n^2 p) per suggestion (p = running plus censored-for-good trials).
    """

    def __init__(self, gp: GaussianProcess, y: np.ndarray, Xc: np.ndarray, yc: np.ndarray,
                 noise_c: float):
        self.var_gp = self.mean_gp = gp
        self.offset = 0.0          # a constant prior mean (as Posterior.offset)
        self.Xc, self.noise_c = np.asarray(Xc, dtype=float).reshape(-1, gp.dim), float(noise_c)
        self._censored_var: np.ndarray | None = None
        self._setup(np.asarray(y, dtype=float), np.asarray(yc, dtype=float))

    @blas_threads
    def _setup(self, y: np.ndarray, yc: np.ndarray) -> None:
        gp, Xc = self.var_gp, self.Xc
        Kcc = gp.k(Xc, Xc)
        Kcc[np.diag_indices_from(Kcc)] += self.noise_c
        if gp.n:     # A and w_d = L_d^{-1} y in one solve: one pass over L_d, not two
            B = np.empty((gp.n, len(Xc) + 1), order="F")
            B[:, :-1] = gp.k(gp.X, Xc)
            B[:, -1] = y
            Aw = gp.solve(B)
            self.A, self.w_d = Aw[:, :-1], Aw[:, -1]
            S = Kcc - self.A.T @ self.A
            rc = yc - self.A.T @ self.w_d
        else:
            self.A, self.w_d, S, rc = np.zeros((0, len(Xc))), np.zeros(0), Kcc, yc
        try:
            self.L_S = cholesky(S, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            S[np.diag_indices_from(S)] += JITTER * 1e4 * (gp.hyper.amplitude + self.noise_c)
            self.L_S = cholesky(S, lower=True, check_finite=False)
        self.w_c = solve_triangular(self.L_S, rc, lower=True, check_finite=False)
        # alpha = (K + Lambda)^{-1} y over [X_d; X_c], for the O(n m) mean of shifted_top
        a_c = solve_triangular(self.L_S, self.w_c, lower=True, trans=1, check_finite=False)
        a_d = gp.solve(self.w_d - self.A @ a_c, trans=True) if gp.n else np.zeros(0)
        self._alpha = (a_d, a_c)

    def _block(self, U: np.ndarray, Vd: np.ndarray) -> np.ndarray:
        """V_c = L_S^{-1} (k(X_c, U) - A^T V_d)."""
        rhs = self.var_gp.k(self.Xc, U)
        if self.var_gp.n:
            rhs -= self.A.T @ Vd
        return solve_triangular(self.L_S, rhs, lower=True, check_finite=False)

    @blas_threads
    def predict(self, U: np.ndarray, full_cov: bool = False) -> tuple[np.ndarray, np.ndarray]:
        U = U if U.ndim == 2 else np.atleast_2d(U)
        gp = self.var_gp
        Vd = _whitened_cross(gp, U) if gp.n else np.zeros((0, len(U)))
        Vc = self._block(U, Vd)
        mean = Vd.T @ self.w_d + Vc.T @ self.w_c + self.offset
        if full_cov:
            return mean, gp.k(U, U) - Vd.T @ Vd - Vc.T @ Vc
        var = gp.hyper.amplitude - np.einsum("ij,ij->j", Vd, Vd) - np.einsum("ij,ij->j", Vc, Vc)
        return mean, np.maximum(var, 0.0)

    @blas_threads
    def std(self, U: np.ndarray) -> np.ndarray:
        """sigma at U; at inputs that are censored entries (nu_t's pending trials, eq. 2) from
        the factors already built, without a solve with L_d (``censored_var``)."""
        rows = self._censored_rows(U)
        if rows is not None:
            return np.sqrt(self.censored_var()[rows])
        return np.sqrt(self.predict(U)[1])

    def _censored_rows(self, U: np.ndarray) -> np.ndarray | None:
        """The censored entry each row of U is (bit for bit), or None if one is not."""
        U = np.ascontiguousarray(U, dtype=float).reshape(-1, self.Xc.shape[1])
        where = {row.tobytes(): i for i, row in enumerate(np.ascontiguousarray(self.Xc))}
        rows = [where.get(row.tobytes()) for row in U]
        return None if any(r is None for r in rows) else np.asarray(rows, dtype=int)

    def censored_var(self) -> np.ndarray:
        """The posterior variance at each censored entry's input: V_d = A (from the setup),
        V_c = L_S^{-1} (k(X_c, X_c) - A^T A), O(n p^2) instead of a solve with L_d."""
        if self._censored_var is None:
            gp = self.var_gp
            Vc = solve_triangular(self.L_S, gp.k(self.Xc, self.Xc) - self.A.T @ self.A, lower=True,
                                  check_finite=False)
            var = gp.hyper.amplitude - np.einsum("ij,ij->j", self.A, self.A) - np.einsum("ij,ij->j", Vc, Vc)
            self._censored_var = np.maximum(var, 0.0)
        return self._censored_var

    @blas_threads
    def shifted_top(self, U: np.ndarray, weight: float, k: int) -> np.ndarray:
        """As ``Posterior.shifted_top``: the rows of L_d bound sigma from above (the censored
        block only lowers it), and survivors get the block's rows at the end."""
        gp = self.var_gp
        if not _pruning_pays(gp, U, k):
            mean, var = self.predict(U)
            return mean + weight * np.sqrt(var)
        K = gp.k(gp.X, U)
        a_d, a_c = self._alpha
        mean = K.T @ a_d + gp.k(self.Xc, U).T @ a_c + self.offset
        cols, ssq, V = _pruned_rows(gp, K, mean, weight, k, lambda idx: self.predict(U[idx]))
        Vc = self._block(U[cols], V)
        ssq[cols] += np.einsum("ij,ij->j", Vc, Vc)
        out = np.full(len(U), -np.inf)
        out[cols] = mean[cols] + weight * np.sqrt(np.maximum(gp.hyper.amplitude - ssq[cols], 0.0))
        return out


def _pruning_pays(gp: GaussianProcess, U: np.ndarray, k: int) -> bool:
    """Bounding sigma row block by row block beats one full solve: many inputs, many
    candidates, and not the anchor set (whose full solve is cached)."""
    return gp.n >= 2 * PRUNE_BLOCK and len(U) > 8 * k and U is not gp.anchor


def _pruned_rows(gp: GaussianProcess, K: np.ndarray, mean: np.ndarray, weight: float, k: int,
                 exact: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidates (columns of K = k(X, U)) that can be among the k largest of
    mean + weight * sigma, their partial sums of squares over every row of L, and their
    whitened cross-covariances V = L^{-1} K (see ``Posterior.shifted_top``).  ``exact(idx)``
    gives the exact (mean, var) at the candidates ``idx``, which set the threshold."""
    n, m = gp.n, K.shape[1]
    a, L, w_up = gp.hyper.amplitude, gp.L, max(weight, 0.0)
    cols, ssq, V = np.arange(m), np.zeros(m), np.empty((n, m))
    tau = None
    r0, r1 = 0, PRUNE_BLOCK
    while r0 < n:
        rhs = K[r0:r1][:, cols]
        if r0:
            rhs -= L[r0:r1, :r0] @ V[:r0]
        V[r0:r1] = gp.solve_block(r0, r1, rhs)
        ssq[cols] += np.einsum("ij,ij->j", V[r0:r1], V[r0:r1])
        if r1 < n:
            bound = mean[cols] + w_up * np.sqrt(np.maximum(a - ssq[cols], 0.0))
            if tau is None:
                best = cols[np.argsort(-bound)[: 2 * k]]
                mb, vb = exact(best)
                tau = float(np.sort(mb + weight * np.sqrt(vb))[-k])
                tau -= 1e-9 * (1.0 + abs(tau))          # rounding margin
            keep = bound >= tau
            cols, V = cols[keep], V[:, keep]
        r0, r1 = r1, min(n, 2 * r1)
    return cols, ssq, V


def _whitened_cross(gp: GaussianProcess, U: np.ndarray) -> np.ndarray:
    """L^{-1} k(X, U), from the anchored cache when U is the GP's anchor set."""
    if U is gp.anchor:
        return gp.VD
    return gp.solve(gp.k(U, gp.X).T)      # k(X, U) in Fortran order: LAPACK needs no copy


SHARE_LOGIT = (-6.0, 6.0)     # the box of logit w and u (the shared-context kernel): in [0.0025, 0.9975]


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
    return fit_and_score(kernel, X, y, start, rng, bounds, n_restarts, lengthscale_prior, groups)[0]


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
    theta0 = np.clip(np.concatenate([[np.log(start.amplitude)], ls0, share0, [np.log(start.noise)]]),
                     lo, hi)
    starts = [theta0] + [lo + rng.random(len(lo)) * (hi - lo) for _ in range(n_restarts)]
    best_theta, best_val = theta0, np.inf
    for th in starts:
        res = minimize(_posterior_objective, th, args=(kernel, S, y, lengthscale_prior, context, level),
                       jac=True, method="L-BFGS-B", bounds=box, options={"maxiter": 200})
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
