"""What a study file may hold: the schema of each section (a ``Field`` per key, with what it
does: docs/reference/config.md is generated from here), the validated sections as typed
dataclasses (``StudyConfig`` and its parts), and ``ConfigError``.  Reading a file into them is
``tuner.study.config``; a study's own defaults are ``tuner.study.defaults``."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, replace
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from tuner.core import fields
from tuner.core.algorithms import chosen_algorithm
from tuner.core.fields import Field
from tuner.loop.stopping import Fidelity

from .defaults import RUNTIME_STOP_MARGIN

if TYPE_CHECKING:
    from tuner.core.settings import Settings


class ConfigError(ValueError):
    """An invalid study configuration; the message names the field and what is allowed."""


def check_section(section: str, data: Any, schema: Mapping[str, Field]) -> dict[str, Any]:
    """``tuner.core.fields.check_section`` raising ``ConfigError``."""
    return fields.check_section(section, data, schema, ConfigError)


MEASURED = ("runtime", "cpu_time")       # measured in the worker around the training function
BUDGET_METRICS = (*MEASURED, "train_time")
TORCH_TRAINABLES = ("cnn", "logreg")     # the built-ins of the ``models`` extra

OBJECTIVE_SCHEMA = {
    "metric": Field((str,), "accuracy", doc="The metric the trainable returns that the study "
                    "optimizes (a built-in trainable names its own)."),
    "mode": Field((str,), "max", ("max", "min"), doc="Maximize or minimize it."),
    "bounds": Field((list, None), None, doc="Its known [low, high], if any (an accuracy: [0, 1]); "
                    "else the range observed so far."),
}
BUDGET_SCHEMA = {
    "limit": Field((float, str), required=True, above=0, doc="Each run's budget: seconds, or a "
                   "multiple of the reference run measured at start-up (`1.5x`)."),
    "reference": Field((str, dict, None), None, doc="A relative limit's reference run: `warmup` "
                       "(the centre of the space, run on every slot at start-up) or a "
                       "configuration."),
    "metric": Field((str,), "runtime", BUDGET_METRICS, doc="What the budget bounds: `runtime` "
                    "(wall seconds around the training function, in the worker), `cpu_time` "
                    "(the worker's CPU seconds) or `train_time` (the fit time the trial reports)."),
    "stop_margin": Field((float, None), "auto", minimum=0, words=("auto",), doc="Stop a run "
                         "once it passes the limit x (1 + margin) (`metric: runtime` only); "
                         f"null: never; `auto`: {RUNTIME_STOP_MARGIN:g} with `metric: runtime`, "
                         "else never."),
    "pace_margin": Field((float, None), 0.0, minimum=0, doc="Runs that report progress: stop "
                         "one whose pace puts its full length over the limit by more than this "
                         "share; null: no pace stops."),
}
FIDELITY_SCHEMA = {
    "metric": Field((str,), "epoch", doc="The progress metric each report carries."),
    "max": Field((float, None), None, above=0, doc="Its value at the end of a full run (the "
                 "built-in cnn and logreg: their epochs)."),
}
STOPPING_RULES = ("auto", "curve", "asha", "none")
EARLY_STOPPING_SCHEMA = {
    "rule": Field((str,), "auto", STOPPING_RULES, doc="Stop poor runs early: `curve` (a model "
                  "of partial curves predicts each run's final score; a run unlikely to beat the "
                  "best is stopped, and the search reads the same predictions), `asha` "
                  "(asynchronous successive halving), `none`, or `auto`: `curve` when the study "
                  "declares a `fidelity`."),
    "grace": Field((float,), 1.0, above=0, words=("auto",), doc="ASHA's first rung, in "
                   "`fidelity.metric` units, or `auto`: learned from the first 8 finished runs."),
    "eta": Field((float,), 3.0, above=1, doc="ASHA's reduction factor: rungs at grace x eta^k; "
                 "the top 1/eta of a rung go on."),
    "cutoff": Field((str,), "quantile", ("quantile", "rank"), doc="ASHA's test at a rung: Ray "
                    "Tune's `quantile` or Syne Tune's `rank`."),
    "kappa": Field((float,), 2.0, minimum=0, doc="The curve rule stops a run when mu + kappa "
                   "sigma of its final score is below the best."),
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
    "trials": Field((int,), 30, above=0, doc="How many trials the study starts."),
    "max_concurrent": Field((int,), 2, above=0, doc="Trials running at once (worker slots)."),
    "cpus_per_trial": Field((float,), 1.0, above=0, doc="CPUs Ray gives each trial."),
    "resources_per_trial": Field((dict, None), None, doc="Other Ray resources per trial, e.g. "
                                 "`{gpu: 0.5, licence: 1}`."),
    "trial_timeout": Field((float, None), None, above=0, doc="Stop a trial after this many "
                           "seconds (TIMED_OUT)."),
    "wall_clock_limit": Field((float, None), None, above=0, doc="End the study after this many "
                              "seconds; running trials are KILLED."),
    "seed": Field((int,), 0, doc="Seed of the optimizer and of the trials' `seed`."),
    "fail_fast": Field((int,), 3, minimum=0, doc="Stop the study when its first n trials fail "
                       "with one error (0: never)."),
    "retries": Field((int,), 0, minimum=0, doc="Run a trial again up to n times when its worker "
                     "or node is lost."),
}
RAY_SCHEMA = {"address": Field((str, None), None, doc="null: start a local Ray; `auto`, "
                               "`host:6379` or `ray://host:10001`: a cluster.")}
MLFLOW_SCHEMA = {
    "tracking_uri": Field((str, None), None, doc="null: $MLFLOW_TRACKING_URI, else "
                          "`sqlite:///mlflow.db`."),
    "experiment": Field((str, None), None, doc="The MLflow experiment (null: the study's name)."),
    "timeout": Field((float,), 30.0, above=0, doc="Seconds the study waits for MLflow at its "
                     "end, at most (at its start, 10 s at most after MLflow began starting "
                     "beside Ray); what MLflow has not taken by then stays in the study folder "
                     "and `--resume` sends it. The trials never wait for it."),
}
STUDY_SCHEMA = {
    "study": Field((str,), None, doc="The study's name: its folder and MLflow experiment "
                   "(default: the file's name)."),
    "trainable": Field((str,), required=True, doc="`svm`, `logreg`, `cnn`, `synthetic`, or your "
                       "own function as `module:function`."),
    "trainable_options": Field((dict, None), None, doc="The trainable's own options (docs/how-to/"
                               "built-in-models.md)."),
    "space": Field((dict, None), None, doc="The parameters, each `{type: float | int | "
                   "categorical, low, high, log, choices}`; default: the built-in's space."),
    "objective": Field((dict, None), None, doc="What is optimized (below)."),
    "budget": Field((dict, None), None, doc="A per-run budget (below)."),
    "optimizer": Field((dict, None), None, doc="The optimizer's [settings](settings.md)."),
    "run": Field((dict, None), None, doc="Trials, concurrency, limits (below)."),
    "ray": Field((dict, None), None, doc="Where Ray runs (below)."),
    "mlflow": Field((dict, None), None, doc="Where the study is logged (below)."),
    "output": Field((str,), "tuner_runs", doc="The folder that holds each study's folder."),
    "fidelity": Field((dict, None), None, doc="The runs report progress (below)."),
    "early_stopping": Field((dict, None), None, doc="A rule that stops poor runs (below)."),
    "context": Field((dict, None), None, doc="What this study's data is, e.g. `{n_rows: "
                     "120000}`: earlier studies at other contexts inform it."),
    "context_space": Field((dict, None), None, doc="The contexts' space, as `space` declares "
                           "parameters (default: inferred from the contexts seen)."),
    "warm_start": Field((list, str, None), None, doc="Earlier studies of the same trainable and "
                        "space to learn from (names or folders)."),
}
SECTIONS = {"objective": OBJECTIVE_SCHEMA, "budget": BUDGET_SCHEMA, "run": RUN_SCHEMA,
            "ray": RAY_SCHEMA, "mlflow": MLFLOW_SCHEMA, "fidelity": FIDELITY_SCHEMA,
            "early_stopping": EARLY_STOPPING_SCHEMA}

# command-line flag -> (section, key)
RUN_OVERRIDES = {"trials": ("run", "trials"), "max_concurrent": ("run", "max_concurrent"),
                 "wall_clock_limit": ("run", "wall_clock_limit"),
                 "trial_timeout": ("run", "trial_timeout"), "seed": ("run", "seed"),
                 "budget": ("budget", "limit"), "address": ("ray", "address"),
                 "trainable": (None, "trainable"), "tracking_uri": ("mlflow", "tracking_uri"),
                 "algorithm": ("optimizer", "algorithm"), "output": (None, "output"),
                 "context": (None, "context"), "warm_start": (None, "warm_start")}


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
    """The ``early_stopping`` section (``tuner.loop.stopping``): ``auto`` (``curve`` with a
    fidelity), ``curve``, ``asha`` or ``none``."""

    rule: str = "auto"
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
    timeout: float = 30.0           # the longest the study waits for MLflow (start, end)


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
    def algorithm(self) -> str:
        """The algorithm that picks the study's runs: ``settings.algorithm``, with ``auto``
        resolved by the space, the budget, the context and a full pool's ``max_concurrent - 1``
        trials running as a worker frees (``tuner.core.algorithms.chosen_algorithm``)."""
        from tuner.core.space import SearchSpace

        return chosen_algorithm(self.settings.algorithm,
                                SearchSpace.from_dict(self.space).categorical_only,
                                bool(self.settings.constraints) or self.budget is not None,
                                self.context is not None, self.run.max_concurrent - 1)

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
        budget = Budget(
            **{f.name: saved[f.name] for f in dataclass_fields(Budget) if f.name in saved}
        )
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
                # None: the default (a study saved before ``auto`` resumes with it)
                "early_stopping": (None if self.early_stopping.rule == "auto"
                                   else asdict(self.early_stopping)),
                "context": self.context, "context_space": self.context_space,
                "warm_start": list(self.warm_start) or None}


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
