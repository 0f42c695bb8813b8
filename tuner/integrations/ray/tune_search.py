"""Ray Tune searcher exposing the tuner's algorithms: ``TunerSearch``.

Modelled on Ray's own searchers (``OptunaSearch``, ``HyperOptSearch``): the search space comes
either from the constructor or from ``tune.Tuner(param_space=...)`` through
``set_search_properties``; ``metric``/``mode`` from the constructor or ``tune.TuneConfig``.

    from ray import tune
    from tuner.integrations.ray.tune_search import TunerSearch

    def trainable(config):
        tune.report({"loss": (config["x"] - 0.3) ** 2 + config["offset"]})

    tuner = tune.Tuner(
        trainable,
        param_space={"x": tune.uniform(-1.0, 1.0), "lr": tune.loguniform(1e-4, 1e-1),
                     "offset": 0.0},                # constants are passed through
        tune_config=tune.TuneConfig(
            search_alg=TunerSearch(metric="loss", mode="min"),
            num_samples=20,
            max_concurrent_trials=2,                # Ray wraps the searcher in a ConcurrencyLimiter
        ),
    )
    best = tuner.fit().get_best_result(metric="loss", mode="min")

How Ray's calls map onto the ask/tell ``Optimizer`` (``searcher.optimizer``):

* ``suggest(ray_trial_id)``: the ``points_to_evaluate`` first, in order, each registered with
  ``Optimizer.suggest(config=point)``; then ``Optimizer.suggest()``.  The trial's start time is
  the moment Ray asks (the clock is wall time unless ``clock=`` is given), which, with
  ``max_concurrent_trials``, is the moment a slot frees.  Ray trial id -> optimizer trial id is
  kept in ``searcher.trial_ids``.
* ``on_trial_complete(ray_trial_id, result, error)``: an error, a missing result, a missing,
  non-numeric or non-finite ``result[metric]`` -> ``Optimizer.fail(id, reason)`` (the trial is
  censored for good); otherwise ``Optimizer.tell(id, result[metric], metrics=...)`` with the
  finite numeric entries of the result (``config/...`` entries excluded).  The *last* result a
  trial reported is the one told (as for every Ray searcher).  Completions of unknown trial ids
  (e.g. from a restored experiment) and repeated completions are ignored with a warning.
* ``on_trial_result`` with ``max_t``: each intermediate result is reported to the optimizer
  (``Optimizer.report(id, result[metric], time_attr / max_t)``), so a running trial is censored
  at the value it has reached, not at the worst value.
* Schedulers (ASHA, median stopping, ...): a trial that a scheduler stopped before it finished
  is *censored* (``Optimizer.fail(..., status=STOPPED)``), not told as an evaluation: its last
  result is an intermediate one.  With ``max_t`` it is censored at the final value the
  optimizer's model of partial curves predicts from its results (``Optimizer.use_curves``;
  its last value until a run has finished): a run stopped at the first rung is taught to the
  GP neither as the worst nor as what it reached then.  With ``max_t`` (the
  scheduler's; pass it with a scheduler) a trial is a full evaluation when its ``time_attr``
  reached it.  Without, it is inferred: a full
  evaluation when Ray passed its last result on (no stop decision) or it got as far as every
  trial before it (a ``stop={...}`` criterion); a trial the scheduler stopped while no other
  trial had gone further is then told as finished, which ``max_t`` avoids.
* ``mode`` ("min"/"max") becomes the Optimizer's ``mode`` setting; the Optimizer maximizes
  internally.  ``algorithm``, ``objective_bounds``, ``seed`` and any other keyword
  (``window``, ``beta``, ``n_candidates``..., ``research={...}``; see ``tuner.core.settings``)
  are Optimizer settings and are validated at construction.  ``clock=`` replaces the wall clock.
* A ``TunerScheduler(search=...)`` used alongside: its stop reason becomes the trial's reason,
  and its state travels in this searcher's checkpoint (``tune_scheduler`` module docstring).
* ``save(path)``/``restore(path)``: one versioned JSON file (written to a temp file, then
  ``os.replace``) with ``Optimizer.state_dict()``, the id mapping, the remaining
  ``points_to_evaluate``, ``metric``, ``mode``, the settings and the constants of the param
  space; Ray calls them through ``save_to_dir``/``restore_from_dir`` when it checkpoints the
  experiment, so ``tune.Tuner.restore`` continues the same study.

Spaces: ``space`` may be a flat Ray Tune param space (``tune.uniform``, ``loguniform``,
``randint``, ``lograndint``, ``choice``, q-variants; converted by
``tuner.integrations.ray.tune_space.from_tune``) or the tuner's plain mapping format (``{"C":
{"type": "float", "low": 1e-4, "high": 100, "log": True}, ...}``, read by
``SearchSpace.from_dict``).  A mapping that holds at least one Ray Tune domain (or
``grid_search``/``sample_from``) is read as a Ray param space, any other as the plain format.  In a
Ray param space, entries without a domain (numbers, strings, nested dicts of constants) are
constants: not searched, but returned in every suggested config.  Nested domains,
``tune.sample_from`` and ``tune.grid_search`` are rejected with an error naming the parameter.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import numbers
import time
from typing import Any, Callable, Mapping

import numpy as np
from ray.tune.result import DEFAULT_METRIC
from ray.tune.search import UNDEFINED_METRIC_MODE, UNDEFINED_SEARCH_SPACE, Searcher
from ray.tune.search.variant_generator import parse_spec_vars
from ray.util.debug import log_once

from tuner.core.curves import CurveModel
from tuner.core.fields import Field
from tuner.core.optimizer import Optimizer
from tuner.core.settings import Settings, overridden
from tuner.core.persist import envelope, opened, write_atomic
from tuner.core.space import SearchSpace, SpaceError, check_value
from tuner.core.trial import Status
from tuner.study.defaults import study_optimizer_defaults
from .tune_space import from_tune

logger = logging.getLogger(__name__)

STATE_FORMAT = "tuner.tune_search"
STATE_VERSION = 1

__all__ = ["TunerSearch", "split_param_space"]


# --- spaces ----------------------------------------------------------------------------------

def split_param_space(space: Mapping[str, Any]) -> tuple[SearchSpace | None, dict[str, Any]]:
    """``(searchable space or None, constants)`` of a Ray Tune param space or a plain-format space.

    A mapping with at least one unresolved Ray Tune value (a ``Domain``, ``grid_search`` or
    ``sample_from``/``eval``), at any depth, is a Ray param space; any other mapping is the
    tuner's plain format (no constants).  For a Ray param space without any domain use
    ``_split_ray_space`` directly (it returns ``None`` for the space).
    """
    if not isinstance(space, Mapping):
        raise SpaceError(f"space must be a mapping of parameter names, got {type(space).__name__}")
    _, domain_vars, grid_vars = parse_spec_vars(dict(space))
    if domain_vars or grid_vars:
        return _split_ray_space(space)
    try:
        return SearchSpace.from_dict(space), {}
    except SpaceError as exc:
        raise SpaceError(
            f"{exc} (the space holds no Ray Tune domain such as tune.uniform, so it "
            "was read as the tuner's plain format {name: {'type': ..., ...}})"
        ) from exc


def _split_ray_space(config: Mapping[str, Any]) -> tuple[SearchSpace | None, dict[str, Any]]:
    """Searchable part (top-level Ray Tune domains) and constants of a Ray Tune param space."""
    if not isinstance(config, Mapping):
        raise SpaceError(f"param_space must be a mapping, got {type(config).__name__}")
    _, domain_vars, grid_vars = parse_spec_vars(dict(config))
    for path, _ in grid_vars:
        raise SpaceError(f"space.{'/'.join(map(str, path))}: tune.grid_search is not supported "
                         "by TunerSearch (a grid is not a search space a GP can model); use "
                         "tune.choice for a categorical parameter")
    for path, _ in domain_vars:
        if len(path) > 1:
            raise SpaceError(f"space.{'/'.join(map(str, path))}: nested search spaces are not "
                             "supported by TunerSearch; flatten the param_space")
    unresolved = {path[0] for path, _ in domain_vars}
    constants = {k: v for k, v in config.items() if k not in unresolved}
    if not unresolved:
        return None, constants
    # ``from_tune`` rejects tune.sample_from / {"eval": ...} (both parsed as Function domains).
    searchable = {path[0]: dom for path, dom in domain_vars}
    return from_tune(searchable), constants


def _native(value: Any) -> Any:
    """numpy scalars -> Python scalars (so that configs stay JSON-serializable)."""
    return value.item() if isinstance(value, np.generic) else value


def _check_point(space: SearchSpace, point: Any, where: str) -> dict[str, Any]:
    """``point`` (named ``where`` in errors) checked against the space."""
    if not isinstance(point, Mapping):
        raise ValueError(f"{where} must be a dict of parameter values, got {point!r}")
    missing = [name for name in space.names if name not in point]
    if missing:
        raise ValueError(f"{where} lacks parameter(s) {missing} (the search space has "
                         f"{space.names})")
    for name, p in space.params.items():
        try:
            check_value(p, point[name])
        except (SpaceError, TypeError, ValueError) as exc:
            raise ValueError(f"{where}, parameter '{name}': {exc}") from exc
    return {k: _native(v) for k, v in point.items()}


def _check_mode(mode: Any) -> None:
    if mode not in ("min", "max"):
        raise ValueError(f"mode must be 'min' or 'max' (got {mode!r}); TunerSearch optimizes a "
                         "single metric")


def _numeric_metrics(result: Mapping[str, Any]) -> dict[str, float]:
    out = {}
    for k, v in result.items():
        if str(k).startswith("config/") or isinstance(v, (bool, np.bool_)):
            continue
        if isinstance(v, numbers.Real) and math.isfinite(float(v)):
            out[str(k)] = float(v)
    return out


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else None


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


def _settings(asked: Mapping[str, Any], mode: str | None, context: bool) -> dict[str, Any]:
    """The optimizer's settings (``to_dict``) of a search: ``asked`` over a study's defaults,
    validated now (unknown names, bad values, an unknown algorithm), not at the first suggestion
    deep inside a Ray run."""
    if "mode" in asked:
        raise ValueError("pass mode as TunerSearch(mode=...), not as an optimizer setting")
    # idle_near_deadline off here: a Tune trial's time from suggestion to result includes its
    # actor's start, so the shortest run is overstated and the search would end too soon
    study = Settings.from_dict({**study_optimizer_defaults(asked.get("algorithm"), context),
                                "idle_near_deadline": False})
    settings = overridden(study, {**asked, "mode": mode or "max"}, "TunerSearch")
    settings.validate()
    out = settings.to_dict()
    if not _jsonable(out):
        raise ValueError("optimizer settings must be JSON-serializable (they are checkpointed)")
    return out


def _start_points(points: list[dict] | None, rewards: list | None
                  ) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """``points_to_evaluate`` to run first, or, with ``evaluated_rewards``, results to tell."""
    if points is not None and not isinstance(points, (list, tuple)):
        raise ValueError("points_to_evaluate must be a list of dicts")
    points = [copy.deepcopy(p) for p in points or []]
    if rewards is None:
        return points, []
    if len(rewards) != len(points):
        raise ValueError(f"evaluated_rewards must give one value per point of points_to_evaluate "
                         f"({len(points)}); got {len(rewards)}")
    return [], [[p, float(v), False, False, None] for p, v in zip(points, rewards)]


# --- the searcher ----------------------------------------------------------------------------

class TunerSearch(Searcher):
    """Ray Tune ``Searcher`` running the tuner's censored-feedback GP bandits (see module doc).

    Args:
        space: a flat Ray Tune param space (``tune.uniform``...) or the tuner's plain mapping
            format.  Optional: without it, the ``param_space`` of ``tune.Tuner`` is used.
        metric: the result key to optimize (or from ``tune.TuneConfig(metric=...)``).
        mode: ``"min"`` or ``"max"`` (or from ``tune.TuneConfig(mode=...)``).
        points_to_evaluate: configurations to run first, in order (each must give a value to
            every searched parameter; extra keys are passed through to the trial).
        evaluated_rewards: the metric's values of ``points_to_evaluate``, evaluated before:
            they are told to the optimizer instead of run (as Ray's own searchers do).
        context_space, context: a context (paper 001 §5): ``context_space`` declares it like
            the space (the tuner's mapping format), ``context`` is this experiment's value of
            it; earlier results, with the contexts they ran at, come in through
            ``add_evaluated_point(..., context=...)``.
        algorithm: ``auto`` (default: ``gp-ei-sdf`` on a space of categoricals only without
            constraints or a context while at most 3 trials run, ``gp-ucb-sdf`` otherwise),
            ``gp-ucb-sdf``, ``gp-ts-sdf``, ``randgp-ucb``, ``gp-ei-sdf``, ``gp-ucb``,
            ``gp-bucb``, ``gp-bts``, ``asy-ts``, ``random``.
        objective_bounds: known ``(min, max)`` of the metric, if any.
        seed: seed of the optimizer's random numbers.
        budget: a per-trial budget on ``budget_metric`` (seconds for the default
            ``time_total_s``, which Ray Tune reports for every trial): the constraint
            ``budget_metric / budget - 1 <= 0``, learned by its own GP and traded against the
            objective by ``constraint_handler`` (default ``pof``).  More constraints:
            ``constraints=[{"metric": ..., "limit": ..., "type": "budget" | "upper"}]``.
        budget_metric: the result key the budget applies to.
        time_budget_s: the experiment's time budget, as given to
            ``tune.TuneConfig(time_budget_s=...)`` (Ray Tune does not pass it to a searcher):
            from the first suggestion on, with ``finish_by_deadline`` (on by default here), near
            its end only configurations predicted to finish in the time left are suggested.
            With ``idle_near_deadline=True`` (off here, unlike a study: a trial's time from
            suggestion to result includes its actor's start) none is once the time left is
            under the shortest finished run, and the search ends when the running trials have.
            The time left is checkpointed, so a restored experiment goes on with it.
        time_attr, max_t: with a scheduler that stops trials early (ASHA), its time attribute
            and the value a full run reaches; a trial stopped before is censored (module
            docstring).  Without max_t it is inferred from the results.
        **optimizer_settings: any other optimizer setting (docs/reference/settings.md), research
            switches as ``research={...}`` (docs/reference/research.md), plus ``clock`` (a
            function returning the time in seconds; ``time.time`` by default).  The search
            starts from a study's defaults (``tuner.study.defaults``: ``output_warp: auto``,
            ``kernel: matern52``, ``n_initial: lean``, ``finish_by_deadline``, which acts only
            with ``time_budget_s``, and the research switches the reference lists), but
            ``idle_near_deadline``, off here.

    Example::

        tune.Tuner(trainable, param_space={"x": tune.uniform(0, 1)},
                   tune_config=tune.TuneConfig(search_alg=TunerSearch(metric="loss", mode="min"),
                                               num_samples=20, max_concurrent_trials=2))
    """

    def __init__(self, space: Mapping[str, Any] | SearchSpace | None = None,
                 metric: str | None = None, mode: str | None = None,
                 points_to_evaluate: list[dict] | None = None, algorithm: str = "auto",
                 objective_bounds=None, seed: int = 0, budget: float | None = None,
                 budget_metric: str = "time_total_s", time_attr: str = "training_iteration",
                 max_t: float | None = None, evaluated_rewards: list | None = None,
                 context_space: Mapping[str, Any] | None = None,
                 context: Mapping[str, Any] | None = None, time_budget_s: float | None = None,
                 **optimizer_settings: Any):
        if metric is not None and not isinstance(metric, str):
            raise ValueError(f"metric must be a single result key (got {metric!r}); TunerSearch "
                             "optimizes a single metric")
        if mode is not None:
            _check_mode(mode)
        super().__init__(metric=metric, mode=mode)
        self._clock: Callable[[], float] = optimizer_settings.pop("clock", time.time)
        if budget is not None:
            # Not ``runtime``: the time since suggest() bounds Ray's time_total_s from above
            # (it includes scheduling), so it is no lower bound of the metric.
            optimizer_settings["constraints"] = [
                *optimizer_settings.get("constraints", []),
                {"metric": budget_metric, "limit": budget, "type": "budget"}]
        if objective_bounds is not None:
            objective_bounds = [float(objective_bounds[0]), float(objective_bounds[1])]
        self._settings: dict[str, Any] = _settings(
            {"algorithm": algorithm, "objective_bounds": objective_bounds, "seed": int(seed),
             **optimizer_settings}, mode, context is not None)

        self._space: SearchSpace | None = space if isinstance(space, SearchSpace) else None
        self._constants: dict[str, Any] = {}
        if space and self._space is None:
            self._space, self._constants = split_param_space(space)
        if (context_space is None) != (context is None):
            raise ValueError("context_space and context go together: pass both or neither")
        self._context_space = None if context_space is None else dict(context_space)
        self._context = None if context is None else dict(context)
        self._time_budget: float | None = Field((float, None), above=0, finite=True).check(
            "time_budget_s", time_budget_s)
        self._deadline: float | None = None     # on the clock: the first suggestion + the budget
        # the points to run first, and earlier results told once the optimizer exists:
        # [parameters, value, error, pruned, context]
        self._points, self._evaluated = _start_points(points_to_evaluate, evaluated_rewards)
        self.optimizer: Optimizer | None = None
        self._trial_ids: dict[str, int] = {}
        self._time_attr, self._max_t = time_attr, None if max_t is None else float(max_t)
        # Ray trial id -> time_attr of its last on_trial_result
        self._seen: dict[str, float] = {}
        self._furthest = -math.inf             # the largest time_attr any trial reached
        self.scheduler: Any = None             # a TunerScheduler used alongside (its state is ours)
        self._setup()

    # --- set-up ---------------------------------------------------------------------------------

    def _setup(self) -> None:
        """Build the Optimizer once the space and the mode are known."""
        if self.optimizer is not None or self._space is None or not self._mode:
            return
        if self._metric is None:
            self._metric = DEFAULT_METRIC   # as Ray's searchers do when only a mode is given
        self._points = [_check_point(self._space, p, f"points_to_evaluate[{i}]")
                        for i, p in enumerate(self._points)]
        self.optimizer = Optimizer(self._space, Settings.from_dict(self._settings),
                                   clock=self._clock, mode=self._mode,
                                   context_space=self._context_space)
        self._learn_curves()
        if self._context is not None:
            self.optimizer.contexts.encode(self._context)     # a bad context fails here, not later
        evaluated, self._evaluated = self._evaluated, []
        for point in evaluated:
            self.add_evaluated_point(*point[:4], context=point[4])

    def _learn_curves(self) -> None:
        """With ``max_t``, the optimizer learns partial curves from the intermediate results
        (``Optimizer.use_curves``): a trial a scheduler stopped is censored at its predicted
        final value, never taken as final."""
        if self._max_t is not None and self.optimizer is not None:
            self.optimizer.use_curves(CurveModel(self.optimizer.space.dim, self._max_t,
                                                 self.optimizer.settings.seed))

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict,
                              **spec: Any) -> bool:
        """Take the space from ``tune.Tuner(param_space=...)`` (False if a space was given)."""
        if self._space is not None:
            return False
        space, constants = _split_ray_space(config or {})
        if space is None:
            return False
        if mode:
            _check_mode(mode)
        if metric is not None and not isinstance(metric, str):
            raise ValueError(f"metric must be a single result key (got {metric!r})")
        self._space, self._constants = space, constants
        if metric:
            self._metric = metric
        if mode:
            self._mode = mode
        self._setup()
        return True

    # --- Ray Tune calls ---------------------------------------------------------------------------

    def suggest(self, trial_id: str) -> dict | None:
        if self._space is None:
            raise RuntimeError(
                UNDEFINED_SEARCH_SPACE.format(cls=type(self).__name__, space="space")
            )
        if not self._metric or not self._mode:
            raise RuntimeError(UNDEFINED_METRIC_MODE.format(cls=type(self).__name__,
                                                            metric=self._metric, mode=self._mode))
        self._setup()
        assert self.optimizer is not None
        if self._deadline is None and self._time_budget is not None:
            self._deadline = self._clock() + self._time_budget
        if self._deadline is not None:
            self.optimizer.deadline = self._deadline      # finish_by_deadline reads it
        if trial_id in self._trial_ids:   # asked twice for the same trial: same answer
            config = self.optimizer.trials[self._trial_ids[trial_id]].config
            return {**copy.deepcopy(self._constants), **copy.deepcopy(config)}
        if not self.optimizer.can_start():
            # no run could finish in the time left (idle_near_deadline): start none, and end
            # the search once the running trials have (a faster one may still finish first)
            return Searcher.FINISHED if not self.optimizer.running else None
        if self._points:
            point = self._points[0]
            s = self.optimizer.suggest(config={k: point[k] for k in self._space.names},
                                       context=self._context)
            self._points.pop(0)
            config = {**point, **s.config}   # extra keys of the point are passed through
        else:
            s = self.optimizer.suggest(context=self._context)
            config = s.config
        self._trial_ids[trial_id] = s.trial_id
        return {**copy.deepcopy(self._constants), **config}

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        """Ray passes a result here only when the trial goes on (not on a stop decision)."""
        t = _number(result.get(self._time_attr))
        if t is not None:
            self._seen[trial_id] = t
            self._furthest = max(self._furthest, t)
            self._report(trial_id, result, t)

    def _report(self, trial_id: str, result: Mapping[str, Any], t: float) -> None:
        """An intermediate result at ``t`` of ``max_t`` to the optimizer (``Optimizer.report``)."""
        opt_id, value = self._trial_ids.get(trial_id), _number(result.get(self._metric))
        if self._max_t is None or opt_id is None or value is None or self.optimizer is None:
            return
        try:
            self.optimizer.report(opt_id, value, min(t / self._max_t, 1.0))
        except ValueError as exc:       # already ended, or progress that went back
            logger.debug("TunerSearch: result of trial %s not reported: %s", trial_id, exc)

    def _stopped_early(self, trial_id: str, result: Mapping[str, Any]) -> str | None:
        """Why a trial's last result is no full evaluation, or None: a scheduler (ASHA, median
        stopping...) stopped it before ``max_t`` or, without ``max_t``, on a result Ray did not
        pass to ``on_trial_result`` (a stop decision) before it got as far as another trial."""
        t = _number(result.get(self._time_attr))
        if t is None:
            return None
        self._furthest, furthest = max(self._furthest, t), self._furthest
        if self._max_t is not None:
            early = t < self._max_t
        else:
            early = self._seen.get(trial_id) != t and t < furthest
        return (f"stopped early by the scheduler at {self._time_attr} = {t:g} (censored: its "
                f"last result is no full evaluation)") if early else None

    def on_trial_complete(self, trial_id: str, result: dict | None = None,
                          error: bool = False) -> None:
        opt_id = self._trial_ids.get(trial_id)
        if opt_id is None or self.optimizer is None:
            logger.warning("TunerSearch: ignoring the completion of trial %s, which this searcher "
                           "never suggested (e.g. a trial of a restored experiment)", trial_id)
            return
        metrics = _numeric_metrics(result or {})
        reason = None
        value = None
        status = Status.FAILED
        early = None if error or not result else self._stopped_early(trial_id, result)
        if early is not None:
            reason, status = early, Status.STOPPED
            why = getattr(self.scheduler, "reasons", {}).get(trial_id)
            if why:
                reason = f"{reason}: {why}"
            self._report(trial_id, result, _number(result.get(self._time_attr)))
        elif error:
            reason = "the trial raised an error (Ray Tune reported error=True)"
        elif not result:
            reason = "the trial ended without reporting a result"
        elif self._metric not in result:
            reason = f"metric '{self._metric}' missing from the trial's last result"
        else:
            try:
                value = float(result[self._metric])
            except (TypeError, ValueError):
                reason = f"metric '{self._metric}' is not a number ({result[self._metric]!r})"
            else:
                if not math.isfinite(value):
                    reason = f"metric '{self._metric}' is not finite ({value})"
        try:
            if reason is None:
                self.optimizer.tell(opt_id, value, metrics=metrics)
            else:
                self.optimizer.fail(opt_id, reason, metrics=metrics, status=status)
        except ValueError as exc:  # already told (e.g. a trial resumed after a restore)
            logger.warning(
                "TunerSearch: ignoring another completion of trial %s: %s", trial_id, exc
            )

    def add_evaluated_point(self, parameters: dict, value: float, error: bool = False,
                            pruned: bool = False, intermediate_values: list[float] | None = None,
                            context: Mapping[str, Any] | None = None) -> None:
        """An evaluation made elsewhere (an earlier experiment, a colleague's run): told to the
        optimizer as a finished trial (``error``: failed; ``pruned``: stopped early, censored),
        at ``context`` (default: this experiment's).  Before the space is known it waits.
        ``intermediate_values`` (Ray's signature) are not used."""
        context = self._context if context is None else dict(context)
        if self.optimizer is None:
            self._evaluated.append([copy.deepcopy(parameters), float(value), bool(error),
                                    bool(pruned), context])
            return
        point = _check_point(self._space, parameters, "add_evaluated_point(parameters)")
        config = {k: point[k] for k in self._space.names}
        origin = "add_evaluated_point"
        if error or pruned:
            status, how = (Status.FAILED, "that failed") if error else (Status.STOPPED,
                                                                          "stopped early")
            self.optimizer.add_earlier(config, status=status, context=context, origin=origin,
                                       reason=f"an earlier evaluation {how} (add_evaluated_point)")
        elif not math.isfinite(float(value)):
            self.optimizer.add_earlier(
                config,
                status=Status.FAILED,
                context=context,
                origin=origin,
                reason=f"an earlier evaluation with a non-finite value ({value})",
            )
        else:
            self.optimizer.add_earlier(config, float(value), context=context, origin=origin)

    # --- persistence ------------------------------------------------------------------------------

    @property
    def trial_ids(self) -> dict[str, int]:
        """Ray trial id -> optimizer trial id, for every trial suggested so far."""
        return dict(self._trial_ids)

    @property
    def points_to_evaluate(self) -> list[dict[str, Any]]:
        """The start points not suggested yet."""
        return copy.deepcopy(self._points)

    def get_state(self) -> dict[str, Any]:
        constants = {k: v for k, v in self._constants.items() if _jsonable(v)}
        skipped = sorted(set(self._constants) - set(constants))
        if skipped and log_once("tuner_search:constants"):
            logger.warning(
                "TunerSearch: constants %s of the param space are not JSON-serializable "
                "and are not checkpointed (Ray still passes them to the trials)",
                skipped,
            )
        return envelope(
            STATE_FORMAT,
            STATE_VERSION,
            {
                "metric": self._metric,
                "mode": self._mode,
                "settings": self._settings,
                "space": None if self._space is None else self._space.to_dict(),
                "constants": constants,
                "points_to_evaluate": self._points,
                "context_space": self._context_space,
                "context": self._context,
                "evaluated": self._evaluated,
                "trial_ids": self._trial_ids,
                "seen": self._seen,
                "furthest": None if math.isinf(self._furthest) else self._furthest,
                "optimizer": None if self.optimizer is None else self.optimizer.state_dict(),
                "curves": (None if self.optimizer is None or self.optimizer.curves is None
                           else self.optimizer.curves.state()),
                "scheduler": None if self.scheduler is None else self.scheduler.get_state(),
                # the time budget left, as Ray's TimeoutStopper keeps it across a restore
                "time_left": None
                if self._deadline is None
                else max(self._deadline - self._clock(), 0.0),
            },
        )

    def set_state(self, state: Mapping[str, Any]) -> None:
        opened(state, STATE_FORMAT, (STATE_VERSION,), "the TunerSearch checkpoint")
        saved = None if state["space"] is None else SearchSpace.from_dict(state["space"])
        if (self._space is not None and saved is not None
                and saved.to_dict() != self._space.to_dict()):
            raise ValueError(f"restore: the checkpoint was saved for the search space "
                             f"{saved.to_dict()}, this searcher's is {self._space.to_dict()}; "
                             "restore it into a TunerSearch of the same space")
        self._metric, self._mode = state["metric"], state["mode"]
        self._settings = dict(state["settings"])
        self._space = saved
        # Constants that could not be stored keep the values this instance already has.
        self._constants = {**self._constants, **state["constants"]}
        self._points = [dict(p) for p in state["points_to_evaluate"]]
        self._context_space, self._context = state.get("context_space"), state.get("context")
        self._evaluated = [list(e) for e in state.get("evaluated", [])]
        self._trial_ids = {str(k): int(v) for k, v in state["trial_ids"].items()}
        self._seen = {str(k): float(v) for k, v in state.get("seen", {}).items()}
        furthest = state.get("furthest")
        self._furthest = -math.inf if furthest is None else float(furthest)
        if state["optimizer"] is not None:
            self.optimizer = Optimizer.from_state(state["optimizer"], clock=self._clock)
            self._space = self.optimizer.space
            self._learn_curves()
            if self.optimizer.curves is not None and state.get("curves"):
                self.optimizer.curves.load_state(state["curves"])
        else:
            self.optimizer = None
            self._setup()
        left = state.get("time_left")
        self._deadline = None if left is None else self._clock() + float(left)
        if self.scheduler is not None and state.get("scheduler") is not None:
            self.scheduler.set_state(state["scheduler"])   # after the optimizer: it replays on it

    def save(self, checkpoint_path: str) -> None:
        """Write the state as JSON, atomically (temp file in the same directory, then
        os.replace)."""
        try:
            text = json.dumps(self.get_state())
        except (TypeError, ValueError) as exc:
            raise TypeError(f"TunerSearch state is not JSON-serializable ({exc}); use "
                            "JSON-compatible choices and points_to_evaluate") from exc
        write_atomic(checkpoint_path, text)

    def restore(self, checkpoint_path: str) -> None:
        """The state ``save`` wrote; ValueError naming the file if it is not one."""
        try:
            with open(checkpoint_path) as fh:
                state = json.load(fh)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"restore: {checkpoint_path} is not a TunerSearch checkpoint "
                             f"({exc})") from None
        self.set_state(state)

    def save_to_dir(self, checkpoint_dir: str, session_str: str = "default") -> None:
        # Ray only tolerates NotImplementedError here; an unserializable state must not end
        # the experiment, only skip the searcher checkpoint.
        try:
            super().save_to_dir(checkpoint_dir, session_str)
        except TypeError as exc:
            if log_once("tuner_search:save_to_dir"):
                logger.warning("TunerSearch: searcher checkpoint skipped: %s", exc)
