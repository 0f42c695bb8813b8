"""A search space learned from the configurations seen, for a component that is not handed the
space (a Ray Tune scheduler: Ray gives it trials' configurations, never the param space).

Each key of the first configuration is one input.  A number is scaled by the range of the
first ``settle`` configurations' values (on a log scale when they are all > 0 and span more
than two decades, as a learning rate drawn log-uniformly does); later values outside that range
map outside [0, 1], which a GP's kernel takes as it is.  Anything else (a string, a bool, None)
is a choice, coded by the order in which its values appeared (0, 0.25, 0.5, ...).  The scaling
is fixed once ``settle`` configurations were seen and a choice's code never changes, so that an
input once encoded keeps its value.  Written by hand: scikit-learn's scalers and encoders need
every value up front.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

SETTLE = 8
CHOICE_STEP = 0.25


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


class SeenSpace:
    """The unit-cube encoding of configurations, learned from those seen (module docstring).

    Args:
        first: the first configuration (its keys are the inputs).
        settle: how many configurations fix the numbers' scaling.
    """

    def __init__(self, first: Mapping[str, Any], settle: int = SETTLE):
        self.names = sorted(first)
        self.settle = settle
        self.seen: list[dict[str, Any]] = []
        self.choices: dict[str, list[Any]] = {}
        self.scale: dict[str, tuple[float, float, bool]] = {}   # name -> (lo, hi, log)
        self.add(first)

    @property
    def dim(self) -> int:
        return len(self.names)

    def add(self, config: Mapping[str, Any]) -> None:
        """A configuration seen (a trial added); the first ``settle`` set the scaling.

        Args:
            config: the trial's configuration.
        """
        for name in self.names:
            v = config.get(name)
            if not _is_number(v):
                known = self.choices.setdefault(name, [])
                if v not in known:
                    known.append(v)
        if len(self.seen) < self.settle:
            self.seen.append(dict(config))
            self._rescale()

    def _rescale(self) -> None:
        for name in self.names:
            values = [float(c[name]) for c in self.seen if _is_number(c.get(name))]
            if not values:
                continue
            lo, hi = min(values), max(values)
            log = lo > 0 and hi / lo > 100
            if log:
                lo, hi = math.log(lo), math.log(hi)
            self.scale[name] = (lo, hi, log)

    def encode(self, config: Mapping[str, Any]) -> np.ndarray:
        """The configuration as a point (a key missing or of another kind maps to 0.5).

        Args:
            config: a trial's configuration.
        """
        x = np.full(self.dim, 0.5)
        for i, name in enumerate(self.names):
            v = config.get(name)
            if _is_number(v) and name in self.scale:
                lo, hi, log = self.scale[name]
                u = math.log(float(v)) if log and float(v) > 0 else float(v)
                x[i] = (u - lo) / (hi - lo) if hi > lo else 0.5
            elif not _is_number(v) and v in self.choices.get(name, []):
                x[i] = CHOICE_STEP * self.choices[name].index(v)
        return x
