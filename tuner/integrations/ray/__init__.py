"""Ray: the study executor (``executor.RayExecutor``) and Ray Tune's searcher and scheduler
(``TunerSearch``, ``TunerScheduler``), imported when first named."""

from typing import Any

__all__ = ["TunerScheduler", "TunerSearch"]


def __getattr__(name: str) -> Any:
    if name == "TunerSearch":
        from .tune_search import TunerSearch

        return TunerSearch
    if name == "TunerScheduler":
        from .tune_scheduler import TunerScheduler

        return TunerScheduler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
