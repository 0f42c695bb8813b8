"""The studies in an output folder, read from their files alone (``state.json``,
``trials.csv``, ``best.json``): ``tuner list``, ``tuner show STUDY``, ``tuner best STUDY``.
No Ray, no MLflow: this works on a laptop with a copy of the folder."""

from __future__ import annotations

import csv
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.study.progress import not_finished, rank_finished, summary_table
from tuner.core.persist import StateError
from tuner.study.state import read_study_state


class StudyNotFound(ValueError):
    """No such study in the output folder (the message names the ones there)."""


class StudyUnreadable(ValueError):
    """The study's state cannot be read (the message names the file)."""


@dataclass
class LoadedStudy:
    """A finished (or running) study as ``tuner.load_study`` hands it back for analysis."""

    name: str
    path: Path
    config: dict[str, Any]               # the resolved config the study ran with
    trials: Any                          # pandas.DataFrame: trials.csv, one row per ended trial
    best: dict[str, Any] | None          # best.json: the best within the budget (and over it)
    curves: Any = None                   # pandas.DataFrame: curves.csv, if the runs reported


def load_study(name_or_path: str | Path, output: str | Path = "tuner_runs") -> LoadedStudy:
    """A study's folder read for analysis (no Ray, no MLflow: it works on a copy, and on a study
    that is still running).  ``trials`` holds every trial the study ran (not those carried over
    from earlier studies), with its status, objective, run time and settings.

    Args:
        name_or_path: a study folder, or a study's name under ``output``.
        output: the folder that holds each study's folder.

    Raises ``StudyNotFound`` naming the studies there when there is no such study.
    """
    import pandas as pd

    path = Path(name_or_path)
    if not (path / "state.json").exists():
        path = find(output, str(name_or_path)).path
    f = Folder.read(path)
    if f.warning is not None:
        warnings.warn(f.warning, stacklevel=2)
        trials = pd.DataFrame(f.rows)
    else:
        trials = (pd.read_csv(path / "trials.csv") if (path / "trials.csv").exists()
                  else pd.DataFrame())
    curves = pd.read_csv(path / "curves.csv") if (path / "curves.csv").exists() else None
    return LoadedStudy(path.name, path, f.config, trials, f.best(), curves)


@dataclass
class Folder:
    """One study's folder, each file read once."""

    path: Path
    config: dict[str, Any]               # state.json's resolved config
    statuses: list[str]                  # state.json: the status of every trial that ended
    rows: list[dict[str, Any]]           # trials.csv, numbers parsed ([] before it exists)
    best_file: dict[str, Any] | None     # best.json
    warning: str | None = None           # what was damaged, and what was read instead

    @classmethod
    def read(cls, path: Path) -> "Folder":
        """The folder's files; ``StudyUnreadable`` naming the file where the state cannot be
        read.  A trials.csv that is damaged, cut, or lacks trials the state has ended is
        replaced by the rows the state gives (``warning`` says so), so a damaged table never
        names a wrong best trial."""
        try:
            _, state = read_study_state(path / "state.json")   # with its journal: a running study
            config, ended = state["config"], _ended(state)
            _ = (config["objective"]["metric"], config["objective"]["mode"], config["trainable"],
                 dict(config["space"]))       # what show, best and list read
        except (StateError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise StudyUnreadable(f"{path / 'state.json'} cannot be read ({exc}); `tuner run "
                                  "CONFIG --resume` says how to recover the study") from None
        rows, problem = _table(path / "trials.csv", [t["trial_id"] for t in ended])
        warning = None
        if problem is not None:
            rows = _rows_from_state(config, ended)
            warning = (f"warning: {path / 'trials.csv'} {problem}; shown from the study's state "
                       "instead (`tuner run CONFIG --resume` writes the table again)")
        best = _best_file(path / "best.json")
        if best is not None and problem is not None:
            best = None                  # written with that table: the state decides instead
        return cls(path, config, [t["status"] for t in ended], rows, best, warning)

    @property
    def metric(self) -> str:
        return self.config["objective"]["metric"]

    def ranked(self) -> list[dict[str, Any]]:
        """The finished trials, within the budget first, then by score."""
        return rank_finished(self.rows, self.metric, self.config["objective"]["mode"])

    def best(self) -> dict[str, Any] | None:
        """best.json, or for a study written before it existed, the top of ``trials.csv``."""
        if self.best_file is not None:
            return self.best_file
        top = self.ranked()
        if not top:
            return None
        return {"study": self.path.name, "trial": top[0]["trial"],
                "within_budget": not top[0].get("over_budget"), self.metric: top[0][self.metric],
                "config": {k: top[0][k] for k in self.config["space"]}}

    def overview(self) -> dict[str, Any]:
        """One line's worth: the study's trainable, trial counts and best result."""
        statuses = self.statuses
        b = self.best()
        return {"study": self.path.name, "trainable": self.config["trainable"],
                "trials": len(statuses), "finished": statuses.count("FINISHED"),
                "metric": self.metric, "best": None if b is None else b.get(self.metric),
                "best_trial": None if b is None else b["trial"],
                "within_budget": None if b is None else b["within_budget"]}


def _ended(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The study's own ended trials, as the state holds them: the optimizer's trials, but those
    carried over from earlier studies (a version-1 study state kept its own in its session's
    outcomes, with their status only)."""
    if state["version"] == 1:
        return [{"trial_id": int(k), "status": o["status"]}
                for k, o in state["session"]["outcomes"].items()]
    return [t for t in state["optimizer"]["trials"]
            if t["status"] != "RUNNING" and t.get("origin") is None]   # not the carried ones


def _table(path: Path, ended: list[int]) -> tuple[list[dict[str, Any]], str | None]:
    """trials.csv's rows (numbers parsed), and what is wrong with it (None: nothing)."""
    if not path.exists():
        return [], (f"is missing ({len(ended)} trials ended)" if ended else None)
    try:
        with path.open(newline="") as fh:
            raw = list(csv.DictReader(fh))
    except (UnicodeDecodeError, csv.Error) as exc:
        return [], f"cannot be read ({exc})"
    if any(None in r or None in r.values() for r in raw):
        return [], "has a cut or malformed row"
    rows = [{k: (v if k in ("status", "reason", "node") else _number(v)) for k, v in r.items()}
            for r in raw]
    missing = set(ended) - {r.get("trial") for r in rows}
    if missing:
        return rows, f"lacks {len(missing)} of the {len(ended)} trials that ended"
    return rows, None


def _rows_from_state(config: dict[str, Any], ended: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The table's main columns from the state's trials (a version-1 state has none)."""
    metric, budget = config["objective"]["metric"], config.get("budget") or {}
    limit, used = budget.get("seconds"), budget.get("metric", "runtime")
    rows = []
    for t in ended:
        m = t.get("metrics") or {}
        over = limit is not None and m.get(used) is not None and m[used] > limit
        rows.append({"trial": t["trial_id"], "status": t["status"], metric: t.get("value"),
                     "runtime": m.get("runtime"), "over_budget": int(over),
                     "reason": t.get("reason"), **(t.get("config") or {})})
    return rows


def _best_file(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text()) if path.exists() else None
    except (ValueError, UnicodeDecodeError):
        return None                      # damaged: the best is read from the table instead


def _number(v: str) -> Any:
    if v in ("", None):
        return None
    for kind in (int, float):
        try:
            return kind(v)
        except ValueError:
            pass
    return v


def study_dirs(output: str | Path) -> list[Path]:
    root = Path(output)
    return sorted(p.parent for p in root.glob("*/state.json")) if root.is_dir() else []


def find(output: str | Path, name: str) -> Folder:
    d = Path(output) / name
    if not (d / "state.json").exists():
        names = [p.name for p in study_dirs(output)]
        raise StudyNotFound(f"no study {name!r} in {output}/; studies there: {names or 'none'}")
    return Folder.read(d)


def list_text(output: str | Path) -> str:
    rows = []
    for d in study_dirs(output):
        try:
            rows.append(Folder.read(d).overview())
        except StudyUnreadable:
            rows.append({"study": d.name, "trainable": "?", "trials": "?", "finished": "?",
                         "metric": "?", "best": "state.json unreadable", "best_trial": None})
    if not rows:
        return f"no studies in {output}/ (tuner run writes them there)"
    for r in rows:
        if isinstance(r["best"], str):
            continue
        r["best"] = "-" if r["best"] is None else (f"{r['best']:.4g}" + ("" if r["within_budget"]
                                                                        else " (over budget)"))
    return summary_table(rows, ["study", "trainable", "trials", "finished", "metric", "best",
                                "best_trial"])


def show_text(output: str | Path, name: str, top: int | None = 10) -> str:
    f = find(output, name)
    o = f.overview()
    lines = [f"study {o['study']}: {o['trainable']}, {o['finished']} of {o['trials']} trials "
             f"finished ({f.path}/)"]
    if f.rows:
        cols = ["trial", "status", f.metric, "runtime", "over_budget", *f.config["space"]]
        lines += ["", summary_table(f.ranked()[:top], cols)]   # top None: all
        others = not_finished(f.rows)
        if others:
            lines += ["", others]
    lines += ["", best_text(f)]
    return "\n".join(lines)


def plot(output: str | Path, name: str) -> list[Path]:
    """``tuner plot STUDY``: the study's plots of what it found (``tuner.study.space_plots``)
    drawn again from its folder; returns their paths."""
    from tuner.study.space_plots import space_plots

    f = find(output, name)
    budget = (f.config.get("budget") or {}).get("seconds")
    return space_plots(f.rows, f.config["space"], f.metric, f.config["objective"]["mode"], f.path,
                       budget)


def csv_text(output: str | Path, name: str) -> str:
    """Every trial of the study as CSV: its ``trials.csv`` (a header alone before any ended)."""
    f = find(output, name)
    path = f.path / "trials.csv"
    return path.read_text().rstrip("\n") if path.exists() else ""


def best_text(f: Folder, as_json: bool = False) -> str:
    b = f.best()
    if b is None:
        return f"study {f.path.name}: no trial finished yet"
    if as_json:
        return json.dumps(b, indent=1)
    import yaml
    return yaml.safe_dump(b, sort_keys=False).rstrip()
