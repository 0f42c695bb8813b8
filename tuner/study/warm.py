"""Re-tuning: a study's context and the earlier studies it learns from (paper 001 §5, App. B).

A study with ``context: {n_rows: 120000, data_version: "2026-11"}`` asks every suggestion at
that context: the GP is on (configuration, context), CGP-UCB-SDF / CGP-TS-SDF
(``tuner.core.context``).  With ``warm_start: [study-a, ...]`` the earlier studies' trials, each
at its own study's context, enter the optimizer before the first suggestion
(``Optimizer.add_earlier``, marked with ``Trial.origin``); the study's own counts, table, best
trial and MLflow runs leave them out.

An earlier study is read from its folder (``state.json``), or from MLflow where the folder is
gone (the reader the faces hand in: ``tuner.integrations.mlflow.history``).  It must tune the
same trainable, the same parameters and the same objective; with a context, all of them carry
the same context keys.  Trials whose configuration lies outside this study's space are left out
and counted.

The context space is the declared ``context_space``, or inferred from the contexts seen (this
study's and the earlier ones'): a number becomes a float over [min, max] (log-scaled when all
are positive and max/min >= 10; a single value v > 0 spans [v/2, 2v], else [v-1, v+1]); a
string becomes a categorical of the values seen.  A saved study keeps its context space.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tuner.core.optimizer import Optimizer
from tuner.core.space import SearchSpace, SpaceError, check_value
from tuner.core.trial import Status

from .schema import ConfigError, StudyConfig
from .state import read_study_state

STATE_FILE = "state.json"


@dataclass
class Earlier:
    """An earlier study as it is carried over: what it tuned, at which context, and its ended
    trials as ``{"config", "status", "value", "metrics", "reason"}``."""

    name: str
    source: str                   # where it was read: the folder, or MLflow
    trainable: str
    space: dict[str, Any]
    objective: dict[str, Any]     # metric, mode
    context: dict[str, Any] | None
    trials: list[dict[str, Any]]


@dataclass
class Carried:
    """What one earlier study gave this one: trials carried over, and the ones left out."""

    name: str
    source: str
    context: dict[str, Any] | None
    carried: int = 0
    skipped: dict[str, int] = field(default_factory=dict)    # reason -> trials

    def text(self) -> str:
        ctx = "" if self.context is None else ", context " + ", ".join(
            f"{k}={v}" for k, v in self.context.items())
        left = "; ".join(f"{n} left out: {why}" for why, n in self.skipped.items())
        return f"{self.carried} trials from {self.name} ({self.source}{ctx})" + (
            f" ({left})" if left else "")


# reads an earlier study from the tracker where its folder is gone (None: not there either)
ReadTracker = Callable[[str, StudyConfig], "Earlier | None"]


def read_folder(name: str, directory: Path) -> Earlier:
    """An earlier study from its folder's state (the journal applied)."""
    _, state = read_study_state(directory / STATE_FILE)
    cfg = state["config"]
    return Earlier(name, f"folder {directory}", cfg["trainable"], cfg["space"], cfg["objective"],
                   cfg.get("context"), [t for t in state["optimizer"]["trials"]
                                        if t.get("origin") is None])


def earlier_studies(cfg: StudyConfig, read_tracker: ReadTracker | None = None) -> list[Earlier]:
    """The studies named in ``cfg.warm_start``, checked against ``cfg`` (``ConfigError`` names
    the study and what differs)."""
    out = []
    for name in cfg.warm_start:
        path = Path(name)
        folder = path if (path / STATE_FILE).exists() else Path(cfg.output) / name
        if folder.resolve() == cfg.directory.resolve():
            raise ConfigError(f"warm_start: {name!r} is this study; name earlier studies")
        if (folder / STATE_FILE).exists():
            earlier = read_folder(folder.name, folder)
        else:
            earlier = None if read_tracker is None else read_tracker(name, cfg)
            if earlier is None:
                raise ConfigError(f"warm_start: no study {name!r}: no {folder / STATE_FILE} and no "
                                  f"runs of it in MLflow ({cfg.mlflow.tracking_uri}, experiment "
                                  f"{name!r})")
        _check(cfg, earlier)
        out.append(earlier)
    return out


def _check(cfg: StudyConfig, e: Earlier) -> None:
    """An earlier study must tune the same trainable, parameters and objective, with the same
    context keys."""
    where = f"warm_start: study {e.name!r}"
    if e.trainable != cfg.trainable:
        raise ConfigError(f"{where} tuned the trainable {e.trainable!r}; this study tunes "
                          f"{cfg.trainable!r}")
    if set(e.space) != set(cfg.space):
        raise ConfigError(f"{where} tuned the parameters {sorted(e.space)}; this study's space "
                          f"has {sorted(cfg.space)}")
    ours = (cfg.objective.metric, cfg.objective.mode)
    theirs = (e.objective.get("metric"), e.objective.get("mode", "max"))
    if theirs != ours:
        raise ConfigError(f"{where} optimized {theirs[0]} ({theirs[1]}); this study optimizes "
                          f"{ours[0]} ({ours[1]})")
    keys, their_keys = sorted(cfg.context or {}), sorted(e.context or {})
    if keys != their_keys:
        raise ConfigError(f"{where} has the context keys {their_keys}; this study has {keys} "
                          "(give both the same context: {name: value, ...})")


def context_space(cfg: StudyConfig, earlier: Sequence[Earlier]) -> dict[str, Any] | None:
    """The declared context space, or one inferred from the contexts seen (module docstring);
    None without a context."""
    if cfg.context is None:
        return None
    if cfg.context_space is not None:
        space = SearchSpace.from_dict(cfg.context_space)
        for e in earlier:
            for key, p in space.params.items():
                try:
                    check_value(p, e.context[key])   # type: ignore[index]
                except (SpaceError, TypeError, ValueError) as exc:
                    raise ConfigError(f"context_space.{key}: study {e.name!r} has {key}="
                                      f"{e.context[key]!r}: {exc}") from None   # type: ignore[index]
        return dict(cfg.context_space)
    out: dict[str, Any] = {}
    for key, value in cfg.context.items():
        seen = [value] + [e.context[key] for e in earlier]   # type: ignore[index]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seen):
            lo, hi = float(min(seen)), float(max(seen))
            if lo == hi:
                lo, hi = (lo / 2, hi * 2) if lo > 0 else (lo - 1, hi + 1)
            out[key] = {"type": "float", "low": lo, "high": hi,
                        "log": bool(lo > 0 and hi / lo >= 10)}
        else:
            out[key] = {"type": "categorical", "choices": sorted({str(v) for v in seen})}
    return out


def _context_values(space: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
    """A context as the space holds it (a categorical's values as the strings it was inferred
    from)."""
    return {k: str(v) if space[k].get("type") == "categorical" and not any(
        v == c for c in space[k]["choices"]) else v for k, v in context.items()}


def study_context(cfg: StudyConfig, optimizer: Optimizer) -> dict[str, Any] | None:
    """This study's context as its optimizer's context space holds it (None: no context)."""
    if cfg.context is None or optimizer.contexts is None:
        return None
    return _context_values(optimizer.contexts.space.to_dict(), cfg.context)


def carry(optimizer: Optimizer, earlier: Sequence[Earlier]) -> list[Carried]:
    """Tell ``optimizer`` every ended trial of the earlier studies, at each one's context
    (``Optimizer.add_earlier``); returns what each gave."""
    space = optimizer.space
    cspace = None if optimizer.contexts is None else optimizer.contexts.space.to_dict()
    out = []
    for e in earlier:
        context = None if cspace is None else _context_values(cspace, e.context or {})
        got = Carried(e.name, e.source, e.context)
        for t in e.trials:
            why = _left_out(t, space, optimizer)
            if why is None:
                status = Status(t["status"])
                optimizer.add_earlier(
                    {k: t["config"][k] for k in space.names},
                    t.get("value") if status == Status.FINISHED else None,
                    metrics={k: v for k, v in (t.get("metrics") or {}).items()
                             if isinstance(v, (int, float)) and math.isfinite(v)},
                    status=status, reason=t.get("reason"), context=context, origin=e.name)
                got.carried += 1
            else:
                got.skipped[why] = got.skipped.get(why, 0) + 1
        out.append(got)
    return out


def _left_out(t: Mapping[str, Any], space: SearchSpace, optimizer: Optimizer) -> str | None:
    """Why an earlier trial is not carried over (None: it is)."""
    if t.get("status") == Status.RUNNING.value:
        return "still running when that study stopped"
    config = t.get("config") or {}
    try:
        for name, p in space.params.items():
            check_value(p, config[name])
    except (KeyError, SpaceError, TypeError, ValueError):
        return "outside this study's space"
    if t["status"] == Status.FINISHED.value and not (
            isinstance(t.get("value"), (int, float)) and math.isfinite(t["value"])):
        return "no finite objective"
    missing = [c.metric for c in optimizer.constraints if c.metric not in (t.get("metrics") or {})]
    if missing:
        return f"no {', '.join(missing)} recorded"
    return None


def carried_correlation(optimizer: Optimizer, origin: str,
                        context: Mapping[str, Any] | None) -> tuple[dict, float] | None:
    """The context of the trials carried over from ``origin`` and how much the GP carries from
    it to ``context`` (``Optimizer.context_correlation``); None without contexts."""
    if context is None or optimizer.contexts is None:
        return None
    theirs = next((tr.context for tr in optimizer.trials if tr.origin == origin and tr.context),
                  None)
    return (
        None if theirs is None else (dict(theirs), optimizer.context_correlation(theirs, context))
    )


def carried_counts(optimizer: Optimizer) -> dict[str, int]:
    """Trials carried over into ``optimizer``, by the study they came from (in order)."""
    out: dict[str, int] = {}
    for tr in optimizer.trials:
        if tr.origin is not None:
            out[tr.origin] = out.get(tr.origin, 0) + 1
    return out
