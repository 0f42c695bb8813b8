"""Ax (``ax-platform`` 1.3) as a peer of the learning-curve benchmark (``tuner.bench.curves``):
its ``Client`` with its default generation strategy and its default early stopping, driven
through the ``Client`` API as its docstrings describe a learning curve (``attach_data`` with a
progression after every epoch, ``should_stop_trial_early``, then ``mark_trial_early_stopped`` or
``complete_trial``).  Nothing of Ax's is re-implemented or re-configured here.
"""

from __future__ import annotations

import logging
import time
import warnings
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from tuner.core.trial import Status
from tuner.loop.simulator import OBJECTIVE

from .peers import Adapter, Suggestion


@contextmanager
def quiet() -> Iterator[None]:
    """Ax's INFO lines (one per trial generated, completed, stopped) and warnings off while
    Ax runs; the previous logging state after."""
    before = logging.root.manager.disable
    logging.disable(logging.INFO)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(before)


def ax_parameters(space: Mapping[str, Mapping[str, Any]]) -> list[Any]:
    """The project's space dict as Ax ``RangeParameterConfig`` / ``ChoiceParameterConfig``
    (a categorical unordered; Ax itself makes one of two values ordered, ``ax/core/parameter.py``).

    Args:
        space: name -> {type: float|int, low, high, log} or {type: categorical, choices}.
    """
    with quiet():
        from ax import ChoiceParameterConfig, RangeParameterConfig

    out: list[Any] = []
    for name, p in space.items():
        if p["type"] in ("float", "int"):
            out.append(RangeParameterConfig(
                name=name, parameter_type=p["type"], bounds=(p["low"], p["high"]),
                scaling="log" if p.get("log", False) else "linear"))
        else:
            values = list(p["choices"])
            kind = ("bool" if all(isinstance(v, bool) for v in values) else
                    "int" if all(isinstance(v, int) for v in values) else
                    "float" if all(isinstance(v, (int, float)) for v in values) else "str")
            out.append(ChoiceParameterConfig(name=name, values=values, parameter_type=kind,
                                             is_ordered=False))
    return out


class AxClientPeer(Adapter):
    """Ax 1.3's ``Client`` as searcher and stopping rule, with Ax's defaults (read in the
    installed ax-platform 1.3.1):

    * generation: ``Client.configure_generation_strategy()`` with no arguments, which is what
      ``Client._generation_strategy_or_choose`` calls when none is set (``ax/api/client.py``):
      ``choose_generation_strategy`` (``ax/api/utils/generation_strategy_dispatch.py``,
      method ``fast``) builds ``Center+Sobol+MBM:fast``: the centre of the space, Sobol points
      up to 5 trials in all, then BoTorch's modular GP (``ModelConfig`` defaults) once 5
      trials exist and 2 of them are COMPLETED with data; until then at most 5 trials may
      await data (``MaxTrialsAwaitingData``: ``get_next_trials`` raises ``DataRequiredError``).
      The GP takes the progression as an input (``MapKeyToFloat``) and each trial's latest
      row (``DataLoaderConfig.latest_rows_per_group = 1``), running and stopped trials too.
    * early stopping: none is configured, so ``should_stop_trial_early`` sets Ax's default,
      ``PercentileEarlyStoppingStrategy()`` (``Client._early_stopping_strategy_or_choose``;
      ``ax/early_stopping/strategies/percentile.py``): stop a run whose latest value is below
      the median (``percentile_threshold = 50``) of the runs' values at that progression,
      interpolated, once ``min_curves = 5`` trials are COMPLETED and the run has reached
      ``min_progression = 10`` epochs; no ``max_progression``, ``patience`` 0, no safety check.

    A worker stays idle while Ax refuses to generate (what Ax's ``Orchestrator`` does on
    ``DataRequiredError``): ``can_start`` asks the strategy's ``current_generator_run_limit``.
    Reports: ``attach_data`` with ``progression = epoch``, then ``should_stop_trial_early``
    (not at the last epoch: the result arrives with that report).  Ends: ``complete_trial``
    with the final value at ``progression = epochs``; a run the loop stopped on Ax's word
    ``mark_trial_early_stopped``, a failed one ``mark_trial_failed``, one killed at the
    horizon (or timed out) ``mark_trial_abandoned``.  A run-time budget is not passed to Ax
    (as for Syne Tune).  ``seconds``: wall time in Ax's calls, by kind.
    """

    def __init__(self, problem: Any, seed: int):
        super().__init__(problem)
        self.constraints = []
        with quiet():
            from ax import Client

            self.client = Client(random_seed=seed)
            self.client.configure_experiment(parameters=ax_parameters(problem.space))
            self.client.configure_optimization(objective=OBJECTIVE)
            self.client.configure_generation_strategy()
        self.epochs = int(problem.epochs)
        self.seconds = {"generate": 0.0, "stop": 0.0, "end": 0.0}

    def _timed(self, kind: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            with quiet():
                return fn(*args, **kwargs)
        finally:
            self.seconds[kind] += time.perf_counter() - t0

    def can_start(self, now: float | None = None) -> bool:
        """Whether Ax's strategy would generate a trial now (not 0 = blocked for data)."""
        gs = self.client._generation_strategy
        limit, done = self._timed("generate", gs.current_generator_run_limit)
        return limit != 0 and not done

    def suggest(self) -> Suggestion:
        trials = self._timed("generate", self.client.get_next_trials, max_trials=1)
        (index, params), = trials.items()
        self._asked(index, index)
        return Suggestion(index, dict(params))

    def decide(self, trial_id: int, step: float, value: float, elapsed: float) -> str | None:
        self._timed("stop", self.client.attach_data, trial_id, raw_data={OBJECTIVE: float(value)},
                    progression=int(step))
        if step >= self.epochs:
            return None
        if self._timed("stop", self.client.should_stop_trial_early, trial_id):
            return f"Ax percentile early stopping at epoch {step:g}"
        return None

    def tell(self, trial_id: int, value: float, metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None) -> None:
        self._told(trial_id, finish_time)
        self._timed("end", self.client.complete_trial, trial_id,
                    raw_data={OBJECTIVE: float(value)}, progression=self.epochs)

    def fail(self, trial_id: int, reason: str = "failed",
             metrics: Mapping[str, float] | None = None, finish_time: float | None = None,
             status: str = "FAILED") -> None:
        self._told(trial_id, finish_time)
        if status == Status.STOPPED:         # stopped because should_stop_trial_early said so
            self._timed("end", self.client.mark_trial_early_stopped, trial_id)
        elif status == Status.FAILED:
            self._timed("end", self.client.mark_trial_failed, trial_id, failed_reason=reason)
        else:                                # KILLED at the horizon, TIMED_OUT
            self._timed("end", self.client.mark_trial_abandoned, trial_id)


def make_ax(problem: Any, seed: int) -> tuple[AxClientPeer, list[AxClientPeer]]:
    """(searcher, stopping rules) of one run of the Ax peer: one object, both roles.

    Args:
        problem: a ``CurveProblem`` (its ``space`` and ``epochs``).
        seed: ``Client(random_seed=seed)``.
    """
    peer = AxClientPeer(problem, seed)
    return peer, [peer]
