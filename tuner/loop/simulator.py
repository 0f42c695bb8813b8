"""Simulated asynchronous studies: virtual workers, delay models, a simulated clock.

Two settings, one event loop:

* ``workers=None`` (paper 001 §6): one query starts per unit of time, t = 0, 1, 2, ...; a query
  with delay d (in iterations) reports just before query t + d + 1 starts, so d = 0 means
  "known before the next query".  The number of pending trials is unbounded.
* ``workers=W``: W virtual workers; a query starts the moment a worker frees and runs for a
  duration drawn from the delay model (seconds, optionally depending on the configuration).

The optimizer sees only the simulated clock; results are told in arrival order.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

import numpy as np

from tuner.core.optimizer import Optimizer


class AskTell(Protocol):
    """What ``simulate`` drives: ``Optimizer`` or any adapter with the same ask/tell methods
    (``benchmarks.peers`` wraps Optuna and Syne Tune this way)."""

    clock: Callable[[], float]
    constraints: list

    def suggest(self) -> Any: ...      # an object with .trial_id and .config
    def tell(self, trial_id: int, value: float, metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None) -> None: ...
    def fail(self, trial_id: int, reason: str = "failed", metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None) -> None: ...
    def trials_to_stop(self, now: float | None = None) -> list[int]: ...
    def next_stop_time(self) -> float | None: ...


class DelayModel(Protocol):
    def __call__(self, config: Mapping[str, Any], rng: np.random.Generator) -> float: ...


@dataclass(frozen=True)
class Poisson:
    """d ~ Poisson(mean) (paper 001 §6: mean 10)."""

    mean: float

    def __call__(self, config: Mapping[str, Any], rng: np.random.Generator) -> float:
        return float(rng.poisson(self.mean))


@dataclass(frozen=True)
class Fixed:
    """d = value (paper 001 §6: batch BO with B_x - 1 = 10)."""

    value: float

    def __call__(self, config: Mapping[str, Any], rng: np.random.Generator) -> float:
        return float(self.value)


@dataclass(frozen=True)
class RunTime:
    """Run time in seconds: log-normal around ``mean_fn(config)`` with coefficient of variation cv."""

    mean_fn: Callable[[Mapping[str, Any]], float]
    cv: float = 0.3

    def __call__(self, config: Mapping[str, Any], rng: np.random.Generator) -> float:
        mean = float(self.mean_fn(config))
        s2 = math.log1p(self.cv ** 2)
        return float(mean * math.exp(rng.normal(-0.5 * s2, math.sqrt(s2))))


@dataclass
class SimulationResult:
    """Per started trial (in start order) and per optimizer step."""

    configs: list[dict[str, Any]]
    f_true: np.ndarray          # noise-free objective of each started trial
    start: np.ndarray
    finish: np.ndarray          # when its worker freed (earlier than planned if it was stopped)
    f_opt: float | None
    suggest_seconds: np.ndarray  # wall time of each suggest() call
    optimizer: Optimizer | AskTell = field(repr=False)
    metrics_true: list[dict[str, float]] = field(default_factory=list)
    stopped: np.ndarray | None = None   # stopped past its budget (Optimizer.trials_to_stop)

    @property
    def completed(self) -> np.ndarray:
        """Trials whose result was observed (not stopped)."""
        return ~self.stopped if self.stopped is not None else np.ones(len(self.start), dtype=bool)

    def g_true(self, j: int = 0) -> np.ndarray:
        """Noise-free value of constraint j for every started trial (the full run time for a
        run-time budget, also for trials that were stopped early)."""
        c = self.optimizer.constraints[j]
        return np.array([c.g(m[c.metric]) for m in self.metrics_true])

    def simple_regret(self, horizon: int | None = None) -> np.ndarray:
        """r_T = f* - max f(x_s) over evaluations *completed* before query T (001 App. C).

        ``nan`` until the first evaluation completes; stopped trials never complete.
        """
        if self.f_opt is None:
            raise ValueError("simple regret needs f_opt (the optimum of the objective)")
        T = len(self.start) if horizon is None else horizon
        out = np.full(T, np.nan)
        for t in range(T):
            done = (self.finish <= self.start[t]) & self.completed
            if done.any():
                out[t] = self.f_opt - self.f_true[done].max()
        return out

    def cumulative_regret(self) -> np.ndarray:
        if self.f_opt is None:
            raise ValueError("cumulative regret needs f_opt")
        return np.cumsum(self.f_opt - self.f_true)


def simulate(optimizer: Optimizer | AskTell, objective: Callable[[Mapping[str, Any]], Any],
             delay: DelayModel, n_trials: int, workers: int | None = None,
             noise_std: float = 0.0, seed: int = 0, f_opt: float | None = None,
             progress: Callable[[int], None] | None = None,
             metric_noise: float = 0.0, time_limit: float | None = None) -> SimulationResult:
    """Run ``n_trials`` queries on a simulated clock (installed as the optimizer's clock).

    ``objective(config)`` returns f or (f, metrics); metrics are reported with N(0,
    metric_noise^2) noise, plus ``runtime`` = the trial's duration.  Trials the optimizer's
    ``trials_to_stop`` names (``Settings.stop_margin``) are stopped at that moment and reported
    with ``Optimizer.fail(reason="TIMED_OUT")``, which records their elapsed time; they report
    no other metric.  ``progress(n_started)`` is called after every start.  ``time_limit``
    (virtual workers only): no trial starts later than that simulated time, and every result and
    stop up to it is delivered.
    """
    rng = np.random.default_rng(seed)
    clock = SimClock()
    optimizer.clock = clock
    events: list[tuple[float, int]] = []   # (planned finish time, trial id)
    pending: dict[int, tuple[float, dict[str, float]]] = {}
    configs: list[dict[str, Any]] = []
    f_true, start, finish, spent, metrics_true = [], [], [], [], []
    stopped: list[bool] = []

    def launch(now: float) -> None:
        clock.now = now
        t0 = time.perf_counter()
        s = optimizer.suggest()
        spent.append(time.perf_counter() - t0)
        out = objective(s.config)
        f, metrics = (float(out[0]), dict(out[1])) if isinstance(out, tuple) else (float(out), {})
        d = delay(s.config, rng)
        metrics["runtime"] = d
        end = now + d + (0.5 if workers is None else 0.0)
        configs.append(s.config)
        f_true.append(f)
        metrics_true.append(metrics)
        stopped.append(False)
        start.append(now)
        finish.append(end)
        heapq.heappush(events, (end, s.trial_id))
        reported = {k: v + (metric_noise * rng.standard_normal() if k != "runtime" else 0.0)
                    for k, v in metrics.items()}
        pending[s.trial_id] = (f + noise_std * rng.standard_normal(), reported)
        if progress is not None:
            progress(len(start))

    def next_event() -> float:
        while events and events[0][1] not in pending:      # stopped before its planned end
            heapq.heappop(events)
        when = optimizer.next_stop_time()
        return min(events[0][0] if events else math.inf, math.inf if when is None else when)

    def advance_to(now: float) -> None:
        """Deliver, in time order, every result and every stop due by ``now``."""
        while (when := next_event()) <= now:
            clock.now = when
            if events and events[0][0] == when:
                _, tid = heapq.heappop(events)
                value, reported = pending.pop(tid)
                optimizer.tell(tid, value, metrics=reported, finish_time=when)
            for tid in optimizer.trials_to_stop(when):
                pending.pop(tid)
                optimizer.fail(tid, "TIMED_OUT", finish_time=when)
                stopped[tid] = True
                finish[tid] = when

    if workers is None:
        for t in range(n_trials):
            advance_to(float(t))
            launch(float(t))
    else:
        if workers < 1:
            raise ValueError(f"workers must be >= 1 or None (got {workers})")
        for _ in range(min(workers, n_trials)):
            launch(0.0)
        while len(start) < n_trials:
            now = next_event()
            if time_limit is not None and now > time_limit:   # all events up to it delivered
                break
            advance_to(now)
            for _ in range(min(workers - len(pending), n_trials - len(start))):
                launch(now)
    return SimulationResult(configs, np.array(f_true), np.array(start), np.array(finish), f_opt,
                            np.array(spent), optimizer, metrics_true, np.array(stopped, dtype=bool))


@dataclass
class SimClock:
    """A settable clock: ``clock()`` returns ``clock.now``."""

    now: float = 0.0

    def __call__(self) -> float:
        return self.now


def make_delay(spec: Mapping[str, Any]) -> DelayModel:
    """``{kind: poisson, mean: 10}``, ``{kind: fixed, value: 10}`` or
    ``{kind: lognormal, mean: 2.0, cv: 0.3}`` (seconds, for virtual workers)."""
    kinds = {"poisson": (Poisson, ("mean",)), "fixed": (Fixed, ("value",)),
             "lognormal": (lambda mean, cv=0.3: RunTime(lambda c: mean, cv), ("mean", "cv"))}
    kind = spec.get("kind")
    if kind not in kinds:
        raise ValueError(f"simulation.delay.kind must be one of {sorted(kinds)} (got {kind!r})")
    cls, keys = kinds[kind]
    unknown = set(spec) - {"kind", *keys}
    if unknown:
        raise ValueError(f"simulation.delay: unknown key(s) {sorted(unknown)} for kind {kind}; "
                         f"allowed: {sorted(keys)}")
    return cls(**{k: float(v) for k, v in spec.items() if k != "kind"})
