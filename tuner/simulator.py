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

from .optimizer import Optimizer


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
    finish: np.ndarray
    f_opt: float | None
    suggest_seconds: np.ndarray  # wall time of each suggest() call
    optimizer: Optimizer = field(repr=False)

    def simple_regret(self, horizon: int | None = None) -> np.ndarray:
        """r_T = f* - max f(x_s) over evaluations *completed* before query T (001 App. C).

        ``nan`` until the first evaluation completes.
        """
        if self.f_opt is None:
            raise ValueError("simple regret needs f_opt (the optimum of the objective)")
        T = len(self.start) if horizon is None else horizon
        out = np.full(T, np.nan)
        for t in range(T):
            done = self.finish <= self.start[t]
            if done.any():
                out[t] = self.f_opt - self.f_true[done].max()
        return out

    def cumulative_regret(self) -> np.ndarray:
        if self.f_opt is None:
            raise ValueError("cumulative regret needs f_opt")
        return np.cumsum(self.f_opt - self.f_true)


def simulate(optimizer: Optimizer, objective: Callable[[Mapping[str, Any]], float],
             delay: DelayModel, n_trials: int, workers: int | None = None,
             noise_std: float = 0.0, seed: int = 0, f_opt: float | None = None,
             progress: Callable[[int], None] | None = None) -> SimulationResult:
    """Run ``n_trials`` queries on a simulated clock (installed as the optimizer's clock).

    ``progress(n_started)`` is called after every start.
    """
    rng = np.random.default_rng(seed)
    clock = SimClock()
    optimizer.clock = clock
    events: list[tuple[float, int, int]] = []   # (finish time, order, trial id)
    configs: list[dict[str, Any]] = []
    f_true, start, finish, spent = [], [], [], []

    def launch(now: float) -> None:
        clock.now = now
        t0 = time.perf_counter()
        s = optimizer.suggest()
        spent.append(time.perf_counter() - t0)
        f = float(objective(s.config))
        d = delay(s.config, rng)
        end = now + d + 0.5 if workers is None else now + d
        configs.append(s.config)
        f_true.append(f)
        start.append(now)
        finish.append(end)
        heapq.heappush(events, (end, s.trial_id, s.trial_id))
        pending_values[s.trial_id] = f + noise_std * rng.standard_normal()
        if progress is not None:
            progress(len(start))

    def deliver_until(now: float) -> None:
        while events and events[0][0] <= now:
            end, _, tid = heapq.heappop(events)
            clock.now = end
            optimizer.tell(tid, pending_values.pop(tid), finish_time=end)

    pending_values: dict[int, float] = {}
    if workers is None:
        for t in range(n_trials):
            deliver_until(float(t))
            launch(float(t))
    else:
        if workers < 1:
            raise ValueError(f"workers must be >= 1 or None (got {workers})")
        for _ in range(min(workers, n_trials)):
            launch(0.0)
        while len(start) < n_trials:
            now = events[0][0]
            deliver_until(now)
            for _ in range(min(workers - len(events), n_trials - len(start))):
                launch(now)
    return SimulationResult(configs, np.array(f_true), np.array(start), np.array(finish), f_opt,
                            np.array(spent), optimizer)


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
