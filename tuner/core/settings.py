"""The optimizer's settings: the knobs a user turns, each declared once with what it may be and
what it does (docs/reference/settings.md is generated from here), the research and paper
switches apart (``tuner.core.research``), and ``PAPER_EXACT``: paper 001's method as published.

    Settings(algorithm="gp-ts-sdf", objective_bounds=(0, 1))
    Settings(research={"censoring": "hard"})         # a research switch, by name or by group
    Settings.from_dict(PAPER_EXACT)                   # GP-UCB-SDF as in paper 001 (+ RPOL)
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from .algorithms import ALGORITHMS, AUTO
from .censoring import UNITS, Window
from .constraints import HANDLERS, Constraint, make_handler
from .fields import check_keys, check_section, schema, setting
from .kernels import KERNELS
from .research import GROUP_OF, Research, flatten
from .targets import OUTPUT_WARPS


@dataclass
class Settings:
    """The optimizer's settings (``Optimizer(space, settings)``, the ``optimizer`` section of a
    study, ``TunerSearch``'s keywords).  A study starts from other defaults for some of them
    (``tuner.study.defaults``); ``research`` holds the switches a user rarely turns."""

    algorithm: str = setting(
        "gp-ucb-sdf", "How the next configuration is chosen: `gp-ucb-sdf` (GP-UCB with censored "
        "feedback, paper 001 eq. 2), `gp-ts-sdf` (Thompson sampling, eq. 3), `randgp-ucb` "
        "(paper 003), `gp-ei-sdf` (log EI on the censored GP); the baselines `gp-ucb`, "
        "`asy-ts` (ignore running trials), `gp-bucb`, `gp-bts` (hallucinate them), `random`; "
        "`auto`: `gp-ei-sdf` on a space of categoricals only without constraints or a context "
        "while at most 3 trials run, `gp-ucb-sdf` otherwise (chosen at each suggestion).",
        (str,), choices=lambda: [*sorted(ALGORITHMS), AUTO])
    mode: str = setting("max", "`max` or `min`imize the objective.", (str,),
                        choices=("max", "min"))
    objective_bounds: tuple[float, float] | None = setting(
        None, "The objective's known [low, high], if any: the worst is what a running trial "
        "is censored at. Without it, the range observed so far.", (list, tuple, None))
    seed: int = setting(0, "Seed of every random choice: the same seed, the same suggestions.",
                        (int,))
    n_initial: int | str = setting(
        "auto", "The Sobol start-up design's size: a number, `auto` (2 per parameter, a "
        "categorical counted once) or `lean` (min(2 x parameters, max(parameters + 1, 5))).",
        (int,), words=("auto", "lean"), minimum=0)
    window: float | str = setting(
        math.inf, "The censoring window m (paper 001 eq. 1): a result that arrives later than "
        "m after its start stays censored; `inf` (a result always counts), a number, or `auto` "
        "(2 x the mean delay, §6).", (int, float, str))
    window_unit: str = setting(
        "iterations", "What `window` counts: queries started (`iterations`, §3.1) or "
        "`seconds` (App. A.4).", (str,), choices=UNITS)
    beta: float = setting(
        1.0, "beta_t, the weight of the posterior's spread in the acquisition (exploration; "
        "paper 001 App. C uses 1).", (float,), minimum=0)
    kernel: str = setting(
        "se", "The GPs' kernel: `se` (squared exponential), `matern52`, or `auto` (at each "
        "fit, the one of higher evidence); ARD lengthscales.", (str,),
        choices=lambda: [*sorted(KERNELS), "auto"])
    output_warp: str = setting(
        "none", "How the results are scaled before the GP sees them: `none`; `copula` (by "
        "rank, a Gaussian copula); `tail` (the diverged runs below Tukey's lower fence ranked "
        "under the rest); `none-or-copula`, `tail-or-copula` (chosen by held-out ranks from 20 "
        "results on); `auto` (`tail-or-copula`, or `none-or-copula` with a constraint or a "
        "context).", (str,), choices=OUTPUT_WARPS)
    refit_every: int = setting(
        10, "Fit the GPs' hyperparameters by marginal likelihood every this many usable "
        "results (paper 001 App. C: 10).", (int,), minimum=1)
    n_candidates: int = setting(
        1024, "Sobol candidates the acquisition is evaluated on before local refinement "
        "(fewer: faster suggestions).", (int,), minimum=1)
    constraints: list = setting(
        [], "Black-box constraints, each `{metric, limit, type: budget | upper, runtime, "
        "observable}`: the metric must stay <= limit; each is learned by a GP of its own.",
        (list, tuple))
    constraint_handler: str = setting(
        "pof", "How the objective is traded against the constraints: `pof` (times the "
        "probability of feasibility), `rpol` (paper 004), `cbo` (paper 003), `penalty` "
        "(paper 000), `scgp` (paper 003 Alg. 2, observable constraints).", (str,),
        choices=lambda: list(HANDLERS))
    handler_options: dict = setting(
        {}, "The handler's own options (`tuner.core.constraints.HANDLER_OPTIONS`).", (dict,))
    stop_margin: float | None = setting(
        None, "Stop a run once it passes a run-time constraint's limit x (1 + margin): it is a "
        "known violation; null: never.", (float, None), minimum=0)
    sliding_window: int | None = setting(
        None, "Only the last this many trials inform the GPs (RPOL-SWUCB, paper 004 §6): for "
        "an objective that drifts; null: every trial.", (int, None), minimum=2)
    exact_until: int | None = setting(
        2000, "Past this many started trials the GPs use a subset of them (large studies); "
        "null: exact at any size.", (int, None), minimum=1)
    subset_size: int = setting(
        1000, "The finished trials in that subset (half near the best, half spread), besides "
        "every running one.", (int,), minimum=1)
    finish_by_deadline: bool = setting(
        False, "Near the study's deadline (`run.wall_clock_limit`), suggest only runs predicted "
        "to finish in the time left.", (bool,))
    idle_near_deadline: bool = setting(
        False, "Near the deadline, start nothing once the time left is under the shortest "
        "finished run; the study ends when its running trials do.", (bool,))
    research: Research = field(default_factory=Research, metadata={
        "doc": "The research and paper switches, by name or by group "
               "([reference](research.md)): `{censoring: hard, n_starts: 10}`."})

    def __post_init__(self) -> None:
        if not isinstance(self.research, Research):
            self.research = Research.from_dict(self.research)
        if isinstance(self.window, str) and self.window.lower() in ("inf", ".inf", "infinity"):
            self.window = math.inf       # as ``to_dict`` writes it (strict JSON has no inf)

    def validate(self, where: str = "") -> None:
        """Check every setting and the rules between them; messages name the setting,
        prefixed by ``where`` (e.g. ``optimizer``)."""
        p = f"{where}." if where else ""
        values = {k: getattr(self, k) for k in PUBLIC}
        values["algorithm"] = str(self.algorithm).lower().replace("_", "-")
        check_section(where, values, PUBLIC)
        self.research.validate(f"{p}research")
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
        self._validate_constraints(p, values["algorithm"])
        if self.exact_until is not None and self.subset_size > self.exact_until:
            raise ValueError(
                f"{p}subset_size ({self.subset_size}) must be at most exact_until "
                f"({self.exact_until}): the subset replaces the exact GP past exact_until"
            )

    def _validate_constraints(self, p: str, algorithm: str) -> None:
        cons = [Constraint.from_dict(c, f"{p}constraints[{i}]") for i,
                c in enumerate(self.constraints)]
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
        if cons and algorithm == "gp-ei-sdf" and self.constraint_handler != "pof":
            raise ValueError(f"{p}constraint_handler: algorithm gp-ei-sdf weighs its log EI by the "
                             f"probability of feasibility, constraint_handler pof (got "
                             f"{self.constraint_handler!r})")
        try:
            make_handler(self.constraint_handler, len(cons), self.handler_options)
        except ValueError as exc:
            raise ValueError(f"{p}{exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """The settings as strict JSON (an infinite window as "inf", which Window reads back),
        the research switches by group."""
        d = {k: dataclasses.asdict(self)[k] for k in PUBLIC}
        if isinstance(d["window"], float) and math.isinf(d["window"]):
            d["window"] = "inf"
        return {**d, "research": self.research.to_dict()}

    def flat(self) -> dict[str, Any]:
        """Every public setting and research switch by its name (``from_dict`` reads it back)."""
        return {**{k: copy.deepcopy(getattr(self, k)) for k in PUBLIC}, **self.research.flat()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "optimizer") -> Settings:
        """Settings from ``to_dict``'s form, or from a flat mapping of setting and switch names
        (a state saved before the switches were grouped, the harness's variants)."""
        d = {k: v for k, v in d.items() if k not in REMOVED}
        check_keys(where, d, [*PUBLIC, "research", *GROUP_OF])
        switches = {**_switches(d.get("research"), f"{where}.research"),
                    **{k: v for k, v in d.items() if k in GROUP_OF}}
        s = cls(
            **{k: v for k, v in d.items() if k in PUBLIC}, research=Research.from_flat(switches)
        )
        if s.objective_bounds is not None:
            s.objective_bounds = (float(s.objective_bounds[0]), float(s.objective_bounds[1]))
        return s


PUBLIC = schema(Settings)
REMOVED = ("warp_margin",)     # settings of earlier versions, read from old states and ignored


def _switches(research: Research | Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    return research.flat() if isinstance(research, Research) else flatten(research, where)


def by_name(saved: Mapping[str, Any]) -> dict[str, Any]:
    """A saved settings mapping (``to_dict``'s, or the flat one of earlier versions) with every
    research switch by its name beside the public settings; nothing missing is filled in."""
    d = {k: v for k, v in saved.items() if k not in REMOVED}
    switches = _switches(d.pop("research", None), "research")
    return {**d, **switches}


def overridden(settings: Settings | None, overrides: Mapping[str, Any],
               where: str = "optimizer") -> Settings:
    """``settings`` (or the defaults) with ``overrides`` over them: public settings by name,
    ``research`` switches by name or group over those of ``settings``.

    Args:
        settings: the base (None: ``Settings()``).
        overrides: a user's keywords (``check_public``).
        where: the prefix of error messages.
    """
    check_public(overrides, where)
    base = settings if settings is not None else Settings()
    values = {k: copy.deepcopy(getattr(base, k)) for k in PUBLIC}
    values.update({k: v for k, v in overrides.items() if k != "research"})
    switches = {**base.research.flat(), **_switches(overrides.get("research"), f"{where}.research")}
    return Settings.from_dict({**values, **switches}, where)


def check_public(data: Mapping[str, Any], where: str) -> None:
    """A user's settings (a study's ``optimizer`` section, the ``Optimizer``'s and
    ``TunerSearch``'s keywords): public names and ``research`` only; a research switch given
    among them raises ValueError saying where it goes."""
    misplaced = sorted(k for k in data if k in GROUP_OF)
    if misplaced:
        raise ValueError(
            f"{where}: {misplaced} "
            f"{'is a research switch' if len(misplaced) == 1 else 'are research switches'}: "
            f"give {'it' if len(misplaced) == 1 else 'them'} under research, e.g. "
            f"research: {{{misplaced[0]}: ...}} (docs/reference/research.md)"
        )
    check_keys(where, data, [*PUBLIC, "research"])


# Paper 001's method (App. C) where the product's defaults deviate from it; the reproductions
# run on it (``Optimizer(space, **PAPER_EXACT)``, ``Settings.from_dict(PAPER_EXACT)``, or a
# variant ``Settings.from_dict({**PAPER_EXACT, "nu_terms": "window"})``: a switch named at the
# top wins over ``research``), so changing a default never changes them.
PAPER_EXACT: dict[str, Any] = {
    "kernel": "se", "output_warp": "none", "n_initial": 1, "refit_every": 10,
    "constraint_handler": "rpol", "exact_until": None,
    "research": {
        "censoring": "hard", "delay_lambda_power": 0.0, "prior_mean": "zero",
        "refit_dense_until": 0, "lengthscale_prior": False, "censor_at_partial": False,
        "discrete_search": "round", "categorical_lengthscale": "per-choice",
        "budget_scale": "linear", "context_kernel": "product", "refit_growth": 0.0,
        "running_correlation": None, "refine": "each", "new_context": "ucb",
        # the cap the reproductions ran with, kept when the default fell to 250 (App. C fits
        # on every result; the cap is the product's)
        "fit_max_points": 500,
    },
}
