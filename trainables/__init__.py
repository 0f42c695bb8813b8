"""Training functions the tuner optimizes: SVM, logistic regression and CNN of paper 001 §6.2.

``get_trainable(name)(config, options, seed)`` trains one configuration and returns
``{"accuracy", "train_time", "injected_delay"}``: validation accuracy, the seconds the fit took
(measured by the trial with ``time.perf_counter``) and the seconds of injected delay slept
after it (paper 001's Poisson or fixed delays; 0 by default), so that the orchestrator's
start-to-result time includes the delay while ``train_time`` does not.  Same config, options
and seed give the same result.  Pass a different seed per trial for different training noise
and different Poisson delays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Mapping

from . import cnn, logreg, svm, synthetic
from .delay import inject_delay
from .options import Option, integer, resolve


@dataclass(frozen=True)
class Trainable:
    """A training function with its default search space and run options."""

    name: str
    space: dict
    options: dict
    objective: str
    run: Callable[[dict, dict, int], tuple[float, float]] = field(repr=False)
    option_specs: Mapping[str, Option] = field(repr=False)
    config_checks: Mapping[str, Callable[[Any], Any]] = field(repr=False)

    def __call__(self, config: Mapping[str, Any], options: Mapping[str, Any] | None = None,
                 seed: int = 0) -> dict[str, float]:
        opts = resolve(self.name, self.option_specs, options)
        cfg = self.check_config(config)
        try:
            seed = integer(0)(seed)
        except ValueError as exc:
            raise ValueError(f"seed of trainable '{self.name}': {exc}") from None
        accuracy, train_time = self.run(cfg, opts, seed)
        delay = inject_delay(opts["delay"], opts["delay_mean"], opts["delay_unit"], seed)
        return {"accuracy": float(accuracy), "train_time": float(train_time),
                "injected_delay": float(delay)}

    def check_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The configuration with values normalized (e.g. a whole float batch size to int);
        missing or unknown hyperparameters and impossible values raise ``ValueError``."""
        expected = sorted(self.config_checks)
        if not isinstance(config, Mapping) or set(config) != set(expected):
            got = sorted(config) if isinstance(config, Mapping) else config
            raise ValueError(f"config of trainable '{self.name}' must have exactly the "
                             f"hyperparameters {expected} (got {got!r})")
        out = {}
        for key, check in self.config_checks.items():
            try:
                out[key] = check(config[key])
            except ValueError as exc:
                raise ValueError(f"hyperparameter '{key}' of trainable '{self.name}': "
                                 f"{exc}") from None
        return out


def _make(name: str, module: ModuleType) -> Trainable:
    return Trainable(name=name, space=module.SPACE,
                     options={k: o.default for k, o in module.OPTIONS.items()},
                     objective="accuracy", run=module.run, option_specs=module.OPTIONS,
                     config_checks=module.CONFIG)


TRAINABLES: dict[str, Trainable] = {
    "svm": _make("svm", svm), "logreg": _make("logreg", logreg), "cnn": _make("cnn", cnn),
    "synthetic": _make("synthetic", synthetic)}


def get_trainable(name: str) -> Trainable:
    """The trainable called ``name``; an unknown name raises ``ValueError`` listing the names."""
    try:
        return TRAINABLES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown trainable {name!r}; allowed: {sorted(TRAINABLES)}") from None


def validate_options(name: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The trainable's options with defaults filled in and paths made absolute; unknown keys
    or bad values raise ``ValueError`` naming the field and what is allowed."""
    trainable = get_trainable(name)
    return resolve(name, trainable.option_specs, options)


__all__ = ["Trainable", "TRAINABLES", "get_trainable", "validate_options"]
