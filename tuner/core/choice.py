"""One suggestion's choice: the posterior of the moment (the usable results, the running trials
censored, a subset past ``exact_until``), the acquisition's estimate on it with the exploration
weight nu_t (paper 001 eqs. 1-3), the constraints' estimates and handler, the masks of what
may not be chosen (copies of a running trial, runs that cannot finish before the deadline), and
its maximum over the candidates (``tuner.core.maximize``)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from . import acquisition as acq
from .algorithms import Algorithm, chosen_algorithm, get_algorithm
from .censoring import Finals, Window, censored_targets, counted, predicted_variances
from .constraint_estimates import ConstraintEstimates
from .constraints import feasible
from .context import Contexts, at_context
from .exploration import Exploration
from .gp import blas_threads
from .posterior import Posterior
from .ledger import TrialLedger
from .maximize import Mask, any_of, candidate_set, maximize
from .model import CensoredModel
from .scale import ObjectiveScale
from .settings import Settings
from .space import SearchSpace
from .stops import StopRules
from .subset import choose_subset
from .trial import Trial
from .views import PosteriorView


class Chooser:
    """x_t for one optimizer, from its parts (``Optimizer`` builds it; see its docstring).

    Args:
        settings, algorithm, space, contexts, domain, window: the optimizer's.
        ledger, scale, objective, view, exploration, estimates, stops: its parts.
        n_initial: the start-up design's size.
        rng: the optimizer's random generator.
    """

    def __init__(self, *, settings: Settings, algorithm: Algorithm, space: SearchSpace,
                 contexts: Contexts | None, domain: np.ndarray | None, window: Window,
                 ledger: TrialLedger, scale: ObjectiveScale, objective: CensoredModel,
                 view: PosteriorView, exploration: Exploration, estimates: ConstraintEstimates,
                 stops: StopRules, n_initial: int, rng: np.random.Generator):
        self.settings, self.algorithm, self.space = settings, algorithm, space
        self.contexts, self.domain, self.window = contexts, domain, window
        self.ledger, self.scale, self.objective, self.view = ledger, scale, objective, view
        self.exploration, self.estimates, self.stops = exploration, estimates, stops
        self.n_initial, self.rng = n_initial, rng
        self.last_nu: float | None = None     # nu_t of the last choice
        # partial runs' predicted final values (``Optimizer.use_curves``), None: their last ones
        self.finals: Finals | None = None

    @property
    def subset_active(self) -> bool:
        return self.objective.members is not None

    def usable(self, now: float, t: int) -> tuple[float, list[Trial]]:
        return counted(self.ledger.trials, self.window, self.algorithm.pending, now, t)

    def censored(self, done: list[Trial]) -> np.ndarray:
        return censored_targets(
            self.ledger.trials,
            done,
            self.settings.mode,
            *self.scale.reward_range(),
            self.settings.research.censored.censor_at_partial,
            self.scale.warp(),
            self.finals,
        )

    def objective_view(self, done: list[Trial], y_all: np.ndarray, refit: bool = True) -> Posterior:
        """Refit if due, then the objective's posterior the algorithm's pending-trial rule asks
        for (a predicted final value enters with its variance: ``predicted_variances``)."""
        extra = None
        if self.finals is not None and self.settings.research.censored.censor_at_partial:
            extra = predicted_variances(self.ledger.trials, done, self.settings.mode,
                                        *self.scale.reward_range(), self.scale.warp(), self.finals)
        return self.view(self.objective, self.ledger.trials, self.ledger.by_id, done, y_all,
                         self.scale.targets, self.rng, refit=refit, objective=True,
                         extra_noise=extra)

    def maybe_subset(self, t: int, done: Callable[[], list[Trial]], choosing: bool) -> None:
        """Past ``exact_until`` started trials, choose the GPs' subset (``tuner.core.subset``)
        again: every ``refit_every`` started trials when a suggestion is chosen (``choosing``),
        and whenever trials registered without a choice (``suggest(config=...)``, earlier
        studies) have grown it to 1.5 x ``subset_size`` besides the running ones."""
        s = self.settings
        if s.exact_until is None or s.sliding_window or t < s.exact_until:
            return
        if self.subset_active:
            if choosing:
                due = t - self.objective.built_at >= s.refit_every
            else:
                due = len(self.objective.members) >= 1.5 * s.subset_size + len(self.ledger.live)
            if not due:
                return
        done = done()
        scores = np.full(t, np.nan)
        if done:
            scores[[tr.start_index for tr in done]] = self.scale.targets(done)
        running = np.zeros(t, dtype=bool)
        running[[tr.start_index for tr in self.ledger.live.values()]] = True
        members = choose_subset(self.view.X(self.ledger.trials), running, scores,
                                self.objective.gp_done.hyper.lengthscales, s.subset_size, self.rng)
        for model in (self.objective, *self.estimates.models):
            model.restrict(members, self.ledger.trials, t)

    @blas_threads      # every BLAS call of a suggestion on one thread (gp.blas_threads)
    def choose(self, now: float, t: int, z: np.ndarray | None = None) -> np.ndarray:
        """x_t maximizing the estimate (with a context, over x at (x, z_t): 001 §5)."""
        s, algo = self.settings, self.at_pool(len(self.ledger.live))
        m, done = self.usable(now, t)
        self.maybe_subset(t, lambda: done, choosing=True)
        self.scale.choose(done, self.objective, self.view.X, self.n_initial, self.subset_active)
        post = self.objective_view(done, self.censored(done))
        beta = self.exploration.beta_t(self.objective.gp_all, t)
        nu = self.exploration.nu(post=post, trials=self.ledger.trials,
                                 running=self.ledger.live.values(), m=m, now=now, t=t, beta=beta,
                                 bound=s.research.exploration.b_y, algorithm=algo)
        kind = algo.estimate
        if z is not None and s.research.search.new_context == "mean" and self.contexts.is_new(
                z, self.ledger.trials, done):
            nu = 0.0     # no result at z_t yet: the best guess the other contexts give
            kind = "ucb" if kind == "ei" else kind     # (the posterior mean)
        self.last_nu = nu
        C = candidate_set(self.space, self.rng, s.n_candidates, incumbents=self._incumbents(done),
                          n_local=s.research.search.n_local, domain=self.domain)
        joint = C if z is None else self.contexts.join(C, z)

        def on_configs(h: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
            """An estimate on the GP's inputs as one on configurations (at z_t, if a context)."""
            return (
                h
                if z is None
                else at_context(h, lambda U: joint if U is C else self.contexts.join(U, z))
            )

        best = self._plugin_incumbent(post, done, joint, z) if kind == "ei" else None
        f_est = on_configs(acq.estimate(kind, post, nu, joint, +1.0, self.rng, best))
        taken = any_of(self._near_running(z), self._late(now, C, z))
        if self.estimates.constraints:
            g_ests = [
                on_configs(self.estimates.estimate(j, m, now, t, joint, beta, log=kind == "ei"))
                for j in range(len(self.estimates.constraints))
            ]
            f_bound, (lo, hi) = self.scale.f_bound(), self.scale.reward_range()
            h = self.estimates.score(t, f_est, g_ests, (lo, hi - lo), self.scale.warp(),
                                     log=kind == "ei", f_bound=f_bound)
        else:
            g_ests, h = [], f_est
        sample = self.estimates.handler.g_estimate == "sample" and bool(self.estimates.constraints)
        x = maximize(h, C, self.space, smooth=algo.smooth and self.domain is None and not sample,
                     n_starts=s.research.search.n_starts,
                     discrete=s.research.search.discrete_search == "local", taken=taken,
                     joint=s.research.search.refine == "joint")
        if self.estimates.constraints:
            self.estimates.after_choice(t, x, g_ests, f_bound)
        return x

    def at_pool(self, running: int) -> Algorithm:
        """The algorithm of this suggestion: the optimizer's, or with ``algorithm: auto`` the
        one ``chosen_algorithm`` takes with ``running`` trials running."""
        name = chosen_algorithm(self.settings.algorithm, self.space.categorical_only,
                                bool(self.estimates.constraints), self.contexts is not None,
                                running)
        return self.algorithm if name == self.algorithm.name else get_algorithm(name)

    def _plugin_incumbent(self, post: Posterior, done: Sequence[Trial], joint: np.ndarray,
                          z: np.ndarray | None, k: int = 256) -> float:
        """log EI's incumbent: the largest posterior mean among the k best configurations tried
        that met every constraint (at z_t, if a context; constrained EI improves on the best
        feasible value, Gardner et al. 2014), or among the candidates while there is none."""
        if self.estimates.constraints:
            done = [tr for tr in done if feasible(tr, self.estimates.constraints)]
        X = self._incumbents(list(done), k)
        if X is None:
            return float(np.max(post.predict(joint)[0]))
        return float(np.max(post.predict(X if z is None else self.contexts.join(X, z))[0]))

    def _incumbents(self, done: list[Trial], k: int = 5) -> np.ndarray | None:
        if not done:
            return None
        order = np.argsort(-self.scale.targets(done))[:k]
        return np.vstack([done[i].x[: self.space.dim] for i in order])

    def _near_running(self, z: np.ndarray | None) -> Callable[[np.ndarray], np.ndarray] | None:
        """A mask of the configurations (at z_t) whose prior correlation k(x, x_s) / a with a
        running trial's input reaches ``running_correlation``: copies of a running trial.

        A deviation from 001, where nothing stops x_t from repeating a pending x_s: once the GP
        is sure of a region (sigma near 0 around its best mean), a UCB argmax is the same point
        at every free worker, and a pool runs one configuration many times."""
        rho = self.settings.research.search.running_correlation
        if rho is None or not self.ledger.live:
            return None
        Xr = np.vstack([tr.x for tr in self.ledger.live.values()])
        gp = self.objective.gp_done
        h = gp.hyper

        def near(U: np.ndarray) -> np.ndarray:
            J = U if z is None else self.contexts.join(U, z)
            if h.level is None:
                return (gp.k(J, Xr) / h.amplitude).max(axis=1) >= rho
            return gp.correlation_apart_from_level(J, Xr).max(axis=1) >= rho

        return near

    def _late(self, now: float, C: np.ndarray, z: np.ndarray | None) -> Mask | None:
        """With ``finish_by_deadline`` near the deadline: a mask of the configurations (at z_t)
        predicted not to finish before it (``tuner.core.deadline``)."""
        return self.stops.late(now, C, lambda U: U if z is None else self.contexts.join(U, z))
