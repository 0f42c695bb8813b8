"""A study's saved state: ``state.json`` plus the journal ``state.json.journal``.

Rewriting the whole state after every step of the loop costs time that grows with the study
(every trial is encoded again).  So a step appends one line to the journal instead: the
optimizer's state that changes (``Optimizer.changing_state``), the trials that changed in the step
(``Optimizer.changed_trials``), the session's counters and where the step's trials ran.  The
whole state is written again (and the journal emptied) at the start of a session, at its end,
and whenever the journal has grown larger than the state file, so the journal stays shorter
than the state and the cost per step stays bounded.

Each line is appended, flushed and fsync'd; a line cut by a crash is ignored.  Lines carry the
``generation`` of the state file they extend, so that after a crash between writing a new state
file and emptying the journal, the old lines are not applied again.

The optimizer's part of a line is a change to the one before (``changes``): a list that only
grew since (the trials each model has absorbed, the trials whose constraint values arrived) is
written as its new tail, so a line stays small as the study grows (docs/research/notes/evidence.md,
"How busy `tuner run` keeps the workers").  Version 3; version-2 lines (whole lists) are read the
same way.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Iterable

from tuner.core.persist import append_line, read_state, write_state

STATE_FORMAT = "tuner.study"
# 2: statuses live in the optimizer's trials only; the session keeps where each ran
STATE_VERSION = 3
#                       3: journal lines carry the optimizer's state as a change to the line before
APPEND, ITEMS = "$append", "$items"
JOURNAL_SUFFIX = ".journal"
BACKUP_SUFFIX = ".bak"


def journal_path(path: str | os.PathLike) -> Path:
    return Path(f"{path}{JOURNAL_SUFFIX}")


def backup_path(path: str | os.PathLike) -> Path:
    """The state as of its last whole write but one (with its journal beside it): what
    ``--resume`` can go on from when the state file is lost or damaged."""
    return Path(f"{path}{BACKUP_SUFFIX}")


def read_study_state(path: str | os.PathLike) -> tuple[int, dict[str, Any]]:
    """(version, state) of a study: the state file with its journal applied.  ``StateError``
    (``persist.read_state``) names the file if it is not a study state this version reads."""
    version, state = read_state(path, STATE_FORMAT, range(1, STATE_VERSION + 1))
    journal = journal_path(path)
    if version >= 2 and journal.exists():
        generation = state.get("generation", 0)
        trials = {d["trial_id"]: d for d in state["optimizer"]["trials"]}
        for line in journal.read_text().splitlines():
            try:
                change = json.loads(line)
            except json.JSONDecodeError:      # the last line, cut by a crash mid-write
                continue
            if change.get("generation") != generation:
                continue
            trials.update((d["trial_id"], d) for d in change["trials"])
            state["optimizer"] = {**state["optimizer"],
                                  **applied(state["optimizer"], change["optimizer"]),
                                  "trials": list(trials.values())}
            state["session"].update(change["session"])
            state["session"]["where"].update(change["where"])
    return version, state


def changes(before: Any, now: Any) -> Any:
    """``now`` as a change to ``before`` (``applied`` undoes it): a list that extends the list
    before as ``{"$append": tail}``, lists of dicts of the same length item by item
    (``{"$items": [...]}``), dicts key by key; anything else as it is now."""
    if isinstance(now, dict):
        return {
            k: changes(before.get(k) if isinstance(before, dict) else None, v)
            for k, v in now.items()
        }
    if isinstance(now, list) and isinstance(before, list) and before:
        if len(now) >= len(before) and now[:len(before)] == before:
            return {APPEND: now[len(before):]}
        if len(now) == len(before) and all(isinstance(v, dict) for v in now + before):
            return {ITEMS: [changes(b, v) for b, v in zip(before, now)]}
    return now


def applied(before: Any, change: Any) -> Any:
    """The value ``change`` (``changes``) describes, given the value ``before`` it."""
    if not isinstance(change, dict):
        return change
    if set(change) == {APPEND}:
        return before + change[APPEND]
    if set(change) == {ITEMS}:
        return [applied(b, c) for b, c in zip(before, change[ITEMS])]
    return {
        k: applied(before.get(k) if isinstance(before, dict) else None, v)
        for k, v in change.items()
    }


class StudyStateFile:
    """Writes a study's state (module docstring); an existing state must be ``read`` first, so
    that new lines carry a generation of their own."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.journal = journal_path(path)
        self.generation = 0                    # of the state file (``read`` takes the file's)
        self._whole_due = True                 # a session starts with a whole write
        self._state_bytes = 0
        self._journal_bytes = 0
        self._written: dict[str, Any] = {}     # the optimizer's changing state as last written

    def read(self) -> tuple[int, dict[str, Any]]:
        """``read_study_state`` of this file; the next whole write follows its generation."""
        version, state = read_study_state(self.path)
        self.generation = state.get("generation", 0)
        return version, state

    def save(self, config: Callable[[], dict[str, Any]], optimizer: Any, session: dict[str, Any],
             where: dict[int, Any], new: Iterable[int], whole: bool = False) -> None:
        """The state as of now.  ``config()``: the resolved config (only a whole write calls
        it); ``session``: the scalar counters; ``where``: where each trial ran, ``new`` the
        trials added to it since the last save.  A journal line unless ``whole``, no whole state
        was written in this session yet, or the journal has outgrown the state file."""
        if whole or self._whole_due or self._journal_bytes > self._state_bytes:
            self._save_whole(config(), optimizer, {**session, "where": where})
            return
        now = optimizer.changing_state()
        line = json.dumps({"generation": self.generation, "optimizer": changes(self._written, now),
                           "trials": optimizer.changed_trials(), "session": session,
                           "where": {t: where[t] for t in new if t in where}}, default=str) + "\n"
        append_line(self.journal, line)
        self._written = now                   # the next line changes this one (once it is written)
        self._journal_bytes += len(line)

    def _save_whole(self, config: dict[str, Any], optimizer: Any, session: dict[str, Any]) -> None:
        self._keep_backup()
        self.generation += 1
        self._whole_due = False
        optimizer.changed_trials()            # all of them are in the whole state
        whole = optimizer.state_dict()
        # holds the changing state (``changes`` reads its keys)
        self._written = whole
        write_state(self.path, STATE_FORMAT, STATE_VERSION, {
            "generation": self.generation, "config": config, "optimizer": whole,
            "session": session}, default=str)
        self.journal.unlink(missing_ok=True)
        self._state_bytes, self._journal_bytes = self.path.stat().st_size, 0

    def _keep_backup(self) -> None:
        """The state file as it is (a hard link: no copy) and a copy of its journal, as the
        backup, before a whole write replaces them (``backup_path``)."""
        if not self.path.exists():
            return
        bak = backup_path(self.path)
        tmp = bak.with_name(bak.name + ".tmp")
        tmp.unlink(missing_ok=True)
        os.link(self.path, tmp)
        os.replace(tmp, bak)
        bak_journal = journal_path(bak)
        if self.journal.exists():
            shutil.copyfile(self.journal, bak_journal)
        else:
            bak_journal.unlink(missing_ok=True)
