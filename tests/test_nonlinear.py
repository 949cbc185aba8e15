"""Tests for symbreak.nonlinear: digits data, autoencoder gradients and drift, similarity measures, MLPs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from symbreak import nonlinear as nl
from symbreak import synthesis as sy
from symbreak.engine import DivergenceError


@pytest.fixture(scope="module")
def digits():
    return nl.load_digits_data()


def test_digits_are_centred_and_normalised(digits):
    X, y = digits
    assert X.shape == (1797, 64) and y.shape == (1797,)
    assert np.abs(X.mean(0)).max() < 1e-12
    assert np.isclose(np.mean(np.sum(X * X, axis=1)), 1.0)
    assert set(np.unique(y)) == set(range(10))


def test_other_shipped_data_sets_load():
    X, y = nl.load_digits_data("wine")
    assert X.shape == (178, 13) and np.isclose(np.mean(np.sum(X * X, axis=1)), 1.0)
    with pytest.raises(ValueError, match="name must be one of"):
        nl.load_digits_data("mnist")


def test_pca_theory_matches_gaussian_formula_on_gaussian_data():
    rng = np.random.default_rng(0)
    lam = np.array([3.0, 2.0, 1.0, 0.5, 0.25])
    X = rng.standard_normal((400_000, 5)) * np.sqrt(lam)
    th = nl.pca_theory(X, 2)
    assert np.allclose(th["lambdas"], lam, rtol=0.01)
    assert np.allclose(th["c_data"], th["c_gauss"], rtol=0.02)
    assert np.allclose(th["c_gauss"], lam[:2] * lam[2:].sum(), rtol=0.02)
    assert th["offdiag"] < 0.02
    with pytest.raises(ValueError, match="k must be"):
        nl.pca_theory(X[:10], 5)


def test_ae_gradients_match_autograd():
    rng = np.random.default_rng(1)
    W = torch.tensor(rng.standard_normal((2, 6, 3)), requires_grad=True)
    U = torch.tensor(rng.standard_normal((2, 3, 6)), requires_grad=True)
    X = torch.tensor(rng.standard_normal((2, 6, 5)))
    for act, fn in (("linear", lambda p: p), ("relu", torch.relu), ("tanh", torch.tanh)):
        loss, gW, gU = nl.ae_gradients(W.detach(), U.detach(), X, act)
        ref = 0.5 * ((W @ fn(U @ X) - X) ** 2).sum(dim=(1, 2)) / 5
        aW, aU = torch.autograd.grad(ref.sum(), (W, U))
        assert torch.allclose(loss, ref.detach()) and torch.allclose(gW, aW) and torch.allclose(gU, aU)
    with pytest.raises(ValueError, match="activation"):
        nl.ae_gradients(W.detach(), U.detach(), X, "gelu")
    with pytest.raises(ValueError, match="shapes do not match"):
        nl.ae_gradients(W.detach(), U.detach()[:, :2], X, "relu")


def test_relu_noether_identity_per_neuron():
    """⟨W_a, g_Wa⟩ = ⟨U_a, g_Ua⟩ for ReLU and linear units (positive homogeneity), not for tanh."""
    rng = np.random.default_rng(2)
    W = torch.tensor(rng.standard_normal((1, 6, 3)))
    U = torch.tensor(rng.standard_normal((1, 3, 6)))
    X = torch.tensor(rng.standard_normal((1, 6, 7)))
    for act, equal in (("relu", True), ("linear", True), ("tanh", False)):
        _, gW, gU = nl.ae_gradients(W, U, X, act)
        lhs = (W * gW).sum(dim=1)
        rhs = (U * gU).sum(dim=2)
        assert torch.allclose(lhs, rhs) == equal


def test_neuron_charges_and_init_are_balanced(digits):
    X, _ = digits
    W, U = nl.init_autoencoder(X, 4, 3, seed=1)
    assert W.shape == (3, 64, 4) and U.shape == (3, 4, 64)
    assert np.allclose(nl.neuron_charges(W, U), 0.0)
    with pytest.raises(ValueError, match="must match"):
        nl.neuron_charges(W, U[:, :3])
    with pytest.raises(ValueError, match="k must be"):
        nl.init_autoencoder(X, 64, 1)


def test_drift_terms_at_a_linear_pca_point(digits):
    """At a linear PCA solution the encoder term vanishes and the decoder term is C_aa (Eq. 5)."""
    X, _ = digits
    th = nl.pca_theory(X, 3)
    V = th["basis"][:, :3]
    dec, enc = nl.ae_drift_terms(X, V[None], V.T[None], "linear")
    assert np.allclose(enc, 0.0, atol=1e-12)
    assert np.allclose(dec[0], th["c_data"], rtol=1e-10)


def test_sgd_drift_of_linear_autoencoder_follows_data_rates(digits):
    X, _ = digits
    th = nl.pca_theory(X, 2)
    V = th["basis"][:, :2]
    W0 = np.broadcast_to(V, (8, 64, 2)).copy()
    run = nl.train_autoencoder(
        X,
        W0,
        W0.transpose(0, 2, 1).copy(),
        activation="linear",
        eta=0.1,
        batch_size=1,
        steps=2000,
        record_every=1000,
        seed=3,
    )
    s = run.decoder_scale[-1].mean(0)
    assert np.allclose(s, sy.lambert_scale(1.0, th["c_data"], run.tau[-1]), rtol=0.05)


def test_full_batch_gd_conserves_relu_charges(digits):
    X, _ = digits
    W, U = nl.init_autoencoder(X[:200], 3, 1, seed=2)
    run = nl.train_autoencoder(X[:200], W, U, activation="relu", eta=0.05, batch_size=None, steps=200, record_every=200)
    assert np.abs(run.q[-1]).max() < 1e-3
    assert run.loss[-1, 0] < run.loss[0, 0]


def test_train_autoencoder_is_seeded_and_detects_divergence(digits):
    X, _ = digits
    W, U = nl.init_autoencoder(X, 2, 2, seed=1)
    a = nl.train_autoencoder(X, W, U, activation="tanh", eta=0.1, batch_size=4, steps=20, record_every=10, seed=5)
    b = nl.train_autoencoder(X, W, U, activation="tanh", eta=0.1, batch_size=4, steps=20, record_every=10, seed=5)
    assert np.array_equal(a.W, b.W)
    with pytest.raises(DivergenceError):
        nl.train_autoencoder(
            X, W * 10, U * 10, activation="linear", eta=50.0, batch_size=4, steps=200, record_every=1, seed=1
        )
    with pytest.raises(ValueError, match="eta"):
        nl.train_autoencoder(X, W, U, activation="relu", eta=-1.0, batch_size=4, steps=2)
    with pytest.raises(ValueError, match="W0 must be"):
        nl.train_autoencoder(X, W[:, :10], U, activation="relu", eta=0.1, batch_size=4, steps=2)


def test_sharpness_at_linear_pca_point_matches_closed_form(digits):
    """At the PCA point with S = I, λ_max = λ_1 (s + 1/s) = 2 λ_1 (autoencoder chapter, B.94)."""
    X, _ = digits
    th = nl.pca_theory(X, 3)
    V = th["basis"][:, :3]
    lam = nl.ae_sharpness(X, V[None], V.T[None], "linear", iters=200, seed=1)
    assert np.isclose(lam[0], 2 * th["lambdas"][0], rtol=1e-3)
    with pytest.raises(ValueError, match="iters"):
        nl.ae_sharpness(X, V[None], V.T[None], "linear", iters=0)


def test_fit_lambert_rate_recovers_rate():
    tau = np.linspace(0, 50, 30)
    c, resid = nl.fit_lambert_rate(tau, sy.lambert_scale(1.3, 0.07, tau), 1.3)
    assert np.isclose(c, 0.07, rtol=1e-10) and resid < 1e-10
    with pytest.raises(ValueError, match="do not grow"):
        nl.fit_lambert_rate(tau, 1.3 * np.exp(-tau / 100), 1.3)


def test_similarity_measures():
    rng = np.random.default_rng(3)
    H = rng.standard_normal((200, 5))
    Q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    assert np.isclose(nl.kernel_alignment(H, 3.0 * H @ Q), 1.0)
    assert np.isclose(nl.linear_cka(H, H @ Q + 2.0), 1.0)
    assert nl.mutual_knn(H, H @ Q, 10) == 1.0
    G = rng.standard_normal((200, 5))
    assert nl.linear_cka(H, G) < 0.2
    assert nl.mutual_knn(H, G, 10) < 0.2
    # uncentred alignment of explicit kernels
    K1, K2 = H @ H.T, G @ G.T
    assert np.isclose(nl.kernel_alignment(H, G), np.sum(K1 * K2) / np.linalg.norm(K1) / np.linalg.norm(K2))
    with pytest.raises(ValueError, match="same number of samples"):
        nl.kernel_alignment(H, G[:10])
    with pytest.raises(ValueError, match="identically zero"):
        nl.kernel_alignment(H, 0 * G)
    with pytest.raises(ValueError, match="k must be"):
        nl.mutual_knn(H, G, 200)


def test_mlp_init_and_hidden():
    ws = nl.init_mlp([6, 5, 4, 3], 2, seed=1)
    assert [w.shape for w in ws] == [(2, 5, 6), (2, 4, 5), (2, 3, 4)]
    h = nl.mlp_hidden(ws, np.ones((7, 6)))
    assert h.shape == (2, 7, 4) and np.all(h >= 0)
    with pytest.raises(ValueError, match="sizes"):
        nl.init_mlp([6, 3], 1)
    with pytest.raises(ValueError, match="features"):
        nl.mlp_hidden(ws, np.ones((7, 5)))


def test_train_mlp_pair_learns_and_validates():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((120, 6))
    Y = np.eye(3)[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0).astype(int)]
    run = nl.train_mlp_pair(
        X,
        X[:, ::-1].copy(),
        Y,
        [6, 8, 3],
        [6, 7, 5, 3],
        eta=0.05,
        batch_size=8,
        steps=400,
        label_noise=0.1,
        replicas=2,
        record_every=200,
        seed=1,
    )
    assert run.hidden_a.shape == (3, 2, 120, 8) and run.hidden_b.shape == (3, 2, 120, 5)
    assert np.all(run.loss_a[-1] < run.loss_a[0]) and np.all(run.loss_b[-1] < run.loss_b[0])
    with pytest.raises(ValueError, match="sizes_a"):
        nl.train_mlp_pair(X, X, Y, [5, 8, 3], [6, 7, 3], eta=0.1, batch_size=8, steps=1, label_noise=0.1)
    with pytest.raises(ValueError, match="label_noise"):
        nl.train_mlp_pair(X, X, Y, [6, 8, 3], [6, 7, 3], eta=0.1, batch_size=8, steps=1, label_noise=-0.1)
    with pytest.raises(ValueError, match="probe"):
        nl.train_mlp_pair(
            X, X, Y, [6, 8, 3], [6, 7, 3], eta=0.1, batch_size=8, steps=1, label_noise=0.1, probe=(X[:5], X[:4])
        )


def test_tanh_mlp_pair_and_activation_validation():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((60, 4))
    Y = np.eye(2)[(X[:, 0] > 0).astype(int)]
    run = nl.train_mlp_pair(
        X,
        X,
        Y,
        [4, 6, 2],
        [4, 5, 2],
        eta=0.05,
        batch_size=8,
        steps=20,
        label_noise=0.1,
        record_every=10,
        activation="tanh",
        seed=2,
    )
    assert np.all(np.abs(run.hidden_a) <= 1.0)
    with pytest.raises(ValueError, match="activation"):
        nl.train_mlp_pair(
            X, X, Y, [4, 6, 2], [4, 5, 2], eta=0.05, batch_size=8, steps=2, label_noise=0.1, activation="gelu"
        )
    with pytest.raises(ValueError, match="activation"):
        nl.mlp_hidden(nl.init_mlp([4, 3, 2], 1), X, "gelu")
