"""The ask/tell optimizer: one GP over every started trial, censored feedback, one estimate.

    opt = Optimizer(space, algorithm="gp-ucb-sdf", objective_bounds=(0, 1), seed=0)
    s = opt.suggest()                 # the moment a worker frees
    ...                               # run s.config somewhere
    opt.tell(s.trial_id, accuracy)    # whenever it finishes, in any order
    opt.save("study.json"); Optimizer.load("study.json")

No Ray, no MLflow: the clock is injected (wall time by default, a simulated one in
``tuner.simulator``), so the same object serves simulations, the CLI and the Ray Tune plugin.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
from scipy.stats import qmc

from . import acquisition as acq
from .algorithms import get_algorithm
from .censoring import (COMPLETED, FAILED, RUNNING, Trial, Window, in_last_window,
                        pending_in_window, usable)
from .gp import GaussianProcess, HyperBounds, Hyperparameters, Posterior, fit_hyperparameters
from .kernels import make_kernel
from .maximize import argmax, candidate_set, maximize
from .space import SearchSpace

STATE_FORMAT = "tuner.optimizer"
STATE_VERSION = 1


@dataclass
class Settings:
    """Every knob of the optimizer, with the paper-001 defaults (App. C)."""

    algorithm: str = "gp-ucb-sdf"
    mode: str = "max"
    objective_bounds: tuple[float, float] | None = None
    window_unit: str = "iterations"
    window: float | str = "auto"
    nu_terms: str = "pending"
    beta: float = 1.0
    beta_schedule: str = "constant"
    delta: float = 0.1
    b_y: float = 1.0
    kernel: str = "se"
    amplitude: float = 1.0
    lengthscale: float = 0.2
    noise: float = 1e-3
    refit_every: int = 10
    fit_max_points: int = 500
    fit_restarts: int = 1
    n_initial: int = 1
    n_candidates: int = 1024
    n_local: int = 128
    n_starts: int = 3
    seed: int = 0

    def validate(self) -> None:
        get_algorithm(self.algorithm)
        make_kernel(self.kernel)
        Window(self.window_unit, self.window)
        if self.mode not in ("max", "min"):
            raise ValueError(f"mode must be one of ['max', 'min'] (got {self.mode!r})")
        if self.nu_terms not in ("pending", "window"):
            raise ValueError(f"nu_terms must be one of ['pending', 'window'] (got {self.nu_terms!r})")
        if self.beta_schedule not in acq.BETA_SCHEDULES:
            raise ValueError(f"beta_schedule must be one of {list(acq.BETA_SCHEDULES)} "
                             f"(got {self.beta_schedule!r})")
        if self.objective_bounds is not None:
            lo, hi = self.objective_bounds
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"objective_bounds must be two finite numbers low < high "
                                 f"(got {self.objective_bounds!r})")
        for name in ("refit_every", "n_candidates", "fit_max_points"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be a positive integer (got {getattr(self, name)!r})")
        for name in ("amplitude", "lengthscale", "noise", "delta"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"{name} must be > 0 (got {getattr(self, name)!r})")
        for name in ("n_initial", "n_local", "n_starts", "fit_restarts"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"{name} must be >= 0 (got {getattr(self, name)!r})")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Settings":
        allowed = set(cls.__dataclass_fields__)
        unknown = set(d) - allowed
        if unknown:
            raise ValueError(f"unknown optimizer setting(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
        s = cls(**dict(d))
        if s.objective_bounds is not None:
            s.objective_bounds = (float(s.objective_bounds[0]), float(s.objective_bounds[1]))
        return s


@dataclass(frozen=True)
class Suggestion:
    trial_id: int
    config: dict[str, Any]


class Optimizer:
    """Censored-feedback GP bandit with an ask/tell interface (see module docstring)."""

    def __init__(self, space: SearchSpace | Mapping[str, Any], settings: Settings | None = None,
                 *, clock: Callable[[], float] = time.time, domain: np.ndarray | None = None,
                 **overrides: Any):
        self.space = space if isinstance(space, SearchSpace) else SearchSpace.from_dict(space)
        base = asdict(settings) if settings is not None else {}
        base.update(overrides)
        self.settings = Settings.from_dict(base)
        self.settings.validate()
        self.algorithm = get_algorithm(self.settings.algorithm)
        self.window = Window(self.settings.window_unit, self.settings.window)
        self.clock = clock
        self.rng = np.random.default_rng(self.settings.seed)
        self.domain = None if domain is None else self.space.snap(np.asarray(domain, dtype=float))
        self.trials: list[Trial] = []
        self._by_id: dict[int, Trial] = {}
        s = self.settings
        kernel = make_kernel(s.kernel)
        hyper = Hyperparameters(s.amplitude, np.full(self.space.dim, s.lengthscale), s.noise)
        self.gp_all = GaussianProcess(kernel, hyper)       # every started trial (censoring)
        self.gp_done = GaussianProcess(kernel, hyper)      # usable results only (baselines)
        if self.domain is not None:
            self.gp_all.set_anchor(self.domain)
            self.gp_done.set_anchor(self.domain)
        self._done_ids: list[int] = []
        self._all_base = 0    # inputs present at the last full factorization (for replay)
        self._done_base = 0
        self._fit_n = 0       # usable results at the last hyperparameter fit
        self._beta = self._make_beta()
        self.last_nu: float | None = None

    # --- public API ---------------------------------------------------------------------------

    def suggest(self, config: Mapping[str, Any] | None = None) -> Suggestion:
        """Choose the next configuration now (or register ``config``, e.g. a user's start point)."""
        now, t = float(self.clock()), len(self.trials)
        if config is not None:
            x = self.space.encode(config)
        elif self.algorithm.estimate == "random" or t < self.settings.n_initial:
            x = self._initial_point(t)
        else:
            x = self._choose(now, t)
        x = self.space.snap(x)[0]
        trial = Trial(trial_id=t, config=self.space.decode(x) if config is None else dict(config),
                      x=x, start_time=now, start_index=t,
                      pending_at_suggest=sum(tr.status == RUNNING for tr in self.trials))
        self.trials.append(trial)
        self._by_id[trial.trial_id] = trial
        self.gp_all.append(x)
        return Suggestion(trial.trial_id, dict(trial.config))

    def tell(self, trial_id: int, value: float, metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None) -> None:
        """Report the objective of a finished trial (in arrival order; any trial order)."""
        trial = self._running(trial_id)
        value = float(value)
        trial.metrics.update({k: float(v) for k, v in (metrics or {}).items()})
        trial.finish_time = float(self.clock() if finish_time is None else finish_time)
        trial.finish_index = len(self.trials)
        if not math.isfinite(value):
            trial.status, trial.reason = FAILED, f"non-finite objective {value}"
            return
        trial.value = value
        trial.status = COMPLETED

    def fail(self, trial_id: int, reason: str = "failed", metrics: Mapping[str, float] | None = None,
             finish_time: float | None = None) -> None:
        """A trial that raised, was killed or timed out: censored for good (target = minimum)."""
        trial = self._running(trial_id)
        trial.status, trial.reason = FAILED, reason
        trial.metrics.update({k: float(v) for k, v in (metrics or {}).items()})
        trial.finish_time = float(self.clock() if finish_time is None else finish_time)
        trial.finish_index = len(self.trials)

    def best(self) -> Trial | None:
        """The completed trial with the best objective (per ``mode``)."""
        done = [tr for tr in self.trials if tr.status == COMPLETED]
        if not done:
            return None
        sign = 1.0 if self.settings.mode == "max" else -1.0
        return max(done, key=lambda tr: sign * tr.value)

    @property
    def running(self) -> list[Trial]:
        return [tr for tr in self.trials if tr.status == RUNNING]

    # --- one suggestion ---------------------------------------------------------------------

    def censored_targets(self, now: float | None = None) -> np.ndarray:
        """y~_{s,t} of every started trial if the next query were chosen at ``now`` (eq. 1)."""
        now = float(self.clock()) if now is None else now
        return self._censored(self._usable(now, len(self.trials))[1])

    def _censored(self, done: list[Trial]) -> np.ndarray:
        y = np.zeros(len(self.trials))
        if done:
            y[[tr.start_index for tr in done]] = self._targets(done)
        return y

    def _usable(self, now: float, t: int) -> tuple[float, list[Trial]]:
        m = self.window.resolve(self.trials, now, t)
        return m, [tr for tr in self.trials if usable(tr, m, self.window.unit)]

    def _choose(self, now: float, t: int) -> np.ndarray:
        m, done = self._usable(now, t)
        self._sync_done(done)
        self._maybe_refit(done)
        post = self._posterior(done)
        nu = self._nu(post, m, now, t)
        self.last_nu = nu
        C = candidate_set(self.space, self.rng, self.settings.n_candidates,
                          incumbents=self._incumbents(done), n_local=self.settings.n_local,
                          domain=self.domain)
        est = self.algorithm.estimate
        if est == "ts":
            return C[argmax(acq.thompson_sample(post, C, nu, self.rng))]
        weight = nu if est == "ucb" else float(self.rng.normal(0.0, nu))
        h = acq.shifted(post, weight)
        smooth = self.domain is None
        return maximize(h, C, self.space, smooth=smooth, n_starts=self.settings.n_starts)

    def _targets(self, trials: list[Trial]) -> np.ndarray:
        """Objective mapped to [0, 1] with the known minimum at 0 (001 footnote 6), as maximization."""
        vals = np.array([tr.value for tr in trials], dtype=float)
        sign = 1.0 if self.settings.mode == "max" else -1.0
        if self.settings.objective_bounds is not None:
            lo, hi = sorted(sign * np.asarray(self.settings.objective_bounds, dtype=float))
        else:
            seen = [sign * tr.value for tr in self.trials if tr.status == COMPLETED]
            lo = min(seen) if seen else 0.0
            hi = max(seen) if seen else 1.0
            hi = hi if hi > lo else lo + 1.0
        return np.clip((sign * vals - lo) / (hi - lo), 0.0, 1.0)

    def _posterior(self, done: list[Trial]) -> Posterior:
        pending = self.algorithm.pending
        y_done = self._targets([self._by_id[i] for i in self._done_ids])
        if pending == "censor":
            return Posterior(self.gp_all, self._censored(done), self.gp_all)
        if pending == "hallucinate":
            return Posterior(self.gp_done, y_done, self.gp_all)
        return Posterior(self.gp_done, y_done, self.gp_done)

    def _nu(self, post: Posterior, m: float, now: float, t: int) -> float:
        """nu_t of eq. 2; the baselines use beta_t alone."""
        info_gain = 0.5 * (self.gp_all.log_det() - self.gp_all.n * math.log(self.gp_all.hyper.noise))
        beta = self._beta(max(t, 1), info_gain)
        if not self.algorithm.delay_bonus:
            return beta
        unit = self.window.unit
        if self.settings.nu_terms == "pending":
            terms = [tr for tr in self.trials if pending_in_window(tr, m, unit, now, t)]
        else:
            terms = [tr for tr in self.trials if in_last_window(tr, m, unit, now, t)]
        if not terms:
            return beta
        sigma = post.std(np.vstack([tr.x for tr in terms]))
        return acq.exploration_weight(beta, sigma, self.settings.b_y)

    def _incumbents(self, done: list[Trial], k: int = 5) -> np.ndarray | None:
        if not done:
            return None
        order = np.argsort(-self._targets(done))[:k]
        return np.vstack([done[i].x for i in order])

    def _initial_point(self, t: int) -> np.ndarray:
        if self.domain is not None:
            return self.domain[self.rng.integers(len(self.domain))]
        n = max(1, self.settings.n_initial)
        if t < n:
            pts = qmc.Sobol(self.space.dim, scramble=True, seed=self.settings.seed).random(
                2 ** int(np.ceil(np.log2(n))))
            return pts[t]
        return self.rng.random(self.space.dim)

    # --- GP bookkeeping ---------------------------------------------------------------------

    def _sync_done(self, done: list[Trial]) -> None:
        """Keep ``gp_done`` on the usable results, appending in arrival order when possible."""
        ids = {tr.trial_id for tr in done}
        if not set(self._done_ids) <= ids:   # an "auto" window shrank: rebuild
            self._done_ids = []
            self.gp_done.reset(np.zeros((0, self.space.dim)))
            self._done_base = 0
        have = set(self._done_ids)
        new = sorted((tr for tr in done if tr.trial_id not in have),
                     key=lambda tr: (tr.finish_index, tr.trial_id))
        for tr in new:
            self._done_ids.append(tr.trial_id)
            self.gp_done.append(tr.x)

    def _maybe_refit(self, done: list[Trial]) -> None:
        """Marginal-likelihood fit every ``refit_every`` usable results (001 App. C: every 10)."""
        s = self.settings
        if self.algorithm.estimate == "random" or len(done) < self._fit_n + s.refit_every:
            return
        if len(done) > s.fit_max_points:   # cap the O(n^3) fit; newest half kept, rest sampled
            keep = s.fit_max_points // 2
            older = self.rng.choice(len(done) - keep, s.fit_max_points - keep, replace=False)
            sub = [done[i] for i in sorted(older)] + done[-keep:]
        else:
            sub = done
        X = np.vstack([tr.x for tr in sub])
        hyper = fit_hyperparameters(self.gp_all.kernel, X, self._targets(sub), self.gp_all.hyper,
                                    self.rng, HyperBounds(), s.fit_restarts)
        self.gp_all.set_hyperparameters(hyper)
        self.gp_done.set_hyperparameters(hyper)
        self._fit_n = len(done)
        self._all_base = self.gp_all.n
        self._done_base = self.gp_done.n

    def _make_beta(self) -> Callable[[int, float], float]:
        s = self.settings
        if s.beta_schedule == "constant":
            return acq.beta_constant(s.beta)
        if s.beta_schedule == "srinivas-finite":
            size = len(self.domain) if self.domain is not None else 1000 ** self.space.dim
            return acq.beta_srinivas_finite(size, s.delta)
        if s.beta_schedule == "srinivas-continuous":
            return acq.beta_srinivas_continuous(self.space.dim, s.delta)
        return acq.beta_sdf(b_y=s.b_y, delta=s.delta)

    def _running(self, trial_id: int) -> Trial:
        if trial_id not in self._by_id:
            raise KeyError(f"unknown trial_id {trial_id!r}: suggest() never returned it")
        trial = self._by_id[trial_id]
        if trial.status != RUNNING:
            raise ValueError(f"trial {trial_id} is already {trial.status}; a result is told once")
        return trial

    # --- persistence --------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT, "version": STATE_VERSION,
            "space": self.space.to_dict(), "settings": asdict(self.settings),
            "domain": None if self.domain is None else self.domain.tolist(),
            "trials": [tr.to_dict() for tr in self.trials],
            "hyper": self.gp_all.hyper.to_dict(),
            "fit_n": self._fit_n, "all_base": self._all_base,
            "done_ids": self._done_ids, "done_base": self._done_base,
            "rng": self.rng.bit_generator.state,
        }

    def save(self, path: str | os.PathLike) -> None:
        """Write the state as JSON atomically (a crash never leaves half a file)."""
        path = os.fspath(path)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(self.state_dict(), fh)
        os.replace(tmp, path)

    @classmethod
    def from_state(cls, state: Mapping[str, Any], *,
                   clock: Callable[[], float] = time.time) -> "Optimizer":
        if state.get("format") != STATE_FORMAT:
            raise ValueError(f"not an optimizer state (format={state.get('format')!r})")
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"optimizer state version {state.get('version')!r} is not supported "
                             f"(this version reads {STATE_VERSION})")
        settings = Settings.from_dict(state["settings"])
        domain = None if state["domain"] is None else np.asarray(state["domain"])
        opt = cls(SearchSpace.from_dict(state["space"]), settings, clock=clock, domain=domain)
        opt.trials = [Trial.from_dict(d) for d in state["trials"]]
        opt._by_id = {tr.trial_id: tr for tr in opt.trials}
        opt.rng.bit_generator.state = state["rng"]
        opt._fit_n, opt._all_base = state["fit_n"], state["all_base"]
        opt._done_ids, opt._done_base = list(state["done_ids"]), state["done_base"]
        # Replay the factorizations exactly as they happened: a full one at the last fit, then
        # one appended row per input, so the factor (and the next suggestion) is bit-identical.
        hyper = Hyperparameters.from_dict(state["hyper"])
        opt.gp_all.hyper = opt.gp_done.hyper = hyper
        X = np.vstack([tr.x for tr in opt.trials]) if opt.trials else np.zeros((0, opt.space.dim))
        opt.gp_all.reset(X[: opt._all_base])
        opt.gp_all.extend(X[opt._all_base:])
        Xd = np.vstack([opt._by_id[i].x for i in opt._done_ids]) if opt._done_ids else X[:0]
        opt.gp_done.reset(Xd[: opt._done_base])
        opt.gp_done.extend(Xd[opt._done_base:])
        return opt

    @classmethod
    def load(cls, path: str | os.PathLike, *, clock: Callable[[], float] = time.time) -> "Optimizer":
        with open(path) as fh:
            return cls.from_state(json.load(fh), clock=clock)
