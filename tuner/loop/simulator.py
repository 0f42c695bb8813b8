"""Simulated asynchronous studies: virtual workers, delay models, a simulated clock.

Two settings, one event loop (``tuner.loop.loop.StudyLoop``, the loop real studies run on):

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
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from tuner.core.fields import Field, check_section
from tuner.core.optimizer import Optimizer
from tuner.core.trial import Status

from .loop import AskTell, Limits, LoopCallback, Outcome, Report, Result, StudyLoop
from .stopping import Fidelity, StoppingRule


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
    """Run time in seconds: log-normal around ``mean_fn(config)`` with coefficient of variation
    cv."""

    mean_fn: Callable[[Mapping[str, Any]], float]
    cv: float = 0.3

    def __call__(self, config: Mapping[str, Any], rng: np.random.Generator) -> float:
        mean = float(self.mean_fn(config))
        s2 = math.log1p(self.cv ** 2)
        return float(mean * math.exp(rng.normal(-0.5 * s2, math.sqrt(s2))))


@dataclass(frozen=True)
class Recorded:
    """A configuration's recorded runs (a lookup table of real training runs, several seeds
    each): a trial replays one of them, drawn with the simulation's generator, so its score and
    its run time come from the same run.  ``f`` is the noise-free value (the mean over them)."""

    f: float
    scores: Sequence[float]
    runtimes: Sequence[float]

    def draw(self, rng: np.random.Generator) -> tuple[float, float]:
        i = int(rng.integers(len(self.scores)))
        return float(self.scores[i]), float(self.runtimes[i])


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
    status: np.ndarray | None = None    # each trial's Status

    @property
    def completed(self) -> np.ndarray:
        """Trials whose result was observed (FINISHED)."""
        return self.status == Status.FINISHED

    @property
    def stopped(self) -> np.ndarray:
        """Trials stopped past their budget (TIMED_OUT, ``Optimizer.trials_to_stop``)."""
        return self.status == Status.TIMED_OUT

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


class SimulatedBackend:
    """Trials on a simulated clock: a trial's result (``objective(config)`` plus noise) arrives
    ``delay(config)`` after its start (+ 0.5 in paper 001's setting, so a delay of d iterations
    reports just before query t + d + 1).  Records every started trial for ``SimulationResult``.

    An objective that returns ``(f, metrics, curve)`` reports progress: ``curve`` lists
    ``(fraction, metrics)``, each reported (``Report``, the objective with the same noise as
    the result) at ``fraction`` of the trial's run time.  One that returns a ``Recorded``
    replays one recorded run: its score (no added noise) after its run time (not ``delay``)."""

    def __init__(self, objective: Callable[[Mapping[str, Any]], Any], delay: DelayModel,
                 rng: np.random.Generator, noise_std: float = 0.0, metric_noise: float = 0.0,
                 offset: float = 0.0):
        self.clock = SimClock()
        self.objective, self.delay, self.rng = objective, delay, rng
        self.noise_std, self.metric_noise, self.offset = noise_std, metric_noise, offset
        self._events: list[tuple[float, int, float]] = []   # (time, trial id, report k; inf: end)
        self._reports: dict[int, list[dict[str, float]]] = {}
        self._pending: dict[int, dict[str, float]] = {}
        self.index: dict[int, int] = {}               # trial id -> start order
        self.configs: list[dict[str, Any]] = []
        self.f_true: list[float] = []
        self.metrics_true: list[dict[str, float]] = []
        self.start: list[float] = []
        self.finish: list[float] = []

    def launch(self, trial_id: int, config: Mapping[str, Any]) -> None:
        now = self.clock.now
        out = self.objective(config)
        replay = out.draw(self.rng) if isinstance(out, Recorded) else None
        if replay is not None:
            out = out.f
        f, metrics = (float(out[0]), dict(out[1])) if isinstance(out, tuple) else (float(out), {})
        curve = out[2] if isinstance(out, tuple) and len(out) > 2 else ()
        d = self.delay(config, self.rng) if replay is None else replay[1]
        metrics["runtime"] = d
        end = now + d + self.offset
        self.index[trial_id] = len(self.start)
        self.configs.append(dict(config))
        self.f_true.append(f)
        self.metrics_true.append(metrics)
        self.start.append(now)
        self.finish.append(end)
        heapq.heappush(self._events, (end, trial_id, math.inf))
        reported = {
            k: v + (self.metric_noise * self.rng.standard_normal() if k != "runtime" else 0.0)
            for k, v in metrics.items()
        }
        observed = f + self.noise_std * self.rng.standard_normal() if replay is None else replay[0]
        self._pending[trial_id] = {**reported, OBJECTIVE: observed}
        self._reports[trial_id] = []
        for k, (fraction, m) in enumerate(curve):
            m = dict(m)
            if OBJECTIVE in m:
                m[OBJECTIVE] = float(m[OBJECTIVE]) + self.noise_std * self.rng.standard_normal()
            self._reports[trial_id].append(m)
            heapq.heappush(self._events, (now + fraction * d, trial_id, k))

    def wait(self, until: float | None) -> list[Result | Report]:
        """Advance the clock to the next planned finish or report (or to ``until`` if that
        comes first); return every result and report due then."""
        while self._events and self._events[0][1] not in self._pending:   # stopped earlier
            heapq.heappop(self._events)
        nxt = self._events[0][0] if self._events else math.inf
        if until is not None and until < nxt:
            self.clock.now = max(self.clock.now, until)
            return []
        if math.isinf(nxt):
            raise RuntimeError("the simulation has nothing to wait for")
        self.clock.now = nxt
        out = []
        while self._events and self._events[0][0] == nxt:
            _, tid, k = heapq.heappop(self._events)
            if tid not in self._pending:
                continue
            if math.isinf(k):
                out.append(Result(tid, nxt, self._pending.pop(tid)))
            else:
                out.append(Report(tid, nxt, self._reports[tid][int(k)]))
        return out

    def stop(self, trial_id: int) -> None:
        del self._pending[trial_id]
        self.finish[self.index[trial_id]] = self.clock.now

    def abandon(self) -> None:
        self._pending.clear()


OBJECTIVE = "objective"   # the metric the simulated objective is reported under


class _Statuses(LoopCallback):
    def __init__(self, progress: Callable[[int], None] | None):
        self.progress = progress
        self.status: dict[int, Status] = {}

    def on_launch(self, trial_id: int, config: Mapping[str, Any]) -> None:
        self.status[trial_id] = Status.RUNNING
        if self.progress is not None:
            self.progress(len(self.status))

    def on_end(self, outcome: Outcome) -> None:
        self.status[outcome.trial_id] = outcome.status


def simulate(optimizer: Optimizer | AskTell, objective: Callable[[Mapping[str, Any]], Any],
             delay: DelayModel, n_trials: int, workers: int | None = None, noise_std: float = 0.0,
             seed: int = 0, f_opt: float | None = None,
             progress: Callable[[int], None] | None = None, metric_noise: float = 0.0,
             time_limit: float | None = None, fidelity: Fidelity | None = None,
             stopping: Sequence[StoppingRule] = ()) -> SimulationResult:
    """Run ``n_trials`` queries through ``StudyLoop`` on a ``SimulatedBackend`` (its clock is
    installed as the optimizer's clock).

    ``objective(config)`` returns f, (f, metrics) or (f, metrics, curve) (a run that reports
    progress: ``SimulatedBackend``; ``fidelity`` names its progress metric, ``stopping`` the
    rules that may stop it early, ``tuner.loop.stopping``); metrics are reported with N(0,
    metric_noise^2) noise, plus ``runtime`` = the trial's duration.  Trials the optimizer's
    ``trials_to_stop`` names (``Settings.stop_margin``) are stopped then, TIMED_OUT, and report
    no other metric.  ``progress(n_started)`` is called after every start.  ``time_limit``: no
    trial starts at or after that simulated time; every result and stop before it is delivered,
    and the trials still running then are KILLED.
    """
    backend = SimulatedBackend(objective, delay, np.random.default_rng(seed), noise_std,
                               metric_noise, offset=0.5 if workers is None else 0.0)
    optimizer.clock = backend.clock
    record = _Statuses(progress)
    loop = StudyLoop(optimizer, backend, Limits(n_trials, slots=workers, deadline=time_limit),
                     metric=OBJECTIVE, callbacks=[record], fidelity=fidelity, stopping=stopping)
    loop.run()
    b = backend
    status = np.array([record.status[tid] for tid in b.index], dtype=object)
    return SimulationResult(configs=b.configs, f_true=np.array(b.f_true), start=np.array(b.start),
                            finish=np.array(b.finish), f_opt=f_opt,
                            suggest_seconds=np.array(loop.suggest_seconds), optimizer=optimizer,
                            metrics_true=b.metrics_true, status=status)


@dataclass
class SimClock:
    """A settable clock: ``clock()`` returns ``clock.now``."""

    now: float = 0.0

    def __call__(self) -> float:
        return self.now


DELAYS: dict[str, tuple[Callable[..., DelayModel], dict[str, Field]]] = {
    "poisson": (Poisson, {"mean": Field((float,), required=True, minimum=0, finite=True)}),
    "fixed": (Fixed, {"value": Field((float,), required=True, minimum=0, finite=True)}),
    "lognormal": (lambda mean, cv: RunTime(lambda c: mean, cv),
                  {"mean": Field((float,), required=True, above=0, finite=True),
                   "cv": Field((float,), 0.3, minimum=0, finite=True)}),
}


def make_delay(spec: Mapping[str, Any]) -> DelayModel:
    """``{kind: poisson, mean: 10}``, ``{kind: fixed, value: 10}`` or
    ``{kind: lognormal, mean: 2.0, cv: 0.3}`` (seconds, for virtual workers)."""
    kind = Field((str,), choices=tuple(DELAYS)).check("simulation.delay.kind", spec.get("kind"))
    make, schema = DELAYS[kind]
    return make(**check_section("simulation.delay", {k: v for k, v in spec.items() if k != "kind"},
                                schema))
