"""Ray Tune trial scheduler applying the tuner's stopping rules: ``TunerScheduler``.

A thin adapter, as Ray's ``AsyncHyperBandScheduler`` is one: each result of a running trial goes
to the rules of ``tuner.loop.stopping`` (the same objects ``tuner run`` uses), and the first
rule that gives a reason stops the trial.

    from ray import tune
    from tuner.integrations.ray import TunerScheduler, TunerSearch

    search = TunerSearch(metric="accuracy", mode="max", max_t=80, time_attr="epoch")
    tuner = tune.Tuner(train, param_space=space, tune_config=tune.TuneConfig(
        search_alg=search, scheduler=TunerScheduler(search=search, max_t=80, time_attr="epoch"),
        num_samples=40, max_concurrent_trials=4))

Rules (``rule=``):

* ``curve`` (default): stop a run once the curve model (``tuner.core.curves.CurveModel``,
  trained on the finished runs of this experiment) puts the upper bound mu + kappa sigma of
  its final value below the best final value (``CurveRule``).  It needs each trial's
  configuration in the unit cube: from the ``TunerSearch`` passed as ``search=`` (which also
  learns from the stopped runs, censored at the value they reached), from ``space=`` (the
  param space), or else learned from the configurations the trials bring
  (``tuner.core.seen_space.SeenSpace``): ``metric``, ``mode``, ``time_attr`` and ``max_t`` are
  enough, as for Ray's ``ASHAScheduler``.
* ``asha``: asynchronous successive halving on rungs ``grace * eta^k`` (``ASHA``).
* ``none``: no rule on the score.

With ``budget=`` (seconds of ``budget_attr``, by default Ray's ``time_total_s``), the pace rule
(``PaceBudget``) comes first: a run whose pace puts its full length over the budget is stopped.
A run that reaches ``max_t`` is stopped there (as Ray's ASHA does) and counts as finished.

Why a trial was stopped: in its last result under ``stopped_early`` (Ray's results table shows
every stopped trial TERMINATED; ``result.metrics["stopped_early"]`` says why), in
``scheduler.reasons[ray_trial_id]``, logged at INFO, and with ``search=`` the reason the
optimizer records for the trial.

``Tuner.restore``: Ray pickles the scheduler when the experiment starts and does not checkpoint
it later.  With ``search=``, the scheduler's inputs (every result it judged and every trial
that finished) travel in the ``TunerSearch`` checkpoint, and the restored scheduler replays
them, so the rungs, the curve model and the best value are as they were.  Without a
``TunerSearch`` the rules start empty after a restore (as Ray's own schedulers do).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any, Mapping

from ray.tune.experiment import Trial
from ray.tune.schedulers.trial_scheduler import FIFOScheduler, TrialScheduler

from tuner.core.curves import CurveModel
from tuner.core.seen_space import SeenSpace
from tuner.core.space import SearchSpace
from tuner.core.trial import Status
from tuner.loop.stopping import CurveRule, Fidelity, PaceBudget, StoppingRule, asha_rule

if TYPE_CHECKING:
    from .tune_search import TunerSearch

logger = logging.getLogger(__name__)

RULES = ("curve", "asha", "none")
# the key of a stopped trial's last result that says why it stopped (Ray shows it TERMINATED)
STOPPED_KEY = "stopped_early"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(float(value)) else None


class TunerScheduler(FIFOScheduler):
    """Ray Tune ``TrialScheduler`` stopping runs early by the tuner's rules (module docstring).

    Args:
        metric, mode: the result key and "min"/"max" (or from ``tune.TuneConfig``, or from
            ``search``).
        time_attr: the result key that counts progress (``training_iteration``, ``epoch``).
        max_t: its value at full length.
        rule: ``curve`` (default), ``asha`` or ``none``.
        grace, eta: ASHA's first rung (or ``"auto"``: learned from the first 8 finished
            runs, ``LearnedGraceASHA``) and reduction factor.
        kappa: the curve rule's confidence (stop when mu + kappa sigma < the best).
        budget: seconds a full run may take (``budget_attr``); with it, the pace rule.
        budget_attr: the result key of the seconds a run has taken.
        pace_margin: the pace rule's margin over the budget.
        search: the ``TunerSearch`` used alongside (shares the configurations and the state).
        space: the param space (Ray Tune domains or the tuner's format), for the curve rule
            with another searcher (default: learned from the trials' configurations).
        seed: the curve model's random numbers.
    """

    def __init__(self, metric: str | None = None, mode: str | None = None,
                 time_attr: str = "training_iteration", max_t: float = 100,
                 rule: str = "curve", grace: float | str = 1, eta: float = 3, kappa: float = 2.0,
                 budget: float | None = None, budget_attr: str = "time_total_s",
                 pace_margin: float = 0.0, search: "TunerSearch | None" = None,
                 space: Mapping[str, Any] | SearchSpace | None = None, seed: int = 0):
        super().__init__()
        if rule not in RULES:
            raise ValueError(f"rule: {rule!r} is not one of {list(RULES)}")
        if mode is not None and mode not in ("min", "max"):
            raise ValueError(f"mode: {mode!r} is not one of ['min', 'max']")
        if not (_number(max_t) or 0) > 0:
            raise ValueError(f"max_t must be a number > 0 (got {max_t!r})")
        if budget is not None and not (_number(budget) or 0) > 0:
            raise ValueError(f"budget must be a number of seconds > 0 (got {budget!r})")
        self._metric, self._mode = metric, mode
        self.time_attr, self.max_t = time_attr, float(max_t)
        self.rule, self.grace, self.eta, self.kappa = rule, grace, eta, kappa
        self.budget, self.budget_attr, self.pace_margin = budget, budget_attr, pace_margin
        self.search, self.seed = search, seed
        self.space: SearchSpace | SeenSpace | None = None
        if space is not None:
            from .tune_search import split_param_space

            self.space = space if isinstance(space, SearchSpace) else split_param_space(space)[0]
        if rule == "asha":   # validated now, not at the first result
            asha_rule(self.max_t, grace, eta)
        self.configs: dict[str, dict[str, Any]] = {}
        self.reasons: dict[str, str] = {}            # Ray trial id -> why it was stopped
        # what the rules were told (replayed on restore)
        self.events: list[list[Any]] = []
        self._rules: list[StoppingRule] | None = None
        self._ids: dict[str, int] = {}               # Ray trial id -> the rules' trial id
        self._ray_ids: list[str] = []
        if search is not None:
            search.scheduler = self

    # --- the rules --------------------------------------------------------------------------

    def _x(self, key: int) -> Any:
        ray_id = self._ray_ids[key]
        if self.search is not None and self.search.optimizer is not None:
            opt_id = self.search.trial_ids.get(ray_id)
            if opt_id is not None:
                return self.search.optimizer.trials[opt_id].x
        config = self.configs[ray_id]
        if isinstance(self.space, SeenSpace):
            return self.space.encode(config)
        return self.space.encode({k: config[k] for k in self.space.names})

    def rules(self) -> list[StoppingRule]:
        """The rules, built at the first result (once metric and mode are known)."""
        if self._rules is None:
            fid = Fidelity(self.time_attr, self.max_t)
            rules: list[StoppingRule] = []
            if self.budget is not None:
                rules.append(PaceBudget(float(self.budget), fid, self.pace_margin))
            if self.rule == "asha":
                rules.append(asha_rule(self.max_t, self.grace, self.eta, self._mode or "max"))
            elif self.rule == "curve":
                dim = (self.search.optimizer.space.dim if self.search is not None
                       and self.search.optimizer is not None else self.space.dim)
                rules.append(CurveRule(CurveModel(dim, self.max_t, self.seed), self._x, fid,
                                       self._mode or "max", self.kappa))
            self._rules = rules
        return self._rules

    def _key(self, ray_id: str) -> int:
        if ray_id not in self._ids:
            self._ids[ray_id] = len(self._ray_ids)
            self._ray_ids.append(ray_id)
        return self._ids[ray_id]

    def _judge(self, ray_id: str, step: float, value: float, elapsed: float) -> str | None:
        self.events.append(["result", ray_id, step, value, elapsed])
        key = self._key(ray_id)
        for rule in self.rules():
            reason = rule.decide(key, step, value, elapsed)
            if reason is not None:
                return reason
        return None

    def _finished(self, ray_id: str, value: float) -> None:
        self.events.append(["finished", ray_id, value])
        for rule in self.rules():
            on_end = getattr(rule, "on_end", None)
            if on_end is not None:
                on_end(self._key(ray_id), Status.FINISHED, value)

    # --- Ray Tune calls -----------------------------------------------------------------------

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        if (self._metric and metric) or (self._mode and mode):
            return False
        if mode is not None and mode not in ("min", "max"):
            raise ValueError(f"mode: {mode!r} is not one of ['min', 'max']")
        self._metric = self._metric or metric
        self._mode = self._mode or mode
        return True

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        self.configs[trial.trial_id] = dict(trial.config)
        self._learn_space(self.configs[trial.trial_id])

    def _learn_space(self, config: dict[str, Any]) -> None:
        """With neither ``search`` nor ``space``, the space is learned from the configurations."""
        if self.search is None and not isinstance(self.space, SearchSpace):
            if self.space is None:
                self.space = SeenSpace(config)
            else:
                self.space.add(config)

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        if self.search is not None:     # metric and mode as the search has them, if not given
            self._metric = self._metric or self.search.metric
            self._mode = self._mode or self.search.mode
        step, value = _number(result.get(self.time_attr)), _number(result.get(self._metric))
        if step is None or value is None:
            return TrialScheduler.CONTINUE
        if step >= self.max_t:
            return TrialScheduler.STOP          # full length: on_trial_complete counts it
        elapsed = _number(result.get(self.budget_attr))
        reason = self._judge(trial.trial_id, step, value, 0.0 if elapsed is None else elapsed)
        if reason is None:
            return TrialScheduler.CONTINUE
        self.reasons[trial.trial_id] = reason
        logger.info("TunerScheduler: stopped trial %s at %s = %g: %s", trial.trial_id,
                    self.time_attr, step, reason)
        return TrialScheduler.STOP

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        step, value = (_number((result or {}).get(self.time_attr)),
                       _number((result or {}).get(self._metric)))
        if trial.trial_id in self.reasons:      # why, in what Ray hands back (Result.metrics)
            trial.last_result[STOPPED_KEY] = self.reasons[trial.trial_id]
        if trial.trial_id not in self.reasons and value is not None and step is not None \
                and step >= self.max_t:
            self._finished(trial.trial_id, value)

    def on_trial_error(self, tune_controller: Any, trial: Trial) -> None:
        self.configs.pop(trial.trial_id, None)

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        self.configs.pop(trial.trial_id, None)

    def debug_string(self) -> str:
        return (f"TunerScheduler: rule {self.rule}, {len(self.reasons)} trial(s) stopped early"
                + (f", budget {self.budget:g} s by pace" if self.budget else ""))

    # --- the state TunerSearch checkpoints
    # ----------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        return {"events": self.events, "reasons": self.reasons, "configs": self.configs,
                "metric": self._metric, "mode": self._mode}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Rebuild the rules by replaying what they were told (``get_state``)."""
        self._metric, self._mode = state["metric"], state["mode"]
        self.configs = {k: dict(v) for k, v in state["configs"].items()}
        for config in self.configs.values():
            self._learn_space(config)
        self.reasons = dict(state["reasons"])
        self._rules, self._ids, self._ray_ids, self.events = None, {}, [], []
        for event in state["events"]:
            if event[0] == "result":
                self._judge(*event[1:])
            else:
                self._finished(*event[1:])
