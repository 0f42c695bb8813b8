"""Contexts: what the learner sees before it chooses (paper 001 §5 and App. B, after Krause &
Ong 2011).  In round t a context z_t is given (a dataset's size, a data version, a task's
meta-features); the optimizer picks x_t for it, and y_t = g(z_t, x_t) + noise arrives after a
random delay.  CGP-UCB-SDF and CGP-TS-SDF are GP-UCB-SDF and GP-TS-SDF on the joint input
(z, x): the GP, the censoring (eq. 1), nu_t (eq. 2, Theorem 4) and the constraints are
unchanged; only the acquisition is maximized over x with z held at z_t.

The joint input is the configuration's unit-cube encoding followed by the context's
(``tuner.core.space``).  The kernel on (z, x) is the product k_Z(z, z') k_Q(x, x') (Krause &
Ong 2011, eq. 3): with the ARD squared-exponential kernel the product of the two is exactly the
SE kernel on the concatenation with one lengthscale per column, which is what the GP computes.
With ``kernel: matern52`` the GP uses Matern-5/2 on the joint distance instead of a product of
two Matern kernels (a deviation: the code has one kernel of one scaled distance).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .gp import GaussianProcess
from .space import SearchSpace, SpaceError, check_value
from .trial import Trial

Estimate = Callable[[np.ndarray], np.ndarray]


class Contexts:
    """The context space beside a configuration space, and the joint space of the GP's inputs."""

    def __init__(self, space: SearchSpace, context_space: SearchSpace | Mapping[str, Any]):
        self.space = (context_space if isinstance(context_space, SearchSpace)
                      else SearchSpace.from_dict(context_space))
        clash = sorted(set(space.names) & set(self.space.names))
        if clash:
            raise SpaceError(f"context_space: {clash} also name search-space parameters; "
                             "a context needs a name of its own")
        self.joint = SearchSpace({**space.params, **self.space.params})

    def encode(self, context: Mapping[str, Any] | None) -> np.ndarray:
        """z's encoding, snapped to a valid context; errors name the missing or unknown keys."""
        if context is None:
            raise ValueError(
                f"this optimizer has a context_space: pass the context with every "
                f"suggestion, e.g. suggest(context={{...}}) with keys {self.space.names}"
            )
        unknown = sorted(set(context) - set(self.space.names))
        missing = [k for k in self.space.names if k not in context]
        if unknown or missing:
            raise SpaceError(f"context: {'unknown' if unknown else 'missing'} key(s) "
                             f"{unknown or missing}; the context_space has {self.space.names}")
        for name, p in self.space.params.items():
            try:
                check_value(p, context[name])
            except (SpaceError, TypeError, ValueError) as exc:
                raise SpaceError(f"context '{name}': {exc}; widen the context_space (a context "
                                 "is never clipped)") from None
        return self.space.snap(self.space.encode(context))[0]

    def join(self, U: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Configuration rows ``U`` with the context ``z`` appended to each."""
        U = np.atleast_2d(U)
        return np.hstack([U, np.broadcast_to(z, (len(U), len(z)))])

    def is_new(self, z: np.ndarray, trials: Sequence[Trial], done: Sequence[Trial]) -> bool:
        """No usable result (``done``) at exactly z yet, among contexts that repeat (tasks,
        datasets, studies: at most half as many distinct contexts as ``trials``).  A context that
        changes at every suggestion is never new, or the rule would switch exploration off for
        good."""
        k, key = len(z), z.tobytes()
        distinct = {tr.x[-k:].tobytes() for tr in trials} | {key}
        if len(distinct) > len(trials) / 2:
            return False
        # newest first: a result at z, if any, is most likely among the latest
        return not any(tr.x[-k:].tobytes() == key for tr in reversed(done))

    def correlation(self, gp: GaussianProcess, a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
        """The GP's prior correlation of the objective at one configuration under contexts
        ``a`` and ``b``, without the contexts' level (``Kernel``)."""
        x = np.zeros((1, len(gp.hyper.lengthscales) - self.space.dim))   # any configuration
        A = self.join(x, self.encode(a))
        B = self.join(x, self.encode(b))
        return float(gp.correlation_apart_from_level(A, B)[0, 0])


def at_context(h: Estimate, lift: Callable[[np.ndarray], np.ndarray]) -> Estimate:
    """``h`` evaluated at ``lift(U)`` (a configuration with its context appended), keeping
    ``h.top`` (the skip of hopeless candidates) where ``h`` has one."""
    def g(U: np.ndarray) -> np.ndarray:
        return h(lift(U))
    top = getattr(h, "top", None)
    if top is not None:
        g.top = lambda U, k: top(lift(U), k)      # type: ignore[attr-defined]
    return g
