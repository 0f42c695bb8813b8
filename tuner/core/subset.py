"""Which trials the GPs are built on once a study is large: a BO-aware subset of data.

Up to ``Settings.exact_until`` started trials every trial enters the GPs (the exact posterior
of paper 001 eq. 1).  Past it, a factorization over every trial would cost O(n^2) memory and
O(n^2) per suggestion, O(n^3) per refit, so the GPs are built on at most ``subset_size``
finished trials plus every running one, chosen (written here by hand: no library selects
data for BO):

* every running trial: the censored entries that make a batch of suggestions coherent and
  whose sigma enters nu_t (001 eq. 2);
* half of the rest: the trials nearest (in lengthscale-scaled distance) to the best results
  so far, where the acquisition's maximum lies once the space is explored (the local model of
  TuRBO, Eriksson et al. 2019, without restricting the candidates to a region);
* the other half: a uniform random sample of the remaining trials, which keeps the model's
  global shape and its view of which regions were already sampled (a subset-of-data GP,
  Rasmussen & Williams 2006 §8.3.1).

The subset is chosen again every ``refit_every`` started trials; in between, new trials are
appended to it (one Cholesky row each), so the posterior's cost no longer grows with n.
"""

from __future__ import annotations

import numpy as np

N_INCUMBENTS = 5     # the best results whose neighbourhoods the local half covers


def choose_subset(X: np.ndarray, running: np.ndarray, scores: np.ndarray, lengthscales: np.ndarray,
                  size: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted row indices of ``X`` (every started trial's input) to build the GPs on.

    ``running``: a mask of the trials that must stay (running); ``scores``: each trial's
    normalized objective, higher better, NaN where it has no usable result; ``size``: how many
    of the other trials to keep.
    """
    rows = np.arange(len(X))
    must, rest = rows[running], rows[~running]
    if len(rest) <= size:
        return rows
    usable = rest[np.isfinite(scores[rest])]
    n_local = min(size // 2, len(rest))
    local = np.zeros(0, dtype=int)
    if len(usable) and n_local:
        top = usable[np.argsort(-scores[usable], kind="stable")[:N_INCUMBENTS]]
        Z = X / lengthscales
        dist = np.full(len(rest), np.inf)
        for i in top:
            dist = np.minimum(dist, ((Z[rest] - Z[i]) ** 2).sum(axis=1))
        local = rest[np.argpartition(dist, n_local - 1)[:n_local]]
    others = np.setdiff1d(rest, local, assume_unique=True)
    spread = rng.choice(others, size - len(local), replace=False)
    return np.sort(np.concatenate([must, local, spread]))
