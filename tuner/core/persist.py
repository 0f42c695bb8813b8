"""Writing a file so that a crash never leaves half of it: the one helper every state file,
spool and result file of the project goes through (and ``append_line`` for journals and spools); and
the versioned envelope every saved state carries (``{"format": kind, "version": n, ...}``, read back
with ``opened`` / ``read_state``).

The text goes to a temporary file in the same directory, is flushed and fsync'd, replaces the
target with ``os.replace`` (atomic on POSIX and Windows), and the directory entry is fsync'd
too; on any error the temporary file is removed and the old file is left as it was.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Replace ``path`` by ``text`` atomically and durably (see the module docstring)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with _naming(path), os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """An OSError of a write (a full disk: ``write`` and ``close`` do not name the file) raised
    as one that names ``path``, once."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def append_line(path: str | os.PathLike, line: str, sync: bool = True) -> None:
    """Append ``line`` (with its newline) to ``path``, written through: a journal or spool entry
    survives a crash of the process once this returns, and (``sync``: fsync'd) of the machine."""
    with _naming(Path(path)), open(path, "a") as fh:
        fh.write(line)
        fh.flush()
        if sync:
            os.fsync(fh.fileno())


def csv_text(rows: Iterable[Mapping[str, Any]], header: bool = True) -> str:
    """Rows as CSV text, the first row's keys as the columns (a header line unless told not)."""
    rows = list(rows)
    text = io.StringIO()
    if rows:
        w = csv.DictWriter(text, fieldnames=list(rows[0]))
        if header:
            w.writeheader()
        w.writerows(rows)
    return text.getvalue()


def write_table(path: str | os.PathLike, rows: Iterable[Mapping[str, Any]]) -> None:
    """A table of rows (``csv_text``) written atomically: the one writer of every trial and
    result table (trials.csv of a study or a simulation, the scripts' result files)."""
    write_atomic(path, csv_text(rows))


def append_row(path: str | os.PathLike, row: Mapping[str, Any], sync: bool = True) -> None:
    """One row onto a table (the header first when the file is new), as ``append_line``."""
    append_line(path, csv_text([row], header=not Path(path).exists()), sync)


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


class StateError(ValueError):
    """A saved state this version cannot read: another kind of file, or a version it does not
    know."""


def envelope(kind: str, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """A state as saved: ``{"format": kind, "version": version, **body}``."""
    return {"format": kind, "version": version, **body}


def opened(state: Mapping[str, Any], kind: str, versions: Iterable[int], what: str) -> int:
    """The version of a saved ``kind`` state; ``StateError`` naming ``what`` (e.g. the file)
    if it is another kind of file or a version not in ``versions``."""
    versions = tuple(versions)
    if not isinstance(state, Mapping) or state.get("format") != kind:
        found = state.get("format") if isinstance(state, Mapping) else type(state).__name__
        raise StateError(f"{what} is not a {kind} state (format {found!r})")
    if state.get("version") not in versions:
        raise StateError(f"{what}: {kind} version {state.get('version')!r} is not one this "
                         f"version of tuner reads ({', '.join(map(str, versions))})")
    return int(state["version"])


def write_state(path: str | os.PathLike, kind: str, version: int, body: Mapping[str, Any],
                **dump_kw: Any) -> None:
    """``write_json`` of the ``envelope``."""
    write_json(path, envelope(kind, version, body), **dump_kw)


def read_state(
    path: str | os.PathLike, kind: str, versions: Iterable[int]
) -> tuple[int, dict[str, Any]]:
    """(version, state) of a file written by ``write_state``; ``StateError`` if it is not one
    this version reads, or not JSON."""
    try:
        state = json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StateError(f"{path} is not a readable {kind} state: {exc}") from None
    return opened(state, kind, versions, str(path)), state
