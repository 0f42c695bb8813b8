"""A marginal-likelihood fit as a job of its own (``research.refit_apply: next``): its inputs
are fixed when the fit is due, it runs while the study goes on (in the process pool the study
hands the optimizer, ``Optimizer.run_fits_in``, or here when there is none), and its result is
applied when the next fit is due.  Where it ran does not change what it returns, so the
suggestions are the same with a pool, without one, and after a resume with a fit in flight.

``pool`` is anything with ``submit(fn, *args) -> concurrent.futures.Future``.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np

from .gp import HyperBounds, Hyperparameters
from .marginal_likelihood import fit_and_score
from .kernels import Kernel


WAIT = 60.0     # seconds a due fit waits for the pool before it runs here (a fit takes < 1 s)


class Pool(Protocol):
    def submit(self, fn: Any, /, *args: Any) -> Future: ...


@dataclass
class FitJob:
    """One fit (``CensoredModel.maybe_refit``): each kernel of ``kernels`` fit on (X, y) from
    ``start``, restarts drawn from ``seed``; ``ids``: the trials of X's rows (for the state)."""

    kernels: Sequence[Kernel]
    X: np.ndarray
    y: np.ndarray
    ids: list[int]
    start: Hyperparameters
    seed: int
    bounds: HyperBounds
    restarts: int
    prior: bool
    groups: np.ndarray | None

    def state_dict(self) -> dict[str, Any]:
        return {"ids": list(self.ids), "y": [float(v) for v in self.y],
                "start": self.start.to_dict(), "seed": self.seed,
                "kernels": [k.name for k in self.kernels], "restarts": self.restarts,
                "prior": self.prior}


def fit_best(kernels: Sequence[Kernel], X: np.ndarray, y: np.ndarray, start: Hyperparameters,
             rng: np.random.Generator, bounds: HyperBounds, restarts: int, prior: bool,
             groups: np.ndarray | None) -> tuple[Hyperparameters, int]:
    """Each kernel fit in turn (``gp.fit_and_score``); the hyperparameters of the one of highest
    evidence (the first on ties), and its index."""
    fits = [
        fit_and_score(kernel=k, X=X, y=y, start=start, rng=rng, bounds=bounds, n_restarts=restarts,
                      lengthscale_prior=prior, groups=groups)
        for k in kernels
    ]
    best = min(range(len(fits)), key=lambda i: fits[i][1])
    return fits[best][0], best


def run_fit(job: FitJob) -> tuple[Hyperparameters, int]:
    """The job's fit (``fit_best``, restarts drawn from the job's seed)."""
    return fit_best(kernels=job.kernels, X=job.X, y=job.y, start=job.start,
                    rng=np.random.default_rng(job.seed), bounds=job.bounds, restarts=job.restarts,
                    prior=job.prior, groups=job.groups)


class PendingFit:
    """A submitted job and where its result will come from: the pool's future, or (no pool, or
    the pool failed: its process was killed, say) a run here when it is asked for."""

    def __init__(self, job: FitJob, pool: Pool | None = None):
        self.job = job
        self.future: Future | None = None
        self.submit(pool)

    def submit(self, pool: Pool | None) -> None:
        """Start the job in ``pool`` unless it has started there already."""
        if pool is None or self.future is not None:
            return
        try:
            self.future = pool.submit(run_fit, self.job)
        except Exception:      # a shut-down or broken pool: run here when needed
            self.future = None

    def result(self) -> tuple[Hyperparameters, Kernel]:
        """The fit: the pool's answer, or (none within ``WAIT`` seconds, or the pool failed:
        its process died, say) the same fit run here."""
        out = None
        if self.future is not None:
            try:
                out = self.future.result(timeout=WAIT)
            except Exception:      # a dead or stuck pool: the same fit, here
                out = None
        hyper, best = out if out is not None else run_fit(self.job)
        return hyper, self.job.kernels[best]

    def detach(self) -> None:
        """Let go of the pool (it is closing): keep its answer if it has one, else the fit
        runs here when it is applied."""
        answered = (self.future is not None and self.future.done() and not self.future.cancelled()
                    and self.future.exception(timeout=0) is None)
        if not answered:     # a done future keeps its answer, without the pool
            self.future = None
