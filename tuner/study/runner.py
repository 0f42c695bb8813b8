"""Runs one study: ``StudyRunner`` prepares it (a new state, or the saved one on ``--resume``),
starts the executor it is handed (Ray: ``tuner.integrations.ray.executor``) and the tracker
(MLflow: ``tuner.integrations.mlflow``), measures a relative budget, then runs the trials
through the one study loop (``tuner.loop.loop.StudyLoop``) with the wall clock as the
optimizer's clock, and reports.  The loop's rules (slots, timeouts, budget stops, the
wall-clock limit) are the simulator's; what a study adds are the loop's callbacks
(``callbacks``, ``tracking.LogToTracker``, ``budget.NothingFitsWarning``).

A trial's outcome is its ``tuner.core.trial.Status`` (the MLflow status tag):

=========  ================================================================================
FINISHED   returned its metrics; told to the optimizer (``tell``)
FAILED     raised, returned no objective, or lost its worker or node; ``fail``: censored
TIMED_OUT  ran past ``run.trial_timeout`` or past the budget by ``budget.stop_margin``; ``fail``
           with its elapsed time as run time, so it counts as the budget violation it is
KILLED     stopped because the study hit its wall-clock limit, or killed by Ray's memory
           monitor; ``fail``
=========  ================================================================================

Nothing is lost on a stop: the study state (optimizer state + where each trial ran + MLflow run
id) is written once per step of the loop that started or ended a trial (``callbacks.SaveState``).
Ctrl-C or SIGTERM cancels the running trials and leaves them RUNNING in the state; ``--resume``
starts them again under the same trial ids (``Optimizer.started``), logs whatever finished but
was not logged yet, and goes on.  A hard kill loses at most the results that had not been
written yet, and those trials rerun on resume.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any, Callable

from tuner.core.optimizer import Optimizer
from tuner.core.persist import StateError
from tuner.core.research import GROUP_OF
from tuner.core.settings import Settings, by_name
from tuner.core.trial import Status
from tuner.loop.loop import FailFast, Limits, StopOnSignal, StudyFailed, StudyLoop

from .budget import (NothingFitsWarning, budget_text, measure_budget, reference_config,
                     replay_stopping, stopping_rules)
from .callbacks import CURVES_CSV, Curves, SaveState, ShowProgress, TrialTable, read_curves
from .defaults import DEFAULT_STUDY, RUNTIME_STOP_MARGIN, study_optimizer_defaults
from .lock import StudyLock
from .schema import ConfigError, StudyConfig
from .config import earlier_default_budget, earlier_unset_stop
from .disk import DISK_ERRORS, StudyUnwritable, unwritable
from .executor import Executor
from .progress import Progress
from .report import StudyResult, banner, finish
from .state import StudyStateFile, backup_path
from .study import Session, Study
from .tracking import LogToTracker, Tracker, log_budget, study_params
from .warm import (Carried, Earlier, ReadTracker, carry, context_space, earlier_studies,
                   study_context)

# Parts of the resolved config that define the study; the rest (limits, addresses) may change
# between sessions of one study.
IDENTITY = ("trainable", "trainable_options", "space", "objective", "budget", "optimizer",
            "fidelity", "early_stopping", "context", "context_space", "warm_start")


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _differing(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    return [k for k in set(saved) | set(now) if _text(saved.get(k)) != _text(now.get(k))]


def at_defaults(keys: list[str], now: dict[str, Any], context: bool = False) -> bool:
    """Every one of these optimizer settings is at today's study default (with or without a
    ``context``): a resumed study whose saved settings differ only there differs because a
    default changed since it started, not because the user asked for it."""
    defaults = {**by_name(Settings().to_dict()),
                **study_optimizer_defaults(now.get("algorithm"), context)}
    return all(k in defaults and _text(now.get(k)) == _text(defaults[k]) for k in keys)


def kept_settings(saved: dict[str, Any], new: dict[str, Any], context: bool) -> list[str]:
    """The optimizer settings a resumed study keeps from its saved config (``saved``), because
    a default changed since it started (``at_defaults``); ConfigError naming what the user
    changed in ``new`` (the resolved config, optimizer settings by name) otherwise."""
    saved = {**saved, "optimizer": by_name(saved["optimizer"] or {})}
    changed = [k for k in IDENTITY if _text(saved.get(k)) != _text(new[k])]
    kept: list[str] = []
    if "optimizer" in changed:
        diff = sorted(_differing(saved["optimizer"], new["optimizer"]))
        if at_defaults(diff, new["optimizer"], context):
            kept = diff
            changed.remove("optimizer")
        else:     # name what the user changed, not a default that moved since
            asked = ["research." * (k in GROUP_OF) + k for k in diff
                     if not at_defaults([k], new["optimizer"], context)]
            changed[changed.index("optimizer")] = "optimizer: " + ", ".join(asked)
    if changed:
        raise ConfigError(f"--resume: the config changed {changed} since the study started; "
                          "only run, ray, mlflow and output may change (use --fresh or a new "
                          "study name)")
    return kept


def earlier_records(directory: Path) -> list[str]:
    """The files an earlier run of a study left in its folder that record trials (none: no
    folder, or only the MLflow tracker's own files, which a run killed while it started leaves:
    the next start adopts its parent run)."""
    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith("mlflow_"))


def lost_state(path: Path, found: list[str]) -> str:
    """What ``--resume`` says when the state file is gone but an earlier run left records."""
    shown = ", ".join(found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
    text = (f"--resume: {path} is missing, but {path.parent} holds {shown} of an earlier run; "
            "the optimizer's state cannot be rebuilt from them. Put the state file back, or "
            "start over with --fresh (the folder is kept under a new name)")
    bak = backup_path(path)
    if bak.exists():
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(bak.stat().st_mtime))
        text += (f"; {bak} is the state as of {when} (with {bak.name}.journal, if any): a "
                 "study resumed from it runs the trials since then again")
    return text


class StudyRunner:
    """Runs one study (module docstring) on ``executor``, recording it with the tracker
    ``make_tracker(cfg)`` builds; ``run()`` returns a ``StudyResult``."""

    def __init__(self, cfg: StudyConfig, executor: Executor,
                 make_tracker: Callable[[StudyConfig], Tracker], *, resume: bool = False,
                 fresh: bool = False, progress: Progress | None = None, grace: float = 5.0,
                 clock: Callable[[], float] = time.time, read_tracker: ReadTracker | None = None):
        self.cfg, self.executor, self.make_tracker = cfg, executor, make_tracker
        self.read_tracker = read_tracker   # an earlier study whose folder is gone (warm_start)
        self.earlier: list[Earlier] = []
        self.carried: list[Carried] = []
        self.state_file = StudyStateFile(cfg.directory / "state.json")
        self.progress = progress or Progress()
        self.clock, self.grace = clock, grace
        self.resume, self.fresh = resume, fresh
        self.session = Session()
        self.saved_curves: dict[int, list[dict[str, Any]]] = {}   # ended, not logged (resume)
        self.study: Study | None = None
        self.tracker: Tracker | None = None
        self._t0 = clock()

    @property
    def state_path(self):
        return self.state_file.path

    def run(self) -> StudyResult:
        """Start the executor, warm the workers up, measure a relative budget, then run the
        trials; each start-up step is printed with the seconds it took.  The study is locked
        while it runs (``lock.StudyLock``): a second start of it is refused."""
        with StudyLock(self.cfg.output, self.cfg.study) as lock:
            if lock.taken_over:
                self.progress.message(f"the study's last run ({lock.taken_over}) ended without "
                                      "closing it (killed?); this run takes it over")
            try:
                return self._run()
            except OSError as exc:
                if isinstance(exc, StudyUnwritable) or (exc.filename is None
                                                         and exc.errno not in DISK_ERRORS):
                    raise
                raise StudyUnwritable(unwritable(exc, self.state_path)) from exc
            finally:
                if self.tracker is not None:
                    self.tracker.close()

    def _run(self) -> StudyResult:
        optimizer, restart = self._prepare()
        if optimizer is not None:
            self._open(optimizer).write()     # a resumed study: the table as the state has it
        self.progress.message(banner(self.cfg, self.executor.where, restart))
        self._say_carried()
        tracking = _InThread(self._start_tracking)   # the tracker starts while the executor does
        try:
            self.executor.start(self.progress)
            self.executor.warm_up(self.progress, reference_config(self.cfg))
            if self.cfg.budget_pending:
                self.cfg = measure_budget(self.cfg, self.executor, self.progress)
                self.progress.message(f"budget: {budget_text(self.cfg.budget)}")
                self._open(self._new_optimizer())
                self._say_carried()
            elif self.cfg.budget and self.cfg.budget.relative:
                self.progress.message(f"budget: {budget_text(self.cfg.budget)} (measured when the "
                                      "study started; kept on --resume)")
            ready = self._say_tracking(tracking)
            log_budget(self.tracker, self.cfg)
            self.logger = LogToTracker(self.study, self.tracker)
            self.logger.log_unlogged(ask=ready)
        except BaseException:
            if (tracking.finished(self.cfg.mlflow.timeout) and self.tracker is not None
                    and self.tracker.run_id is not None):
                self.tracker.finish("FAILED")   # not left RUNNING; the next start adopts it
            self.executor.close()
            raise
        try:
            status, failure = self._loop(restart)
            self.study.optimizer.run_fits_in(None)     # the executor's fit pool closes below
            self.saver.save()
            self.logger.flush(final=True)
        except OSError:            # a write failed: the disk is full, or the folder read-only
            self._close_failed()
            raise
        closing = _InThread(self.executor.close)   # Ray shuts down while the report is written
        try:
            result = finish(self.study, self.table, self.tracker, self.progress, self.saver.save,
                            status, failure)
        except BaseException as exc:
            closing.result(raise_error=False)      # the report's error is the one to see
            if isinstance(exc, OSError):
                self._close_failed()   # the parent run may be ended twice: FAILED, as it ended
            raise
        closing.result()
        return result

    def _close_failed(self) -> None:
        """Ray shut down and the MLflow parent run ended FAILED (the next start adopts it), after
        a write the study needs failed; nothing more is written to the study folder."""
        self.executor.close()
        if self.tracker is not None and self.tracker.run_id is not None:
            self.tracker.finish("FAILED")

    def _open(self, optimizer: Optimizer) -> TrialTable:
        """The study in memory, with its state saver and trial table; returns the table."""
        self.study = Study(self.cfg, optimizer, self.session, self.clock, self._t0)
        self.study.curves.update(self.saved_curves)
        self.saver = SaveState(self.study, self.state_file)
        self.table = TrialTable(self.study, self.cfg.directory / "trials.csv")
        return self.table

    def _prepare(self) -> tuple[Optimizer | None, list[int]]:
        """Create or reload the optimizer (None while a relative budget is not measured);
        returns it and the trials to start again (resume)."""
        cfg, path = self.cfg, self.state_path
        exists = path.exists()
        found = [] if exists else earlier_records(cfg.directory)
        if (exists or found) and not (self.resume or self.fresh):
            what = f"a state at {path}" if exists else f"{', '.join(found)} in {cfg.directory}"
            raise ConfigError(f"study '{cfg.study}' already has {what}; pass --resume "
                              "(tuner.run(..., resume=True)) to continue it or --fresh "
                              "(fresh=True) to start it over (the old folder is kept under a new "
                              "name)")
        if self.resume and exists:
            return self._resumed()
        if self.resume and found:
            raise ConfigError(lost_state(path, found))
        if self.resume and not exists:
            self._refuse_what_only_mlflow_holds()
        # a new study: every check before --fresh moves anything
        self.earlier = earlier_studies(cfg, self.read_tracker)
        if self.fresh and (exists or found):
            kept = cfg.directory.with_name(f"{cfg.directory.name}.{time.strftime('%Y%m%d-%H%M%S')}")
            shutil.move(str(cfg.directory), kept)
            self.progress.message(f"--fresh: moved the earlier study folder to {kept}")
        cfg.directory.mkdir(parents=True, exist_ok=True)
        if self.resume:
            self.progress.message(f"--resume: no study at {cfg.directory}; starting a new one")
        if cfg.budget_pending:   # created once the reference run has been measured
            return None, []
        return self._new_optimizer(), []

    def _refuse_what_only_mlflow_holds(self) -> None:
        """--resume of a study whose folder is gone: the trials MLflow holds of it are no state
        to go on from, and beginning anew beside them would not be what was asked; ConfigError
        if MLflow answers (within ``mlflow.timeout``) with any."""
        cfg, uri = self.cfg, self.cfg.mlflow.tracking_uri
        if self.read_tracker is None:
            return
        look = _InThread(lambda: self.read_tracker(cfg.study, cfg))
        if not look.finished(cfg.mlflow.timeout):
            self.progress.message(f"--resume: MLflow ({uri}) did not answer in "
                                  f"{cfg.mlflow.timeout:g} s: not checked for runs of this study")
            return
        try:
            earlier = look.result()
        except Exception as exc:  # noqa: BLE001 - a store MLflow cannot read: say so, go on
            self.progress.message(f"--resume: could not check MLflow ({uri}) for runs of this "
                                  f"study: {type(exc).__name__}: {exc}")
            return
        if earlier is not None and earlier.trials:
            raise ConfigError(
                f"--resume: no study folder at {cfg.directory}, but MLflow ({uri}) holds "
                f"{len(earlier.trials)} trials of study '{cfg.study}' ({earlier.source}); without "
                "the folder's state they cannot be resumed: run without --resume to begin the "
                "study anew beside them, or learn from them in a study of another name with "
                f"warm_start: [{cfg.study}]")

    def _resumed(self) -> tuple[Optimizer, list[int]]:
        """The saved study (``_restore``); a state file that cannot be read, or holds what no
        study writes, is a ConfigError naming it (before Ray starts)."""
        try:
            return self._restore()
        except StateError as exc:
            raise ConfigError(f"--resume: {exc}") from None
        except ConfigError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise ConfigError(f"--resume: {self.state_path} holds a damaged study state "
                              f"({type(exc).__name__}: {exc})") from None

    def _restore(self) -> tuple[Optimizer, list[int]]:
        """The saved study: its optimizer with the settings it started with, its session and
        curves; returns the optimizer and the trials to start again."""
        version, state = self.state_file.read()
        cfg = self._with_saved_budget(state["config"].get("budget") or {})
        new = cfg.resolved()
        new["optimizer"] = by_name(new["optimizer"])
        kept = kept_settings(state["config"], new, cfg.context is not None)
        optimizer = Optimizer.from_state(state["optimizer"], clock=self.clock)
        if (
            optimizer.settings.output_warp != new["optimizer"]["output_warp"]
            and "output_warp" not in kept
        ):
            # auto saved before it meant tail-or-copula (state.built_with)
            kept.append("output_warp")
        if kept:      # the study goes on as it started: its saved settings, said once
            self.cfg = dataclasses.replace(cfg, settings=optimizer.settings)
            # a setting newer than the state: its value there
            was = by_name(optimizer.settings.to_dict())
            self.progress.message(
                "--resume: the study keeps the settings it started with: "
                + "; ".join(
                    f"optimizer.{'research.' * (k in GROUP_OF)}{k} = {json.dumps(was[k])} (the "
                    "default is now "
                    f"{json.dumps(new['optimizer'][k])})"
                    for k in kept
                )
            )
        s = state["session"]
        where = (
            s["where"]
            if version >= 2
            else {  # 1: outcomes held it
                k: {key: o[key] for key in ("node", "host") if o.get(key)}
                for k, o in s["outcomes"].items()
            }
        )
        self.session = Session(float(s["elapsed_before"]), float(s["busy_seconds"]),
                               {int(k): v for k, v in where.items()}, s["run_id"])
        self.saved_curves = {int(k): v for k, v in (s.get("curves") or {}).items()}
        return optimizer, [tr.trial_id for tr in optimizer.running]

    def _with_saved_budget(self, old_budget: dict[str, Any]) -> StudyConfig:
        """The study's config with the budget it was saved with, where that stands: the
        built-in study's of before an upgrade, a relative budget's measured limit."""
        cfg = self.cfg
        if earlier_default_budget(old_budget, cfg.budget):    # an upgrade changed the built-in one
            self.cfg = cfg = cfg.with_saved_budget(old_budget)
            self.progress.message(f"--resume: the study keeps the budget it started with: "
                                  f"{budget_text(cfg.budget)} (the built-in study's budget is now "
                                  f"{DEFAULT_STUDY['budget']['metric']})")
        elif earlier_unset_stop(old_budget, cfg.budget):       # ... or a wall-time budget's stop
            self.cfg = cfg = cfg.with_saved_budget(old_budget)
            self.progress.message(f"--resume: the study keeps the budget it started with: "
                                  f"{budget_text(cfg.budget)}, no run stopped over it (a "
                                  f"wall-time budget now stops a run at "
                                  f"{1 + RUNTIME_STOP_MARGIN:g} x the limit: budget.stop_margin)")
        elif cfg.budget_pending and old_budget.get("seconds") is not None:
            # a relative budget keeps the limit measured when the study started
            self.cfg = cfg = cfg.with_budget(old_budget["seconds"],
                                             old_budget.get("reference_seconds"))
        return cfg

    def _new_optimizer(self) -> Optimizer:
        """A new study's optimizer, at its context, told the earlier studies' trials (``warm``)."""
        cfg = self.cfg
        opt = Optimizer(cfg.space, cfg.settings, clock=self.clock,
                        context_space=context_space(cfg, self.earlier))
        self.carried = carry(opt, self.earlier)
        return opt

    def _say_carried(self) -> None:
        for got in self.carried:
            self.progress.message(f"warm start: {got.text()}")

    def _say_tracking(self, tracking: _InThread) -> bool:
        """Wait for the tracker (``START_WAIT`` or ``mlflow.timeout`` seconds, the shorter,
        after it began starting beside Ray), say how it went and return whether it is ready.  A
        tracker still starting goes on in the background: the study's calls queue behind its
        start; the trials need none."""
        mlflow, uri = self.cfg.mlflow, self.cfg.mlflow.tracking_uri
        bound = min(mlflow.timeout, START_WAIT)
        left = max(bound - (time.monotonic() - tracking.started), 0.0)
        if tracking.finished(left) or self.tracker is None:
            took = tracking.result()
            self.progress.message(f"MLflow {uri}, experiment '{self.cfg.experiment}': ready in "
                                  f"{took:.1f} s (started alongside Ray)")
            return True
        self.progress.message(f"MLflow {uri} has not answered in {bound:g} s: the study "
                              f"goes on; what it logs is kept in {self.cfg.directory} and sent "
                              "when MLflow answers (or by --resume)")
        return False

    def _start_tracking(self) -> float:
        """Start the tracker and its parent run; returns the seconds it took.  Runs in a thread
        beside the executor's start-up (``_run``); the budget follows in ``log_budget`` once it
        is measured."""
        t0 = time.perf_counter()
        self.tracker = self.make_tracker(self.cfg)
        self.session.run_id = self.tracker.start(study_params(self.cfg), {"study": self.cfg.study},
                                                 resume_run_id=self.session.run_id)
        return time.perf_counter() - t0

    def _loop(self, restart: list[int]) -> tuple[str, str | None]:
        """The trials, until the study ends, fails fast or is stopped: (status, failure)."""
        study, progress = self.study, self.progress
        opt, run = study.optimizer, self.cfg.run
        opt.run_fits_in(self.executor.fit_pool())
        study.t0 = self.clock()
        with StopOnSignal() as stop:
            backend = self.executor.backend(self.clock, self.grace, stop)
            # armed only while no trial has ended (not on a resume of a study that ran)
            fail_fast = FailFast(min(run.fail_fast, run.trials) if not study.n_ended() else 0)
            rules = stopping_rules(self.cfg, opt)
            if rules and study.n_ended():      # a resume: the rules go on from the curves so far
                replay_stopping(rules, opt, read_curves(self.cfg.directory / CURVES_CSV,
                                                        study.metric))
            loop = StudyLoop(
                opt,
                backend,
                self._limits(),
                metric=study.metric,
                callbacks=[
                    Curves(study, self.cfg.directory / CURVES_CSV),
                    self.saver,
                    self.table,
                    self.logger,
                    fail_fast,
                    NothingFitsWarning(study, progress),
                    ShowProgress(study, progress, rules,
                                 self.cfg.fidelity.metric if self.cfg.fidelity else "step"),
                ],
                should_stop=stop,
                fidelity=self.cfg.fidelity,
                stopping=rules,
                context=study_context(self.cfg, opt),
            )
            study.running = loop.running
            failure = None
            try:
                done = loop.run(restart=[(tid, opt.trials[tid].config) for tid in restart])
            except KeyboardInterrupt:   # a second Ctrl-C: stop at once
                backend.abandon()
                done = False
            except StudyFailed as exc:
                backend.abandon()
                done, failure = False, str(exc)
            backend.close()
        if done and loop.held_at is not None:
            limit = self.cfg.run.wall_clock_limit
            left = loop.limits.deadline - loop.held_at
            progress.message(f"\nstarted no run after {loop.held_at - study.t0:.1f} s: with "
                             f"{left:.1f} s left of run.wall_clock_limit = {limit:g} s, less than "
                             f"any run took, none could finish (optimizer.idle_near_deadline)")
        if failure:
            progress.message(f"\nstopped: {failure}")
        elif not done:
            progress.message(f"\ninterrupted: {len(loop.running)} running trial(s) will "
                             f"start again with --resume (state: {self.state_path})")
        return (Status.FINISHED if done else Status.FAILED if failure else Status.KILLED), failure

    def _limits(self) -> Limits:
        """The loop's limits: slots, trial timeout, wall-clock deadline (this session's share of
        ``run.wall_clock_limit``), and the reasons a stopped trial is given."""
        run, b, study = self.cfg.run, self.cfg.budget, self.study
        limit = run.wall_clock_limit
        budget_reason = "passed the budget by more than budget.stop_margin"
        if b is not None and b.stop_margin is not None:
            budget_reason = (f"passed the budget of {b.seconds:.3g} s by more than "
                             f"budget.stop_margin = {b.stop_margin:g}")
        return Limits(
            run.trials - study.n_ended(),  # the restarted ones count as starts
            slots=run.max_concurrent,
            trial_timeout=run.trial_timeout,
            deadline=None if limit is None else study.t0 + limit - self.session.elapsed_before,
            deadline_reason=f"the study reached run.wall_clock_limit = {limit} s",
            budget_reason=budget_reason,
        )


# the longest a study's start waits for MLflow (a local sqlite store is ready in 2-7 s, beside
# Ray's start-up); ``mlflow.timeout`` if shorter
START_WAIT = 10.0


class _InThread:
    """Call ``fn`` in a thread now; ``result()`` waits for it and returns its value (or raises
    its exception)."""

    def __init__(self, fn: Callable[[], Any]):
        self.started = time.monotonic()
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._call, args=(fn,), daemon=True)
        self._thread.start()

    def _call(self, fn: Callable[[], Any]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:   # handed to the caller of result()
            self._error = exc

    def finished(self, timeout: float) -> bool:
        """Whether ``fn`` returned (or raised) within ``timeout`` seconds from now."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def result(self, raise_error: bool = True) -> Any:
        self._thread.join()
        if self._error is not None and raise_error:
            raise self._error
        return self._value
