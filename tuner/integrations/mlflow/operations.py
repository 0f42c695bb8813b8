"""One tracker operation (start, trial, progress, params, artifacts, dict, end) done against
MLflow with ``MlflowClient`` and explicit run ids (never the fluent ``mlflow.start_run`` state,
so several trackers can coexist in one process).  Replays are idempotent: the child runs under
a parent are read from MLflow (``trial_id`` tag) before a child is created, a parent that may
have been created already is looked up by its ``tuner.run_key`` tag."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.utils.validation import MAX_ENTITIES_PER_BATCH, MAX_PARAMS_TAGS_PER_BATCH

from .parents import Parents

log = logging.getLogger(__package__ + ".tracking")   # the tracker's records, under its logger

RUN_KEY_TAG = "tuner.run_key"
PARENT_TAG = "mlflow.parentRunId"
RUN_NAME_TAG = "mlflow.runName"
PERMANENT_ERRORS = {"INVALID_PARAMETER_VALUE", "RESOURCE_DOES_NOT_EXIST", "RESOURCE_ALREADY_EXISTS",
                    "BAD_REQUEST", "MALFORMED_REQUEST"}


class Rejected(Exception):
    """An operation that can never succeed (it is moved out of the queue)."""


def permanent(exc: BaseException) -> bool:
    """MLflow refused the request itself (invalid value, missing run...): retrying the same
    request cannot succeed.  Everything else (connection errors, 5xx, 429, 401/403, a proxy's
    404, a locked database) may pass later."""
    return isinstance(exc, Rejected) or (isinstance(exc, MlflowException)
                                         and exc.error_code in PERMANENT_ERRORS)


def search_all(client: MlflowClient, exp_id: str, filter_string: str) -> list[Any]:
    """Every run of the experiment that matches, page by page."""
    runs, token = [], None
    while True:
        page = client.search_runs([exp_id], filter_string, max_results=1000, page_token=token)
        runs.extend(page)
        token = page.token
        if not token:
            return runs


class Operations:
    """Does operations against the MLflow at ``tracking_uri`` for the parents in ``parents``."""

    def __init__(self, tracking_uri: str, parents: Parents):
        self.tracking_uri, self.parents = tracking_uri, parents
        self._client: MlflowClient | None = None
        self._experiment_ids: dict[str, str] = {}
        # parent run id -> {trial id: (child run id, complete)}; absent = not read from MLflow yet
        self.children: dict[str, dict[int, tuple[str, bool]]] = {}

    def _parent_run(self, key: str) -> str:
        run_id = self.parents[key]["run_id"]
        if run_id is None:
            raise Rejected("its parent run was never created (the start was refused)")
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

    def execute(self, op: dict[str, Any]) -> None:
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
        elif kind == "tags":
            self._log_batch(run_id, tags=op["tags"])
        elif kind == "end":
            client.set_terminated(run_id, op["status"], end_time=op["time"])
        else:
            raise Rejected(f"unknown operation {kind!r}")

    def _exec_start(self, op: dict[str, Any]) -> None:
        client, parent = self._mlflow(), self.parents[op["parent"]]
        if parent["run_id"] is not None:
            try:
                run = client.get_run(parent["run_id"])
            except MlflowException as exc:
                if not permanent(exc):
                    raise
                run = None
            if run is not None and run.info.lifecycle_stage != "deleted":
                return self._reopen(op, run)
            log.warning("MLflow: run %s to resume does not exist any more; starting a new parent "
                        "run", parent["run_id"])
            parent["run_id"] = None
        exp_id = self._experiment_id(op["experiment"])
        found = (
            client.search_runs([exp_id], f"tags.`{RUN_KEY_TAG}` = '{op['parent']}'", max_results=1)
            if op.get("attempted")
            else []
        )
        if found:
            run_id = found[0].info.run_id
            client.update_run(run_id, "RUNNING")
        else:
            tags = {**op["tags"], RUN_KEY_TAG: op["parent"], RUN_NAME_TAG: op["run_name"]}
            run_id = client.create_run(exp_id, start_time=op["time"], tags=tags,
                                       run_name=op["run_name"]).info.run_id
            self.children[run_id] = {}
        parent.update(run_id=run_id, experiment_id=exp_id)
        self.parents.save()
        self._log_batch(run_id, params=op["params"])
        if op.get("full_params"):
            client.log_dict(run_id, op["full_params"], "params_full.json")

    def _reopen(self, op: dict[str, Any], run: Any) -> None:
        """A resumed study: RUNNING again; new params are logged, changed ones become tags
        ``resumed.<key>`` (MLflow does not allow changing a param)."""
        client, run_id = self._mlflow(), run.info.run_id
        self.parents[op["parent"]]["experiment_id"] = run.info.experiment_id
        self.parents.save()
        client.update_run(run_id, "RUNNING")
        old = run.data.params
        new = {k: v for k, v in op["params"].items() if k not in old}
        changed = {f"resumed.{k}": v for k, v in op["params"].items() if k in old and old[k] != v}
        self._log_batch(run_id, params=new, tags={**op["tags"], **changed})

    def _exec_trial(self, op: dict[str, Any], parent_id: str) -> None:
        client, tid = self._mlflow(), op["trial_id"]
        children = self.children_of(parent_id)
        entry = children.get(tid)
        if entry is not None and entry[1]:
            return
        if entry is None:
            exp_id = self.parents[op["parent"]]["experiment_id"] or client.get_run(
                parent_id).info.experiment_id
            name = f"trial-{tid:04d}"
            tags = {PARENT_TAG: parent_id, RUN_NAME_TAG: name, "trial_id": str(tid),
                    "status": op["tags"]["status"]}
            child = client.create_run(exp_id, start_time=op["start"], tags=tags, run_name=name)
            entry = (child.info.run_id, False)
            children[tid] = entry
        run_id = entry[0]
        curve = op.get("curve", [])
        final_step = curve[-1][1] if curve else 0   # the result continues the curve
        self._log_batch(run_id, params=op["params"], tags=op["tags"],
                        metrics=[Metric(k, v, ts, step) for ts, step, values in curve
                                 for k, v in values.items()]
                        + [Metric(k, v, op["end"], final_step) for k, v in op["metrics"].items()])
        client.set_terminated(run_id, op["status"], end_time=op["end"])
        children[tid] = (run_id, True)

    def children_of(self, parent_id: str) -> dict[int, tuple[str, bool]]:
        if parent_id not in self.children:
            exp_id = self._mlflow().get_run(parent_id).info.experiment_id
            found: dict[int, tuple[str, bool]] = {}
            for run in self._search(exp_id, f"tags.`{PARENT_TAG}` = '{parent_id}'"):
                tid = run.data.tags.get("trial_id")
                if tid is not None and tid.lstrip("-").isdigit():
                    prev = found.get(int(tid))
                    done = run.info.status != "RUNNING"
                    if prev is None or (done and not prev[1]):
                        found[int(tid)] = (run.info.run_id, done)
            self.children[parent_id] = found
        return self.children[parent_id]

    def _search(self, exp_id: str, filter_string: str) -> list[Any]:
        return search_all(self._mlflow(), exp_id, filter_string)

    def _log_batch(
        self,
        run_id: str,
        metrics: list[Metric] = (),
        params: dict[str, str] | None = None,
        tags: dict[str, str] | None = None,
    ) -> None:
        """``log_batch`` in chunks within MLflow's limits (100 params+tags, 1000 entities)."""
        items: list[Any] = ([Param(k, v) for k, v in (params or {}).items()]
                            + [RunTag(k, v) for k, v in (tags or {}).items()])
        metrics = list(metrics)
        while items or metrics:
            pt, items = items[:MAX_PARAMS_TAGS_PER_BATCH], items[MAX_PARAMS_TAGS_PER_BATCH:]
            room = MAX_ENTITIES_PER_BATCH - len(pt)
            ms, metrics = metrics[:room], metrics[room:]
            self._mlflow().log_batch(
                run_id,
                metrics=ms,
                params=[x for x in pt if isinstance(x, Param)],
                tags=[x for x in pt if isinstance(x, RunTag)],
                synchronous=True,
            )
