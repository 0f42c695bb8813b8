"""Zero-mean Gaussian-process regression with a Cholesky factor that grows one row at a time.

Posterior (paper 001 eq. 1, with lambda = ``noise``):
    mu(x)      = k(x)^T (K + lambda I)^{-1} y
    sigma^2(x) = k(x, x) - k(x)^T (K + lambda I)^{-1} k(x)

Targets are passed per call rather than stored: with censored feedback they change every time a
result arrives or a window closes, while the inputs (every started trial) only grow.  Adding an
input costs O(n^2) (``append``: one triangular solve for the new row of L); a full O(n^3)
factorization happens only when the hyperparameters change (``set_hyperparameters``).

The posterior a suggestion uses is ``tuner.core.posterior`` (and ``soft_censoring``); the
hyperparameters' fit by marginal likelihood is ``tuner.core.marginal_likelihood``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, TypeVar

import numpy as np
from scipy.linalg import cholesky, lapack
from threadpoolctl import ThreadpoolController

from .kernels import Kernel

JITTER = 1e-10
BLAS_THREADS = 1

_F = TypeVar("_F", bound=Callable)
_BLAS = ThreadpoolController()      # created after numpy and scipy.linalg loaded their BLAS


def blas_threads(fn: _F) -> _F:
    """Run ``fn`` with ``BLAS_THREADS`` BLAS threads (numpy's and scipy's OpenBLAS).

    The core's matrices are small (n <= a few thousand) and its solves have few right-hand
    sides; there OpenBLAS threads cost more than they give, and far more when the cores are
    busy with the trials being tuned (measured on 2 shared cores, n = 2000: a 4-column
    triangular solve 1.5 ms with one thread vs 13 ms with two; a 200-point marginal-likelihood
    evaluation 2.5 ms vs 46 ms; scripts/bench/bench_latency.py).  Numbers only change in the last
    bits.
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

    def log_det(self) -> float:
        """log det(K + lambda I)."""
        return float(2.0 * np.log(np.diag(self.L)).sum()) if self.n else 0.0
