"""A study's configuration (YAML or a mapping): loading and validation with errors that name
the field, and the validated study as typed sections.

A study file has these sections (``configs/`` spells them out; README "Study configuration"):

    study: name                      # MLflow experiment name, output folder name
    trainable: cnn                   # a built-in (svm, logreg, cnn, synthetic) or module:function
    trainable_options: {...}         # the trainable's own options (epochs, delay, ...)
    space: {param: {type: ..., ...}} # required for module:function; else the built-in default
    objective: {metric, mode, bounds}
    budget: {limit, reference, metric, stop_margin, pace_margin}
    fidelity: {metric, max}          # the runs report progress (e.g. epoch of 80)
    early_stopping: {rule, grace, eta, cutoff, kappa}   # none, asha or curve (needs fidelity)
    context: {n_rows: 120000, data_version: "2026-11"}  # what this study's data is (paper 001 §5)
    context_space: {n_rows: {type: int, ...}}   # optional: else inferred from the contexts seen
    warm_start: [study-a, study-b]   # earlier studies of the same trainable and space to learn from
    optimizer: {...}                 # tuner.core.settings.Settings fields
    run: {trials, max_concurrent, cpus_per_trial, resources_per_trial, trial_timeout, ...}
    ray: {address}
    mlflow: {tracking_uri, experiment}
    output: tuner_runs               # the folder that holds each study's folder
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
from dataclasses import asdict, dataclass, field, replace
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import yaml

from tuner.core import fields
from tuner.core.algorithms import get_algorithm
from tuner.core.fields import Field
from tuner.loop.stopping import Fidelity

if TYPE_CHECKING:
    from tuner.core.settings import Settings


class ConfigError(ValueError):
    """An invalid study configuration; the message names the field and what is allowed."""


def check_section(section: str, data: Any, schema: Mapping[str, Field]) -> dict[str, Any]:
    """``tuner.core.fields.check_section`` raising ``ConfigError``."""
    return fields.check_section(section, data, schema, ConfigError)


# Where a study of training runs (``tuner run``, ``tuner.run``, ``TunerSearch``) starts from other
# optimizer settings than the bare ``Optimizer``: training metrics crowd near the top with a few
# diverged runs far below, so the GP sees the diverged runs ranked under the others (the tail
# warp), with the Matern-5/2 kernel usual for training runs (docs/method.md "The defaults of
# studies"), and from 20 results on all of them by rank (the copula) where a GP on those ranks
# held-out results clearly better ("Tail or copula"; with a constraint or a context, the copula
# unless the GP on the scores as they are ranks clearly better, "Choosing the warp by held-out
# ranks"), and under the copula a floor on the GP's noise so that the ranks of near-tied scores
# read as noise, not as a rough function ("A noise floor under the rank warp"); with more than 3
# trials running, a running trial enters the GP at the posterior mean, not the minimum ("Wide
# pools: running trials at the posterior mean"); near the study's wall-clock limit only runs
# predicted to finish are started, and none once even the fastest finished run would not finish
# ("The study's deadline"); a constraint GP (the budget's) starts
# from the mean of the values seen, not from the boundary, and its running trials enter at its
# posterior mean, not at the boundary ("The constraint GPs' prior mean and running trials"); with
# 3 or fewer running and no budget, a running trial next to a result is raised from
# the minimum towards the results' posterior mean there ("Running trials next to a result");
# without a context, the GP takes over from the Sobol design after min(2 x parameters,
# max(parameters + 1, 5)) points instead of 2 x parameters ("A lean start-up design in a
# study"); a run-time budget bounds a configuration's mean run time, not its median (half the
# budget GP's noise variance added to its log-scale mean, "A budget on the mean run time").
# The bare Optimizer keeps its own defaults.
STUDY_OPTIMIZER_DEFAULTS: dict[str, Any] = {"output_warp": "auto", "kernel": "matern52",
                                            "noise_floor": 1e-3, "believe_past": 3,
                                            "running_objective": "auto",
                                            "finish_by_deadline": True,
                                            "idle_near_deadline": True,
                                            "startup_until_result": True,
                                            "constraint_prior_mean": "mean",
                                            "constraint_pending": "mean",
                                            "n_initial": "lean",
                                            "budget_bound": "mean"}


def study_optimizer_defaults(algorithm: Any = None, context: bool = False) -> dict[str, Any]:
    """``STUDY_OPTIMIZER_DEFAULTS`` for a study with this ``algorithm`` (None: the default),
    with or without a ``context``: Thompson sampling with a context starts without the rank
    warp, which spreads the pooled contexts' near-tied top scores and makes its draws wander
    (docs/contextual.md "Thompson sampling and the rank warp"); a study with a context keeps the
    start-up design of 2 x parameters, whose spread the later contexts' warm starts use
    (docs/method.md "A lean start-up design in a study")."""
    defaults = dict(STUDY_OPTIMIZER_DEFAULTS)
    if context:
        defaults["n_initial"] = "auto"
    try:
        thompson = algorithm is not None and get_algorithm(str(algorithm)).estimate == "ts"
    except ValueError:        # an unknown name: the optimizer section's check names it
        thompson = False
    if context and thompson:
        defaults["output_warp"] = "none"
    return defaults


def optimizer_settings(data: Any, defaults: Mapping[str, Any] | None = None) -> Settings:
    """The ``optimizer`` section over ``defaults`` (setting and switch names: a study's,
    ``study_optimizer_defaults``) as Settings; unknown keys, a research switch outside
    ``research`` and bad values are ConfigErrors."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"optimizer: expected a mapping, got {type(data).__name__}")
    data = dict(data)
    if "window" in data and isinstance(data["window"], Mapping):   # window: {unit:, size:}
        w = check_section("optimizer.window", data.pop("window"), {
            "unit": Field((str,), "iterations", ("iterations", "seconds")),
            "size": Field((int, float, str), math.inf)})
        data["window_unit"], data["window"] = w["unit"], w["size"]
    if "objective_bounds" in data and data["objective_bounds"] is not None:
        b = data["objective_bounds"]
        if not (isinstance(b, (list, tuple)) and len(b) == 2):
            raise ConfigError(f"optimizer.objective_bounds: expected [low, high], got {b!r}")
    try:
        from tuner.core.settings import Settings, overridden   # scipy: imported when a config is read

        s = overridden(Settings.from_dict(defaults or {}), data, "optimizer")
        s.validate("optimizer")
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc
    return s


class _Loader(yaml.SafeLoader):
    """YAML 1.1 as PyYAML reads it, but 1e-3 is a number (YAML 1.2), not the string '1e-3'."""


_Loader.add_implicit_resolver("tag:yaml.org,2002:float",
                              re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
                              list("-+0123456789"))


def read_yaml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"config file {str(p)!r} does not exist")
    try:
        data = yaml.load(p.read_text(), Loader=_Loader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
    if not isinstance(data, Mapping):
        raise ConfigError(f"{p}: expected a mapping of sections at the top level")
    return dict(data)


# --- `tuner run`: a real study on Ray ------------------------------------------------------------

MEASURED = ("runtime", "cpu_time")       # measured in the worker around the training function
BUDGET_METRICS = (*MEASURED, "train_time")
TORCH_TRAINABLES = ("cnn", "logreg")     # the built-ins of the ``models`` extra

OBJECTIVE_SCHEMA = {
    "metric": Field((str,), "accuracy"),
    "mode": Field((str,), "max", ("max", "min")),
    "bounds": Field((list, None), None),
}
BUDGET_SCHEMA = {
    "limit": Field((float, str), required=True, above=0),   # seconds, or "1.5x"
    "reference": Field((str, dict, None), None),   # relative limits: warmup (default) or a config
    "metric": Field((str,), "runtime", BUDGET_METRICS),
    "stop_margin": Field((float, None), None, minimum=0),
    "pace_margin": Field((float, None), 0.0, minimum=0),   # with a fidelity: stop by pace
}
FIDELITY_SCHEMA = {"metric": Field((str,), "epoch"), "max": Field((float, None), None, above=0)}
STOPPING_RULES = ("none", "asha", "curve")
EARLY_STOPPING_SCHEMA = {
    "rule": Field((str,), "none", STOPPING_RULES),
    "grace": Field((float,), 1.0, above=0, words=("auto",)),   # ASHA's first rung (fidelity
    # units), or auto: learned from the first finished runs (stopping.LearnedGraceASHA)
    "eta": Field((float,), 3.0, above=1),        # ASHA's reduction factor
    "cutoff": Field((str,), "quantile", ("quantile", "rank")),   # ASHA's test at a rung: Ray
    # Tune's quantile or Syne Tune's rank (stopping.ASHA)
    "kappa": Field((float,), 2.0, minimum=0),    # curve: stop when mu + kappa sigma < the best
}
REFERENCES = ("warmup",)
_MULTIPLE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*[xX]\s*$")


def parse_limit(value: Any, name: str = "budget.limit") -> tuple[float, bool]:
    """A budget limit: seconds (a number > 0) or a multiple of the reference run (``"1.5x"``).

    Returns ``(number, relative)``; anything else raises ``ConfigError`` naming the field."""
    if isinstance(value, str):
        m = _MULTIPLE.match(value)
        if m is None:
            try:
                value = float(value)
            except ValueError:
                raise ConfigError(f"{name}: expected seconds (a number > 0) or a multiple of the "
                                  f"reference run such as '1.5x' (got {value!r})") from None
        else:
            value, relative = float(m.group(1)), True
            if not value > 0:
                raise ConfigError(f"{name}: the multiple must be > 0 (got {m.group(0).strip()!r})")
            return value, relative
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not value > 0:
        raise ConfigError(f"{name}: expected seconds (a number > 0) or a multiple of the reference "
                          f"run such as '1.5x' (got {value!r})")
    return float(value), False
RUN_SCHEMA = {
    "trials": Field((int,), 30, above=0),
    "max_concurrent": Field((int,), 2, above=0),
    "cpus_per_trial": Field((float,), 1.0, above=0),
    "resources_per_trial": Field((dict, None), None),   # {gpu: 0.5, <custom Ray resource>: 1}
    "trial_timeout": Field((float, None), None, above=0),
    "wall_clock_limit": Field((float, None), None, above=0),
    "seed": Field((int,), 0),
    "fail_fast": Field((int,), 3, minimum=0),   # stop when the first n trials fail alike (0: never)
    "retries": Field((int,), 0, minimum=0),     # runs again of a trial whose worker or node was lost
}
RAY_SCHEMA = {"address": Field((str, None), None)}
MLFLOW_SCHEMA = {
    "tracking_uri": Field((str, None), None),   # None: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db
    "experiment": Field((str, None), None),
}
STUDY_SCHEMA = {
    "study": Field((str,), None),
    "trainable": Field((str,), required=True),
    "trainable_options": Field((dict, None), None),
    "space": Field((dict, None), None),
    "objective": Field((dict, None), None),
    "budget": Field((dict, None), None),
    "optimizer": Field((dict, None), None),
    "run": Field((dict, None), None),
    "ray": Field((dict, None), None),
    "mlflow": Field((dict, None), None),
    "output": Field((str,), "tuner_runs"),
    "fidelity": Field((dict, None), None),
    "early_stopping": Field((dict, None), None),
    "context": Field((dict, None), None),
    "context_space": Field((dict, None), None),
    "warm_start": Field((list, str, None), None),
}

# command-line flag -> (section, key)
RUN_OVERRIDES = {
    "trials": ("run", "trials"), "max_concurrent": ("run", "max_concurrent"),
    "wall_clock_limit": ("run", "wall_clock_limit"), "trial_timeout": ("run", "trial_timeout"),
    "seed": ("run", "seed"), "budget": ("budget", "limit"), "address": ("ray", "address"),
    "trainable": (None, "trainable"),
    "tracking_uri": ("mlflow", "tracking_uri"), "algorithm": ("optimizer", "algorithm"),
    "output": (None, "output"), "context": (None, "context"), "warm_start": (None, "warm_start"),
}


@dataclass(frozen=True)
class Objective:
    """The ``objective`` section: the metric the trainable reports, maximized or minimized."""

    metric: str
    mode: str = "max"
    bounds: list[float] | None = None


@dataclass(frozen=True)
class Budget:
    """The ``budget`` section, resolved: ``seconds`` is the limit in force (None while a relative
    limit, ``multiple`` x a reference run, is not measured yet)."""

    limit: float | str                   # as given: seconds, or "1.5x"
    reference: str | dict[str, Any] | None
    metric: str
    stop_margin: float | None
    relative: bool
    multiple: float | None
    seconds: float | None
    reference_seconds: float | None = None
    pace_margin: float | None = 0.0       # runs that report progress: stopped by their pace

    @property
    def stop_at(self) -> float | None:
        """The run time at which a run is stopped (None: no budget stop)."""
        if self.stop_margin is None or self.seconds is None:
            return None
        return self.seconds * (1 + self.stop_margin)


@dataclass(frozen=True)
class Run:
    """The ``run`` section (``RUN_SCHEMA``)."""

    trials: int
    max_concurrent: int
    cpus_per_trial: float
    trial_timeout: float | None
    wall_clock_limit: float | None
    seed: int
    fail_fast: int
    retries: int
    resources_per_trial: dict[str, float] | None = None   # besides the CPUs: GPU, custom ones

    @property
    def resources(self) -> dict[str, float]:
        """What one trial takes from Ray: ``CPU``, ``GPU`` and custom resources."""
        return {"CPU": self.cpus_per_trial, **(self.resources_per_trial or {})}


@dataclass(frozen=True)
class EarlyStopping:
    """The ``early_stopping`` section (``tuner.loop.stopping``): ``none``, ``asha`` or ``curve``."""

    rule: str = "none"
    grace: float | str = 1.0            # or "auto"
    eta: float = 3.0
    cutoff: str = "quantile"            # or "rank" (Syne Tune's)
    kappa: float = 2.0


@dataclass(frozen=True)
class RaySection:
    address: str | None                  # None: a local Ray


@dataclass(frozen=True)
class MlflowSection:
    tracking_uri: str
    experiment: str | None


@dataclass
class StudyConfig:
    """A validated `tuner run` study; ``resolved()`` is what gets logged and saved."""

    study: str
    trainable: str
    trainable_options: dict[str, Any]
    space: dict[str, Any]
    objective: Objective
    budget: Budget | None
    settings: Settings
    run: Run
    ray: RaySection
    mlflow: MlflowSection
    output: str
    trainable_fn: Callable[..., Any] | None = field(default=None, repr=False)  # a user's function
    fidelity: Fidelity | None = None           # the runs report progress along it
    early_stopping: EarlyStopping = field(default_factory=EarlyStopping)
    context: dict[str, Any] | None = None       # z of every suggestion (``tuner.study.warm``)
    context_space: dict[str, Any] | None = None  # as declared (None: inferred at the start)
    warm_start: tuple[str, ...] = ()            # earlier studies to learn from

    @property
    def experiment(self) -> str:
        return self.mlflow.experiment or self.study

    @property
    def directory(self) -> Path:
        """The study's folder: state, journal, trial table, best trial, plots."""
        return Path(self.output) / self.study

    @property
    def budget_pending(self) -> bool:
        """A relative budget whose limit in seconds is not measured yet (``with_budget``)."""
        return self.budget is not None and self.budget.seconds is None

    def with_budget(self, seconds: float, reference_seconds: float | None = None) -> "StudyConfig":
        """This study with its budget limit resolved to ``seconds``: the budget becomes the
        optimizer's run-time constraint (with ``stop_margin``)."""
        assert self.budget is not None
        budget = replace(self.budget, seconds=float(seconds), reference_seconds=reference_seconds)
        return replace(self, budget=budget, settings=_budget_settings(self.settings, budget))

    def with_saved_budget(self, saved: Mapping[str, Any]) -> "StudyConfig":
        """This study with the budget it was saved with (``resolved()["budget"]``) in place of
        its own, as the optimizer's run-time constraint too."""
        budget = Budget(**{f.name: saved[f.name] for f in dataclass_fields(Budget) if f.name in saved})
        base = replace(self.settings, stop_margin=None, constraints=[
            c for c in self.settings.constraints if c.get("type") != "budget"])
        return replace(self, budget=budget, settings=_budget_settings(base, budget))

    def resolved(self) -> dict[str, Any]:
        return {"study": self.study, "trainable": self.trainable,
                "trainable_options": self.trainable_options, "space": self.space,
                "objective": asdict(self.objective),
                "budget": None if self.budget is None else asdict(self.budget),
                "optimizer": self.settings.to_dict(), "run": asdict(self.run),
                "ray": asdict(self.ray), "mlflow": asdict(self.mlflow), "output": self.output,
                "fidelity": None if self.fidelity is None else asdict(self.fidelity),
                "early_stopping": (None if self.early_stopping.rule == "none"
                                   else asdict(self.early_stopping)),
                "context": self.context, "context_space": self.context_space,
                "warm_start": list(self.warm_start) or None}


def load_study(source: str | Path | Mapping[str, Any],
               overrides: Mapping[str, Any] | None = None) -> StudyConfig:
    """Read and validate a study (a YAML path or a mapping); ``overrides`` are command-line flags
    (``RUN_OVERRIDES`` names them), applied before validation so their errors name the field."""
    from trainables import FunctionTrainable, function_name, get_trainable

    data = dict(source) if isinstance(source, Mapping) else read_yaml(source)
    default_name = "study" if isinstance(source, Mapping) else Path(source).stem
    fn = data.get("trainable") if callable(data.get("trainable")) else None
    if fn is not None:                       # a Python function (tuner.run): named module:qualname
        data["trainable"] = function_name(fn)
    data = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in data.items()}
    for flag, value in (overrides or {}).items():
        if value is None:
            continue
        if flag not in RUN_OVERRIDES:
            raise ConfigError(f"unknown override {flag!r}; allowed: {sorted(RUN_OVERRIDES)}")
        section, key = RUN_OVERRIDES[flag]
        if section is None:
            if isinstance(value, Mapping) and isinstance(data.get(key), Mapping):
                value = {**data[key], **value}      # --context adds to the config's context
            data[key] = value
            continue
        if not isinstance(data.get(section) or {}, Mapping):
            raise ConfigError(f"{section}: expected a mapping, got {type(data[section]).__name__}")
        data[section] = {**(data.get(section) or {}), key: value}
    top = check_section("config", data, STUDY_SCHEMA)
    study = top["study"] or default_name
    try:
        trainable = get_trainable(fn or top["trainable"])
    except ValueError as exc:
        raise ConfigError(f"trainable: {exc}") from exc
    if trainable.name in TORCH_TRAINABLES and importlib.util.find_spec("torch") is None:
        raise ConfigError(f"trainable: {trainable.name} is built on torch, which is not installed: "
                          "pip install 'tuner[models]' (svm and your own functions need no torch)")
    try:
        options = trainable.resolve_options(top["trainable_options"] or {}, where="trainable_options")
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    if isinstance(trainable, FunctionTrainable):   # a Python function or an imported module:function
        fn = trainable.fn
    if trainable.space is None and not top["space"]:
        raise ConfigError(f"space: required with your own trainable {trainable.name}, e.g. "
                          "space: {lr: {type: float, low: 1.0e-4, high: 0.1, log: true}}")
    if trainable.objective is None and "metric" not in (top["objective"] or {}):
        raise ConfigError(f"objective.metric: required with your own trainable {trainable.name}: "
                          "the metric it returns that the study optimizes, e.g. "
                          "objective: {metric: accuracy, mode: max}")
    space_spec = top["space"] or trainable.space
    try:
        from tuner.core.space import SearchSpace

        SearchSpace.from_dict(space_spec)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    objective = Objective(**check_section("objective", top["objective"],
                                          {**OBJECTIVE_SCHEMA, "metric": Field((str,), trainable.objective)}))
    budget = _budget_section(top["budget"]) if top["budget"] else None
    run = _run_section(top["run"])
    opt = dict(top["optimizer"] or {})
    for key, section in (("mode", "objective.mode"), ("objective_bounds", "objective.bounds")):
        if key in opt:
            raise ConfigError(f"optimizer.{key}: set it as {section}")
    opt.setdefault("seed", run.seed)
    opt["mode"] = objective.mode
    opt["objective_bounds"] = objective.bounds
    defaults = study_optimizer_defaults(opt.get("algorithm"), top["context"] is not None)
    cfg = StudyConfig(study, trainable.name, options, dict(space_spec), objective, budget,
                      optimizer_settings(opt, defaults), run, RaySection(**check_section("ray", top["ray"], RAY_SCHEMA)),
                      _mlflow_section(top["mlflow"]), top["output"], fn,
                      *_progress_sections(top, trainable, options),
                      *_context_sections(top, space_spec))
    if budget is None:
        return cfg
    if budget.relative:
        if isinstance(budget.reference, Mapping):
            try:
                trainable.check_config(budget.reference)
            except ValueError as exc:
                raise ConfigError(f"budget.reference: {exc}") from None
        cfg.with_budget(1.0)   # validates the constraint now; the limit is measured at start-up
        return cfg
    return cfg.with_budget(budget.seconds)


def _progress_sections(top: Mapping[str, Any], trainable: Any, options: Mapping[str, Any]
                       ) -> tuple[Fidelity | None, EarlyStopping]:
    """``fidelity`` (a trainable that reports progress, and its full length) and
    ``early_stopping`` (its rule needs a fidelity)."""
    stopping = EarlyStopping(**check_section("early_stopping", top["early_stopping"],
                                             EARLY_STOPPING_SCHEMA))
    if top["fidelity"] is None:
        if stopping.rule != "none":
            raise ConfigError(f"early_stopping.rule: {stopping.rule} needs runs that report "
                              "progress: add fidelity: {metric: epoch, max: N}")
        return None, stopping
    fid = check_section("fidelity", top["fidelity"], FIDELITY_SCHEMA)
    if not trainable.reports:
        raise ConfigError(f"fidelity: trainable {trainable.name} does not report progress; a "
                          "function that reports yields a dict of metrics per step, e.g. "
                          "yield {'epoch': k, 'accuracy': acc}")
    full = fid["max"] if fid["max"] is not None else trainable.fidelity_max(options)
    if full is None:
        raise ConfigError(f"fidelity.max is required with your own trainable {trainable.name}: "
                          f"the value of {fid['metric']} at the end of a full run")
    return Fidelity(fid["metric"], float(full)), stopping


def _run_section(data: Any) -> Run:
    """The ``run`` section; ``resources_per_trial`` maps Ray resources to amounts (``cpu`` and
    ``gpu`` in any case; a ``cpu`` there is ``cpus_per_trial``)."""
    run = check_section("run", data, RUN_SCHEMA)
    res = run["resources_per_trial"]
    if res is not None:
        out: dict[str, float] = {}
        for key, amount in res.items():
            if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not (
                    math.isfinite(amount) and amount >= 0):
                raise ConfigError(f"run.resources_per_trial.{key}: expected an amount >= 0, "
                                  f"got {amount!r}")
            name = key.upper() if str(key).lower() in ("cpu", "gpu") else str(key)
            out[name] = float(amount)
        if "CPU" in out:
            if not out["CPU"] > 0:
                raise ConfigError("run.resources_per_trial.cpu: must be > 0")
            run["cpus_per_trial"] = out.pop("CPU")
        run["resources_per_trial"] = {k: v for k, v in out.items() if v > 0} or None
    return Run(**run)


def _context_sections(top: Mapping[str, Any], space: Mapping[str, Any]
                      ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, tuple[str, ...]]:
    """``context`` (a mapping of names to numbers or strings), ``context_space`` (parameters
    as in ``space``, one per context key) and ``warm_start`` (study names or folders)."""
    context, declared, warm = top["context"], top["context_space"], top["warm_start"]
    if context is not None:
        clash = sorted(set(context) & set(space))
        if clash:
            raise ConfigError(f"context: {clash} also name parameters of the space; give the "
                              "context its own names")
        for key, value in context.items():
            if isinstance(value, bool) or not isinstance(value, (int, float, str)) or (
                    isinstance(value, float) and not math.isfinite(value)):
                raise ConfigError(f"context.{key}: expected a finite number or a string, "
                                  f"got {value!r}")
    if declared is not None:
        if context is None:
            raise ConfigError("context_space: declared without a context; add context: {name: "
                              "value, ...} with the value of each key for this study")
        if set(declared) != set(context):
            raise ConfigError(f"context_space: its keys {sorted(declared)} must be the context's "
                              f"{sorted(context)}")
        from tuner.core.space import SearchSpace, SpaceError, check_value

        try:
            cs = SearchSpace.from_dict(declared)
            for key, p in cs.params.items():
                try:
                    check_value(p, context[key])
                except (SpaceError, TypeError, ValueError) as exc:
                    raise SpaceError(f"context.{key}: {exc}") from None
        except (SpaceError, TypeError, ValueError) as exc:
            raise ConfigError(f"context_space: {exc}") from None
    if isinstance(warm, str):
        warm = [warm]
    for k, name in enumerate(warm or []):
        if not isinstance(name, str) or not name:
            raise ConfigError(f"warm_start[{k}]: expected a study name or a study folder, "
                              f"got {name!r}")
    return (None if context is None else dict(context),
            None if declared is None else dict(declared), tuple(warm or ()))


def _budget_section(data: Any) -> Budget:
    """The ``budget`` section: limit in seconds, or a multiple of a reference run measured on the
    machine where the study runs (``limit: 1.5x``, ``reference: warmup``)."""
    budget = check_section("budget", data, BUDGET_SCHEMA)
    number, relative = parse_limit(budget["limit"])
    ref = budget["reference"]
    if not relative and ref is not None:
        raise ConfigError(f"budget.reference: only a relative limit such as '1.5x' uses a "
                          f"reference run (budget.limit is {budget['limit']!r} s)")
    if relative and ref is None:
        ref = "warmup"
    if isinstance(ref, str) and ref not in REFERENCES:
        raise ConfigError(f"budget.reference: must be one of {list(REFERENCES)} or a mapping of "
                          f"hyperparameters (got {ref!r})")
    if budget["stop_margin"] is not None and budget["metric"] != "runtime":
        raise ConfigError(f"budget.stop_margin: needs budget.metric: runtime (a run is stopped "
                          f"by the wall time it has run; its {budget['metric']} is known only "
                          "when it ends); drop stop_margin or use metric: runtime")
    return Budget(limit=f"{number:g}x" if relative else number, reference=ref,
                  metric=budget["metric"], stop_margin=budget["stop_margin"],
                  pace_margin=budget["pace_margin"], relative=relative,
                  multiple=number if relative else None, seconds=None if relative else number)


def _budget_settings(settings: Settings, budget: Budget) -> Settings:
    """``settings`` plus the budget as a run-time constraint of ``budget.seconds``."""
    extra = {"metric": budget.metric, "limit": budget.seconds, "type": "budget",
             "runtime": budget.metric == "runtime"}
    s = replace(settings, constraints=list(settings.constraints) + [extra])
    if budget.stop_margin is not None:
        s = replace(s, stop_margin=budget.stop_margin)
    try:
        s.validate("optimizer")
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc
    return s


def _mlflow_section(data: Any) -> MlflowSection:
    """MLflow settings; the tracking URI defaults to $MLFLOW_TRACKING_URI, then MLflow's own
    default ``sqlite:///mlflow.db`` (in the working directory)."""
    out = check_section("mlflow", data, MLFLOW_SCHEMA)
    if out["tracking_uri"] is None:
        out["tracking_uri"] = os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"
    return MlflowSection(**out)


def earlier_default_budget(saved: Mapping[str, Any] | None, now: Budget | None) -> bool:
    """``now`` is the built-in study's budget of today and ``saved`` one it had before (the
    budget line of ``DEFAULT_STUDY`` and configs/cnn.yaml, changed by an upgrade, not by the
    user): a resumed study keeps ``saved`` (``StudyConfig.with_saved_budget``)."""
    def line(b: Mapping[str, Any]) -> tuple:
        return tuple(b.get(k) for k in ("limit", "reference", "metric", "stop_margin"))

    if not saved or now is None:
        return False
    today = asdict(_budget_section(DEFAULT_STUDY["budget"]))
    return (line(asdict(now)) == line(today) and line(saved) != line(today)
            and line(saved) in {line(b) for b in EARLIER_DEFAULT_BUDGETS})


# The study `tuner run` runs without a config file (configs/cnn.yaml spells it out).
DEFAULT_STUDY: dict[str, Any] = {
    "study": "cnn-digits",
    "trainable": "cnn",
    "objective": {"metric": "accuracy", "mode": "max", "bounds": [0.0, 1.0]},
    "budget": {"limit": "1.5x", "reference": "warmup", "metric": "cpu_time"},
    "run": {"trials": 30, "max_concurrent": 2, "trial_timeout": 120.0},
}
# Its budget lines before (until 2026-11-27: wall seconds, stopped at twice the limit).
EARLIER_DEFAULT_BUDGETS = ({"limit": "1.5x", "reference": "warmup", "metric": "runtime",
                            "stop_margin": 1.0},)
