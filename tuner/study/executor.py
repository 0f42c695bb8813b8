"""What a study runs its trials on: an ``Executor`` starts the workers (Ray, in
``tuner.integrations.ray.executor``), warms them up, runs the reference runs of a relative budget
and hands the study loop its backend (``tuner.loop.loop.Backend``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Protocol

from tuner.loop.loop import Backend

from .progress import Progress

if TYPE_CHECKING:     # the fit's module loads scipy, which `tuner --help` must not
    from tuner.core.fit_job import Pool


class RunFailed(Exception):
    """A reference run raised (``raised``: the trainable's own error) or lost its worker; the
    message says how, in one line, with the user's frame where it raised."""

    def __init__(self, message: str, raised: bool = False):
        super().__init__(message)
        self.raised = raised


class TrainableFailed(Exception):
    """The user's trainable raised or returned something unusable before any trial ran (its
    reference run): the message names the function, the configuration, the error and where."""


class Executor(Protocol):
    @property
    def where(self) -> str:
        """Where the trials run, for the banner (e.g. ``local Ray``, a cluster address)."""

    def start(self, progress: Progress) -> None:
        """Start or join the workers; a ``ConfigError`` when the slots cannot run there."""

    def warm_up(self, progress: Progress, config: Mapping[str, Any]) -> None:
        """One short run of the trainable per slot before the study clock starts."""

    def reference_runs(
        self, config: Mapping[str, Any], seeds: list[int]
    ) -> Iterator[dict[str, Any]]:
        """``config`` once per seed, at once; each run's ``{"metrics", "runtime", ...}`` as it
        ends (``RunFailed`` if one fails)."""

    def backend(self, clock: Callable[[], float], grace: float,
                interrupted: Callable[[], bool]) -> Backend:
        """The backend the study loop launches, waits for and stops trials on."""

    def fit_pool(self) -> Pool | None:
        """Where the optimizer's deferred fits run (``Optimizer.run_fits_in``); None: in the
        driver."""

    def close(self) -> None:
        """Release what ``start`` started."""
