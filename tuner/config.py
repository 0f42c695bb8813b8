"""Study configuration files (YAML): loading and validation with errors that name the field.

A study file has these sections (see ``configs/``):

    study: name                      # MLflow experiment name, output folder name
    space: {param: {type: ..., ...}} # optional when the trainable has a default space
    optimizer: {...}                 # tuner.optimizer.Settings fields
    simulation: {...}                # for `tuner simulate`: objective, delay, workers, trials
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from .optimizer import Settings


class ConfigError(ValueError):
    """An invalid study configuration; the message names the field and what is allowed."""


@dataclass(frozen=True)
class Field:
    types: tuple[type, ...]
    default: Any = None
    choices: tuple[Any, ...] | None = None
    positive: bool = False
    required: bool = False


def check_section(section: str, data: Any, schema: Mapping[str, Field]) -> dict[str, Any]:
    """Validate one mapping against ``schema``; returns it with defaults filled in."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{section}: expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - set(schema))
    if unknown:
        raise ConfigError(f"{section}: unknown key(s) {unknown}; allowed: {sorted(schema)}")
    out: dict[str, Any] = {}
    for key, f in schema.items():
        name = f"{section}.{key}"
        if key not in data:
            if f.required:
                raise ConfigError(f"{name} is required")
            out[key] = f.default
            continue
        value = data[key]
        if value is None and None in f.types:
            out[key] = None
            continue
        types = tuple(t for t in f.types if t is not None)
        if float in types and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(value, bool) and bool not in types:
            raise ConfigError(f"{name}: expected {_names(f.types)}, got {value!r}")
        if not isinstance(value, types):
            raise ConfigError(f"{name}: expected {_names(f.types)}, got {value!r}")
        if f.choices is not None and value not in f.choices:
            raise ConfigError(f"{name}: must be one of {list(f.choices)} (got {value!r})")
        if f.positive and isinstance(value, (int, float)) and not value > 0:
            raise ConfigError(f"{name}: must be > 0 (got {value!r})")
        out[key] = value
    return out


def _names(types: tuple[Any, ...]) -> str:
    return " or ".join("null" if t is None else {"str": "string", "int": "integer", "float": "number",
                                                  "dict": "mapping", "list": "list",
                                                  "bool": "true/false"}.get(t.__name__, t.__name__)
                       for t in types)


def optimizer_settings(data: Any) -> Settings:
    """The ``optimizer`` section as Settings (unknown keys and bad values are ConfigErrors)."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"optimizer: expected a mapping, got {type(data).__name__}")
    data = dict(data)
    if "window" in data and isinstance(data["window"], Mapping):   # window: {unit:, size:}
        w = check_section("optimizer.window", data.pop("window"), {
            "unit": Field((str,), "iterations", ("iterations", "seconds")),
            "size": Field((int, float, str), "auto")})
        data["window_unit"], data["window"] = w["unit"], w["size"]
    if "objective_bounds" in data and data["objective_bounds"] is not None:
        b = data["objective_bounds"]
        if not (isinstance(b, (list, tuple)) and len(b) == 2):
            raise ConfigError(f"optimizer.objective_bounds: expected [low, high], got {b!r}")
    try:
        s = Settings.from_dict(data)
        s.validate()
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"optimizer: {exc}") from exc
    return s


def read_yaml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"config file {str(p)!r} does not exist")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
    if not isinstance(data, Mapping):
        raise ConfigError(f"{p}: expected a mapping of sections at the top level")
    return dict(data)


SIM_SCHEMA = {
    "objective": Field((dict,), {"kind": "gp-sample-1d"}),
    "delay": Field((dict,), {"kind": "poisson", "mean": 10}),
    "workers": Field((int, None), None, positive=True),
    "trials": Field((int,), 200, positive=True),
    "noise_std": Field((float,), 0.0),
    "seed": Field((int,), 0),
}


@dataclass
class SimulationConfig:
    study: str
    settings: Settings
    objective: dict[str, Any]
    delay: dict[str, Any]
    workers: int | None
    trials: int
    noise_std: float
    seed: int
    raw: dict[str, Any] = field(default_factory=dict)


def load_simulation(path: str | Path, overrides: Mapping[str, Any] | None = None) -> SimulationConfig:
    data = read_yaml(path)
    top = check_section("config", data, {"study": Field((str,), Path(path).stem),
                                         "optimizer": Field((dict, None)),
                                         "simulation": Field((dict,), required=True)})
    opt = dict(top["optimizer"] or {})
    sim = dict(top["simulation"])
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key in ("algorithm", "seed"):
            opt[key] = value
        if key in ("trials", "workers", "seed"):
            sim[key] = value
    sim = check_section("simulation", sim, SIM_SCHEMA)
    return SimulationConfig(top["study"], optimizer_settings(opt), sim["objective"], sim["delay"],
                            sim["workers"], sim["trials"], sim["noise_std"], sim["seed"], data)
