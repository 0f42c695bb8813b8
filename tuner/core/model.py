"""One censored GP model of one quantity (the objective, or a constraint), composed of:

* ``gp_all``: a GP over every started trial (inputs appended at suggest time, in start order);
  censoring (001 eq. 1, 004 §5) gives pending trials a fixed target (hard censoring: the same
  noise as a result).  Kept only where a posterior or beta_t needs it (``keep_all``): soft
  censoring works from ``gp_done`` alone, so by default one factor is kept, not two;
* ``soft_view``: ``gp_done`` plus the censored entries as one block at a noise of their own
  (soft censoring, ``SoftCensoredPosterior``);
* ``gp_done``: a GP over usable results only (in arrival order), for the baselines that ignore
  pending trials (mean and variance) or hallucinate them (mean only);
* marginal-likelihood refits every k usable results; with several candidate kernels, each is
  fit and the one of highest evidence (marginal likelihood x lengthscale prior) is kept;
* ``recent``: the posterior from a subset of the inputs only (the sliding window of RPOL-SWUCB,
  004 §6 / App. D), with the same hyperparameters;
* ``members``: past ``Settings.exact_until`` started trials, the trials both GPs are built on
  (``tuner.core.subset``; None: every trial, the exact GP);
* ``deferred``: past ``fit_max_points`` usable results with ``research.refit_apply: next``, the
  fit started when the last one was due, applied when the next is due (``tuner.core.fit_job``).

The optimizer owns one model for the objective and one per bandit-feedback constraint; what
differs between them is only the target vector they are given.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .algorithms import Algorithm
from .censoring import Trial
from .fit_job import FitJob, PendingFit, Pool, fit_best
from .gp import GaussianProcess, HyperBounds, Hyperparameters
from .posterior import Posterior
from .soft_censoring import SoftCensoredPosterior
from .kernels import Kernel, make_kernel
from .space import SearchSpace

if TYPE_CHECKING:
    from .settings import Settings


class CensoredModel:
    def __init__(self, kernel: Kernel, hyper: Hyperparameters, domain: np.ndarray | None = None,
                 bounds: HyperBounds | None = None, groups: np.ndarray | None = None,
                 alternatives: Sequence[Kernel] = (), keep_all: bool = True):
        self.keep_all = keep_all
        self.kernels = [kernel, *alternatives]   # chosen among at each fit (the first until then)
        self.gp_all = GaussianProcess(kernel, hyper)
        self.gp_done = GaussianProcess(kernel, hyper)
        if domain is not None:
            self.gp_all.set_anchor(domain)
            self.gp_done.set_anchor(domain)
        self.bounds = bounds or HyperBounds()
        self.groups = groups  # tied lengthscales (fit_hyperparameters), e.g. a categorical's block
        self.done_ids: list[int] = []
        self.all_base = 0     # inputs present at the last full factorization (for replay)
        self.done_base = 0
        self.fit_n = 0        # usable results at the last hyperparameter fit
        self.members: list[int] | None = None   # start indices the GPs are built on (None: all)
        self._member_set: set[int] = set()
        self.built_at = 0     # started trials when the members were chosen
        self.deferred: PendingFit | None = None   # a fit in flight (refit_apply: next)

    def append(self, x: np.ndarray, index: int) -> None:
        """A started trial (start index ``index``) enters the model."""
        if self.members is not None:
            self.members.append(index)
            self._member_set.add(index)
        if self.keep_all:
            self.gp_all.append(x)

    def restrict(self, members: Sequence[int], trials: Sequence[Trial], t: int) -> None:
        """Build both GPs afresh on the trials of these start indices only (``tuner.core.subset``),
        chosen when ``t`` trials had started."""
        self.members, self.built_at = [int(i) for i in members], int(t)
        self._member_set = set(self.members)
        if self.keep_all:
            self.gp_all.reset(np.vstack([trials[i].x for i in self.members]))
        self.all_base = self.gp_all.n
        by_id = {tr.trial_id: tr for tr in trials}
        self.done_ids = [i for i in self.done_ids if by_id[i].start_index in self._member_set]
        X = [by_id[i].x for i in self.done_ids]
        self.gp_done.reset(np.vstack(X) if X else np.zeros((0, self.gp_done.dim)))
        self.done_base = self.gp_done.n

    def in_model(self, trials: Sequence[Trial]) -> list[Trial]:
        """The trials the GPs are built on (every trial while exact)."""
        if self.members is None:
            return list(trials)
        return [trials[i] for i in self.members]

    def sync(self, done: Sequence[Trial]) -> None:
        """Keep ``gp_done`` on the usable results, appending in arrival order when possible."""
        if self.members is not None:
            done = [tr for tr in done if tr.start_index in self._member_set]
        ids = {tr.trial_id for tr in done}
        if not set(self.done_ids) <= ids:   # an "auto" window shrank: rebuild
            self.done_ids = []
            self.gp_done.reset(np.zeros((0, self.gp_done.dim)))
            self.done_base = 0
        have = set(self.done_ids)
        for tr in sorted((tr for tr in done if tr.trial_id not in have),
                         key=lambda tr: (tr.finish_index, tr.trial_id)):
            self.done_ids.append(tr.trial_id)
            self.gp_done.append(tr.x)

    def maybe_refit(self, done: Sequence[Trial], y: np.ndarray, every: int, max_points: int,
                    restarts: int, rng: np.random.Generator, dense_until: int = 0,
                    lengthscale_prior: bool = False, growth: float = 0.0, defer: bool = False,
                    pool: Pool | None = None) -> bool:
        """Marginal-likelihood fit every ``every`` usable results (001 App. C: every 10), or
        once they grew by the fraction ``growth`` if that is more (a fit costs the same at any
        n past ``max_points``, and moves the hyperparameters less and less), and after every
        new usable result while there are at most ``dense_until`` of them (from 2).  Returns
        whether the hyperparameters in force changed.

        Above ``max_points`` results the fit uses the newest half plus a random sample of the
        rest (the fit is O(n^3) per likelihood evaluation; the posterior still uses every point).
        There, with ``defer`` and once a fit on more than ``max_points`` results is in force, the
        fit due now starts (in ``pool`` if given) and the one started at the last due point is
        applied instead: the hyperparameters lag one refit interval (deviation from 001 App. C,
        ``research.refit_apply``), and the fit leaves the suggestion's path.
        """
        dense = 2 <= len(done) <= dense_until and len(done) > self.fit_n
        if not dense and len(done) < self.fit_n + refit_interval(every, growth, self.fit_n):
            return False
        idx = np.arange(len(done))
        if len(done) > max_points:
            keep = max_points // 2
            older = rng.choice(len(done) - keep, max_points - keep, replace=False)
            idx = np.concatenate([np.sort(older), idx[-keep:]])
        X = np.vstack([done[i].x for i in idx])
        # deferred only once the fit in force used a full sample: never the first fit (a
        # resumed or warm-started study with many results would run on the initial values)
        deferred = defer and self.fit_n > max_points
        self.fit_n = len(done)
        applied = deferred and self.deferred is not None
        if applied:
            self._apply(*self.deferred.result())
        # the kernel in use first, so a single kernel fits exactly as before
        order = sorted(self.kernels, key=lambda k: k is not self.gp_all.kernel)
        if deferred:
            job = FitJob(kernels=order, X=X, y=y[idx], ids=[done[i].trial_id for i in idx],
                         start=self.gp_all.hyper, seed=int(rng.integers(2**63 - 1)),
                         bounds=self.bounds, restarts=restarts, prior=lengthscale_prior,
                         groups=self.groups)
            self.deferred = PendingFit(job, pool)
            return applied
        self.deferred = None
        hyper, best = fit_best(kernels=order, X=X, y=y[idx], start=self.gp_all.hyper, rng=rng,
                               bounds=self.bounds, restarts=restarts, prior=lengthscale_prior,
                               groups=self.groups)
        self._apply(hyper, order[best])
        return True

    def refit_now(self, bounds: HyperBounds) -> None:
        """Fit the hyperparameters at the next ``maybe_refit``, in the box ``bounds`` from now on
        (the targets changed: ``tuner.core.warp_choice``)."""
        self.bounds, self.fit_n, self.deferred = bounds, 0, None

    def _apply(self, hyper: Hyperparameters, kernel: Kernel) -> None:
        """Put fitted hyperparameters (and the kernel they were fit for) in force: both GPs are
        factorized afresh (the replay's base, ``load_state``)."""
        self.gp_all.kernel = self.gp_done.kernel = kernel
        self.gp_all.set_hyperparameters(hyper)
        self.gp_done.set_hyperparameters(hyper)
        self.all_base, self.done_base = self.gp_all.n, self.gp_done.n

    def posterior(self, pending: str, y_all: np.ndarray | None, y_done: np.ndarray) -> Posterior:
        """censor: GP over all started trials with censored targets; ignore: usable results
        only; hallucinate: mean from usable results, variance from all started trials."""
        if y_all is not None and self.members is not None:
            y_all = y_all[self.members]
        return _view(pending, self.gp_all, y_all, self.gp_done, y_done)

    def recent(self, pending: str, X_all: np.ndarray, y_all: np.ndarray, X_done: np.ndarray,
               y_done: np.ndarray) -> Posterior:
        """``posterior`` as if only these inputs existed (sliding window: 004 App. D, posterior
        from x_{t0..t-1}, t0 = max(1, t - W)).  Factorized afresh, O(W^3): the window drops its
        oldest input every round, which an appended Cholesky factor cannot."""
        return _view(pending, self.fresh(X_all), y_all, self.fresh(X_done), y_done)

    def fresh(self, X: np.ndarray) -> GaussianProcess:
        """A GP over just these inputs, with the model's hyperparameters."""
        gp = GaussianProcess(self.gp_all.kernel, self.gp_all.hyper)
        gp.reset(X.reshape(-1, self.gp_all.dim))
        return gp

    def state_dict(self) -> dict[str, Any]:
        return {
            "hyper": self.gp_all.hyper.to_dict(),
            "fit_n": self.fit_n,
            "all_base": self.all_base,
            "done_ids": list(self.done_ids),
            "done_base": self.done_base,
            "kernel": self.gp_all.kernel.name,
            **(
                {"members": list(self.members), "built_at": self.built_at}
                if self.members is not None
                else {}
            ),
            **({"deferred": self.deferred.job.state_dict()} if self.deferred is not None else {}),
        }

    def load_state(self, state: dict[str, Any], trials: Sequence[Trial]) -> None:
        """Replay the factorizations as they happened: a full one at the last fit, then one
        appended row per input, so the factor (and the next suggestion) is bit-identical; a fit
        that was in flight is set up again from the same inputs (run when it is applied, or in
        the pool the optimizer is given, ``Optimizer.run_fits_in``)."""
        hyper = Hyperparameters.from_dict(state["hyper"])
        self.gp_all.hyper = self.gp_done.hyper = hyper
        if "kernel" in state:     # the kernel chosen at the last fit (one of the settings')
            chosen = next(k for k in self.kernels if k.name == state["kernel"])
            self.gp_all.kernel = self.gp_done.kernel = chosen
        self.fit_n, self.all_base = state["fit_n"], state["all_base"]
        self.done_ids, self.done_base = list(state["done_ids"]), state["done_base"]
        dim = self.gp_all.dim
        self.members = None if state.get("members") is None else list(state["members"])
        self._member_set = set(self.members or ())
        self.built_at = int(state.get("built_at", 0))
        if self.keep_all:
            X = np.vstack([tr.x for tr in self.in_model(trials)]) if trials else np.zeros((0, dim))
            self.gp_all.reset(X[: self.all_base])
            self.gp_all.extend(X[self.all_base:])
        by_id = {tr.trial_id: tr for tr in trials}
        Xd = np.vstack([by_id[i].x for i in self.done_ids]) if self.done_ids else np.zeros((0, dim))
        self.gp_done.reset(Xd[: self.done_base])
        self.gp_done.extend(Xd[self.done_base:])
        job = state.get("deferred")
        self.deferred = (
            None
            if job is None
            else PendingFit(
                FitJob(
                    kernels=[
                        next(k for k in self.kernels if k.name == name) for name in job["kernels"]
                    ],
                    X=np.vstack([by_id[i].x for i in job["ids"]]),
                    y=np.asarray(job["y"], dtype=float),
                    ids=list(job["ids"]),
                    start=Hyperparameters.from_dict(job["start"]),
                    seed=int(job["seed"]),
                    bounds=self.bounds,
                    restarts=int(job["restarts"]),
                    prior=bool(job["prior"]),
                    groups=self.groups,
                )
            )
        )


def refit_interval(every: int, growth: float, fit_n: int) -> int:
    """Usable results between two refits after a fit on ``fit_n`` of them (``maybe_refit``)."""
    return max(every, math.ceil(growth * fit_n))


def _view(pending: str, gp_all: GaussianProcess, y_all: np.ndarray | None,
          gp_done: GaussianProcess, y_done: np.ndarray) -> Posterior:
    if pending == "censor":
        return Posterior(gp_all, y_all, gp_all)
    if pending == "hallucinate":
        return Posterior(gp_done, y_done, gp_all)
    return Posterior(gp_done, y_done, gp_done)


def soft_view(gp_done: GaussianProcess, y_done: np.ndarray, Xc: np.ndarray, yc: np.ndarray,
              noise_frac: float, extra: np.ndarray | None = None
              ) -> Posterior | SoftCensoredPosterior:
    """Soft censoring: the usable results (``gp_done``) at the fitted noise, the censored
    entries ``Xc`` with targets ``yc`` at noise ``noise_frac`` x amplitude, plus ``extra`` (one
    variance per entry) where given."""
    if len(Xc) == 0:
        return Posterior(gp_done, y_done, gp_done)
    noise = noise_frac * gp_done.hyper.amplitude
    return SoftCensoredPosterior(gp_done, y_done, Xc, yc,
                                 noise if extra is None else noise + np.asarray(extra, dtype=float))


def model_factory(settings: Settings, algorithm: Algorithm, inputs: SearchSpace, n_context: int,
                  domain: np.ndarray | None) -> Callable[..., CensoredModel]:
    """A function making an optimizer's censored GP model from a kernel's name (``auto``: SE,
    or Matern-5/2 where the evidence says) and optional hyperparameter bounds.

    Args:
        settings: the optimizer's settings (the kernel's start and categorical lengthscales).
        algorithm: how running trials enter the GP (``keep_all`` depends on it).
        inputs: the GP's inputs (the space, with the contexts' after it).
        n_context: the contexts' dimensions with a shared-context kernel (0: none, or product).
        domain: a finite domain, if any.
    """
    m, r = settings.research.model, settings.research
    hyper = Hyperparameters(m.amplitude, np.full(inputs.dim, m.lengthscale), m.noise,
                            0.5 if n_context else None,
                            0.2 if n_context and m.context_kernel == "shared-level" else None)
    shared = m.categorical_lengthscale == "shared" and any(
        p.kind == "categorical" for p in inputs.params.values())
    groups = inputs.groups() if shared else None
    # a GP over every started trial: hard censoring and hallucination take their variance from
    # it, the "sdf" beta_t its information gain; soft censoring needs only the usable results'
    pending = algorithm.pending
    keep_all = (pending == "hallucinate" or (pending == "censor" and r.censored.censoring == "hard")
                or r.exploration.beta_schedule == "sdf")

    def model(name: str, bounds: HyperBounds | None = None) -> CensoredModel:
        kernels = [make_kernel(k, n_context)
                   for k in (("se", "matern52") if name == "auto" else (name,))]
        return CensoredModel(kernels[0], hyper, domain, bounds, groups=groups,
                             alternatives=kernels[1:], keep_all=keep_all)

    return model
