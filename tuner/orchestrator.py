"""Asynchronous studies on Ray: keep ``max_concurrent`` trials running, choose each next
configuration the moment a slot frees, record every trial in the study state and in MLflow.

Trials run as plain Ray tasks driven by this loop (``ray.wait`` on the running set), not as Ray
Tune trials: on this 2-core machine the task loop kept the slots far busier for short trials
(README, "Why Ray tasks"; ``scripts/bench_orchestration.py``).  The optimizer is the same
``tuner.Optimizer`` the Ray Tune plugin wraps, with the wall clock as its clock.

Outcomes of a trial (the MLflow status tag):

=========  ================================================================================
FINISHED   returned its metrics; told to the optimizer (``tell``)
FAILED     raised, returned no objective, or lost its worker or node; ``fail``: censored
TIMED_OUT  ran past ``run.trial_timeout`` or past the budget by ``budget.stop_margin``; ``fail``
           with its elapsed time as run time, so it counts as the budget violation it is
KILLED     cancelled because the study hit its wall-clock limit, or killed by Ray's memory
           monitor; ``fail``
=========  ================================================================================

A stopped trial gets a KeyboardInterrupt in its worker (``ray.cancel(force=False)``), so the
worker survives with its imports warm; only a trial that ignores it for ``grace`` seconds (stuck
in C code) is killed with its worker.  Before the clock starts, each slot imports the trainable
once in a short run (``warm_up``), so no trial's run time includes a worker's start-up.

Nothing is lost on a stop: the study state (optimizer state + outcomes + MLflow run id) is
written atomically after every suggestion and every result.  Ctrl-C or SIGTERM cancels the
running tasks and leaves them RUNNING in the state; ``--resume`` starts them again under the
same trial ids (``Optimizer.restart``), logs to MLflow whatever finished but was not logged
yet, and goes on.  A hard kill loses at most the results that had not been written yet, and
those trials rerun on resume.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import ray
from ray import exceptions as rex

from .censoring import COMPLETED, RUNNING
from .config import ConfigError, StudyConfig
from .optimizer import Optimizer
from .progress import Progress, Snapshot, summary_table
from .tracking import StudyTracker, TrialRecord

STATE_FORMAT = "tuner.study"
STATE_VERSION = 1
FINISHED, FAILED, KILLED, TIMED_OUT = "FINISHED", "FAILED", "KILLED", "TIMED_OUT"
# Parts of the resolved config that define the study; the rest (limits, addresses) may change
# between sessions of one study.
IDENTITY = ("trainable", "trainable_options", "space", "objective", "budget", "optimizer")


def warm_up(trainable: str, config: dict[str, Any], options: dict[str, Any]) -> str:
    """One short run of the trainable (one epoch where it has epochs, no injected delay), so a
    worker has imported and initialized everything (torch's first optimizer step alone takes
    seconds) before the study clock starts."""
    from trainables import get_trainable

    t = get_trainable(trainable)
    short = {**options, "delay": "none"} if "delay" in options else dict(options)
    if "epochs" in short:
        short["epochs"] = 1
    t(config, short, 0)
    return ray.get_runtime_context().get_node_id()


def execute_trial(trainable: str, config: dict[str, Any], options: dict[str, Any],
                  seed: int) -> dict[str, Any]:
    """The body of one Ray task: train, and say where it ran."""
    from trainables import get_trainable

    metrics = get_trainable(trainable)(config, options, seed)
    return {"metrics": {k: float(v) for k, v in metrics.items()},
            "node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname()}


@dataclass
class Running:
    trial_id: int
    start: float


@dataclass
class StudyResult:
    """What a finished (or interrupted) study hands back."""

    status: str                       # FINISHED or KILLED (interrupted)
    optimizer: Optimizer
    outcomes: dict[int, dict[str, Any]]
    run_id: str | None
    directory: Path
    elapsed: float
    utilization: float
    unlogged: int

    def count(self, status: str) -> int:
        return sum(o["status"] == status for o in self.outcomes.values())


@dataclass
class _Session:
    """Counters that survive a resume (saved with the state)."""

    elapsed_before: float = 0.0
    busy_seconds: float = 0.0
    outcomes: dict[int, dict[str, Any]] = field(default_factory=dict)
    run_id: str | None = None


class StudyRunner:
    """Runs one study (see module docstring).  ``run()`` returns a ``StudyResult``."""

    def __init__(self, cfg: StudyConfig, *, resume: bool = False, fresh: bool = False,
                 progress: Progress | None = None, poll: float = 0.5, grace: float = 5.0,
                 clock: Callable[[], float] = time.time):
        self.cfg = cfg
        self.dir = Path(cfg.output) / cfg.study
        self.state_path = self.dir / "state.json"
        self.progress = progress or Progress()
        self.poll = poll
        self.clock = clock
        self.resume, self.fresh = resume, fresh
        self.running: dict[ray.ObjectRef, Running] = {}
        self.stopping: dict[ray.ObjectRef, float] = {}   # cancelled trials -> kill deadline
        self.grace = grace
        self.session = _Session()
        self.optimizer: Optimizer | None = None
        self.tracker: StudyTracker | None = None
        self._t0 = clock()
        self._to_log: list[int] = []   # recorded trials waiting for MLflow (after the refill)

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
            self.optimizer = Optimizer(self.cfg.space, self.cfg.settings, clock=self.clock)
            return []
        state = json.loads(self.state_path.read_text())
        if state.get("format") != STATE_FORMAT or state.get("version") != STATE_VERSION:
            raise ConfigError(f"{self.state_path} is not a study state this version reads "
                              f"(format {state.get('format')!r}, version {state.get('version')!r})")
        new = self.cfg.resolved()
        changed = [k for k in IDENTITY if json.dumps(state["config"][k], sort_keys=True, default=str)
                   != json.dumps(new[k], sort_keys=True, default=str)]
        if changed:
            raise ConfigError(f"--resume: the config changed {changed} since the study started; "
                              "only run, ray, mlflow and output may change (use --fresh or a new "
                              "study name)")
        self.optimizer = Optimizer.from_state(state["optimizer"], clock=self.clock)
        s = state["session"]
        self.session = _Session(float(s["elapsed_before"]), float(s["busy_seconds"]),
                                {int(k): v for k, v in s["outcomes"].items()}, s["run_id"])
        return [tr.trial_id for tr in self.optimizer.trials if tr.status == RUNNING]

    def _save(self) -> None:
        assert self.optimizer is not None
        state = {"format": STATE_FORMAT, "version": STATE_VERSION, "config": self.cfg.resolved(),
                 "optimizer": self.optimizer.state_dict(),
                 "session": {"elapsed_before": self.elapsed(), "busy_seconds": self.session.busy_seconds,
                             "outcomes": self.session.outcomes, "run_id": self.session.run_id}}
        fd, tmp = tempfile.mkstemp(dir=self.dir, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(state, fh, default=str)
        os.replace(tmp, self.state_path)

    def _start_tracking(self) -> None:
        cfg = self.cfg
        self.tracker = StudyTracker(cfg.mlflow["tracking_uri"], cfg.experiment, self.dir,
                                    run_name=cfg.study)
        params = {"trainable": cfg.trainable, "algorithm": cfg.settings.algorithm,
                  "objective": cfg.objective["metric"], "mode": cfg.objective["mode"],
                  "trials": cfg.run["trials"], "max_concurrent": cfg.run["max_concurrent"],
                  "cpus_per_trial": cfg.run["cpus_per_trial"], "seed": cfg.run["seed"],
                  "space": json.dumps(cfg.space), "constraint_handler": cfg.settings.constraint_handler,
                  "budget_limit": cfg.budget["limit"] if cfg.budget else None,
                  "budget_metric": cfg.budget["metric"] if cfg.budget else None,
                  "stop_margin": cfg.budget["stop_margin"] if cfg.budget else None}
        self.session.run_id = self.tracker.start(params, {"study": cfg.study},
                                                 resume_run_id=self.session.run_id)
        self.tracker.log_dict(cfg.resolved(), "config.json")

    # --- the loop ---------------------------------------------------------------------------

    def run(self) -> StudyResult:
        restart = self._prepare()
        opt = self.optimizer
        assert opt is not None
        self._start_tracking()
        self._log_unlogged()
        started_here = not ray.is_initialized()
        if started_here:
            _init_ray(self.cfg.ray["address"])
        task = ray.remote(num_cpus=self.cfg.run["cpus_per_trial"], max_retries=0)(execute_trial)
        self._warm_up()
        self._t0 = self.clock()
        limit = self.cfg.run["wall_clock_limit"]
        self.progress.message(self._banner(restart))
        try:
            with _StopOnSignal() as stop:
                for tid in restart:
                    opt.restart(tid)
                    self._launch(task, tid)
                while not stop.requested:
                    self._stop_overdue(self.clock())
                    out_of_time = limit is not None and self.elapsed() >= limit
                    if out_of_time:
                        for ref in list(self.running):
                            self._cancel(ref, KILLED,
                                         f"the study reached run.wall_clock_limit = {limit:g} s")
                    while (not out_of_time and len(self.running) < self.cfg.run["max_concurrent"]
                           and len(opt.trials) < self.cfg.run["trials"]):
                        self._launch(task, opt.suggest().trial_id)
                        self._save()
                    # MLflow after the refill: logging never keeps a free worker waiting
                    recorded = self._flush_log()
                    self.progress.update(self._snapshot(self.elapsed()), force=recorded > 0)
                    if not self.running:
                        break
                    ready, _ = ray.wait(list(self.running), num_returns=1,
                                        timeout=self._wait_time(limit))
                    for ref in ready:
                        self._collect(ref)
            status = KILLED if stop.requested else FINISHED
        except KeyboardInterrupt:   # a second Ctrl-C: stop at once
            status = KILLED
        for ref in self.stopping:
            ray.cancel(ref, force=True)
        if status == KILLED:
            for ref in self.running:
                ray.cancel(ref, force=True)
            self.progress.message(f"\ninterrupted: {len(self.running)} running trial(s) will start "
                                  f"again with --resume (state: {self.state_path})")
            self.running.clear()
        self._save()
        self._flush_log()
        if started_here:
            ray.shutdown()
        return self._finish(status)

    def elapsed(self) -> float:
        """Seconds this study has run, over all its sessions."""
        return self.session.elapsed_before + self.clock() - self._t0

    def _launch(self, task: Any, trial_id: int) -> None:
        opt = self.optimizer
        trial = opt.trials[trial_id]
        ref = task.remote(self.cfg.trainable, trial.config, self.cfg.trainable_options,
                          self.cfg.run["seed"] + trial_id)
        self.running[ref] = Running(trial_id, trial.start_time)

    def _wait_time(self, limit: float | None) -> float:
        """Until the next thing the loop must act on: a timeout, a budget stop, the wall clock."""
        wait = self.poll
        if limit is not None:
            wait = min(wait, max(limit - self.elapsed(), 0.0))
        return max(wait, 0.01)

    def _stop_overdue(self, now: float) -> None:
        if self.stopping:
            gone, _ = ray.wait(list(self.stopping), num_returns=len(self.stopping), timeout=0)
            for ref in gone:
                del self.stopping[ref]
            for ref, deadline in list(self.stopping.items()):
                if now > deadline:
                    ray.cancel(ref, force=True)
                    del self.stopping[ref]
        timeout = self.cfg.run["trial_timeout"]
        by_id = {r.trial_id: ref for ref, r in self.running.items()}
        if timeout is not None:
            for ref, r in list(self.running.items()):
                if now - r.start > timeout:
                    self._cancel(ref, TIMED_OUT, f"ran longer than run.trial_timeout = {timeout:g} s")
        for tid in self.optimizer.trials_to_stop(now):
            if tid in by_id and by_id[tid] in self.running:
                b = self.cfg.budget
                self._cancel(by_id[tid], TIMED_OUT, f"passed the budget of {b['limit']:g} s by more "
                             f"than budget.stop_margin = {b['stop_margin']:g}")

    def _warm_up(self) -> None:
        """One short run per slot, so no trial's run time includes a worker's start-up (seconds
        for torch), which would count against its budget."""
        cpus = self.cfg.run["cpus_per_trial"]
        warm = ray.remote(num_cpus=cpus, max_retries=0)(warm_up)
        center = self.optimizer.space.decode(np.full(self.optimizer.space.dim, 0.5))
        refs = [warm.remote(self.cfg.trainable, center, self.cfg.trainable_options)
                for _ in range(self.cfg.run["max_concurrent"])]
        try:
            ray.get(refs)
        except rex.RayError as exc:   # a trainable that fails here fails in the study too
            self.progress.message(f"warning: warm-up run failed ({_first_line(exc)})")

    def _cancel(self, ref: ray.ObjectRef, status: str, reason: str) -> None:
        """Stop a trial: KeyboardInterrupt in its worker, which stays alive (and warm); a
        trial still running ``grace`` seconds later is killed with its worker."""
        r = self.running.pop(ref)
        ray.cancel(ref, force=False)
        self.stopping[ref] = self.clock() + self.grace
        end = self.clock()
        self._record(r, status, reason, {"runtime": end - r.start}, end, info={})

    def _collect(self, ref: ray.ObjectRef) -> None:
        r = self.running.pop(ref)
        end = self.clock()
        metrics = {"runtime": end - r.start}
        try:
            out = ray.get(ref)
        except rex.RayTaskError as exc:
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            msg = str(cause).strip().splitlines()
            reason = f"{type(cause).__name__}: {msg[-1] if msg else ''}"
            return self._record(r, FAILED, reason, metrics, end, info={})
        except rex.OutOfMemoryError as exc:
            return self._record(r, KILLED, f"killed by Ray's memory monitor: {_first_line(exc)}",
                                metrics, end, info={})
        except rex.RayError as exc:   # worker crashed, node died, object lost
            return self._record(r, FAILED, f"worker or node lost ({type(exc).__name__}): "
                                f"{_first_line(exc)}", metrics, end, info={})
        metrics.update(out["metrics"])
        info = {"node": out["node_id"], "host": out["host"]}
        self._record(r, FINISHED, None, metrics, end, info)

    def _record(self, r: Running, status: str, reason: str | None, metrics: dict[str, float],
                end: float, info: dict[str, str]) -> None:
        """Tell the optimizer and save the state; MLflow follows in ``_flush_log`` (a crash in
        between leaves a result that ``_log_unlogged`` sends on resume)."""
        opt = self.optimizer
        key = self.cfg.objective["metric"]
        if status == FINISHED:
            if key not in metrics:
                status, reason = FAILED, (f"the trial reported no '{key}' (objective.metric); it "
                                          f"reported {sorted(metrics)}")
            else:
                try:
                    opt.tell(r.trial_id, metrics[key], metrics=metrics, finish_time=end)
                except ValueError as exc:
                    status, reason = FAILED, str(exc)
                if opt.trials[r.trial_id].status != COMPLETED and status == FINISHED:
                    status, reason = FAILED, opt.trials[r.trial_id].reason
        if status != FINISHED:
            opt.fail(r.trial_id, f"{status}: {reason}", metrics=metrics, finish_time=end)
        self.session.busy_seconds += end - r.start
        self.session.outcomes[r.trial_id] = {"status": status, "reason": reason, **info}
        self._save()
        self._to_log.append(r.trial_id)

    # --- MLflow -----------------------------------------------------------------------------

    def _trial_record(self, trial_id: int) -> TrialRecord:
        tr = self.optimizer.trials[trial_id]
        out = self.session.outcomes[trial_id]
        metrics = dict(tr.metrics)
        if tr.value is not None:
            metrics.setdefault(self.cfg.objective["metric"], tr.value)
        for c in self.optimizer.constraints:
            g = c.observed(tr)
            if g is not None:
                metrics[f"g_{c.metric}"] = g
        tags = {"trial_id": str(trial_id), "status": out["status"],
                "pending_at_suggest": str(tr.pending_at_suggest)}
        for key in ("node", "host", "reason"):
            if out.get(key):
                tags[key] = str(out[key])
        return TrialRecord(trial_id, dict(tr.config), out["status"], metrics, tags,
                           tr.start_time, tr.finish_time or tr.start_time)

    def _flush_log(self) -> int:
        """Log the trials recorded since the last call; returns how many."""
        done, self._to_log = self._to_log, []
        for tid in done:
            self._log_trial(tid)
        return len(done)

    def _log_trial(self, trial_id: int) -> None:
        self.tracker.log_trial(self._trial_record(trial_id))
        snap = self._snapshot(self.elapsed())
        metrics = {"finished": snap.done, "failed": snap.failed, "over_budget": snap.violations,
                   "utilization": snap.utilization}
        if snap.best is not None:
            metrics["best_so_far"] = snap.best
        self.tracker.log_progress(len(self.session.outcomes), metrics)

    def _log_unlogged(self) -> None:
        """Results saved in the state but not yet in MLflow (a crash between the two)."""
        logged = self.tracker.logged_trial_ids()
        for tid in sorted(set(self.session.outcomes) - logged):
            self._log_trial(tid)

    # --- reporting --------------------------------------------------------------------------

    def _snapshot(self, elapsed: float) -> Snapshot:
        opt = self.optimizer
        outcomes = self.session.outcomes
        feasible = bool(opt.constraints)
        best = opt.best(feasible=feasible)
        now = self.clock()
        busy = self.session.busy_seconds + sum(now - r.start for r in self.running.values())
        slots = self.cfg.run["max_concurrent"]
        return Snapshot(done=sum(o["status"] == FINISHED for o in outcomes.values()),
                        failed=sum(o["status"] != FINISHED for o in outcomes.values()),
                        running=len(self.running), total=self.cfg.run["trials"],
                        best=None if best is None else best.value,
                        best_trial=None if best is None else best.trial_id,
                        violations=self._violations(),
                        utilization=min(busy / (slots * elapsed), 1.0) if elapsed > 0 else 0.0,
                        elapsed=elapsed)

    def _violations(self) -> int:
        opt = self.optimizer
        return sum(any((c.observed(tr) or 0.0) > 0 for c in opt.constraints)
                   for tr in opt.trials if tr.status != RUNNING)

    def _banner(self, restart: list[int]) -> str:
        cfg = self.cfg
        budget = (f", budget {cfg.budget['metric']} <= {cfg.budget['limit']:g} s"
                  if cfg.budget else "")
        where = cfg.ray["address"] or "local Ray"
        again = f", {len(restart)} interrupted trial(s) start again" if restart else ""
        return (f"study {cfg.study}: {cfg.trainable}, {cfg.settings.algorithm}, "
                f"{cfg.run['trials']} trials, {cfg.run['max_concurrent']} at once on {where}{budget}"
                f"{again}; MLflow {cfg.mlflow['tracking_uri']} experiment '{cfg.experiment}'")

    def _finish(self, status: str) -> StudyResult:
        elapsed = self.elapsed()
        snap = self._snapshot(elapsed)
        table = self.dir / "trials.csv"
        rows = self._write_table(table)
        paths = [table]
        try:
            from .plots import study_plots

            records = [self._trial_record(tid) for tid in sorted(self.session.outcomes)]
            budget = self.cfg.budget["limit"] if self.cfg.budget else None
            paths += study_plots(records, self.dir, self.cfg.objective["metric"], budget,
                                 self.cfg.objective["mode"],
                                 runtime_metric=self.cfg.budget["metric"] if self.cfg.budget
                                 else "runtime")
        except Exception as exc:  # a plot must never cost the study its results
            self.progress.message(f"warning: plots not written: {exc}")
        self.tracker.log_artifacts(paths)
        unlogged = self.tracker.finish(FINISHED if status == FINISHED else KILLED)
        self.session.run_id = self.tracker.run_id or self.session.run_id   # real id once known
        self._save()
        top = sorted((r for r in rows if r["status"] == FINISHED),
                     key=lambda r: r[self.cfg.objective["metric"]],
                     reverse=self.cfg.objective["mode"] == "max")[:10]
        cols = ["trial", "status", self.cfg.objective["metric"], "runtime", "over_budget",
                *self.cfg.space]
        self.progress.message("\n" + summary_table(top, cols))
        self.progress.message(
            f"\n{snap.done} finished, {snap.failed} failed/stopped, {snap.violations} over budget, "
            f"workers busy {100 * snap.utilization:.0f}% of {elapsed:.0f} s.\n"
            f"state and trial table: {self.dir}/; MLflow run {self.session.run_id} "
            f"({self.cfg.mlflow['tracking_uri']}): browse with `mlflow ui --backend-store-uri "
            f"{self.cfg.mlflow['tracking_uri']}`" + (f"\n{unlogged} MLflow item(s) are not logged yet "
                                                     f"(kept in {self.dir}); --resume sends them"
                                                     if unlogged else ""))
        return StudyResult(status, self.optimizer, self.session.outcomes, self.session.run_id,
                           self.dir, elapsed, snap.utilization, unlogged)

    def _write_table(self, path: Path) -> list[dict[str, Any]]:
        opt, key = self.optimizer, self.cfg.objective["metric"]
        rows = []
        for tid in sorted(self.session.outcomes):
            tr, out = opt.trials[tid], self.session.outcomes[tid]
            over = any((c.observed(tr) or 0.0) > 0 for c in opt.constraints)
            rows.append({"trial": tid, "status": out["status"], key: tr.value,
                         "runtime": tr.metrics.get("runtime"), "over_budget": int(over),
                         "train_time": tr.metrics.get("train_time"),
                         "pending_at_suggest": tr.pending_at_suggest, "start": tr.start_time,
                         "finish": tr.finish_time, "node": out.get("node"),
                         "reason": out.get("reason"), **tr.config})
        if rows:
            with open(path, "w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
        return rows


def _init_ray(address: str | None) -> None:
    """A local Ray instance (address None) or a connection to a cluster (``auto``, host:port,
    ``ray://host:10001``)."""
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"ray.address: could not connect to Ray at {address!r}: {exc}") from exc


class _StopOnSignal:
    """The first Ctrl-C or SIGTERM asks the loop to stop after its current step (the state
    stays consistent); a second Ctrl-C raises KeyboardInterrupt at once."""

    def __init__(self) -> None:
        self.requested = False
        self._old: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        print(f"\n{signal.Signals(signum).name}: stopping after the current step "
              "(Ctrl-C again to stop at once)", flush=True)

    def __enter__(self) -> "_StopOnSignal":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__
