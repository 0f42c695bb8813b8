"""Writing a file so that a crash never leaves half of it: the one helper every state file,
spool and result file of the project goes through.

The text goes to a temporary file in the same directory, is flushed and fsync'd, replaces the
target with ``os.replace`` (atomic on POSIX and Windows), and the directory entry is fsync'd
too; on any error the temporary file is removed and the old file is left as it was.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Replace ``path`` by ``text`` atomically and durably (see the module docstring)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def write_json(path: str | os.PathLike, data: Any, **dump_kw: Any) -> None:
    """``write_atomic`` of ``json.dumps(data)``; a value JSON cannot hold raises before any
    file is touched."""
    write_atomic(path, json.dumps(data, **dump_kw))


def fsync_dir(path: str | os.PathLike) -> None:
    """Make a rename in ``path`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
