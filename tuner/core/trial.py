"""A trial and its outcome: the one vocabulary of statuses every part of the project uses.

=========  ==================================================================================
RUNNING    started, no outcome yet (censored while it runs, paper 001 eq. 1)
FINISHED   reported its metrics; the objective enters the GP (``Optimizer.tell``)
FAILED     raised, reported no or a non-finite objective, or lost its worker or node
TIMED_OUT  stopped past ``run.trial_timeout`` or past the budget by ``stop_margin``
KILLED     stopped because the study reached its wall-clock limit, or killed by Ray's memory
           monitor
STOPPED    stopped early by the study's stopping rule after reporting progress (ASHA, or a
           budget projected from its pace): censored at the point it reached
=========  ==================================================================================

Every status but RUNNING and FINISHED censors the objective for good (``Optimizer.fail``); a
trial that reported progress (``Optimizer.report``) is censored at its last reported value
rather than at the minimum (``research.censor_at_partial``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping

import numpy as np


class Status(str, Enum):
    """A trial's status; a ``str`` so it compares equal to, and serializes as, its name."""

    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    KILLED = "KILLED"
    STOPPED = "STOPPED"

    def __str__(self) -> str:
        return self.value

    @property
    def censored(self) -> bool:
        """Ended without an objective value (FAILED, TIMED_OUT, KILLED or STOPPED)."""
        return self not in (Status.RUNNING, Status.FINISHED)


@dataclass
class Trial:
    """One started evaluation and everything the optimizer knows about it."""

    trial_id: int
    config: dict[str, Any]
    x: np.ndarray
    start_time: float
    start_index: int
    pending_at_suggest: int = 0
    status: Status = Status.RUNNING
    value: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    finish_time: float | None = None
    finish_index: int | None = None
    reason: str | None = None
    progress: float | None = None   # the last progress it reported, as a fraction of a full run
    partial: float | None = None    # its objective at that point
    pace: list[float] | None = None  # [fraction, elapsed s] at its first and last report
    context: dict[str, Any] | None = None   # z_t it was chosen for (paper 001 §5), if any
    origin: str | None = None      # the earlier study it was carried over from (None: run here)

    @property
    def projected_runtime(self) -> float | None:
        """Its run time at full length, projected from its pace (``projected_runtime``)."""
        return None if self.pace is None else projected_runtime(*self.pace)

    def delay(self, unit: str) -> float | None:
        """d_s in ``unit``; None while the result has not arrived."""
        if self.status == Status.RUNNING or self.finish_time is None or self.finish_index is None:
            return None
        if unit == "iterations":
            return float(self.finish_index - self.start_index - 1)
        return float(self.finish_time - self.start_time)

    def age(self, unit: str, now: float, t: int) -> float:
        """tau_bar - tau_s (seconds) or t - s (iterations) when query ``t`` is chosen."""
        return float(t - self.start_index) if unit == "iterations" else float(now - self.start_time)

    def to_dict(self) -> dict[str, Any]:
        return {"trial_id": self.trial_id, "config": self.config, "x": [float(v) for v in self.x],
                "start_time": self.start_time, "start_index": self.start_index,
                "pending_at_suggest": self.pending_at_suggest, "status": self.status.value,
                "value": self.value, "metrics": self.metrics, "finish_time": self.finish_time,
                "finish_index": self.finish_index, "reason": self.reason,
                **({"progress": self.progress, "partial": self.partial, "pace": self.pace}
                   if self.progress is not None else {}),
                **({"context": self.context} if self.context is not None else {}),
                **({"origin": self.origin} if self.origin is not None else {})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Trial":
        d = dict(d)
        d["x"] = np.asarray(d["x"], dtype=float)
        d["status"] = Status(d["status"])
        return cls(**d)


def mode_sign(mode: str) -> float:
    """+1 for ``mode`` max, -1 for min: ``mode_sign(mode) * value`` is a maximization."""
    return 1.0 if mode == "max" else -1.0


def number(value: Any, what: str) -> float:
    """``value`` as a float; ValueError naming ``what`` if it is no number (a string, a bool,
    None, a list: what ``float()`` would take or wrongly accept)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{what} must be a number, got {value!r}")
    return float(value)


def numbers_of(metrics: Mapping[str, Any] | None, what: str) -> dict[str, float]:
    """Every value of ``metrics`` as a float (``number``), named ``what[key]`` if one is not."""
    if metrics is not None and not isinstance(metrics, Mapping):
        raise ValueError(f"{what} must be a mapping of names to numbers, got {metrics!r}")
    return {k: number(v, f"{what}[{k!r}]") for k, v in (metrics or {}).items()}


def finite(metrics: Mapping[str, float] | None) -> dict[str, float]:
    """The finite values of ``metrics`` as floats: a NaN or inf is no measurement."""
    return {k: float(v) for k, v in (metrics or {}).items() if math.isfinite(float(v))}


def projected_runtime(p1: float, t1: float, pk: float, tk: float, full: float = 1.0) -> float:
    """A run's time at progress ``full`` from two reports, (p1, t1) and (pk, tk): the pace
    between them carried on from the last, so a slow start-up (loading data, building the
    model) counts once, not once per step; from one report (pk = p1), tk / pk x full."""
    if pk <= p1:
        return tk / pk * full if pk > 0 else float("inf")
    return tk + (tk - t1) / (pk - p1) * (full - pk)


def upgrade_v1(d: dict[str, Any]) -> dict[str, Any]:
    """A trial saved by state version 1: COMPLETED is FINISHED; a FAILED trial whose reason
    starts with another status (``"TIMED_OUT: ..."`` from the study loop, ``"TIMED_OUT"`` from
    the simulator) gets that status and the rest of the reason."""
    d = dict(d)
    if d["status"] == "COMPLETED":
        d["status"] = Status.FINISHED.value
    elif d["status"] == "FAILED" and d.get("reason"):
        head, _, rest = d["reason"].partition(":")
        if head in Status.__members__ and Status(head).censored:
            d["status"], d["reason"] = head, rest.strip() or head
    return d
