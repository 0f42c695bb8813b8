"""The Ray task backend of ``tuner.loop.loop.StudyLoop``: one Ray task per trial.

Trials run as plain Ray tasks (``ray.wait`` on the running set), not as Ray Tune trials: the
task loop keeps the slots far busier for short trials (measured on a 2-core machine:
docs/research/notes/evidence.md, "Why Ray tasks"; ``scripts/bench/bench_orchestration.py``).

A trial whose trainable reports progress runs as a Ray generator task (``execute_steps``): each
step's metrics stream back as they come (``ray.wait`` takes the generator), then the result.

A stopped trial gets a KeyboardInterrupt in its worker (``ray.cancel(force=False)``), so the
worker survives with its imports warm; only a trial that ignores it for ``grace`` seconds (stuck
in C code) is killed with its worker.  A stop that lands while the trial is importing a module
ends its worker too: a half-imported package (pandas, say) would fail every later trial there.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sysconfig
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import ray
from ray import exceptions as rex

from tuner.core.trial import Status
from tuner.loop.loop import Report, Result

# ``ray.wait`` blocks in C and runs no Python signal handler until it returns: a blocked wait
# is cut into pieces this long so that a Ctrl-C is acted on within that time.  A result or a
# stop time ends the wait at once; this bounds only the reaction to a signal.
SIGNAL_CHECK = 1.0


def execute_trial(trainable: str | Callable, config: dict[str, Any], options: dict[str, Any],
                  seed: int) -> dict[str, Any]:
    """The body of one Ray task: train, and say where it ran and how long the training took,
    measured here in the worker (so the driver's own delays are never charged to the trial):
    ``runtime`` in wall seconds, ``cpu_time`` in the CPU seconds of this worker process (every
    thread of it; what a busy machine hardly changes)."""
    with _no_half_imports():
        from trainables import get_trainable

        started = _clocks()
        returned = get_trainable(trainable)(config, options, seed)
        return _ended(returned, started)


def execute_steps(trainable: str | Callable, config: dict[str, Any], options: dict[str, Any],
                  seed: int):
    """The body of one Ray generator task: yield ``{"report": metrics}`` after each step of a
    trainable that reports progress, then what ``execute_trial`` returns."""
    with _no_half_imports():
        from trainables import get_trainable, split_attrs

        started = _clocks()
        steps = get_trainable(trainable).progress(config, options, seed)
        while True:
            try:
                metrics = next(steps)
            except StopIteration as end:
                metrics = end.value
                break
            yield {"report": split_attrs(metrics)[0]}
        yield _ended(metrics, started)


def _clocks() -> tuple[float, float]:
    """The wall and CPU clocks of this worker process, at a trial's start."""
    return time.perf_counter(), time.process_time()


def _ended(returned: Any, started: tuple[float, float]) -> dict[str, Any]:
    """A task's last output: the metrics and attributes the trainable returned, the wall and
    CPU seconds since ``started`` (``_clocks``), where it ran."""
    from trainables import split_attrs

    runtime, cpu_time = time.perf_counter() - started[0], time.process_time() - started[1]
    metrics, attrs = split_attrs(returned)
    return {"metrics": metrics, "attrs": attrs, "runtime": runtime, "cpu_time": cpu_time,
            "node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname()}


@contextlib.contextmanager
def _no_half_imports():
    """A stop (``ray.cancel``: a KeyboardInterrupt at the next bytecode) that lands in a module's
    top-level code leaves that package half imported in this worker, and every later import of
    it here fails ("partially initialized module"): the worker exits instead, and Ray starts a
    fresh one.  A stop anywhere else keeps the worker and its imports.  (Written by hand: Ray
    has no hook for it.)"""
    try:
        yield
    except KeyboardInterrupt as stop:
        tb = stop.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_name == "<module>":
                os._exit(1)
            tb = tb.tb_next
        raise


class RayBackend:
    """Runs each trial as a Ray task of ``execute_trial`` (``task``: its remote function with
    the trial's resources)."""

    def __init__(self, task: Any, trainable: str | Callable, options: Mapping[str, Any],
                 seed: int, clock: Callable[[], float] = time.time, grace: float = 5.0,
                 interrupted: Callable[[], bool] = lambda: False, owns_ray: bool = False):
        self.task, self.trainable, self.options, self.seed = task, trainable, dict(options), seed
        self.clock, self.grace, self.interrupted = clock, grace, interrupted
        self.owns_ray = owns_ray      # the Ray is shut down after the study: it ends the tasks
        self._running: dict[ray.ObjectRef, int] = {}
        self._stopping: dict[ray.ObjectRef, float] = {}    # cancelled -> when to kill its worker

    def launch(self, trial_id: int, config: Mapping[str, Any]) -> None:
        ref = self.task.remote(self.trainable, dict(config), self.options, self.seed + trial_id)
        self._running[ref] = trial_id

    def wait(self, until: float | None) -> list[Result | Report]:
        """Every result that is ready once one is, or none when ``until`` comes (or a kill
        deadline of a stopped trial, or a stop request)."""
        while True:
            self._reap()
            now = self.clock()
            ends = [t for t in (until, min(self._stopping.values(), default=None)) if t is not None]
            timeout = max(min(ends) - now, 0.0) if ends else None
            if self.interrupted():
                return []
            if not self._running:
                if timeout:
                    time.sleep(min(timeout, SIGNAL_CHECK))
                return []
            piece = SIGNAL_CHECK if timeout is None else min(timeout, SIGNAL_CHECK)
            refs = list(self._running)
            ready, _ = _wait(refs, 1, piece)
            if ready:      # and every other result that is ready by now
                ready, _ = _wait(refs, len(refs), 0)
                return [self._collect(ref) for ref in ready]
            if timeout is not None and piece >= timeout:
                return []

    def stop(self, trial_id: int) -> None:
        ref = next(r for r, tid in self._running.items() if tid == trial_id)
        del self._running[ref]
        ray.cancel(ref, force=False)
        self._stopping[ref] = self.clock() + self.grace

    def abandon(self, settle: float = 3.0) -> None:
        """End every running trial now.  On a Ray this study started, nothing is cancelled: its
        shutdown ends the tasks, and a ``ray.cancel`` racing a task's own completion crashed the
        driver's core worker (``TaskManager::CompletePendingTask``; twice in CI runs, exit code 1
        instead of 2, even with a wait for the cancelled tasks before the shutdown).  On a joined
        cluster only the tasks not done yet are cancelled, politely first (a KeyboardInterrupt),
        and the workers of those still running after ``settle`` seconds are killed."""
        refs = [*self._running, *self._stopping]
        self._running.clear()
        self._stopping.clear()
        if self.owns_ray or not refs:
            return
        _, left = _wait(refs, len(refs), 0)
        for ref in left:
            ray.cancel(ref, force=False)
        _, left = _wait(left, len(left), settle) if left else ([], [])
        for ref in left:
            ray.cancel(ref, force=True)

    def close(self) -> None:
        """Kill the workers of stopped trials that are still running."""
        for ref in self._stopping:
            ray.cancel(ref, force=True)
        self._stopping.clear()

    def _reap(self) -> None:
        """Forget stopped trials whose task has ended; kill those past their grace."""
        if not self._stopping:
            return
        gone, _ = ray.wait(list(self._stopping), num_returns=len(self._stopping), timeout=0)
        for ref in gone:
            del self._stopping[ref]
        now = self.clock()
        for ref, deadline in list(self._stopping.items()):
            if now >= deadline:
                ray.cancel(ref, force=True)
                del self._stopping[ref]

    def _collect(self, ref: Any) -> Result | Report:
        """The result of a ready task, or the next item of a ready generator task (a report,
        or its result)."""
        tid = self._running[ref]
        end = self.clock()
        try:
            if isinstance(ref, ray.ObjectRefGenerator):
                out = ray.get(next(ref))
                if "report" in out:
                    return Report(tid, end, out["report"])
            else:
                out = ray.get(ref)
        except StopIteration:
            out = {"error": "the trial's generator task ended without a result"}
        except rex.RayTaskError as exc:
            del self._running[ref]
            return Result(tid, end, {}, Status.FAILED, task_error(exc))
        except rex.OutOfMemoryError as exc:
            del self._running[ref]
            return Result(tid, end, {}, Status.KILLED,
                          f"killed by Ray's memory monitor: {first_line(exc)}")
        except rex.RayError as exc:   # worker crashed, node died, object lost
            del self._running[ref]
            return Result(tid, end, {}, Status.FAILED, lost_text(exc))
        del self._running[ref]
        if "error" in out:
            return Result(tid, end, {}, Status.FAILED, out["error"])
        # the run and CPU time measured in the worker, unless the trainable reports its own;
        # returned values that are not numbers: the trial's attributes (MLflow tags ``attr.*``)
        return Result(tid, end, {"runtime": out["runtime"], "cpu_time": out["cpu_time"],
                                 **out["metrics"]},
                      info={"node": out["node_id"], "host": out["host"],
                            **{f"attr.{k}": v for k, v in out.get("attrs", {}).items()}})


def _wait(refs: list, num_returns: int, timeout: float) -> tuple[list, list]:
    """``ray.wait``; a second Ctrl-C during it surfaces as KeyboardInterrupt (Ray reports the
    exception its C code found set as a SystemError)."""
    try:
        return ray.wait(refs, num_returns=num_returns, timeout=timeout)
    except SystemError as exc:
        if isinstance(exc.__context__ or exc.__cause__, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise


def task_error(exc: BaseException) -> str:
    """``ExceptionType: last line of its message (at file:line in function)`` for an error
    raised inside a Ray task, pointing at the user's own code (``user_frame``)."""
    cause = getattr(exc, "cause", None) or exc
    msg = str(cause).strip().splitlines()
    frame = user_frame(str(exc))
    return f"{type(cause).__name__}: {msg[-1] if msg else ''}" + (f" (at {frame})" if frame else "")


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n(?:\s*(\S.*)\n)?')
_NOT_USER = tuple(str(Path(p).resolve()) for p in (
    sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"],
    sysconfig.get_paths()["platlib"], Path(__file__).resolve().parents[2]))


def user_frame(text: str) -> str | None:
    """The deepest frame of a traceback's text in the user's own code (not tuner's, Ray's,
    an installed package's or the standard library's): ``path:line in function: source``;
    None if there is none."""
    frames = [
        m
        for m in _FRAME.finditer(text + "\n")
        if not m.group(1).startswith("<")
        and not str(Path(m.group(1)).resolve()).startswith(_NOT_USER)
    ]
    if not frames:
        return None
    path, line, fn, source = frames[-1].groups()
    return f"{path}:{line} in {fn}" + (f": {source.strip()}" if source else "")


def lost_text(exc: BaseException) -> str:
    """Why a task ended without its result: its worker or node was lost."""
    return f"worker or node lost ({type(exc).__name__}): {first_line(exc)}"


def first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__
