"""Rules that stop a run early from what it reports on the way (``Report``): the loop asks each
rule after every report of a running trial, and stops the trial (STOPPED) when one gives a
reason.  Progress is read from the study's ``Fidelity`` (e.g. ``epoch`` of 80).

* ``ASHA``: asynchronous successive halving (Li et al. 2020, as Ray Tune's
  ``AsyncHyperBandScheduler`` applies it): rungs at ``grace * eta^k``; a run reaching a rung
  continues only if its value is in the top 1/eta of the values recorded at that rung so far
  (``cutoff``: Ray Tune's interpolated quantile, or Syne Tune's rank).
* ``LearnedGraceASHA``: ASHA whose first rung is the lowest at which the first finished runs'
  winners would have been kept (``grace: auto``).
* ``PaceBudget``: a run whose pace puts its full length over the run-time budget (with
  confidence, from the spread of its own step times) is stopped as soon as its reports show
  it (the product's rule: the papers do not stop runs), instead of when it passes the budget
  by ``stop_margin``.
* ``CurveRule``: a run is stopped when a GP over (configuration, progress)
  (``tuner.core.curves.CurveModel``) says it is unlikely to beat the best finished run at full
  length: the upper confidence bound of its final value is below the best final value.

A stopped run is censored at the value it reached (``Optimizer.report``), and a run-time
constraint sees its run time projected to full length (``Constraint.observed``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np

from tuner.core.curves import CurveModel, step_level
from tuner.core.trial import Status, mode_sign, projected_runtime


@dataclass(frozen=True)
class Fidelity:
    """A run's progress axis: the reported ``metric`` (epochs, boosting rounds) and its value
    at full length."""

    metric: str
    max: float

    def __post_init__(self) -> None:
        if not self.max > 0:
            raise ValueError(f"fidelity.max must be > 0 (got {self.max})")

    def fraction(self, step: float) -> float:
        return min(max(float(step) / self.max, 0.0), 1.0)


class StoppingRule(Protocol):
    def decide(self, trial_id: int, step: float, value: float, elapsed: float) -> str | None:
        """After a report at ``step`` with objective ``value``, ``elapsed`` seconds into the run:
        a reason to stop the run now, or None."""


ASHA_CUTOFFS = ("quantile", "rank")


@dataclass
class ASHA:
    """Asynchronous successive halving on rungs ``grace * eta^k < max_t`` (``mode``: max or
    min).  Ray Tune's ``AsyncHyperBandScheduler.on_result`` is the reference: the highest rung
    a run has newly reached is checked against the ``1 - 1/eta`` quantile of the values
    recorded there, then the run's value is recorded.  ``cutoff="rank"`` is Syne Tune's test
    instead (``syne_tune.optimizer.schedulers.asha.Bracket``): the run goes on unless more than
    1/eta of the rung's values, its own included, are strictly better; with few values at a
    rung it stops fewer runs (0.1 and 0.5 recorded, eta 3: a new 0.3 goes on, where the
    quantile, 0.37, stops it)."""

    max_t: float
    grace: float = 1.0
    eta: float = 3.0
    mode: str = "max"
    cutoff: str = "quantile"
    rungs: list[tuple[float, dict[int, float]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.eta <= 1 or self.grace <= 0:
            raise ValueError(f"ASHA needs eta > 1 and grace > 0 (got {self.eta}, {self.grace})")
        if self.cutoff not in ASHA_CUTOFFS:
            raise ValueError(f"cutoff: expected one of {list(ASHA_CUTOFFS)}, got {self.cutoff!r}")
        levels = []
        r = self.grace
        while r < self.max_t:
            levels.append(r)
            r *= self.eta
        self.rungs = [(r, {}) for r in reversed(levels)]

    def decide(self, trial_id: int, step: float, value: float, elapsed: float) -> str | None:
        sign = mode_sign(self.mode)
        for milestone, recorded in self.rungs:
            if step >= milestone and trial_id not in recorded:
                stop = None
                if recorded and not self.keeps(sign * value, [sign * v for v in recorded.values()]):
                    stop = (f"ASHA: {value:.4g} at rung {milestone:g} is not in the top "
                            f"1/{self.eta:g} of the {len(recorded)} runs there")
                recorded[trial_id] = value
                return stop
        return None

    def keeps(self, value: float, recorded: list[float]) -> bool:
        """Whether a run with ``value`` goes on past a rung holding ``recorded`` (both as a
        maximization): at or above ``top_cutoff`` (``quantile``), or at most 1/eta of the
        values, its own included, strictly better (``rank``)."""
        if self.cutoff == "rank":
            return sum(v > value for v in recorded) / (len(recorded) + 1) <= 1 / self.eta
        return value >= top_cutoff(recorded, self.eta)


def top_cutoff(values: list[float], eta: float) -> float:
    """ASHA's cutoff at a rung: the 1 - 1/eta quantile of the values there (as a maximization);
    a run at or above it is in the top 1/eta."""
    return float(np.nanpercentile(values, (1 - 1 / eta) * 100))


@dataclass
class LearnedGraceASHA:
    """ASHA whose first rung is learned from the study's first ``n_finished`` finished runs
    (``early_stopping: {rule: asha, grace: auto}``; the product's rule, not in Li et al.).
    ASHA's premise is that a run's rank at a rung is its rank at full length; where curves cross
    (a learning rate that starts slow and ends best) the first rungs stop the runs that would win.
    Until ``n_finished`` runs have finished no run is stopped, and every run's value at each
    candidate rung 1, eta, eta^2, ... (fidelity units, below ``max_t``) is kept.  Then the first
    rung is the lowest candidate at which each of the best ceil(n / eta) finished runs was in the
    top 1/eta of the finished runs (ASHA's own cutoff), that is where ASHA would have kept the
    winners; if there is none, no run is ever stopped.  From then on ``ASHA`` with that grace
    decides, its rungs holding every value reported there so far."""

    max_t: float
    eta: float = 3.0
    mode: str = "max"
    cutoff: str = "quantile"          # the ASHA it hands over to (learning the rung is unchanged)
    n_finished: int = 8
    levels: list[float] = field(default_factory=list)
    at: dict[int, dict[float, float]] = field(default_factory=dict)   # run -> {level: value}
    finals: dict[int, float] = field(default_factory=dict)            # as a maximization
    grace: float | None = None        # learned; max_t: no rung keeps the winners, no stopping
    asha: ASHA | None = None

    def __post_init__(self) -> None:
        if self.eta <= 1 or self.n_finished < 2:
            raise ValueError(f"ASHA with grace auto needs eta > 1 and n_finished >= 2 (got "
                             f"{self.eta}, {self.n_finished})")
        # ASHA's own rungs from 1, so that a learned grace's rungs are these very floats (and
        # ASHA checks the cutoff)
        self.levels = [m for m, _ in reversed(ASHA(self.max_t, 1.0, self.eta, self.mode,
                                                   self.cutoff).rungs)]

    @property
    def sign(self) -> float:
        return mode_sign(self.mode)

    def decide(self, trial_id: int, step: float, value: float, elapsed: float) -> str | None:
        seen = self.at.setdefault(trial_id, {})
        for level in self.levels:
            if step >= level and level not in seen:
                seen[level] = value
        if self.asha is None:
            return None
        reason = self.asha.decide(trial_id, step, value, elapsed)
        return None if reason is None else f"{reason} (first rung learned: {self.grace:g})"

    def on_end(self, trial_id: int, status: Status, value: float | None) -> None:
        """The first ``n_finished`` finished runs' final values; at the last, the first rung."""
        if (self.grace is not None or status != Status.FINISHED or value is None
                or not math.isfinite(value)):
            return
        self.finals[trial_id] = self.sign * value
        if len(self.finals) >= self.n_finished:
            self.grace = self._first_rung()
            if self.grace < self.max_t:
                self.asha = ASHA(self.max_t, self.grace, self.eta, self.mode, self.cutoff)
                for milestone, recorded in self.asha.rungs:
                    recorded.update({i: seen[milestone] for i, seen in self.at.items()
                                     if milestone in seen})

    def learned_text(self, metric: str) -> str | None:
        """What was learned, once it is (a study prints it)."""
        if self.grace is None:
            return None
        n = len(self.finals)
        if self.asha is None:
            return (f"ASHA (grace: auto): at no {metric} below {self.max_t:g} were the best of the "
                    f"first {n} finished runs in the top 1/{self.eta:g}, so ASHA stops no run")
        return (f"ASHA (grace: auto): first rung at {metric} {self.grace:g}, the lowest where the "
                f"best of the first {n} finished runs were in the top 1/{self.eta:g}")

    def _first_rung(self) -> float:
        ids = list(self.finals)
        best = sorted(ids, key=lambda i: -self.finals[i])[:math.ceil(len(ids) / self.eta)]
        for level in self.levels:
            values = {i: self.sign * self.at[i][level] for i in ids
                      if level in self.at.get(i, {})}
            if len(values) < len(ids):
                continue                # a finished run that never reported there
            cutoff = top_cutoff(list(values.values()), self.eta)
            if all(values[i] >= cutoff for i in best):
                return level
        return self.max_t


def asha_rule(max_t: float, grace: float | str, eta: float, mode: str = "max",
              cutoff: str = "quantile") -> ASHA | LearnedGraceASHA:
    """ASHA with this first rung, or with ``grace="auto"`` the rung learned
    (``LearnedGraceASHA``)."""
    if grace == "auto":
        return LearnedGraceASHA(max_t, eta, mode, cutoff)
    if isinstance(grace, bool) or not isinstance(grace, (int, float)):
        raise ValueError(f"grace: expected a number > 0 or 'auto', got {grace!r}")
    return ASHA(max_t, float(grace), eta, mode, cutoff)


@dataclass
class Pace:
    """A run's pace from its reports: the first (step, elapsed) and the last, and Welford's
    running mean and variance of the seconds per step between consecutive reports."""

    s1: float
    t1: float
    s: float = math.nan          # the last report
    t: float = math.nan
    n: int = 0                   # gaps between reports
    mean: float = 0.0
    m2: float = 0.0

    def __post_init__(self) -> None:
        self.s, self.t = self.s1, self.t1

    def add(self, step: float, elapsed: float) -> None:
        if step > self.s:
            r = (elapsed - self.t) / (step - self.s)
            self.n += 1
            delta = r - self.mean
            self.mean += delta / self.n
            self.m2 += delta * (r - self.mean)
            self.s, self.t = step, elapsed

    def se(self) -> float:
        """Standard error of the mean seconds per step (inf from fewer than two gaps)."""
        return math.sqrt(self.m2 / (self.n - 1) / self.n) if self.n >= 2 else math.inf


@dataclass
class PaceBudget:
    """Stop a run once its pace puts its full length over ``limit`` seconds by more than
    ``margin``, with confidence: the projected run time less ``z`` standard errors of it is
    still over.  The pace is measured from the run's first report on, so that its start-up
    (loading data, building the model: often as long as several steps) is counted once, not
    once per step (``tuner.core.trial.projected_runtime``); its standard error is that of the
    mean seconds per step between reports (treated as independent) times the steps to come.
    A run is judged from its third report on (two gaps give a spread), once it has run
    ``min_share`` of the limit.  ``z = 0`` judges by the projection alone."""

    limit: float
    fidelity: Fidelity
    margin: float = 0.0
    z: float = 2.0
    min_share: float = 0.1
    paces: dict[int, Pace] = field(default_factory=dict)

    def decide(self, trial_id: int, step: float, value: float, elapsed: float) -> str | None:
        pace = self.paces.get(trial_id)
        if pace is None:
            self.paces[trial_id] = Pace(float(step), float(elapsed))
            return None
        pace.add(float(step), float(elapsed))
        full = self.fidelity.max
        if (pace.n < 2 or step <= pace.s1 or step >= full
                or elapsed < self.min_share * self.limit):
            return None
        projected = projected_runtime(pace.s1, pace.t1, float(step), float(elapsed), full)
        spread = self.z * pace.se() * (full - step) if self.z else 0.0
        if projected - spread > self.limit * (1 + self.margin):
            return (f"its pace ({self.fidelity.metric} {step:g} of {full:g} in {elapsed:.3g} s) "
                    f"puts its full run at {projected:.3g} s (+- {spread:.2g}), over the budget "
                    f"of {self.limit:.3g} s")
        return None


@dataclass
class CurveRule:
    """Stop a run once the upper confidence bound mu + kappa sigma of its value at full length
    (``CurveModel.final``, given every curve so far and its own) is below the best value a
    finished run reached: with kappa = 2, a chance of about 2 % that it would still win, if the
    model is right.  Judged at a run's first report at or past 2, 4, 8, ... (where the model
    keeps points), once
    ``min_finished`` runs have finished; ``x_of(trial_id)`` is a trial's configuration in the
    unit cube (``Optimizer.trials[id].x``)."""

    model: CurveModel
    x_of: Callable[[int], np.ndarray]
    fidelity: Fidelity
    mode: str = "max"
    kappa: float = 2.0
    min_finished: int = 3
    best: float = -math.inf            # the best final value, as a maximization
    judged: dict[int, set[int]] = field(default_factory=dict)   # run -> levels judged at

    @property
    def sign(self) -> float:
        return mode_sign(self.mode)

    def decide(self, trial_id: int, step: float, value: float, elapsed: float) -> str | None:
        self.model.observe(trial_id, self.x_of(trial_id), step, self.sign * value)
        seen = self.judged.setdefault(trial_id, set())
        if (len(self.model.done) < self.min_finished or step < 2 or step_level(step) in seen
                or step >= self.fidelity.max):
            return None
        seen.add(step_level(step))
        mean, sd = self.model.final(self.x_of(trial_id), step, self.sign * value)
        if mean + self.kappa * sd >= self.best:
            return None
        return (f"unlikely to beat the best run ({self.sign * self.best:.4g}): its predicted "
                f"final value is {self.sign * mean:.4g} +- {sd:.2g} at {self.fidelity.metric} "
                f"{step:g} of {self.fidelity.max:g}")

    def on_end(self, trial_id: int, status: Status, value: float | None) -> None:
        """A finished run's final value enters the model and may be the new best."""
        if status == Status.FINISHED and value is not None and math.isfinite(value):
            self.model.finish(trial_id, self.x_of(trial_id), self.sign * value)
            self.best = max(self.best, self.sign * value)

