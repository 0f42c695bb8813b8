"""Soft censoring: the usable results at the GP's noise and every censored entry (a running
trial, a result censored for good) at a noise of its own, appended to the results' factor as
one block (the product's deviation from paper 001 eq. 1, ``Settings.research.censored``)."""

from __future__ import annotations

import numpy as np
from scipy.linalg import cholesky, solve_triangular

from .gp import JITTER, GaussianProcess, blas_threads
from .posterior import pruned_rows, pruning_pays, whitened_cross


class SoftCensoredPosterior:
    """Posterior with usable results at the GP's noise lambda and censored entries at their
    own, larger noise lambda_c (soft censoring; the product's deviation from 001 eq. 1, which
    gives every entry the same lambda).

    The usable results keep their incrementally grown factor L_d (``gp``); the p censored
    entries are appended as one block of the joint Cholesky factor
    [[L_d, 0], [A^T, L_S]], A = L_d^{-1} k(X_d, X_c), L_S L_S^T = k(X_c, X_c) + Lambda_c - A^T A
    (Lambda_c = lambda_c I, or a diagonal of one noise per entry),
    at O(n^2 p) per suggestion (p = running plus censored-for-good trials).
    """

    def __init__(self, gp: GaussianProcess, y: np.ndarray, Xc: np.ndarray, yc: np.ndarray,
                 noise_c: float | np.ndarray):
        self.var_gp = self.mean_gp = gp
        self.offset = 0.0          # a constant prior mean (as Posterior.offset)
        self.Xc = np.asarray(Xc, dtype=float).reshape(-1, gp.dim)
        # one noise for every censored entry, or one each (a predicted final's variance added)
        self.noise_c = (float(noise_c) if np.ndim(noise_c) == 0
                        else np.asarray(noise_c, dtype=float))
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
            S[np.diag_indices_from(S)] += JITTER * 1e4 * (gp.hyper.amplitude
                                                          + float(np.max(self.noise_c)))
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
        Vd = whitened_cross(gp, U) if gp.n else np.zeros((0, len(U)))
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
            var = (
                gp.hyper.amplitude
                - np.einsum("ij,ij->j", self.A, self.A)
                - np.einsum("ij,ij->j", Vc, Vc)
            )
            self._censored_var = np.maximum(var, 0.0)
        return self._censored_var

    @blas_threads
    def shifted_top(self, U: np.ndarray, weight: float, k: int) -> np.ndarray:
        """As ``Posterior.shifted_top``: the rows of L_d bound sigma from above (the censored
        block only lowers it), and survivors get the block's rows at the end."""
        gp = self.var_gp
        if not pruning_pays(gp, U, k):
            mean, var = self.predict(U)
            return mean + weight * np.sqrt(var)
        K = gp.k(gp.X, U)
        a_d, a_c = self._alpha
        mean = K.T @ a_d + gp.k(self.Xc, U).T @ a_c + self.offset
        cols, ssq, V = pruned_rows(gp, K, mean, weight, k, lambda idx: self.predict(U[idx]))
        Vc = self._block(U[cols], V)
        ssq[cols] += np.einsum("ij,ij->j", Vc, Vc)
        out = np.full(len(U), -np.inf)
        out[cols] = mean[cols] + weight * np.sqrt(np.maximum(gp.hyper.amplitude - ssq[cols], 0.0))
        return out
