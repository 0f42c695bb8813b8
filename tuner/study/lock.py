"""One writer per study: a study holds an exclusive lock on ``<output>/.<study>.lock`` while it
runs (``fcntl.flock``), and the lock file says who holds it and since when.  A second start of
the same study, from the command line or ``tuner.run``, is refused with that line.  The
operating system drops the lock when its process dies, so a lock left by a killed driver is
simply taken again (the file's old text names who held it).  The lock file sits beside the
study's folder, not in it, so ``--fresh`` can move the folder aside while holding it."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from .schema import ConfigError


class StudyBusy(ConfigError):
    """The study is being run by another process (exit code 2, as a configuration error)."""


def lock_path(output: str | os.PathLike, study: str) -> Path:
    return Path(output) / f".{study}.lock"


class StudyLock:
    """The lock of one study (module docstring); ``acquire`` once, ``release`` at the end.

    Args:
        output: the folder that holds the study's folder.
        study: the study's name.
    """

    def __init__(self, output: str | os.PathLike, study: str):
        self.path, self.study = lock_path(output, study), study
        self._fd: int | None = None
        self.previous: dict[str, Any] | None = None   # the holder before, if it left a record

    def acquire(self) -> None:
        """Hold the lock, or raise ``StudyBusy`` naming the process that holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise StudyBusy(f"study '{self.study}' is running: {_who(holder)} holds "
                            f"{self.path}; wait for it to end, or stop it and use "
                            "--resume") from None
        self.previous = _holder(fd)
        me = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode(), 0)
        except OSError:                 # a full disk: the lock goes with the descriptor
            os.close(fd)
            raise
        self._fd = fd

    @property
    def taken_over(self) -> str | None:
        """Who held the study before and ended without letting it go (a killed driver)."""
        prev = self.previous
        return None if not prev or prev.get("released") else _who(prev)

    def release(self) -> None:
        """Let the lock go (the file stays: its text says who held it last)."""
        if self._fd is not None:
            me = {**(_holder(self._fd) or {}), "released": time.time()}
            try:
                os.ftruncate(self._fd, 0)
                os.pwrite(self._fd, json.dumps(me).encode(), 0)
            except OSError:     # a full disk: without the mark, the next start says "took over"
                pass
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> StudyLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _holder(fd: int) -> dict[str, Any] | None:
    try:
        return json.loads(os.pread(fd, 4096, 0).decode() or "null")
    except (ValueError, UnicodeDecodeError):
        return None


def _who(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "another process"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since", 0)))
    return f"process {holder.get('pid')} on {holder.get('host')} (since {since})"
