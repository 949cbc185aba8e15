"""Tests of ``symbreak.platonic.samples`` (moved from test_platonic.py)."""

import numpy as np
import pytest
from scipy.linalg import expm

from symbreak import platonic as pl
from symbreak.rng import make_rng


def test_eq14_per_sample_with_autograd(deep):
    """‖∇_{W_i} ℓ‖² = ‖∇_{h^{i+1}} ℓ‖² ‖h^i‖², sample by sample, with gradients from autograd;
    the closed-form per-sample gradients agree with autograd."""
    net, task, w = deep
    x, _, y = pl.sample_data(task, 34, 50)
    grads, reps, rgs = pl.per_sample_gradients(net, w, x, y)
    a_grads, a_reps, a_rgs = pl.autograd_sample_gradients(net, w, x, y)
    for i in range(net.depth):
        lhs = (a_grads[i] ** 2).sum(axis=(1, 2))
        rhs = (a_rgs[i] ** 2).sum(1) * (a_reps[i] ** 2).sum(1)
        assert np.allclose(lhs, rhs, rtol=1e-12, atol=0)
        assert np.allclose(grads[i], a_grads[i], rtol=1e-11, atol=1e-12)
        assert np.allclose(rgs[i], a_rgs[i], rtol=1e-11, atol=1e-12)
        assert np.allclose(reps[i], a_reps[i], rtol=1e-12, atol=1e-13)


def test_minibatch_gradient_is_linear_in_second_moments(deep):
    net, task, w = deep
    x, eps, y = pl.sample_data(task, 37, 7)
    grads, _, _ = pl.per_sample_gradients(net, w, x, y)
    u = np.concatenate([x, eps], axis=1)
    s_hat = u.T @ u / len(u)
    for mine, ref in zip(pl.minibatch_gradient(net, task, w, s_hat), grads):
        assert np.allclose(mine, ref.mean(0), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("layer", [1, 2])
def test_gradient_is_equivariant_under_the_symmetry(layer):
    """P-Eqs. 24–25 (the book's equivariance lemma): after ``W_{k+1} → W_{k+1} T``, ``W_k → T^{-1} W_k``
    the per-sample gradients (PyTorch autograd) obey ``∇_{W_k'} ℓ = Tᵀ ∇_{W_k} ℓ``,
    ``∇_{W_{k+1}'} ℓ = ∇_{W_{k+1}} ℓ T^{-ᵀ}`` sample by sample, for a general invertible ``T``, and the
    gradients of the other layers do not change."""
    pytest.importorskip("torch")
    task, net, _ = pl.example_pair()
    w = pl.init_weights(net, (5, layer))
    width = w[layer - 1].shape[0]
    T = expm(0.4 * make_rng(6).standard_normal((width, width)))
    w2 = pl.symmetry_transform(w, layer, T)
    x, _, y = pl.sample_data(task, seed=7, n_samples=20)
    g, _, _ = pl.autograd_sample_gradients(net, w, x, y)
    g2, _, _ = pl.autograd_sample_gradients(net, w2, x, y)
    k = layer - 1  # W_k is weights[k]
    np.testing.assert_allclose(g2[k], T.T @ g[k], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(g2[k + 1], g[k + 1] @ np.linalg.inv(T).T, rtol=1e-9, atol=1e-9)
    for j in range(len(w)):
        if j not in (k, k + 1):
            np.testing.assert_allclose(g2[j], g[j], rtol=1e-9, atol=1e-9)
    # and the transform is not trivial: the gradient of layer k does change
    assert np.abs(g2[k] - g[k]).max() > 1e-3
