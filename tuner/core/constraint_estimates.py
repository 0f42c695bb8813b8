"""The constraints of one optimizer: a censored GP per constraint (paper 004 §5, with elapsed-time
bounds for run times), its estimate g_t for a suggestion (an LCB, the algorithm's estimate, the
probability of feasibility, or the round's sample), and the handler (``tuner.core.constraints``)
that trades the objective against them and keeps its multipliers."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import acquisition as acq
from .algorithms import Algorithm
from .censoring import constraint_view
from .constraints import SHIFTS, Constraint, Handler, arrived_since, feasible, mean_run_time, sample
from .exploration import Exploration
from .posterior import Posterior
from .ledger import TrialLedger
from .model import CensoredModel
from .settings import Settings
from .space import SearchSpace
from .trial import Trial
from .views import PosteriorView

Estimate = Callable[[np.ndarray], np.ndarray]
Sampler = Callable[[list, int], "np.ndarray | list[float]"]


class ConstraintEstimates:
    """g_t of each constraint and the handler's score of a candidate.

    Args:
        settings: the optimizer's settings.
        constraints: the parsed constraints.
        models: one censored GP model per constraint.
        handler: the constraint handler (``Settings.constraint_handler``).
        samplers: for each observable constraint metric, its round-t sample function (SCGP).
        ledger, view, exploration: the optimizer's trials, posterior view and exploration weight.
        space: the search space (to decode a candidate for a sampler).
        algorithm: the optimizer's algorithm (its kind of estimate).
        rng: the optimizer's random generator (Thompson draws of g).
    """

    def __init__(self, settings: Settings, constraints: list[Constraint],
                 models: list[CensoredModel], handler: Handler, samplers: Mapping[str, Sampler],
                 ledger: TrialLedger, view: PosteriorView, exploration: Exploration,
                 space: SearchSpace, algorithm: Algorithm, rng: np.random.Generator):
        self.settings, self.constraints, self.models, self.handler = (settings, constraints, models,
                                                                      handler)
        self.samplers = dict(samplers)
        need = [c.metric for c in constraints if c.observable]
        if sorted(self.samplers) != sorted(need):
            raise ValueError(f"samplers must give one function per observable constraint metric "
                             f"{need} (got {sorted(self.samplers)})")
        self.ledger, self.view, self.exploration = ledger, view, exploration
        self.space, self.algorithm, self.rng = space, algorithm, rng
        self.seen: set[int] = set()     # trials whose constraint values reached the handler

    def start_round(self, t: int) -> None:
        """Feed the handler the constraint values that arrived since the previous round, in
        arrival order (004 App. C: Q_{t+1} uses the costs revealed at round t)."""
        arrived, found = arrived_since(self.ledger.trials, self.seen, self.constraints)
        self.handler.feasible_found = self.handler.feasible_found or found
        self.handler.start_round(t, arrived)

    def observe_samples(self, trial: Trial, t: int, f_bound: Callable[[], float]) -> None:
        """An observable constraint's round-t sample at x_t, known before the run (003 §4); for
        SCGP its queue step, which needs only that sample (003 Alg. 2 line 7), whoever chose
        x_t (the handler, the start-up design or a user's config)."""
        for c in self.constraints:
            if c.observable:
                trial.metrics[c.metric] = float(sample(self.samplers, c, t, [trial.config])[0])
        if self.handler.g_estimate == "sample":
            self.handler.after_choice(
                t, [float(c.g(trial.metrics[c.metric])) for c in self.constraints], f_bound()
            )

    def posterior(self, j: int, m: float, now: float, refit: bool = True) -> Posterior:
        """Constraint j's posterior of g at ``now`` with window ``m`` (refit if due)."""
        c, s = self.constraints[j], self.settings
        done_c, yc_all = constraint_view(c, self.ledger.trials, m, s.window_unit, now,
                                         s.research.censored.use_elapsed_bound and c.runtime,
                                         -np.inf if self.view.believes_pending_g else 0.0)
        post = self.view(self.models[j], self.ledger.trials, self.ledger.by_id, done_c, yc_all,
                         lambda trs: np.array([c.observed(tr) for tr in trs], dtype=float),
                         self.rng, refit=refit)
        if c.log and s.research.budget.budget_bound == "mean":
            post = mean_run_time(post)
        return post

    def targets(self, j: int, m: float, now: float) -> np.ndarray:
        """c~_{s,t} of every started trial for constraint j (004 §5, plus elapsed-time bounds)."""
        c, s = self.constraints[j], self.settings
        return constraint_view(c, self.ledger.trials, m, s.window_unit, now,
                               s.research.censored.use_elapsed_bound and c.runtime)[1]

    def estimate(self, j: int, m: float, now: float, t: int, C: np.ndarray, beta_t: float,
                 log: bool = False) -> Estimate:
        """g_t of constraint j: the LCB, the algorithm's kind of estimate, the probability of
        feasibility (``log``: its log) or the round's sample; ``beta_t``: the objective's."""
        c, s = self.constraints[j], self.settings
        if self.handler.g_estimate == "sample":
            return lambda U: np.asarray(
                c.g(sample(self.samplers, c, t, [self.space.decode(u) for u in U])), dtype=float
            )
        post_g = self.posterior(j, m, now)
        beta_g = s.research.exploration.beta_g
        beta = float(beta_g) if beta_g is not None else beta_t
        nu_g = self.exploration.nu(post=post_g, trials=self.ledger.trials,
                                   running=self.ledger.live.values(), m=m, now=now, t=t, beta=beta,
                                   bound=s.research.exploration.b_c)  # v_t^g, 004 §5
        if self.handler.g_estimate in SHIFTS:
            return acq.shifted(post_g, SHIFTS[self.handler.g_estimate] * nu_g)
        if self.handler.g_estimate == "pof":
            return acq.probability_feasible(post_g, log)
        return acq.estimate(self.algorithm.estimate, post_g, nu_g, C, -1.0, self.rng)

    def score(self, t: int, f_est: Estimate, g_ests: Sequence[Estimate], scale: tuple[float, float],
              warp: Any, log: bool, f_bound: float) -> Estimate:
        """The handler's score of candidates, the objective on its own scale (``scale``: offset
        and range of the targets, ``warp`` their output warp), or log EI plus the log
        probabilities of feasibility (``log``)."""
        handler = self.handler
        if not handler.normalized_f and warp is not None:
            f_obj = lambda U: warp.inverse(f_est(U))  # noqa: E731
        else:
            f_obj = f_est
        lo, width = (0.0, 1.0) if handler.normalized_f else scale

        def h(U: np.ndarray) -> np.ndarray:
            if log:
                return handler.log_score(f_est(U), [g(U) for g in g_ests])
            return handler.score(t, lo + width * f_obj(U), [g(U) for g in g_ests], f_bound)

        return h

    def after_choice(
        self, t: int, x: np.ndarray, g_ests: Sequence[Estimate], f_bound: float
    ) -> None:
        """The handler's step once x_t is chosen (SCGP's is in ``observe_samples``)."""
        if self.handler.g_estimate != "sample":
            self.handler.after_choice(t, [float(g(x[None, :])[0]) for g in g_ests], f_bound)

    def state_dict(self) -> dict[str, Any]:
        return {"constraint_models": [m.state_dict() for m in self.models],
                "handler": self.handler.state_dict(), "seen_constraint": sorted(self.seen)}

    def load_state(self, state: Mapping[str, Any], trials: Sequence[Trial]) -> None:
        for model, st in zip(self.models, state["constraint_models"]):
            model.load_state(st, trials)
        self.handler.load_state(state["handler"])
        self.seen = set(state["seen_constraint"])
        self.handler.feasible_found = any(feasible(tr, self.constraints) for tr in trials
                                          if tr.trial_id in self.seen)
