"""Lookup tables of the trainables: accuracy and training time measured on a grid.

    table = load_table("svm")              # built by ``python -m tuner.bench.build_tables``
    i = table.nearest({"C": 3.0, "gamma": 0.01})
    table.accuracy[i], table.train_time[i]

``X`` holds the grid in natural units (columns in ``space`` order); ``nearest`` measures
distance in the unit-cube encoding of ``tuner.core.space.SearchSpace`` (log-scaled where the space
is), so a configuration anywhere in the space maps to the grid cell it falls in.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from tuner.core.space import SearchSpace

TABLES_DIR = Path(__file__).resolve().parent / "tables"
NAMES = ("svm", "logreg", "cnn")


@dataclass(frozen=True, eq=False)
class LookupTable:
    """One measured grid: configurations ``X`` (n, d), ``accuracy`` (n,), ``train_time`` (n,) s."""

    name: str
    space: dict
    X: np.ndarray
    accuracy: np.ndarray
    train_time: np.ndarray
    meta: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        search = SearchSpace.from_dict(self.space)
        U = np.array([search.encode(dict(zip(search.names, row))) for row in self.X])
        object.__setattr__(self, "_search", search)
        object.__setattr__(self, "_U", U)

    @property
    def names(self) -> list[str]:
        return list(self.space)

    @property
    def U(self) -> np.ndarray:
        """The grid in the unit-cube encoding, (n, d)."""
        return self._U      # type: ignore[attr-defined]

    @property
    def f_opt(self) -> float:
        return float(self.accuracy.max())

    def config(self, i: int) -> dict[str, Any]:
        """Row ``i`` as a configuration (integers as int)."""
        return self._search.decode(self._U[i])      # type: ignore[attr-defined]

    def nearest(self, config: Mapping[str, Any]) -> int:
        """Index of the grid point nearest to ``config`` in the unit-cube encoding."""
        u = self._search.encode(config)          # type: ignore[attr-defined]
        return int(np.argmin(((self._U - u) ** 2).sum(axis=1)))


def available(name: str) -> bool:
    """Whether the table ``name`` has been built (its CSV and JSON exist)."""
    return name in NAMES and all(
        (TABLES_DIR / f"{name}.{ext}").is_file() for ext in ("csv", "json")
    )


@lru_cache(maxsize=None)
def load_table(name: str) -> LookupTable:
    """The shipped table ``name`` (svm, logreg or cnn); cached, so treat its arrays as read-only."""
    if name not in NAMES:
        raise ValueError(f"unknown table {name!r}; allowed: {list(NAMES)}")
    if not available(name):
        raise FileNotFoundError(f"table {name!r} not built: run python -m tuner.bench.build_tables "
                                f"--only {name}")
    meta = json.loads((TABLES_DIR / f"{name}.json").read_text())
    with open(TABLES_DIR / f"{name}.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], np.array(rows[1:], dtype=float)
    space = meta["space"]
    if header != [*space, "accuracy", "train_time"]:
        raise ValueError(f"table {name!r}: columns {header} do not match its space {list(space)}")
    d = len(space)
    arrays = [body[:, :d], body[:, d], body[:, d + 1]]
    for a in arrays:
        a.setflags(write=False)
    return LookupTable(name, space, *arrays, meta=meta)


__all__ = ["LookupTable", "load_table", "available", "NAMES", "TABLES_DIR"]
