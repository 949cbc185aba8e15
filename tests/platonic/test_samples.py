"""Tests of ``symbreak.platonic.samples`` (moved from test_platonic.py)."""

import numpy as np

from symbreak import platonic as pl


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
