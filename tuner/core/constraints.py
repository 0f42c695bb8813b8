"""Black-box constraints g(x) <= 0 and the rules (handlers) that trade the objective against them.

Declaring a constraint (``Settings.constraints``, a list of mappings):

==============  ==========  ====================================================================
key             default     meaning
==============  ==========  ====================================================================
``metric``      (required)  the name of a metric every finished trial reports (``tell(metrics=)``)
``limit``       (required)  the bound; a ``budget`` limit must be > 0
``type``        ``budget``  ``budget``: g = value / limit - 1 (run time / T - 1);
                            ``upper``: g = value - limit
``runtime``     ``false``   the metric is the trial's run time: a running trial's elapsed time is
                            a lower bound of it, ``fail()`` reports the elapsed time when the
                            trial reports nothing, and ``Settings.stop_margin`` may stop the trial
``observable``  ``false``   a noisy sample of g over the whole space is observable *before* each
                            decision (paper 003 §4); only with handler ``scgp``, which then takes
                            ``Optimizer(..., samplers={metric: fn})``
==============  ==========  ====================================================================

e.g. ``constraints=[{"metric": "runtime", "limit": 60, "type": "budget", "runtime": True}]``.

Each bandit-feedback constraint gets its own censored GP (``tuner.core.model``, the same code as the
objective's); a pending constraint value is censored to 0 as in paper 004 §5
(c~_{s,t} = c_s 1{d_s <= min(m, t - s)}).

Handlers (``Settings.constraint_handler``; options in ``Settings.handler_options``):

=========  ========================  ==========  ==================================================
name       paper                     g_t         options (default)
=========  ========================  ==========  ==================================================
``rpol``   004 eqs. 11-12, §4-§6,    LCB         ``q1`` (1.0): Q_1
           App. C (delays), App. D
           (``sliding_window``)
``cbo``    003 Alg. 1 (UCB, TS,      the         ``rho`` (10): dual bound; ``horizon`` (100): T in
           RandGP-UCB by algorithm)  algorithm's V = G sqrt(T) / rho; ``clip_f`` (null: the
                                                 objective's bound max(|y_min|, |y_max|)): B;
                                                 ``clip_g`` (1.0): G
``penalty``000 Alg. 2 (noiseless,    the         ``epoch`` (20): S; ``update`` (``multiplicative``
           multiplicative) and       algorithm's = Alg. 2, ``additive`` = Alg. 3); ``psi``
           Alg. 3 (noisy, additive)              (``exp`` = eq. 10, ``poly`` = eq. 9); ``c`` (1.0),
                                                 ``power`` (2.0): the constants of eqs. 9-10;
                                                 ``step`` (0.5): mu of Alg. 3 (App. E.1.2)
``scgp``   003 Alg. 2 (full          the         ``delta`` (1.0): Slater slack in
           constraint information)   sample      V_t = delta sqrt(t) / (8 B); ``clip_f`` as cbo
``pof``    none (Gardner et al.      P(g <= 0)   none: [UCB f]^+ x prod_j P(g_j <= 0); before
           2014: constrained EI's                any feasible result, prod_j P(g_j <= 0) alone
           weight)
=========  ========================  ==========  ==================================================

``rpol`` also takes ``g`` (``lcb``): the constraint estimate, ``lcb`` (004 eq. 11), ``mean`` or
``ucb`` (pessimistic about feasibility).

"the algorithm's" g_t: the constraint estimate of the same kind as the objective's
(``Settings.algorithm``): UCB -> LCB mu - nu sigma (optimistic for a cost), TS -> a joint draw,
RandGP-UCB -> mu + Z sigma.  RPOL uses the LCB (004 §3: the pessimistic-optimistic pair) unless its
option ``g`` says otherwise.

All handlers see the objective's estimate on the objective's own scale (the reward
sign * y mapped back from the GP's [0, 1] targets), so Q, phi, kappa weigh the same units as in
the papers.  The state (Q, phi, kappa and epoch sums) is saved with the optimizer.
"""

from __future__ import annotations

import copy
import inspect
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .fields import Field, check_section
from .trial import Status, Trial

CONSTRAINT_TYPES = ("budget", "upper")
CONSTRAINT_FIELDS = {"metric": Field((str,), required=True),
                     "limit": Field((float,), required=True, finite=True),
                     "type": Field((str,), "budget", CONSTRAINT_TYPES),
                     "runtime": Field((bool,), False), "observable": Field((bool,), False)}
SHIFTS = {"lcb": -1.0, "mean": 0.0, "ucb": 1.0}     # g_t = mu + shift x nu sigma (RPOL's option g)
LOG_FLOOR = 0.05   # a log-scale budget reads value / limit below this as this (g >= -3.0)


def mean_run_time(post: Any) -> Any:
    """The posterior of ln(E[T] / limit) from the log-scale budget's posterior of the latent g.

    The GP models ln T = g(x) + eps with eps ~ N(0, lambda) (lambda: its noise variance), so
    its mean is that of ln T, the log of the median run time; under log-normal noise the mean
    run time is E[T] = exp(g(x) + lambda / 2) x limit.  A budget on the mean is met where
    g(x) + lambda / 2 <= 0: the mean shifts by lambda / 2, the variance stays.  Not from the
    papers (004 §5 models g on its own scale); ``research.budget_bound`` "mean"."""
    out = copy.copy(post)
    out.offset = post.offset + 0.5 * float(post.mean_gp.hyper.noise)
    return out


@dataclass(frozen=True)
class Constraint:
    """One constraint g <= 0 read from a reported metric (see the module docstring)."""

    metric: str
    limit: float
    type: str = "budget"
    runtime: bool = False
    observable: bool = False
    log: bool = False       # a run-time budget on the log scale: g = ln(value / limit)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "constraints") -> "Constraint":
        v = check_section(where, d, CONSTRAINT_FIELDS)
        if not v["metric"]:
            raise ValueError(f"{where}.metric: the name of a reported metric is required")
        if (v["type"] == "budget" or v["runtime"]) and not v["limit"] > 0:
            what = "a budget" if v["type"] == "budget" else "a run-time limit"
            raise ValueError(f"{where}.limit: {what} must be > 0 (got {v['limit']!r})")
        if v["runtime"] and v["observable"]:
            raise ValueError(f"{where}: a run-time constraint cannot be observable before the run")
        return cls(**v)

    @property
    def budget(self) -> bool:
        """A cost budget (type ``budget``: run time, CPU time, ...) or a run-time limit."""
        return self.type == "budget" or self.runtime

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "limit": self.limit, "type": self.type,
                "runtime": self.runtime, "observable": self.observable}

    def g(self, value: float | np.ndarray) -> float | np.ndarray:
        """g <= 0 when the value meets the limit: value / limit - 1 for a budget (or, with
        ``log``, ln(value / limit), the same sign: run times vary by factors, and a GP on their
        logarithm sees multiplicative effects as additive ones; ratios under ``LOG_FLOOR`` are
        read as it, so that a near-zero value does not stretch the GP's range to -inf),
        value - limit otherwise."""
        if self.type != "budget":
            return value - self.limit
        if self.log:
            return np.log(np.maximum(np.asarray(value, dtype=float) / self.limit, LOG_FLOOR))
        return value / self.limit - 1.0

    def observed(self, trial: Trial) -> float | None:
        """g of the value a finished trial reported (a stopped one: its elapsed time), else None.
        A run stopped early (STOPPED) after reporting progress: its run time projected to full
        length from its pace (``Trial.projected_runtime``); None after a single report (e.g.
        ASHA's first rung), whose time is mostly start-up: projected x the epochs it would
        make every such run look far over the budget."""
        if trial.status == Status.RUNNING or self.metric not in trial.metrics:
            return None
        value = trial.metrics[self.metric]
        if self.runtime and trial.status == Status.STOPPED and trial.pace is not None:
            p1, _, pk, _ = trial.pace
            if pk <= p1:       # one report: its time holds the start-up, there is no pace yet
                return None
            value = trial.projected_runtime
        return float(self.g(value))

    def lower_bound(self, trial: Trial, now: float) -> float | None:
        """For a running trial of a run-time constraint: g >= g(elapsed) (right-censored)."""
        if not self.runtime or trial.status != Status.RUNNING:
            return None
        return float(self.g(max(now - trial.start_time, 0.0)))

    def stop_after(self, margin: float | None) -> float | None:
        """Elapsed time after which a running trial is stopped: limit x (1 + margin)."""
        if margin is None or not self.runtime:
            return None
        return self.limit * (1.0 + margin)


def violated(trial: Trial, constraints: Sequence[Constraint]) -> bool:
    """The trial's reported (or, if stopped, elapsed) values break a constraint: "over budget"."""
    return any((v := c.observed(trial)) is not None and v > 0 for c in constraints)


def feasible(trial: Trial, constraints: Sequence[Constraint]) -> bool:
    """A finished trial whose reported values meet every constraint."""
    return trial.status == Status.FINISHED and all(
        (v := c.observed(trial)) is not None and v <= 0 for c in constraints)


def sample(
    samplers: Mapping[str, Any], c: Constraint, t: int, configs: list[dict[str, Any]]
) -> np.ndarray:
    """The round-t sample of an observable constraint's metric at ``configs`` (003 §4)."""
    values = np.asarray(samplers[c.metric](configs, t), dtype=float).reshape(-1)
    if len(values) != len(configs):
        raise ValueError(f"sampler for {c.metric!r} returned {len(values)} values for "
                         f"{len(configs)} configurations")
    return values


def check_reported(
    trial: Trial, constraints: Sequence[Constraint], metrics: Mapping[str, float]
) -> None:
    """A finished trial must report every constrained metric, as a finite number."""
    missing = [
        c.metric for c in constraints if c.metric not in metrics and c.metric not in trial.metrics
    ]
    if missing:
        raise ValueError(f"trial {trial.trial_id}: constraint metric(s) {missing} missing from the "
                         f"reported metrics {sorted(metrics)}; every finished trial must "
                         f"report each constrained metric")
    bad = {c.metric: metrics[c.metric] for c in constraints
           if c.metric in metrics and not math.isfinite(metrics[c.metric])}
    if bad:
        raise ValueError(f"trial {trial.trial_id}: constraint metric(s) not finite: {bad}")


def arrived_since(trials: Sequence[Trial], seen: set[int], constraints: Sequence[Constraint]
                  ) -> tuple[list[list[float]], bool]:
    """The constraint values of the trials ended since the last round, in arrival order (004
    App. C: Q_{t+1} uses the costs revealed at round t), and whether one of them is feasible;
    ``seen`` is updated."""
    new = sorted((tr for tr in trials if tr.trial_id not in seen and tr.status != Status.RUNNING),
                 key=lambda tr: (tr.finish_index, tr.finish_time, tr.trial_id))
    seen.update(tr.trial_id for tr in new)
    arrived = [[v for v in (c.observed(tr) for tr in new) if v is not None] for c in constraints]
    return arrived, any(feasible(tr, constraints) for tr in new)


class Handler:
    """Combines f_t and the g_t's into the score x_t maximizes; keeps its multipliers.

    Per suggestion (round t = number of trials started before it, 0-based) the optimizer calls
    ``start_round(t, arrived)`` with the constraint values that arrived since the previous round
    (``arrived[j]``, in arrival order), then maximizes ``score``, then ``after_choice``.
    """

    name = "none"
    g_estimate = "algorithm"  # lcb / mean / ucb, "algorithm", "sample" or "pof" (module docstring)
    normalized_f = False      # score() gets f on the GP's [0, 1] scale instead of the objective's
    # set by the optimizer each round: a finished trial met every constraint
    feasible_found = False

    def __init__(self, n_constraints: int):
        self.n = n_constraints

    def start_round(self, t: int, arrived: Sequence[Sequence[float]]) -> None:
        """Multiplier updates driven by arriving feedback."""

    def score(self, t: int, f: np.ndarray, gs: Sequence[np.ndarray], f_bound: float) -> np.ndarray:
        """The surrogate maximized in round t; ``f_bound`` bounds |f| (from the objective range)."""
        raise NotImplementedError

    def after_choice(self, t: int, g_at_x: Sequence[float], f_bound: float) -> None:
        """Multiplier updates driven by the estimates at the chosen x_t."""

    STATE: tuple[str, ...] = ()

    def state_dict(self) -> dict[str, Any]:
        return {k: np.asarray(getattr(self, k)).tolist() for k in self.STATE}

    def load_state(self, state: Mapping[str, Any]) -> None:
        for k in self.STATE:
            setattr(self, k, np.asarray(state[k], dtype=float))


class RPOL(Handler):
    """Rectified pessimistic-optimistic learning (004 eqs. 11-12; delayed feedback: App. C).

    x_t = argmax f^_t(x) - sum_j Q_j [g_j,t(x)]^+ with g_t the LCB (eq. 11), and, when the
    costs c_l of the set L arrive in round t, Q_{t+1} = max(Q_t + sum_{l in L} c_l^+, sqrt t),
    Q_1 = 1 (eq. 12 / App. C).  One Q per constraint (004 footnote 1).
    """

    name = "rpol"
    g_estimate = "lcb"
    STATE = ("Q",)

    def __init__(self, n_constraints: int, q1: float = 1.0, g: str = "lcb"):
        super().__init__(n_constraints)
        if not float(q1) > 0:
            raise ValueError(f"handler_options.q1 must be > 0 (got {q1!r})")
        if g not in SHIFTS:
            raise ValueError(f"handler_options.g must be one of {list(SHIFTS)} (got {g!r})")
        self.Q = np.full(n_constraints, float(q1))
        self.g_estimate = g     # lcb: 004 eq. 11; mean / ucb: less optimistic about feasibility

    def start_round(self, t: int, arrived: Sequence[Sequence[float]]) -> None:
        if t == 0:
            return
        for j in range(self.n):      # round t (0-based) follows round t - 1 + 1 = t (1-based)
            self.Q[j] = max(self.Q[j] + sum(max(c, 0.0) for c in arrived[j]), math.sqrt(t))

    def score(self, t: int, f: np.ndarray, gs: Sequence[np.ndarray], f_bound: float) -> np.ndarray:
        return f - sum(q * np.maximum(g, 0.0) for q, g in zip(self.Q, gs))


class Feasibility(Handler):
    """The objective's estimate weighted by the probability of feasibility (Gardner et al. 2014,
    constrained EI; here with the UCB): x_t = argmax [f^_t(x)]^+ prod_j P(g_j(x) <= 0), with f^_t
    on the GP's normalized scale (0 = the worst value seen) and P from the constraint GP's
    posterior, Phi(-mu_g / sigma_g).  Not from the papers: no multiplier, so no slow start while
    a multiplier grows (RPOL's Q_t), and a region is avoided as soon as the GP believes it
    infeasible rather than once it is known to be."""

    name = "pof"
    g_estimate = "pof"
    normalized_f = True

    def score(self, t: int, f: np.ndarray, gs: Sequence[np.ndarray], f_bound: float) -> np.ndarray:
        # Until a feasible result exists, search for feasibility alone (Gelbart et al. 2014).
        s = np.maximum(f, 0.0) if self.feasible_found else np.ones_like(f)
        for p in gs:
            s = s * p
        return s

    def log_score(self, log_f: np.ndarray, log_ps: Sequence[np.ndarray]) -> np.ndarray:
        """The log of ``score`` for an estimate given as a log (log EI: log of constrained EI)."""
        s = log_f if self.feasible_found else np.zeros_like(log_f)
        for lp in log_ps:
            s = s + lp
        return s


class CBO(Handler):
    """Primal-dual constrained BO (003 Alg. 1).

    x_t = argmax clip_B(f_t) - sum_j phi_j clip_G(g_j,t) (lines 3-6);
    phi_{t+1} = Proj_[0, rho](phi_t + clip_G(g_t)(x_t) / V), V = G sqrt(T) / rho (line 7, Thm 1).
    The dual step uses the estimate at the chosen point, so it needs no feedback and delays do
    not touch it.  Rounds whose input the handler did not choose (the initial design, a
    user-given config) make no dual step.
    """

    name = "cbo"
    STATE = ("phi",)

    def __init__(self, n_constraints: int, rho: float = 10.0, horizon: int = 100,
                 clip_f: float | None = None, clip_g: float = 1.0):
        super().__init__(n_constraints)
        for key, v in (("rho", rho), ("clip_g", clip_g)):
            if not float(v) > 0:
                raise ValueError(f"handler_options.{key} must be > 0 (got {v!r})")
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise ValueError(f"handler_options.horizon must be an integer >= 1 (got {horizon!r})")
        if clip_f is not None and not float(clip_f) > 0:
            raise ValueError(f"handler_options.clip_f must be > 0 or null (got {clip_f!r})")
        self.rho, self.G = float(rho), float(clip_g)
        self.B = None if clip_f is None else float(clip_f)
        self.V = self.G * math.sqrt(int(horizon)) / self.rho
        self.phi = np.zeros(n_constraints)                            # phi_1 = 0

    def score(self, t: int, f: np.ndarray, gs: Sequence[np.ndarray], f_bound: float) -> np.ndarray:
        B = self.B if self.B is not None else f_bound
        s = np.clip(f, -B, B)
        for phi, g in zip(self.phi, gs):
            s = s - phi * np.clip(g, -self.G, self.G)
        return s

    def after_choice(self, t: int, g_at_x: Sequence[float], f_bound: float) -> None:
        for j, g in enumerate(g_at_x):
            step = float(np.clip(g, -self.G, self.G)) / self.V
            self.phi[j] = min(max(self.phi[j] + step, 0.0), self.rho)


class SCGP(Handler):
    """SCGP-UCB (003 Alg. 2): the constraint's round-t sample g_t(.) is observed before deciding.

    x_t = argmax clip_B(f_t(x)) - Q(t) / V_t g_t(x); Q(t+1) = [Q(t) + g_t(x_t) + eps_t]^+,
    Q(1) = 0, eps_t = 1 / sqrt(t), V_t = delta sqrt(t) / (8 B) (Thm 3), t 1-based.
    """

    name = "scgp"
    g_estimate = "sample"
    STATE = ("Q",)

    def __init__(self, n_constraints: int, delta: float = 1.0, clip_f: float | None = None):
        super().__init__(n_constraints)
        if not 0 < float(delta) <= 1:
            raise ValueError(f"handler_options.delta must be in (0, 1] (got {delta!r})")
        if clip_f is not None and not float(clip_f) > 0:
            raise ValueError(f"handler_options.clip_f must be > 0 or null (got {clip_f!r})")
        self.delta = float(delta)
        self.B = None if clip_f is None else float(clip_f)
        self.Q = np.zeros(n_constraints)

    def _bound(self, f_bound: float) -> float:
        return self.B if self.B is not None else f_bound

    def score(self, t: int, f: np.ndarray, gs: Sequence[np.ndarray], f_bound: float) -> np.ndarray:
        B = self._bound(f_bound)
        V = self.delta * math.sqrt(t + 1) / (8.0 * B)
        return np.clip(f, -B, B) - sum(q / V * g for q, g in zip(self.Q, gs))

    def after_choice(self, t: int, g_at_x: Sequence[float], f_bound: float) -> None:
        for j, g in enumerate(g_at_x):
            self.Q[j] = max(self.Q[j] + float(g) + 1.0 / math.sqrt(t + 1), 0.0)


PSI = ("exp", "poly")
UPDATES = ("multiplicative", "additive")


class Penalty(Handler):
    """Epoch-based penalty method (000 Alg. 2: multiplicative; Alg. 3: additive).

    Score f_t(x) - sum_j kappa_j Lambda(g_j,t(x)) (eq. 8) with Lambda = psi - 1 and
    kappa <- kappa psi(epoch mean of g), kappa_1 = 1 (Alg. 2, psi of eq. 9 (cx+1)^n or eq. 10
    exp(cx) for x >= 0, 1 below), or Lambda = identity and kappa <- [kappa + mu * epoch mean]^+,
    kappa_1 = 0 (Alg. 3).  An epoch is S rounds.

    Deviations, for asynchronous studies: (1) the paper runs a fresh IGP-UCB on the composite
    observations f - kappa Lambda(g) in every epoch; here f and g keep their own GPs across
    epochs and the composite is formed in the acquisition (UCB of f minus kappa Lambda of the LCB
    of g is an upper confidence bound of the composite since Lambda is non-decreasing), because
    the composite value of a pending trial is unknown and dropping earlier epochs wastes
    expensive trials.  (2) The epoch mean is over the constraint values that *arrived* during the
    epoch (the delayed-feedback reading of 004 App. C), not over the epoch's own inputs, most of
    which are still running at the epoch's end; without delays the two coincide.  An epoch in
    which nothing arrived carries its (empty) sum over.  (3) kappa is capped at 1e6 and the
    exponent of eq. 10 at c x = 50 (the paper warns that eq. 10 overflows, §5.1).
    """

    name = "penalty"
    STATE = ("kappa", "epoch_sum", "epoch_n")

    def __init__(self, n_constraints: int, epoch: int = 20, update: str = "multiplicative",
                 psi: str = "exp", c: float = 1.0, power: float = 2.0, step: float = 0.5):
        super().__init__(n_constraints)
        if update not in UPDATES:
            raise ValueError(f"handler_options.update must be one of {list(UPDATES)} (got "
                             f"{update!r})")
        if psi not in PSI:
            raise ValueError(f"handler_options.psi must be one of {list(PSI)} (got {psi!r})")
        if int(epoch) < 1:
            raise ValueError(f"handler_options.epoch must be a positive integer (got {epoch!r})")
        for key, v in (("c", c), ("step", step)):
            if not float(v) > 0:
                raise ValueError(f"handler_options.{key} must be > 0 (got {v!r})")
        if not float(power) >= 1:
            raise ValueError(f"handler_options.power must be >= 1 (got {power!r})")
        self.epoch, self.update, self.psi_kind = int(epoch), update, psi
        self.c, self.power, self.step = float(c), float(power), float(step)
        self.kappa = np.full(n_constraints, 1.0 if update == "multiplicative" else 0.0)
        self.epoch_sum = np.zeros(n_constraints)
        self.epoch_n = np.zeros(n_constraints)

    def psi(self, x: np.ndarray | float) -> np.ndarray:
        """eq. 10: exp(c x) for x >= 0, 1 below; eq. 9: (c x + 1)^n for x >= 0, 1 below."""
        xp = np.maximum(np.asarray(x, dtype=float), 0.0)
        if self.psi_kind == "exp":
            return np.exp(np.minimum(self.c * xp, 50.0))
        return (self.c * xp + 1.0) ** self.power

    def start_round(self, t: int, arrived: Sequence[Sequence[float]]) -> None:
        for j, vals in enumerate(arrived):
            self.epoch_sum[j] += float(np.sum(vals))
            self.epoch_n[j] += len(vals)
        if t == 0 or t % self.epoch:
            return
        for j in range(self.n):
            if not self.epoch_n[j]:
                continue
            mean = self.epoch_sum[j] / self.epoch_n[j]
            if self.update == "multiplicative":        # Alg. 2 line 4
                self.kappa[j] = min(self.kappa[j] * float(self.psi(mean)), 1e6)
            else:                                      # Alg. 3 line 4
                self.kappa[j] = max(self.kappa[j] + self.step * mean, 0.0)
            self.epoch_sum[j] = self.epoch_n[j] = 0.0

    def score(self, t: int, f: np.ndarray, gs: Sequence[np.ndarray], f_bound: float) -> np.ndarray:
        s = f
        for k, g in zip(self.kappa, gs):
            lam = self.psi(g) - 1.0 if self.update == "multiplicative" else g
            s = s - k * lam
        return s


HANDLERS: dict[str, type[Handler]] = {h.name: h for h in (RPOL, CBO, Penalty, SCGP, Feasibility)}


def handler_options(name: str) -> list[str]:
    """The option names a handler accepts (its constructor's keywords)."""
    return sorted(
        set(inspect.signature(HANDLERS[name].__init__).parameters) - {"self", "n_constraints"}
    )


def make_handler(name: str, n_constraints: int, params: Mapping[str, Any]) -> Handler:
    """The handler called ``name``; unknown names and options are errors that list the allowed
    ones."""
    if name not in HANDLERS:
        raise ValueError(f"constraint_handler must be one of {list(HANDLERS)} (got {name!r})")
    if not isinstance(params, Mapping):
        raise ValueError(f"handler_options must be a mapping (got {params!r})")
    allowed = handler_options(name)
    unknown = set(params) - set(allowed)
    if unknown:
        raise ValueError(f"handler_options: unknown key(s) {sorted(unknown)} for {name}; "
                         f"allowed: {allowed}")
    try:
        return HANDLERS[name](n_constraints, **params)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ValueError) and str(exc).startswith("handler_options"):
            raise
        raise ValueError(f"handler_options for {name}: {exc}") from None
