import numpy as np
import pytest
from scipy.linalg import cholesky
from scipy.optimize import approx_fprime
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

from tuner.core.acquisition import thompson_sample
from tuner.core.gp import GaussianProcess, Hyperparameters
from tuner.core.marginal_likelihood import (fit_hyperparameters, negative_log_marginal_likelihood,
                                            pairwise_sqdiff)
from tuner.core.posterior import Posterior
from tuner.core.kernels import Matern52, SquaredExponential

rng = np.random.default_rng(0)
X = rng.random((40, 3))
y = np.sin(6 * X[:, 0]) + X[:, 1] ** 2 - X[:, 2]
Xs = rng.random((25, 3))
LS = np.array([0.3, 0.5, 0.8])


@pytest.mark.parametrize("ours, theirs", [(SquaredExponential(), RBF(LS)),
                                          (Matern52(), Matern(LS, nu=2.5))])
def test_posterior_matches_sklearn(ours, theirs):
    gp = GaussianProcess(ours, Hyperparameters(1.7, LS, 1e-3))
    gp.extend(X)
    mean, var = Posterior(gp, y, gp).predict(Xs)
    ref = GaussianProcessRegressor(ConstantKernel(1.7, "fixed") * theirs.clone_with_theta(
        np.log(LS)), alpha=1e-3, optimizer=None, normalize_y=False).fit(X, y)
    rmean, rstd = ref.predict(Xs, return_std=True)
    assert np.allclose(mean, rmean, atol=1e-8)
    assert np.allclose(np.sqrt(var), rstd, atol=1e-7)
    _, cov = Posterior(gp, y, gp).predict(Xs, full_cov=True)
    _, rcov = ref.predict(Xs, return_cov=True)
    assert np.allclose(cov, rcov, atol=1e-8)


def test_incremental_cholesky_equals_fresh_factorization():
    hyper = Hyperparameters(1.0, LS, 1e-4)
    inc = GaussianProcess(SquaredExponential(), hyper)
    for x in X:                      # one row at a time, through several capacity doublings
        inc.append(x)
    K = SquaredExponential()(X, X, 1.0, LS) + 1e-4 * np.eye(len(X))
    assert np.allclose(inc.L, cholesky(K, lower=True), atol=1e-10)
    fresh = GaussianProcess(SquaredExponential(), hyper)
    fresh.reset(X)
    assert np.allclose(Posterior(inc, y, inc).predict(Xs)[0],
                       Posterior(fresh, y, fresh).predict(Xs)[0], atol=1e-9)


def test_anchor_cache_follows_appends_and_refits():
    D = rng.random((30, 3))
    gp = GaussianProcess(SquaredExponential(), Hyperparameters(1.0, LS, 1e-3))
    gp.set_anchor(D)
    gp.extend(X[:20])
    gp.set_hyperparameters(Hyperparameters(0.5, LS * 2, 1e-2))
    gp.extend(X[20:])
    m1, v1 = Posterior(gp, y, gp).predict(D)            # from the cache (D is the anchor)
    m2, v2 = Posterior(gp, y, gp).predict(D.copy())     # computed afresh
    assert np.allclose(m1, m2, atol=1e-9) and np.allclose(v1, v2, atol=1e-9)


def test_marginal_likelihood_gradient_and_fit():
    S = pairwise_sqdiff(X)
    yc = y - y.mean()
    for kernel in (SquaredExponential(), Matern52()):
        theta = np.r_[np.log(0.8), np.log(LS), np.log(1e-2)]
        f, g = negative_log_marginal_likelihood(theta, kernel, S, yc)
        num = approx_fprime(theta, lambda t: negative_log_marginal_likelihood(t, kernel, S, yc)[0],
                            1e-6)
        assert np.allclose(g, num, rtol=1e-3, atol=1e-3)
        start = Hyperparameters(1.0, np.full(3, 0.2), 1e-3)
        h = fit_hyperparameters(kernel, X, yc, start, np.random.default_rng(1))
        theta_fit = np.r_[np.log(h.amplitude), np.log(h.lengthscales), np.log(h.noise)]
        theta0 = np.r_[0.0, np.log(np.full(3, 0.2)), np.log(1e-3)]
        assert (negative_log_marginal_likelihood(theta_fit, kernel, S, yc)[0]
                < negative_log_marginal_likelihood(theta0, kernel, S, yc)[0] - 1.0)
    # x2 matters less than x0 in y: its lengthscale comes out longer
    assert h.lengthscales[0] < h.lengthscales[2] * 5


def test_thompson_sample_on_anchor_has_posterior_moments():
    D = np.linspace(0, 1, 40)[:, None]
    gp = GaussianProcess(SquaredExponential(), Hyperparameters(1.0, np.array([0.15]), 1e-2))
    gp.set_anchor(D)
    idx = [3, 17, 30]
    gp.extend(D[idx])
    yy = np.array([0.2, 0.9, 0.4])
    post = Posterior(gp, yy, gp)
    mean, cov = post.predict(D.copy(), full_cov=True)
    r = np.random.default_rng(5)
    draws = np.array([thompson_sample(post, gp.anchor, 2.0, r) for _ in range(4000)])
    assert np.allclose(draws.mean(0), mean, atol=0.1)
    assert np.allclose(np.cov(draws.T), 4.0 * cov, atol=0.15)
    # the direct (non-anchored) path draws from the same distribution
    draws2 = np.array([thompson_sample(post, D.copy(), 2.0, r) for _ in range(4000)])
    assert np.allclose(np.cov(draws2.T), 4.0 * cov, atol=0.15)
