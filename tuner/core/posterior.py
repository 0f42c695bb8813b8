"""The posterior of a GP (paper 001 eq. 1): its mean from one GP's targets and its variance from
the same GP or one over more inputs (hard censoring, hallucination), and the top k of
mean + weight x sigma over many candidates without the full solve (``shifted_top``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .gp import GaussianProcess, blas_threads

PRUNE_BLOCK = 128      # first row block of Posterior.shifted_top


@dataclass
class Posterior:
    """Mean from ``mean_gp`` with targets ``y``; variance from ``var_gp`` (same GP or a
    superset)."""

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
        V = whitened_cross(gp, U)
        if self._w is None:
            mean = np.zeros(len(U))
        else:
            Vm = V if self.mean_gp is gp else whitened_cross(self.mean_gp, U)
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
        if not pruning_pays(gp, U, k):
            mean, var = self.predict(U)
            return mean + weight * np.sqrt(var)
        K = gp.k(gp.X, U)
        mean = self._mean_at(K, U)

        def exact(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            Vb = gp.solve(K[:, idx])
            return mean[idx], np.maximum(gp.hyper.amplitude - np.einsum("ij,ij->j", Vb, Vb), 0.0)

        cols, ssq, _ = pruned_rows(gp, K, mean, weight, k, exact)
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


def pruning_pays(gp: GaussianProcess, U: np.ndarray, k: int) -> bool:
    """Bounding sigma row block by row block beats one full solve: many inputs, many
    candidates, and not the anchor set (whose full solve is cached)."""
    return gp.n >= 2 * PRUNE_BLOCK and len(U) > 8 * k and U is not gp.anchor


def pruned_rows(gp: GaussianProcess, K: np.ndarray, mean: np.ndarray, weight: float, k: int,
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


def whitened_cross(gp: GaussianProcess, U: np.ndarray) -> np.ndarray:
    """L^{-1} k(X, U), from the anchored cache when U is the GP's anchor set."""
    if U is gp.anchor:
        return gp.VD
    return gp.solve(gp.k(U, gp.X).T)      # k(X, U) in Fortran order: LAPACK needs no copy
