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
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable

from tuner.core.persist import StateError, envelope, opened, write_atomic

STATE_FORMAT = "tuner.study"
STATE_VERSION = 2     # 2: statuses live in the optimizer's trials only; the session keeps where each ran
JOURNAL_SUFFIX = ".journal"


def journal_path(path: str | os.PathLike) -> Path:
    return Path(f"{path}{JOURNAL_SUFFIX}")


def read_study_state(path: str | os.PathLike) -> tuple[int, dict[str, Any]]:
    """(version, state) of a study: the state file with its journal applied.  ``StateError``
    names the file if it is not a study state this version reads."""
    path = Path(path)
    try:
        state = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise StateError(f"{path} is not a readable {STATE_FORMAT} state: {exc}") from None
    version = opened(state, STATE_FORMAT, (1, STATE_VERSION), str(path))
    journal = journal_path(path)
    if version == STATE_VERSION and journal.exists():
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
            state["optimizer"] = {**state["optimizer"], **change["optimizer"],
                                  "trials": list(trials.values())}
            state["session"].update(change["session"])
            state["session"]["where"].update(change["where"])
    return version, state


class StudyStateFile:
    """Writes a study's state (module docstring)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.journal = journal_path(path)
        self.generation: int | None = None     # None: no whole state written in this session
        self._state_bytes = 0
        self._journal_bytes = 0

    def save(self, config: Callable[[], dict[str, Any]], optimizer: Any, session: dict[str, Any],
             where: dict[int, Any], new: Iterable[int], whole: bool = False) -> None:
        """The state as of now.  ``config()``: the resolved config (only a whole write calls
        it); ``session``: the scalar counters; ``where``: where each trial ran, ``new`` the
        trials added to it since the last save.  A journal line unless ``whole``, no whole state
        was written in this session yet, or the journal has outgrown the state file."""
        if whole or self.generation is None or self._journal_bytes > self._state_bytes:
            self._save_whole(config(), optimizer, {**session, "where": where})
            return
        line = json.dumps({"generation": self.generation,
                           "optimizer": optimizer.changing_state(),
                           "trials": optimizer.changed_trials(), "session": session,
                           "where": {t: where[t] for t in new if t in where}}, default=str) + "\n"
        with open(self.journal, "a") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self._journal_bytes += len(line)

    def _save_whole(self, config: dict[str, Any], optimizer: Any, session: dict[str, Any]) -> None:
        if self.generation is None:           # this session's first write: after the file's
            try:
                self.generation = json.loads(self.path.read_text()).get("generation", 0)
            except (OSError, json.JSONDecodeError):
                self.generation = 0
        self.generation += 1
        optimizer.changed_trials()            # all of them are in the whole state
        text = json.dumps(envelope(STATE_FORMAT, STATE_VERSION, {
            "generation": self.generation, "config": config, "optimizer": optimizer.state_dict(),
            "session": session}), default=str)
        write_atomic(self.path, text)
        self.journal.unlink(missing_ok=True)
        self._state_bytes, self._journal_bytes = len(text), 0
