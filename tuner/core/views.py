"""The posterior one suggestion uses for one model (the objective or a constraint): a refit if
one is due, then the view the algorithm's rule for pending trials asks for (censored, ignored or
hallucinated, 001 §6), with hard or soft censoring, over every trial or the last W
(RPOL-SWUCB's sliding window, 004 §6), and an optional constant prior mean."""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from .algorithms import Algorithm
from .fit_job import Pool
from .posterior import Posterior
from .model import CensoredModel, soft_view
from .settings import Settings
from .trial import Status, Trial

Targets = Callable[[list[Trial]], np.ndarray]


class PosteriorView:
    def __init__(self, settings: Settings, algorithm: Algorithm, dim: int, budgeted: bool = False):
        self.settings, self.algorithm, self.dim = settings, algorithm, dim
        # a constraint is a budget or on run time (``Constraint.budget``): ``running_objective``
        # "auto" keeps eq. 1's minimum there (``_soft``)
        self.budgeted = budgeted
        self.fit_pool: Pool | None = None    # where deferred fits run (``Optimizer.run_fits_in``)

    def __call__(self, model: CensoredModel, trials: Sequence[Trial], by_id: Mapping[int, Trial],
                 done: list[Trial], y_all: np.ndarray, targets: Targets, rng: np.random.Generator,
                 refit: bool = True, objective: bool = False,
                 extra_noise: np.ndarray | None = None) -> Posterior:
        """Refit if due, then the posterior (``objective``: the objective's model, whose targets
        are centred on their mean when ``research.prior_mean`` is "mean", and whose running
        trials ``research.believe_past`` may enter at the posterior mean; a constraint's are
        centred when ``research.constraint_prior_mean`` is "mean").

        With ``sliding_window`` W (RPOL-SWUCB, 004 §6 / App. D) only the last W started trials
        inform the posterior; the hyperparameters are still fit on every usable result, and the
        variation-budget terms Gamma_t (which need the unknown path length P_T) are 0.
        ``extra_noise`` (per started trial, on the targets' scale) is added to a censored
        entry's noise under soft censoring: a predicted final value's variance.
        """
        offset, s = 0.0, self.settings
        centred = (
            s.research.model.prior_mean if objective else s.research.model.constraint_prior_mean
        )
        if centred == "mean" and done:
            offset = float(np.mean(targets(done)))
            y_all, plain = y_all - offset, targets
            targets = lambda trs: plain(trs) - offset  # noqa: E731
        post = self._view(model, trials, by_id, done, y_all, targets, rng, refit=refit,
                          objective=objective, extra_noise=extra_noise)
        post.offset = offset
        return post

    def _view(self, model: CensoredModel, trials: Sequence[Trial], by_id: Mapping[int, Trial],
              done: list[Trial], y_all: np.ndarray, targets: Targets, rng: np.random.Generator,
              refit: bool, objective: bool, extra_noise: np.ndarray | None = None) -> Posterior:
        s = self.settings
        model.sync(done)
        if refit and self.algorithm.estimate != "random":
            model.maybe_refit(done=done, y=targets(done), every=s.refit_every,
                              max_points=s.research.fitting.fit_max_points,
                              restarts=s.research.fitting.fit_restarts, rng=rng,
                              dense_until=s.research.fitting.refit_dense_until,
                              lengthscale_prior=s.research.fitting.lengthscale_prior,
                              growth=s.research.fitting.refit_growth,
                              defer=s.research.fitting.refit_apply == "next", pool=self.fit_pool)
        soft = s.research.censored.censoring == "soft" and self.algorithm.pending == "censor"
        if s.sliding_window:
            recent = list(trials[-int(s.sliding_window):])
            first = recent[0].start_index if recent else 0
            kept = [tr for tr in done if tr.start_index >= first]
            if soft:
                return self._soft(model.fresh(self.X(kept)), targets(kept), kept, recent, y_all,
                                  objective, extra_noise)
            return model.recent(self.algorithm.pending, self.X(recent), y_all[first:],
                                self.X(kept), targets(kept))
        y_done = targets([by_id[i] for i in model.done_ids])
        if soft:
            return self._soft(model.gp_done, y_done, [by_id[i] for i in model.done_ids],
                              model.in_model(trials), y_all, objective, extra_noise)
        return model.posterior(self.algorithm.pending, y_all, y_done)

    @property
    def believes_pending_g(self) -> bool:
        """``research.constraint_pending`` "mean" under soft censoring (``_soft``)."""
        s = self.settings
        return (
            s.research.censored.constraint_pending == "mean"
            and s.research.censored.censoring == "soft"
            and self.algorithm.pending == "censor"
        )

    def X(self, trials: Sequence[Trial]) -> np.ndarray:
        return np.array([tr.x for tr in trials]).reshape(len(trials), self.dim)

    def _soft(self, gp, y_done: np.ndarray, done: list[Trial], trials: Sequence[Trial],
              y_all: np.ndarray, objective: bool,
              extra_noise: np.ndarray | None = None) -> Posterior:
        """Soft censoring: every trial of ``trials`` not in ``done`` enters with its censored
        target y_all[s] at noise ``censor_noise`` x amplitude (a deviation from eq. 1), plus
        ``extra_noise[s]`` where given (a predicted final value's variance).  With
        more than ``believe_past`` trials running (the objective only), a running trial that has
        not reported a step enters at the results' posterior mean instead (a believer: the mean
        stays, the variance there falls, as in GP-BUCB's hallucination; a second deviation).
        A constraint's trial with no usable value enters, with ``research.constraint_pending``
        "mean", at its posterior mean, or at its run-time bound where that is higher, instead of
        004 §5's 0 (a third deviation: at 0 every running trial looks half feasible to P(g <= 0),
        and the search for feasibility gathers around the running trials).  With
        ``research.stopped_objective`` "mean" and a ``stop_margin``, a trial stopped past its
        run-time budget (TIMED_OUT, no step reported) enters the objective at its posterior mean
        too: its score is unknown, and the constraint GP already holds the violation (a fourth
        deviation).  With ``research.running_objective`` "blend" (and the pool not wide), a
        running trial that has not reported a step enters at

            y~_s = y_min + (1 - sigma_D^2(x_s) / a) (mu_D(x_s) - y_min)^+,

        mu_D and sigma_D^2 the posterior of the results alone and a the kernel's amplitude: at
        the minimum where the results say nothing about x_s (eq. 1), at their posterior mean
        where they pin it down (a fifth deviation: eq. 1's minimum next to a result contradicts
        it, and while a slow run goes on near the best result the GP loses that result); "auto"
        blends unless a constraint is a budget or on run time (there eq. 1's pull on slow runs
        keeps the search from the budget's edge; ``budgeted``)."""
        ids = {tr.trial_id for tr in done}
        cens = [tr for tr in trials if tr.trial_id not in ids]
        yc = y_all[[tr.start_index for tr in cens]] if cens else np.zeros(0)
        Xc, past = self.X(cens), self.settings.research.censored.believe_past
        if not objective and self.believes_pending_g and cens:
            yc = np.maximum(yc, Posterior(gp, y_done, gp).predict(Xc)[0])
        if objective and cens:
            s = self.settings
            running = np.array([tr.status == Status.RUNNING for tr in cens])
            wide = past is not None and int(running.sum()) > past
            stopped = s.research.censored.stopped_objective == "mean" and s.stop_margin is not None
            blend = s.research.censored.running_objective == "blend" or (
                s.research.censored.running_objective == "auto" and not self.budgeted
            )
            blend = blend and not wide and len(y_done) > 0
            if wide or stopped or blend:        # otherwise no trial is believed: no pass over them
                kinds = (Status.RUNNING,) * (wide or blend) + (Status.TIMED_OUT,) * stopped
                believed = np.array([tr.partial is None and tr.status in kinds for tr in cens])
                if believed.any():
                    yc = yc.copy()
                    mean, var = Posterior(gp, y_done, gp).predict(Xc[believed])
                    if blend:
                        known = 1.0 - np.clip(var / gp.hyper.amplitude, 0.0, 1.0)
                        y_min = yc[believed]
                        mean = np.where(running[believed],
                                        y_min + known * np.maximum(mean - y_min, 0.0), mean)
                    yc[believed] = mean
        extra = (extra_noise[[tr.start_index for tr in cens]]
                 if extra_noise is not None and cens else None)
        return soft_view(gp, y_done, Xc, yc, self.settings.research.censored.censor_noise, extra)
