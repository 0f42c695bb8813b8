"""The tracker's durable queue: operations MLflow could not take yet, one JSON line each in
``mlflow_spool.jsonl`` (appended and fsync'd), queued artifacts copied beside it, and the
operations MLflow refused for good in ``mlflow_rejected.jsonl``."""

from __future__ import annotations

import json
import logging
import shutil
import uuid
from pathlib import Path
from typing import Any

from tuner.core.persist import append_line, write_atomic

log = logging.getLogger(__package__ + ".tracking")   # the tracker's records, under its logger

SPOOL_FILE = "mlflow_spool.jsonl"
REJECTED_FILE = "mlflow_rejected.jsonl"
SPOOL_FILES_DIR = "mlflow_spool_files"


class Spool:
    """The queue (``ops``, oldest first) and its files in ``directory``."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.path = directory / SPOOL_FILE
        self.rejected_path = directory / REJECTED_FILE
        self.rejected = 0                      # operations MLflow refused in this tracker
        self.ops: list[dict[str, Any]] = self._read()

    def append(self, op: dict[str, Any]) -> None:
        if op["op"] == "artifacts" and not op.get("spooled"):
            op = self._copy_artifacts(op)
        append_line(self.path, json.dumps(op) + "\n")
        self.ops.append(op)

    def pop(self) -> None:
        """The oldest operation is logged: drop it (and its copied artifacts)."""
        done = self.ops.pop(0)
        if done.get("spooled"):
            shutil.rmtree(done["spooled"], ignore_errors=True)

    def rewrite(self) -> None:
        """The file as the queue is now (removed, with the copies, when it is empty)."""
        if self.ops:
            write_atomic(self.path, "".join(json.dumps(op) + "\n" for op in self.ops))
        else:
            self.path.unlink(missing_ok=True)
            shutil.rmtree(self.dir / SPOOL_FILES_DIR, ignore_errors=True)

    def reject(self, op: dict[str, Any], exc: BaseException) -> None:
        self.rejected += 1
        (log.warning if self.rejected == 1 else log.debug)(
            "MLflow refused %s (%s); kept in %s", op["op"], exc, self.rejected_path)
        append_line(self.rejected_path, json.dumps({"error": str(exc), "item": op}) + "\n")

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

    def _read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        ops = []
        for line in self.path.read_text().splitlines():
            try:
                op = json.loads(line)
            except json.JSONDecodeError:   # a line cut by a crash mid-write
                log.warning("MLflow: skipping an unreadable line in %s", self.path)
                continue
            op["attempted"] = True         # it may have reached MLflow before the crash
            ops.append(op)
        return ops
