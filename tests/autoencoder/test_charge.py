"""Tests of ``symbreak.autoencoder.charge`` (moved from test_autoencoder.py)."""

import numpy as np
import pytest

from symbreak import autoencoder as ae
from symbreak.rng import make_rng

from .helpers import LAM6


# ------------------------------------------------------------------ charges and flows (App. A)
def test_charge_is_conserved_by_gradient_flow():
    g = make_rng(4)
    W0, U0 = 0.5 * g.standard_normal((6, 2)), 0.5 * g.standard_normal((2, 6))
    W, U = ae.gradient_flow(W0, U0, LAM6, np.linspace(0, 20, 11))
    Q = ae.noether_charge(W, U)
    assert np.max(np.abs(Q - Q[0])) < 1e-8
    assert ae.population_loss(W[-1], U[-1], LAM6) < ae.population_loss(W0, U0, LAM6) - 1.0  # it did learn


def test_sgd_charge_update_and_its_sign_on_the_pca_manifold():
    g = make_rng(6)
    x = g.standard_normal((6, 16)) * np.sqrt(LAM6)[:, None]
    sh = x @ x.T / 16
    W, U = 0.7 * g.standard_normal((6, 3)), 0.7 * g.standard_normal((3, 6))
    W1, U1 = ae.sgd_step(W, U, sh, 0.05)
    assert np.allclose(
        ae.noether_charge(W1, U1) - ae.noether_charge(W, U), ae.charge_increment(W, U, sh, 0.05), atol=1e-13
    )  # A.15 exactly
    W, U = ae.pca_point([2.0, 1.0, 0.5], 6)
    _, gU = ae.minibatch_gradients(W, U, sh)
    assert np.max(np.abs(gU)) < 1e-14  # A.21
    assert np.linalg.eigvalsh(ae.charge_increment(W, U, sh, 0.05)).min() > -1e-15  # A.26
    assert np.linalg.eigvalsh(ae.charge_increment(W, U, sh, 0.05)).max() > 1e-4


# ------------------------------------------------------------------ finite-η extension and helpers
def test_expected_charge_increment_matches_monte_carlo_and_the_manifold_value():
    from symbreak.engine import wishart_covariance

    g = make_rng(21)
    W, U = 0.7 * g.standard_normal((6, 2)), 0.7 * g.standard_normal((2, 6))
    sh = wishart_covariance(g, np.sqrt(LAM6), 8, 200_000)
    inc = ae.charge_increment(W, U, sh, 0.1)
    se = inc.std(0) / np.sqrt(inc.shape[0])
    assert np.all(np.abs(inc.mean(0) - ae.expected_charge_increment(W, U, LAM6, 0.1, 8)) < 4 * se)
    s = np.array([2.0, 0.7])
    Wm, Um = ae.pca_point(s, 6)  # on the manifold: (η²/B) S^{-1/2} C S^{-1/2}
    assert np.allclose(
        ae.expected_charge_increment(Wm, Um, LAM6, 0.1, 8),
        0.1**2 / 8 * np.diag(ae.growth_rates(LAM6, 2) / s),
        rtol=1e-12,
        atol=1e-15,
    )


def test_residual_split_and_helpers():
    lam = ae.geometric_spectrum(20)
    X = make_rng(24).standard_normal((20, 4000)) * np.sqrt(lam)[:, None]
    W, U = ae.pca_point(np.geomspace(3, 1, 10), 20)
    par, perp = ae.residual_split(W, U, X, "linear")
    assert par < 1e-20 and perp == pytest.approx(lam[10:].sum(), rel=0.05)  # r = -x_perp exactly
    inc = ae.charge_increments_along_sgd(lam, 10, 0.02, 128, 200, seed=3)
    assert inc["formula_error"].max() < 1e-13 and inc["manifold_min_eig"].min() >= 0
    res = ae.simulate_sgd(lam, 10, 0.02, 128, 2000, seeds=2, record_every=500, seed=1)
    assert np.allclose(ae.saturation_scale(res, 0.003), res.scales[:, 2:, 0].mean(1))
    with pytest.raises(ValueError, match="tau_from"):
        ae.saturation_scale(res, 10.0)


@pytest.mark.parametrize("k", [3, 10, 25])
def test_relu_residual_split_is_the_per_input_projection(k):
    """The ReLU residual split projects each input's residual onto the span of its active units'
    decoder columns once per activation pattern; it equals the projection made input by input
    (W_A W_A⁺ r with an SVD pseudo-inverse of each input's own W_A), with fewer and more active
    units than the dimension d = 12, and a unit that is never active."""
    g = make_rng(31)
    d = 12
    W, U = g.standard_normal((d, k)), g.standard_normal((k, d))
    U[0] = -np.abs(U[0])  # unit 0: inactive on the inputs below (all positive)
    X = np.abs(g.standard_normal((d, 3000)))
    H = U @ X
    R = W @ np.maximum(H, 0.0) - X
    par = np.stack([W * (H[:, n] > 0) @ np.linalg.pinv(W * (H[:, n] > 0)) @ R[:, n] for n in range(X.shape[1])], 1)
    want = (np.mean(np.sum(par**2, axis=0)), np.mean(np.sum((R - par) ** 2, axis=0)))
    assert np.unique(H > 0, axis=1).shape[1] < X.shape[1]  # inputs share patterns
    np.testing.assert_allclose(ae.residual_split(W, U, X), want, rtol=1e-12)
