"""Ray as a study's executor (``tuner.study.executor.Executor``): starting or joining Ray, the
capacity check, the warm-up of one worker per slot, the reference runs of a relative budget, and
the task backend the study loop runs on (``RayBackend``).

Before the clock starts, each slot does one short run of the trainable (``warm_up``), so no
trial's run time includes a worker's start-up (seconds of ``import torch``), which would count
against its budget.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from typing import Any, Callable, Iterator, Mapping

import ray
from ray import exceptions as rex

from tuner.study.schema import ConfigError, StudyConfig
from tuner.study.executor import RunFailed
from tuner.study.progress import Progress

from .backend import RayBackend, execute_steps, execute_trial, first_line, lost_text, task_error
from .fits import RayFitPool

GATE_TIMEOUT = 120.0   # seconds a warm-up run waits for the other slots' runs

# Ray starts its workers at niceness 15 by default, so on a machine where any other CPU-bound
# job runs at normal priority the trials get a few percent of a core (measured: warm-up 136 s
# instead of 6 s, docs/research/notes/evidence.md "Start-up and busy machines").  A local Ray runs
# them at the driver's own priority; a cluster keeps its own setting (start it with
# RAY_worker_niceness=0).
LOCAL_RAY_SYSTEM_CONFIG = {"worker_niceness": 0}


def local_ray_config(slots: int) -> dict[str, Any]:
    """The system config of a local Ray for ``slots`` trials at once: workers at the driver's
    priority, and a worker per slot kept alive (Ray ends idle workers beyond one per CPU after
    a second, and a new one takes seconds to start and import)."""
    return {**LOCAL_RAY_SYSTEM_CONFIG, "num_workers_soft_limit": max(slots, os.cpu_count() or 1)}


def warm_up(trainable: str | Callable, config: dict[str, Any], options: dict[str, Any],
            gate: Any = None) -> str:
    """One short run of a built-in trainable (``Trainable.warm_up_options``: one epoch where it
    has epochs, no injected delay, no simulated training time), so a worker has imported and
    initialized everything (torch's first optimizer step alone takes seconds) before the study
    clock starts.  A user's function is only imported: a run of it may be a whole training job.
    With a ``_Gate``, the run then holds its worker until every slot's run has arrived, so that
    each slot gets a worker of its own (short runs would otherwise all land on the first one or
    two, and the trials would start the rest)."""
    from trainables import FunctionTrainable, get_trainable

    t = get_trainable(trainable)
    if not isinstance(t, FunctionTrainable):
        t(config, t.warm_up_options(options), 0)
    if gate is not None:
        ray.get(gate.arrive.remote())
        deadline = time.monotonic() + GATE_TIMEOUT
        while not ray.get(gate.is_open.remote()) and time.monotonic() < deadline:
            time.sleep(0.05)
    return ray.get_runtime_context().get_node_id()


class _Gate:
    """Counts the warm-up runs that have arrived (a Ray actor; ``warm_up``)."""

    def __init__(self, n: int):
        self.n, self.arrived = n, 0

    def arrive(self) -> None:
        self.arrived += 1

    def is_open(self) -> bool:
        return self.arrived >= self.n


def ship_trainable(cfg: StudyConfig) -> str | Callable:
    """What the tasks get: a built-in's name, or a user's function itself, pickled by value
    with its module's code (so workers, on this machine or a cluster, need not import the
    user's module; the packages it imports must be installed there)."""
    fn = cfg.trainable_fn
    if fn is None:
        return cfg.trainable
    module = sys.modules.get(getattr(fn, "__module__", ""))
    if module is not None and module.__name__ != "__main__":
        ray.cloudpickle.register_pickle_by_value(module)
    return fn


class RayExecutor:
    """Runs a study's trials as Ray tasks on a local Ray (started here, shut down by ``close``)
    or on the cluster at ``ray.address`` (or the Ray this process has already joined)."""

    def __init__(self, cfg: StudyConfig):
        self.address, self.run = cfg.ray.address, cfg.run
        s = cfg.settings  # deferred fits due (research.refit_apply): their actor starts with Ray
        self.fits_due = (
            s.research.fitting.refit_apply == "next"
            and cfg.run.trials > s.research.fitting.fit_max_points
        )
        self.trainable_name = cfg.trainable
        self.trainable = ship_trainable(cfg)
        self.options = cfg.trainable_options
        self.started_here = False
        self.fits = self.run.max_concurrent
        self.reports = cfg.fidelity is not None    # trials run as generator tasks, reporting
        self._task: Any = None
        self._fits = RayFitPool()

    @property
    def where(self) -> str:
        return self.address or "local Ray"

    def start(self, progress: Progress) -> None:
        """Start a local Ray or join the cluster (unless this process has joined one), then
        check that the slots fit (``_check_capacity``)."""
        if not ray.is_initialized():
            self.started_here = True
            with progress.phase(f"starting Ray ({self.address or 'local'})"):
                _init_ray(self.address, self.run.max_concurrent)
        self.fits = self._check_capacity(progress)
        # Ray runs a task again when its worker or node is lost (not when it raises)
        self._task = ray.remote(max_retries=self.run.retries, **self._resources())(
            execute_steps if self.reports else execute_trial)
        if self.fits_due:
            self._fits.start()

    def _resources(self) -> dict[str, Any]:
        """``ray.remote``'s options for one trial: ``run.cpus_per_trial`` and
        ``run.resources_per_trial`` (a fractional GPU, custom resources)."""
        res = dict(self.run.resources)
        out: dict[str, Any] = {"num_cpus": res.pop("CPU")}
        if "GPU" in res:
            out["num_gpus"] = res.pop("GPU")
        if res:
            out["resources"] = res
        return out

    def warm_up(self, progress: Progress, config: Mapping[str, Any]) -> None:
        """One short run per slot, each on a worker of its own, so no trial's run time includes
        a worker's start-up (seconds for torch), which would count against its budget."""
        slots = self.run.max_concurrent
        warm = ray.remote(max_retries=0, **self._resources())(warm_up)
        # the runs that can run at once wait for each other (the rest pass an open gate)
        together = min(slots, self.fits)
        gate = ray.remote(num_cpus=0)(_Gate).remote(together) if together > 1 else None
        with progress.phase(f"warming up {slots} worker(s): one short {self.trainable_name} "
                            "run each"):
            refs = [warm.remote(self.trainable, dict(config), self.options, gate)
                    for _ in range(slots)]
            try:
                ray.get(refs)
            except rex.RayError as exc:   # a trainable that fails here fails in the study too
                progress.message(f"warning: warm-up run failed ({first_line(exc)})")
            finally:
                if gate is not None:
                    ray.kill(gate)

    def reference_runs(
        self, config: Mapping[str, Any], seeds: list[int]
    ) -> Iterator[dict[str, Any]]:
        """Run ``config`` once per seed, all at once, as trials run; yield each run's output
        (``execute_trial``) as it ends.  ``RunFailed`` if one fails."""
        pending = [self._task.remote(self.trainable, dict(config), self.options, seed)
                   for seed in seeds]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            try:
                if self.reports:      # a generator task: its reports, then its result
                    out = ray.get(next(ready[0]))
                    if "report" in out:
                        pending.append(ready[0])
                        continue
                else:
                    out = ray.get(ready[0])
            except rex.RayTaskError as exc:      # the trainable raised
                raise RunFailed(task_error(exc), raised=True) from None
            except rex.RayError as exc:          # its worker or node was lost
                raise RunFailed(lost_text(exc)) from None
            yield out

    def backend(self, clock: Callable[[], float], grace: float,
                interrupted: Callable[[], bool]) -> RayBackend:
        return RayBackend(self._task, self.trainable, self.options, self.run.seed, clock=clock,
                          grace=grace, interrupted=interrupted, owns_ray=self.started_here)

    def fit_pool(self) -> RayFitPool:
        """Where the optimizer's deferred fits run: an actor beside the trials (``fits``)."""
        return self._fits

    def close(self) -> None:
        """End the fit actor; shut down the Ray this executor started (a joined one is left
        running)."""
        self._fits.close()
        if self.started_here:
            self.started_here = False
            ray.shutdown()

    def _check_capacity(self, progress: Progress) -> int:
        """More slots than Ray has CPUs for: the extra trials would wait in Ray's queue, and the
        wait would count as their run time (the budget stop, the censored lower bounds).  An
        error on a local Ray; a warning on a cluster, which may grow.  Returns how many trials
        can run at once."""
        slots, cluster = self.run.max_concurrent, ray.cluster_resources()
        # the resource that fits the fewest trials (CPU first on a tie)
        fits, name, need = min((int(float(cluster.get(k, 0.0)) / v + 1e-9), k, v)
                               for k, v in self.run.resources.items() if v > 0)
        if slots <= fits:
            return slots
        have = float(cluster.get(name, 0.0))
        field = "run.cpus_per_trial" if name == "CPU" else f"run.resources_per_trial.{name}"
        fix = (f"set {field} to {have / slots:.3g} or run.max_concurrent to {fits}" if fits
               else f"set {field} to at most {have:g}")
        text = (
            f"run.max_concurrent x {field} = {slots} x {need:g} = {slots * need:g} "
            f"{name}, but Ray has {have:g}: only {fits} trial(s) can run at once, and the others "
            f"would wait in Ray's queue with the wait counted as their run time; {fix}"
        )
        if self.address is None:
            raise ConfigError(text)
        progress.message(f"warning: {text} (unless the cluster grows)")
        return fits


def _init_ray(address: str | None, slots: int) -> None:
    """A local Ray instance (address None, unless ``RAY_ADDRESS`` names a cluster, as in a Ray
    job) or a connection to a cluster (``auto``, host:port, ``ray://host:10001``)."""
    if address is None and not os.environ.get("RAY_ADDRESS"):
        address = "local"       # not a cluster a stale /tmp/ray/ray_current_cluster names
    local = {"_system_config": local_ray_config(slots)} if address == "local" else {}
    _check_reachable(address)
    quiet = logging.getLogger("ray")      # Ray's start-up notices (e.g. its token
    level = quiet.level                   # authentication) would land inside the study's output
    quiet.setLevel(logging.ERROR)
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False, **local)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"ray.address: could not connect to Ray at {address!r}: {exc}; a "
                          "cluster with token authentication also needs RAY_AUTH_MODE=token and "
                          "the head's token in ~/.ray/auth_token here "
                          "(docs/how-to/ray-cluster.md)") from exc
    finally:
        quiet.setLevel(level)


def _check_reachable(address: str | None, timeout: float = 10.0) -> None:
    """Fail at once when nothing answers at a ``host:port`` address: ``ray.init`` would retry
    for minutes (over 400 s seen) before giving up."""
    if address is None or address in ("auto", "local"):
        return
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        return                                   # ray.init names what is wrong with it
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConfigError(
            f"ray.address: nothing answers at {address} ({exc or type(exc).__name__}); "
            "start the cluster there (`ray start --head`) or fix the address "
            "(--address, or leave it out for a local Ray)"
        ) from None
