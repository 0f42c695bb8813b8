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

from typing import Any, Mapping

import numpy as np

from .space import SearchSpace, SpaceError, check_value


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
            raise ValueError(f"this optimizer has a context_space: pass the context with every "
                             f"suggestion, e.g. suggest(context={{...}}) with keys {self.space.names}")
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
