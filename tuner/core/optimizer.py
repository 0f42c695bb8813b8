"""The ask/tell optimizer: a GP bandit with censored feedback (paper 001), learning from the
trials that finished and from those still running, under black-box constraints.

    opt = Optimizer(space, algorithm="gp-ucb-sdf", objective_bounds=(0, 1), seed=0)
    s = opt.suggest()                 # the moment a worker frees
    ...                               # run s.config somewhere
    opt.tell(s.trial_id, accuracy)    # whenever it finishes, in any order
    opt.save("study.json"); Optimizer.load("study.json")

The parts it composes, each in a module of its own: the trials (``ledger.TrialLedger``), the
objective's scale and output warp (``scale.ObjectiveScale``), the GP models and the posterior a
suggestion sees (``model.CensoredModel``, ``views.PosteriorView``: soft or hard censoring of
running trials, a subset GP past ``exact_until``), the exploration weight
(``exploration.Exploration``), the constraints' estimates and handler
(``constraint_estimates.ConstraintEstimates``), the stop and deadline rules
(``stops.StopRules``), the start-up design and the maximizer of the acquisition.

With ``context_space`` each suggestion is asked for a context, ``suggest(context={...})``: the
GP is on the joint (configuration, context) input (CGP-UCB-SDF / CGP-TS-SDF, paper 001 §5,
``tuner.core.context``).

No Ray, no MLflow: the clock is injected (wall time by default, a simulated one in
``tuner.loop.simulator``), so the same object serves simulations, the CLI and the Ray Tune plugin.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from .algorithms import chosen_algorithm, get_algorithm
from .censoring import Window
from .choice import Chooser
from .constraint_estimates import ConstraintEstimates, Sampler
from .constraints import Constraint, check_reported, make_handler
from .constraints import feasible as _feasible
from .context import Contexts
from .curves import CurveModel
from .design import StartupDesign
from .exploration import Exploration
from .fit_job import Pool
from .posterior import Posterior
from .ledger import TrialLedger
from .model import model_factory
from .persist import write_json
from .scale import ObjectiveScale
from .settings import Settings, overridden
from .space import SearchSpace
from .state import built_with, changing_state, restore, state_dict
from .stops import StopRules
from .trial import Status, Trial, finite, mode_sign, number, numbers_of
from .views import PosteriorView


@dataclass(frozen=True)
class Suggestion:
    """A configuration to run, and the id to tell its result with."""

    trial_id: int
    config: dict[str, Any]


class Optimizer:
    """Censored-feedback GP bandit with an ask/tell interface (see the module docstring).

    Args:
        space: the search space (``SearchSpace`` or its mapping form).
        settings: the settings (default ``Settings()``); ``overrides`` go over them.
        clock: the time now, in seconds (wall time by default; a simulated clock in tests).
        domain: a finite set of configurations (rows of the unit-cube encoding) to choose from.
        samplers: handler ``scgp`` only: for each observable constraint metric, a function
            ``fn(configs, t)`` giving the round-t noisy sample of that metric at each
            configuration (paper 003 §4); deterministic given ``t``; pass the same to ``load``.
        context_space: the contexts' space (paper 001 §5): each suggestion then needs one.
        **overrides: public settings by name, and ``research`` switches by name or group
            (docs/reference/settings.md, docs/reference/research.md).
    """

    def __init__(self, space: SearchSpace | Mapping[str, Any], settings: Settings | None = None,
                 *, clock: Callable[[], float] = time.time, domain: np.ndarray | None = None,
                 samplers: Mapping[str, Sampler] | None = None,
                 context_space: SearchSpace | Mapping[str, Any] | None = None, **overrides: Any):
        self.space = space if isinstance(space, SearchSpace) else SearchSpace.from_dict(space)
        self.contexts = None if context_space is None else Contexts(self.space, context_space)
        if self.contexts is not None and domain is not None:
            raise ValueError("context_space with a finite domain is not supported: declare the "
                             "domain's parameters as a search space")
        inputs = self.space if self.contexts is None else self.contexts.joint   # the GP's inputs
        self.settings = s = overridden(settings, overrides)
        s.validate()
        # ``auto``: gp-ucb-sdf here, the one the model and views are built for; the chooser
        # may take log EI at a suggestion (``chosen_algorithm``), which censors running trials
        # the same way
        self.algorithm = get_algorithm(chosen_algorithm(s.algorithm, self.space.categorical_only,
                                                        bool(s.constraints),
                                                        self.contexts is not None))
        self.window = Window(s.window_unit, s.window)
        self.clock = clock
        self.rng = np.random.default_rng(s.seed)
        self.domain = None if domain is None else self.space.snap(np.asarray(domain, dtype=float))
        self.ledger = TrialLedger()
        self.constraints = [replace(c, log=s.research.budget.budget_scale == "log" and c.runtime
                                    and c.type == "budget")
                            for c in (Constraint.from_dict(d, f"constraints[{i}]")
                                      for i, d in enumerate(s.constraints))]
        self.scale = ObjectiveScale(s, self.ledger, bool(s.constraints), self.contexts is not None)
        # a context's part mixed with a part shared by every context (``Kernel``)
        n_context = (self.contexts.space.dim if self.contexts is not None
                     and s.research.model.context_kernel != "product" else 0)
        model = model_factory(s, self.algorithm, inputs, n_context, self.domain)
        self.objective = model(s.kernel, self.scale.gp_bounds(self.scale.warp_on))
        kernel_g = s.research.model.constraint_kernel
        self.exploration = Exploration(s, self.algorithm, self.window.unit, inputs.dim,
                                       None if self.domain is None else len(self.domain))
        self.design = StartupDesign(self.space.dim, self.n_initial, s.seed, self.domain)
        self.view = PosteriorView(s, self.algorithm, inputs.dim,
                                  budgeted=any(c.budget for c in self.constraints))
        self.estimates = ConstraintEstimates(
            settings=s, constraints=self.constraints,
            models=[model(s.kernel if kernel_g == "same" else kernel_g) for _ in self.constraints],
            handler=make_handler(s.constraint_handler, len(self.constraints), s.handler_options),
            samplers=samplers or {}, ledger=self.ledger, view=self.view,
            exploration=self.exploration, space=self.space, algorithm=self.algorithm, rng=self.rng)
        # the constraint handler and models (``Settings.constraint_handler``)
        self.handler, self.constraint_models = self.estimates.handler, self.estimates.models
        # when the study ends, on this clock (the loop sets it; a session's own, not saved)
        self.deadline: float | None = None
        self.curves: CurveModel | None = None      # partial curves (``use_curves``); not saved
        self.stops = StopRules(s, self.constraints, self.ledger, lambda: self.deadline)
        self.chooser = Chooser(settings=s, algorithm=self.algorithm, space=self.space,
                               contexts=self.contexts, domain=self.domain, window=self.window,
                               ledger=self.ledger, scale=self.scale, objective=self.objective,
                               view=self.view, exploration=self.exploration,
                               estimates=self.estimates, stops=self.stops,
                               n_initial=self.n_initial, rng=self.rng)

    # --- the trials and the parts, as the rest of the product reads them ------------------------

    @property
    def trials(self) -> list[Trial]:
        """Every started trial, in start order (a trial's id is its index)."""
        return self.ledger.trials

    @property
    def running(self) -> list[Trial]:
        return self.ledger.running

    @property
    def n_initial(self) -> int:
        """Size of the start-up design, counting a categorical once however many one-hot columns
        it has: ``"auto"``, two points per parameter; ``"lean"``, one per parameter and one
        more, at least 5 and at most ``"auto"``'s."""
        n, d = self.settings.n_initial, len(self.space.params)
        return 2 * d if n == "auto" else min(2 * d, max(d + 1, 5)) if n == "lean" else int(n)

    @property
    def subset_active(self) -> bool:
        """Whether the GPs are built on a subset of the trials (``tuner.core.subset``)."""
        return self.objective.members is not None

    @property
    def last_nu(self) -> float | None:
        """The exploration weight nu_t of the last choice by the GP (eq. 2)."""
        return self.chooser.last_nu

    # --- ask and tell -------------------------------------------------------------------------

    def suggest(self, config: Mapping[str, Any] | None = None,
                context: Mapping[str, Any] | None = None) -> Suggestion:
        """Choose the next configuration now: the trial starts (running) at the clock's time.

        Args:
            config: register this configuration instead of choosing one (a user's start
                point, an earlier study's trial to be told its result).
            context: z_t, required with a ``context_space`` (paper 001 §5).
        """
        now, t = float(self.clock()), len(self.trials)
        if self.contexts is None and context is not None:
            raise ValueError("suggest(context=...) needs an optimizer built with a context_space")
        z = None if self.contexts is None else self.contexts.encode(context)
        if self.constraints and self.algorithm.estimate != "random":
            self.estimates.start_round(t)
        search = self.settings.research.search
        if config is not None:
            self.space.check(config, "suggest(config)")
            self.chooser.maybe_subset(t, lambda: self.chooser.usable(now, t)[1], choosing=False)
            x = self.space.encode(config)
        elif self.algorithm.estimate == "random" or t < self.n_initial:
            x = self.design.point(t, self.rng)
        elif search.startup_until_result and not any(
                tr.status == Status.FINISHED for tr in self.trials):
            x = self.design.point(t, self.rng, extend=True)   # a GP with no result: keep to Sobol
        elif search.random_fraction > 0 and self.rng.random() < search.random_fraction:
            x = self.design.point(t, self.rng)    # past the design: a random point (or row)
        else:
            x = self.chooser.choose(now, t, z)
        x = self.space.snap(x)[0]
        trial = Trial(trial_id=t, config=self.space.decode(x) if config is None else dict(config),
                      x=x if z is None else np.concatenate([x, z]), start_time=now, start_index=t,
                      pending_at_suggest=len(self.ledger.live),
                      context=None if context is None else dict(context))
        self.estimates.observe_samples(trial, t, self.scale.f_bound)
        self.ledger.add(trial)
        for model in (self.objective, *self.constraint_models):
            model.append(trial.x, trial.start_index)
        return Suggestion(trial.trial_id, dict(trial.config))

    def suggest_batch(self, k: int, context: Mapping[str, Any] | None = None) -> list[Suggestion]:
        """``k`` configurations for ``k`` workers that freed at once: a coherent batch, each
        chosen with the ones before it pending (censored entries whose sigma raises nu_t,
        001 eq. 1-2), so the batch spreads instead of repeating one argmax.

        Args:
            k: how many.
            context: z_t of every one of them (with a ``context_space``).
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"suggest_batch: k must be a whole number >= 1 (got {k!r})")
        return [self.suggest(context=context) for _ in range(k)]

    def tell(self, trial_id: int, value: float, metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None) -> None:
        """Report the objective of a finished trial (in arrival order; any trial order).

        Args:
            trial_id: the suggestion's id.
            value: its objective (a non-finite value fails the trial).
            metrics: its other metrics; every constrained metric is required.
            finish_time: when it finished (default: the clock's time).
        """
        value = number(value, f"tell(trial {trial_id}): the value")
        metrics = numbers_of(metrics, f"tell(trial {trial_id}): metrics")
        trial = self.ledger.running_trial(trial_id)
        check_reported(trial, self.constraints, metrics)
        trial.metrics.update(metrics)
        self.ledger.end(trial, self.clock() if finish_time is None else finish_time)
        if not math.isfinite(value):
            trial.status, trial.reason = Status.FAILED, f"non-finite objective {value}"
            return
        trial.value = value
        trial.status = Status.FINISHED
        if self.curves is not None:
            self.curves.finish(trial_id, trial.x, mode_sign(self.settings.mode) * value)

    def add_earlier(self, config: Mapping[str, Any], value: float | None = None, *,
                    metrics: Mapping[str, float] | None = None,
                    status: Status | str = Status.FINISHED, reason: str | None = None,
                    context: Mapping[str, Any] | None = None, origin: str | None = None) -> int:
        """A trial run elsewhere (an earlier study, a colleague's run) told with its outcome;
        returns its id.

        Args:
            config: its configuration.
            value: its objective, if it FINISHED.
            metrics: its other metrics.
            status: FINISHED, or how it ended (censored as ``fail`` would).
            reason: why it did not finish.
            context: the context it ran at (with a ``context_space``).
            origin: where it came from (``Trial.origin``: an earlier study's name).
        """
        s = self.suggest(config=config, context=context)
        self.trials[s.trial_id].origin = origin
        if Status(status) == Status.FINISHED:
            self.tell(s.trial_id, float(value), metrics)   # type: ignore[arg-type]
        else:
            self.fail(s.trial_id, reason or f"{status} in {origin or 'an earlier run'}", metrics,
                      status=status)
        return s.trial_id

    def report(self, trial_id: int, value: float, progress: float,
               metrics: Mapping[str, float] | None = None, elapsed: float | None = None) -> None:
        """A running trial's objective at some progress: it is censored at this value instead of
        the minimum until it ends, and after if it is STOPPED (``censor_at_partial``): its run
        has shown this much.

        Args:
            trial_id: the running trial.
            value: its objective now (non-finite values are ignored).
            progress: how far it got (epochs done; never decreasing).
            metrics: other metrics reported with it.
            elapsed: seconds since its start (its pace: ``Trial.projected_runtime``).
        """
        value = number(value, f"report(trial {trial_id}): the value")
        progress = number(progress, f"report(trial {trial_id}): progress")
        metrics = numbers_of(metrics, f"report(trial {trial_id}): metrics")
        trial = self.ledger.running_trial(trial_id)
        if trial.progress is not None and progress < trial.progress:
            raise ValueError(f"trial {trial_id}: progress {progress} reported after "
                             f"{trial.progress}")
        if math.isfinite(float(value)):
            trial.progress, trial.partial = float(progress), float(value)
            if self.curves is not None:
                self.curves.observe(trial_id, trial.x, progress * self.curves.max_step,
                                    mode_sign(self.settings.mode) * value)
        if elapsed is not None and progress > 0:     # its pace (``Trial.projected_runtime``)
            trial.pace = (trial.pace or [float(progress), float(elapsed)])[:2] + [float(progress),
                                                                                 float(elapsed)]
        trial.metrics.update(finite(metrics))

    def fail(self, trial_id: int, reason: str = "failed",
             metrics: Mapping[str, float] | None = None, finish_time: float | None = None,
             status: Status | str = Status.FAILED) -> None:
        """A trial that raised (FAILED), was stopped (TIMED_OUT, STOPPED) or killed (KILLED):
        objective censored for good (at its last reported value, ``report``, if it has one).

        A run-time constraint gets the elapsed time as its (lower-bound) value when the caller
        does not report one, so a trial stopped past its budget counts as the violation it is.

        Args:
            trial_id: the running trial.
            reason: why (kept with the trial).
            metrics: what it measured (non-finite values are dropped).
            finish_time: when it ended (default: the clock's time).
            status: FAILED, TIMED_OUT, STOPPED or KILLED.
        """
        metrics = numbers_of(metrics, f"fail(trial {trial_id}): metrics")
        trial = self.ledger.running_trial(trial_id)
        status = Status(status)
        if not status.censored:
            raise ValueError(f"fail(status=...) must be one of FAILED, TIMED_OUT, KILLED, STOPPED "
                             f"(got {status})")
        trial.status, trial.reason = status, reason
        # a non-finite value is not a measurement (a NaN would poison the constraint GP and
        # the multipliers); a run-time constraint falls back to the elapsed time below
        trial.metrics.update(finite(metrics))
        self.ledger.end(trial, self.clock() if finish_time is None else finish_time)
        for c in self.constraints:
            if c.runtime and c.metric not in trial.metrics:
                trial.metrics[c.metric] = trial.finish_time - trial.start_time

    def started(self, trial_id: int, now: float | None = None) -> None:
        """A running trial's run began ``now``: its launch after the suggestion, or its start
        again after a resume (same id, configuration and place in the query order).  Only its
        start time moves, so its censoring window, elapsed time and stop time count from the
        run's real start; what an earlier attempt reported is forgotten (it starts over)."""
        trial = self.ledger.running_trial(trial_id)
        trial.start_time = float(self.clock() if now is None else now)
        trial.progress = trial.partial = trial.pace = None
        if self.curves is not None:
            self.curves.forget(trial_id)

    def use_curves(self, model: CurveModel) -> None:
        """Learn partial curves with ``model`` and censor each trial that reported progress
        (running, or STOPPED) at its prediction of the trial's final value instead of its last
        value (``censor_at_partial``), with the prediction's variance added to its noise (soft
        censoring): the search then judges a stopped or running run by where its curve was
        heading, as surely as the model knows it.  From now on ``report`` and ``tell`` feed
        the model (progress times ``model.max_step`` is the step); the trials so far enter it
        with their last report (a restored optimizer: its state keeps no earlier ones).

        Args:
            model: the study's model of partial curves (the stopping rule's, so that search and
                stop decisions read one model).
        """
        self.curves = model
        self.chooser.finals = model.learn_from(self.trials, mode_sign(self.settings.mode))

    # --- the rules the study loop applies (``stops.StopRules``) ---------------------------------

    def can_start(self, now: float | None = None) -> bool:
        """Whether a run started ``now`` may still finish before ``deadline``."""
        return self.stops.can_start(float(self.clock()) if now is None else now)

    def stop_time(self, trial_id: int) -> float | None:
        """When a running trial passes limit x (1 + ``stop_margin``) of a run-time constraint."""
        return self.stops.stop_time(trial_id)

    def trials_to_stop(self, now: float | None = None) -> list[int]:
        """Running trials past their run-time budget by more than ``stop_margin`` at ``now``:
        the loop stops each and reports ``fail(trial_id, reason, status=TIMED_OUT)``; the
        run-time metric defaults to the elapsed time, a known violation."""
        return self.stops.trials_to_stop(float(self.clock()) if now is None else now)

    def next_stop_time(self) -> float | None:
        """The earliest ``stop_time`` among running trials (for an event loop's timeout)."""
        return self.stops.next_stop_time()

    # --- what the optimizer knows ---------------------------------------------------------------

    def best(self, feasible: bool = False, trials: Iterable[Trial] | None = None) -> Trial | None:
        """The completed trial with the best objective (per ``mode``), or None.

        Args:
            feasible: only trials that met every constraint.
            trials: among these (default: every trial).
        """
        done = [tr for tr in (self.trials if trials is None else trials) if tr.status ==
                Status.FINISHED and (not feasible or _feasible(tr, self.constraints))]
        if not done:
            return None
        sign = mode_sign(self.settings.mode)
        return max(done, key=lambda tr: sign * tr.value)

    def counted(self, now: float | None = None) -> tuple[float, list[Trial]]:
        """The window m in force at ``now`` and the completed trials whose results count (enter
        the GP uncensored); every other completed trial is censored for good (eq. 1)."""
        now = float(self.clock()) if now is None else now
        return self.chooser.usable(now, len(self.trials))

    def censored_targets(self, now: float | None = None) -> np.ndarray:
        """y~_{s,t} of every started trial if the next query were chosen at ``now`` (eq. 1)."""
        return self.chooser.censored(self.counted(now)[1])

    def constraint_targets(self, j: int = 0, now: float | None = None) -> np.ndarray:
        """c~_{s,t} of every started trial for constraint j (004 §5, plus elapsed-time bounds)."""
        now = float(self.clock()) if now is None else now
        return self.estimates.targets(j, self.counted(now)[0], now)

    def constraint_posterior(self, j: int = 0, now: float | None = None) -> Posterior:
        """Constraint j's posterior of g (<= 0: feasible) as the next suggestion would see it
        (no refit); ``acquisition.probability_feasible`` of it is the pof handler's estimate."""
        now = float(self.clock()) if now is None else now
        return self.estimates.posterior(j, self.counted(now)[0], now, refit=False)

    def objective_posterior(self, now: float | None = None) -> Posterior:
        """The objective posterior the next suggestion would use (normalized targets; no refit)."""
        now = float(self.clock()) if now is None else now
        _, done = self.counted(now)
        return self.chooser.objective_view(done, self.chooser.censored(done), refit=False)

    def context_correlation(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
        """How much what a configuration scores at context ``a`` says about it at ``b``: the GP's
        prior correlation of the objective at one configuration under the two contexts, without
        the contexts' level (``Kernel``): w + (1 - w) rho(r_z) with the shared kernels, rho(r_z)
        with the product one; 1 for equal contexts.  It is the current fit's estimate."""
        if self.contexts is None:
            raise ValueError("context_correlation: this optimizer has no context_space")
        return self.contexts.correlation(self.objective.gp_done, a, b)

    # --- one suggestion -------------------------------------------------------------------------

    # --- saving ---------------------------------------------------------------------------------

    def run_fits_in(self, pool: Pool | None) -> None:
        """Run the deferred marginal-likelihood fits (``refit_apply: next``) in ``pool`` (e.g. a
        one-process ``concurrent.futures.ProcessPoolExecutor``), not on the caller's thread when
        they are applied; the suggestions do not change.  A fit in flight (a resumed state)
        starts there now.  None: run them here (call it before the pool closes: a fit in flight
        there then runs here when it is applied)."""
        self.view.fit_pool = pool
        for model in (self.objective, *self.constraint_models):
            if model.deferred is not None:
                if pool is None:
                    model.deferred.detach()
                else:
                    model.deferred.submit(pool)

    def state_dict(self) -> dict[str, Any]:
        """The whole state as saved (``tuner.core.state``)."""
        return state_dict(self)

    def changing_state(self) -> dict[str, Any]:
        """The parts of ``state_dict`` that change as trials run, but the trials (a journal
        keeps those apart: ``changed_trials``)."""
        return changing_state(self)

    def changed_trials(self) -> list[dict[str, Any]]:
        """The trials suggested, started or ended since the last call, as in ``state_dict``
        (in id order); only these methods change a trial."""
        return self.ledger.drain_changed()

    def save(self, path: str | os.PathLike) -> None:
        """Write the state as JSON atomically (a crash never leaves half a file)."""
        write_json(path, self.state_dict())

    @classmethod
    def from_state(cls, state: Mapping[str, Any], *, clock: Callable[[], float] = time.time,
                   samplers: Mapping[str, Sampler] | None = None) -> Optimizer:
        """An optimizer as ``state_dict`` saved it (``clock``, ``samplers``: as to the
        constructor)."""
        space, settings, domain = built_with(state)
        opt = cls(space, settings, clock=clock, domain=domain, samplers=samplers,
                  context_space=state.get("context_space"))
        restore(opt, state)
        return opt

    @classmethod
    def load(cls, path: str | os.PathLike, *, clock: Callable[[], float] = time.time,
             samplers: Mapping[str, Sampler] | None = None) -> Optimizer:
        """``from_state`` of the JSON file ``path`` (``save``)."""
        with open(path) as fh:
            return cls.from_state(json.load(fh), clock=clock, samplers=samplers)
