"""The ask/tell optimizer: one GP over every started trial, censored feedback, one estimate.

    opt = Optimizer(space, algorithm="gp-ucb-sdf", objective_bounds=(0, 1), seed=0)
    s = opt.suggest()                 # the moment a worker frees
    ...                               # run s.config somewhere
    opt.tell(s.trial_id, accuracy)    # whenever it finishes, in any order
    opt.save("study.json"); Optimizer.load("study.json")

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
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from . import acquisition as acq
from .algorithms import get_algorithm
from .censoring import Window, censored_targets, constraint_view, counted
from .constraints import SHIFTS, Constraint, arrived_since, check_reported, make_handler, mean_run_time, sample
from .constraints import feasible as _feasible
from .context import Contexts
from .deadline import RunTimeModel, shortest_run
from .design import StartupDesign
from .exploration import Exploration
from .fit_job import Pool
from .gp import HyperBounds, Hyperparameters, Posterior, blas_threads
from .kernels import make_kernel
from .maximize import Mask, any_of, maximize, candidate_set
from .model import CensoredModel
from .persist import write_json
from .settings import Settings, overridden
from .space import SearchSpace
from .state import built_with, changing_state, restore, state_dict
from .subset import choose_subset
from .targets import RankWarp, normalized, reward_range
from .trial import Status, Trial, mode_sign
from .views import PosteriorView
from .warp_choice import (CHOOSING_RULES, WARP_CHOICE_EVERY, WARP_CHOICE_FROM, WARP_MARGIN,
                          prefer_copula, warp_rule)


@dataclass(frozen=True)
class Suggestion:
    trial_id: int
    config: dict[str, Any]


Sampler = Callable[[list, int], "np.ndarray | list[float]"]


class Optimizer:
    """Censored-feedback GP bandit with an ask/tell interface (see module docstring).

    ``samplers`` (handler ``scgp`` only): for each observable constraint metric, a function
    ``fn(configs, t)`` returning the round-t noisy sample of that metric at each configuration
    (paper 003 §4: an i.i.d. sample of the whole function, seen before deciding).  It must be
    deterministic given ``t`` (one sample function per round); pass the same ones to ``load``.
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
        self.settings = overridden(settings, overrides)
        self.settings.validate()
        self.algorithm = get_algorithm(self.settings.algorithm)
        self.window = Window(self.settings.window_unit, self.settings.window)
        self.clock = clock
        self.rng = np.random.default_rng(self.settings.seed)
        self.domain = None if domain is None else self.space.snap(np.asarray(domain, dtype=float))
        self.trials: list[Trial] = []
        self._by_id: dict[int, Trial] = {}
        self._changed: set[int] = set()   # trials changed since the last ``changed_trials``
        self._live: dict[int, Trial] = {}  # the running trials, in id order
        self._outcomes = 0                 # tell and fail calls: ``_reward_range``'s memo key
        self._range_memo: tuple[Any, tuple[float, float], RankWarp | None] | None = None
        s = self.settings
        # a context's part mixed with a part shared by every context (``Kernel``)
        n_context = (self.contexts.space.dim if self.contexts is not None
                     and s.research.model.context_kernel != "product" else 0)
        hyper = Hyperparameters(s.research.model.amplitude, np.full(inputs.dim, s.research.model.lengthscale), s.research.model.noise,
                                0.5 if n_context else None,
                                0.2 if n_context and s.research.model.context_kernel == "shared-level" else None)
        shared = s.research.model.categorical_lengthscale == "shared" and any(
            p.kind == "categorical" for p in inputs.params.values())
        groups = inputs.groups() if shared else None

        def model(name: str, bounds: HyperBounds | None = None) -> CensoredModel:
            # "auto": SE, or Matern-5/2 where the evidence says
            kernels = [make_kernel(k, n_context) for k in (("se", "matern52") if name == "auto" else (name,))]
            return CensoredModel(kernels[0], hyper, self.domain, bounds, groups=groups,
                                 alternatives=kernels[1:], keep_all=self._needs_gp_all())

        # output_warp as applied (warp_choice.warp_rule); the warp under the copula's (none or
        # the tail); whether the copula is on (none-or-copula starts with it, tail-or-copula
        # without); usable results at the last choice
        self.warp_rule = warp_rule(s.output_warp, bool(s.constraints), self.contexts is not None)
        self.base_warp = "tail" if self.warp_rule in ("tail", "tail-or-copula") else "none"
        self.warp_on, self._warp_chosen_at = self.warp_rule in ("copula", "none-or-copula"), 0
        self.objective = model(s.kernel, self.objective_bounds(self.warp_on))
        self.constraints = [replace(c, log=s.research.budget.budget_scale == "log" and c.runtime and c.type == "budget")
                            for c in (Constraint.from_dict(d, f"constraints[{i}]")
                                      for i, d in enumerate(s.constraints))]
        self.constraint_models = [model(s.kernel if s.research.model.constraint_kernel == "same" else s.research.model.constraint_kernel)
                                  for _ in self.constraints]
        self.handler = make_handler(s.constraint_handler, len(self.constraints), s.handler_options)
        self.samplers = dict(samplers or {})
        need = [c.metric for c in self.constraints if c.observable]
        if sorted(self.samplers) != sorted(need):
            raise ValueError(f"samplers must give one function per observable constraint metric "
                             f"{need} (got {sorted(self.samplers)})")
        self._seen_constraint: set[int] = set()   # trials whose constraint values reached the handler
        self.exploration = Exploration(s, self.algorithm, self.window.unit, inputs.dim,
                                       None if self.domain is None else len(self.domain))
        self.design = StartupDesign(self.space.dim, self.n_initial, s.seed, self.domain)
        self.view = PosteriorView(s, self.algorithm, inputs.dim,
                                  budgeted=any(c.budget for c in self.constraints))
        self.last_nu: float | None = None
        # when the study ends, on this clock (the loop sets it; not saved: a session's own)
        self.deadline: float | None = None
        self.run_times = RunTimeModel(s.seed)
        self._shortest: tuple[int, float] | None = None   # (outcomes seen, shortest_run then)

    # --- public API ---------------------------------------------------------------------------

    def suggest(self, config: Mapping[str, Any] | None = None,
                context: Mapping[str, Any] | None = None) -> Suggestion:
        """Choose the next configuration now (or register ``config``, e.g. a user's start point,
        or an earlier study's trial to be told its result); ``context``: z_t, required with a
        ``context_space`` (paper 001 §5)."""
        now, t = float(self.clock()), len(self.trials)
        if self.contexts is None and context is not None:
            raise ValueError("suggest(context=...) needs an optimizer built with a context_space")
        z = None if self.contexts is None else self.contexts.encode(context)
        if self.constraints and self.algorithm.estimate != "random":
            self._start_round(t)
        if config is not None:
            self._maybe_subset(t, lambda: self._usable(now, t)[1], choosing=False)
            x = self.space.encode(config)
        elif self.algorithm.estimate == "random" or t < self.n_initial:
            x = self.design.point(t, self.rng)
        elif self.settings.research.search.startup_until_result and not any(
                tr.status == Status.FINISHED for tr in self.trials):
            x = self.design.point(t, self.rng, extend=True)   # a GP with no result: keep to Sobol
        elif self.settings.research.search.random_fraction > 0 and self.rng.random() < self.settings.research.search.random_fraction:
            x = self.design.point(t, self.rng)    # past the design: a random point (or row)
        else:
            x = self._choose(now, t, z)
        x = self.space.snap(x)[0]
        trial = Trial(trial_id=t, config=self.space.decode(x) if config is None else dict(config),
                      x=x if z is None else np.concatenate([x, z]), start_time=now, start_index=t,
                      pending_at_suggest=len(self._live),
                      context=None if context is None else dict(context))
        for c in self.constraints:
            if c.observable:     # the round's sample at x_t is known before the run (003 §4)
                trial.metrics[c.metric] = float(sample(self.samplers, c, t, [trial.config])[0])
        if self.handler.g_estimate == "sample":
            # SCGP's queue step needs only the round's sample at x_t (003 Alg. 2 line 7), known
            # whoever chose x_t (the handler, the initial design or a user's config).
            self.handler.after_choice(t, [float(c.g(trial.metrics[c.metric])) for c in self.constraints],
                                      self._f_bound())
        self.trials.append(trial)
        self._by_id[trial.trial_id] = trial
        self._live[trial.trial_id] = trial
        self._changed.add(trial.trial_id)
        for model in (self.objective, *self.constraint_models):
            model.append(trial.x, trial.start_index)
        return Suggestion(trial.trial_id, dict(trial.config))

    def suggest_batch(self, k: int, context: Mapping[str, Any] | None = None) -> list[Suggestion]:
        """``k`` configurations for ``k`` workers that freed at once: a coherent batch, each
        chosen with the ones before it pending (censored entries whose sigma raises nu_t,
        001 eq. 1-2), so the batch spreads instead of repeating one argmax."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"suggest_batch: k must be a whole number >= 1 (got {k!r})")
        return [self.suggest(context=context) for _ in range(k)]

    def tell(self, trial_id: int, value: float, metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None) -> None:
        """Report the objective of a finished trial (in arrival order; any trial order)."""
        trial = self._running(trial_id)
        metrics = {k: float(v) for k, v in (metrics or {}).items()}
        check_reported(trial, self.constraints, metrics)
        value = float(value)
        trial.metrics.update(metrics)
        trial.finish_time = float(self.clock() if finish_time is None else finish_time)
        trial.finish_index = len(self.trials)
        del self._live[trial_id]
        self._outcomes += 1
        if not math.isfinite(value):
            trial.status, trial.reason = Status.FAILED, f"non-finite objective {value}"
            return
        trial.value = value
        trial.status = Status.FINISHED

    def add_earlier(self, config: Mapping[str, Any], value: float | None = None, *,
                    metrics: Mapping[str, float] | None = None,
                    status: Status | str = Status.FINISHED, reason: str | None = None,
                    context: Mapping[str, Any] | None = None, origin: str | None = None) -> int:
        """A trial run elsewhere (an earlier study, a colleague's run) told with its outcome:
        ``value`` if FINISHED, else censored as ``fail`` would (``status``, ``reason``), at its
        ``context``; ``origin`` marks where it came from (``Trial.origin``).  Returns its id."""
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
        """A running trial's objective ``value`` at ``progress`` (e.g. epochs done, growing): it is
        censored at this value instead of the minimum until it ends, and after if it is STOPPED
        (``censor_at_partial``): its run has shown this much.  Non-finite values are ignored."""
        trial = self._running(trial_id)
        if trial.progress is not None and progress < trial.progress:
            raise ValueError(f"trial {trial_id}: progress {progress} reported after {trial.progress}")
        if math.isfinite(float(value)):
            trial.progress, trial.partial = float(progress), float(value)
        if elapsed is not None and progress > 0:     # its pace (``Trial.projected_runtime``)
            trial.pace = (trial.pace or [float(progress), float(elapsed)])[:2] + [float(progress),
                                                                                 float(elapsed)]
        trial.metrics.update({k: float(v) for k, v in (metrics or {}).items()
                              if math.isfinite(float(v))})

    def fail(self, trial_id: int, reason: str = "failed", metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None, status: Status | str = Status.FAILED) -> None:
        """A trial that raised (FAILED), was stopped (TIMED_OUT, STOPPED) or killed (KILLED):
        objective censored for good (at its last reported value, ``report``, if it has one).

        A run-time constraint gets the elapsed time as its (lower-bound) value when the caller
        does not report one, so a trial stopped past its budget counts as the violation it is.
        """
        trial = self._running(trial_id)
        status = Status(status)
        if not status.censored:
            raise ValueError(f"fail(status=...) must be one of FAILED, TIMED_OUT, KILLED, STOPPED "
                             f"(got {status})")
        trial.status, trial.reason = status, reason
        del self._live[trial_id]
        self._outcomes += 1
        # a non-finite value is not a measurement (a NaN would poison the constraint GP and
        # the multipliers); a run-time constraint falls back to the elapsed time below
        trial.metrics.update({k: float(v) for k, v in (metrics or {}).items() if math.isfinite(float(v))})
        trial.finish_time = float(self.clock() if finish_time is None else finish_time)
        trial.finish_index = len(self.trials)
        for c in self.constraints:
            if c.runtime and c.metric not in trial.metrics:
                trial.metrics[c.metric] = trial.finish_time - trial.start_time

    def can_start(self, now: float | None = None) -> bool:
        """Whether a run started ``now`` may still finish before ``deadline``: False only with
        ``idle_near_deadline`` once the time left is under the shortest finished run
        (``tuner.core.deadline.shortest_run``); the study loop then starts nothing more."""
        if not self.settings.idle_near_deadline or self.deadline is None:
            return True
        now = float(self.clock()) if now is None else now
        if self._shortest is None or self._shortest[0] != self._outcomes:   # one pass per outcome
            self._shortest = (self._outcomes, shortest_run(self.trials))
        return self.deadline - now >= self._shortest[1]

    def started(self, trial_id: int, now: float | None = None) -> None:
        """A running trial's run began ``now``: its launch after the suggestion, or its start
        again after a resume (same id, configuration and place in the query order).  Only its
        start time moves, so its censoring window, elapsed time and stop time count from the
        run's real start; what an earlier attempt reported is forgotten (it starts over)."""
        trial = self._running(trial_id)
        trial.start_time = float(self.clock() if now is None else now)
        trial.progress = trial.partial = trial.pace = None

    def stop_time(self, trial_id: int) -> float | None:
        """When a running trial passes limit x (1 + ``stop_margin``) of a run-time constraint
        (None: no such rule, or the trial is not running)."""
        tr = self._by_id[trial_id]
        after = [a for a in (c.stop_after(self.settings.stop_margin) for c in self.constraints)
                 if a is not None]
        if tr.status != Status.RUNNING or not after:
            return None
        return tr.start_time + min(after)

    def trials_to_stop(self, now: float | None = None) -> list[int]:
        """Running trials past their run-time budget by more than ``stop_margin`` at ``now``.

        The rule the study loop applies (one implementation for simulated and real studies):
        stop each of them and report ``fail(trial_id, reason, status=TIMED_OUT)``; the objective
        is then censored for good and the run-time metric defaults to the elapsed time, a known
        violation g = margin.  Empty when ``stop_margin`` is None.
        """
        now = float(self.clock()) if now is None else now
        due = [(self.stop_time(tr.trial_id), tr.trial_id) for tr in self.running]
        return [tid for when, tid in due if when is not None and when <= now]

    def next_stop_time(self) -> float | None:
        """The earliest ``stop_time`` among running trials (for an event loop's timeout)."""
        times = [w for w in (self.stop_time(tr.trial_id) for tr in self.running) if w is not None]
        return min(times) if times else None

    def best(self, feasible: bool = False, trials: Iterable[Trial] | None = None) -> Trial | None:
        """The completed trial with the best objective (per ``mode``), optionally feasible only,
        among ``trials`` (default: all)."""
        done = [tr for tr in (self.trials if trials is None else trials) if tr.status == Status.FINISHED
                and (not feasible or _feasible(tr, self.constraints))]
        if not done:
            return None
        sign = mode_sign(self.settings.mode)
        return max(done, key=lambda tr: sign * tr.value)

    @property
    def running(self) -> list[Trial]:
        return list(self._live.values())

    def counted(self, now: float | None = None) -> tuple[float, list[Trial]]:
        """The window m in force at ``now`` and the completed trials whose results count (enter
        the GP uncensored); every other completed trial is censored for good (eq. 1)."""
        now = float(self.clock()) if now is None else now
        return self._usable(now, len(self.trials))

    def censored_targets(self, now: float | None = None) -> np.ndarray:
        """y~_{s,t} of every started trial if the next query were chosen at ``now`` (eq. 1)."""
        return self._censored(self.counted(now)[1])

    def constraint_targets(self, j: int = 0, now: float | None = None) -> np.ndarray:
        """c~_{s,t} of every started trial for constraint j (004 §5, plus elapsed-time bounds)."""
        now = float(self.clock()) if now is None else now
        c = self.constraints[j]
        return constraint_view(c, self.trials, self._usable(now, len(self.trials))[0], self.window.unit,
                               now, self.settings.research.censored.use_elapsed_bound and c.runtime)[1]

    # --- one suggestion ---------------------------------------------------------------------

    def _usable(self, now: float, t: int) -> tuple[float, list[Trial]]:
        return counted(self.trials, self.window, self.algorithm.pending, now, t)

    def _censored(self, done: list[Trial]) -> np.ndarray:
        return censored_targets(self.trials, done, self.settings.mode, *self._reward_range(),
                                self.settings.research.censored.censor_at_partial, self._warp())

    def _needs_gp_all(self) -> bool:
        """Whether a GP over every started trial is used: hard censoring and hallucination take
        their variance from it, the "sdf" beta_t its information gain; soft censoring needs
        only the GP of the usable results (``CensoredModel.keep_all``)."""
        s, pending = self.settings, self.algorithm.pending
        return (pending == "hallucinate" or (pending == "censor" and s.research.censored.censoring == "hard")
                or s.research.exploration.beta_schedule == "sdf")

    @property
    def subset_active(self) -> bool:
        """Whether the GPs are built on a subset of the trials (``tuner.core.subset``)."""
        return self.objective.members is not None

    def _maybe_subset(self, t: int, done: Callable[[], list[Trial]], choosing: bool) -> None:
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
                due = len(self.objective.members) >= 1.5 * s.subset_size + len(self._live)
            if not due:
                return
        done = done()
        scores = np.full(t, np.nan)
        if done:
            scores[[tr.start_index for tr in done]] = self._targets(done)
        running = np.zeros(t, dtype=bool)
        running[[tr.start_index for tr in self._live.values()]] = True
        members = choose_subset(self.view.X(self.trials), running, scores,
                                self.objective.gp_done.hyper.lengthscales, s.subset_size, self.rng)
        for model in (self.objective, *self.constraint_models):
            model.restrict(members, self.trials, t)

    @blas_threads      # every BLAS call of a suggestion on one thread (gp.blas_threads)
    def _choose(self, now: float, t: int, z: np.ndarray | None = None) -> np.ndarray:
        """x_t maximizing the estimate (with a context, over x at (x, z_t): 001 §5)."""
        s, algo = self.settings, self.algorithm
        m, done = self._usable(now, t)
        self._maybe_subset(t, lambda: done, choosing=True)
        if self.warp_rule in CHOOSING_RULES:
            self._choose_warp(done)
        y_all = self._censored(done)
        post = self._fit_and_view(self.objective, done, y_all, self._targets)
        beta = self.exploration.beta_t(self.objective.gp_all, t)
        nu = self.exploration.nu(post, self.trials, self._live.values(), m, now, t, beta, s.research.exploration.b_y)
        kind = algo.estimate
        if z is not None and s.research.search.new_context == "mean" and self._new_context(z, done):
            nu = 0.0     # no result at z_t yet: the best guess the other contexts give
            kind = "ucb" if kind == "ei" else kind     # (the posterior mean)
        self.last_nu = nu
        C = candidate_set(self.space, self.rng, s.n_candidates,
                          incumbents=self._incumbents(done), n_local=s.research.search.n_local, domain=self.domain)
        joint = C if z is None else self.contexts.join(C, z)

        def on_configs(h: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
            """An estimate on the GP's inputs as one on configurations (at z_t, if a context)."""
            return h if z is None else _on(h, lambda U: joint if U is C else self.contexts.join(U, z))

        best = self._plugin_incumbent(post, done, joint, z) if kind == "ei" else None
        f_est = on_configs(acq.estimate(kind, post, nu, joint, +1.0, self.rng, best))
        smooth = algo.smooth and self.domain is None
        discrete = s.research.search.discrete_search == "local"
        taken = any_of(self._near_running(z), self._late(now, C, z))
        if not self.constraints:
            return maximize(f_est, C, self.space, smooth=smooth, n_starts=s.research.search.n_starts,
                            discrete=discrete, taken=taken, joint=s.research.search.refine == "joint")
        lo, hi = self._reward_range()
        f_bound = self._f_bound()
        log = kind == "ei"      # log EI x P(feasible) as a sum of logs (settings: pof only)
        g_ests = [on_configs(self._constraint_estimate(j, m, now, t, joint, log))
                  for j in range(len(self.constraints))]
        smooth = smooth and self.handler.g_estimate != "sample"

        scale = (0.0, 1.0) if self.handler.normalized_f else (lo, hi - lo)
        warp = None if self.handler.normalized_f else self._warp()
        f_obj = f_est if warp is None else (lambda U: warp.inverse(f_est(U)))

        def h(U: np.ndarray) -> np.ndarray:      # on the objective's scale (module docstring)
            if log:
                return self.handler.log_score(f_est(U), [g(U) for g in g_ests])
            return self.handler.score(t, scale[0] + scale[1] * f_obj(U), [g(U) for g in g_ests], f_bound)

        x = maximize(h, C, self.space, smooth=smooth, n_starts=s.research.search.n_starts, discrete=discrete,
                     taken=taken, joint=s.research.search.refine == "joint")
        if self.handler.g_estimate != "sample":     # SCGP's step is in suggest(), every round
            self.handler.after_choice(t, [float(g(x[None, :])[0]) for g in g_ests], f_bound)
        return x

    def _plugin_incumbent(self, post: Posterior, done: Sequence[Trial], joint: np.ndarray,
                          z: np.ndarray | None, k: int = 256) -> float:
        """log EI's incumbent: the largest posterior mean among the k best configurations tried
        that met every constraint (at z_t, if a context; constrained EI improves on the best
        feasible value, Gardner et al. 2014), or among the candidates while there is none."""
        if self.constraints:
            done = [tr for tr in done if _feasible(tr, self.constraints)]
        X = self._incumbents(list(done), k)
        if X is None:
            return float(np.max(post.predict(joint)[0]))
        return float(np.max(post.predict(X if z is None else self.contexts.join(X, z))[0]))

    def _new_context(self, z: np.ndarray, done: Sequence[Trial]) -> bool:
        """No usable result at exactly z_t yet, among contexts that repeat (tasks, datasets,
        studies: at most half as many distinct contexts as trials).  A context that changes at
        every suggestion is never new, or the rule would switch exploration off for good."""
        k, key = len(z), z.tobytes()
        distinct = {tr.x[-k:].tobytes() for tr in self.trials} | {key}
        if len(distinct) > len(self.trials) / 2:
            return False
        # newest first: a result at z_t, if any, is most likely among the latest
        return not any(tr.x[-k:].tobytes() == key for tr in reversed(done))

    def _near_running(self, z: np.ndarray | None) -> Callable[[np.ndarray], np.ndarray] | None:
        """A mask of the configurations (at z_t) whose prior correlation k(x, x_s) / a with a
        running trial's input reaches ``running_correlation``: copies of a running trial.

        A deviation from 001, where nothing stops x_t from repeating a pending x_s: once the GP
        is sure of a region (sigma near 0 around its best mean), a UCB argmax is the same point
        at every free worker, and a pool runs one configuration many times (docs/research/notes/scale.md)."""
        rho = self.settings.research.search.running_correlation
        if rho is None or not self._live:
            return None
        Xr = np.vstack([tr.x for tr in self._live.values()])
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
        if not self.settings.finish_by_deadline or self.deadline is None:
            return None
        return self.run_times.late(self.trials, now, self.deadline, C,
                                   lambda U: U if z is None else self.contexts.join(U, z))

    def _constraint_estimate(self, j: int, m: float, now: float, t: int, C: np.ndarray,
                             log: bool = False) -> Callable[[np.ndarray], np.ndarray]:
        """g_t of constraint j: the LCB, the algorithm's kind of estimate, the probability of
        feasibility (``log``: its log) or the round's sample."""
        c, s = self.constraints[j], self.settings
        if self.handler.g_estimate == "sample":
            return lambda U: np.asarray(c.g(sample(self.samplers, c, t, [self.space.decode(u) for u in U])),
                                        dtype=float)
        post_g = self._constraint_posterior(j, m, now)
        beta_g = float(s.research.exploration.beta_g) if s.research.exploration.beta_g is not None else self.exploration.beta_t(
            self.objective.gp_all, t)
        nu_g = self.exploration.nu(post_g, self.trials, self._live.values(), m, now, t, beta_g,
                                   s.research.exploration.b_c)  # v_t^g, 004 §5
        if self.handler.g_estimate in SHIFTS:
            return acq.shifted(post_g, SHIFTS[self.handler.g_estimate] * nu_g)
        if self.handler.g_estimate == "pof":
            return acq.probability_feasible(post_g, log)
        return acq.estimate(self.algorithm.estimate, post_g, nu_g, C, -1.0, self.rng)

    def _constraint_posterior(self, j: int, m: float, now: float, refit: bool = True) -> Posterior:
        c = self.constraints[j]
        done_c, yc_all = constraint_view(c, self.trials, m, self.window.unit, now,
                                         self.settings.research.censored.use_elapsed_bound and c.runtime,
                                         -np.inf if self.view.believes_pending_g else 0.0)
        post = self._fit_and_view(self.constraint_models[j], done_c, yc_all,
                                  lambda trs: np.array([c.observed(tr) for tr in trs], dtype=float),
                                  refit=refit)
        if c.log and self.settings.research.budget.budget_bound == "mean":
            post = mean_run_time(post)
        return post

    def constraint_posterior(self, j: int = 0, now: float | None = None) -> Posterior:
        """Constraint j's posterior of g (<= 0: feasible) as the next suggestion would see it
        (no refit); ``acquisition.probability_feasible`` of it is the pof handler's estimate."""
        now = float(self.clock()) if now is None else now
        return self._constraint_posterior(j, self._usable(now, len(self.trials))[0], now, refit=False)

    def objective_posterior(self, now: float | None = None) -> Posterior:
        """The objective posterior the next suggestion would use (normalized targets; no refit)."""
        now = float(self.clock()) if now is None else now
        _, done = self._usable(now, len(self.trials))
        return self._fit_and_view(self.objective, done, self._censored(done), self._targets, refit=False)

    def context_correlation(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
        """How much what a configuration scores at context ``a`` says about it at ``b``: the GP's
        prior correlation of the objective at one configuration under the two contexts, without
        the contexts' level (``Kernel``): w + (1 - w) rho(r_z) with the shared kernels, rho(r_z)
        with the product one; 1 for equal contexts.  It is the current fit's estimate."""
        if self.contexts is None:
            raise ValueError("context_correlation: this optimizer has no context_space")
        gp = self.objective.gp_done
        x = np.zeros((1, len(gp.hyper.lengthscales) - self.contexts.space.dim))   # any configuration
        A = self.contexts.join(x, self.contexts.encode(a))
        B = self.contexts.join(x, self.contexts.encode(b))
        return float(gp.correlation_apart_from_level(A, B)[0, 0])

    def _fit_and_view(self, model: CensoredModel, done: list[Trial], y_all: np.ndarray,
                      targets: Callable[[list[Trial]], np.ndarray], refit: bool = True) -> Posterior:
        """Refit if due, then the posterior the algorithm's pending-trial rule asks for."""
        return self.view(model, self.trials, self._by_id, done, y_all, targets, self.rng,
                         refit=refit, objective=model is self.objective)

    def _start_round(self, t: int) -> None:
        """Feed the handler the constraint values that arrived since the previous round, in
        arrival order (004 App. C: Q_{t+1} uses the costs revealed at round t)."""
        arrived, feasible = arrived_since(self.trials, self._seen_constraint, self.constraints)
        self.handler.feasible_found = self.handler.feasible_found or feasible
        self.handler.start_round(t, arrived)

    def _reward_range(self) -> tuple[float, float]:
        """``reward_range``, computed again only once a trial has ended since (a suggestion
        asks for it several times, and it walks every trial)."""
        key = (id(self.trials), len(self.trials), self._outcomes)
        if self._range_memo is None or self._range_memo[0] != key:
            s = self.settings
            lo, hi = reward_range(s.mode, s.objective_bounds, self.trials)
            self._range_memo = (key, (lo, hi), self._rank_warp(lo, hi, self.warp_on))
        return self._range_memo[1]

    def _rank_warp(self, lo: float, hi: float, copula: bool) -> RankWarp | None:
        """The copula's warp (``RankWarp.fit``), or the one under it (the tail's, or None), of
        the finished results normalized over [lo, hi]."""
        if not copula and self.base_warp == "none":
            return None
        finished = [tr for tr in self.trials if tr.status == Status.FINISHED]
        u = normalized(finished, self.settings.mode, lo, hi)
        return RankWarp.fit(u) if copula else RankWarp.fit_tail(u)

    def _choose_warp(self, done: list[Trial]) -> None:
        """``output_warp: none-or-copula``, ``tail-or-copula``: once there are
        ``WARP_CHOICE_FROM`` usable results (and the start-up design's), and again each time
        they grew by ``WARP_CHOICE_EVERY``, up to ``fit_max_points`` and while the GPs hold every
        trial, the copula or the warp under it by held-out ranks (``warp_choice.prefer_copula``,
        on a random stream of its own); a change refits the GP at once.  The copula's GP has the
        noise floor ``noise_floor``, the other the Optimizer's default."""
        s, n = self.settings, len(done)
        if (n < max(self.n_initial, WARP_CHOICE_FROM) or n > s.research.fitting.fit_max_points or self.subset_active
                or n < WARP_CHOICE_EVERY * self._warp_chosen_at):
            return
        self._warp_chosen_at = n
        lo, hi = self._reward_range()
        copula, base = self._rank_warp(lo, hi, True), self._rank_warp(lo, hi, False)
        if copula is None:
            return
        u = normalized(done, s.mode, lo, hi)
        model = self.objective
        rng = np.random.default_rng([abs(s.seed), n])     # the suggestions' stream untouched
        use = prefer_copula(self.warp_rule, model.gp_all.kernel, self.view.X(done),
                            u if base is None else base(u), copula(u), model.gp_all.hyper, rng,
                            (self.objective_bounds(False), self.objective_bounds(True)), s.research.fitting.fit_restarts,
                            s.research.fitting.lengthscale_prior, model.groups, s.research.model.prior_mean == "mean", WARP_MARGIN)
        if use != self.warp_on:
            self.warp_on, self._range_memo = use, None
            model.refit_now(self.objective_bounds(use))

    def objective_bounds(self, copula: bool) -> HyperBounds:
        """The objective GP's box: its noise floor ``noise_floor``, or, without the copula under
        a rule that chooses it, at most the Optimizer's default (the floor is for the copula)."""
        floor = self.settings.research.model.noise_floor
        if not copula and self.warp_rule in CHOOSING_RULES:
            floor = min(floor, HyperBounds.noise[0])
        return HyperBounds(noise=(floor, HyperBounds.noise[1]))

    def _warp(self) -> RankWarp | None:
        """The output warp of the finished results as it applies now (``warp_rule``, ``warp_on``),
        memoized with ``_reward_range``."""
        self._reward_range()
        return self._range_memo[2]

    def _f_bound(self) -> float:
        """B, the bound on |f| that the handlers clip to (003 Alg. 1)."""
        return float(max(abs(v) for v in self._reward_range()))

    def _targets(self, trials: list[Trial]) -> np.ndarray:
        return normalized(trials, self.settings.mode, *self._reward_range(), warp=self._warp())

    def _incumbents(self, done: list[Trial], k: int = 5) -> np.ndarray | None:
        if not done:
            return None
        order = np.argsort(-self._targets(done))[:k]
        return np.vstack([done[i].x[: self.space.dim] for i in order])

    @property
    def n_initial(self) -> int:
        """Size of the start-up design, counting a categorical once however many one-hot columns
        it has: ``"auto"``, two points per parameter; ``"lean"``, one per parameter and one
        more, at least 5 and at most ``"auto"``'s (docs/research/notes/method.md "A lean start-up design in a
        study")."""
        n, d = self.settings.n_initial, len(self.space.params)
        return 2 * d if n == "auto" else min(2 * d, max(d + 1, 5)) if n == "lean" else int(n)

    def _running(self, trial_id: int) -> Trial:
        if trial_id not in self._by_id:
            raise KeyError(f"unknown trial_id {trial_id!r}: suggest() never returned it")
        trial = self._by_id[trial_id]
        if trial.status != Status.RUNNING:
            raise ValueError(f"trial {trial_id} is already {trial.status}; a result is told once")
        self._changed.add(trial_id)     # the caller changes it
        return trial

    def run_fits_in(self, pool: Pool | None) -> None:
        """Run the deferred marginal-likelihood fits (``Settings.refit_apply: next``) in ``pool``
        (e.g. a one-process ``concurrent.futures.ProcessPoolExecutor``), not on the caller's
        thread when they are applied; the suggestions do not change.  A fit in flight (a
        resumed state) starts there now.  None: run them here (call it before the pool
        closes: a fit in flight there then runs here when it is applied)."""
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
        changed, self._changed = sorted(self._changed), set()
        return [self._by_id[t].to_dict() for t in changed]

    def save(self, path: str | os.PathLike) -> None:
        """Write the state as JSON atomically (a crash never leaves half a file)."""
        write_json(path, self.state_dict())

    @classmethod
    def from_state(cls, state: Mapping[str, Any], *, clock: Callable[[], float] = time.time,
                   samplers: Mapping[str, Sampler] | None = None) -> "Optimizer":
        space, settings, domain = built_with(state)
        opt = cls(space, settings, clock=clock, domain=domain, samplers=samplers,
                  context_space=state.get("context_space"))
        restore(opt, state)
        return opt

    @classmethod
    def load(cls, path: str | os.PathLike, *, clock: Callable[[], float] = time.time,
             samplers: Mapping[str, Sampler] | None = None) -> "Optimizer":
        with open(path) as fh:
            return cls.from_state(json.load(fh), clock=clock, samplers=samplers)


def _on(h: Callable[[np.ndarray], np.ndarray], lift: Callable[[np.ndarray], np.ndarray]):
    """``h`` evaluated at ``lift(U)`` (a configuration with its context appended), keeping
    ``h.top`` (the skip of hopeless candidates) where ``h`` has one."""
    def g(U: np.ndarray) -> np.ndarray:
        return h(lift(U))
    top = getattr(h, "top", None)
    if top is not None:
        g.top = lambda U, k: top(lift(U), k)      # type: ignore[attr-defined]
    return g
