"""The one declarative way settings and configs are checked: a ``Field`` per key, and
``check_section`` for a whole mapping.  Every message names the field and says what is allowed:

    optimizer.censoring: must be one of ['hard', 'soft'] (got 'sfot')
    run.trials: must be > 0 (got 0)
    budget: unknown key(s) ['limt']; did you mean 'limit' for 'limt'?; allowed: ['limit', ...]

Used by ``Settings`` (the optimizer), ``Constraint``, the study and simulation configs
(``tuner.study.config``), the simulator's delay models and the built-in trainables' options.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

_TYPE_NAMES = {"str": "a string", "int": "a whole number", "float": "a number",
               "dict": "a mapping", "list": "a list", "tuple": "a list", "bool": "true or false"}


@dataclass(frozen=True)
class Field:
    """One key: its types (``None`` among them: null allowed), default, allowed values, bounds.

    ``int`` accepts any whole number (32.0 becomes 32) and ``float`` any real one (never a
    bool); ``words`` are
    strings accepted besides the types (``"auto"``); ``choices`` may be a function returning
    them (a registry read when the check runs).
    """

    types: tuple[Any, ...]
    default: Any = None
    choices: tuple[Any, ...] | Callable[[], Iterable[Any]] | None = None
    above: float | None = None       # value > above
    minimum: float | None = None     # value >= minimum
    maximum: float | None = None     # value <= maximum
    below: float | None = None       # value < below
    words: tuple[str, ...] = ()
    required: bool = False
    finite: bool = False             # no inf or nan
    doc: str = ""                    # what the key does, for the generated reference

    def check(self, name: str, value: Any, error: type[Exception] = ValueError) -> Any:
        """``value`` if it fits (an int given for a number becomes a float), else ``error``."""
        if value is None and None in self.types:
            return None
        if isinstance(value, str) and value in self.words:
            return value
        types = tuple(t for t in self.types if t is not None)
        if not any(_is(value, t) for t in types):
            expected = " or ".join([_name(t) for t in self.types] + [repr(w) for w in self.words])
            raise error(f"{name}: expected {expected}, got {value!r}")
        if float in types and int not in types and isinstance(value, numbers.Integral):
            value = float(value)
        elif int in types and not isinstance(value, numbers.Integral) and _is(value, int):
            value = int(value)
        choices = self.choices() if callable(self.choices) else self.choices
        if choices is not None and value not in choices:
            raise error(f"{name}: must be one of {list(choices)} (got {value!r})")
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            if self.finite and not math.isfinite(value):
                raise error(f"{name}: must be a finite number (got {value!r})")
            if not self._in_bounds(value):
                null = " or null" if None in self.types else ""
                raise error(f"{name}: must be {self.bounds()}{null} (got {value!r})")
        return value

    def _in_bounds(self, v: float) -> bool:
        return (
            (self.above is None or v > self.above)
            and (self.minimum is None or v >= self.minimum)
            and (self.maximum is None or v <= self.maximum)
            and (self.below is None or v < self.below)
            and not math.isnan(v)
        )

    def allowed(self) -> str:
        """What the key may be, in words (the reference's column): choices, or types and range."""
        choices = self.choices() if callable(self.choices) else self.choices
        if choices is not None:
            return ", ".join(f"`{c}`" for c in choices)
        kinds = list(dict.fromkeys(_name(t) for t in self.types)) + [f"`{w}`" for w in self.words]
        numeric = any(t in (int, float) for t in self.types)
        rng = self.bounds() if numeric and self.bounds() != "a number" else ""
        return " or ".join(kinds) + (f", {rng}" if rng else "")

    def bounds(self) -> str:
        """The allowed range in words, e.g. ``> 0``, ``in [0, 1]``."""
        lo = (f"> {self.above:g}" if self.above is not None else
              f">= {self.minimum:g}" if self.minimum is not None else None)
        hi = (f"< {self.below:g}" if self.below is not None else
              f"<= {self.maximum:g}" if self.maximum is not None else None)
        if lo is None or hi is None:
            return lo or hi or "a number"
        low = self.above if self.above is not None else self.minimum
        high = self.below if self.below is not None else self.maximum
        return (f"in {'(' if self.above is not None else '['}{low:g}, "
                f"{high:g}{')' if self.below is not None else ']'}")


def setting(default: Any, doc: str, types: tuple[Any, ...], **checks: Any) -> Any:
    """A dataclass field declared once: its default, what it may be (a ``Field``) and what it
    does (``doc``, one paragraph), read by ``schema`` and by the generated reference.

    Args:
        default: the value when none is given (a list or dict is copied for each instance).
        doc: what the setting does, for the reference (Markdown; ``code`` for names).
        types: the types allowed (``None`` among them: null allowed).
        **checks: ``Field``'s other arguments (``choices``, ``minimum``, ``words``...).
    """
    meta = {"check": Field(types, default, doc=doc, **checks)}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def schema(cls: type) -> dict[str, Field]:
    """The ``Field`` of every field of dataclass ``cls`` declared with ``setting``."""
    return {f.name: f.metadata["check"] for f in dataclasses.fields(cls) if "check" in f.metadata}


def check_keys(section: str, data: Mapping[str, Any], allowed: Iterable[str],
               error: type[Exception] = ValueError) -> None:
    """``error`` naming the unknown keys of ``data`` and the allowed ones."""
    allowed = sorted(allowed)
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        close = {k: difflib.get_close_matches(str(k), allowed, n=1) for k in unknown}
        hint = "; ".join(f"did you mean {m[0]!r} for {k!r}?" for k, m in close.items() if m)
        raise error(f"{section}: unknown key(s) {unknown}" + (f"; {hint}" if hint else "")
                    + f"; allowed: {allowed}")


def check_section(section: str, data: Any, schema: Mapping[str, Field],
                  error: type[Exception] = ValueError) -> dict[str, Any]:
    """Check one mapping against ``schema``; returns it with defaults filled in."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise error(f"{section}: expected a mapping, got {type(data).__name__}")
    check_keys(section, data, schema, error)
    out: dict[str, Any] = {}
    for key, f in schema.items():
        name = f"{section}.{key}" if section else key
        if key not in data:
            if f.required:
                raise error(f"{name} is required")
            out[key] = f.default
        else:
            out[key] = f.check(name, data[key], error)
    return out


def _is(value: Any, t: type) -> bool:
    if isinstance(value, bool):
        return t is bool
    if t is int:
        return isinstance(value, numbers.Integral) or (
            isinstance(value, float) and value.is_integer()
        )
    if t is float:
        return isinstance(value, numbers.Real)
    return isinstance(value, t)


def _name(t: Any) -> str:
    return "null" if t is None else _TYPE_NAMES.get(t.__name__, t.__name__)
