"""Real learning curves as a benchmark problem: ``CurveTable`` reads a table that
``tuner.bench.build_curve_tables`` wrote (the built-in CNN or logistic regression, every epoch's
validation accuracy and seconds) and serves it with the interface of
``tuner.loop.problems.CrossingCurves``, so ``simulate`` and ``tuner.bench.curves`` use it as is.

A configuration is snapped to the table's nearest one (in the unit cube of the trainable's
space, as a user declares it).  Each trial draws one recorded training seed, for its curve and
its run time both, so both are as noisy as real runs; a report comes at the share of the run
time that epoch had taken in the recorded run.
"""

from __future__ import annotations

import csv
import gzip
from typing import Any, Mapping

import numpy as np

from trainables import get_trainable
from tuner.core.space import SearchSpace

from .build_curve_tables import table_path


def available(name: str) -> bool:
    return table_path(name).exists()


class CurveTable:
    """The recorded runs of trainable ``name`` (module docstring)."""

    def __init__(self, name: str, seed: int = 0):
        self.name = name
        self.space = dict(get_trainable(name).space)
        self._sp = SearchSpace.from_dict(self.space)
        runs: dict[tuple[int, int], list[tuple[int, float, float]]] = {}
        configs: dict[int, dict[str, Any]] = {}
        with gzip.open(table_path(name), "rt") as fh:
            for r in csv.DictReader(fh):
                i = int(r["config"])
                configs.setdefault(i, {k: r[k] for k in self.space})
                runs.setdefault((i, int(r["seed"])), []).append(
                    (int(r["epoch"]), float(r["accuracy"]), float(r["seconds"])))
        self.ids = sorted(configs)
        self.configs = [self._sp.decode(self._sp.encode(self._typed(configs[i]))) for i in self.ids]
        self.U = np.array([self._sp.encode(c) for c in self.configs])
        self.runs = {k: sorted(v) for k, v in runs.items()}
        self.seeds = {i: sorted(s for (j, s) in self.runs if j == i) for i in self.ids}
        self.epochs = max(e for run in self.runs.values() for e, _, _ in run)
        self.rng = np.random.default_rng(seed)
        self._next_time = float("nan")

    def _typed(self, raw: Mapping[str, str]) -> dict[str, Any]:
        return {k: (int(float(v)) if self.space[k]["type"] == "int" else float(v)
                    if self.space[k]["type"] == "float" else v) for k, v in raw.items()}

    def nearest(self, config: Mapping[str, Any]) -> int:
        """The table's configuration nearest to ``config`` (its config index)."""
        u = self._sp.encode({k: config[k] for k in self.space})
        return self.ids[int(np.argmin(((self.U - u) ** 2).sum(axis=1)))]

    def score(self, config: Mapping[str, Any], t: float) -> float:
        """Mean accuracy over the recorded seeds at the last kept epoch <= t."""
        i = self.nearest(config)
        vals = [next((a for e, a, _ in reversed(self.runs[(i, s)]) if e <= t), np.nan)
                for s in self.seeds[i]]
        return float(np.mean(vals))

    def mean_run_time(self, config: Mapping[str, Any]) -> float:
        i = self.nearest(config)
        return float(np.mean([self.runs[(i, s)][-1][2] for s in self.seeds[i]]))

    def __call__(self, config: Mapping[str, Any]) -> tuple[float, dict, list]:
        """One run: a recorded seed's final accuracy and its curve (fraction of its run time,
        {"epoch", "objective"}); its run time is what ``run_time()`` returns next."""
        i = self.nearest(config)
        run = self.runs[(i, int(self.rng.choice(self.seeds[i])))]
        total = run[-1][2]
        self._next_time = total
        curve = [(min(sec / total, 1.0), {"epoch": float(e), "objective": a}) for e, a, sec in run]
        return run[-1][1], {}, curve

    def run_time(self) -> "TableTime":
        return TableTime(self)


class TableTime:
    """The run time of the recorded run ``CurveTable.__call__`` drew last (the simulator asks
    for a trial's result, then for its run time)."""

    def __init__(self, table: CurveTable):
        self.table = table

    def __call__(self, config: Mapping[str, Any], rng: np.random.Generator) -> float:
        return self.table._next_time
