"""A study's own defaults: the optimizer settings a study of training runs starts from
(``study_optimizer_defaults``) and the built-in study that ``tuner run`` runs without a file."""

from __future__ import annotations

from typing import Any

from tuner.core.algorithms import get_algorithm


# Where a study of training runs (``tuner run``, ``tuner.run``, ``TunerSearch``) starts from other
# optimizer settings than the bare ``Optimizer``: training metrics crowd near the top with a few
# diverged runs far below, so the GP sees the diverged runs ranked under the others (the tail
# warp), with the Matern-5/2 kernel usual for training runs (docs/research/notes/method.md "The
# defaults of studies"), and from 20 results on all of them by rank (the copula) where a GP on those
# ranks held-out results clearly better ("Tail or copula"; with a constraint or a context, the
# copula unless the GP on the scores as they are ranks clearly better, "Choosing the warp by
# held-out ranks"), and under the copula a floor on the GP's noise so that the ranks of near-tied
# scores read as noise, not as a rough function ("A noise floor under the rank warp"); with more
# than 3 trials running, a running trial enters the GP at the posterior mean, not the minimum ("Wide
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
# budget GP's noise variance added to its log-scale mean, "A budget on the mean run time"); a run
# stopped past a wall-time budget (``RUNTIME_STOP_MARGIN``) enters the objective's GP at the
# posterior mean there, not at the minimum ("Stopping runs past a wall-time budget"); on a space
# of categoricals only, without a constraint or a context, log EI picks the next configuration
# instead of UCB (``algorithm: auto``, "Log EI on spaces of categories").
# The bare Optimizer keeps its own defaults.
STUDY_OPTIMIZER_DEFAULTS: dict[str, Any] = {"algorithm": "auto", "output_warp": "auto",
                                            "kernel": "matern52",
                                            "noise_floor": 1e-3, "believe_past": 3,
                                            "running_objective": "auto",
                                            "finish_by_deadline": True,
                                            "idle_near_deadline": True,
                                            "startup_until_result": True,
                                            "constraint_prior_mean": "mean",
                                            "constraint_pending": "mean",
                                            "n_initial": "lean",
                                            "budget_bound": "mean",
                                            "stopped_objective": "mean"}
# A study whose budget bounds wall time (``budget.metric: runtime``) stops a run once it passes
# the limit by this share (``budget.stop_margin: auto``): its result could no longer count, and
# on 12 budgeted problems the best feasible score by a quarter of the time went from 0.28 to 0.52
# of the way to the best (docs/research/notes/method.md "Stopping runs past a wall-time budget").
RUNTIME_STOP_MARGIN = 0.5


def study_optimizer_defaults(algorithm: Any = None, context: bool = False) -> dict[str, Any]:
    """``STUDY_OPTIMIZER_DEFAULTS`` for a study with this ``algorithm`` (None: the default),
    with or without a ``context``: Thompson sampling with a context starts without the rank
    warp, which spreads the pooled contexts' near-tied top scores and makes its draws wander
    (docs/research/notes/contextual.md "Thompson sampling and the rank warp"); a study with a
    context keeps the start-up design of 2 x parameters, whose spread the later contexts' warm
    starts use (docs/research/notes/method.md "A lean start-up design in a study")."""
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
