"""Trials and censored feedback (paper 001 §3.1 eq. 1; time-based variant App. A.4).

Target of trial s when query t is chosen at time tau_bar (targets normalized so y_min -> 0):
    y~_{s,t} = y_s   if s finished and d_s <= min(m, t - s)        (iterations)
    y~_{s,t} = y_s   if s finished and d_s <= min(m, tau_bar - tau_s) (seconds)
    y~_{s,t} = 0     otherwise: pending, failed, or finished too late (censored for good).
Delay in iterations d_s = number of queries started after s and before its result arrived, so a
result that arrives before the next query has d_s = 0.  Since a result is only known once it
has arrived, "finished and d_s <= m" is the whole test; the min(., t - s) part is implied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .targets import RankWarp, normalized
from .trial import Status, Trial, mode_sign

UNITS = ("iterations", "seconds")


@dataclass
class Window:
    """Censoring window m: a number of iterations or seconds, "inf", or "auto" (2 x mean delay).

    The default is m = inf: a pending trial is censored while it runs and its result counts
    whenever it arrives.  Paper 001 §6 recommends m = 2 mu ("auto"); in simulated asynchronous
    studies that censored 8.5 % of the results for good and left 2.3x the simple regret of
    m = inf, which matched m = 2 mu in the paper's own setting (docs/research/notes/evidence.md,
    "Censoring window"). "auto" estimates the mean delay over all started trials, counting a
    still-running trial at its current age: a lower bound that, unlike the mean over finished trials
    only, is not biased towards the fast ones.  Before any trial has started, or while every age is
    zero, the window is unbounded.  As m moves with the estimate, a result's status follows the
    current m (a late result that a later, larger m covers counts again).
    """

    unit: str = "iterations"
    size: float | str = math.inf

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"window.unit must be one of {list(UNITS)} (got {self.unit!r})")
        if isinstance(self.size, str) and self.size.lower() in ("inf", ".inf", "infinity"):
            self.size = math.inf
        if isinstance(self.size, str):
            if self.size != "auto":
                raise ValueError("window.size must be a positive number, 'inf' or 'auto' (got "
                                 f"{self.size!r})")
        elif isinstance(self.size, bool) or not (
            isinstance(self.size, (int, float)) and self.size > 0
        ):
            raise ValueError("window.size must be a positive number, 'inf' or 'auto' (got "
                             f"{self.size!r})")

    def resolve(self, trials: Iterable[Trial], now: float, t: int) -> float:
        """The window m in force when query ``t`` is chosen at time ``now``."""
        if self.size != "auto":
            return float(self.size)
        delays = []
        for tr in trials:
            d = tr.delay(self.unit)
            delays.append(d if d is not None else tr.age(self.unit, now, t))
        mean = float(np.mean(delays)) if delays else 0.0
        return 2.0 * mean if mean > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "size": self.size}


def usable(trial: Trial, m: float, unit: str) -> bool:
    """Finished with a delay inside the window: its value enters the GP uncensored."""
    d = trial.delay(unit)
    return trial.status == Status.FINISHED and d is not None and d <= m


def counted(trials: Sequence[Trial], window: Window, pending: str, now: float,
            t: int) -> tuple[float, list[Trial]]:
    """The window m in force for query t and the results that count (``usable``).  The
    baselines that ignore or hallucinate pending trials (``pending``) have no window (m = inf):
    001 §6 and the authors' code count their results whenever they arrive."""
    m = window.resolve(trials, now, t) if pending == "censor" else math.inf
    if math.isinf(m):     # every arrived result counts: ``usable`` without a call per trial
        return m, [tr for tr in trials if tr.status == Status.FINISHED
                   and tr.finish_time is not None and tr.finish_index is not None]
    return m, [tr for tr in trials if usable(tr, m, window.unit)]


# a model of partial curves: each trial's predicted final value, as (mean, standard deviation)
# in the objective's units, or None where it has none (``Optimizer.use_curves``)
Finals = Callable[[list[Trial]], list[tuple[float, float] | None]]


def censored_targets(trials: Sequence[Trial], done: list[Trial], mode: str, lo: float, hi: float,
                     at_partial: bool, warp: RankWarp | None = None,
                     finals: Finals | None = None) -> np.ndarray:
    """Targets of eq. 1 (normalized over [lo, hi], then ``warp``ed): the usable results ``done``,
    0 (the minimum) for the rest; with ``at_partial`` a trial that reported progress is censored
    at its last value, or at its predicted final value where ``finals`` (a model of partial
    curves, ``tuner.core.curves``) gives one: the product's deviation from eq. 1, which knows no
    partial results."""
    y = np.zeros(len(trials))
    partial = [tr for tr in trials if tr.partial is not None] if at_partial else []
    if partial:
        predicted = finals(partial) if finals is not None else [None] * len(partial)
        values = [tr.partial if f is None else f[0] for tr, f in zip(partial, predicted)]
        y[[tr.start_index for tr in partial]] = normalized(
            partial, mode, lo, hi, values=values, warp=warp
        )
    if done:
        y[[tr.start_index for tr in done]] = normalized(done, mode, lo, hi, warp=warp)
    return y


def predicted_variances(trials: Sequence[Trial], done: list[Trial], mode: str, lo: float,
                        hi: float, warp: RankWarp | None, finals: Finals) -> np.ndarray:
    """The variance of each censored target that is a predicted final value
    (``censored_targets``), on the targets' scale: half the normalized spread from mean - sd
    to mean + sd, squared; 0 for every other trial.  Soft censoring adds it to the entry's
    noise, so a prediction the model of partial curves is unsure of (a run judged early, before
    the curves say much) weighs little, and a sure one nearly as much as a result."""
    var = np.zeros(len(trials))
    ids = {tr.trial_id for tr in done}
    partial = [tr for tr in trials if tr.partial is not None and tr.trial_id not in ids]
    predicted = finals(partial) if partial else []
    known = [(tr, f) for tr, f in zip(partial, predicted) if f is not None]
    if known:
        sign = mode_sign(mode)       # normalized() reads values as given, then signs them
        up = [sign * (sign * m + sd) for _, (m, sd) in known]
        down = [sign * (sign * m - sd) for _, (m, sd) in known]
        trs = [tr for tr, _ in known]
        half = (normalized(trs, mode, lo, hi, values=up, warp=warp)
                - normalized(trs, mode, lo, hi, values=down, warp=warp)) / 2
        var[[tr.start_index for tr in trs]] = half ** 2
    return var


def pending_in_window(trial: Trial, m: float, unit: str, now: float, t: int) -> bool:
    """Still running and young enough that its result may yet count (the sum in eq. 2)."""
    return trial.status == Status.RUNNING and trial.age(unit, now, t) <= m


def in_last_window(trial: Trial, m: float, unit: str, now: float, t: int) -> bool:
    """Among the last m queries (s in [t - m, t - 1]): the literal index set of eq. 2."""
    return trial.age(unit, now, t) <= m


def constraint_view(c: Any, trials: Sequence[Trial], m: float, unit: str, now: float,
                    elapsed_bound: bool, floor: float = 0.0) -> tuple[list[Trial], np.ndarray]:
    """Usable observations of constraint ``c`` and the censored targets c~_{s,t} of all trials.

    004 §5: c~ = c_s if the value arrived within the window m, else 0.  With ``elapsed_bound``
    (``research.use_elapsed_bound`` on a run-time constraint) the product departs from it: a
    finished or stopped trial's run time is known exactly whenever it arrives, so it is never
    censored (censoring by delay would hide precisely the slow runs, the violations, at g = 0),
    and a running trial whose elapsed time already exceeds the budget enters with that lower
    bound g(elapsed) > 0 instead of 0.  ``floor`` replaces 004's 0 (``-inf``: the bound alone,
    for ``research.constraint_pending`` "mean", which raises it to the posterior mean).
    """
    done, y = [], np.zeros(len(trials))
    for tr in trials:
        value = c.observed(tr)
        if value is not None:
            if elapsed_bound or tr.delay(unit) <= m:
                done.append(tr)
                y[tr.start_index] = value
                continue
        bound = c.lower_bound(tr, now) if elapsed_bound else None    # None: no bound known
        y[tr.start_index] = floor if bound is None else max(bound, floor)
    return done, y
