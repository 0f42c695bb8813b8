"""The studies in an output folder, read from their files alone (``state.json``,
``trials.csv``, ``best.json``): ``tuner list``, ``tuner show STUDY``, ``tuner best STUDY``.
No Ray, no MLflow: this works on a laptop with a copy of the folder."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from tuner.app.progress import summary_table


class StudyNotFound(ValueError):
    pass


def study_dirs(output: str | Path) -> list[Path]:
    root = Path(output)
    return sorted(p.parent for p in root.glob("*/state.json")) if root.is_dir() else []


def find(output: str | Path, name: str) -> Path:
    d = Path(output) / name
    if not (d / "state.json").exists():
        names = [p.name for p in study_dirs(output)]
        raise StudyNotFound(f"no study {name!r} in {output}/; studies there: {names or 'none'}")
    return d


def _number(v: str) -> Any:
    if v in ("", None):
        return None
    for kind in (int, float):
        try:
            return kind(v)
        except ValueError:
            pass
    return v


def ranked(d: Path) -> list[dict[str, Any]]:
    """The finished trials of ``trials.csv``, within the budget first, then by score."""
    table = d / "trials.csv"
    if not table.exists():
        return []
    state = json.loads((d / "state.json").read_text())
    key, sign = state["config"]["objective"]["metric"], 1 if state["config"]["objective"]["mode"] == "max" else -1
    with table.open() as fh:
        rows = [{k: (v if k in ("status", "reason", "node") else _number(v)) for k, v in r.items()}
                for r in csv.DictReader(fh)]
    done = [r for r in rows if r["status"] == "FINISHED" and r.get(key) is not None]
    return sorted(done, key=lambda r: (r.get("over_budget") == 1, -sign * r[key]))


def best(d: Path) -> dict[str, Any] | None:
    """best.json, or for a study written before it existed, the top of ``trials.csv``."""
    if (d / "best.json").exists():
        return json.loads((d / "best.json").read_text())
    top = ranked(d)
    if not top:
        return None
    state = json.loads((d / "state.json").read_text())
    key, space = state["config"]["objective"]["metric"], state["config"]["space"]
    return {"study": d.name, "trial": int(top[0]["trial"]), "within_budget": top[0].get("over_budget") != 1,
            key: top[0][key], "config": {k: top[0][k] for k in space}}


def overview(d: Path) -> dict[str, Any]:
    """One line's worth: the study's trainable, trial counts and best result."""
    state = json.loads((d / "state.json").read_text())
    cfg, outcomes = state["config"], state["session"]["outcomes"]
    statuses = [o["status"] for o in outcomes.values()]
    best_ = best(d)
    metric = cfg["objective"]["metric"]
    return {"study": d.name, "trainable": cfg["trainable"], "trials": len(statuses),
            "finished": statuses.count("FINISHED"), "metric": metric,
            "best": None if best_ is None else best_.get(metric),
            "best_trial": None if best_ is None else best_["trial"],
            "within_budget": None if best_ is None else best_["within_budget"]}


def list_text(output: str | Path) -> str:
    rows = [overview(d) for d in study_dirs(output)]
    if not rows:
        return f"no studies in {output}/ (tuner run writes them there)"
    for r in rows:
        r["best"] = "-" if r["best"] is None else (f"{r['best']:.4g}" + ("" if r["within_budget"]
                                                                        else " (over budget)"))
    return summary_table(rows, ["study", "trainable", "trials", "finished", "metric", "best",
                                "best_trial"])


def show_text(output: str | Path, name: str, top: int = 10) -> str:
    d = find(output, name)
    o = overview(d)
    lines = [f"study {o['study']}: {o['trainable']}, {o['finished']} of {o['trials']} trials "
             f"finished ({d}/)"]
    if (d / "trials.csv").exists():
        state = json.loads((d / "state.json").read_text())
        cols = ["trial", "status", o["metric"], "runtime", "over_budget", *state["config"]["space"]]
        lines += ["", summary_table(ranked(d)[:top], cols)]
        with (d / "trials.csv").open() as fh:
            failed = [r for r in csv.DictReader(fh) if r["status"] != "FINISHED"]
        if failed:
            lines += ["", "not finished:"] + [f"  trial {r['trial']}: {r['status']}, {r.get('reason') or '-'}"
                                              for r in failed]
    lines += ["", best_text(output, name)]
    return "\n".join(lines)


def best_text(output: str | Path, name: str, as_json: bool = False) -> str:
    b = best(find(output, name))
    if b is None:
        return f"study {name}: no trial finished yet"
    if as_json:
        return json.dumps(b, indent=1)
    import yaml
    return yaml.safe_dump(b, sort_keys=False).rstrip()
