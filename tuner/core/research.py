"""The research and paper switches: how the method departs from papers 001, 003 and 004, one
group per part of the optimizer.  The harness and the reproductions turn them; a user rarely
needs to (``Settings.research``; docs/reference/research.md is generated from here).

Every switch has a name of its own across the groups, so a flat mapping of names
(``{"censoring": "hard", "n_starts": 10}``) says the same as the grouped one
(``{"censored": {"censoring": "hard"}, "search": {"n_starts": 10}}``): ``Research.from_dict``
reads both.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from . import acquisition as acq
from .fields import check_keys, check_section, schema, setting
from .kernels import KERNELS

CENSORING = ("hard", "soft")


@dataclass
class CensoringSwitches:
    """How running, stopped and late trials enter the GPs (paper 001 eq. 1 and the product's
    deviations from it)."""

    censoring: str = setting(
        "soft", "`soft`: a censored trial enters the GP at the minimum with a noise variance of "
        "its own, `censor_noise` x the kernel amplitude; `hard`: with the GP's fitted noise, "
        "paper 001 eq. 1 as printed.", (str,), choices=CENSORING)
    censor_noise: float = setting(
        0.01, "Soft censoring: a censored entry's noise variance as a share of the kernel "
        "amplitude.", (float,), above=0)
    believe_past: int | None = setting(
        None, "Soft censoring, wide pools: with more trials running than this, a running trial "
        "that has not reported a step enters the objective's GP at the results' posterior mean "
        "(a believer) instead of the minimum; null: the minimum at any width (eq. 1).",
        (int, None), minimum=0)
    running_objective: str = setting(
        "minimum", "Soft censoring: a running trial enters at the `minimum` (eq. 1) or, "
        "`blend`, at y_min + (1 - sigma_D^2 / a)(mu_D - y_min)^+, raised towards the results' "
        "posterior mean by the share of the prior variance they explain there; `auto`: blend "
        "unless a constraint is a budget or on run time.", (str,),
        choices=("minimum", "blend", "auto"))
    stopped_objective: str = setting(
        "minimum", "With `stop_margin`: a run stopped past its budget enters the objective's GP "
        "at the `minimum` (eq. 1) or at the posterior `mean` (its score is unknown; the "
        "constraint GP holds the violation).", (str,), choices=("minimum", "mean"))
    constraint_pending: str = setting(
        "zero", "A running trial's constraint value: `zero`, paper 004 §5's c~ = 0 (with the "
        "elapsed-time bound for a run time), or, soft censoring only, `mean`: the constraint "
        "GP's posterior mean, or the run-time bound where that is higher.", (str,),
        choices=("zero", "mean"))
    censor_at_partial: bool = setting(
        True, "A trial that reported progress is censored at its last reported value, not at "
        "the minimum (also after it is stopped).", (bool,))
    use_elapsed_bound: bool = setting(
        True, "Run-time constraints: a running trial's elapsed time is a lower bound on its run "
        "time (a right-censored observation), with no window.", (bool,))


@dataclass
class ExplorationSwitches:
    """The exploration weight nu_t = beta_t + B sum sigma (paper 001 eq. 2, paper 002)."""

    beta_schedule: str = setting(
        "constant", "beta_t: `constant` (`beta`, paper 001 App. C), `srinivas-finite` / "
        "`srinivas-continuous` (paper 002 Thm 1 / 2, square root taken), `sdf` (paper 001's "
        "beta_t with the information gain of the chosen inputs).", (str,),
        choices=acq.BETA_SCHEDULES)
    delta: float = setting(
        0.1, "delta of the paper 002 and 001 schedules (the failure probability).", (float,),
        above=0, maximum=1)
    b_y: float = setting(
        1.0, "B_y of eq. 2: the delay term's bound on |f|.", (float,), minimum=0)
    nu_terms: str = setting(
        "pending", "eq. 2's delay term sums sigma over the trials still running inside their "
        "window (`pending`) or over all of the last m queries (`window`, as printed).", (str,),
        choices=("pending", "window"))
    delay_lambda_power: float = setting(
        0.0, "p: the delay term times lambda^-p, the factor the proof of Thm 1 drops for "
        "lambda > 1 (0: as printed).", (float,), minimum=0, maximum=1)
    beta_g: float | None = setting(
        None, "beta_t of the constraint GPs; null: the objective's.", (float, None), above=0)
    b_c: float = setting(
        1.0, "B_c of v_t^g (paper 004 §5): the delay term's bound on |c|.", (float,), minimum=0)


@dataclass
class ModelSwitches:
    """The GPs' prior: mean, kernels and the hyperparameters they start from."""

    prior_mean: str = setting(
        "zero", "The objective GP's prior mean: `zero` (the worst value, paper 001) or the "
        "`mean` of the results.", (str,), choices=("zero", "mean"))
    constraint_prior_mean: str = setting(
        "zero", "The constraint GPs' prior mean: `zero` (g = 0, the boundary) or the `mean` of "
        "the values seen.", (str,), choices=("zero", "mean"))
    constraint_kernel: str = setting(
        "same", "The constraint GPs' kernel: `same` as the objective's, or one of `se`, "
        "`matern52`, `auto`.", (str,), choices=lambda: ["same", *sorted(KERNELS), "auto"])
    categorical_lengthscale: str = setting(
        "shared", "One lengthscale per categorical parameter (`shared`, a Hamming kernel) or "
        "one per one-hot column (`per-choice`).", (str,), choices=("shared", "per-choice"))
    context_kernel: str = setting(
        "shared-level", "With a `context_space`: `shared-level`, (1 - u) k_x (w + (1 - w) k_z) "
        "+ u k_z, a part every context shares, a context-specific part and a level of each "
        "context, w and u fit by the evidence; `shared`: without the level (u = 0); "
        "`product`: paper 001 §5's k_x k_z.", (str,),
        choices=("product", "shared", "shared-level"))
    amplitude: float = setting(1.0, "The kernel amplitude before the first fit.", (float,),
                               above=0)
    lengthscale: float = setting(0.2, "Every lengthscale before the first fit (unit cube).",
                                 (float,), above=0)
    noise: float = setting(1e-3, "The noise variance before the first fit.", (float,), above=0)
    noise_floor: float = setting(
        1e-6, "The objective GP's least noise variance in a fit, on the [0, 1] targets (with "
        "`output_warp` choosing, only while the rank warp is on).", (float,),
        above=0, below=0.5)


@dataclass
class FittingSwitches:
    """When and how the GPs' hyperparameters are fit by marginal likelihood."""

    refit_growth: float = setting(
        0.05, "A refit also waits until the usable results grew by this fraction.", (float,),
        minimum=0)
    refit_dense_until: int = setting(
        0, "Refit after each usable result up to this many.", (int,), minimum=0)
    refit_apply: str = setting(
        "now", "Each refit applied at once (`now`, paper 001 App. C) or, `next`, past "
        "`fit_max_points` results the one started at the last due point, so the fit can run "
        "off the suggestion's path (in a Ray actor under `tuner run`).", (str,),
        choices=("next", "now"))
    lengthscale_prior: bool = setting(
        True, "A MAP fit with Optuna GPSampler's lengthscale prior (false: maximum "
        "likelihood).", (bool,))
    fit_max_points: int = setting(
        250, "A refit fits on at most this many results (the newest half and a random sample "
        "of the rest); the posterior still uses every result.", (int,), minimum=1)
    fit_restarts: int = setting(
        1, "Random starts of a fit, besides the hyperparameters in force.", (int,), minimum=0)


@dataclass
class SearchSwitches:
    """How the acquisition is maximized and what the suggestion may be."""

    startup_until_result: bool = setting(
        False, "The Sobol start-up design goes on while no result has arrived (pools wider "
        "than the design).", (bool,))
    n_local: int = setting(128, "Candidates perturbed around the 5 incumbents.", (int,),
                           minimum=0)
    n_starts: int = setting(3, "L-BFGS-B starts from the best candidates.", (int,), minimum=0)
    refine: str = setting(
        "joint", "The L-BFGS-B starts as one run on the sum of their values (`joint`, as "
        "BoTorch batches restarts) or one run each (`each`).", (str,),
        choices=("joint", "each"))
    discrete_search: str = setting(
        "local", "Integers and categories: hill climbing over one-move neighbours after "
        "rounding (`local`) or rounding only (`round`).", (str,), choices=("local", "round"))
    new_context: str = setting(
        "mean", "At a context without a result yet: the posterior mean there (`mean`, no "
        "exploration term) or UCB (`ucb`, paper 001 §5).", (str,), choices=("ucb", "mean"))
    random_fraction: float = setting(
        0.0, "Past the start-up design, this share of the choices is a random configuration "
        "(BOHB's rule).", (float,), minimum=0, below=1)
    running_correlation: float | None = setting(
        0.999, "Never suggest a configuration this correlated with a running trial (a copy "
        "of it); null: allowed, as in paper 001.", (float, None), above=0, maximum=1)


@dataclass
class BudgetSwitches:
    """How a run-time budget is modelled."""

    budget_scale: str = setting(
        "log", "A run-time budget's g: `log`, ln(run time / limit), or `linear`, run time / "
        "limit - 1 (papers 000 and 004).", (str,), choices=("log", "linear"))
    budget_bound: str = setting(
        "median", "On the log scale, what the budget bounds: a configuration's `median` run "
        "time (the GP's mean of ln) or its `mean` (plus half the GP's noise variance).", (str,),
        choices=("median", "mean"))


GROUPS: dict[str, type] = {"censored": CensoringSwitches, "exploration": ExplorationSwitches,
                           "model": ModelSwitches, "fitting": FittingSwitches,
                           "search": SearchSwitches, "budget": BudgetSwitches}
# every switch's group, by its name (names are unique across the groups)
GROUP_OF: dict[str, str] = {name: g for g, cls in GROUPS.items() for name in schema(cls)}


@dataclass
class Research:
    """The research and paper switches, grouped by the part of the optimizer they change."""

    censored: CensoringSwitches = field(default_factory=CensoringSwitches)
    exploration: ExplorationSwitches = field(default_factory=ExplorationSwitches)
    model: ModelSwitches = field(default_factory=ModelSwitches)
    fitting: FittingSwitches = field(default_factory=FittingSwitches)
    search: SearchSwitches = field(default_factory=SearchSwitches)
    budget: BudgetSwitches = field(default_factory=BudgetSwitches)

    def flat(self) -> dict[str, Any]:
        """Every switch by its name."""
        return {k: v for g in GROUPS for k, v in dataclasses.asdict(getattr(self, g)).items()}

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """The switches by group (JSON)."""
        return {g: dataclasses.asdict(getattr(self, g)) for g in GROUPS}

    def validate(self, where: str = "research") -> None:
        """Check every switch; a message names it (``research.censoring: ...``)."""
        values = self.flat()
        for g, cls in GROUPS.items():
            check_section(where, {k: values[k] for k in schema(cls)}, schema(cls))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Research | None,
                  where: str = "research") -> Research:
        """Switches given by name (flat), by group, or both; unknown names raise ValueError."""
        if isinstance(data, Research):
            return dataclasses.replace(data)
        return cls.from_flat(flatten(data, where))

    @classmethod
    def from_flat(cls, values: Mapping[str, Any]) -> Research:
        """From switches by name (every name known: ``GROUP_OF``)."""
        by_group: dict[str, dict[str, Any]] = {g: {} for g in GROUPS}
        for name, value in values.items():
            by_group[GROUP_OF[name]][name] = value
        return cls(**{g: GROUPS[g](**kw) for g, kw in by_group.items()})


def flatten(data: Mapping[str, Any] | None, where: str = "research") -> dict[str, Any]:
    """The switches of a flat or grouped mapping by name; unknown names raise ValueError
    naming ``where`` and the allowed names."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a mapping of research switches, got "
                         f"{type(data).__name__}")
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in GROUPS:
            if not isinstance(value, Mapping):
                raise ValueError(f"{where}.{key}: expected a mapping of its switches "
                                 f"{sorted(schema(GROUPS[key]))}, got {value!r}")
            check_keys(f"{where}.{key}", value, schema(GROUPS[key]))
            out.update(value)
        else:
            check_keys(where, {key: value}, [*GROUP_OF, *GROUPS])
            out[key] = value
    return out
