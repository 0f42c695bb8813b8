"""What a study tells its user: the banner, and at the end the best trials, the best trial
(``best.json``/``best.yaml``), the plots, why nothing finished if nothing did, and the summary;
``StudyResult`` is what ``tuner.run`` hands back."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from tuner.core.optimizer import Optimizer
from tuner.core.persist import write_atomic, write_json
from tuner.core.trial import Status, mode_sign

from .budget import budget_text, format_config
from .callbacks import CURVES_CSV, TrialTable, read_curves
from .schema import StudyConfig
from .progress import Progress, not_finished, rank_finished, summary_table
from .study import Study, own_trials
from .tracking import Tracker, browse_text
from .warm import carried_correlation, carried_counts


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
        return sum(tr.status == status for tr in own_trials(self.optimizer))

    @property
    def outcomes(self) -> dict[int, dict[str, Any]]:
        """Every trial that ended: its status, reason and where it ran."""
        return {tr.trial_id: {"status": str(tr.status), "reason": tr.reason,
                              **self.where.get(tr.trial_id, {})}
                for tr in own_trials(self.optimizer) if tr.status != Status.RUNNING}

    @property
    def best(self) -> dict[str, Any] | None:
        """The best finished trial within every constraint (the budget): its id, config,
        objective value and metrics; None when no trial is."""
        tr = self.optimizer.best(feasible=True, trials=own_trials(self.optimizer))
        if tr is None:
            return None
        return {"trial_id": tr.trial_id, "config": dict(tr.config), "value": tr.value,
                "metrics": dict(tr.metrics)}


def banner(cfg: StudyConfig, where: str, restart: list[int]) -> str:
    """The study's first line: what runs, how many, where, under which budget, logged where."""
    b = cfg.budget
    budget = ""
    if b is not None:
        budget = (
            f", budget {b.metric} <= {b.multiple:g} x a reference run measured at start-up"
            if cfg.budget_pending
            else f", budget {b.metric} <= {b.seconds:.3g} s"
        )
    again = f", {len(restart)} interrupted trial(s) start again" if restart else ""
    context = "" if cfg.context is None else f", context {format_config(cfg.context)}"
    until = cfg.settings.exact_until
    subset = ("" if until is None or cfg.run.trials <= until else
              f", exact GP up to {until} trials, then on a subset of {cfg.settings.subset_size}")
    goal = f"{'maximize' if cfg.objective.mode == 'max' else 'minimize'} {cfg.objective.metric}"
    return (f"study {cfg.study}: {goal}; {cfg.trainable}, {cfg.algorithm}{subset}, "
            f"{cfg.run.trials} trials, {cfg.run.max_concurrent} at once on {where}{budget}"
            f"{_stopping(cfg)}{context}{again}; MLflow {cfg.mlflow.tracking_uri} experiment "
            f"'{cfg.experiment}'")


def _stopping(cfg: StudyConfig) -> str:
    """The early-stopping rule of a study whose runs report progress, as the banner says it."""
    fid, rule = cfg.fidelity, cfg.early_stopping.rule
    if fid is None:
        return ""
    said = ("early stopping by the curve rule (the default; early_stopping: {rule: none} "
            "turns it off)" if rule == "auto" else f"early stopping by the {rule} rule"
            if rule != "none" else "no early stopping on the score")
    return f", runs report {fid.metric} up to {fid.max:g}: {said}"


def finish(study: Study, table: TrialTable, tracker: Tracker, progress: Progress,
           save: Callable[[], None], status: str, failure: str | None = None) -> StudyResult:
    """The study's end: the trial table anew, the best trial's files, the plots, the tracker
    finished (``study.session.run_id`` then holds its real id), the state saved (``save``),
    and the summary printed."""
    cfg, key = study.cfg, study.metric
    elapsed = study.elapsed()
    snap = study.snapshot(elapsed)
    rows = table.write()
    paths = [table.path]
    finished = rank_finished(rows, key, cfg.objective.mode)
    # within the budget first, then by score; with none finished, the fastest runs
    top = (finished or sorted(rows, key=lambda r: r["runtime"] if r["runtime"] is not None
                              else math.inf))[:10]
    over = best_over_budget(study, finished)
    if finished:
        paths += _write_best(study, top[0], tracker, over)
    if status == Status.KILLED:    # interrupted: the user waits; `tuner plot STUDY` draws them
        progress.message(f"plots: not drawn on an interruption (tuner plot {cfg.study} draws them)")
    else:
        paths += _plots(study, rows, progress)
    tracker.log_artifacts(paths)
    behind = tracker.behind
    with (progress.phase(f"MLflow: logging the last {behind} item(s)") if behind > 1
          else contextlib.nullcontext()):
        unlogged = tracker.finish(status)
    study.session.run_id = tracker.run_id or study.session.run_id   # real id once known
    if not unlogged:       # every curve is in MLflow or the tracker's spool: the state needs none
        study.curves.clear()
    save()
    _print_tables(study, rows, top, finished, progress)
    progress.message("\n" + (best_line(study, top[0]) if finished else
                             f"no trial finished: {diagnosis(study)}" + best_partial_line(study)))
    if over is not None:
        progress.message(over_line(study, over))
    stopped_more = best_stopped_line(study) if finished else ""
    if stopped_more:
        progress.message(stopped_more)
    uri, run_id = cfg.mlflow.tracking_uri, study.session.run_id
    progress.message(
        f"{snap.done} finished, {snap.stopped} stopped, {snap.failed} failed, "
        f"{snap.violations} over budget"
        + (f" ({snap.projected} of them stopped early, over it by their projected run time)"
           if snap.projected else "") + ", "
        f"workers busy {100 * snap.utilization:.0f}% of {elapsed:.0f} s.\n"
        f"state and trial table: {cfg.directory}/; MLflow run {run_id or 'not created yet'} "
        f"({uri}): "
        f"{browse_text(uri, tracker.experiment_id)}"
        + (
            f"\n{unlogged} MLflow item(s) are not logged "
            f"yet (kept in {cfg.directory}); --resume "
            "sends them"
            if unlogged
            else ""
        )
    )
    return StudyResult(status=status, optimizer=study.optimizer, where=study.session.where,
                       run_id=run_id, directory=cfg.directory, elapsed=elapsed,
                       utilization=snap.utilization, unlogged=unlogged,
                       diagnosis=failure or (None if finished else diagnosis(study)))


def _plots(study: Study, rows: list[dict[str, Any]], progress: Progress) -> list[Path]:
    """The study's plots (``plots``, ``space_plots``); a plot that fails is said, never fatal."""
    cfg, key = study.cfg, study.metric
    limit = cfg.budget.seconds if cfg.budget else None
    try:
        from .plots import study_plots
        from .space_plots import space_plots

        records = [study.record(tid) for tid in study.ended()]
        curves = read_curves(cfg.directory / CURVES_CSV, key) if cfg.fidelity else None
        return [
            *study_plots(records, cfg.directory, key, limit, cfg.objective.mode,
                         runtime_metric=cfg.budget.metric if cfg.budget else "runtime",
                         curves=curves, fidelity=cfg.fidelity.metric if cfg.fidelity else "step"),
            *space_plots(rows, cfg.space, key, cfg.objective.mode, cfg.directory, limit),
        ]
    except Exception as exc:  # a plot must never cost the study its results
        progress.message(f"warning: plots not written: {exc}")
        return []


def _print_tables(study: Study, rows: list[dict[str, Any]], top: list[dict[str, Any]],
                  finished: list[dict[str, Any]], progress: Progress) -> None:
    """The ten best trials, those that did not finish, and the earlier studies learned from."""
    cfg, key = study.cfg, study.metric
    used = [cfg.budget.metric] if cfg.budget and cfg.budget.metric != "runtime" else []
    cols = ["trial", "status", key, "runtime", *used, "over_budget", *cfg.space]
    if top:
        progress.message("\n" + summary_table(top, cols))
    others = not_finished(rows, limit=10)
    if others and finished:
        progress.message("\n" + others)
    carried = carried_counts(study.optimizer)
    if carried:
        progress.message(
            "\nlearned from earlier studies (not in this table): "
            + ", ".join(
                f"{n} trials of {name}{_correlation_text(study.optimizer, name, cfg.context)}"
                for name, n in carried.items()
            )
            + (
                ""
                if cfg.context is None
                else f"; this study's context: {format_config(cfg.context)}"
            )
        )


def _correlation_text(optimizer: Optimizer, origin: str, context: Mapping[str, Any] | None) -> str:
    """" (context rows=100, correlation 0.93 with this one's)": how much of an earlier study the
    GP carries to this study's context."""
    got = carried_correlation(optimizer, origin, context)
    return (
        ""
        if got is None
        else f" (context {format_config(got[0])}, correlation {got[1]:.2f} with this one's)"
    )


def best_over_budget(study: Study, finished: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What the budget cost: the best finished trial over the budget when it beats the best
    within it (``finished``: the ranked rows), with its run time and the ratio to the best
    within's; None when there is no such trial."""
    b, key = study.cfg.budget, study.metric
    within = [r for r in finished if not r["over_budget"]]
    over = [r for r in finished if r["over_budget"]]
    if b is None or not within or not over:
        return None
    sign = 1 if study.cfg.objective.mode == "max" else -1
    best_over = max(over, key=lambda r: sign * r[key])
    if sign * best_over[key] <= sign * within[0][key]:
        return None
    used = [
        study.optimizer.trials[r["trial"]].metrics.get(b.metric) for r in (best_over, within[0])
    ]
    return {"trial": best_over["trial"], key: best_over[key],
            "config": {k: best_over[k] for k in study.cfg.space}, b.metric: used[0],
            "best_within": {"trial": within[0]["trial"], key: within[0][key], b.metric: used[1]},
            f"{b.metric}_ratio": (used[0] / used[1] if used[0] is not None and used[1] else None)}


def over_line(study: Study, over: Mapping[str, Any]) -> str:
    """The best over the budget beside the best within, on one line."""
    key, metric = study.metric, study.cfg.budget.metric      # type: ignore[union-attr]
    ratio = over[f"{metric}_ratio"]
    return (f"best over the budget: trial {over['trial']}, {key} {over[key]:.4g} (best within: "
            f"{over['best_within'][key]:.4g}), {metric} {over[metric]:.3g} s"
            + ("" if ratio is None else f" = {ratio:.2g} x the best within's "
               f"{over['best_within'][metric]:.3g} s") + f"; {format_config(over['config'])}")


def _write_best(study: Study, row: Mapping[str, Any], tracker: Tracker,
                over: Mapping[str, Any] | None = None) -> list[Path]:
    """best.json and best.yaml in the study folder (and best.json in the MLflow parent run):
    the best finished trial, within the budget if any is."""
    import yaml

    cfg = study.cfg
    tr, key = study.optimizer.trials[row["trial"]], study.metric
    best = {"study": cfg.study, "trial": tr.trial_id,
            "within_budget": not row["over_budget"], key: tr.value,
            "config": dict(tr.config), "metrics": dict(tr.metrics)}
    if cfg.budget:
        best["budget_seconds"] = cfg.budget.seconds
    if cfg.context is not None:
        best["context"] = dict(cfg.context)
    carried = carried_counts(study.optimizer)
    if carried:
        best["warm_start"] = carried    # trials carried over, by earlier study
    if over is not None:
        best["best_over_budget"] = dict(over)    # what the budget cost
    paths = [cfg.directory / "best.json", cfg.directory / "best.yaml"]
    write_json(paths[0], best, indent=1)
    write_atomic(paths[1], yaml.safe_dump(best, sort_keys=False))
    tracker.log_dict(best, "best.json")
    # the parent run's columns in MLflow: the best trial, its settings (tags: they change on a
    # resume, MLflow params never do) and its metrics
    tracker.log_tags({"best_trial": tr.trial_id, **{f"best.{k}": v for k, v in tr.config.items()}})
    tracker.log_progress(study.n_ended(), {f"best.{k}": v for k, v in
                                           {**tr.metrics, key: tr.value}.items()})
    return paths


def best_line(study: Study, row: Mapping[str, Any]) -> str:
    """The best trial: the best within the budget, else the best over it, marked so."""
    key, b = study.metric, study.cfg.budget
    config = format_config({k: row[k] for k in study.cfg.space})
    text = f"best: trial {row['trial']}, {key} {row[key]:.4g}"
    if b is None:
        return f"{text}; {config}"
    used = study.optimizer.trials[row["trial"]].metrics.get(b.metric)
    used_text = "-" if used is None else f"{used:.3g} s"
    if row["over_budget"]:
        return (f"{text}, OVER BUDGET ({b.metric} {used_text} > {b.seconds:.3g} s): no "
                f"trial finished within the budget; {config}")
    return f"{text}, {b.metric} {used_text} within the budget of {b.seconds:.3g} s; {config}"


def best_stopped_line(study: Study) -> str:
    """A run stopped early that had reached more than the best finished run, on a line of its
    own ('' if none): a stopping rule may have cut a run that would have won."""
    sign, fid = mode_sign(study.cfg.objective.mode), study.cfg.fidelity
    best = study.optimizer.best(trials=study.trials)
    stopped = [tr for tr in study.trials if tr.status == Status.STOPPED and tr.partial is not None
               and best is not None and sign * tr.partial > sign * best.value]
    if not stopped:
        return ""
    tr = max(stopped, key=lambda tr: sign * tr.partial)
    at = "" if fid is None or tr.progress is None else (
        f" at {fid.metric} {tr.progress * fid.max:g} of {fid.max:g}")
    return (f"a run stopped early had reached more: trial {tr.trial_id}, {study.metric} "
            f"{tr.partial:.4g}{at} ({tr.reason}); the best finished run has {best.value:.4g}; "
            "a later first rung (early_stopping.grace) keeps such runs longer")


def best_partial_line(study: Study) -> str:
    """With no finished trial: the best value a run reached before it was stopped early, on a
    line of its own ('' if no run reported progress)."""
    fid, sign = study.cfg.fidelity, mode_sign(study.cfg.objective.mode)
    partial = [tr for tr in study.trials if tr.partial is not None]
    if fid is None or not partial:
        return ""
    tr = max(partial, key=lambda tr: sign * tr.partial)
    return (f"\nbest run so far: trial {tr.trial_id}, {study.metric} {tr.partial:.4g} at "
            f"{fid.metric} {tr.progress * fid.max:g} of {fid.max:g} ({tr.status}: {tr.reason}); "
            f"{format_config(tr.config)}")


def diagnosis(study: Study) -> str:
    """Why no trial finished, in one line, with what to change."""
    ended = [study.optimizer.trials[tid] for tid in study.ended()]
    if not ended:
        return "no trial ran (check run.trials and run.wall_clock_limit)"
    counts: dict[str, int] = {}
    for tr in ended:
        counts[str(tr.status)] = counts.get(str(tr.status), 0) + 1
    parts = ", ".join(f"{n} {status}" for status, n in counts.items())
    budget_stops = [tr for tr in ended if study.stopped_for_budget(tr.trial_id)]
    if len(budget_stops) == len(ended):
        fastest = min(tr.metrics.get("runtime", math.inf) for tr in ended)
        return (f"all {len(ended)} trials were stopped past the budget "
                f"({budget_text(study.cfg.budget)}); the fastest had run {fastest:.3g} s. Raise "
                "budget.limit (e.g. --budget 3x) or budget.stop_margin, or run fewer trials at "
                "once (--max-concurrent)")
    first = next(tr.reason for tr in ended if not study.stopped_for_budget(tr.trial_id))
    return f"{parts}; first reason: {first}"
