"""Stationary ARD kernels: k(x, x') = a * rho(r), r^2 = sum_j ((x_j - x'_j) / l_j)^2.

Each kernel gives ``rho(r2)`` and ``drho(r2)`` with
``d k / d log l_j = a * drho(r2) * ((x_j - x'_j) / l_j)^2``, which is all the marginal
likelihood gradient needs (Rasmussen & Williams 2006, eq. 5.9).
"""

from __future__ import annotations

import numpy as np

_SQRT5 = np.sqrt(5.0)


# Up to this many input columns scipy's cdist (one pass, no cancellation) is faster than the
# GEMM expansion |a|^2 - 2 a.b + |b|^2, which passes five times over the n x m result
# (docs/research/notes/scale.md, "Kernel evaluations").
CDIST_MAX_DIM = 5


def scaled_sqdist(X1: np.ndarray, X2: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
    """Squared distances between rows of X1 and X2 after dividing by the lengthscales (a new
    array, which the kernels overwrite in place)."""
    A = X1 / lengthscales
    B = X2 / lengthscales
    if A.shape[1] <= CDIST_MAX_DIM and A.size and B.size:
        from scipy.spatial.distance import cdist   # not at import: `tuner --help` loads no scipy
        return cdist(A, B, "sqeuclidean")
    d2 = A @ B.T                    # in place from here on: these matrices are the big ones
    d2 *= -2.0
    d2 += np.einsum("ij,ij->i", A, A)[:, None]
    d2 += np.einsum("ij,ij->i", B, B)[None, :]
    return np.maximum(d2, 0.0, out=d2)


def context_sqdist(Z1: np.ndarray, Z2: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
    """``scaled_sqdist`` of the context columns; a single column (row) when every row of Z2
    (of Z1) is one context, as for the candidates of one suggestion, broadcasting against the
    configuration's part."""
    if len(Z2) > 1 and (Z2 == Z2[0]).all():
        return scaled_sqdist(Z1, Z2[:1], lengthscales)
    if len(Z1) > 1 and (Z1 == Z1[0]).all():
        return scaled_sqdist(Z1[:1], Z2, lengthscales)
    return scaled_sqdist(Z1, Z2, lengthscales)


class Kernel:
    """Base class of stationary ARD kernels (amplitude times a correlation function).

    With ``n_context`` > 0 the last ``n_context`` input columns are a context (paper 001 §5) and
    a ``share`` w in [0, 1] mixes in the kernel without them: k = a (w rho(r_x) + (1 - w) rho(r)),
    r_x the distance over the configuration's columns alone.  For the SE kernel this is
    k_x (w + (1 - w) k_z): a part shared by every context and a context-specific part
    (``research.context_kernel: shared``; w = 0 is the paper's product kernel).  A ``level``
    u in [0, 1) adds a level of each context that no configuration changes,
    k = a ((1 - u) (w rho(r_x) + (1 - w) rho(r)) + u rho(r_z))  (``context_kernel: shared-level``):
    g(z, x) = h(z) + f(z, x) with h and f independent GPs; k(x, x) stays a.
    """

    name = "kernel"
    n_context = 0

    def rho(self, r2: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """rho(r) at r^2 = ``r2``; ``out`` (may be ``r2`` itself) receives it: the kernel
        matrices are the large arrays of a suggestion, and each temporary costs a pass and
        fresh pages."""
        raise NotImplementedError

    def drho(self, r2: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def rho_and_drho(self, r2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Both at once (the marginal-likelihood gradient needs both; kernels share the work)."""
        return self.rho(r2), self.drho(r2)

    def __call__(self, X1: np.ndarray, X2: np.ndarray, amplitude: float,
                 lengthscales: np.ndarray, share: float | None = None,
                 level: float | None = None) -> np.ndarray:
        if share is None or not self.n_context:
            r2 = scaled_sqdist(X1, X2, lengthscales)
            K = self.rho(r2, out=r2)
        else:   # r^2 = r_x^2 + r_z^2: the configuration's and the context's parts apart
            c = -self.n_context
            K = self.mixed(scaled_sqdist(X1[:, :c], X2[:, :c], lengthscales[:c]),
                           context_sqdist(X1[:, c:], X2[:, c:], lengthscales[c:]), share, level)
        K *= amplitude
        return K

    def mixed(self, rx2: np.ndarray, rz2: np.ndarray, share: float,
              level: float | None = None) -> np.ndarray:
        """w rho(r_x) + (1 - w) rho(r), r^2 = r_x^2 + r_z^2 (``rz2`` may broadcast), then the
        context level if any; overwrites ``rx2`` (a fresh array in ``__call__``), as
        ``rho(r2, out=r2)`` does there."""
        u = level or 0.0
        r2 = rx2 + rz2
        K = self.rho(r2, out=r2)
        K *= (1.0 - u) * (1.0 - share)
        K += (1.0 - u) * share * self.rho(rx2, out=rx2)
        if u:
            K += u * self.rho(rz2)
        return K

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SquaredExponential(Kernel):
    """SE kernel rho(r) = exp(-r^2 / 2) (paper 001 App. C: SE for all experiments)."""

    name = "se"

    def rho(self, r2: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out = np.multiply(r2, -0.5, out=out)
        return np.exp(out, out=out)

    def drho(self, r2: np.ndarray) -> np.ndarray:
        return np.exp(-0.5 * r2)

    def rho_and_drho(self, r2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.exp(-0.5 * r2)
        return e, e

    def mixed(self, rx2: np.ndarray, rz2: np.ndarray, share: float,
              level: float | None = None) -> np.ndarray:
        """k_x (w + (1 - w) k_z): rho(r) = rho(r_x) rho(r_z) for the SE kernel, so one
        exponential of the full size instead of two; overwrites ``rx2``."""
        u = level or 0.0
        K = self.rho(rx2, out=rx2)
        rho_z = self.rho(rz2)
        factor = share + (1.0 - share) * rho_z   # one column when the rows share a context
        if u:
            factor *= 1.0 - u
        K *= factor
        if u:
            K += u * rho_z
        return K


class Matern52(Kernel):
    """Matern-5/2 kernel rho(r) = (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r)."""

    name = "matern52"

    def rho(self, r2: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        s = np.sqrt(r2)
        s *= _SQRT5                            # sqrt5 r
        lin = 1.0 + s
        out = np.multiply(r2, 5.0 / 3.0, out=out)
        out += lin
        np.negative(s, out=s)
        out *= np.exp(s, out=s)
        return out

    def drho(self, r2: np.ndarray) -> np.ndarray:
        r = np.sqrt(r2)
        return 5.0 / 3.0 * (1.0 + _SQRT5 * r) * np.exp(-_SQRT5 * r)

    def rho_and_drho(self, r2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = np.sqrt(r2)
        e = np.exp(-_SQRT5 * r)
        lin = 1.0 + _SQRT5 * r
        return (lin + 5.0 / 3.0 * r2) * e, 5.0 / 3.0 * lin * e


KERNELS: dict[str, type[Kernel]] = {"se": SquaredExponential, "matern52": Matern52}


def make_kernel(name: str, n_context: int = 0) -> Kernel:
    """The kernel ``name``; ``n_context``: its last input columns are a context whose part is
    mixed with a shared one (``Kernel``)."""
    if name not in KERNELS:
        raise ValueError(f"kernel must be one of {sorted(KERNELS)} (got {name!r})")
    kernel = KERNELS[name]()
    kernel.n_context = int(n_context)
    return kernel
