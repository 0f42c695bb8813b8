"""The optimizer's deferred marginal-likelihood fits (``research.refit_apply: next``) in a Ray
actor of their own, beside the trials: the driver, which suggests every configuration, no longer
spends a refit's hundreds of milliseconds between two launches.  The actor asks for no CPU (it
takes no trial's slot), starts with the executor when the study can pass ``fit_max_points``
results (else at the first deferred fit, if ever), and stays on the driver's node where it can.

An actor rather than ``multiprocessing``, which would run the user's ``__main__`` again in the
child; if the actor is lost, the fit runs in the driver (``tuner.core.fit_job.PendingFit``).
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy


class _FitWorker:
    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)


class RayFitPool:
    """``submit(fn, *args)`` runs ``fn(*args)`` in the fit actor; ``close`` ends it."""

    def __init__(self) -> None:
        self._actor: Any = None
        self._closed = False
        self.submitted = 0       # fits sent to the actor

    def start(self) -> None:
        """Start the actor now (its worker takes a second or two to start and import), not at
        the first fit, which would then wait for it."""
        if self._closed:
            raise RuntimeError("the fit actor's pool is closed")
        if self._actor is None:
            here = NodeAffinitySchedulingStrategy(
                ray.get_runtime_context().get_node_id(), soft=True
            )
            self._actor = (
                ray.remote(num_cpus=0)(_FitWorker).options(scheduling_strategy=here).remote()
            )

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future:
        self.start()
        self.submitted += 1
        return self._actor.call.remote(fn, *args).future()

    def close(self) -> None:
        """End the actor; later submits raise (``PendingFit`` then fits in the driver)."""
        self._closed = True
        if self._actor is not None:
            actor, self._actor = self._actor, None
            try:
                ray.kill(actor)
            except Exception:   # Ray already shut down, or the actor already gone
                pass
