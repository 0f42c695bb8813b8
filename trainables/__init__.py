"""Training functions the tuner optimizes: SVM, logistic regression and CNN of paper 001 §6.2.

``get_trainable(name)(config, options, seed)`` trains one configuration and returns
``{"accuracy", "train_time", "injected_delay"}``: validation accuracy, the seconds the fit took
(measured by the trial with ``time.perf_counter``) and the seconds of injected delay slept
after it (paper 001's Poisson or fixed delays; 0 by default), so that the study's
start-to-result time includes the delay while ``train_time`` does not.  Same config, options
and seed give the same result.  Pass a different seed per trial for different training noise
and different Poisson delays.
"""

from __future__ import annotations

import numbers

import importlib
import inspect
import os
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Generator, Iterator, Mapping

from .delay import inject_delay
from tuner.core.fields import Field

from .options import Option, integer, resolve

SEED = integer(0)


@dataclass(frozen=True)
class Trainable:
    """A training function with its default search space and run options."""

    name: str
    space: dict
    options: dict
    objective: str
    run: Callable[[dict, dict, int], tuple[float, float]] = field(repr=False)
    option_specs: Mapping[str, Option] = field(repr=False)
    config_checks: Mapping[str, Field] = field(repr=False)
    steps: Callable[[dict, dict, int], Iterator[dict]] | None = field(default=None, repr=False)
    epochs: Callable[[dict], int] | None = field(default=None, repr=False)
    warm_up: Mapping[str, Any] = field(default_factory=dict, repr=False)   # the module's WARM_UP

    @property
    def reports(self) -> bool:
        """Whether it reports progress (``epoch``) during a run."""
        return self.steps is not None

    def fidelity_max(self, options: Mapping[str, Any] | None = None) -> float | None:
        """Epochs of a full run with these options (None: it does not report progress)."""
        return None if self.epochs is None else float(self.epochs(self.resolve_options(options)))

    def progress(self, config: Mapping[str, Any], options: Mapping[str, Any] | None = None,
                 seed: int = 0) -> Generator[dict[str, float], None, dict[str, float]]:
        """Train, yielding the metrics after each epoch (a trainable without epochs yields
        nothing); returns what ``__call__`` returns for the whole run."""
        if self.steps is None:
            return self(config, options, seed)
        opts = self.resolve_options(options)
        cfg = self.check_config(config)
        seed = SEED.check(f"seed of trainable '{self.name}'", seed)
        last: dict[str, float] = {}
        for m in self.steps(cfg, opts, seed):
            last = {k: float(v) for k, v in m.items()}
            yield last
        delay = inject_delay(opts["delay"], opts["delay_mean"], opts["delay_unit"], seed)
        return {"accuracy": last["accuracy"], "train_time": last["train_time"],
                "injected_delay": float(delay)}

    def __call__(self, config: Mapping[str, Any], options: Mapping[str, Any] | None = None,
                 seed: int = 0) -> dict[str, float]:
        opts = self.resolve_options(options)
        cfg = self.check_config(config)
        seed = SEED.check(f"seed of trainable '{self.name}'", seed)
        accuracy, train_time = self.run(cfg, opts, seed)
        delay = inject_delay(opts["delay"], opts["delay_mean"], opts["delay_unit"], seed)
        return {"accuracy": float(accuracy), "train_time": float(train_time),
                "injected_delay": float(delay)}

    def warm_up_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` for a short run that loads and initializes what a run needs: no injected
        delay, and the module's ``WARM_UP`` (one epoch; no simulated training time)."""
        return {**options, **({"delay": "none"} if "delay" in options else {}), **self.warm_up}

    def resolve_options(self, options: Mapping[str, Any] | None,
                        where: str | None = None) -> dict[str, Any]:
        """The run options with defaults filled in and paths made absolute; unknown keys or bad
        values raise ``ValueError`` naming the field (under ``where``) and what is allowed."""
        return resolve(self.name, self.option_specs, options, where)

    def check_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The configuration with values normalized (e.g. a whole float batch size to int);
        missing or unknown hyperparameters and impossible values raise ``ValueError``."""
        expected = sorted(self.config_checks)
        if not isinstance(config, Mapping) or set(config) != set(expected):
            got = sorted(config) if isinstance(config, Mapping) else config
            raise ValueError(f"config of trainable '{self.name}' must have exactly the "
                             f"hyperparameters {expected} (got {got!r})")
        out = {key: f.check(f"hyperparameter '{key}' of trainable '{self.name}'", config[key])
               for key, f in self.config_checks.items()}
        return out


def _make(name: str, module: ModuleType) -> Trainable:
    return Trainable(name=name, space=module.SPACE,
                     options={k: o.default for k, o in module.OPTIONS.items()},
                     objective="accuracy", run=module.run, option_specs=module.OPTIONS,
                     config_checks=module.CONFIG, steps=getattr(module, "steps", None),
                     epochs=getattr(module, "epochs", None),
                     warm_up=getattr(module, "WARM_UP", {}))


class _Registry(Mapping[str, Trainable]):
    """The built-in trainables by name; each module is imported on first use (none of them
    imports torch before it trains)."""

    NAMES = ("cnn", "logreg", "svm", "synthetic")

    def __init__(self) -> None:
        self._loaded: dict[str, Trainable] = {}

    def __getitem__(self, name: str) -> Trainable:
        if name not in self.NAMES:
            raise KeyError(name)
        if name not in self._loaded:
            self._loaded[name] = _make(name, importlib.import_module(f"{__name__}.{name}"))
        return self._loaded[name]

    def __iter__(self):
        return iter(self.NAMES)

    def __len__(self) -> int:
        return len(self.NAMES)


TRAINABLES: Mapping[str, Trainable] = _Registry()


@dataclass(frozen=True)
class FunctionTrainable:
    """A user's training function ``fn(config) -> {metric: value}``: no default space, no
    options, no default objective metric (the study must name them)."""

    name: str                              # "module:function"
    fn: Callable[[dict], Mapping[str, Any]] = field(repr=False)
    space: None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    objective: None = None
    option_specs: Mapping[str, Option] = field(default_factory=dict, repr=False)

    @property
    def reports(self) -> bool:
        """A generator function reports progress: it yields a dict of metrics per step."""
        return inspect.isgeneratorfunction(self.fn)

    def fidelity_max(self, options: Mapping[str, Any] | None = None) -> float | None:
        return None

    def progress(self, config: Mapping[str, Any], options: Mapping[str, Any] | None = None,
                 seed: int = 0) -> Generator[dict[str, float], None, dict[str, float]]:
        """A generator function's steps (each a dict of metrics); returns the last one, updated
        with what the function returns (if anything).  A plain function yields nothing."""
        if not self.reports:
            return self(config, options, seed)
        last: dict[str, float] = {}
        gen = self.fn(dict(config))
        while True:
            try:
                m = next(gen)
            except StopIteration as end:
                return {**last, **self._numbers(end.value or {})}
            last = self._numbers(m)
            yield last

    def __call__(self, config: Mapping[str, Any], options: Mapping[str, Any] | None = None,
                 seed: int = 0) -> dict[str, float]:
        if self.reports:                   # a generator: its last step is the result
            gen = self.progress(config, options, seed)
            while True:
                try:
                    next(gen)
                except StopIteration as end:
                    return end.value
        return self._numbers(self.fn(dict(config)))

    def _numbers(self, out: Any) -> dict[str, float | str]:
        """The returned dict: numbers as floats (metrics), anything else as its text (kept as
        the trial's attributes: ``split_attrs``)."""
        if not isinstance(out, Mapping):
            raise TypeError(f"trainable {self.name} must return a dict of metrics, e.g. "
                            f"{{'accuracy': 0.93}} (got {type(out).__name__})")
        return {str(k): float(v) if isinstance(v, numbers.Real) else str(v) for k, v in out.items()}

    def resolve_options(self, options: Mapping[str, Any] | None,
                        where: str | None = None) -> dict[str, Any]:
        if options:
            raise ValueError(f"trainable_options are for the built-in trainables; {self.name} "
                             f"gets only its config (got {dict(options)!r})")
        return {}

    def check_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return dict(config)


def _import_function(spec: str) -> FunctionTrainable:
    """``package.module:function`` (a dotted attribute path after the colon works too)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"a user trainable is 'module:function', e.g. 'mypackage.train:fit' "
                         f"(got {spec!r})")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())     # as `python -m` would: the user's own modules
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} of {spec!r} ({exc}); it must be "
                         f"importable from the directory you run in or from the installed "
                         f"packages") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"module {module_name!r} has no {attr!r} (from {spec!r})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{spec!r} is not a function")
    return FunctionTrainable(spec, obj)


def split_attrs(out: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """A trainable's returned dict as (metrics: the numbers, attributes: the rest as text)."""
    metrics = {k: float(v) for k, v in out.items() if isinstance(v, numbers.Real)}
    return metrics, {k: str(v) for k, v in out.items() if k not in metrics}


def function_name(fn: Callable) -> str:
    """How a Python function is named in a study: ``module:qualname``."""
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


def get_trainable(name: str | Callable) -> Trainable | FunctionTrainable:
    """A built-in trainable by name, a user function by ``'module:function'``, or a function
    itself; an unknown name raises ``ValueError`` listing the names."""
    if callable(name):
        return FunctionTrainable(function_name(name), name)
    if isinstance(name, str) and ":" in name:
        return _import_function(name)
    try:
        return TRAINABLES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown trainable {name!r}; allowed: {sorted(TRAINABLES)} or your own "
                         f"function as 'module:function'") from None


def validate_options(name: str | Callable, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``get_trainable(name).resolve_options(options)``."""
    return get_trainable(name).resolve_options(options)


__all__ = ["Trainable", "FunctionTrainable", "TRAINABLES", "function_name", "get_trainable",
           "validate_options"]
