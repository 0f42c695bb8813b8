"""A study folder's disk failing under a study (full, gone read-only): the error that stops
the study in one line, naming the file and how to go on (exit code 3)."""

from __future__ import annotations

import errno
from pathlib import Path


class StudyUnwritable(OSError):
    """A file the study needs could not be written (its disk is full, its folder read-only);
    the study stopped, its state holds every trial saved before."""


# a disk that is full or gone read-only (a write that fails this way names no file at times)
DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO)


def unwritable(exc: OSError, state: Path) -> str:
    """The one line that says which file failed, why, and how to go on."""
    return (f"{exc.filename or state.parent}: {exc.strerror}. The study stopped; {state} holds "
            "every trial that ended before (the running ones start again): make room, then run "
            "it again with --resume")
