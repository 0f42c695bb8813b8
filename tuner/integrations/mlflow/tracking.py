"""MLflow tracking of a study: one parent run per study, one nested child run per trial.

Layout in MLflow (SPEC §5): the experiment is named after the study; the parent run holds the
study's settings as params, its progress (best so far, failures, utilization...) as metrics
over time, and the artifacts (resolved config, trial table, plots); each trial is a child run
(tag ``mlflow.parentRunId``, run name ``trial-0007``) with the hyperparameters as params, the
trial's metrics, its real start and end times, and tags ``trial_id``, ``status``
(FINISHED/FAILED/KILLED/TIMED_OUT; MLflow's own status is KILLED for TIMED_OUT), and whatever the
caller adds (``pending_at_suggest``, ``node``, ``reason``...).

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
import math
import numbers
import os
import re
import shutil
import time
import uuid
from pathlib import Path
from typing import Any, Iterable

from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.utils.validation import (MAX_ENTITIES_PER_BATCH, MAX_ENTITY_KEY_LENGTH,
                                     MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH,
                                     MAX_TAG_VAL_LENGTH)

from tuner.core.persist import append_line, opened, write_atomic, write_state
from tuner.study.record import TrialRecord

log = logging.getLogger(__name__)

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
SPOOL_FILE = "mlflow_spool.jsonl"
STATE_FILE = "mlflow_tracker.json"
PARENTS_FORMAT = "tuner.mlflow_parents"   # STATE_FILE: the parent runs this folder logs to
REJECTED_FILE = "mlflow_rejected.jsonl"
SPOOL_FILES_DIR = "mlflow_spool_files"
PENDING = "pending:"
RUN_KEY_TAG = "tuner.run_key"
PARENT_TAG = "mlflow.parentRunId"
RUN_NAME_TAG = "mlflow.runName"
# Trial outcome -> MLflow run status (MLflow has no TIMED_OUT; the ``status`` tag keeps it).
RUN_STATUS = {"FINISHED": "FINISHED", "FAILED": "FAILED", "KILLED": "KILLED", "TIMED_OUT": "KILLED"}
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
                 "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}
PERMANENT_ERRORS = {"INVALID_PARAMETER_VALUE", "RESOURCE_DOES_NOT_EXIST", "RESOURCE_ALREADY_EXISTS",
                    "BAD_REQUEST", "MALFORMED_REQUEST"}
_BAD_KEY_CHARS = re.compile(r"[^\w.\- :]")
_OK, _TRANSIENT, _REJECTED = "ok", "transient", "rejected"


class _Rejected(Exception):
    """An operation that can never succeed (it is moved out of the queue)."""


# --- values within MLflow's limits -------------------------------------------------------------

def mlflow_key(name: Any) -> str:
    """A param/metric/tag key MLflow accepts: disallowed characters (and ``/``, which MLflow
    treats as a path) become ``_``, at most 250 characters."""
    key = _BAD_KEY_CHARS.sub("_", str(name))[:MAX_ENTITY_KEY_LENGTH] or "_"
    return "_" + key[1:] if key in (".", "..") or key.startswith("..") else key


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=str, sort_keys=True)
    return str(value)


def _truncate(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    note = f"...[truncated, {len(text)} chars]"
    return text[:limit - len(note)] + note, True


def param_values(params: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Params as MLflow strings; values longer than MLflow's 6000 characters are truncated.
    Returns the params and the keys that were truncated."""
    out, cut = {}, []
    for k, v in params.items():
        out[mlflow_key(k)], was_cut = _truncate(_text(v), MAX_PARAM_VAL_LENGTH)
        if was_cut:
            cut.append(mlflow_key(k))
    return out, cut


def tag_values(tags: dict[str, Any]) -> dict[str, str]:
    return {mlflow_key(k): _truncate(_text(v), MAX_TAG_VAL_LENGTH)[0] for k, v in tags.items()}


def metric_values(metrics: dict[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """Finite real numbers as floats; the others (NaN, inf, None, text) are returned apart, as
    text, for a tag that says they were skipped."""
    ok, skipped = {}, {}
    for k, v in metrics.items():
        if isinstance(v, numbers.Real) and math.isfinite(float(v)):
            ok[mlflow_key(k)] = float(v)
        else:
            skipped[mlflow_key(k)] = _text(v)
    return ok, skipped


def _ms(seconds: float | None) -> int:
    return int(round((time.time() if seconds is None else seconds) * 1000))


def _permanent(exc: BaseException) -> bool:
    """MLflow refused the request itself (invalid value, missing run...): retrying the same
    request cannot succeed.  Everything else (connection errors, 5xx, 429, 401/403, a proxy's
    404, a locked database) may pass later."""
    return isinstance(exc, _Rejected) or (isinstance(exc, MlflowException)
                                          and exc.error_code in PERMANENT_ERRORS)


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
        self.tracking_uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
        self.experiment = experiment
        self.run_name = run_name
        self.retries, self.backoff, self.probe_interval = max(int(retries), 0), backoff, probe_interval
        self.dir = Path(spool_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.spool_path = self.dir / SPOOL_FILE
        self.rejected_path = self.dir / REJECTED_FILE
        self._state_path = self.dir / STATE_FILE
        self._state: dict[str, Any] = {"parents": {}}
        if self._state_path.exists():
            state = json.loads(self._state_path.read_text())
            if "format" in state:       # files written before the envelope have none
                opened(state, PARENTS_FORMAT, (1,), str(self._state_path))
            self._state = {"parents": state["parents"]}
        self._queue: list[dict[str, Any]] = self._read_spool()
        self._client: MlflowClient | None = None
        self._key: str | None = None
        self._experiment_ids: dict[str, str] = {}
        # parent run id -> {trial id: (child run id, complete)}; absent = not read from MLflow yet
        self._children: dict[str, dict[int, tuple[str, bool]]] = {}
        self._accepted: set[int] = set()       # trial ids logged or queued in this tracker
        self._skipped_progress: set[str] = set()
        self._degraded = bool(self._queue)
        self._next_probe = 0.0
        self._probe_wait = probe_interval
        self._last_error: BaseException | None = None
        self.rejected = 0                      # operations MLflow refused in this tracker
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
        return self._parent(self._key)["run_id"] or PENDING + self._key

    @property
    def unlogged(self) -> int:
        """Operations buffered in the spool, not in MLflow yet."""
        return len(self._queue)

    def start(self, params: dict[str, Any], tags: dict[str, str] | None = None,
              resume_run_id: str | None = None) -> str:
        """Create the parent run (or reopen ``resume_run_id``, a real or ``pending:`` id) with
        ``params`` and ``tags``.  Returns its id (provisional when MLflow is unreachable)."""
        key = self._resolve(resume_run_id)
        self._key = key
        self._accepted = {op["trial_id"] for op in self._queue
                          if op["op"] == "trial" and op["parent"] == key}
        values, cut = param_values(params)
        op = {"op": "start", "parent": key, "experiment": self.experiment,
              "run_name": self.run_name or self.experiment, "params": values,
              "tags": tag_values(tags or {}), "time": _ms(None), "resume": resume_run_id is not None}
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
        run_id = self._parent(self._key)["run_id"] if self._key else None
        if run_id and not self._queue:
            try:
                ids |= {t for t, (_, done) in self._children_of(run_id).items() if done}
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
        run_id = self._parent(self._key)["run_id"]
        done = self._children.get(run_id, {}).get(tid) if run_id else None
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
        if not self._parent(self._key).get("trials"):
            self._parent(self._key)["trials"] = True      # not adoptable any more (_resolve)
            self._save_state()
        self._submit({"op": "trial", "parent": self._key, "trial_id": tid,
                      "status": RUN_STATUS.get(record.status, "FAILED"),
                      "start": _ms(record.start_time), "end": _ms(record.end_time),
                      "params": params, "metrics": metrics, "tags": tags})

    def log_progress(self, step: int, metrics: dict[str, float], timestamp: float | None = None) -> None:
        """Parent-run metrics at ``step`` (e.g. trials done) and wall-clock ``timestamp``."""
        values, skipped = metric_values(metrics)
        new_skips = set(skipped) - self._skipped_progress
        self._skipped_progress |= new_skips
        if not values and not new_skips:
            return
        op = {"op": "progress", "parent": self._need_key(), "step": int(step), "time": _ms(timestamp),
              "metrics": values}
        if new_skips:
            op["tags"] = {"skipped_metrics": "non-finite values not logged: "
                          + ", ".join(sorted(self._skipped_progress))}
        self._submit(op)

    def log_params(self, params: dict[str, Any]) -> None:
        """More parent-run params after ``start`` (e.g. a budget measured at start-up); a key
        logged before must keep its value (MLflow params never change)."""
        values, _ = param_values(params)
        self._submit({"op": "params", "parent": self._need_key(), "params": values})

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
            self._submit({"op": "end", "parent": self._key, "status": RUN_STATUS.get(status, status),
                          "time": _ms(None)})
        left = self.flush()
        if left:
            log.warning("MLflow: %d item(s) could not be logged to %s (%s); they are kept in %s and "
                        "are sent by the next tracker on that folder (resume the study, or call "
                        "flush())", left, self.tracking_uri, self._last_error, self.spool_path)
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
                self._append(op)
                self._drain(tries=1, force=False)
                return
            if self._attempt(op, self.retries + 1) == _TRANSIENT:
                self._append(op)
                self._wait_longer()
                self._degrade()
        except Exception as exc:  # noqa: BLE001 - e.g. the spool's disk is full: report, go on
            log.error("MLflow: could not log or buffer %s: %s", op.get("op"), exc)

    def _append(self, op: dict[str, Any]) -> None:
        if op["op"] == "artifacts" and not op.get("spooled"):
            op = self._copy_artifacts(op)
        append_line(self.spool_path, json.dumps(op) + "\n")
        self._queue.append(op)

    def _copy_artifacts(self, op: dict[str, Any]) -> dict[str, Any]:
        """Queued artifacts are copied next to the spool, so that later edits or deletions of
        the originals cannot change what gets logged."""
        dest = self.dir / SPOOL_FILES_DIR / uuid.uuid4().hex
        dest.mkdir(parents=True)
        paths = []
        for p in map(Path, op["paths"]):
            target = dest / p.name
            (shutil.copytree if p.is_dir() else shutil.copy2)(p, target)
            paths.append(str(target))
        return {**op, "paths": paths, "spooled": str(dest)}

    def _read_spool(self) -> list[dict[str, Any]]:
        if not self.spool_path.exists():
            return []
        ops = []
        for line in self.spool_path.read_text().splitlines():
            try:
                op = json.loads(line)
            except json.JSONDecodeError:   # a line cut by a crash mid-write
                log.warning("MLflow: skipping an unreadable line in %s", self.spool_path)
                continue
            op["attempted"] = True         # it may have reached MLflow before the crash
            ops.append(op)
        return ops

    def _rewrite_spool(self) -> None:
        if self._queue:
            write_atomic(self.spool_path, "".join(json.dumps(op) + "\n" for op in self._queue))
        else:
            self.spool_path.unlink(missing_ok=True)
            shutil.rmtree(self.dir / SPOOL_FILES_DIR, ignore_errors=True)

    def _drain(self, tries: int, force: bool) -> None:
        """Send the queue in order; stop at the first item MLflow cannot take now."""
        if not self._queue or (not force and time.monotonic() < self._next_probe):
            return
        sent = 0
        try:
            while self._queue:
                if self._attempt(self._queue[0], tries) == _TRANSIENT:
                    break
                done = self._queue.pop(0)
                if done.get("spooled"):
                    shutil.rmtree(done["spooled"], ignore_errors=True)
                sent += 1
                if sent % 50 == 0:
                    self._rewrite_spool()
        finally:
            if sent:
                self._rewrite_spool()
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
                self._execute(op)
                return _OK
            except Exception as exc:  # noqa: BLE001 - classified below
                if _permanent(exc):
                    self._reject(op, exc)
                    return _REJECTED
                self._last_error = exc
                op["attempted"] = True
                # The request may have reached MLflow before the error: what is known of the
                # child runs is read again before anything is created.
                self._children.clear()
                if i + 1 < tries:
                    time.sleep(self.backoff * 2 ** i)
        return _TRANSIENT

    def _reject(self, op: dict[str, Any], exc: BaseException) -> None:
        self.rejected += 1
        (log.warning if self.rejected == 1 else log.debug)(
            "MLflow refused %s (%s); kept in %s", op["op"], exc, self.rejected_path)
        append_line(self.rejected_path, json.dumps({"error": str(exc), "item": op}) + "\n")

    # --- parents ------------------------------------------------------------------------------

    def _parent(self, key: str) -> dict[str, Any]:
        return self._state["parents"].setdefault(key, {"run_id": None, "experiment_id": None})

    def _save_state(self) -> None:
        write_state(self._state_path, PARENTS_FORMAT, 1, self._state, indent=1)

    def _resolve(self, resume_run_id: str | None) -> str:
        """The local key of the parent run to log to (new, pending or an existing MLflow run)."""
        parents = self._state["parents"]
        if resume_run_id and resume_run_id.startswith(PENDING):
            key = resume_run_id[len(PENDING):]
            if key in parents:
                return key
            log.warning("MLflow: %s is not known in %s; starting a new parent run",
                        resume_run_id, self._state_path)
        elif resume_run_id:
            for key, p in parents.items():
                if p["run_id"] == resume_run_id:
                    return key
            key = uuid.uuid4().hex
            parents[key] = {"run_id": resume_run_id, "experiment_id": None}
            self._save_state()
            return key
        if parents:
            key, last = list(parents.items())[-1]
            if not last.get("trials"):
                # an earlier session in this folder died before its study state was saved (a
                # start-up failure, a hard kill): its parent has no trial; adopt it, so a study
                # never leaves an empty parent run behind and never gets two
                log.info("MLflow: adopting the parent run of an earlier start of this study (%s)",
                         last["run_id"] or PENDING + key)
                return key
        key = uuid.uuid4().hex
        self._parent(key)
        self._save_state()
        return key

    def _parent_run(self, key: str) -> str:
        run_id = self._parent(key)["run_id"]
        if run_id is None:
            raise _Rejected("its parent run was never created (the start was refused)")
        return run_id

    def _experiment_id(self, name: str) -> str:
        if name not in self._experiment_ids:
            client = self._mlflow()
            exp = client.get_experiment_by_name(name)
            if exp is None:
                try:
                    # the MLflow 3 UI opens model-training experiments on the runs table
                    exp_id = client.create_experiment(
                        name, tags={"mlflow.experimentKind": "custom_model_development"})
                except MlflowException:          # created meanwhile by someone else
                    exp = client.get_experiment_by_name(name)
                    if exp is None:
                        raise
                    exp_id = exp.experiment_id
            else:
                exp_id = exp.experiment_id
                if exp.lifecycle_stage == "deleted":
                    log.warning("MLflow: experiment '%s' was deleted; restoring it", name)
                    client.restore_experiment(exp_id)
            self._experiment_ids[name] = exp_id
        return self._experiment_ids[name]

    def _mlflow(self) -> MlflowClient:
        if self._client is None:
            self._client = MlflowClient(self.tracking_uri)
        return self._client

    # --- operations ---------------------------------------------------------------------------

    def _execute(self, op: dict[str, Any]) -> None:
        kind = op["op"]
        if kind == "start":
            return self._exec_start(op)
        run_id = self._parent_run(op["parent"])
        client = self._mlflow()
        if kind == "trial":
            self._exec_trial(op, run_id)
        elif kind == "progress":
            self._log_batch(run_id, metrics=[Metric(k, v, op["time"], op["step"])
                                             for k, v in op["metrics"].items()],
                            tags=op.get("tags", {}))
        elif kind == "artifacts":
            for p in map(Path, op["paths"]):
                if p.is_dir():
                    client.log_artifacts(run_id, str(p), artifact_path=p.name)
                else:
                    client.log_artifact(run_id, str(p))
        elif kind == "dict":
            client.log_dict(run_id, op["data"], op["artifact_file"])
        elif kind == "params":
            self._log_batch(run_id, params=op["params"])
        elif kind == "end":
            client.set_terminated(run_id, op["status"], end_time=op["time"])
        else:
            raise _Rejected(f"unknown operation {kind!r}")

    def _exec_start(self, op: dict[str, Any]) -> None:
        client, parent = self._mlflow(), self._parent(op["parent"])
        if parent["run_id"] is not None:
            try:
                run = client.get_run(parent["run_id"])
            except MlflowException as exc:
                if not _permanent(exc):
                    raise
                run = None
            if run is not None and run.info.lifecycle_stage != "deleted":
                return self._reopen(op, run)
            log.warning("MLflow: run %s to resume does not exist any more; starting a new parent "
                        "run", parent["run_id"])
            parent["run_id"] = None
        exp_id = self._experiment_id(op["experiment"])
        found = (client.search_runs([exp_id], f"tags.`{RUN_KEY_TAG}` = '{op['parent']}'", max_results=1)
                 if op.get("attempted") else [])
        if found:
            run_id = found[0].info.run_id
            client.update_run(run_id, "RUNNING")
        else:
            tags = {**op["tags"], RUN_KEY_TAG: op["parent"], RUN_NAME_TAG: op["run_name"]}
            run_id = client.create_run(exp_id, start_time=op["time"], tags=tags,
                                       run_name=op["run_name"]).info.run_id
            self._children[run_id] = {}
        parent.update(run_id=run_id, experiment_id=exp_id)
        self._save_state()
        self._log_batch(run_id, params=op["params"])
        if op.get("full_params"):
            client.log_dict(run_id, op["full_params"], "params_full.json")

    def _reopen(self, op: dict[str, Any], run: Any) -> None:
        """A resumed study: RUNNING again; new params are logged, changed ones become tags
        ``resumed.<key>`` (MLflow does not allow changing a param)."""
        client, run_id = self._mlflow(), run.info.run_id
        self._parent(op["parent"])["experiment_id"] = run.info.experiment_id
        self._save_state()
        client.update_run(run_id, "RUNNING")
        old = run.data.params
        new = {k: v for k, v in op["params"].items() if k not in old}
        changed = {f"resumed.{k}": v for k, v in op["params"].items() if k in old and old[k] != v}
        self._log_batch(run_id, params=new, tags={**op["tags"], **changed})

    def _exec_trial(self, op: dict[str, Any], parent_id: str) -> None:
        client, tid = self._mlflow(), op["trial_id"]
        children = self._children_of(parent_id)
        entry = children.get(tid)
        if entry is not None and entry[1]:
            return
        if entry is None:
            exp_id = self._parent(op["parent"])["experiment_id"] or client.get_run(
                parent_id).info.experiment_id
            name = f"trial-{tid:04d}"
            tags = {PARENT_TAG: parent_id, RUN_NAME_TAG: name, "trial_id": str(tid),
                    "status": op["tags"]["status"]}
            child = client.create_run(exp_id, start_time=op["start"], tags=tags, run_name=name)
            entry = (child.info.run_id, False)
            children[tid] = entry
        run_id = entry[0]
        self._log_batch(run_id, params=op["params"], tags=op["tags"],
                        metrics=[Metric(k, v, op["end"], 0) for k, v in op["metrics"].items()])
        client.set_terminated(run_id, op["status"], end_time=op["end"])
        children[tid] = (run_id, True)

    def _children_of(self, parent_id: str) -> dict[int, tuple[str, bool]]:
        if parent_id not in self._children:
            exp_id = self._mlflow().get_run(parent_id).info.experiment_id
            found: dict[int, tuple[str, bool]] = {}
            for run in self._search(exp_id, f"tags.`{PARENT_TAG}` = '{parent_id}'"):
                tid = run.data.tags.get("trial_id")
                if tid is not None and tid.lstrip("-").isdigit():
                    prev = found.get(int(tid))
                    done = run.info.status != "RUNNING"
                    if prev is None or (done and not prev[1]):
                        found[int(tid)] = (run.info.run_id, done)
            self._children[parent_id] = found
        return self._children[parent_id]

    def _search(self, exp_id: str, filter_string: str) -> list[Any]:
        runs, token = [], None
        while True:
            page = self._mlflow().search_runs([exp_id], filter_string, max_results=1000,
                                              page_token=token)
            runs.extend(page)
            token = page.token
            if not token:
                return runs

    def _log_batch(self, run_id: str, metrics: list[Metric] = (), params: dict[str, str] | None = None,
                   tags: dict[str, str] | None = None) -> None:
        """``log_batch`` in chunks within MLflow's limits (100 params+tags, 1000 entities)."""
        items: list[Any] = ([Param(k, v) for k, v in (params or {}).items()]
                            + [RunTag(k, v) for k, v in (tags or {}).items()])
        metrics = list(metrics)
        while items or metrics:
            pt, items = items[:MAX_PARAMS_TAGS_PER_BATCH], items[MAX_PARAMS_TAGS_PER_BATCH:]
            room = MAX_ENTITIES_PER_BATCH - len(pt)
            ms, metrics = metrics[:room], metrics[room:]
            self._mlflow().log_batch(run_id, metrics=ms, params=[x for x in pt if isinstance(x, Param)],
                                     tags=[x for x in pt if isinstance(x, RunTag)], synchronous=True)

