"""Run options of the trainables (data, epochs, threads, injected delay): one declaration per
option with its default, its check and a line of documentation.

Each option's ``Field`` (``tuner.core.fields``, the project's one way to check settings) says
what it may be; ``resolve`` merges user options over the defaults and names the offending field.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from tuner.core.fields import Field, check_keys

from .data import TABULAR


@dataclass(frozen=True)
class Option:
    default: Any
    field: Field                                   # what the value may be (tuner.core.fields)
    doc: str
    normalize: Callable[[Any], Any] | None = None  # applied to a valid value


def choice(*allowed: str) -> Field:
    return Field((str,), choices=allowed)


def integer(low: int) -> Field:
    return Field((int,), minimum=low)


def number(low: float, high: float | None = None, low_open: bool = False,
           high_open: bool = False) -> Field:
    """A finite number in [low, high]; ``low_open`` / ``high_open`` leave out the bound."""
    return Field((float,), above=low if low_open else None, minimum=None if low_open else low,
                 maximum=None if high_open else high, below=high if high_open else None,
                 finite=True)


FLAG = Field((bool,))


def absolute(path: Any) -> str:
    """A path made absolute against the current directory of whoever validates the options
    (the driver), so that a trial running in another working directory reads the same files."""
    return os.path.abspath(os.fspath(path))


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
    "standardize": Option(True, FLAG, "centre and scale features with training statistics"),
}
THREADS: dict[str, Option] = {
    "threads": Option(1, integer(1), "torch.set_num_threads for the trial (Ray runs one trial "
                                     "per CPU)"),
}


def resolve(name: str, specs: Mapping[str, Option], options: Mapping[str, Any] | None,
            where: str | None = None) -> dict:
    """Defaults overlaid with ``options``; unknown keys or bad values raise ``ValueError``
    naming the field (``where.key``, e.g. ``trainable_options.epochs``, or ``option 'epochs' of
    trainable 'cnn'``)."""
    options = {} if options is None else options
    if not isinstance(options, Mapping):
        raise ValueError(f"options for '{name}' must be a mapping (got {type(options).__name__})")
    check_keys(where or f"options of trainable '{name}'", options, specs)
    out = {}
    for key, spec in specs.items():
        label = f"{where}.{key}" if where else f"option '{key}' of trainable '{name}'"
        value = spec.field.check(label, options.get(key, spec.default))
        out[key] = value if spec.normalize is None or value is None else spec.normalize(value)
    return out


# The hyperparameters both torch trainables (logistic regression, CNN) tune; declared here, free
# of torch, so that validating a study never imports it.
SGD_CONFIG: dict[str, Field] = {
    "batch_size": integer(1), "lr": number(0.0, low_open=True), "lr_decay": number(0.0)}


def sgd_space(batch_low: int, batch_high: int) -> dict:
    """Batch size, learning rate and decay: the search space of both torch trainables."""
    return {
        "batch_size": {"type": "int", "low": batch_low, "high": batch_high},
        "lr": {"type": "float", "low": 1e-6, "high": 1.0, "log": True},
        "lr_decay": {"type": "float", "low": 1e-6, "high": 1.0, "log": True},
    }
