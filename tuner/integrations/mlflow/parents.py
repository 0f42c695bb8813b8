"""The parent runs a study folder logs to (``mlflow_tracker.json``): each under a local key,
with its MLflow run id once it exists (``pending:<key>`` before), and which parent a new start
of the study logs to (``Parents.resolve``)."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path
from typing import Any

from tuner.core.persist import opened, write_state

log = logging.getLogger(__package__ + ".tracking")   # the tracker's records, under its logger

STATE_FILE = "mlflow_tracker.json"
PARENTS_FORMAT = "tuner.mlflow_parents"   # STATE_FILE: the parent runs this folder logs to
PENDING = "pending:"


class Parents:
    def __init__(self, directory: Path):
        self.path = directory / STATE_FILE
        self.runs: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            state = json.loads(self.path.read_text())
            if "format" in state:       # files written before the envelope have none
                opened(state, PARENTS_FORMAT, (1,), str(self.path))
            self.runs = state["parents"]

    def __getitem__(self, key: str) -> dict[str, Any]:
        """The parent under ``key`` (a new entry if there is none)."""
        return self.runs.setdefault(key, {"run_id": None, "experiment_id": None})

    def save(self) -> None:
        write_state(self.path, PARENTS_FORMAT, 1, {"parents": self.runs}, indent=1)

    def resolve(self, resume_run_id: str | None) -> str:
        """The local key of the parent run to log to (new, pending or an existing MLflow run)."""
        if resume_run_id and resume_run_id.startswith(PENDING):
            key = resume_run_id[len(PENDING):]
            if key in self.runs:
                return key
            log.warning("MLflow: %s is not known in %s; starting a new parent run",
                        resume_run_id, self.path)
        elif resume_run_id:
            for key, p in self.runs.items():
                if p["run_id"] == resume_run_id:
                    return key
            key = uuid.uuid4().hex
            self.runs[key] = {"run_id": resume_run_id, "experiment_id": None}
            self.save()
            return key
        if self.runs:
            key, last = list(self.runs.items())[-1]
            if not last.get("trials"):
                # an earlier session in this folder died before its study state was saved (a
                # start-up failure, a hard kill): its parent has no trial; adopt it, so a study
                # never leaves an empty parent run behind and never gets two
                log.info("MLflow: adopting the parent run of an earlier start of this study (%s)",
                         last["run_id"] or PENDING + key)
                return key
        key = uuid.uuid4().hex
        self[key]
        self.save()
        return key
