"""The one study loop: real (Ray) and simulated studies run through ``StudyLoop``.

The loop keeps the slots full, asks the optimizer for each next configuration the moment a
slot frees, and tells it every outcome.  It owns every rule about *when* something happens:

* a trial is stopped (TIMED_OUT) when it has run ``Limits.trial_timeout`` seconds, or when it
  passes its run-time budget by ``stop_margin`` (``Optimizer.next_stop_time``);
* at ``Limits.deadline`` (the wall-clock limit) every running trial is KILLED and nothing new
  starts; before it, nothing starts while the optimizer says no run could finish in time
  (``Optimizer.can_start``, ``Settings.idle_near_deadline``), and the study ends when the
  running trials do;
* between events it waits exactly until the next one: a result, the next stop, the deadline,
  the next scheduled start (``Limits.slots=None``: one start per ``interval``, paper 001 §6), or
  a callback's wake-up (the progress line).  There is no fixed poll.
* every result that is ready is collected before any stop decision, so a trial whose result has
  arrived is never stopped;
* a running trial may report progress (a ``Report``: its metrics after an epoch): the optimizer
  hears of it (``Optimizer.report``, the value at the fraction of the ``Fidelity`` done), and
  the early-stopping rules (``tuner.loop.stopping``) may stop the run (STOPPED).

What runs a trial is a ``Backend`` (``tuner.loop.simulator.SimulatedBackend``,
``tuner.integrations.ray.backend.RayBackend``).  What is done with the outcomes (saving the
study state, MLflow, the progress line, the simulator's record) are ``LoopCallback``s.  The
optimizer is anything with the ask/tell methods of ``AskTell`` (``tuner.Optimizer`` or a
peer's adapter in the benchmark).
"""

from __future__ import annotations

import math
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from tuner.core.trial import Status

from .stopping import Fidelity, StoppingRule


class AskTell(Protocol):
    """What the loop drives: ``Optimizer`` or any adapter with the same ask/tell methods
    (``tuner.bench.peers`` wraps Optuna and Syne Tune this way)."""

    def suggest(self) -> Any: ...      # an object with .trial_id and .config (also with context=)
    def tell(self, trial_id: int, value: float, metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None) -> None: ...
    def fail(self, trial_id: int, reason: str = "failed",
             metrics: Mapping[str, float] | None = None, finish_time: float | None = None,
             status: Status | str = Status.FAILED) -> None: ...
    def started(self, trial_id: int, now: float | None = None) -> None: ...
    def trials_to_stop(self, now: float | None = None) -> list[int]: ...
    def next_stop_time(self) -> float | None: ...


@dataclass(frozen=True)
class Result:
    """What a backend hands back for one trial that ended on its own."""

    trial_id: int
    end: float                                   # backend clock when the result was collected
    metrics: dict[str, float] = field(default_factory=dict)
    status: Status = Status.FINISHED             # or FAILED / KILLED (e.g. out of memory)
    reason: str | None = None
    info: dict[str, str] = field(default_factory=dict)   # where it ran (node, host)


@dataclass(frozen=True)
class Report:
    """A running trial's intermediate metrics (e.g. after an epoch), at backend time ``time``."""

    trial_id: int
    time: float
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome(Result):
    """A trial's final outcome as recorded: its status after the loop's checks, its start."""

    start: float = math.nan

    @property
    def runtime(self) -> float:
        return self.end - self.start


class Backend(Protocol):
    """Runs trials.  ``clock`` is the time every decision uses (wall clock or simulated)."""

    def clock(self) -> float: ...

    def launch(self, trial_id: int, config: Mapping[str, Any]) -> None:
        """Start a trial now."""

    def wait(self, until: float | None) -> list[Result | Report]:
        """Block until a trial has ended or reported, or the clock reaches ``until`` (None: no
        limit); return every result and report that is ready (possibly none)."""

    def stop(self, trial_id: int) -> None:
        """Stop a running trial; the backend reports nothing more about it."""

    def abandon(self) -> None:
        """The study is interrupted: stop every running trial at once, reporting nothing."""


class LoopCallback:
    """Hooks of the loop; override what you need."""

    def on_launch(self, trial_id: int, config: Mapping[str, Any]) -> None:
        """A trial was suggested and started."""

    def on_end(self, outcome: Outcome) -> None:
        """A trial's outcome was told to the optimizer."""

    def on_report(self, report: Report) -> None:
        """A running trial reported progress (after the optimizer heard of it)."""

    def on_step(self, loop: "StudyLoop") -> None:
        """The loop is about to wait (the slots are as full as they will be)."""

    def wake_at(self, now: float) -> float | None:
        """When the loop should next run ``on_step`` even if nothing happens (None: never)."""
        return None


@dataclass(frozen=True)
class Limits:
    """When trials start and stop (see the module docstring)."""

    trials: int
    slots: int | None = 1            # None: one start every ``interval``, any number running
    interval: float = 1.0
    trial_timeout: float | None = None
    deadline: float | None = None    # on the backend clock
    deadline_reason: str = "the study reached its time limit"
    budget_reason: str = "passed the budget by more than stop_margin"

    def __post_init__(self) -> None:
        if self.slots is not None and self.slots < 1:
            raise ValueError(f"workers must be >= 1 or None (got {self.slots})")


class StudyFailed(Exception):
    """The study cannot work as set up: its first trials all failed with one cause."""


class FailFast(LoopCallback):
    """Raise ``StudyFailed`` when the first ``n`` trials to end all FAILED with the same reason
    (a misspelled hyperparameter, a metric the trainable never reports, a missing import), so
    that a mistake is reported at once instead of failing every trial.  A trial that finished,
    or was stopped for time, shows the set-up works: no check after it.  ``n = 0``: never."""

    def __init__(self, n: int):
        self.n = n
        self.reasons: list[str] = []
        self.settled = n == 0

    def on_end(self, outcome: Outcome) -> None:
        if self.settled:
            return
        if outcome.status != Status.FAILED:
            self.settled = True
            return
        self.reasons.append(outcome.reason or "")
        if len(self.reasons) >= self.n:
            self.settled = True
            if len(set(self.reasons)) == 1:
                raise StudyFailed(f"the first {self.n} trials all failed with the same error: "
                                  f"{self.reasons[0]}")


class StopOnSignal:
    """The first Ctrl-C or SIGTERM asks the loop to stop after its current step (the state
    stays consistent); a second Ctrl-C raises KeyboardInterrupt at once.  Call the object to
    ask whether a stop was requested (``StudyLoop(should_stop=...)``)."""

    def __init__(self) -> None:
        self.requested = False
        self._old: dict[int, Any] = {}

    def __call__(self) -> bool:
        return self.requested

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        print(f"\n{signal.Signals(signum).name}: stopping after the current step "
              "(Ctrl-C again to stop at once)", flush=True)

    def __enter__(self) -> "StopOnSignal":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)


class StudyLoop:
    """Runs trials on ``backend`` until ``limits.trials`` have started and all have ended, the
    deadline has passed, or a stop is requested (module docstring)."""

    def __init__(self, optimizer: AskTell, backend: Backend, limits: Limits,
                 metric: str = "objective", callbacks: Sequence[LoopCallback] = (),
                 should_stop: Callable[[], bool] = lambda: False,
                 fidelity: Fidelity | None = None, stopping: Sequence[StoppingRule] = (),
                 context: Mapping[str, Any] | None = None):
        self.optimizer = optimizer
        self.backend = backend
        self.limits = limits
        self.metric = metric
        self.callbacks = list(callbacks)
        self.should_stop = should_stop
        self.running: dict[int, float] = {}     # trial id -> start time (backend clock)
        self.started = 0                        # trials started in this loop
        self.suggest_seconds: list[float] = []  # wall time of each suggest() call
        self._next_start = 0.0                  # slots=None: when the next trial starts
        self.fidelity, self.stopping = fidelity, list(stopping)
        self.latest: dict[int, dict[str, float]] = {}   # running trial -> its last reported metrics
        self.context = context      # z_t of every suggestion (paper 001 §5), if the study has one
        self.held_at: float | None = None   # since when the optimizer says no run could finish

    def run(self, restart: Iterable[tuple[int, Mapping[str, Any]]] = ()) -> bool:
        """Run to the end; False if a stop was requested (the running trials are abandoned,
        still RUNNING for the optimizer).  ``restart``: (trial id, config) of running trials
        to start again first (a resumed study)."""
        clock = self.backend.clock
        if self.limits.deadline is not None and hasattr(self.optimizer, "deadline"):
            self.optimizer.deadline = self.limits.deadline   # finish_by_deadline reads it
        for tid, config in restart:
            self._start(tid, config, clock())
        while not self.should_stop():
            now = clock()
            self._stop_due(now)
            self._fill(now)
            for cb in self.callbacks:
                cb.on_step(self)
            if not self.running and not self._may_start(now):
                return True
            self._collect(self.backend.wait(self._next_event(now)))
        self.backend.abandon()
        return False

    # --- rules --------------------------------------------------------------------------------

    def _may_start(self, now: float) -> bool:
        deadline = self.limits.deadline
        if self.started >= self.limits.trials or (deadline is not None and now >= deadline):
            return False
        can_start = getattr(self.optimizer, "can_start", None)
        if can_start is not None and not can_start(now):
            self.held_at = now if self.held_at is None else self.held_at
            return False
        return True

    def _fill(self, now: float) -> None:
        """Start trials: into every free slot, or (slots=None) the one due at ``now``."""
        lim = self.limits
        while self._may_start(now) and (len(self.running) < lim.slots if lim.slots is not None
                                        else now >= self._next_start):
            t0 = time.perf_counter()
            s = (self.optimizer.suggest() if self.context is None
                 else self.optimizer.suggest(context=self.context))
            self.suggest_seconds.append(time.perf_counter() - t0)
            self._next_start += lim.interval
            self._start(s.trial_id, s.config, now)

    def _start(self, trial_id: int, config: Mapping[str, Any], now: float) -> None:
        """Launch; the run's start (for its run time, timeout and stop time) is the launch,
        after the suggestion was computed."""
        self.backend.launch(trial_id, config)
        now = max(now, self.backend.clock())
        self.optimizer.started(trial_id, now)
        self.held_at = None                     # (a faster run finished since a hold)
        self.running[trial_id] = now
        self.started += 1
        for cb in self.callbacks:
            cb.on_launch(trial_id, config)

    def _stop_due(self, now: float) -> None:
        """Stop every trial whose stop time has come (at the deadline, all of them), after
        collecting every result that is ready: a trial whose result is in is never stopped."""
        due = self._due(now)
        if not due:
            return
        self._collect(self.backend.wait(now))
        for tid, status, reason in due:
            if tid in self.running:
                self._stop(tid, now, status, reason)

    def _due(self, now: float) -> list[tuple[int, Status, str]]:
        lim = self.limits
        if lim.deadline is not None and now >= lim.deadline:
            return [(tid, Status.KILLED, lim.deadline_reason) for tid in self.running]
        due = []
        if lim.trial_timeout is not None:
            due += [
                (tid, Status.TIMED_OUT,
                 f"ran longer than run.trial_timeout = {lim.trial_timeout:g} s")
                for tid, start in self.running.items()
                if now - start >= lim.trial_timeout
            ]
        timed_out = {tid for tid, _, _ in due}
        due += [
            (tid, Status.TIMED_OUT, lim.budget_reason)
            for tid in self.optimizer.trials_to_stop(now)
            if tid in self.running and tid not in timed_out
        ]
        return due

    def _next_event(self, now: float) -> float | None:
        """The next time the loop must act without a result: a stop, the deadline, a start."""
        times = [self.optimizer.next_stop_time(), self.limits.deadline]
        if self.limits.trial_timeout is not None and self.running:
            times.append(min(self.running.values()) + self.limits.trial_timeout)
        if self.limits.slots is None and self._may_start(now):
            times.append(self._next_start)
        times += [cb.wake_at(now) for cb in self.callbacks]
        times = [t for t in times if t is not None]
        return min(times) if times else None

    # --- outcomes -----------------------------------------------------------------------------

    def _stop(self, trial_id: int, now: float, status: Status, reason: str) -> None:
        """Stop a running trial; its outcome keeps the metrics it last reported."""
        self.backend.stop(trial_id)
        self._record(Result(trial_id, now, dict(self.latest.get(trial_id, {})), status, reason))

    def _collect(self, events: list[Result | Report]) -> None:
        """Record every result and report of one wait, then stop the runs a stopping rule
        named (unless their result came in the same batch)."""
        stops: dict[int, str] = {}
        for e in events:
            if isinstance(e, Report):
                reason = self._report(e)
                if reason is not None:
                    stops.setdefault(e.trial_id, reason)
            else:
                self._record(e)
        for tid, reason in stops.items():
            if tid in self.running:
                self._stop(tid, self.backend.clock(), Status.STOPPED, reason)

    def _report(self, r: Report) -> str | None:
        """A running trial's progress: to the optimizer (value at the fraction done), the
        callbacks, then the stopping rules; returns a reason to stop it, or None."""
        if r.trial_id not in self.running:        # it ended meanwhile
            return None
        self.latest[r.trial_id] = {**self.latest.get(r.trial_id, {}), **r.metrics}
        value, fid = r.metrics.get(self.metric), self.fidelity
        step = None if fid is None else r.metrics.get(fid.metric)
        usable = value is not None and step is not None and math.isfinite(value)
        elapsed = r.time - self.running[r.trial_id]
        if usable and hasattr(self.optimizer, "report"):
            self.optimizer.report(r.trial_id, value, fid.fraction(step), elapsed=elapsed)
        for cb in self.callbacks:
            cb.on_report(r)
        if not usable:
            return None
        for rule in self.stopping:
            reason = rule.decide(r.trial_id, step, value, elapsed)
            if reason is not None:
                return reason
        return None

    def _record(self, r: Result) -> None:
        """Check the result, tell the optimizer (``tell`` or ``fail``), run the callbacks."""
        start = self.running.pop(r.trial_id)
        self.latest.pop(r.trial_id, None)
        metrics = {"runtime": r.end - start, **r.metrics}
        status, reason = r.status, r.reason
        if status == Status.FINISHED:
            value = metrics.get(self.metric)
            if value is None:
                status, reason = (
                    Status.FAILED,
                    (
                        f"the trial reported no '{self.metric}' "
                        f"(objective.metric); it reported {sorted(metrics)}"
                    ),
                )
            elif not math.isfinite(value):
                status, reason = Status.FAILED, f"non-finite objective {self.metric} = {value}"
            else:
                try:
                    self.optimizer.tell(r.trial_id, value, metrics=metrics, finish_time=r.end)
                except ValueError as exc:     # e.g. a constraint metric it did not report
                    status, reason = Status.FAILED, str(exc)
        if status != Status.FINISHED:
            self.optimizer.fail(r.trial_id, reason or str(status), metrics=metrics,
                                finish_time=r.end, status=status)
        outcome = Outcome(r.trial_id, r.end, metrics, status, reason, dict(r.info), start)
        for rule in self.stopping:
            if hasattr(rule, "on_end"):
                rule.on_end(r.trial_id, status, metrics.get(self.metric))
        for cb in self.callbacks:
            cb.on_end(outcome)
