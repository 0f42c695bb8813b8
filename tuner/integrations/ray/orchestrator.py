"""Asynchronous studies on Ray: ``StudyRunner`` prepares a study (state, Ray, warm-up, the
budget, MLflow) and runs it through the one study loop (``tuner.loop.loop.StudyLoop``) on the Ray
task backend (``tuner.integrations.ray.backend.RayBackend``), with the wall clock as the
optimizer's clock.  The loop's rules (slots, timeouts, budget stops, the wall-clock limit) are
the simulator's; what this module adds are the loop's callbacks: the study state saved after
every suggestion and every result, MLflow, the progress line.

A trial's outcome is its ``tuner.core.trial.Status`` (the MLflow status tag):

=========  ================================================================================
FINISHED   returned its metrics; told to the optimizer (``tell``)
FAILED     raised, returned no objective, or lost its worker or node; ``fail``: censored
TIMED_OUT  ran past ``run.trial_timeout`` or past the budget by ``budget.stop_margin``; ``fail``
           with its elapsed time as run time, so it counts as the budget violation it is
KILLED     stopped because the study hit its wall-clock limit, or killed by Ray's memory
           monitor; ``fail``
=========  ================================================================================

Before the clock starts, each slot imports the trainable once in a short run (``warm_up``), so
no trial's run time includes a worker's start-up.

Nothing is lost on a stop: the study state (optimizer state + where each trial ran + MLflow run
id) is written atomically once per step of the loop that started or ended a trial.  Ctrl-C or SIGTERM cancels
the running tasks and leaves them RUNNING in the state; ``--resume`` starts them again under the
same trial ids (``Optimizer.started``), logs to MLflow whatever finished but was not logged
yet, and goes on.  A hard kill loses at most the results that had not been written yet, and
those trials rerun on resume.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import shutil
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np
import ray
from ray import exceptions as rex

from tuner.app.config import ConfigError, StudyConfig
from tuner.app.progress import Progress, Snapshot, not_finished, rank_finished, summary_table
from tuner.app.study_state import STATE_VERSION, StudyStateFile
from tuner.core.constraints import violated
from tuner.core.optimizer import Optimizer
from tuner.core.persist import StateError, write_atomic, write_json
from tuner.core.space import SearchSpace
from tuner.core.trial import Status
from tuner.loop.loop import (FailFast, Limits, LoopCallback, Outcome, StopOnSignal, StudyFailed,
                             StudyLoop)

from .backend import RayBackend, execute_trial, first_line, task_error

if TYPE_CHECKING:
    from tuner.integrations.mlflow.record import TrialRecord
    from tuner.integrations.mlflow.writer import TrackerProcess

FINISHED, FAILED, KILLED = Status.FINISHED, Status.FAILED, Status.KILLED
GATE_TIMEOUT = 120.0   # seconds a warm-up run waits for the other slots' runs
PROGRESS_EVERY = 1.0   # seconds between the parent run's progress metrics while the loop runs
# Parts of the resolved config that define the study; the rest (limits, addresses) may change
# between sessions of one study.
IDENTITY = ("trainable", "trainable_options", "space", "objective", "budget", "optimizer")


def warm_up(trainable: str | Callable, config: dict[str, Any], options: dict[str, Any],
            gate: Any = None) -> str:
    """One short run of a built-in trainable (one epoch where it has epochs, no injected delay),
    so a worker has imported and initialized everything (torch's first optimizer step alone
    takes seconds) before the study clock starts.  A user's function is only imported: a run of
    it may be a whole training job.  With a ``_Gate``, the run then holds its worker until every
    slot's run has arrived, so that each slot gets a worker of its own (short runs would
    otherwise all land on the first one or two, and the trials would start the rest)."""
    from trainables import FunctionTrainable, get_trainable

    t = get_trainable(trainable)
    if not isinstance(t, FunctionTrainable):
        short = {**options, "delay": "none"} if "delay" in options else dict(options)
        if "epochs" in short:
            short["epochs"] = 1
        t(config, short, 0)
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


@dataclass
class StudyResult:
    """What a finished (or interrupted) study hands back."""

    status: str                       # FINISHED, KILLED (interrupted) or FAILED (``diagnosis``)
    optimizer: Optimizer
    where: dict[int, dict[str, Any]]  # trial id -> node and host it ran on
    run_id: str | None
    directory: Path
    elapsed: float
    utilization: float
    unlogged: int
    diagnosis: str | None = None      # why no trial finished, in one line (None: some did)

    def count(self, status: str) -> int:
        return sum(tr.status == status for tr in self.optimizer.trials)

    @property
    def outcomes(self) -> dict[int, dict[str, Any]]:
        """Every trial that ended: its status, reason and where it ran."""
        return {tr.trial_id: {"status": str(tr.status), "reason": tr.reason,
                              **self.where.get(tr.trial_id, {})}
                for tr in self.optimizer.trials if tr.status != Status.RUNNING}

    @property
    def best(self) -> dict[str, Any] | None:
        """The best finished trial within every constraint (the budget): its id, config,
        objective value and metrics; None when no trial is."""
        tr = self.optimizer.best(feasible=True)
        if tr is None:
            return None
        return {"trial_id": tr.trial_id, "config": dict(tr.config), "value": tr.value,
                "metrics": dict(tr.metrics)}


@dataclass
class _Session:
    """Counters that survive a resume (saved with the state)."""

    elapsed_before: float = 0.0
    busy_seconds: float = 0.0
    where: dict[int, dict[str, Any]] = field(default_factory=dict)   # node and host of each trial
    run_id: str | None = None


class StudyRunner:
    """Runs one study (see module docstring).  ``run()`` returns a ``StudyResult``."""

    def __init__(self, cfg: StudyConfig, *, resume: bool = False, fresh: bool = False,
                 progress: Progress | None = None, grace: float = 5.0,
                 clock: Callable[[], float] = time.time):
        self.cfg = cfg
        self._trainable = ship_trainable(cfg)
        self.dir = Path(cfg.output) / cfg.study
        self.state_path = self.dir / "state.json"
        self._state_file = StudyStateFile(self.state_path)
        self._new_where: set[int] = set()   # trials whose place is not saved yet
        self.table_path = self.dir / "trials.csv"
        self.progress = progress or Progress()
        self.clock = clock
        self.resume, self.fresh = resume, fresh
        self.loop: StudyLoop | None = None
        self.grace = grace
        self.session = _Session()
        self.optimizer: Optimizer | None = None
        self.tracker: TrackerProcess | None = None
        self._t0 = clock()
        self._to_log: list[int] = []   # recorded trials waiting for MLflow (after the refill)
        self._progress_logged = -math.inf
        # "nothing fits the budget" is checked once max(3, slots) trials ended, then at 2x that
        self._next_warning: float = max(3, cfg.run["max_concurrent"])

    # --- set-up -----------------------------------------------------------------------------

    def _prepare(self) -> list[int]:
        """Create or reload the optimizer; returns trials to start again (resume)."""
        exists = self.state_path.exists()
        if exists and not (self.resume or self.fresh):
            raise ConfigError(f"study '{self.cfg.study}' already has a state at {self.state_path}; "
                              "pass --resume to continue it or --fresh to start it over "
                              "(the old folder is kept under a new name)")
        if exists and self.fresh:
            kept = self.dir.with_name(f"{self.dir.name}.{time.strftime('%Y%m%d-%H%M%S')}")
            shutil.move(str(self.dir), kept)
            self.progress.message(f"--fresh: moved the earlier study folder to {kept}")
            exists = False
        self.dir.mkdir(parents=True, exist_ok=True)
        if not exists:
            if self.resume:
                self.progress.message(f"--resume: no state at {self.state_path}; starting a new study")
            if not self.cfg.budget_pending:   # else: once the reference run has been measured
                self.optimizer = Optimizer(self.cfg.space, self.cfg.settings, clock=self.clock)
            return []
        try:
            version, state = self._state_file.read()
        except StateError as exc:
            raise ConfigError(f"--resume: {exc}") from None
        old_budget = state["config"].get("budget") or {}
        if self.cfg.budget_pending and old_budget.get("seconds") is not None:
            # a relative budget keeps the limit measured when the study started
            self.cfg = self.cfg.with_budget(old_budget["seconds"], old_budget.get("reference_seconds"))
        new = self.cfg.resolved()
        changed = [k for k in IDENTITY if json.dumps(state["config"][k], sort_keys=True, default=str)
                   != json.dumps(new[k], sort_keys=True, default=str)]
        if changed:
            raise ConfigError(f"--resume: the config changed {changed} since the study started; "
                              "only run, ray, mlflow and output may change (use --fresh or a new "
                              "study name)")
        self.optimizer = Optimizer.from_state(state["optimizer"], clock=self.clock)
        s = state["session"]
        where = s["where"] if version == STATE_VERSION else {   # 1: outcomes held it
            k: {key: o[key] for key in ("node", "host") if o.get(key)} for k, o in s["outcomes"].items()}
        self.session = _Session(float(s["elapsed_before"]), float(s["busy_seconds"]),
                                {int(k): v for k, v in where.items()}, s["run_id"])
        return [tr.trial_id for tr in self.optimizer.running]

    def _save(self, whole: bool = True) -> None:
        """The study state: whole, or (``whole=False``, once per step of the loop) a journal
        line with what changed (``StudyStateFile``)."""
        assert self.optimizer is not None
        new, self._new_where = self._new_where, set()
        self._state_file.save(self.cfg.resolved, self.optimizer,
                              {"elapsed_before": self.elapsed(), "busy_seconds": self.session.busy_seconds,
                               "run_id": self.session.run_id}, self.session.where, new, whole=whole)

    def _start_tracking(self) -> float:
        """Start the MLflow writer process (``TrackerProcess``: MLflow's import, its store and
        every logging call stay out of the driver), then the parent run; returns the seconds it
        took.  Runs in a thread beside Ray's start-up (``run``); the budget's params follow in
        ``_log_budget`` once it is measured."""
        t0 = time.perf_counter()
        from tuner.integrations.mlflow.writer import TrackerProcess

        cfg = self.cfg
        self.tracker = TrackerProcess(cfg.mlflow["tracking_uri"], cfg.experiment, self.dir,
                                      run_name=cfg.study)
        params = {"trainable": cfg.trainable, "algorithm": cfg.settings.algorithm,
                  "objective": cfg.objective["metric"], "mode": cfg.objective["mode"],
                  "trials": cfg.run["trials"], "max_concurrent": cfg.run["max_concurrent"],
                  "cpus_per_trial": cfg.run["cpus_per_trial"], "seed": cfg.run["seed"],
                  "space": json.dumps(cfg.space), "constraint_handler": cfg.settings.constraint_handler}
        self.session.run_id = self.tracker.start(params, {"study": cfg.study},
                                                 resume_run_id=self.session.run_id)
        return time.perf_counter() - t0

    def _log_budget(self) -> None:
        """The budget as enforced (a relative one measured by now) and the resolved config."""
        b = self.cfg.budget
        if b is not None:
            self.tracker.log_params({"budget_limit": b["seconds"], "budget_spec": b["limit"],
                                     "budget_reference_seconds": b["reference_seconds"],
                                     "budget_metric": b["metric"], "stop_margin": b["stop_margin"]})
        self.tracker.log_dict(self.cfg.resolved(), "config.json")

    # --- the loop ---------------------------------------------------------------------------

    def run(self) -> StudyResult:
        """Start Ray, warm the workers up, measure a relative budget, then run the trials; each
        start-up step is printed with the seconds it took."""
        try:
            return self._run()
        finally:
            if self.tracker is not None:
                self.tracker.close()

    def _run(self) -> StudyResult:
        restart = self._prepare()
        if self.optimizer is not None:
            self._write_table()          # a resumed study: the table as the state has it
        self.progress.message(self._banner(restart))
        tracking = _InThread(self._start_tracking)   # MLflow starts while Ray does
        started_here = not ray.is_initialized()
        try:
            if started_here:
                with self.progress.phase(f"starting Ray ({self.cfg.ray['address'] or 'local'})"):
                    _init_ray(self.cfg.ray["address"], self.cfg.run["max_concurrent"])
            fits = self._check_capacity()
            # Ray runs a task again when its worker or node is lost (not when it raises)
            task = ray.remote(num_cpus=self.cfg.run["cpus_per_trial"],
                              max_retries=self.cfg.run["retries"])(execute_trial)
            self._warm_up(fits)
            if self.cfg.budget_pending:
                self._measure_budget(task)
            elif self.cfg.budget and self.cfg.budget["relative"]:
                self.progress.message(f"budget: {self._budget_text()} (measured when the study "
                                      "started; kept on --resume)")
            took = tracking.result()
            self.progress.message(f"MLflow {self.cfg.mlflow['tracking_uri']}, experiment "
                                  f"'{self.cfg.experiment}': ready in {took:.1f} s (started "
                                  "alongside Ray)")
            self._log_budget()
            self._log_unlogged()
        except BaseException:
            tracking.result(raise_error=False)
            if self.tracker is not None and self.tracker.run_id is not None:
                self.tracker.finish("FAILED")   # not left RUNNING; the next start adopts it
            if started_here:
                ray.shutdown()
            raise
        opt = self.optimizer
        assert opt is not None
        self._t0 = self.clock()
        with StopOnSignal() as stop:
            backend = RayBackend(task, self._trainable, self.cfg.trainable_options,
                                 self.cfg.run["seed"], clock=self.clock, grace=self.grace,
                                 interrupted=stop)
            # armed only while no trial has ended (not on a resume of a study that ran)
            fail_fast = FailFast(min(self.cfg.run["fail_fast"], self.cfg.run["trials"])
                                 if not self._n_ended() else 0)
            self.loop = StudyLoop(opt, backend, self._limits(), metric=self.cfg.objective["metric"],
                                  callbacks=[_SaveState(self), fail_fast, _LogToMlflow(self),
                                             _ShowProgress(self)],
                                  should_stop=stop)
            failure = None
            try:
                done = self.loop.run(restart=[(tid, opt.trials[tid].config) for tid in restart])
            except KeyboardInterrupt:   # a second Ctrl-C: stop at once
                backend.abandon()
                done = False
            except StudyFailed as exc:
                backend.abandon()
                done, failure = False, str(exc)
            backend.close()
        status = FINISHED if done else FAILED if failure else KILLED
        if failure:
            self.progress.message(f"\nstopped: {failure}")
        elif not done:
            self.progress.message(f"\ninterrupted: {len(self.loop.running)} running trial(s) will "
                                  f"start again with --resume (state: {self.state_path})")
        self._save()
        self._flush_log(final=True)
        if started_here:
            ray.shutdown()
        return self._finish(status, failure)

    def _limits(self) -> Limits:
        """The loop's limits: slots, trial timeout, wall-clock deadline (this session's share of
        ``run.wall_clock_limit``), and the reasons a stopped trial is given."""
        run, b = self.cfg.run, self.cfg.budget
        limit = run["wall_clock_limit"]
        budget_reason = "passed the budget by more than budget.stop_margin"
        if b is not None and b.get("stop_margin") is not None:
            budget_reason = (f"passed the budget of {b['seconds']:.3g} s by more than "
                             f"budget.stop_margin = {b['stop_margin']:g}")
        return Limits(run["trials"] - self._n_ended(),   # the restarted ones count as starts
                      slots=run["max_concurrent"], trial_timeout=run["trial_timeout"],
                      deadline=None if limit is None else self._t0 + limit - self.session.elapsed_before,
                      deadline_reason=f"the study reached run.wall_clock_limit = {limit} s",
                      budget_reason=budget_reason)

    def elapsed(self) -> float:
        """Seconds this study has run, over all its sessions."""
        return self.session.elapsed_before + self.clock() - self._t0

    def _check_capacity(self) -> int:
        """More slots than Ray has CPUs for: the extra trials would wait in Ray's queue, and the
        wait would count as their run time (the budget stop, the censored lower bounds).  An
        error on a local Ray; a warning on a cluster, which may grow.  Returns how many trials
        can run at once."""
        run = self.cfg.run
        slots, cpus = run["max_concurrent"], run["cpus_per_trial"]
        have = float(ray.cluster_resources().get("CPU", 0.0))
        fits = int(have / cpus + 1e-9)
        if slots * cpus <= have + 1e-9:
            return slots
        fix = (f"set run.cpus_per_trial to {have / slots:.3g} or run.max_concurrent to {fits}" if fits
               else f"set run.cpus_per_trial to at most {have:g}")
        text = (f"run.max_concurrent x run.cpus_per_trial = {slots} x {cpus:g} = {slots * cpus:g} "
                f"CPUs, but Ray has {have:g}: only {fits} trial(s) can run at once, and the others "
                f"would wait in Ray's queue with the wait counted as their run time; {fix}")
        if self.cfg.ray["address"] is None:
            raise ConfigError(text)
        self.progress.message(f"warning: {text} (unless the cluster grows)")
        return fits

    def _reference_config(self) -> dict[str, Any]:
        """``budget.reference`` if it is a configuration, else the center of the search space
        (what the warm-up runs, and the reference run of ``reference: warmup``)."""
        ref = self.cfg.budget["reference"] if self.cfg.budget else None
        if isinstance(ref, Mapping):
            return dict(ref)
        space = SearchSpace.from_dict(self.cfg.space)
        return space.decode(np.full(space.dim, 0.5))

    def _warm_up(self, fits: int) -> None:
        """One short run per slot, each on a worker of its own, so no trial's run time includes
        a worker's start-up (seconds for torch), which would count against its budget (``fits``:
        how many trials Ray can run at once)."""
        cpus = self.cfg.run["cpus_per_trial"]
        slots = self.cfg.run["max_concurrent"]
        warm = ray.remote(num_cpus=cpus, max_retries=0)(warm_up)
        config = self._reference_config()
        # the runs that can run at once wait for each other (the rest pass an open gate)
        together = min(slots, fits)
        gate = ray.remote(num_cpus=0)(_Gate).remote(together) if together > 1 else None
        with self.progress.phase(f"warming up {slots} worker(s): one short {self.cfg.trainable} "
                                 "run each"):
            refs = [warm.remote(self._trainable, config, self.cfg.trainable_options, gate)
                    for _ in range(slots)]
            try:
                ray.get(refs)
            except rex.RayError as exc:   # a trainable that fails here fails in the study too
                self.progress.message(f"warning: warm-up run failed ({first_line(exc)})")
            finally:
                if gate is not None:
                    ray.kill(gate)

    def _measure_budget(self, task: Any) -> None:
        """Resolve a relative budget (``limit: 1.5x``): run the reference configuration once on
        every slot at the same time, as trials will run, and take the median of its
        ``budget.metric`` (run time: measured in the worker, as for every trial).  The limit is
        that times the multiple; the optimizer is created with it."""
        b, slots = self.cfg.budget, self.cfg.run["max_concurrent"]
        config = self._reference_config()
        values: list[float] = []
        with self.progress.phase(f"reference run for the budget on {slots} worker(s): "
                                 f"{_format_config(config)}"):
            pending = [task.remote(self._trainable, config, self.cfg.trainable_options,
                                   self.cfg.run["seed"] + 1_000_000 + i) for i in range(slots)]
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                try:
                    out = ray.get(ready[0])
                except rex.RayError as exc:
                    raise ConfigError(f"budget.reference: the reference run of "
                                      f"{_format_config(config)} failed ({task_error(exc)}); set "
                                      "budget.limit in seconds or another budget.reference") from None
                if b["metric"] == "runtime":
                    values.append(out["metrics"].get("runtime", out["runtime"]))
                elif b["metric"] in out["metrics"]:
                    values.append(out["metrics"][b["metric"]])
                else:
                    raise ConfigError(f"budget.metric: the reference run reported no "
                                      f"'{b['metric']}' (it reported {sorted(out['metrics'])})")
        reference = float(np.median(values))
        self.cfg = self.cfg.with_budget(b["multiple"] * reference, reference)
        self.optimizer = Optimizer(self.cfg.space, self.cfg.settings, clock=self.clock)
        self.progress.message(f"budget: {self._budget_text()}")

    def _budget_text(self) -> str:
        """The budget as it is enforced, e.g. ``runtime <= 1.5 x 1.31 s = 1.97 s (stop at 3.93 s)``."""
        b = self.cfg.budget
        text = f"{b['metric']} <= {b['seconds']:.3g} s"
        if b["relative"]:
            text = (f"{b['metric']} <= {b['multiple']:g} x {b['reference_seconds']:.3g} s (the "
                    f"reference run) = {b['seconds']:.3g} s")
        if b["stop_margin"] is not None:
            text += f"; a run is stopped at {b['seconds'] * (1 + b['stop_margin']):.3g} s"
        return text

    def _recorded(self, outcome: Outcome) -> None:
        """A trial's outcome is in the optimizer: keep where it ran, add its row to the table;
        the state is saved at the end of the step (``_SaveState``), then MLflow follows in
        ``_flush_log`` (a crash in between leaves a result that ``_log_unlogged`` sends on
        resume; a crash before the save, a trial that runs again)."""
        self.session.busy_seconds += outcome.metrics.get("runtime", outcome.runtime)
        if outcome.info:
            self.session.where[outcome.trial_id] = outcome.info
            self._new_where.add(outcome.trial_id)
        self._append_row(outcome.trial_id)
        self._to_log.append(outcome.trial_id)

    # --- MLflow -----------------------------------------------------------------------------

    def _trial_record(self, trial_id: int) -> "TrialRecord":
        from tuner.integrations.mlflow.record import TrialRecord

        tr = self.optimizer.trials[trial_id]
        metrics = dict(tr.metrics)
        if tr.value is not None:
            metrics.setdefault(self.cfg.objective["metric"], tr.value)
        for c in self.optimizer.constraints:
            g = c.observed(tr)
            if g is not None:
                metrics[f"g_{c.metric}"] = g
        tags = {"trial_id": str(trial_id), "status": str(tr.status),
                "pending_at_suggest": str(tr.pending_at_suggest)}
        if self.cfg.budget is not None:
            tags["over_budget"] = str(int(self._over_budget(trial_id)))
        for key, value in {**self.session.where.get(trial_id, {}), "reason": tr.reason}.items():
            if value:
                tags[key] = str(value)
        return TrialRecord(trial_id, dict(tr.config), str(tr.status), metrics, tags,
                           tr.start_time, tr.finish_time or tr.start_time)

    def _flush_log(self, final: bool = False) -> int:
        """Log the trials recorded since the last call, then the study's progress metrics (at
        most once per ``PROGRESS_EVERY`` seconds while the loop runs, and at the end); returns
        how many trials."""
        done, self._to_log = self._to_log, []
        for tid in done:
            self.tracker.log_trial(self._trial_record(tid))
        now = time.monotonic()
        if final or (done and now - self._progress_logged >= PROGRESS_EVERY):
            self._progress_logged = now
            snap = self._snapshot(self.elapsed())
            metrics = {"finished": snap.done, "failed": snap.failed,
                       "over_budget": snap.violations, "utilization": snap.utilization}
            if snap.best is not None:
                metrics["best_so_far"] = snap.best
            self.tracker.log_progress(self._n_ended(), metrics)
        return len(done)

    def _log_unlogged(self) -> None:
        """Results saved in the state but not yet in MLflow (a crash between the two)."""
        logged = self.tracker.logged_trial_ids()
        self._to_log = sorted(set(self._ended()) - logged)
        self._flush_log(final=True)

    # --- reporting --------------------------------------------------------------------------

    def _snapshot(self, elapsed: float) -> Snapshot:
        opt = self.optimizer
        ended = [self.optimizer.trials[tid] for tid in self._ended()]
        feasible = bool(opt.constraints)
        best = opt.best(feasible=feasible)
        over = opt.best() if best is None and feasible else None
        now = self.clock()
        running = self.loop.running if self.loop is not None else {}
        busy = self.session.busy_seconds + sum(now - start for start in running.values())
        slots = self.cfg.run["max_concurrent"]
        return Snapshot(done=sum(tr.status == FINISHED for tr in ended),
                        failed=sum(tr.status != FINISHED for tr in ended),
                        running=len(running), total=self.cfg.run["trials"],
                        best=None if best is None else best.value,
                        best_trial=None if best is None else best.trial_id,
                        violations=self._violations(),
                        utilization=min(busy / (slots * elapsed), 1.0) if elapsed > 0 else 0.0,
                        elapsed=elapsed, best_over=None if over is None else over.value,
                        best_over_trial=None if over is None else over.trial_id)

    def _ended(self) -> list[int]:
        """Ids of the trials that have ended, in order."""
        return [tr.trial_id for tr in self.optimizer.trials if tr.status != Status.RUNNING]

    def _n_ended(self) -> int:
        """How many trials have ended (without listing them)."""
        return len(self.optimizer.trials) - len(self.optimizer.running)

    def _over_budget(self, trial_id: int) -> bool:
        return violated(self.optimizer.trials[trial_id], self.optimizer.constraints)

    def _violations(self) -> int:
        return sum(self._over_budget(tid) for tid in self._ended())

    def _warn_if_nothing_fits(self) -> None:
        """While no trial has finished within the budget, say so once max(3, slots) trials have
        ended, and again each time that count doubles: the fastest run time against the limit,
        and what to change."""
        ended = self._n_ended()
        if self.cfg.budget is None or ended < self._next_warning:
            return
        self._next_warning = 2 * ended
        if any(self.optimizer.trials[tid].status == FINISHED and not self._over_budget(tid)
               for tid in self._ended()):
            self._next_warning = math.inf     # something fits: no more warnings
            return
        b = self.cfg.budget
        times = [self.optimizer.trials[tid].metrics.get(b["metric"]) for tid in self._ended()]
        times = [t for t in times if t is not None]
        if len(times) < ended:   # some failed without a run time: not a budget problem alone
            return
        self.progress.message(
            f"warning: none of the {ended} trials so far finished within the budget "
            f"({self._budget_text()}); the fastest took {min(times):.3g} s. If this machine is "
            "busier than the budget assumes, raise budget.limit (e.g. --budget 2x, a multiple of "
            "a reference run measured here), raise budget.stop_margin, or run fewer trials at once "
            "(--max-concurrent).")

    def _banner(self, restart: list[int]) -> str:
        cfg, b = self.cfg, self.cfg.budget
        budget = ""
        if b is not None:
            budget = (f", budget {b['metric']} <= {b['multiple']:g} x a reference run measured "
                      "at start-up" if cfg.budget_pending else
                      f", budget {b['metric']} <= {b['seconds']:.3g} s")
        where = cfg.ray["address"] or "local Ray"
        again = f", {len(restart)} interrupted trial(s) start again" if restart else ""
        return (f"study {cfg.study}: {cfg.trainable}, {cfg.settings.algorithm}, "
                f"{cfg.run['trials']} trials, {cfg.run['max_concurrent']} at once on {where}{budget}"
                f"{again}; MLflow {cfg.mlflow['tracking_uri']} experiment '{cfg.experiment}'")

    def _finish(self, status: str, failure: str | None = None) -> StudyResult:
        elapsed = self.elapsed()
        snap = self._snapshot(elapsed)
        rows = self._write_table()
        paths = [self.table_path]
        key = self.cfg.objective["metric"]
        finished = rank_finished(rows, key, self.cfg.objective["mode"])
        # within the budget first, then by score; with none finished, the fastest runs
        top = (finished or sorted(rows, key=lambda r: r["runtime"] if r["runtime"] is not None
                                  else math.inf))[:10]
        if finished:
            paths += self._write_best(top[0])
        try:
            from tuner.app.plots import study_plots

            records = [self._trial_record(tid) for tid in self._ended()]
            budget = self.cfg.budget["seconds"] if self.cfg.budget else None
            paths += study_plots(records, self.dir, self.cfg.objective["metric"], budget,
                                 self.cfg.objective["mode"],
                                 runtime_metric=self.cfg.budget["metric"] if self.cfg.budget
                                 else "runtime")
        except Exception as exc:  # a plot must never cost the study its results
            self.progress.message(f"warning: plots not written: {exc}")
        self.tracker.log_artifacts(paths)
        behind = self.tracker.behind
        with (self.progress.phase(f"MLflow: logging the last {behind} item(s)") if behind > 1
              else contextlib.nullcontext()):
            unlogged = self.tracker.finish(status)
        self.session.run_id = self.tracker.run_id or self.session.run_id   # real id once known
        self._save()
        cols = ["trial", "status", key, "runtime", "over_budget", *self.cfg.space]
        if top:
            self.progress.message("\n" + summary_table(top, cols))
        others = not_finished(rows, limit=10)
        if others and finished:
            self.progress.message("\n" + others)
        self.progress.message("\n" + (self._best_line(top[0]) if finished else
                                      f"no trial finished: {self._diagnosis()}"))
        self.progress.message(
            f"{snap.done} finished, {snap.failed} failed/stopped, {snap.violations} over budget, "
            f"workers busy {100 * snap.utilization:.0f}% of {elapsed:.0f} s.\n"
            f"state and trial table: {self.dir}/; MLflow run {self.session.run_id} "
            f"({self.cfg.mlflow['tracking_uri']}): browse with `mlflow ui --backend-store-uri "
            f"{self.cfg.mlflow['tracking_uri']}`" + (f"\n{unlogged} MLflow item(s) are not logged yet "
                                                     f"(kept in {self.dir}); --resume sends them"
                                                     if unlogged else ""))
        return StudyResult(status, self.optimizer, self.session.where, self.session.run_id,
                           self.dir, elapsed, snap.utilization, unlogged,
                           failure or (None if finished else self._diagnosis()))

    def _write_best(self, row: Mapping[str, Any]) -> list[Path]:
        """best.json and best.yaml in the study folder (and best.json in the MLflow parent run):
        the best finished trial, within the budget if any is."""
        import yaml

        tr, key = self.optimizer.trials[row["trial"]], self.cfg.objective["metric"]
        best = {"study": self.cfg.study, "trial": tr.trial_id,
                "within_budget": not row["over_budget"], key: tr.value,
                "config": dict(tr.config), "metrics": dict(tr.metrics)}
        if self.cfg.budget:
            best["budget_seconds"] = self.cfg.budget["seconds"]
        paths = [self.dir / "best.json", self.dir / "best.yaml"]
        write_json(paths[0], best, indent=1)
        write_atomic(paths[1], yaml.safe_dump(best, sort_keys=False))
        self.tracker.log_dict(best, "best.json")
        return paths

    def _best_line(self, row: Mapping[str, Any]) -> str:
        """The best trial: the best within the budget, else the best over it, marked so."""
        key, b = self.cfg.objective["metric"], self.cfg.budget
        config = _format_config({k: row[k] for k in self.cfg.space})
        text = f"best: trial {row['trial']}, {key} {row[key]:.4g}"
        if b is None:
            return f"{text}; {config}"
        used = self.optimizer.trials[row["trial"]].metrics.get(b["metric"])
        used_text = "-" if used is None else f"{used:.3g} s"
        if row["over_budget"]:
            return (f"{text}, OVER BUDGET ({b['metric']} {used_text} > {b['seconds']:.3g} s): no "
                    f"trial finished within the budget; {config}")
        return f"{text}, {b['metric']} {used_text} within the budget of {b['seconds']:.3g} s; {config}"

    def _diagnosis(self) -> str:
        """Why no trial finished, in one line, with what to change."""
        ended = [self.optimizer.trials[tid] for tid in self._ended()]
        if not ended:
            return "no trial ran (check run.trials and run.wall_clock_limit)"
        counts: dict[str, int] = {}
        for tr in ended:
            counts[str(tr.status)] = counts.get(str(tr.status), 0) + 1
        parts = ", ".join(f"{n} {status}" for status, n in counts.items())
        budget_stops = [tr for tr in ended if self._stopped_for_budget(tr.trial_id)]
        if len(budget_stops) == len(ended):
            fastest = min(tr.metrics.get("runtime", math.inf) for tr in ended)
            return (f"all {len(ended)} trials were stopped past the budget ({self._budget_text()}); "
                    f"the fastest had run {fastest:.3g} s. Raise budget.limit (e.g. --budget 3x) "
                    "or budget.stop_margin, or run fewer trials at once (--max-concurrent)")
        first = next(tr.reason for tr in ended if not self._stopped_for_budget(tr.trial_id))
        return f"{parts}; first reason: {first}"

    def _stopped_for_budget(self, trial_id: int) -> bool:
        return (self.optimizer.trials[trial_id].status == Status.TIMED_OUT
                and self._over_budget(trial_id))

    def _row(self, tid: int) -> dict[str, Any]:
        """A trial's line of ``trials.csv``."""
        tr, where = self.optimizer.trials[tid], self.session.where.get(tid, {})
        return {"trial": tid, "status": str(tr.status), self.cfg.objective["metric"]: tr.value,
                "runtime": tr.metrics.get("runtime"), "over_budget": int(self._over_budget(tid)),
                "train_time": tr.metrics.get("train_time"),
                "pending_at_suggest": tr.pending_at_suggest, "start": tr.start_time,
                "finish": tr.finish_time, "node": where.get("node"), "reason": tr.reason,
                **tr.config}

    def _write_table(self) -> list[dict[str, Any]]:
        """``trials.csv`` anew from the state, atomically: every ended trial in id order."""
        rows = [self._row(tid) for tid in self._ended()]
        if rows:
            text = io.StringIO()
            w = csv.DictWriter(text, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
            write_atomic(self.table_path, text.getvalue())
        return rows

    def _append_row(self, tid: int) -> None:
        """One ended trial onto ``trials.csv``, so the table is current even after a hard kill
        (``_write_table`` rewrites it whole on resume and at the end)."""
        row = self._row(tid)
        new = not self.table_path.exists()
        with open(self.table_path, "a", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(row))
            if new:
                w.writeheader()
            w.writerow(row)


class _SaveState(LoopCallback):
    """The study state once per step of the loop that started or ended a trial (before the
    loop waits, and before MLflow hears of the step's results)."""

    def __init__(self, runner: StudyRunner):
        self.runner = runner
        self.dirty = False

    def on_launch(self, trial_id: int, config: Mapping[str, Any]) -> None:
        self.dirty = True

    def on_end(self, outcome: Outcome) -> None:
        self.runner._recorded(outcome)
        self.dirty = True

    def on_step(self, loop: StudyLoop) -> None:
        if self.dirty:
            self.runner._save(whole=False)
            self.dirty = False


class _LogToMlflow(LoopCallback):
    """MLflow after the slots are refilled: logging never keeps a free worker waiting."""

    def __init__(self, runner: StudyRunner):
        self.runner = runner

    def on_step(self, loop: StudyLoop) -> None:
        self.runner._flush_log()


class _ShowProgress(LoopCallback):
    """The progress line: when trials have ended (at most every ``Progress.min_gap`` seconds),
    else every ``Progress.interval`` seconds; the snapshot is computed only for a line."""

    def __init__(self, runner: StudyRunner):
        self.runner = runner
        self.ended = 0     # trials ended since the last line

    def on_end(self, outcome: Outcome) -> None:
        self.ended += 1

    def on_step(self, loop: StudyLoop) -> None:
        r = self.runner
        if self.ended:
            r._warn_if_nothing_fits()
        if r.progress.due(self.ended > 0):
            r.progress.update(r._snapshot(r.elapsed()), force=self.ended > 0)
            self.ended = 0

    def wake_at(self, now: float) -> float | None:
        return now + max(self.runner.progress.next_due(self.ended > 0) - time.monotonic(), 0.0)


# Ray starts its workers at niceness 15 by default, so on a machine where any other CPU-bound
# job runs at normal priority the trials get a few percent of a core (measured: warm-up 136 s
# instead of 6 s, README "Start-up and busy machines").  A local Ray runs them at the driver's
# own priority; a cluster keeps its own setting (start it with RAY_worker_niceness=0).
LOCAL_RAY_SYSTEM_CONFIG = {"worker_niceness": 0}


def local_ray_config(slots: int) -> dict[str, Any]:
    """The system config of a local Ray for ``slots`` trials at once: workers at the driver's
    priority, and a worker per slot kept alive (Ray ends idle workers beyond one per CPU after
    a second, and a new one takes seconds to start and import)."""
    return {**LOCAL_RAY_SYSTEM_CONFIG, "num_workers_soft_limit": max(slots, os.cpu_count() or 1)}


def _init_ray(address: str | None, slots: int) -> None:
    """A local Ray instance (address None) or a connection to a cluster (``auto``, host:port,
    ``ray://host:10001``)."""
    local = {"_system_config": local_ray_config(slots)} if address is None else {}
    _check_reachable(address)
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False, **local)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"ray.address: could not connect to Ray at {address!r}: {exc}") from exc


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
        raise ConfigError(f"ray.address: nothing answers at {address} ({exc or type(exc).__name__}); "
                          "start the cluster there (`ray start --head`) or fix the address "
                          "(--address, or leave it out for a local Ray)") from None


class _InThread:
    """Call ``fn`` in a thread now; ``result()`` waits for it and returns its value (or raises
    its exception)."""

    def __init__(self, fn: Callable[[], Any]):
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._call, args=(fn,), daemon=True)
        self._thread.start()

    def _call(self, fn: Callable[[], Any]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:   # handed to the caller of result()
            self._error = exc

    def result(self, raise_error: bool = True) -> Any:
        self._thread.join()
        if self._error is not None and raise_error:
            raise self._error
        return self._value


def _format_config(config: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in config.items())
