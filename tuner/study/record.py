"""What a study hands its tracker per trial (no MLflow import: the driver builds these while
MLflow itself runs in a writer process, ``tuner.integrations.mlflow.writer``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TrialRecord:
    """One finished (or failed, killed, timed-out) trial, as the study hands it over."""

    trial_id: int
    params: dict[str, Any]          # hyperparameters
    status: str                     # "FINISHED" | "FAILED" | "KILLED" | "TIMED_OUT"
    metrics: dict[str, float]       # e.g. accuracy, train_time, runtime, constraint g values
    tags: dict[str, str]            # e.g. pending_at_suggest, node, reason
    start_time: float               # epoch seconds
    end_time: float                 # epoch seconds
    # what it reported on the way: [{"time": epoch seconds, "step": progress, "metrics": {...}}]
    curve: list[dict[str, Any]] = field(default_factory=list)
