"""The objective's scale as the GP sees it: each result mapped to [0, 1] as a maximization with
the known minimum at 0 (paper 001 footnote 6; ``tuner.core.targets``), then through the output
warp in force (``Settings.output_warp``), which ``none-or-copula`` and ``tail-or-copula``
choose by held-out ranks as the results grow (``tuner.core.warp_choice``)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .gp import HyperBounds
from .ledger import TrialLedger
from .model import CensoredModel
from .settings import Settings
from .targets import RankWarp, normalized, reward_range
from .trial import Status, Trial
from .warp_choice import (CHOOSING_RULES, WARP_CHOICE_EVERY, WARP_CHOICE_FROM, WARP_MARGIN,
                          prefer_copula, warp_rule)


class ObjectiveScale:
    """The targets of the objective's GP over the trials of ``ledger``, and the warp's choice.

    Args:
        settings: the optimizer's settings (``mode``, ``objective_bounds``, ``output_warp``).
        ledger: the trials whose results set the range and the ranks.
        constrained, contextual: whether the search has a constraint, a context (``auto``'s
            rule depends on them).
    """

    def __init__(self, settings: Settings, ledger: TrialLedger, constrained: bool,
                 contextual: bool):
        self.settings, self.ledger = settings, ledger
        # output_warp as applied (warp_choice.warp_rule); the warp under the copula's (none or
        # the tail); whether the copula is on (none-or-copula starts with it, tail-or-copula
        # without); usable results at the last choice
        self.rule = warp_rule(settings.output_warp, constrained, contextual)
        self.base_warp = "tail" if self.rule in ("tail", "tail-or-copula") else "none"
        self.warp_on = self.rule in ("copula", "none-or-copula")
        self.chosen_at = 0
        self._memo: tuple[Any, tuple[float, float], RankWarp | None] | None = None

    def forget(self) -> None:
        """Compute the range and warp again at the next call (the trials were replaced)."""
        self._memo = None

    def reward_range(self) -> tuple[float, float]:
        """``targets.reward_range``, computed again only once a trial has ended since (a
        suggestion asks for it several times, and it walks every trial)."""
        trials = self.ledger.trials
        key = (id(trials), len(trials), self.ledger.outcomes)
        if self._memo is None or self._memo[0] != key:
            s = self.settings
            lo, hi = reward_range(s.mode, s.objective_bounds, trials)
            self._memo = (key, (lo, hi), self._rank_warp(lo, hi, self.warp_on))
        return self._memo[1]

    def warp(self) -> RankWarp | None:
        """The output warp of the finished results as it applies now (memoized with
        ``reward_range``)."""
        self.reward_range()
        return self._memo[2]

    def targets(self, trials: list[Trial]) -> np.ndarray:
        """The GP's targets of these finished trials."""
        return normalized(trials, self.settings.mode, *self.reward_range(), warp=self.warp())

    def f_bound(self) -> float:
        """B, the bound on |f| that the constraint handlers clip to (003 Alg. 1)."""
        return float(max(abs(v) for v in self.reward_range()))

    def gp_bounds(self, copula: bool) -> HyperBounds:
        """The objective GP's box: its noise floor ``noise_floor``, or, without the copula under
        a rule that chooses it, at most the Optimizer's default (the floor is for the copula)."""
        floor = self.settings.research.model.noise_floor
        if not copula and self.rule in CHOOSING_RULES:
            floor = min(floor, HyperBounds.noise[0])
        return HyperBounds(noise=(floor, HyperBounds.noise[1]))

    def _rank_warp(self, lo: float, hi: float, copula: bool) -> RankWarp | None:
        """The copula's warp (``RankWarp.fit``), or the one under it (the tail's, or None), of
        the finished results normalized over [lo, hi]."""
        if not copula and self.base_warp == "none":
            return None
        finished = [tr for tr in self.ledger.trials if tr.status == Status.FINISHED]
        u = normalized(finished, self.settings.mode, lo, hi)
        return RankWarp.fit(u) if copula else RankWarp.fit_tail(u)

    def choose(
        self,
        done: list[Trial],
        model: CensoredModel,
        inputs: Callable[[Sequence[Trial]], np.ndarray],
        n_initial: int,
        subset_active: bool,
    ) -> None:
        """``output_warp: none-or-copula``, ``tail-or-copula``: once there are
        ``WARP_CHOICE_FROM`` usable results (and the start-up design's), and again each time
        they grew by ``WARP_CHOICE_EVERY``, up to ``fit_max_points`` and while the GPs hold every
        trial (not ``subset_active``), the copula or the warp under it by held-out ranks
        (``warp_choice.prefer_copula``, on a random stream of its own); a change refits
        ``model`` at once.  The copula's GP has the noise floor ``noise_floor``, the other the
        Optimizer's default.

        Args:
            done: the usable results.
            model: the objective's model (its kernel, hyperparameters and groups).
            inputs: the GP's inputs of trials.
            n_initial: the start-up design's size.
            subset_active: whether the GPs hold a subset of the trials.
        """
        s, n = self.settings, len(done)
        if self.rule not in CHOOSING_RULES:
            return
        if (n < max(n_initial, WARP_CHOICE_FROM) or n > s.research.fitting.fit_max_points
                or subset_active or n < WARP_CHOICE_EVERY * self.chosen_at):
            return
        self.chosen_at = n
        lo, hi = self.reward_range()
        copula, base = self._rank_warp(lo, hi, True), self._rank_warp(lo, hi, False)
        if copula is None:
            return
        u = normalized(done, s.mode, lo, hi)
        use = prefer_copula(
            rule=self.rule, kernel=model.gp_all.kernel, X=inputs(done),
            base=u if base is None else base(u), copula=copula(u), start=model.gp_all.hyper,
            rng=np.random.default_rng([abs(s.seed), n]),     # the suggestions' stream untouched
            bounds=(self.gp_bounds(False), self.gp_bounds(True)),
            restarts=s.research.fitting.fit_restarts, prior=s.research.fitting.lengthscale_prior,
            groups=model.groups, centre=s.research.model.prior_mean == "mean", margin=WARP_MARGIN)
        if use != self.warp_on:
            self.warp_on, self._memo = use, None
            model.refit_now(self.gp_bounds(use))

    def state_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "on": self.warp_on, "chosen_at": self.chosen_at}

    def load_state(self, state: dict[str, Any]) -> None:
        """The warp's choice as saved."""
        self.warp_on, self.chosen_at = state["on"], state["chosen_at"]
