"""Search spaces: float (linear/log, optionally quantized), int, categorical.

Every parameter maps to one or more coordinates of the unit cube: floats and ints to one
(log-scaled when ``log``), categoricals to a one-hot block.  ``decode`` rounds back to a valid
configuration (ints and quantized floats rounded, categoricals by argmax of their block) and
``snap`` = ``encode(decode(u))`` projects any point of the cube onto the valid ones, so the
GP only ever sees inputs a trial can really have.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .fields import Field, check_section


FEW = 16    # an int with at most this many values: every value is a neighbour (else +- 1 step)


class SpaceError(ValueError):
    """A search-space definition that breaks a rule; the message names the parameter."""


@dataclass(frozen=True)
class Float:
    low: float
    high: float
    log: bool = False
    q: float | None = None

    kind = "float"

    def validate(self, name: str) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise SpaceError(f"space.{name}: low and high must be finite numbers")
        if self.low >= self.high:
            raise SpaceError(f"space.{name}: low ({self.low}) must be < high ({self.high})")
        if self.log and self.low <= 0:
            raise SpaceError(f"space.{name}: log scale needs low > 0 (got low={self.low})")
        if self.q is not None and not self.q > 0:
            raise SpaceError(f"space.{name}: q must be > 0 (got {self.q})")

    @property
    def width(self) -> int:
        return 1

    def _fwd(self, v: float) -> float:
        return math.log(v) if self.log else v

    def encode(self, value: Any) -> list[float]:
        lo, hi = self._fwd(self.low), self._fwd(self.high)
        v = min(max(float(value), self.low), self.high)
        return [(self._fwd(v) - lo) / (hi - lo)]

    def decode(self, u: Sequence[float]) -> float:
        lo, hi = self._fwd(self.low), self._fwd(self.high)
        z = lo + float(np.clip(u[0], 0.0, 1.0)) * (hi - lo)
        v = math.exp(z) if self.log else z
        if self.q is not None:
            v = round(v / self.q) * self.q
        return float(min(max(v, self.low), self.high))

    def snap(self, B: np.ndarray) -> np.ndarray:
        if self.q is None:
            return np.clip(B, 0.0, 1.0)
        lo, hi = self._fwd(self.low), self._fwd(self.high)
        z = lo + np.clip(B, 0.0, 1.0) * (hi - lo)
        v = np.exp(z) if self.log else z
        v = np.clip(np.round(v / self.q) * self.q, self.low, self.high)
        z = np.log(v) if self.log else v
        return (z - lo) / (hi - lo)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "float", "low": self.low, "high": self.high, "log": self.log}
        if self.q is not None:
            d["q"] = self.q
        return d


@dataclass(frozen=True)
class Int:
    low: int
    high: int
    log: bool = False
    q: int = 1

    kind = "int"

    def validate(self, name: str) -> None:
        if self.low >= self.high:
            raise SpaceError(f"space.{name}: low ({self.low}) must be < high ({self.high})")
        if self.log and self.low <= 0:
            raise SpaceError(f"space.{name}: log scale needs low > 0 (got low={self.low})")
        if self.q < 1:
            raise SpaceError(f"space.{name}: q must be a positive integer (got {self.q})")

    @property
    def width(self) -> int:
        return 1

    def _round(self, v: np.ndarray | float) -> np.ndarray:
        return np.clip(np.round(np.asarray(v) / self.q) * self.q, self.low, self.high)

    def _bounds(self) -> tuple[float, float]:
        # Widen by half a step so every integer owns an equal share of [0, 1].
        lo, hi = self.low - 0.4999, self.high + 0.4999
        if self.log:
            lo, hi = math.log(max(lo, 1e-12)), math.log(hi)
        return lo, hi

    def encode(self, value: Any) -> list[float]:
        lo, hi = self._bounds()
        v = min(max(int(value), self.low), self.high)
        z = math.log(v) if self.log else v
        return [(z - lo) / (hi - lo)]

    def decode(self, u: Sequence[float]) -> int:
        lo, hi = self._bounds()
        z = lo + float(np.clip(u[0], 0.0, 1.0)) * (hi - lo)
        return int(self._round(math.exp(z) if self.log else z))

    def snap(self, B: np.ndarray) -> np.ndarray:
        lo, hi = self._bounds()
        z = lo + np.clip(B, 0.0, 1.0) * (hi - lo)
        v = self._round(np.exp(z) if self.log else z)
        z = np.log(v) if self.log else v
        return (z - lo) / (hi - lo)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "int", "low": self.low, "high": self.high, "log": self.log}
        if self.q != 1:
            d["q"] = self.q
        return d


@dataclass(frozen=True)
class Categorical:
    choices: tuple[Any, ...]

    kind = "categorical"

    def validate(self, name: str) -> None:
        if len(self.choices) == 0:
            raise SpaceError(f"space.{name}: choices must not be empty")
        if len(set(map(repr, self.choices))) != len(self.choices):
            raise SpaceError(f"space.{name}: choices must be distinct (got {list(self.choices)})")

    @property
    def width(self) -> int:
        return len(self.choices)

    def encode(self, value: Any) -> list[float]:
        for i, c in enumerate(self.choices):
            if c == value:
                return [1.0 if j == i else 0.0 for j in range(len(self.choices))]
        raise SpaceError(f"value {value!r} is not one of the choices {list(self.choices)}")

    def decode(self, u: Sequence[float]) -> Any:
        return self.choices[int(np.argmax(np.asarray(u)))]

    def snap(self, B: np.ndarray) -> np.ndarray:
        out = np.zeros_like(B)
        out[np.arange(B.shape[0]), np.argmax(B, axis=1)] = 1.0
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"type": "categorical", "choices": list(self.choices)}


Param = Float | Int | Categorical

_TYPES = ("float", "int", "categorical")
_BOUND = Field((float,), required=True, finite=True)
_SCHEMAS = {     # what each key of a parameter may be (tuner.core.fields)
    "float": {"type": Field((str,)), "low": _BOUND, "high": _BOUND, "log": Field((bool,), False),
              "q": Field((float, None), None, above=0)},
    "int": {"type": Field((str,)), "low": Field((int,), required=True),
            "high": Field((int,), required=True), "log": Field((bool,), False),
            "q": Field((int,), 1, minimum=1)},
    "categorical": {"type": Field((str,)), "choices": Field((list, tuple), required=True)},
}


def check_value(p: Param, value: Any) -> None:
    """Raise if ``value`` is not one of ``p``'s values: a choice of a categorical, a number in
    [low, high] (``encode`` would clip it)."""
    if p.kind == "categorical":
        p.encode(value)
    elif not p.low <= float(value) <= p.high:
        raise SpaceError(f"value {value!r} is outside [{p.low}, {p.high}]")


def param_from_dict(name: str, spec: Mapping[str, Any]) -> Param:
    """Build one parameter from ``{"type": "float"|"int"|"categorical", ...}``.

    Shorthands: a list is a categorical; ``{"low":..,"high":..}`` without type is a float.
    """
    if isinstance(spec, (list, tuple)):
        spec = {"type": "categorical", "choices": list(spec)}
    if not isinstance(spec, Mapping):
        raise SpaceError(f"space.{name}: expected a mapping with 'type', got {spec!r}")
    kind = spec.get("type", "categorical" if "choices" in spec else "float")
    Field((str,), choices=_TYPES).check(f"space.{name}.type", kind, SpaceError)
    v = check_section(f"space.{name}", spec, _SCHEMAS[kind], SpaceError)
    if kind == "categorical":
        p: Param = Categorical(tuple(v["choices"]))
    elif kind == "int":
        p = Int(v["low"], v["high"], v["log"], v["q"])
    else:
        p = Float(v["low"], v["high"], v["log"], v["q"])
    p.validate(name)
    return p


class SearchSpace:
    """An ordered set of named parameters with a unit-cube encoding."""

    def __init__(self, params: Mapping[str, Param]):
        if not params:
            raise SpaceError("search space is empty: define at least one parameter")
        self.params: dict[str, Param] = dict(params)
        for name, p in self.params.items():
            p.validate(name)
        self._slices: dict[str, slice] = {}
        i = 0
        for name, p in self.params.items():
            self._slices[name] = slice(i, i + p.width)
            i += p.width
        self.dim = i

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> "SearchSpace":
        """Build from ``{name: {"type": ..., ...}}`` (the YAML / JSON format)."""
        if not isinstance(spec, Mapping) or not spec:
            raise SpaceError("search space is empty: define at least one parameter")
        return cls({str(k): param_from_dict(str(k), v) for k, v in spec.items()})

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {k: p.to_dict() for k, p in self.params.items()}

    @property
    def names(self) -> list[str]:
        return list(self.params)

    @property
    def categorical_only(self) -> bool:
        """Every parameter is a categorical (``tuner.core.algorithms.chosen_algorithm``)."""
        return all(p.kind == "categorical" for p in self.params.values())

    def encode(self, config: Mapping[str, Any]) -> np.ndarray:
        missing = [k for k in self.params if k not in config]
        if missing:
            raise SpaceError(f"configuration lacks parameter(s) {missing}")
        out: list[float] = []
        for name, p in self.params.items():
            out.extend(p.encode(config[name]))
        return np.asarray(out, dtype=float)

    def check(self, config: Mapping[str, Any], where: str = "config") -> None:
        """Raise ``SpaceError`` naming the parameter if ``config`` lacks one, or holds a value
        outside its range or choices (``encode`` would clip it without a word)."""
        if not isinstance(config, Mapping):
            raise SpaceError(f"{where}: expected a mapping of parameter values, got {config!r}")
        missing = [k for k in self.params if k not in config]
        if missing:
            raise SpaceError(f"{where} lacks parameter(s) {missing}")
        for name, p in self.params.items():
            try:
                check_value(p, config[name])
            except (SpaceError, TypeError, ValueError) as exc:
                raise SpaceError(f"{where}.{name}: {exc}") from None

    def decode(self, u: np.ndarray) -> dict[str, Any]:
        u = np.asarray(u, dtype=float)
        return {name: p.decode(u[self._slices[name]]) for name, p in self.params.items()}

    def groups(self) -> np.ndarray:
        """Each encoded column's parameter index (a categorical's one-hot block shares one)."""
        out = np.empty(self.dim, dtype=int)
        for i, name in enumerate(self.params):
            out[self._slices[name]] = i
        return out

    @property
    def discrete(self) -> bool:
        """Whether any parameter takes discrete values (an int, a quantized float, a category)."""
        return any(p.kind != "float" or p.q is not None for p in self.params.values())

    def neighbours(self, u: np.ndarray) -> np.ndarray:
        """The valid encoded points that differ from ``u`` (valid itself) in one discrete
        parameter by one move: every other choice of a category, every other value of an int
        or a quantized float with at most ``FEW`` values, else the next value up and down.
        Continuous floats are left to a continuous optimizer."""
        u = np.asarray(u, dtype=float)
        config = self.decode(u)
        out = []
        for name, p in self.params.items():
            sl = self._slices[name]
            if p.kind == "categorical":
                others = [c for c in p.choices if c != config[name]]
            elif p.kind == "int" or p.q is not None:
                step = p.q if p.q is not None else 1
                n = int(round((p.high - p.low) / step)) + 1
                near = ((p.low + k * step for k in range(n)) if n <= FEW
                        else (config[name] - step, config[name] + step))
                others = [v for v in near if p.low <= v <= p.high and v != config[name]]
            else:
                continue
            for v in others:
                w = u.copy()
                w[sl] = p.encode(v)
                out.append(w)
        return np.array(out).reshape(len(out), self.dim)

    def snap(self, U: np.ndarray) -> np.ndarray:
        """Project rows of ``U`` onto valid encoded configurations."""
        U = np.array(np.atleast_2d(U), dtype=float)
        for name, p in self.params.items():
            sl = self._slices[name]
            U[:, sl] = p.snap(U[:, sl])
        return U
