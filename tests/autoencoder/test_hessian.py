"""Tests of ``symbreak.autoencoder.hessian`` (moved from test_autoencoder.py, test_autoencoder_edge.py)."""

import numpy as np
import pytest

from symbreak import autoencoder as ae
from symbreak.engine import WishartBlockSampler
from symbreak.rng import make_rng

from .helpers import LAM, LAM6, K


# ------------------------------------------------------------------ Hessian (App. B)
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("s", [[1.0, 1.0, 1.0], [2.5, 1.7, 1.2], [0.4, 3.0, 1.0], [7.0, 0.2, 0.9]])
def test_pca_hessian_eigenvalues_match_autograd(k, s):
    s = np.array(s[:k])
    W, U = ae.pca_point(s, 6)
    auto = np.linalg.eigvalsh(ae.autograd_hessian(LAM6, W, U))
    closed = ae.pca_hessian_eigenvalues(LAM6, k, s)
    assert closed.shape == (2 * k * 6,)
    assert np.max(np.abs(auto - closed)) < 1e-8
    assert np.sum(np.abs(closed) < 1e-12) == k * k  # the GL(k) zero modes
    assert ae.hessian_lambda_max(LAM6, k, s) == pytest.approx(closed[-1], rel=1e-12)
    assert ae.hessian_trace(LAM6, k, s) == pytest.approx(np.trace(ae.autograd_hessian(LAM6, W, U)), rel=1e-10)


def test_autograd_hessian_takes_any_memory_layout():
    """A spectrum that is a view with negative strides (``x[::-1]``) gives the same Hessian as its copy."""
    W, U = ae.pca_point(np.array([2.5, 1.2]), 6)
    rev = np.ascontiguousarray(LAM6[::-1])[::-1]  # LAM6's values, read backwards from memory
    assert rev.strides[0] < 0
    np.testing.assert_array_equal(ae.autograd_hessian(rev, W, U), ae.autograd_hessian(LAM6, W, U))


def test_lambda_max_bounds_and_trace_minimiser():
    lam = ae.geometric_spectrum(20)
    s = np.sort(make_rng(1).uniform(1.0, 9.0, 10))[::-1]
    lmax = ae.hessian_lambda_max(lam, 10, s)
    assert lam[0] * (s[0] + 1 / s[0]) <= lmax <= lam[0] * (s[0] + 1)  # B.95
    s_star = ae.trace_minimizing_scale(lam, 10)
    assert s_star >= 1
    grid = np.linspace(0.3, 4.0, 4001)
    tr = ae.hessian_trace(lam, 10, grid[:, None] * np.ones(10))
    assert grid[np.argmin(tr)] == pytest.approx(s_star, abs=1e-3)
    # encoder-heavy costs more trace than the mirrored decoder-heavy point (d λ > tr Σ, B.39)
    assert ae.hessian_trace(lam, 10, np.full(10, 0.5)) > ae.hessian_trace(lam, 10, np.full(10, 2.0))


def test_overcomplete_hessian_is_invariant_under_inversion():
    lam = LAM6[:4]
    for s in (0.3, 1.0, 2.5):
        W, U = ae.overcomplete_point(4, 6, s)
        auto = np.linalg.eigvalsh(ae.autograd_hessian(lam, W, U))
        assert np.max(np.abs(auto - ae.overcomplete_hessian_eigenvalues(lam, 6, s))) < 1e-9
        assert np.allclose(
            ae.overcomplete_hessian_eigenvalues(lam, 6, s),
            ae.overcomplete_hessian_eigenvalues(lam, 6, 1 / s),
            atol=1e-12,
        )


def test_gain_noise_variance_against_monte_carlo_of_one_sgd_step():
    """Draw the out-of-subspace pair (W_j1, U_1j) from its stationary law N(0, Ξ_1j/B), then many
    exact Wishart minibatches, take one SGD step (ae.sgd_step) and measure the variance of the change of
    (WU)_11 over minibatches: it is σ_e² to first order."""
    eta, b, s1 = 0.004, 32, 2.5
    s = np.full(K, s1)
    W0, U0 = ae.pca_point(s, LAM.size)
    _, xi = ae._perp_lyapunov(LAM, K, s, eta)
    rng = make_rng(3)
    sampler = WishartBlockSampler(np.sqrt(LAM), np.array([b]), max_steps=400)
    var = []
    for _ in range(150):
        W, U = W0.copy(), U0.copy()
        for j in range(K, LAM.size):
            w_j, u_j = rng.multivariate_normal(np.zeros(2), xi[0, j - K] / b)
            W[j, 0], U[0, j] = w_j, u_j
        e0 = (W @ U)[0, 0]
        sh = sampler.draw(rng, 400)[:, 0]
        W1, U1 = ae.sgd_step(W, U, sh, eta)  # batched over the 400 minibatches
        de = (W1[..., 0, :] * U1[..., :, 0]).sum(-1) - e0
        var.append(de.var(ddof=1))
    var = np.array(var)
    pred = ae.gain_noise_variance(LAM, K, s1, eta, b)
    assert var.mean() == pytest.approx(pred, rel=4 * var.std(ddof=1) / np.sqrt(var.size) / pred + 0.03)
