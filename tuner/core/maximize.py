"""Maximizing an estimate h_t over a search space.

Candidates: a scrambled Sobol set (scipy.stats.qmc), Gaussian perturbations of the incumbents,
or, for a finite domain, the domain itself; every candidate is snapped to a valid configuration.
Smooth estimates (UCB-type) are then refined by L-BFGS-B (scipy) from the best candidates on the
continuous relaxation of the unit cube, with forward-difference gradients evaluated as one batch
(one triangular solve for all d + 1 points), and the refined point is snapped again.  Thompson
samples exist only on the candidate set, so they are maximized there.

With ``discrete=True`` the chosen point is then improved by a local search over the discrete
parameters (``local_search``: hill climbing over one-move neighbours, every other category, the
next int up and down), as Optuna's GPSampler searches categories and ints natively instead of
rounding a relaxed optimum once.  Written here by hand: scipy has no mixed-space local search.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.optimize import minimize

from .acquisition import EstimateFn
from .gp import blas_threads
from .space import SearchSpace

Mask = Callable[[np.ndarray], np.ndarray]     # True where an input may not be chosen


def candidate_set(space: SearchSpace, rng: np.random.Generator, n_sobol: int,
                  incumbents: np.ndarray | None = None, n_local: int = 0,
                  scale: float = 0.05, domain: np.ndarray | None = None) -> np.ndarray:
    """Candidate inputs: ``domain`` if given (finite problems), else Sobol + local perturbations."""
    if domain is not None:
        return domain
    # An integer seed, not the Generator: scipy spawns child generators from the seed sequence,
    # which the saved bit-generator state does not capture (a loaded optimizer would diverge).
    seed = int(rng.integers(2 ** 63))
    from scipy.stats import qmc   # scipy.stats costs 0.7 s to import: only on first use
    sobol = qmc.Sobol(space.dim, scramble=True, seed=seed).random(n_sobol)
    parts = [sobol]
    if incumbents is not None and len(incumbents) and n_local:
        reps = int(np.ceil(n_local / len(incumbents)))
        base = np.repeat(incumbents, reps, axis=0)[:n_local]
        parts.append(np.clip(base + scale * rng.standard_normal(base.shape), 0.0, 1.0))
    return space.snap(np.vstack(parts))


def refine(h: EstimateFn, starts: np.ndarray, step: float = 1e-5, maxiter: int = 30,
           joint: bool = True) -> tuple[np.ndarray, float]:
    """L-BFGS-B on [0, 1]^D from each start, maximizing h; returns the best (x, h(x)).

    ``joint``: all starts as one L-BFGS-B run on the sum of their values (separable, so its
    maximum is every start's own; BoTorch's ``gen_candidates_scipy`` batches restarts this
    way): one evaluation of h per step for all starts, one triangular solve.  Otherwise one
    L-BFGS-B run per start.
    """
    k, dim = starts.shape
    eye = step * np.eye(dim)
    last: list[np.ndarray] = []       # the last point evaluated and h there

    def neg(z: np.ndarray) -> tuple[float, np.ndarray]:
        X = z.reshape(-1, dim)
        P = np.clip(X[:, None, :] + eye[None], 0.0, 1.0)          # each start, moved by e_j
        vals = h(np.vstack([X, P.reshape(-1, dim)]))
        v0, vd = vals[: len(X)], vals[len(X):].reshape(len(X), dim)
        last[:] = [z.copy(), v0]
        dx = np.diagonal(P, axis1=1, axis2=2) - X
        grad = (vd - v0[:, None]) / np.where(np.abs(dx) > 0, dx, step)
        return -float(v0.sum()), -grad.ravel()

    groups = [starts] if joint else [x0[None, :] for x0 in starts]
    ends, vals = [], []
    for S in groups:
        res = minimize(neg, S.ravel(), jac=True, method="L-BFGS-B",
                       bounds=[(0.0, 1.0)] * S.size, options={"maxiter": maxiter})
        ends.append(res.x.reshape(-1, dim))
        # h at the end: L-BFGS-B's last evaluation is almost always its answer
        vals.append(last[1] if np.array_equal(last[0], res.x) else h(ends[-1]))
    X, v = np.vstack(ends), np.concatenate(vals)
    i = argmax(v)
    return X[i], float(v[i])


def argmax(values: np.ndarray) -> int:
    """Index of the largest finite value (first one on ties)."""
    v = np.where(np.isfinite(values), values, -np.inf)
    return int(np.argmax(v))


def local_search(h: EstimateFn, x: np.ndarray, space: SearchSpace,
                 max_moves: int = 20) -> np.ndarray:
    """Hill climbing from the valid point ``x``: move to the best of its one-move discrete
    neighbours (``SearchSpace.neighbours``, evaluated as one batch) while that improves h."""
    value = float(h(x[None, :])[0])
    for _ in range(max_moves):
        N = space.neighbours(x)
        if not len(N):
            break
        vals = h(N)
        i = argmax(vals)
        if not vals[i] > value:
            break
        x, value = N[i], float(vals[i])
    return x


def excluding(h: EstimateFn, taken: Mask) -> EstimateFn:
    """``h`` with -inf at the inputs ``taken`` marks (a mask per row)."""
    def g(U: np.ndarray) -> np.ndarray:
        return np.where(taken(U), -np.inf, h(U))
    return g


def any_of(*masks: Mask | None) -> Mask | None:
    """The union of the masks given (None: none), or None if there is none."""
    given = [m for m in masks if m is not None]
    if len(given) <= 1:
        return given[0] if given else None
    return lambda U: np.logical_or.reduce([m(U) for m in given])


@blas_threads
def maximize(h: EstimateFn, C: np.ndarray, space: SearchSpace, smooth: bool,
             n_starts: int = 3, discrete: bool = False,
             taken: Mask | None = None,
             joint: bool = True) -> np.ndarray:
    """Best snapped input for ``h`` over candidates ``C`` (+ L-BFGS-B refinement if smooth,
    + a local search over the discrete parameters if ``discrete`` and smooth), never one that
    ``taken`` marks (a mask per row: e.g. a copy of a running trial), unless every candidate is."""
    top = getattr(h, "top", None)     # estimates that can skip hopeless candidates (Shifted)
    k = max(n_starts, 1) if smooth else 1
    out = taken(C) if taken is not None else np.zeros(len(C), dtype=bool)
    if out.all():
        out[:], taken = False, None
    if top is not None and smooth and out.any():
        # fresh candidates (no cached anchor set): score only those not taken, so the k best
        # set the pruning threshold instead of the k + |taken| best
        vals = np.full(len(C), -np.inf)
        vals[~out] = top(C[~out], k)
    else:
        vals = top(C, k + int(out.sum())) if top is not None else h(C)
    vals = np.where(out, -np.inf, vals)
    best = argmax(vals)
    if not smooth or n_starts <= 0:
        return C[best]
    order = np.argsort(-np.where(np.isfinite(vals), vals, -np.inf))[:n_starts]
    x, value = refine(h, C[order], joint=joint)   # on h itself: L-BFGS-B needs finite values
    x_snapped = space.snap(x)[0]
    if not np.array_equal(x_snapped, x):
        value = float(h(x_snapped[None, :])[0])
    if taken is not None:             # a refined point that is taken falls back to C[best]
        h = excluding(h, taken)
        if taken(x_snapped[None, :])[0]:
            value = -np.inf
    x = x_snapped if value >= vals[best] else C[best]
    return local_search(h, x, space) if discrete and space.discrete else x
