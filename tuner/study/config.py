"""Reading a study: a YAML file or a mapping (``tuner.run``'s keywords) validated into a
``StudyConfig`` (``tuner.study.schema``), every error a ``ConfigError`` that names the field and
what is allowed; command-line flags applied first (``RUN_OVERRIDES``).

A study file has these sections (``configs/`` spells them out; docs/reference/config.md lists
every key):

    study: name                      # MLflow experiment name, output folder name
    trainable: cnn                   # a built-in (svm, logreg, cnn, synthetic) or module:function
    trainable_options: {...}         # the trainable's own options (epochs, delay, ...)
    space: {param: {type: ..., ...}} # required for module:function; else the built-in default
    objective: {metric, mode, bounds}
    budget: {limit, reference, metric, stop_margin, pace_margin}
    fidelity: {metric, max}          # the runs report progress (e.g. epoch of 80)
    early_stopping: {rule, grace, eta, cutoff, kappa}   # auto, curve, asha, none (needs fidelity)
    context: {n_rows: 120000, data_version: "2026-11"}  # what this study's data is (paper 001 §5)
    context_space: {n_rows: {type: int, ...}}   # optional: else inferred from the contexts seen
    warm_start: [study-a, study-b]   # earlier studies of the same trainable and space to learn from
    # tuner.core.settings.Settings, research switches under research
    optimizer: {...}
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
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import yaml

from tuner.core.fields import Field
from tuner.loop.stopping import Fidelity

from .defaults import (DEFAULT_STUDY, EARLIER_DEFAULT_BUDGETS, RUNTIME_STOP_MARGIN,
                       study_optimizer_defaults)
from .schema import (BUDGET_SCHEMA, EARLY_STOPPING_SCHEMA, FIDELITY_SCHEMA, MLFLOW_SCHEMA,
                     OBJECTIVE_SCHEMA, RAY_SCHEMA, REFERENCES, RUN_OVERRIDES, RUN_SCHEMA,
                     STUDY_SCHEMA, TORCH_TRAINABLES, Budget, ConfigError, EarlyStopping,
                     MlflowSection, Objective, RaySection, Run, StudyConfig, check_section,
                     parse_limit)

if TYPE_CHECKING:
    from tuner.core.settings import Settings


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
        # scipy: imported when a config is read
        from tuner.core.settings import Settings, overridden

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


def _objective_section(given: Mapping[str, Any] | None, default_metric: str | None) -> Objective:
    """The objective; a metric whose name reads as one to minimize needs its mode said."""
    objective = Objective(**check_section("objective", given, {
        **OBJECTIVE_SCHEMA, "metric": Field((str,), default_metric)}))
    if "mode" not in (given or {}) and reads_as_minimized(objective.metric):
        m = objective.metric
        raise ConfigError(f"objective.mode: {m!r} reads as something to minimize, and a study "
                          f"maximizes unless told: say objective: {{metric: {m}, mode: min}} "
                          f"(tuner.run(..., objective={{'metric': '{m}', 'mode': 'min'}})), or "
                          "mode: max to maximize it")
    return objective


def load_study(source: str | Path | Mapping[str, Any],
               overrides: Mapping[str, Any] | None = None) -> StudyConfig:
    """Read and validate a study (a YAML path or a mapping); ``overrides`` are command-line flags
    (``RUN_OVERRIDES`` names them), applied before validation so their errors name the field."""
    from trainables import FunctionTrainable, function_name

    data = dict(source) if isinstance(source, Mapping) else read_yaml(source)
    default_name = "study" if isinstance(source, Mapping) else Path(source).stem
    fn = data.get("trainable") if callable(data.get("trainable")) else None
    if fn is not None:                       # a Python function (tuner.run): named module:qualname
        data["trainable"] = function_name(fn)
    top = check_section("config", _overridden(data, overrides or {}), STUDY_SCHEMA)
    study = top["study"] or default_name
    trainable, options = _trainable(fn or top["trainable"], top["trainable_options"])
    # a Python function or an imported module:function
    if isinstance(trainable, FunctionTrainable):
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
    objective = _objective_section(top["objective"], trainable.objective)
    budget = _budget_section(top["budget"]) if top["budget"] else None
    run = _run_section(top["run"])
    fidelity, stopping = _progress_sections(top, trainable, options)
    context, context_space, warm_start = _context_sections(top, space_spec)
    cfg = StudyConfig(study=study, trainable=trainable.name, trainable_options=options,
                      space=dict(space_spec), objective=objective, budget=budget,
                      settings=_study_settings(top, objective, run), run=run,
                      ray=RaySection(**check_section("ray", top["ray"], RAY_SCHEMA)),
                      mlflow=_mlflow_section(top["mlflow"]), output=top["output"],
                      trainable_fn=fn, fidelity=fidelity, early_stopping=stopping,
                      context=context, context_space=context_space, warm_start=warm_start)
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


# names of metrics one minimizes: a study that maximizes one of these needs mode: max said
MINIMIZED = re.compile(r"(^|[^a-z])(loss|losses|errors?|err|mse|rmse|mae|mape|nll|regret|costs?|"
                       r"latency|time|seconds|perplexity|wer|cer)([^a-z]|$)")


def reads_as_minimized(metric: str) -> bool:
    """Whether a metric's name reads as one to minimize (``val_loss``, ``valLoss``, ``rmse``)."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", metric).lower()    # camelCase as snake_case
    return MINIMIZED.search(words) is not None


def _study_settings(top: Mapping[str, Any], objective: Objective, run: Run) -> Settings:
    """The ``optimizer`` section over a study's defaults, with the objective's mode and bounds
    and, unless it names one, the run's seed."""
    opt = dict(top["optimizer"] or {})
    for key, section in (("mode", "objective.mode"), ("objective_bounds", "objective.bounds")):
        if key in opt:
            raise ConfigError(f"optimizer.{key}: set it as {section}")
    opt.setdefault("seed", run.seed)
    opt["mode"] = objective.mode
    opt["objective_bounds"] = objective.bounds
    defaults = study_optimizer_defaults(opt.get("algorithm"), top["context"] is not None)
    return optimizer_settings(opt, defaults)


def _overridden(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The study's sections with the command-line flags (``RUN_OVERRIDES``) applied."""
    data = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in data.items()}
    for flag, value in overrides.items():
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
    return data


def _trainable(name: Any, options: Mapping[str, Any] | None) -> tuple[Any, dict[str, Any]]:
    """The trainable (a built-in's name, ``module:function`` or a function) and its options."""
    from trainables import get_trainable

    try:
        trainable = get_trainable(name)
    except ValueError as exc:
        raise ConfigError(f"trainable: {exc}") from exc
    if trainable.name in TORCH_TRAINABLES and importlib.util.find_spec("torch") is None:
        raise ConfigError(f"trainable: {trainable.name} is built on torch, which is not installed: "
                          "pip install 'tuner[models]' (svm and your own functions need no torch)")
    try:
        return trainable, trainable.resolve_options(options or {}, where="trainable_options")
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def _progress_sections(top: Mapping[str, Any], trainable: Any, options: Mapping[str, Any]
                       ) -> tuple[Fidelity | None, EarlyStopping]:
    """``fidelity`` (a trainable that reports progress, and its full length) and
    ``early_stopping`` (its rule needs a fidelity)."""
    stopping = EarlyStopping(**check_section("early_stopping", top["early_stopping"],
                                             EARLY_STOPPING_SCHEMA))
    if top["fidelity"] is None:
        if stopping.rule not in ("none", "auto"):
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
    if budget["stop_margin"] == "auto":
        budget["stop_margin"] = RUNTIME_STOP_MARGIN if budget["metric"] == "runtime" else None
    if budget["stop_margin"] is not None and budget["metric"] != "runtime":
        raise ConfigError(f"budget.stop_margin: needs budget.metric: runtime (a run is stopped "
                          f"by the wall time it has run; its {budget['metric']} is known only "
                          "when it ends); drop stop_margin or use metric: runtime")
    return Budget(limit=f"{number:g}x" if relative else number, reference=ref,
                  metric=budget["metric"], stop_margin=budget["stop_margin"],
                  pace_margin=budget["pace_margin"], relative=relative,
                  multiple=number if relative else None, seconds=None if relative else number)


def _mlflow_section(data: Any) -> MlflowSection:
    """MLflow settings; the tracking URI defaults to $MLFLOW_TRACKING_URI, then MLflow's own
    default ``sqlite:///mlflow.db`` (in the working directory)."""
    out = check_section("mlflow", data, MLFLOW_SCHEMA)
    if out["tracking_uri"] is None:
        out["tracking_uri"] = os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"
    return MlflowSection(**out)


def earlier_unset_stop(saved: Mapping[str, Any] | None, now: Budget | None) -> bool:
    """``saved`` is a wall-time budget of a study started before a study stopped runs past one
    (``budget.stop_margin: auto``, 2026-12-06), with no stop, and ``now`` the same budget with
    the stop ``auto`` gives today: a resumed study keeps ``saved``
    (``StudyConfig.with_saved_budget``), as it keeps the other settings of when it started."""
    if not saved or now is None or saved.get("metric") != "runtime":
        return False
    return (saved.get("stop_margin") is None and now.stop_margin == RUNTIME_STOP_MARGIN
            and all(saved.get(k) == getattr(now, k)
                    for k in ("limit", "reference", "metric", "pace_margin")))


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
