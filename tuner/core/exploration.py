"""The exploration weight of one suggestion: beta_t of the schedule in force (paper 002
Thms 1-2; paper 001's formula under eq. 2) and the delay term of paper 001 eq. 2,

    nu_t = beta_t + B * sum of sigma_{t-1}(x_s) over the pending trials s in the window,

(v_t^f and v_t^g of paper 004 §5 with the bounds B_r, B_c).  The baselines use beta_t alone."""

from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence

import numpy as np

from . import acquisition as acq
from .algorithms import Algorithm
from .censoring import in_last_window, pending_in_window
from .gp import GaussianProcess
from .posterior import Posterior
from .settings import Settings
from .trial import Trial


def make_beta(s: Settings, dim: int, domain_size: int | None) -> Callable[[int, float], float]:
    """beta(t, information gain) of ``research.beta_schedule``."""
    if s.research.exploration.beta_schedule == "constant":
        return acq.beta_constant(s.beta)
    if s.research.exploration.beta_schedule == "srinivas-finite":
        return acq.beta_srinivas_finite(domain_size if domain_size is not None else 1000**dim,
                                        s.research.exploration.delta)
    if s.research.exploration.beta_schedule == "srinivas-continuous":
        return acq.beta_srinivas_continuous(dim, s.research.exploration.delta)
    return acq.beta_sdf(b_y=s.research.exploration.b_y, delta=s.research.exploration.delta)


class Exploration:
    """beta_t and nu_t for one optimizer (its settings, algorithm and window unit)."""

    def __init__(self, settings: Settings, algorithm: Algorithm, unit: str, dim: int,
                 domain_size: int | None):
        self.settings, self.algorithm, self.unit = settings, algorithm, unit
        self._beta = make_beta(settings, dim, domain_size)

    def beta_t(self, gp_all: GaussianProcess, t: int) -> float:
        """beta of query t (0-based: the paper's round t + 1), with the information gain of the
        GP over every started trial."""
        info_gain = 0.5 * (gp_all.log_det() - gp_all.n * math.log(gp_all.hyper.noise))
        return self._beta(t + 1, info_gain)

    def nu(self, post: Posterior, trials: Sequence[Trial], running: Iterable[Trial], m: float,
           now: float, t: int, beta: float, bound: float,
           algorithm: Algorithm | None = None) -> float:
        """nu_t = beta_t + bound * sum of sigma over pending trials in the window (eq. 2);
        ``running``: the running trials among ``trials`` (only they can be pending);
        ``algorithm``: this suggestion's, if not the optimizer's (``algorithm: auto``)."""
        if not (algorithm or self.algorithm).delay_bonus:
            return beta
        if self.settings.research.exploration.nu_terms == "pending":
            terms = [tr for tr in running if pending_in_window(tr, m, self.unit, now, t)]
        else:
            terms = [tr for tr in trials if in_last_window(tr, m, self.unit, now, t)]
        if not terms:
            return beta
        sigma = post.std(np.vstack([tr.x for tr in terms]))
        weight = bound * self.lam(post) ** -self.settings.research.exploration.delay_lambda_power
        return acq.exploration_weight(beta, sigma, weight)

    def lam(self, post: Posterior) -> float:
        """lambda of 001's analysis (kernel scaled to k(x, x) = 1) for the censored entries:
        ``censor_noise`` (soft) or the fitted noise / amplitude (hard)."""
        if self.settings.research.censored.censoring == "soft":
            return float(self.settings.research.censored.censor_noise)
        hyper = post.var_gp.hyper
        return float(hyper.noise / hyper.amplitude)
