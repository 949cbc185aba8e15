"""Tests of ``symbreak.autoencoder.relu`` (moved from test_autoencoder.py)."""

import numpy as np

from symbreak import autoencoder as ae
from symbreak.rng import make_rng

from .helpers import LAM6


def test_relu_population_loss_matches_monte_carlo():
    g = make_rng(8)
    W, U = 0.6 * g.standard_normal((6, 4)), 0.6 * g.standard_normal((4, 6))
    x = g.standard_normal((6, 400_000)) * np.sqrt(LAM6)[:, None]
    per = 0.5 * np.sum((W @ np.maximum(U @ x, 0) - x) ** 2, axis=0)
    exact = ae.population_loss(W, U, LAM6, "relu")
    assert abs(per.mean() - exact) < 4 * per.std() / np.sqrt(per.size)
    per_lin = 0.5 * np.sum((W @ (U @ x) - x) ** 2, axis=0)
    assert abs(per_lin.mean() - ae.population_loss(W, U, LAM6)) < 4 * per_lin.std() / np.sqrt(per.size)


def test_sample_gradients_match_autograd_and_the_wishart_form():
    import torch

    g = make_rng(23)
    W, U = g.standard_normal((6, 4)), g.standard_normal((4, 6))
    X = g.standard_normal((6, 10)) * np.sqrt(LAM6)[:, None]
    for act in ("linear", "relu"):
        w = torch.tensor(W, requires_grad=True)
        u = torch.tensor(U, requires_grad=True)
        x = torch.tensor(X)
        h = u @ x
        loss = 0.5 * torch.sum((w @ (torch.relu(h) if act == "relu" else h) - x) ** 2) / X.shape[1]
        gw, gu = torch.autograd.grad(loss, (w, u))
        aW, aU = ae.sample_gradients(W, U, X, act)
        assert np.allclose(aW, gw.numpy(), atol=1e-12) and np.allclose(aU, gu.numpy(), atol=1e-12)
        assert np.abs(ae.neuron_balance_autograd(W, U, X[:, 0], act)).max() < 1e-12  # E.14
    lW, lU = ae.minibatch_gradients(W, U, X @ X.T / X.shape[1])
    assert np.allclose(lW, ae.sample_gradients(W, U, X, "linear")[0], atol=1e-12)
