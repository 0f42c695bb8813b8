"""The trial ledger: every started trial in start order, by id, the running ones, and which
changed since a journal last asked (``tuner.study.state`` writes only those)."""

from __future__ import annotations

from typing import Any, Iterable

from .trial import Status, Trial


class TrialLedger:
    """The optimizer's trials; only ``add``, ``running_trial`` and ``end`` change them."""

    def __init__(self) -> None:
        self.trials: list[Trial] = []
        self.by_id: dict[int, Trial] = {}
        self.live: dict[int, Trial] = {}     # the running trials, in id order
        self.changed: set[int] = set()        # trials changed since the last ``drain_changed``
        self.outcomes = 0                     # trials ended: a memo key of what depends on them

    def add(self, trial: Trial) -> None:
        """A trial that starts now (its id is its place in the start order)."""
        self.trials.append(trial)
        self.by_id[trial.trial_id] = trial
        self.live[trial.trial_id] = trial
        self.changed.add(trial.trial_id)

    def running_trial(self, trial_id: int) -> Trial:
        """The running trial ``trial_id``, about to be changed by the caller; KeyError for an id
        never suggested, ValueError for a trial that already ended."""
        if trial_id not in self.by_id:
            raise KeyError(f"unknown trial_id {trial_id!r}: suggest() never returned it")
        trial = self.by_id[trial_id]
        if trial.status != Status.RUNNING:
            raise ValueError(f"trial {trial_id} is already {trial.status}; a result is told once")
        self.changed.add(trial_id)
        return trial

    def end(self, trial: Trial, finish_time: float) -> None:
        """``trial`` (running) ended at ``finish_time``, after every trial started so far."""
        trial.finish_time = float(finish_time)
        trial.finish_index = len(self.trials)
        del self.live[trial.trial_id]
        self.outcomes += 1

    @property
    def running(self) -> list[Trial]:
        return list(self.live.values())

    def drain_changed(self) -> list[dict[str, Any]]:
        """The trials suggested, started or ended since the last call, as saved (in id order)."""
        changed, self.changed = sorted(self.changed), set()
        return [self.by_id[t].to_dict() for t in changed]

    def restore(self, trials: Iterable[Trial]) -> None:
        """The ledger of a saved optimizer: these trials, the running ones among them."""
        self.trials = list(trials)
        self.by_id = {tr.trial_id: tr for tr in self.trials}
        self.live = {tr.trial_id: tr for tr in self.trials if tr.status == Status.RUNNING}
