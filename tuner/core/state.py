"""The optimizer's saved state (``Optimizer.state_dict``, read back by ``Optimizer.from_state``):
what it was built with (space, settings, domain), what changes as trials run (the models, the
handler's multipliers, the random generator) and every trial."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from .persist import envelope, opened
from .settings import PAPER_EXACT, Settings, by_name
from .space import SearchSpace
from .trial import Trial, upgrade_v1
from .warp_choice import CHOOSING_RULES

if TYPE_CHECKING:
    from .optimizer import Optimizer

STATE_FORMAT = "tuner.optimizer"
STATE_VERSION = 2      # 2: one status vocabulary (tuner.core.trial.Status)


def state_dict(opt: Optimizer) -> dict[str, Any]:
    return envelope(STATE_FORMAT, STATE_VERSION, {
        "space": opt.space.to_dict(), "settings": opt.settings.to_dict(),
        "domain": None if opt.domain is None else opt.domain.tolist(),
        **({"context_space": opt.contexts.space.to_dict()} if opt.contexts is not None else {}),
        **opt.changing_state(), "trials": [tr.to_dict() for tr in opt.trials]})


def changing_state(opt: Optimizer) -> dict[str, Any]:
    """The parts of ``state_dict`` that change as trials run, but the trials."""
    return {"objective": opt.objective.state_dict(), **opt.estimates.state_dict(),
            "warp": opt.scale.state_dict(), "rng": opt.rng.bit_generator.state}


def built_with(state: Mapping[str, Any]) -> tuple[SearchSpace, Settings, np.ndarray | None]:
    """The space, settings and domain a saved optimizer was built with (checking the format)."""
    opened(state, STATE_FORMAT, (1, STATE_VERSION), "the optimizer state")
    saved = dict(state["settings"])
    if "research" not in saved:     # saved before the research switches were grouped
        # a state saved before a setting existed ran with the paper's value of it
        saved.update({k: v for k, v in by_name(PAPER_EXACT).items() if k not in saved})
    if saved.get("output_warp") == "auto" and "warp" in state and "rule" not in state["warp"]:
        saved["output_warp"] = "none-or-copula"     # what auto was before tail-or-copula
    settings = Settings.from_dict(saved)
    domain = None if state["domain"] is None else np.asarray(state["domain"])
    return SearchSpace.from_dict(state["space"]), settings, domain


def restore(opt: Optimizer, state: Mapping[str, Any]) -> None:
    """Give ``opt``, freshly built with ``built_with(state)``, the rest of the saved state."""
    upgrade = upgrade_v1 if state["version"] == 1 else dict
    opt.ledger.restore(Trial.from_dict(upgrade(d)) for d in state["trials"])
    opt.scale.forget()
    opt.rng.bit_generator.state = state["rng"]
    if "warp" in state and opt.scale.rule in CHOOSING_RULES:
        # the warp's choice and the box that goes with it, before a deferred fit is rebuilt in it
        opt.scale.load_state(state["warp"])
        opt.objective.bounds = opt.scale.gp_bounds(opt.scale.warp_on)
    opt.objective.load_state(state["objective"], opt.trials)
    opt.estimates.load_state(state, opt.trials)
