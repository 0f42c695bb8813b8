"""The MLflow tracker in a process of its own: logging never takes the driver's time.

Logging a trial to MLflow costs about 20 ms of CPU (SQLAlchemy, one child run and three
transactions), and a thread in the driver competes with the loop for the GIL.
``TrackerProcess`` runs a ``StudyTracker`` in a child process and offers the tracker's methods:

* the logging calls (``log_trial``, ``log_progress``, ``log_params``, ``log_tags``, ``log_dict``,
  ``log_artifacts``) return at once; a feeder thread writes them, in order, to the child's
  stdin;
* ``start``, ``logged_trial_ids``, ``flush``, ``finish`` and ``run_id`` wait for the child's
  answer (which comes after everything sent before them);
* the child's log records are handed to the driver's loggers, so warnings look the same.

The child runs at a lower priority (``nice``), so it uses the CPU the trials and the loop leave,
and catches up when they wait; it lowers its priority only once the parent run has started,
because the study waits for that (MLflow's first start creates its sqlite tables: about 5 s
of CPU, which a niced process did not get for minutes beside CPU-bound jobs).  Nothing is
lost when either side dies: the study state holds every result, and a resumed study logs
what MLflow lacks (``LogToTracker.log_unlogged``; the tracker's own spool covers an
unreachable MLflow).  A child whose driver died stops after the operation at hand, so it
cannot race the tracker of a resumed study.

Hand-written because ``multiprocessing`` would run the user's ``__main__`` again in the child
(spawn), which breaks scripts without a main guard, and forking a driver that runs Ray is unsafe.
"""

from __future__ import annotations

import itertools
import logging
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any, BinaryIO

from tuner.study.record import TrialRecord

log = logging.getLogger(__name__)

WRITER_NICE = 10          # the child's niceness increment
IDLE_EXIT = 3.0           # seconds a child with nothing left to do is given to exit
WAIT_POLL = 0.5           # seconds between checks that the child is alive while waiting


class WriterSlow(RuntimeError):
    """The writer did not answer within the time the driver waits (MLflow slow or stuck)."""


class WriterGone(RuntimeError):
    """The writer process exited before it answered."""


class TrackerProcess:
    """A ``StudyTracker(tracking_uri, experiment, spool_dir, run_name)`` in a child process (see
    the module docstring).  Call it from one thread; ``close()`` ends the child."""

    def __init__(self, tracking_uri: str | None, experiment: str, spool_dir: str | os.PathLike,
                 run_name: str | None = None, nice: int = WRITER_NICE, wait: float = 30.0):
        self.wait = wait        # seconds the driver waits for an answer that MLflow holds up
        read_fd, write_fd = os.pipe()
        self._proc = subprocess.Popen([sys.executable, "-m", __name__, str(write_fd), str(nice)],
                                      stdin=subprocess.PIPE, pass_fds=(write_fd,))
        os.close(write_fd)
        self._replies = os.fdopen(read_fd, "rb")
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._waiting: dict[int, queue.SimpleQueue] = {}
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._unacked: set[int] = set()      # logging calls sent, not done by the child yet
        self._gone = False
        threading.Thread(target=self._feed, name="tuner-mlflow-feed", daemon=True).start()
        threading.Thread(target=self._read, name="tuner-mlflow-read", daemon=True).start()
        try:
            self._call("__init__", tracking_uri, experiment, str(spool_dir), run_name=run_name)
        except BaseException:
            self.close()
            raise

    # --- the tracker's API ------------------------------------------------------------------

    @property
    def run_id(self) -> str | None:
        """The parent run's id (``StudyTracker.run_id``); None if the writer is gone."""
        return self._attribute("run_id")

    @property
    def experiment_id(self) -> str | None:
        """The experiment's id (``StudyTracker.experiment_id``); None if the writer is gone."""
        return self._attribute("experiment_id")

    def _attribute(self, name: str) -> Any:
        """The child tracker's attribute ``name``; None if the writer is gone or stuck."""
        try:
            return self._call(name, timeout=self.wait)
        except (WriterGone, WriterSlow):
            return None

    @property
    def behind(self) -> int:
        """Logging calls sent that the child has not done yet."""
        return len(self._unacked)

    def start(self, params: dict[str, Any], tags: dict[str, str] | None = None,
              resume_run_id: str | None = None) -> str:
        return self._call("start", params, tags, resume_run_id=resume_run_id)

    def logged_trial_ids(self) -> set[int] | None:
        """``StudyTracker.logged_trial_ids``; None when the writer does not answer in time."""
        try:
            return self._call("logged_trial_ids", timeout=self.wait)
        except WriterSlow:
            return None

    def flush(self) -> int:
        return self._call("flush")

    def finish(self, status: str = "FINISHED") -> int:
        """``StudyTracker.finish`` after everything sent before, waiting ``wait`` seconds at
        most; if the child is gone or stuck (then ended), warns and returns the number of
        calls it did not do (a resumed study logs the missing trials)."""
        try:
            return self._call("finish", status, timeout=self.wait)
        except WriterSlow:
            left = len(self._unacked) + 1
            log.warning("MLflow did not take the study's last %d item(s) within %g s; they are "
                        "kept in the study folder and --resume sends them", left, self.wait)
            self._end()
            return left
        except WriterGone as exc:
            log.warning("MLflow: %s; %d logging call(s) were not done (--resume logs the missing "
                        "trials)", exc, len(self._unacked))
            return len(self._unacked)

    def log_trial(self, record: TrialRecord) -> None:
        self._send("log_trial", record)

    def log_progress(
        self, step: int, metrics: dict[str, float], timestamp: float | None = None
    ) -> None:
        self._send("log_progress", step, metrics, timestamp)

    def log_params(self, params: dict[str, Any]) -> None:
        self._send("log_params", params)

    def log_tags(self, tags: dict[str, Any]) -> None:
        self._send("log_tags", tags)

    def log_dict(self, data: dict, artifact_file: str) -> None:
        self._send("log_dict", data, artifact_file)

    def log_artifacts(self, paths: list[Any]) -> None:
        self._send("log_artifacts", [str(p) for p in paths])

    def close(self, timeout: float | None = None) -> None:
        """End the child once it has done everything sent (killed after ``timeout`` s, by
        default ``wait``).  With every call done (each one's transaction committed), only the
        child's interpreter teardown is left, which a niced child beside CPU-bound jobs may take
        long over: it is given a few seconds and then ended quietly."""
        timeout = self.wait if timeout is None else timeout
        with self._lock:
            idle = not self._unacked and not self._waiting
        self._outbox.put(None)
        wait = min(timeout, IDLE_EXIT) if idle else timeout
        try:
            self._proc.wait(wait)
        except subprocess.TimeoutExpired:
            if not idle:
                log.warning("MLflow writer process did not exit within %g s; killing it", wait)
            self._proc.kill()
            self._proc.wait()

    def _end(self) -> None:
        """Kill the child at once (it holds up the study: ``finish`` timed out)."""
        with self._lock:
            self._gone = True
        self._proc.kill()
        self._proc.wait()

    # --- the pipes --------------------------------------------------------------------------

    def _send(self, method: str, *args: Any, **kwargs: Any) -> int:
        seq = next(self._seq)
        with self._lock:
            self._unacked.add(seq)
        self._outbox.put((seq, method, args, kwargs))
        return seq

    def _call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """The child tracker's ``method(*args, **kwargs)``; ``WriterGone`` if the child is gone,
        ``WriterSlow`` once ``timeout`` seconds passed without an answer."""
        box: queue.SimpleQueue = queue.SimpleQueue()
        seq = next(self._seq)
        with self._lock:
            if self._gone:
                raise WriterGone(self._exit_text())
            self._waiting[seq] = box
        self._outbox.put((seq, method, args, kwargs))
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                value, error = box.get(timeout=WAIT_POLL)
                break
            except queue.Empty:
                gone = self._gone or self._proc.poll() is not None
                if gone or (deadline is not None and time.monotonic() > deadline):
                    with self._lock:
                        self._waiting.pop(seq, None)
                    if gone:
                        raise WriterGone(self._exit_text()) from None
                    raise WriterSlow(f"MLflow did not answer {method} within "
                                     f"{timeout:g} s") from None
        if error is not None:
            raise error
        return value

    def _exit_text(self) -> str:
        code = self._proc.poll()
        return ("the MLflow writer process is gone" if code is None else
                f"the MLflow writer process exited with code {code}")

    def _feed(self) -> None:
        stdin = self._proc.stdin
        try:
            while (msg := self._outbox.get()) is not None:
                pickle.dump(msg, stdin, protocol=pickle.HIGHEST_PROTOCOL)
                stdin.flush()
        except (BrokenPipeError, OSError, pickle.PicklingError) as exc:
            log.warning("MLflow: cannot reach the writer process (%s)", exc)
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def _read(self) -> None:
        try:
            while True:
                msg = pickle.load(self._replies)
                if msg[0] == "log":
                    record = logging.makeLogRecord(msg[1])
                    logger = logging.getLogger(record.name)
                    if logger.isEnabledFor(record.levelno):
                        logger.handle(record)
                    continue
                _, seq, value, error = msg
                with self._lock:
                    box = self._waiting.pop(seq, None)
                    self._unacked.discard(seq)
                if box is not None:
                    box.put((value, error))
                elif error is not None:
                    log.error("MLflow: %s", error)
        except (EOFError, OSError, pickle.UnpicklingError):
            pass
        finally:
            with self._lock:
                self._gone = True


# --- the child ------------------------------------------------------------------------------

class _Forward(logging.Handler):
    """Log records to the driver, as dicts ``logging.makeLogRecord`` takes."""

    def __init__(self, send: Any):
        super().__init__(logging.INFO)
        self.send = send

    def emit(self, record: logging.LogRecord) -> None:
        self.send(("log", {"name": record.name, "levelno": record.levelno,
                           "levelname": record.levelname, "msg": record.getMessage(),
                           "args": None, "created": record.created}))


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - e.g. an exception holding a lock or a socket
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def serve(requests: BinaryIO, replies: BinaryIO, nice: int = 0) -> None:
    """Do the calls read from ``requests`` in order, answering each on ``replies``; return at
    the end of ``requests`` or when the driver that started this process is gone.  ``nice``:
    the niceness taken once the parent run has started (module docstring)."""
    from tuner.integrations.mlflow.tracking import StudyTracker

    driver = os.getppid()

    def send(msg: Any) -> None:
        try:
            pickle.dump(msg, replies, protocol=pickle.HIGHEST_PROTOCOL)
            replies.flush()
        except (BrokenPipeError, OSError):
            pass

    handler = _Forward(send)
    logger = logging.getLogger("tuner")   # MLflow's own records go to stderr, as in the driver
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    # MLflow's INFO lines (creating the sqlite tables, its migrations) would land inside the
    # study's start-up output; its warnings and errors still reach stderr
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    tracker: StudyTracker | None = None
    while True:
        try:
            seq, method, args, kwargs = pickle.load(requests)
        except EOFError:
            return
        if os.getppid() != driver:    # the driver died: a resumed study's tracker takes over
            return
        try:
            if method == "__init__":
                tracker, value = StudyTracker(*args, **kwargs), None
            elif method in ("run_id", "experiment_id"):
                value = getattr(tracker, method)
            else:
                value = getattr(tracker, method)(*args, **kwargs)
            send(("reply", seq, value, None))
        except Exception as exc:  # noqa: BLE001 - handed to the driver
            send(("reply", seq, None, _picklable(exc)))
        if method == "start" and nice:
            os.nice(nice)
            nice = 0


def main(argv: list[str]) -> None:
    # Ctrl-C reaches every process of the terminal's group: the driver decides what happens
    # (it says when to close), so the writer neither stops mid-call nor prints a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    reply_fd, nice = int(argv[0]), int(argv[1])
    replies = os.fdopen(reply_fd, "wb")
    try:
        serve(sys.stdin.buffer, replies, nice)
    finally:
        try:
            replies.close()
        except OSError:    # the driver is gone; what a failed send() left buffered goes nowhere
            pass


if __name__ == "__main__":
    main(sys.argv[1:])
