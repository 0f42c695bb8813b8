"""MLflow tracking of a study: one parent run per study, one nested child run per trial.

Layout in MLflow (described for users in docs/how-to/mlflow.md): the experiment is
named after the study; the parent run holds the study's settings as params, its progress (best
so far, failures, utilization...) as metrics over time, and the artifacts (resolved config, trial
table, plots); each trial is a child run (tag ``mlflow.parentRunId``, run name ``trial-0007``)
with the hyperparameters as params, the trial's metrics (a run that reported progress: its
learning curve as their history), its real start and end times, and tags ``trial_id``,
``status`` (FINISHED/FAILED/KILLED/TIMED_OUT/STOPPED; MLflow's own status is KILLED for the last
two, ``RUN_STATUS``), and whatever the caller adds (``pending_at_suggest``, ``node``,
``reason``...).

Only ``MlflowClient`` with explicit run ids is used, never the fluent ``mlflow.start_run``
state, so several trackers can coexist in one process.

Logging never raises and never loses a result.  Every operation is tried ``retries + 1`` times
with exponential backoff; one that still fails (server down, database locked) is appended,
fsync'd, to the JSON-lines spool ``<spool_dir>/mlflow_spool.jsonl``, and from then on every new
operation queues behind it so that the order is kept.  Later calls retry the spool at most every
``probe_interval`` seconds (one attempt; the interval doubles up to a minute while the outage
lasts), so a dead server costs the caller almost nothing; ``flush()`` and ``finish()`` retry it
with full retries.  A tracker created later on
the same ``spool_dir`` (a resumed study) replays what is left.  Replays are idempotent: the
child runs under the parent are read from MLflow (``trial_id`` tag) before a child is created,
again after any error, a spooled parent is looked up by its ``tuner.run_key`` tag, and repeated
metrics, params and artifacts are no-ops in MLflow.  An operation MLflow refuses as invalid
(invalid value, missing run: retrying cannot help) is moved to
``mlflow_rejected.jsonl`` with the error instead of blocking the queue.  A warning is logged once
when tracking degrades and once when it recovers, with the number of buffered items.

If MLflow is unreachable at ``start()`` the study starts anyway: ``start()`` returns a provisional
id ``pending:<key>`` (kept with the spool in ``mlflow_tracker.json``), the parent run is created
when the server answers, and ``run_id`` then gives the real id; ``start(resume_run_id=...)``
accepts either form.

MLflow's HTTP client retries a dead server for minutes by default (7 retries, backoff factor 2,
120 s timeout), and with a server it prints two "View run" lines (after one more request) for
every run it ends.  The tracker does its own retrying and must not flood the terminal, so it
sets ``MLFLOW_HTTP_REQUEST_MAX_RETRIES=0``, ``MLFLOW_HTTP_REQUEST_TIMEOUT=10`` and
``MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT=true`` in the process environment unless they are
already set.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Iterable

from mlflow.utils.validation import MAX_TAG_VAL_LENGTH

from tuner.study.record import TrialRecord

from .operations import Operations, permanent
from .parents import PENDING, STATE_FILE, Parents
from .spool import REJECTED_FILE, SPOOL_FILE, SPOOL_FILES_DIR, Spool
from .values import _text, _truncate, metric_values, mlflow_key, param_values, tag_values

__all__ = ["DEFAULT_TRACKING_URI", "PENDING", "REJECTED_FILE", "RUN_STATUS", "SPOOL_FILE",
           "SPOOL_FILES_DIR", "STATE_FILE", "StudyTracker", "TrialRecord", "metric_values",
           "mlflow_key", "param_values", "tag_values"]

log = logging.getLogger(__name__)

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
# Trial outcome -> MLflow run status (MLflow has no TIMED_OUT; the ``status`` tag keeps it).
RUN_STATUS = {"FINISHED": "FINISHED", "FAILED": "FAILED", "KILLED": "KILLED", "TIMED_OUT": "KILLED",
              "STOPPED": "KILLED"}
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
                 "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}
_OK, _TRANSIENT, _REJECTED = "ok", "transient", "rejected"


def _ms(seconds: float | None) -> int:
    return int(round((time.time() if seconds is None else seconds) * 1000))


class StudyTracker:
    """Logs one study to MLflow (module docstring).  Not thread-safe: call it from one thread.

    ``probe_interval``: while MLflow is unreachable, the logging calls retry the spool at most
    this often, the interval doubling up to a minute while the outage lasts (``flush`` and
    ``finish`` always retry)."""

    def __init__(self, tracking_uri: str | None, experiment: str, spool_dir: str | os.PathLike,
                 run_name: str | None = None, retries: int = 3, backoff: float = 0.5,
                 probe_interval: float = 5.0):
        for k, v in HTTP_DEFAULTS.items():
            os.environ.setdefault(k, v)
        self.tracking_uri = (
            tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
        )
        self.experiment = experiment
        self.run_name = run_name
        self.retries, self.backoff, self.probe_interval = (max(int(retries), 0), backoff,
                                                           probe_interval)
        self.dir = Path(spool_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.parents = Parents(self.dir)
        self.spool = Spool(self.dir)
        self.spool_path, self.rejected_path = self.spool.path, self.spool.rejected_path
        self._queue = self.spool.ops          # the spool's queue, oldest first
        self.ops = Operations(self.tracking_uri, self.parents)
        self._key: str | None = None
        self._accepted: set[int] = set()       # trial ids logged or queued in this tracker
        self._skipped_progress: set[str] = set()
        self._degraded = bool(self._queue)
        self._next_probe = 0.0
        self._probe_wait = probe_interval
        self._last_error: BaseException | None = None
        if self._queue:
            log.warning("MLflow: %d item(s) left in %s from an earlier session will be sent",
                        len(self._queue), self.spool_path)

    # --- public API ---------------------------------------------------------------------------

    @property
    def run_id(self) -> str | None:
        """The parent run's MLflow id; ``pending:<key>`` while it is not created yet (MLflow
        unreachable); None before ``start``."""
        if self._key is None:
            return None
        return self.parents[self._key]["run_id"] or PENDING + self._key

    @property
    def experiment_id(self) -> str | None:
        """The MLflow experiment's id (None while the parent run is not created)."""
        return None if self._key is None else self.parents[self._key].get("experiment_id")

    @property
    def rejected(self) -> int:
        """Operations MLflow refused in this tracker (kept in ``mlflow_rejected.jsonl``)."""
        return self.spool.rejected

    @property
    def unlogged(self) -> int:
        """Operations buffered in the spool, not in MLflow yet."""
        return len(self._queue)

    def start(self, params: dict[str, Any], tags: dict[str, str] | None = None,
              resume_run_id: str | None = None) -> str:
        """Create the parent run (or reopen ``resume_run_id``, a real or ``pending:`` id) with
        ``params`` and ``tags``.  Returns its id (provisional when MLflow is unreachable)."""
        key = self.parents.resolve(resume_run_id)
        self._key = key
        self._accepted = {op["trial_id"] for op in self._queue
                          if op["op"] == "trial" and op["parent"] == key}
        values, cut = param_values(params)
        op = {
            "op": "start",
            "parent": key,
            "experiment": self.experiment,
            "run_name": self.run_name or self.experiment,
            "params": values,
            "tags": tag_values(tags or {}),
            "time": _ms(None),
            "resume": resume_run_id is not None,
        }
        if cut:   # the full values go into an artifact (the param keeps the first 6000 chars)
            op["full_params"] = {k: _text(params[k]) for k in params if mlflow_key(k) in cut}
        self._drain(tries=1, force=True)       # an earlier session's spool goes first
        self._submit(op)
        return self.run_id  # type: ignore[return-value]

    def logged_trial_ids(self) -> set[int]:
        """Trial ids with a complete child run under the parent, plus those queued in the spool
        to get one (``log_trial`` is idempotent for both).  While MLflow is unreachable only the
        queued ones are known; a replay still never duplicates a child run."""
        ids = set(self._accepted)
        run_id = self.parents[self._key]["run_id"] if self._key else None
        if run_id and not self._queue:
            try:
                ids |= {t for t, (_, done) in self.ops.children_of(run_id).items() if done}
            except Exception as exc:  # noqa: BLE001 - reading is best effort
                log.debug("MLflow: could not list child runs: %s", exc)
        return ids

    def log_trial(self, record: TrialRecord) -> None:
        """One nested child run for the trial; a second call for the same trial id does nothing."""
        tid = int(record.trial_id)
        if self._key is None:
            raise RuntimeError("StudyTracker.start() must be called before log_trial()")
        if tid in self._accepted:
            return
        run_id = self.parents[self._key]["run_id"]
        done = self.ops.children.get(run_id, {}).get(tid) if run_id else None
        if done and done[1]:
            self._accepted.add(tid)
            return
        params, cut = param_values(record.params)
        metrics, skipped = metric_values(record.metrics)
        tags = tag_values({**record.tags, "trial_id": tid, "status": record.status})
        if skipped:
            tags["skipped_metrics"] = _truncate(
                ", ".join(f"{k}={v}" for k, v in skipped.items()), MAX_TAG_VAL_LENGTH)[0]
        if cut:
            tags["truncated_params"] = ", ".join(cut)
        self._accepted.add(tid)
        if not self.parents[self._key].get("trials"):
            self.parents[self._key]["trials"] = True      # not adoptable any more (Parents.resolve)
            self.parents.save()
        op = {"op": "trial", "parent": self._key, "trial_id": tid,
              "status": RUN_STATUS.get(record.status, "FAILED"),
              "start": _ms(record.start_time), "end": _ms(record.end_time),
              "params": params, "metrics": metrics, "tags": tags}
        curve = [[_ms(p["time"]), int(p["step"] if p["step"] is not None else k + 1),
                  metric_values(p["metrics"])[0]] for k, p in enumerate(record.curve)]
        if curve:          # the learning curve: one metric history along the progress axis
            op["curve"] = curve
        self._submit(op)

    def log_progress(
        self, step: int, metrics: dict[str, float], timestamp: float | None = None
    ) -> None:
        """Parent-run metrics at ``step`` (e.g. trials done) and wall-clock ``timestamp``."""
        values, skipped = metric_values(metrics)
        new_skips = set(skipped) - self._skipped_progress
        self._skipped_progress |= new_skips
        if not values and not new_skips:
            return
        op = {"op": "progress", "parent": self._need_key(), "step": int(step),
              "time": _ms(timestamp), "metrics": values}
        if new_skips:
            op["tags"] = {"skipped_metrics": "non-finite values not logged: "
                          + ", ".join(sorted(self._skipped_progress))}
        self._submit(op)

    def log_params(self, params: dict[str, Any]) -> None:
        """More parent-run params after ``start`` (e.g. a budget measured at start-up); a key
        logged before must keep its value (MLflow params never change)."""
        values, _ = param_values(params)
        self._submit({"op": "params", "parent": self._need_key(), "params": values})

    def log_tags(self, tags: dict[str, Any]) -> None:
        """Parent-run tags (a tag may change, e.g. the best trial after a resume)."""
        self._submit({"op": "tags", "parent": self._need_key(), "tags": tag_values(tags)})

    def log_artifacts(self, paths: Iterable[str | os.PathLike]) -> None:
        """Files (or folders) into the parent run's artifact root."""
        existing = []
        for p in paths:
            if Path(p).exists():
                existing.append(str(Path(p).resolve()))
            else:
                log.warning("MLflow: artifact %s does not exist; not logged", p)
        if existing:
            self._submit({"op": "artifacts", "parent": self._need_key(), "paths": existing})

    def log_dict(self, data: dict, artifact_file: str) -> None:
        """``data`` as a JSON (or YAML, by extension) artifact of the parent run."""
        self._submit({"op": "dict", "parent": self._need_key(), "artifact_file": artifact_file,
                      "data": json.loads(json.dumps(data, default=str))})

    def flush(self) -> int:
        """Send everything buffered (with retries); returns how many items are still not logged."""
        self._drain(tries=self.retries + 1, force=True)
        return len(self._queue)

    def finish(self, status: str = "FINISHED") -> int:
        """End the parent run with ``status`` (FINISHED/FAILED/KILLED) after a flush.  Returns the
        number of items still unlogged; they stay in the spool for a later tracker on the same
        ``spool_dir`` (a resumed study), and a warning says where."""
        if self._key is not None:
            self._submit(
                {"op": "end", "parent": self._key, "status": RUN_STATUS.get(status, status),
                 "time": _ms(None)}
            )
        left = self.flush()
        if left:
            log.warning(
                "MLflow: %d item(s) could not be logged to %s (%s); they are kept in %s and "
                "are sent by the next tracker on that folder (resume the study, or call "
                "flush())",
                left,
                self.tracking_uri,
                self._last_error,
                self.spool_path,
            )
        if self.rejected:
            log.warning("MLflow: %d item(s) were refused by MLflow; they are kept in %s",
                        self.rejected, self.rejected_path)
        return left

    # --- queue and spool ----------------------------------------------------------------------

    def _need_key(self) -> str:
        if self._key is None:
            raise RuntimeError("StudyTracker.start() must be called first")
        return self._key

    def _submit(self, op: dict[str, Any]) -> None:
        """Send now, or queue behind what is already buffered; never raises."""
        try:
            if self._queue:
                self.spool.append(op)
                self._drain(tries=1, force=False)
                return
            if self._attempt(op, self.retries + 1) == _TRANSIENT:
                self.spool.append(op)
                self._wait_longer()
                self._degrade()
        except Exception as exc:  # noqa: BLE001 - e.g. the spool's disk is full: report, go on
            log.error("MLflow: could not log or buffer %s: %s", op.get("op"), exc)

    def _drain(self, tries: int, force: bool) -> None:
        """Send the queue in order; stop at the first item MLflow cannot take now."""
        if not self._queue or (not force and time.monotonic() < self._next_probe):
            return
        sent = 0
        try:
            while self._queue:
                if self._attempt(self._queue[0], tries) == _TRANSIENT:
                    break
                self.spool.pop()
                sent += 1
                if sent % 50 == 0:
                    self.spool.rewrite()
        finally:
            if sent:
                self.spool.rewrite()
        if self._queue:
            self._wait_longer()
            self._degrade()
        elif self._degraded:
            self._degraded, self._probe_wait = False, self.probe_interval
            log.warning("MLflow at %s is reachable again: %d buffered item(s) sent",
                        self.tracking_uri, sent)

    def _wait_longer(self) -> None:
        """Next probe of the spool: ``probe_interval`` after the first failure, doubling up to
        a minute while MLflow stays away (a hung server costs a request timeout per probe)."""
        self._next_probe = time.monotonic() + self._probe_wait
        self._probe_wait = min(2 * self._probe_wait, max(self.probe_interval, 60.0))

    def _degrade(self) -> None:
        if not self._degraded:
            self._degraded = True
            log.warning("MLflow at %s is not reachable (%s); the study goes on and logging is "
                        "buffered in %s (%d item(s) so far)", self.tracking_uri, self._last_error,
                        self.spool_path, len(self._queue))

    def _attempt(self, op: dict[str, Any], tries: int) -> str:
        for i in range(max(tries, 1)):
            try:
                self.ops.execute(op)
                return _OK
            except Exception as exc:  # noqa: BLE001 - classified below
                if permanent(exc):
                    self.spool.reject(op, exc)
                    return _REJECTED
                self._last_error = exc
                op["attempted"] = True
                # The request may have reached MLflow before the error: what is known of the
                # child runs is read again before anything is created.
                self.ops.children.clear()
                if i + 1 < tries:
                    time.sleep(self.backoff * 2 ** i)
        return _TRANSIENT
