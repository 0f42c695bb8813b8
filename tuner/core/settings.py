"""The optimizer's settings: every knob, what each may be, and the paper-exact values.

``Settings`` holds them; ``SETTINGS_FIELDS`` declares each one's type and range
(``tuner.core.fields``); ``Settings.validate`` adds the rules between them.  ``PAPER_EXACT``
lists where the defaults leave paper 001 (App. C) and 004 (RPOL) behind.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from . import acquisition as acq
from .algorithms import ALGORITHMS
from .censoring import UNITS, Window
from .constraints import HANDLERS, Constraint, make_handler
from .fields import Field, check_keys, check_section
from .kernels import KERNELS
from .targets import OUTPUT_WARPS

CENSORING = ("hard", "soft")


@dataclass
class Settings:
    """Every knob of the optimizer.  ``PAPER_EXACT`` lists where the defaults leave paper 001 (App. C)
    and 004 (RPOL) behind, each chosen by the ablation in docs/evidence.md "What each change buys"."""

    algorithm: str = "gp-ucb-sdf"
    mode: str = "max"
    objective_bounds: tuple[float, float] | None = None
    window_unit: str = "iterations"
    window: float | str = math.inf     # censoring window m; "auto" = 2 x mean delay (001 §6)
    censoring: str = "soft"            # hard: 001 eq. 1 (same lambda); soft: own noise (below)
    censor_noise: float = 0.01         # soft: a censored entry's noise variance / amplitude
    believe_past: int | None = None    # soft, wide pools: with more trials running than this, a
                                       # running trial enters at the posterior mean, not the minimum
    running_objective: str = "minimum"  # soft: a running trial enters at the minimum (001 eq. 1) or
                                       # "blend": raised towards the posterior mean by the share of
                                       # the prior variance the results explain there; "auto":
                                       # blend unless a budget or run-time limit, the minimum there
    constraint_pending: str = "zero"   # a constraint's running trial: c~ = 0 (004 §5) or, soft
                                       # only, "mean": its posterior mean (or run-time bound)
    censor_at_partial: bool = True     # a trial that reported progress: censored at its last value
    stopped_objective: str = "minimum"  # soft, with stop_margin: a run stopped past its budget
                                       # enters at the minimum (001 eq. 1) or "mean": the posterior mean
    delay_lambda_power: float = 0.0    # eq. 2's delay term B_y lambda^-p sum sigma (0: as printed)
    prior_mean: str = "zero"           # objective GP's prior mean: zero (001) or the results' mean
    constraint_prior_mean: str = "zero"   # the constraint GPs': zero (the boundary g = 0), or the
                                       # mean of the values seen
    output_warp: str = "none"          # the targets as 001 scales them, or spread by rank: copula (targets.py),
                                       # tail: only the results below the lower fence by rank,
                                       # none-or-copula, tail-or-copula: by held-out ranks, or auto:
                                       # tail-or-copula without constraints and context (warp_choice.py)
    warp_margin: float = 0.1           # the held-out rank correlation by which one choice must beat
                                       # the other (warp_choice.prefer_copula)
    nu_terms: str = "pending"
    beta: float = 1.0
    beta_schedule: str = "constant"
    delta: float = 0.1
    b_y: float = 1.0
    kernel: str = "se"                 # se | matern52 | auto: at each fit, the one of higher evidence
    constraint_kernel: str = "same"    # the constraint GPs' kernel: "same" as the objective's, or one
    categorical_lengthscale: str = "shared"   # one per categorical (Hamming), or per choice
    context_kernel: str = "shared-level"   # with a context_space: (1 - u) k_x (w + (1 - w) k_z)
                                       # + u k_z, a level of each context beside a shared and a
                                       # context-specific part, w and u fit by the evidence;
                                       # "shared": without the level (u = 0), or "product": k_x k_z
                                       # (paper 001 §5)
    amplitude: float = 1.0
    lengthscale: float = 0.2
    noise: float = 1e-3
    noise_floor: float = 1e-6          # the objective GP's least noise variance in a fit (on the
                                       # [0, 1] targets); studies: 1e-3 with the rank warp
    refit_every: int = 10
    refit_growth: float = 0.05         # and only once the usable results grew by this fraction
    refit_dense_until: int = 0         # also refit after each usable result up to this many
    refit_apply: str = "now"           # at once (001 App. C), or "next": past fit_max_points results,
                                       # when the next is due (computed meanwhile, off the suggestion's path)
    lengthscale_prior: bool = True     # MAP fit with Optuna GPSampler's lengthscale prior
    fit_max_points: int = 250          # a refit fits on at most this many results (newest half + a sample)
    fit_restarts: int = 1
    n_initial: int | str = "auto"      # Sobol start-up design; "auto" = 2 x parameters,
                                       # "lean" = min(2 x parameters, max(parameters + 1, 5))
    startup_until_result: bool = False  # the design goes on while no result has arrived (wide pools)
    n_candidates: int = 1024
    n_local: int = 128
    n_starts: int = 3
    refine: str = "joint"              # the L-BFGS-B starts as one run on their sum, or one run each
    discrete_search: str = "local"     # ints and categories: local search after rounding, or round
    new_context: str = "mean"          # at a context without a result yet: the posterior mean
                                       # (no exploration term), or "ucb" (001 §5)
    finish_by_deadline: bool = False   # near Optimizer.deadline: only runs predicted to finish
    idle_near_deadline: bool = False   # near Optimizer.deadline: start nothing once even the
                                       # fastest finished run would not finish (can_start)
    random_fraction: float = 0.0       # past the start-up design, this share of the choices is a
                                       # random point (BOHB's rule; an option, measured with ASHA)
    running_correlation: float | None = 0.999   # never suggest x this correlated with a running
                                                # trial (a copy); None: allowed (001)
    seed: int = 0
    # Constraints (tuner.core.constraints has the tables of constraint keys, handlers and options).
    constraints: list = field(default_factory=list)    # [{metric, limit, type, runtime, observable}]
    constraint_handler: str = "pof"                    # pof | rpol | cbo | penalty | scgp
    handler_options: dict = field(default_factory=dict)
    beta_g: float | None = None      # beta_t of the constraint GPs; None: the objective's beta_t
    b_c: float = 1.0                 # B_c of v_t^g (004 §5), the delay term's bound on |c|
    use_elapsed_bound: bool = True   # run-time constraints: elapsed time as a lower bound, no window
    budget_scale: str = "log"        # a run-time budget's g: ln(run time / limit) or run time / limit - 1
    budget_bound: str = "median"     # log scale: the budget bounds a configuration's median run
                                     # time (the GP's mean of ln) or its "mean" (log-normal noise)
    stop_margin: float | None = None  # stop a run past limit x (1 + margin); None: never
    sliding_window: int | None = None  # RPOL-SWUCB (004 §6): only the last W trials inform the GPs
    exact_until: int | None = 2000     # past this many started trials the GPs use a subset; None: never
    subset_size: int = 1000            # finished trials in that subset (tuner.core.subset), plus the running

    def validate(self, where: str = "") -> None:
        """Check every setting (``SETTINGS_FIELDS``) and the rules between them; messages name
        the setting, prefixed by ``where`` (e.g. ``optimizer``)."""
        p = f"{where}." if where else ""
        values = {k: getattr(self, k) for k in SETTINGS_FIELDS}
        values["algorithm"] = str(self.algorithm).lower().replace("_", "-")
        check_section(where, values, SETTINGS_FIELDS)
        try:
            Window(self.window_unit, self.window)
        except ValueError as exc:
            raise ValueError(f"{p}{exc}") from None
        if self.objective_bounds is not None:
            b = self.objective_bounds
            if not (len(b) == 2 and all(isinstance(v, (int, float)) and math.isfinite(v) for v in b)
                    and b[0] < b[1]):
                raise ValueError(f"{p}objective_bounds: must be two finite numbers low < high "
                                 f"(got {self.objective_bounds!r})")
        cons = [Constraint.from_dict(c, f"{p}constraints[{i}]") for i, c in enumerate(self.constraints)]
        metrics = [c.metric for c in cons]
        if len(set(metrics)) < len(metrics):
            raise ValueError(f"{p}constraints: each metric may be constrained once (got {metrics})")
        observable = [c.metric for c in cons if c.observable]
        if self.constraint_handler == "scgp" and len(observable) < len(cons):
            raise ValueError(f"{p}constraint_handler scgp needs every constraint to be observable: "
                             f"true (not: {[m for m in metrics if m not in observable]})")
        if observable and self.constraint_handler != "scgp":
            raise ValueError(f"{p}constraints: observable constraints {observable} need "
                             f"constraint_handler: scgp (got {self.constraint_handler!r})")
        if self.stop_margin is not None and not any(c.runtime for c in cons):
            raise ValueError(f"{p}stop_margin needs a run-time constraint (a constraint with "
                             "runtime: true); none of the constraints is one")
        if self.exact_until is not None and self.subset_size > self.exact_until:
            raise ValueError(f"{p}subset_size ({self.subset_size}) must be at most exact_until "
                             f"({self.exact_until}): the subset replaces the exact GP past exact_until")
        if cons and values["algorithm"] == "gp-ei-sdf" and self.constraint_handler != "pof":
            raise ValueError(f"{p}constraint_handler: algorithm gp-ei-sdf weighs its log EI by the "
                             f"probability of feasibility, constraint_handler pof (got "
                             f"{self.constraint_handler!r})")
        try:
            make_handler(self.constraint_handler, len(cons), self.handler_options)
        except ValueError as exc:
            raise ValueError(f"{p}{exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """The settings as strict JSON (an infinite window as "inf", which Window reads back)."""
        d = asdict(self)
        if isinstance(d["window"], float) and math.isinf(d["window"]):
            d["window"] = "inf"
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Settings":
        check_keys("optimizer", d, cls.__dataclass_fields__)
        s = cls(**dict(d))
        if s.objective_bounds is not None:
            s.objective_bounds = (float(s.objective_bounds[0]), float(s.objective_bounds[1]))
        return s


# Paper 001's method (App. C) where the product's defaults deviate from it; the reproductions
# run on Settings(**PAPER_EXACT), so changing a default never changes them.
PAPER_EXACT: dict[str, Any] = {
    "censoring": "hard", "delay_lambda_power": 0.0, "prior_mean": "zero", "kernel": "se",
    "output_warp": "none",
    "n_initial": 1, "refit_every": 10, "refit_dense_until": 0, "lengthscale_prior": False,
    "constraint_handler": "rpol", "censor_at_partial": False, "discrete_search": "round",
    "categorical_lengthscale": "per-choice", "budget_scale": "linear", "context_kernel": "product",
    "exact_until": None, "refit_growth": 0.0, "running_correlation": None,
    "refine": "each", "new_context": "ucb",
    # the cap the reproductions ran with, kept when the default fell to 250 (App. C fits on
    # every result; the cap is the product's)
    "fit_max_points": 500,
}


# What each setting may be (tuner.core.fields); window, objective_bounds and the rules between
# settings are checked in Settings.validate.
SETTINGS_FIELDS: dict[str, Field] = {
    "algorithm": Field((str,), choices=lambda: sorted(ALGORITHMS)),
    "mode": Field((str,), choices=("max", "min")),
    "window_unit": Field((str,), choices=UNITS),
    "censoring": Field((str,), choices=CENSORING),
    "censor_noise": Field((float,), above=0),
    "believe_past": Field((int, None), minimum=0),
    "constraint_pending": Field((str,), choices=("zero", "mean")),
    "censor_at_partial": Field((bool,)),
    "running_objective": Field((str,), choices=("minimum", "blend", "auto")),
    "stopped_objective": Field((str,), choices=("minimum", "mean")),
    "delay_lambda_power": Field((float,), minimum=0, maximum=1),
    "prior_mean": Field((str,), choices=("zero", "mean")),
    "constraint_prior_mean": Field((str,), choices=("zero", "mean")),
    "output_warp": Field((str,), choices=OUTPUT_WARPS),
    "warp_margin": Field((float,), minimum=-1.0),
    "nu_terms": Field((str,), choices=("pending", "window")),
    "beta": Field((float,), minimum=0),
    "beta_schedule": Field((str,), choices=acq.BETA_SCHEDULES),
    "delta": Field((float,), above=0, maximum=1),
    "b_y": Field((float,), minimum=0),
    "kernel": Field((str,), choices=lambda: [*sorted(KERNELS), "auto"]),
    "constraint_kernel": Field((str,), choices=lambda: ["same", *sorted(KERNELS), "auto"]),
    "categorical_lengthscale": Field((str,), choices=("shared", "per-choice")),
    "amplitude": Field((float,), above=0),
    "lengthscale": Field((float,), above=0),
    "noise": Field((float,), above=0),
    "noise_floor": Field((float,), above=0, below=0.5),
    "refit_every": Field((int,), minimum=1),
    "refit_dense_until": Field((int,), minimum=0),
    "refit_growth": Field((float,), minimum=0),
    "refit_apply": Field((str,), choices=("next", "now")),
    "lengthscale_prior": Field((bool,)),
    "fit_max_points": Field((int,), minimum=1),
    "fit_restarts": Field((int,), minimum=0),
    "n_initial": Field((int,), words=("auto", "lean"), minimum=0),
    "startup_until_result": Field((bool,)),
    "context_kernel": Field((str,), choices=("product", "shared", "shared-level")),
    "n_candidates": Field((int,), minimum=1),
    "n_local": Field((int,), minimum=0),
    "n_starts": Field((int,), minimum=0),
    "refine": Field((str,), choices=("joint", "each")),
    "discrete_search": Field((str,), choices=("local", "round")),
    "random_fraction": Field((float,), minimum=0, below=1),
    "running_correlation": Field((float, None), above=0, maximum=1),
    "finish_by_deadline": Field((bool,)),
    "idle_near_deadline": Field((bool,)),
    "new_context": Field((str,), choices=("ucb", "mean")),
    "seed": Field((int,)),
    "constraints": Field((list, tuple)),
    "constraint_handler": Field((str,), choices=lambda: list(HANDLERS)),
    "handler_options": Field((dict,)),
    "beta_g": Field((float, None), above=0),
    "b_c": Field((float,), minimum=0),
    "use_elapsed_bound": Field((bool,)),
    "budget_scale": Field((str,), choices=("log", "linear")),
    "budget_bound": Field((str,), choices=("median", "mean")),
    "stop_margin": Field((float, None), minimum=0),
    "sliding_window": Field((int, None), minimum=2),
    "exact_until": Field((int, None), minimum=1),
    "subset_size": Field((int,), minimum=1),
}
