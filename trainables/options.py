"""Run options of the trainables (data, epochs, threads, injected delay): one declaration per
option with its default, its check and a line of documentation.

An option's check returns the normalized value or raises ``ValueError`` saying what is allowed;
``resolve`` merges user options over the defaults and names the offending field.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .data import TABULAR


@dataclass(frozen=True)
class Option:
    default: Any
    check: Callable[[Any], Any]
    doc: str


def choice(*allowed: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if v not in allowed:
            raise ValueError(f"must be one of {list(allowed)} (got {v!r})")
        return v
    return check


def integer(low: int) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < low:
            raise ValueError(f"must be a whole number >= {low} (got {v!r})")
        return int(v)
    return check


def number(low: float, high: float = math.inf, low_open: bool = False,
           high_open: bool = False) -> Callable[[Any], float]:
    def check(v: Any) -> float:
        ok = (not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
              and (v > low if low_open else v >= low) and (v < high if high_open else v <= high))
        if not ok:
            lb = "(" if low_open else "["
            hb = ")" if high_open or high == math.inf else "]"
            raise ValueError(f"must be a number in {lb}{low}, {high}{hb} (got {v!r})")
        return float(v)
    return check


def epochs_or_auto(v: Any) -> int | str:
    return "auto" if v == "auto" else integer(1)(v)


def flag(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"must be true or false (got {v!r})")
    return v


def directory(v: Any) -> str:
    """A path, made absolute against the current directory of whoever validates the options
    (the driver), so that a trial running in another working directory reads the same files."""
    if not isinstance(v, (str, os.PathLike)) or not str(v):
        raise ValueError(f"must be a directory path (got {v!r})")
    return os.path.abspath(os.fspath(v))


DELAY: dict[str, Option] = {
    "delay": Option("none", choice("none", "fixed", "poisson"),
                    "injected delay after training: none, fixed (delay_mean units) or poisson "
                    "(Poisson(delay_mean) units), as paper 001 §6.2"),
    "delay_mean": Option(10.0, number(0.0), "mean of the injected delay, in delay units"),
    "delay_unit": Option(0.1, number(0.0, low_open=True), "seconds per delay unit"),
}
SPLIT: dict[str, Option] = {
    "val_fraction": Option(0.3, number(0.0, 1.0, low_open=True, high_open=True),
                           "share of the data held out for validation (paper: 70/30 split)"),
    "split_seed": Option(0, integer(0), "seed of the stratified train/validation split; fixed "
                                        "so that every trial is scored on the same validation set"),
}
TABULAR_DATA: dict[str, Option] = {
    "dataset": Option("breast_cancer", choice(*TABULAR), "scikit-learn data set"),
    "standardize": Option(True, flag, "centre and scale features with training statistics"),
}
THREADS: dict[str, Option] = {
    "threads": Option(1, integer(1), "torch.set_num_threads for the trial (Ray runs one trial "
                                     "per CPU)"),
}


def resolve(name: str, specs: Mapping[str, Option], options: Mapping[str, Any] | None) -> dict:
    """Defaults overlaid with ``options``; unknown keys or bad values raise ``ValueError``."""
    options = {} if options is None else options
    if not isinstance(options, Mapping):
        raise ValueError(f"options for '{name}' must be a mapping (got {type(options).__name__})")
    unknown = sorted(set(options) - set(specs))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for trainable '{name}'; "
                         f"allowed: {sorted(specs)}")
    out = {}
    for key, spec in specs.items():
        try:
            out[key] = spec.check(options.get(key, spec.default))
        except ValueError as exc:
            raise ValueError(f"option '{key}' of trainable '{name}': {exc}") from None
    return out


# The hyperparameters both torch trainables (logistic regression, CNN) tune; declared here, free
# of torch, so that validating a study never imports it.
SGD_CONFIG: dict[str, Callable[[Any], Any]] = {
    "batch_size": integer(1), "lr": number(0.0, low_open=True), "lr_decay": number(0.0)}


def sgd_space(batch_low: int, batch_high: int) -> dict:
    """Batch size, learning rate and decay: the search space of both torch trainables."""
    return {
        "batch_size": {"type": "int", "low": batch_low, "high": batch_high},
        "lr": {"type": "float", "low": 1e-6, "high": 1.0, "log": True},
        "lr_decay": {"type": "float", "low": 1e-6, "high": 1.0, "log": True},
    }
