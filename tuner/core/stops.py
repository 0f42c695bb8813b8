"""When a running trial is stopped and what may start near the study's deadline: the rules the
study loop applies, one implementation for simulated and real studies.

* A run-time constraint's stop: a running trial past limit x (1 + ``stop_margin``) is a known
  violation (its elapsed time bounds its run time from below); the loop stops it and reports
  it TIMED_OUT.  The product's rule, not the papers'.
* Near ``deadline`` (the loop sets it from the wall-clock limit): ``finish_by_deadline`` masks
  the configurations predicted not to finish (``tuner.core.deadline.RunTimeModel``);
  ``idle_near_deadline`` starts nothing once the time left is under the shortest finished run.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .constraints import Constraint
from .deadline import RunTimeModel, shortest_run
from .ledger import TrialLedger
from .maximize import Mask
from .settings import Settings
from .trial import Status


class StopRules:
    """The stop and deadline rules of one optimizer.

    Args:
        settings: ``stop_margin``, ``finish_by_deadline``, ``idle_near_deadline``, ``seed``.
        constraints: the parsed constraints (the run-time ones set the stop times).
        ledger: the optimizer's trials.
        deadline: when the study ends, on the optimizer's clock (None: no deadline).
    """

    def __init__(self, settings: Settings, constraints: Sequence[Constraint], ledger: TrialLedger,
                 deadline: Callable[[], float | None]):
        self.settings, self.ledger, self._deadline = settings, ledger, deadline
        self._after = [a for a in (c.stop_after(settings.stop_margin) for c in constraints)
                       if a is not None]
        self.run_times = RunTimeModel(settings.seed)
        self._shortest: tuple[int, float] | None = None   # (outcomes seen, shortest_run then)

    def stop_time(self, trial_id: int) -> float | None:
        """When a running trial passes limit x (1 + ``stop_margin``) of a run-time constraint
        (None: no such rule, or the trial is not running)."""
        tr = self.ledger.by_id[trial_id]
        if tr.status != Status.RUNNING or not self._after:
            return None
        return tr.start_time + min(self._after)

    def trials_to_stop(self, now: float) -> list[int]:
        """Running trials past their run-time budget by more than ``stop_margin`` at ``now``."""
        due = [(self.stop_time(tr.trial_id), tr.trial_id) for tr in self.ledger.running]
        return [tid for when, tid in due if when is not None and when <= now]

    def next_stop_time(self) -> float | None:
        """The earliest ``stop_time`` among running trials (for an event loop's timeout)."""
        times = [w for w in (self.stop_time(tr.trial_id) for tr in self.ledger.running)
                 if w is not None]
        return min(times) if times else None

    def can_start(self, now: float) -> bool:
        """Whether a run started ``now`` may still finish before ``deadline``: False only with
        ``idle_near_deadline`` once the time left is under the shortest finished run."""
        deadline = self._deadline()
        if not self.settings.idle_near_deadline or deadline is None:
            return True
        if self._shortest is None or self._shortest[0] != self.ledger.outcomes:   # once per outcome
            self._shortest = (self.ledger.outcomes, shortest_run(self.ledger.trials))
        return deadline - now >= self._shortest[1]

    def late(
        self, now: float, C: np.ndarray, lift: Callable[[np.ndarray], np.ndarray]
    ) -> Mask | None:
        """With ``finish_by_deadline`` near the deadline: a mask of the candidates ``C`` (GP
        inputs ``lift(C)``) predicted not to finish before it."""
        deadline = self._deadline()
        if not self.settings.finish_by_deadline or deadline is None:
            return None
        return self.run_times.late(self.ledger.trials, now, deadline, C, lift)
