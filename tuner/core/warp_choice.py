"""``output_warp: none-or-copula`` and ``tail-or-copula``: the rank warp (the copula) or a plainer
target (none, or the tail warp), chosen by which one's GP ranks held-out results better among
the better half; ``auto`` is one of the two (``warp_rule``).  Not from the papers (a deviation
of the study default; docs/research/notes/method.md "Choosing the warp by held-out ranks").

The evidence cannot choose: a warp fitted to the data makes them look Gaussian by construction
(the evidence with the warp's Jacobian picked the warp on every problem).  Ranks can: the warp
is monotone, so the leave-one-out posterior means of the GP on the plain targets and of the GP
on the warped ones are compared on one footing, by their Spearman correlation with the results
at or above the median (Rasmussen & Williams 2006, eq. 5.12, for the leave-one-out means in
closed form; the hyperparameters of each fit to all the results, as the optimizer fits them).
The better half because the search is decided there (and, measured, it chose better than all
the results: docs/research/notes/method.md).
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import ConstantInputWarning, spearmanr

from .gp import GaussianProcess, HyperBounds, Hyperparameters
from .marginal_likelihood import fit_hyperparameters
from .kernels import Kernel

WARP_CHOICE_FROM = 20         # the first choice once this many usable results are in (half of them
                              # ranked: fewer, and the choice flips from one result to the next)
WARP_CHOICE_EVERY = 1.25      # decide again once the usable results grew by this factor
WARP_CHOICE_RHO = 0.8         # the plain GP only where it ranks the better half at least this well
# the held-out rank correlation by which one choice must beat the other
WARP_MARGIN = 0.1


def loo_means(kernel: Kernel, hyper: Hyperparameters, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """mu_{-i} = y_i - [K^-1 y]_i / [K^-1]_ii (R&W eq. 5.12), K + lambda I factorized as the
    GP factorizes it (``GaussianProcess.reset``, with its jitter fallback)."""
    gp = GaussianProcess(kernel, hyper)
    gp.reset(X)
    Linv = gp.solve(np.eye(len(y)))
    Kinv = Linv.T @ Linv
    return y - (Kinv @ y) / np.diag(Kinv)


def loo_rank_score(kernel: Kernel, X: np.ndarray, y: np.ndarray, start: Hyperparameters,
                   rng: np.random.Generator, bounds: HyperBounds, restarts: int, prior: bool,
                   groups: np.ndarray | None, centre: bool) -> float:
    """Spearman's rho between the leave-one-out means and ``y`` over the results at or above
    the median, with the hyperparameters fit to all of ``y`` (``centre``d on their mean, as the
    GP does with ``prior_mean: mean``)."""
    y = y - y.mean() if centre else y
    hyper = fit_hyperparameters(kernel=kernel, X=X, y=y, start=start, rng=rng, bounds=bounds,
                                n_restarts=restarts, lengthscale_prior=prior, groups=groups)
    mu = loo_means(kernel, hyper, X, y)
    top = y >= np.median(y)
    with warnings.catch_warnings():     # tied top scores (a plateau): rho is nan, read below
        warnings.simplefilter("ignore", ConstantInputWarning)
        rho = spearmanr(mu[top], y[top])[0]
    return float(rho) if np.isfinite(rho) else -1.0


CHOOSING_RULES = ("none-or-copula", "tail-or-copula")


def warp_rule(output_warp: str, constrained: bool, contextual: bool) -> str:
    """``output_warp`` as applied: ``auto`` is ``tail-or-copula`` in a search with neither a
    constraint nor a context, ``none-or-copula`` in one with either (docs/research/notes/method.md
    "Tail or copula"); any other value is itself."""
    if output_warp != "auto":
        return output_warp
    return "none-or-copula" if constrained or contextual else "tail-or-copula"


def prefer_copula(rule: str, kernel: Kernel, X: np.ndarray, base: np.ndarray, copula: np.ndarray,
                  start: Hyperparameters, rng: np.random.Generator,
                  bounds: tuple[HyperBounds, HyperBounds], restarts: int, prior: bool,
                  groups: np.ndarray | None, centre: bool, margin: float) -> bool:
    """Whether to take the copula's targets ``copula`` over the plainer ``base`` (``bounds``: the
    two fits' boxes, base first), by the GPs' held-out rank correlations:

    - ``none-or-copula`` (``base`` the plain targets): the copula unless the plain GP ranks the
      better half at least ``WARP_CHOICE_RHO`` well and better than the copula's by more than
      ``margin`` (on noisy training runs neither ranks the crowded top, and the copula's other
      gain, a search not drawn to the diverged runs, decides);
    - ``tail-or-copula`` (``base`` the tail warp's, which already keeps the search off diverged
      runs): the copula only where its GP ranks better by more than ``margin``."""
    plain = loo_rank_score(kernel=kernel, X=X, y=base, start=start, rng=rng, bounds=bounds[0],
                           restarts=restarts, prior=prior, groups=groups, centre=centre)
    warped = loo_rank_score(kernel=kernel, X=X, y=copula, start=start, rng=rng, bounds=bounds[1],
                            restarts=restarts, prior=prior, groups=groups, centre=centre)
    if rule == "tail-or-copula":
        return warped > plain + margin
    return not (plain >= WARP_CHOICE_RHO and plain > warped + margin)
