"""The bounded UCB evaluation (Posterior.shifted_top) that maximize uses must not change a
choice."""

import numpy as np
import pytest

from tuner.core.acquisition import shifted
from tuner.core.gp import GaussianProcess, Hyperparameters
from tuner.core.posterior import PRUNE_BLOCK, Posterior
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


@pytest.mark.parametrize("post",
                         [Posterior(GP_ALL, Y, GP_ALL), Posterior(GP_DONE, Y[: N // 2], GP_ALL)],
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
    space = SearchSpace.from_dict(
        {f"x{i}": {"type": "float", "low": 0, "high": 1} for i in range(D)}
    )
    h = shifted(Posterior(GP_ALL, Y, GP_ALL), 1.0)
    C = space.snap(U)
    assert np.array_equal(maximize(h, C, space, smooth=True),
                          maximize(lambda V: h(V), C, space, smooth=True))


def test_maximize_leaves_taken_candidates_out_and_still_chooses_the_best_of_the_rest():
    """Candidates near running trials are dropped before the bounded scoring: the choice
    (without refinement) is the best untaken candidate by the full evaluation."""
    space = SearchSpace.from_dict(
        {f"x{i}": {"type": "float", "low": 0, "high": 1} for i in range(D)}
    )
    h = shifted(Posterior(GP_ALL, Y, GP_ALL), 1.0)
    C = space.snap(U)
    full = h(C)
    taken_rows = np.argsort(-full)[:200]           # the 200 best are all "taken"
    mask = np.zeros(len(C), dtype=bool)
    mask[taken_rows] = True

    def taken(V):
        return np.array([bool(np.any(np.all(C[mask] == v, axis=1))) for v in V])

    calls = []
    top = h.top
    h.top = lambda V, k: calls.append((len(V), k)) or top(V, k)
    x = maximize(h, C, space, smooth=True, n_starts=0, taken=taken)
    assert calls == [(len(C) - 200, 1)]          # scored without the taken, threshold the best
    assert np.array_equal(x, C[np.argsort(-np.where(mask, -np.inf, full))[0]])
    refined = maximize(h, C, space, smooth=True, taken=taken)
    assert not taken(refined[None, :])[0]
    assert h(refined[None, :])[0] >= np.max(np.where(mask, -np.inf, full)) - 1e-12


@pytest.mark.parametrize("joint", [True, False])
def test_refine_starts_each_reach_their_own_local_maximum(joint):
    """The joint L-BFGS-B run on the sum of the starts' values is separable: every start
    climbs its own hill, as separate runs do, and the best end point is returned."""
    from tuner.core.maximize import refine

    peaks = np.array([[0.2, 0.2], [0.8, 0.7], [0.3, 0.85]])
    heights = np.array([1.0, 1.5, 0.7])

    def h(V):
        d2 = ((V[:, None, :] - peaks[None]) ** 2).sum(-1)
        return (heights * np.exp(-d2 / 0.01)).sum(1)

    starts = peaks + np.array([[0.05, -0.04], [-0.06, 0.05], [0.04, 0.03]])
    x, v = refine(h, starts, joint=joint)
    assert np.allclose(x, peaks[1], atol=1e-3) and v == pytest.approx(1.5, abs=1e-4)
    x, v = refine(h, starts[[0, 2]], joint=joint)      # without the highest hill's start
    assert np.allclose(x, peaks[0], atol=1e-3) and v == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("n", [N, 512])     # 512: the factor fills its buffer (the copied case)
def test_diagonal_block_solves_read_the_factor_in_place_and_match_a_copy(n):
    from scipy.linalg import solve_triangular
    gp = _gp(rng.random((n, D)))
    B = rng.standard_normal((n, 4))
    for r0, r1 in [(0, PRUNE_BLOCK), (PRUNE_BLOCK, 2 * PRUNE_BLOCK), (2 * PRUNE_BLOCK, n)]:
        block = np.asfortranarray(gp.L[r0:r1, r0:r1])
        for trans in (False, True):
            want = solve_triangular(block, B[r0:r1], lower=True, trans=int(trans),
                                    check_finite=False)
            assert np.array_equal(gp.solve_block(r0, r1, B[r0:r1], trans), want)
    assert np.array_equal(gp.solve(B), solve_triangular(np.asfortranarray(gp.L), B, lower=True,
                                                        check_finite=False))
