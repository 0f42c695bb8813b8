"""The bounded UCB evaluation (Posterior.shifted_top) that maximize uses must not change a choice."""

import numpy as np
import pytest

from tuner.core.acquisition import shifted
from tuner.core.gp import PRUNE_BLOCK, GaussianProcess, Hyperparameters, Posterior
from tuner.core.kernels import SquaredExponential
from tuner.core.maximize import maximize
from tuner.core.space import SearchSpace

rng = np.random.default_rng(7)
N, D = 2 * PRUNE_BLOCK + 40, 3
X = rng.random((N, D))
Y = np.sin(5 * X).sum(1)
Y = (Y - Y.min()) / (Y.max() - Y.min())
U = rng.random((1152, D))


def _gp(X_):
    gp = GaussianProcess(SquaredExponential(), Hyperparameters(0.3, np.full(D, 0.4), 1e-4))
    gp.extend(X_)           # appended one by one, as the optimizer does (strided buffer)
    return gp


GP_ALL, GP_DONE = _gp(X), _gp(X[: N // 2])


@pytest.mark.parametrize("post", [Posterior(GP_ALL, Y, GP_ALL), Posterior(GP_DONE, Y[: N // 2], GP_ALL)],
                         ids=["censored", "hallucinated"])
@pytest.mark.parametrize("weight", [1.0, 0.0, -0.5, 4.0])
def test_top_values_equal_the_full_evaluation_where_it_matters(post, weight):
    h = shifted(post, weight)
    full, top = h(U), h.top(U, 3)
    assert np.array_equal(np.argsort(-full)[:3], np.argsort(-top)[:3])
    kept = np.isfinite(top)
    assert np.allclose(top[kept], full[kept], rtol=0, atol=1e-10)
    assert kept.sum() < len(U)           # it did skip candidates


def test_maximize_chooses_the_same_point_with_and_without_bounds():
    space = SearchSpace.from_dict({f"x{i}": {"type": "float", "low": 0, "high": 1} for i in range(D)})
    h = shifted(Posterior(GP_ALL, Y, GP_ALL), 1.0)
    C = space.snap(U)
    assert np.array_equal(maximize(h, C, space, smooth=True),
                          maximize(lambda V: h(V), C, space, smooth=True))
