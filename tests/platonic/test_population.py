"""Tests of ``symbreak.platonic.population`` (moved from test_platonic.py)."""

import numpy as np
import pytest
from scipy.linalg import expm

from symbreak import platonic as pl
from symbreak.rng import make_rng

from .helpers import _orbit_minimum


def test_platonic_kernel_is_the_minimiser_of_s_on_the_orbit(task, square_net):
    """Direct numerical minimisation of S over the GL(3) orbit of a random global minimum of a
    two-layer net lands on K⋆ (1e-6 relative) and on the closed-form minimal S."""
    w0 = pl.random_global_minimum(square_net, task, 3)
    assert pl.population_loss(square_net, task, w0) == pytest.approx(np.trace(task.sigma_eps), rel=1e-12)
    w, res = _orbit_minimum(square_net, task, w0, [1])
    assert res.fun < pl.entropy_term(square_net, task, w0)
    k = pl.hidden_kernels(square_net, w, normalize=True)[0]
    kstar = task.platonic_kernel()
    assert np.linalg.norm(k - kstar) / np.linalg.norm(kstar) < 1e-6
    assert res.fun == pytest.approx(pl.minimal_entropy(square_net, task), rel=1e-9)
    # the loss did not move: the orbit lies inside the set of global minima
    assert pl.population_loss(square_net, task, w) == pytest.approx(np.trace(task.sigma_eps), rel=1e-10)


def test_entropy_closed_form_against_monte_carlo(deep):
    net, task, w = deep
    exact = pl.entropy_term(net, task, w)
    est, se = pl.entropy_term_mc(net, task, w, 35, 400_000)
    assert abs(est - exact) < 4 * se
    assert se < 0.02 * exact  # the check has power


def test_gradient_moments_against_monte_carlo(deep):
    net, task, w = deep
    mom = pl.gradient_moments(net, task, w)
    x, _, y = pl.sample_data(task, 36, 200_000)
    grads, _, _ = pl.per_sample_gradients(net, w, x, y)
    for i, g in enumerate(grads):
        for emp_samples, th in (
            (np.einsum("nij,nkj->nik", g, g), mom[i][0]),
            (np.einsum("nji,njk->nik", g, g), mom[i][1]),
        ):
            mean, se = emp_samples.mean(0), emp_samples.std(0) / np.sqrt(len(x))
            assert np.all(np.abs(mean - th) < 5 * se + 1e-12)
        assert np.trace(mom[i][0]) == pytest.approx(pl.entropy_term(net, task, w, per_layer=True)[i], rel=1e-12)


def test_entropy_and_loss_gradients_against_autograd(deep):
    import torch

    net, task, w = deep
    sx, se = torch.tensor(task.sigma_x), torch.tensor(task.sigma_eps)
    ws = [torch.tensor(a, requires_grad=True) for a in w]
    p = [torch.tensor(net.input_map)]
    for wi in ws:
        p.append(wi @ p[-1])
    a = torch.tensor(net.m_out) @ p[-1] - torch.tensor(task.v_star)
    omega = a @ sx @ a.T + se
    q = [None] * net.depth
    q[-1] = torch.tensor(net.m_out)
    for i in range(net.depth - 2, -1, -1):
        q[i] = q[i + 1] @ ws[i + 1]
    s = 0.0
    for i in range(net.depth):
        hh, cc = p[i].T @ p[i], q[i] @ q[i].T
        s = s + 4 * (torch.trace(cc @ omega) * torch.trace(hh @ sx) + 2 * torch.trace(cc @ a @ sx @ hh @ sx @ a.T))
    loss = torch.trace(omega)
    assert s.item() == pytest.approx(pl.entropy_term(net, task, w), rel=1e-12)
    assert loss.item() == pytest.approx(pl.population_loss(net, task, w), rel=1e-12)
    g_s = torch.autograd.grad(s, ws, retain_graph=True)
    g_l = torch.autograd.grad(loss, ws)
    for mine, ref in zip(pl.entropy_gradient(net, task, w), g_s):
        assert np.allclose(mine, ref.numpy(), rtol=1e-10, atol=1e-10 * np.abs(ref.numpy()).max())
    for mine, ref in zip(pl.loss_gradient(net, task, w), g_l):
        assert np.allclose(mine, ref.numpy(), rtol=1e-10, atol=1e-12)


def test_sgd_charge_drift_matches_one_step_monte_carlo():
    """One SGD step changes the charges by η²(gᵀg − g gᵀ); its mean is charge_drift (at a global
    minimum: (η²/B) × the gradient imbalance of Eq. 31)."""
    task = pl.random_task(41, n=3, m=3, noise=0.5)
    net = pl.random_edln(42, 3, 3, (4, 3), cond=2.0)
    w0 = pl.random_global_minimum(net, task, 43)
    r, eta, batch = 100_000, 0.02, 4
    stacked = [np.broadcast_to(a, (r,) + a.shape).copy() for a in w0]
    out = pl.train_sgd(net, task, stacked, lr=eta, batch_size=batch, steps=1, seed=44, record_every=1)
    theory = pl.charge_drift(net, task, w0, lr=eta, batch_size=batch)
    for c0, c1, th in zip(pl.noether_charges(w0), pl.noether_charges(out.weights), theory):
        d = c1 - c0
        mean, se = d.mean(0), d.std(0) / np.sqrt(r)
        assert np.all(np.abs(mean - th) < 5 * se)
        assert np.abs(th).max() > 20 * se.max()  # the drift is resolved


def test_entropic_gd_step_moves_charges_like_sgd():
    """γ = η/(4B). (i) The derivative of S along the symmetry direction, D_k = ∇_{W_k}S W_kᵀ −
    W_{k+1}ᵀ∇_{W_{k+1}}S, is twice the gradient imbalance (Prop. "balance conditions" (c)).
    (ii) One gradient-descent step on L + γS at a global minimum changes the charges by exactly the
    expected SGD drift (η²/B)(imbalance) plus its own second-order term η²(g_{k+1}ᵀg_{k+1} − g_k g_kᵀ),
    g = ∇(L + γS), which is O(η⁴): halving η divides the relative deviation by 4."""
    task = pl.random_task(45, n=3, m=3, noise=0.5)
    net = pl.random_edln(46, 3, 3, (4, 3, 5), cond=2.0)
    w0 = pl.random_global_minimum(net, task, 47)
    g_s, mom = pl.entropy_gradient(net, task, w0), pl.gradient_moments(net, task, w0)
    for k in range(net.depth - 1):
        d = g_s[k] @ w0[k].T - w0[k + 1].T @ g_s[k + 1]
        imbalance = mom[k + 1][1] - mom[k][0]
        assert np.abs(d - 2 * imbalance).max() < 1e-10 * np.abs(imbalance).max()
    batch, devs = 4, []
    for eta in (0.01, 0.005):
        gamma = eta / (4 * batch)
        run = pl.train_gd(net, task, w0, lr=eta, gamma=gamma, steps=1, record_every=1)
        c0, c1 = pl.noether_charges(w0), pl.noether_charges([a[0] for a in run.weights])
        drift = pl.charge_drift(net, task, w0, lr=eta, batch_size=batch)
        g = [gl + gamma * gs for gl, gs in zip(pl.loss_gradient(net, task, w0), g_s)]
        dev = 0.0
        for k in range(net.depth - 1):
            second = eta**2 * (g[k + 1].T @ g[k + 1] - g[k] @ g[k].T)
            scale = np.abs(drift[k]).max()
            assert np.abs(c1[k] - c0[k] - drift[k] - second).max() < 1e-9 * scale
            dev = max(dev, np.abs(c1[k] - c0[k] - drift[k]).max() / scale)
        devs.append(dev)
    assert devs[0] / devs[1] == pytest.approx(4.0, rel=1e-3)


def test_platonic_minimum_is_balanced_and_minimal():
    task = pl.random_task(51, n=3, m=4, noise=0.4)
    kstar = task.platonic_kernel()
    for seed, widths in enumerate([(3,), (4, 5), (5, 3, 6, 4)]):
        net = pl.random_edln(52 + seed, 3, 4, widths, cond=3.0)
        w = pl.platonic_minimum(net, task, seed)
        assert pl.population_loss(net, task, w) == pytest.approx(np.trace(task.sigma_eps), rel=1e-12)
        assert max(np.abs(g).max() for g in pl.loss_gradient(net, task, w)) < 1e-12
        assert pl.entropy_term(net, task, w) == pytest.approx(pl.minimal_entropy(net, task), rel=1e-12)
        terms = pl.entropy_term(net, task, w, per_layer=True)
        assert np.allclose(terms, terms.mean(), rtol=1e-12)
        for ratios in pl.gradient_balance(net, task, w):
            assert np.allclose(ratios, 1.0, atol=1e-10)
        assert np.allclose(pl.kernel_alignment(pl.hidden_kernels(net, w), kstar), 1.0, atol=1e-13)


def test_min_norm_minimum_is_the_weight_decay_limit():
    task = pl.random_task(56, n=3, m=4, noise=0.4)
    net = pl.random_edln(57, 3, 4, (4, 3, 5), cond=3.0)
    w = pl.min_norm_minimum(net, task, 58)
    assert pl.population_loss(net, task, w) == pytest.approx(np.trace(task.sigma_eps), rel=1e-12)
    for c in pl.noether_charges(w):
        assert np.abs(c).max() < 1e-12  # norm balance
    x = np.linalg.solve(net.m_out, task.v_star) @ np.linalg.inv(net.input_map)
    sv = np.linalg.svd(x, compute_uv=False)
    norm = sum((a**2).sum() for a in w)
    assert norm == pytest.approx(net.depth * np.sum(sv ** (2 / net.depth)), rel=1e-12)
    rng = make_rng(59)
    for layer in range(1, net.depth):
        d = net.widths[layer - 1]
        w2 = pl.symmetry_transform(w, layer, expm(0.1 * rng.standard_normal((d, d))))
        assert sum((a**2).sum() for a in w2) > norm  # a strict minimum along the orbits
    # and gradient descent with a small weight decay converges to its kernels
    g = pl.train_gd(
        net,
        task,
        pl.init_weights(net, 60),
        lr=0.02,
        weight_decay=1e-2,
        steps=20_000,
        lr_warmup=1000,
        record_every=20_000,
    )
    al = pl.kernel_alignment(g.kernels[-1][0], pl.hidden_kernels(net, w))
    assert np.all(al > 0.98)  # 0.991-0.998 measured; the rest is the O(λ) shrinkage
    assert pl.kernel_alignment(pl.hidden_kernels(net, w), task.platonic_kernel()).min() < 0.9


def test_alignment_blocks():
    m = np.ones((5, 5))
    m[0, 2] = m[2, 0] = 0.5  # across
    m[3, 4] = m[4, 3] = 0.7  # B's second layer vs the reference
    m[1, 2] = m[2, 1] = 0.9  # across
    b = pl.alignment_blocks(m, (2, 2))
    assert b["within A"] == 1 and b["within B"] == 1
    assert b["across"] == 0.5 and b["vs K*"] == 0.7 and b["all"] == 0.5
    assert b["mean"] == pytest.approx((20 - 2 * (0.5 + 0.3 + 0.1)) / 20)
    with pytest.raises(ValueError, match="matrices"):
        pl.alignment_blocks(np.ones((4, 4)), (2, 2))


def test_symmetry_keeps_loss_and_breaks_alignment():
    """Eqs. 16-18: a random T leaves L unchanged, raises S and misaligns the layer."""
    task = pl.random_task(61, n=3, m=3, noise=0.5)
    net = pl.random_edln(62, 3, 3, (4, 5), cond=2.0)
    w = pl.platonic_minimum(net, task, 63)
    rng = make_rng(64)
    t = expm(0.5 * rng.standard_normal((4, 4)))
    w2 = pl.symmetry_transform(w, 1, t)
    assert pl.population_loss(net, task, w2) == pytest.approx(pl.population_loss(net, task, w), rel=1e-12)
    assert pl.entropy_term(net, task, w2) > 1.01 * pl.entropy_term(net, task, w)
    p = w[0] @ net.input_map
    k2 = pl.hidden_kernels(net, w2)[0]
    ti = np.linalg.inv(t)
    assert np.allclose(k2, p.T @ ti.T @ ti @ p, rtol=1e-10)  # Eq. 18
    assert pl.kernel_alignment(k2, task.platonic_kernel()) < 0.99
    assert np.allclose(pl.hidden_kernels(net, w2)[1], pl.hidden_kernels(net, w)[1], rtol=1e-10)  # other layer intact


def test_platonic_minimum_for_rank_deficient_target_and_narrow_widths():
    """widths between rank V* and n: the explicit minimum is a global minimum with S = S_min,
    every layer ∝ K* (rank r), every neuron balanced; and S_min is the orbit minimum."""
    task = pl.random_task(5, n=5, m=4, rank=2)
    net = pl.random_edln(1, 5, 4, (3, 2, 4))
    w = pl.platonic_minimum(net, task, seed=0)
    assert abs(pl.population_loss(net, task, w) - np.trace(task.sigma_eps)) < 1e-12
    assert pl.entropy_term(net, task, w) == pytest.approx(pl.minimal_entropy(net, task), rel=1e-12)
    k = pl.hidden_kernels(net, w, normalize=True)
    assert np.abs(k - task.platonic_kernel()).max() < 1e-12
    assert max(np.abs(r - 1).max() for r in pl.gradient_balance(net, task, w)) < 1e-10
    assert np.linalg.matrix_rank(k[0], tol=1e-10) == 2
