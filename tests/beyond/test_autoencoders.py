"""Tests of ``symbreak.beyond.autoencoders`` (moved from test_nonlinear.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from symbreak import nonlinear as nl
from symbreak import synthesis as sy
from symbreak.engine import DivergenceError


def test_digits_are_centred_and_normalised(digits):
    X, y = digits
    assert X.shape == (1797, 64) and y.shape == (1797,)
    assert np.abs(X.mean(0)).max() < 1e-12
    assert np.isclose(np.mean(np.sum(X * X, axis=1)), 1.0)
    assert set(np.unique(y)) == set(range(10))


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


def test_ae_sharpness_is_replica_independent(digits):
    """Replica r's start vector comes from its own stream: its eigenvalue estimate (here after too
    few iterations to converge, so the start still shows) is the same alone as among others."""
    X, _ = digits
    X = X[:200]
    W, U = nl.init_autoencoder(X, 3, 4, seed=3)
    many = nl.ae_sharpness(X, W, U, "relu", iters=3, seed=7)
    assert np.allclose(nl.ae_sharpness(X, W[:1], U[:1], "relu", iters=3, seed=7), many[:1], rtol=1e-12)
    assert np.allclose(nl.ae_sharpness(X, W[:3], U[:3], "relu", iters=3, seed=7), many[:3], rtol=1e-12)
    assert not np.allclose(nl.ae_sharpness(X, W, U, "relu", iters=3, seed=8), many, rtol=1e-6)
