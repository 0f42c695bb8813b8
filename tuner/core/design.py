"""The start-up design: the first ``n_initial`` suggestions before the GP chooses (a scrambled
Sobol sequence, ``scipy.stats.qmc``), and random points where no GP chooses (random search, or
points drawn from a finite domain)."""

from __future__ import annotations

import numpy as np


class StartupDesign:
    def __init__(self, dim: int, n: int, seed: int | None, domain: np.ndarray | None = None):
        self.dim, self.n, self.seed, self.domain = dim, n, seed, domain

    def point(self, t: int, rng: np.random.Generator, extend: bool = False) -> np.ndarray:
        """Query t's point in the unit cube (a row of ``domain`` if there is one); past the
        design's n points a random one, or with ``extend`` the Sobol sequence's next."""
        if self.domain is not None:
            return self.domain[rng.integers(len(self.domain))]
        n = max(1, self.n, t + 1 if extend else 0)
        if t < n:
            from scipy.stats import qmc   # scipy.stats costs 0.7 s to import: only on first use
            pts = qmc.Sobol(self.dim, scramble=True, seed=self.seed).random(
                2 ** int(np.ceil(np.log2(n))))
            return pts[t]
        return rng.random(self.dim)
