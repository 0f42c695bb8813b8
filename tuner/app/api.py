"""``tuner.run``: tune your own training function from Python, as ``tuner run`` does from YAML.

    import tuner

    def fit(config):
        ...                                   # train with config["lr"], config["depth"]
        return {"accuracy": acc}

    result = tuner.run(fit, space={"lr": {"type": "float", "low": 1e-4, "high": 0.1, "log": True},
                                   "depth": {"type": "int", "low": 2, "high": 8}},
                       objective="accuracy", budget="1.5x", trials=40, max_concurrent=4)
    # {"trial_id", "config", "value", "metrics"}: the best trial within the budget
    result.best
    # the study is named after the function (``mytrain.fit``): pass study="..." to name it

Every argument is the YAML section of the same name (``configs/``,
docs/how-to/study-files.md), validated the same way, with errors that name the field.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from tuner.study.config import load_study


def default_name(trainable: Callable[..., Any] | str) -> str:
    """A study's default name: its function's module and name (``mytrain.fit``; a script run
    as ``__main__`` by the script's file name), so that two projects' ``fit`` differ."""
    module, _, fn = (trainable.rpartition(":") if isinstance(trainable, str) else
                     (getattr(trainable, "__module__", "") or "",
                      "", getattr(trainable, "__qualname__", "study")))
    if module == "__main__":
        module = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] not in ("", "-c") else ""
    module = module.rpartition(".")[2]
    return f"{module}.{fn}".replace("<", "").replace(">", "").strip(".") or "study"


def study_mapping(trainable: Callable[[dict], Mapping[str, Any]] | str, *,
                  space: Mapping[str, Any], objective: str | Mapping[str, Any],
                  budget: float | str | Mapping[str, Any] | None = None, trials: int = 30,
                  max_concurrent: int = 2, study: str | None = None,
                  optimizer: Mapping[str, Any] | None = None, run: Mapping[str, Any] | None = None,
                  ray: Mapping[str, Any] | None = None, mlflow: Mapping[str, Any] | None = None,
                  output: str = "tuner_runs", context: Mapping[str, Any] | None = None,
                  warm_start: str | list[str] | None = None) -> dict[str, Any]:
    """The study as the mapping a YAML file would give (see ``run``)."""
    name = study or default_name(trainable)
    return {
        "study": name, "trainable": trainable, "space": dict(space),
        "objective": {"metric": objective} if isinstance(objective, str) else dict(objective),
        "budget": None if budget is None else
        (dict(budget) if isinstance(budget, Mapping) else {"limit": budget}),
        "run": {"trials": trials, "max_concurrent": max_concurrent, **dict(run or {})},
        "optimizer": dict(optimizer or {}), "ray": dict(ray or {}), "mlflow": dict(mlflow or {}),
        "output": output,
        **({"context": dict(context)} if context is not None else {}),
        **({"warm_start": warm_start} if warm_start else {}),
    }


def run(trainable: Callable[[dict], Mapping[str, Any]] | str, *, space: Mapping[str, Any],
        objective: str | Mapping[str, Any], budget: float | str | Mapping[str, Any] | None = None,
        trials: int = 30, max_concurrent: int = 2, study: str | None = None,
        optimizer: Mapping[str, Any] | None = None, run: Mapping[str, Any] | None = None,
        ray: Mapping[str, Any] | None = None, mlflow: Mapping[str, Any] | None = None,
        output: str = "tuner_runs", context: Mapping[str, Any] | None = None,
        warm_start: str | list[str] | None = None, resume: bool = False, fresh: bool = False):
    """Tune ``trainable`` on Ray, every trial in MLflow, as ``tuner run`` does from a study file;
    returns the ``StudyResult`` (``.best``: the best trial within the budget, or None).

    Args:
        trainable: a function ``config -> {metric: value}`` (or one that yields such a dict
            per step, with ``run``'s ``fidelity``), or ``"module:function"``, or a built-in name.
        space: the parameters, ``{name: {type: float | int | categorical, low, high, log,
            choices}}``.
        objective: the metric to maximize, or ``{metric, mode: max | min, bounds}``.
        budget: each run's budget: seconds, a multiple of a reference run (``"1.5x"``), or
            ``{limit, reference, metric, stop_margin, pace_margin}``; None: no budget.
        trials: how many trials the study starts.
        max_concurrent: trials running at once.
        study: the study's name (default: the function's module and name, ``mytrain.fit``).
        optimizer: the optimizer's settings (docs/reference/settings.md), research switches
            under ``research``.
        run, ray, mlflow: those sections of a study file (docs/reference/config.md).
        output: the folder that holds each study's folder.
        context: what this study's data is (``{"n_rows": 120000}``): earlier studies at other
            contexts inform it (docs/how-to/retune-when-data-changes.md).
        warm_start: earlier studies of the same function and space to learn from.
        resume: continue the study from its saved state.
        fresh: start it over (an existing folder is kept under a new name).

    Every error in the arguments is a ``ConfigError`` that names the field.
    """
    from tuner.app.wiring import study_runner

    cfg = load_study(study_mapping(trainable, space=space, objective=objective, budget=budget,
                                   trials=trials, max_concurrent=max_concurrent, study=study,
                                   optimizer=optimizer, run=run, ray=ray, mlflow=mlflow,
                                   output=output, context=context, warm_start=warm_start))
    return study_runner(cfg, resume=resume, fresh=fresh).run()
