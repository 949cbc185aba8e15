"""Platonic representations: the closed-form kernel, the entropic term, the trainers, the checks."""

import time

import numpy as np
import pytest
import scipy.optimize
from scipy.linalg import expm

from symbreak import platonic as pl
from symbreak.config import sized
from symbreak.rng import make_rng


@pytest.fixture(scope="module")
def task():
    return pl.random_task(11, n=3, m=3, noise=0.6)


@pytest.fixture(scope="module")
def square_net():
    """A two-layer EDLN with a square hidden layer (the orbit is GL(3))."""
    return pl.random_edln(12, 3, 3, (3,), cond=2.0)


# ---------------------------------------------------------------------------------------------
# The Platonic kernel
# ---------------------------------------------------------------------------------------------


def _orbit_minimum(net, task, w0, layers):
    """Minimise the exact S over the symmetry orbit (16) of ``w0`` by BFGS over the matrices
    ``T_k`` (one per hidden layer in ``layers``), with the exact gradient: for
    ``W_i' = T_i^{-1} W_i T_{i-1}``, ``∂S/∂T_k = T_k^{-ᵀ} (W_{k+1}'ᵀ ∇_{W_{k+1}'}S − ∇_{W_k'}S W_k'ᵀ)``."""
    k = net.widths[0]

    def transform(v):
        w = w0
        for j, layer in enumerate(layers):
            w = pl.symmetry_transform(w, layer, v[j * k * k : (j + 1) * k * k].reshape(k, k))
        return w

    def fun(v):
        w = transform(v)
        g = pl.entropy_gradient(net, task, w)
        grad = []
        for j, layer in enumerate(layers):
            t = v[j * k * k : (j + 1) * k * k].reshape(k, k)
            inner = w[layer].T @ g[layer] - g[layer - 1] @ w[layer - 1].T
            grad.append(np.linalg.solve(t.T, inner).ravel())
        return pl.entropy_term(net, task, w), np.concatenate(grad)

    x0 = np.concatenate([np.eye(k).ravel()] * len(layers))
    res = scipy.optimize.minimize(fun, x0, jac=True, method="BFGS", options=dict(gtol=1e-10, maxiter=10_000))
    return transform(res.x), res


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


def test_deeper_orbit_minimum_has_the_same_kernel_in_every_layer(task):
    net = pl.random_edln(21, 3, 3, (3, 3), cond=2.0)
    w0 = pl.random_global_minimum(net, task, 5)
    w, res = _orbit_minimum(net, task, w0, [1, 2])
    ks = pl.hidden_kernels(net, w, normalize=True)
    kstar = task.platonic_kernel()
    for k in ks:
        assert np.linalg.norm(k - kstar) < 1e-6
    assert res.fun == pytest.approx(pl.minimal_entropy(net, task), rel=1e-9)


def test_platonic_kernel_closed_form_properties():
    rng = make_rng(1)
    v = rng.standard_normal((4, 3))
    sx, se = pl.random_spd(rng, 3, 4.0), pl.random_spd(rng, 4, 4.0)
    k = pl.platonic_kernel(v, sx, se)
    assert np.linalg.norm(k) == pytest.approx(1.0, abs=1e-14)
    assert np.allclose(k, k.T, atol=1e-15) and np.linalg.eigvalsh(k)[0] > 0
    # only the shape of the label noise matters: K⋆(cΣε) = K⋆(Σε)
    assert np.allclose(pl.platonic_kernel(v, sx, 7.0 * se), k, atol=1e-13)
    # isotropic data and noise: K⋆ ∝ (V*ᵀV*)^{1/2}
    ref = pl.sqrtm_psd(v.T @ v)
    assert np.allclose(pl.platonic_kernel(v, np.eye(3), np.eye(4)), ref / np.linalg.norm(ref), atol=1e-13)
    # defining equation: Σx^{1/2} K Σx K Σx^{1/2} ∝ Σx^{1/2} Vᵀ Σε V Σx^{1/2}
    r = pl.sqrtm_psd(sx)
    lhs, rhs = r @ k @ sx @ k @ r, r @ v.T @ se @ v @ r
    assert np.allclose(lhs / np.linalg.norm(lhs), rhs / np.linalg.norm(rhs), atol=1e-12)
    # rank-deficient V*: rank of K⋆ is rank V*
    v2 = np.outer(rng.standard_normal(4), rng.standard_normal(3))
    assert np.linalg.matrix_rank(pl.platonic_kernel(v2, sx, se), tol=1e-10) == 1


# ---------------------------------------------------------------------------------------------
# Kernel alignment
# ---------------------------------------------------------------------------------------------


def test_kernel_alignment_properties():
    rng = make_rng(2)
    p = rng.standard_normal((5, 4))
    k = p.T @ p
    assert pl.kernel_alignment(k, 3.7 * k) == pytest.approx(1.0, abs=1e-15)
    o = pl.random_orthogonal(rng, 5)
    q = rng.standard_normal((6, 4))
    k2 = q.T @ q
    # rotation of either representation leaves the kernel and the alignment unchanged
    assert pl.kernel_alignment((o @ p).T @ (o @ p), k2) == pytest.approx(pl.kernel_alignment(k, k2), rel=1e-13)
    assert pl.kernel_alignment(0.01 * k, 50 * k2) == pytest.approx(pl.kernel_alignment(k, k2), rel=1e-13)
    vals = []
    for _ in range(200):
        a, b = rng.standard_normal((2, 4, int(rng.integers(1, 6))))
        vals.append(pl.kernel_alignment(a @ a.T, b @ b.T))
    vals = np.array(vals)
    assert np.all((vals >= 0) & (vals <= 1 + 1e-15))
    assert vals.min() < 0.2 and vals.max() < 1  # not trivially constant
    # stacked input broadcasts
    assert pl.kernel_alignment(np.stack([k, k2]), k2) == pytest.approx([pl.kernel_alignment(k, k2), 1.0])


def test_alignment_with_metric_is_population_gram_alignment():
    """With a metric Σ, the alignment equals E[k1 k2]/sqrt(E k1² E k2²) over x1, x2 ~ N(0, Σ)."""
    rng = make_rng(3)
    a, b = rng.standard_normal((2, 3, 3))
    k1, k2 = a @ a.T, b @ b.T
    sig = pl.random_spd(rng, 3, 3.0)
    n = 400_000
    x1, x2 = rng.multivariate_normal(np.zeros(3), sig, size=(2, n))
    f1 = np.einsum("ni,ij,nj->n", x1, k1, x2)
    f2 = np.einsum("ni,ij,nj->n", x1, k2, x2)
    mc = np.mean(f1 * f2) / np.sqrt(np.mean(f1**2) * np.mean(f2**2))
    assert pl.kernel_alignment(k1, k2, metric=sig) == pytest.approx(mc, abs=0.01)


def test_joint_alignment_matrix():
    rng = make_rng(4)
    ks_a = np.stack([(lambda p: p.T @ p)(rng.standard_normal((3, 3))) for _ in range(2)])
    ks_b = np.stack([(lambda p: p.T @ p)(rng.standard_normal((3, 3))) for _ in range(3)])
    m = pl.joint_alignment(ks_a, ks_b, reference=np.eye(3))
    assert m.shape == (6, 6)
    assert np.allclose(np.diag(m), 1) and np.allclose(m, m.T)
    assert m[1, 3] == pytest.approx(pl.kernel_alignment(ks_a[1], ks_b[1]))
    assert m[4, 5] == pytest.approx(pl.kernel_alignment(ks_b[2], np.eye(3)))


# ---------------------------------------------------------------------------------------------
# The entropic term: Eq. 14, closed forms against autodiff and Monte Carlo
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deep():
    task = pl.random_task(31, n=4, m=3, noise=0.5)
    net = pl.random_edln(32, 4, 3, (5, 3, 6), cond=3.0)
    return net, task, pl.init_weights(net, 33)


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


def test_minibatch_gradient_is_linear_in_second_moments(deep):
    net, task, w = deep
    x, eps, y = pl.sample_data(task, 37, 7)
    grads, _, _ = pl.per_sample_gradients(net, w, x, y)
    u = np.concatenate([x, eps], axis=1)
    s_hat = u.T @ u / len(u)
    for mine, ref in zip(pl.minibatch_gradient(net, task, w, s_hat), grads):
        assert np.allclose(mine, ref.mean(0), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("widths", [(4,), (5, 6), (6, 4, 7, 5)], ids=["depth2", "depth3", "depth5"])
@pytest.mark.parametrize("batch", [4, 16], ids=["points", "bartlett"])
def test_compiled_sgd_agrees_with_the_numpy_step(widths, batch, monkeypatch):
    """The compiled SGD step (replicas in SIMD lanes, products summed in loops) against the batched
    NumPy step it replaces: the same update, so the same trajectories up to the order of each small
    product's sums. 37 replicas (a full group of 32 and a partial one), per-replica learning rates
    and weight decays (zero for some), the learning-rate warm-up, 1,500 steps. Measured: relative
    differences of a few 1e-15; the tolerance 1e-12 allows rounding to grow 100-fold, far below any
    change of the update (one step of lr 0.01 moves the weights by ~1e-3 relative)."""
    task = pl.random_task(5, n=4, m=5, noise=0.5)
    net = pl.random_edln(6, 4, 5, widths, cond=2.0)
    r = 37
    w0 = pl.init_weights(net, 7, replicas=r)
    lr = np.linspace(0.005, 0.012, r)
    wd = np.where(np.arange(r) % 3 == 0, 0.0, np.linspace(1e-3, 1e-2, r))
    kw = dict(lr=lr, batch_size=batch, steps=1500, seed=8, weight_decay=wd, lr_warmup=300, record_every=500)
    monkeypatch.setattr(pl, "_COMPILED_SGD", True)
    fast = pl.train_sgd(net, task, w0, **kw)
    monkeypatch.setattr(pl, "_COMPILED_SGD", False)
    ref = pl.train_sgd(net, task, w0, **kw)
    for a, b, b0 in zip(fast.weights, ref.weights, w0):
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()
        assert np.abs(b - b0).max() > 1e-3 * np.abs(b).max()  # the runs did move
    assert np.allclose(fast.kernels, ref.kernels, rtol=1e-12, atol=1e-14)
    assert np.allclose(fast.loss, ref.loss, rtol=1e-12, atol=1e-14)
    # a replica's numbers do not depend on its group: replicas 5 (a lane of the full first group of
    # 32) and 35 (of the partial second), stepped alone from their own streams, bit for bit
    from symbreak.engine import replica_streams

    monkeypatch.setattr(pl, "_COMPILED_SGD", True)
    mk = dict(lr=lr, wd=wd, lr_warmup=300, sgd=True, batch_size=batch)
    group = pl._PlatonicModel(np.arange(r), replica_streams(8, range(r)), net, task, w0, **mk)
    alone = [pl._PlatonicModel(np.array([j]), replica_streams(8, [j]), net, task, w0, **mk) for j in (5, 35)]
    for block in range(8):
        for model in [group] + alone:
            model.steps(model.draw(64), 0, 64, 64 * block)
    assert np.array_equal(group.flat[5], alone[0].flat[0]) and np.array_equal(group.flat[35], alone[1].flat[0])


@pytest.mark.parametrize("batch", [4, 16], ids=["points", "bartlett"])
def test_float32_sgd_follows_float64_on_the_same_draws(batch):
    """train_sgd(dtype=float32) draws float32 minibatches (other random numbers than float64's), so
    the two runs differ; fed the same (float32) draws, the float64 step and the float32 step follow
    each other to float32 rounding: measured ~5e-6 relative after 1,920 steps (tolerance 1e-4)."""
    from symbreak.engine import replica_streams

    task, net_a, _ = pl.example_pair()
    r = 40
    w0 = pl.init_weights(net_a, 1, replicas=r)
    kw = dict(lr=np.full(r, 0.01), wd=np.full(r, 1e-3), lr_warmup=300, sgd=True, batch_size=batch)
    m32 = pl._PlatonicModel(np.arange(r), replica_streams(3, range(r)), net_a, task, w0, dtype=np.float32, **kw)
    m64 = pl._PlatonicModel(np.arange(r), replica_streams(3, range(r)), net_a, task, w0, **kw)
    for block in range(30):
        noise = m32.draw(64)
        m32.steps(noise, 0, 64, 64 * block)
        cast = tuple(a.astype(np.float64) for a in noise) if isinstance(noise, tuple) else noise.astype(np.float64)
        m64.steps(cast, 0, 64, 64 * block)
    assert m32.flat.dtype == np.float32
    for a, b, b0 in zip(m32.w, m64.w, w0):
        assert np.abs(a - b).max() <= 1e-4 * np.abs(b).max()
        assert np.abs(b - b0).max() > 1e-2 * np.abs(b).max()  # the runs did move


def test_float32_sgd_end_to_end():
    """train_sgd(dtype=float32): float32 weights, float64 records, the same numbers for the same seed
    whatever the chunking, a loss near float64's (both at the noise floor tr Σε after the warm-up:
    means over 32 replicas within 2%), and a ValueError naming dtype for anything but float32/64."""
    task, net_a, _ = pl.example_pair()
    w0 = pl.init_weights(net_a, 2, replicas=32)
    kw = dict(lr=0.01, batch_size=4, steps=6000, seed=3, lr_warmup=1000, record_every=2000)
    a = pl.train_sgd(net_a, task, w0, dtype=np.float32, **kw)
    b = pl.train_sgd(net_a, task, w0, dtype="float32", n_chunks=2, **kw)
    c = pl.train_sgd(net_a, task, w0, **kw)
    assert a.weights[0].dtype == np.float32 and a.kernels.dtype == np.float64
    assert all(np.array_equal(x, y) for x, y in zip(a.weights, b.weights))
    assert abs(a.loss[-1].mean() / c.loss[-1].mean() - 1) < 0.02
    for bad in (np.float16, np.int64, "double precision", 3):
        with pytest.raises(ValueError, match="dtype"):
            pl.train_sgd(net_a, task, w0, dtype=bad, **kw)


def test_compiled_sgd_reports_divergence(monkeypatch):
    """Past the stability edge the compiled step's weights overflow; the runner's check sees it
    and raises DivergenceError naming the replica and its learning rate, as the NumPy step does."""
    task, net, _ = pl.example_pair()
    w0 = pl.init_weights(net, 1, replicas=3)
    monkeypatch.setattr(pl, "_COMPILED_SGD", True)
    with pytest.raises(pl.DivergenceError, match=r"replica 1; lr=3,"):
        pl.train_sgd(net, task, w0, lr=np.array([0.01, 3.0, 0.01]), batch_size=4, steps=500, seed=1)


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


# ---------------------------------------------------------------------------------------------
# Minima, symmetry, Platonic minimum
# ---------------------------------------------------------------------------------------------


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


def test_library_orbit_minimiser_agrees(task, square_net):
    w0 = pl.random_global_minimum(square_net, task, 7)
    w, res = pl.minimize_entropy_on_orbit(square_net, task, w0)
    assert res.fun == pytest.approx(pl.minimal_entropy(square_net, task), rel=1e-10)
    k = pl.hidden_kernels(square_net, w, normalize=True)[0]
    assert np.linalg.norm(k - task.platonic_kernel()) < 1e-7


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


def test_sharpness_against_explicit_hessian():
    import torch

    task = pl.random_task(71, n=2, m=2, noise=0.5)
    net = pl.random_edln(72, 2, 2, (3,), cond=2.0)
    w = pl.platonic_minimum(net, task, 73)
    shapes = [a.shape for a in w]
    sizes = [a.size for a in w]

    def loss(flat):
        parts = torch.split(flat, sizes)
        ws = [pp.reshape(s) for pp, s in zip(parts, shapes)]
        u = torch.tensor(net.m_out) @ ws[1] @ ws[0] @ torch.tensor(net.input_map)
        a = u - torch.tensor(task.v_star)
        return torch.trace(a @ torch.tensor(task.sigma_x) @ a.T)

    flat = torch.tensor(np.concatenate([a.ravel() for a in w]))
    h = torch.autograd.functional.hessian(loss, flat).numpy()
    assert pl.sharpness(net, task, w, iters=500) == pytest.approx(np.linalg.eigvalsh(h)[-1], rel=1e-8)


def test_random_matrices_have_the_stated_conditioning():
    rng = make_rng(81)
    assert np.linalg.cond(pl.random_invertible(rng, 5, 3.0)) == pytest.approx(3.0, rel=1e-10)
    assert np.linalg.cond(pl.random_spd(rng, 4, 2.0)) == pytest.approx(2.0, rel=1e-10)
    task = pl.random_task(82, n=4, m=5, noise=0.3, cond_v=3.0)
    sv = np.linalg.svd(task.v_star, compute_uv=False)
    assert sv[0] / sv[-1] == pytest.approx(3.0, rel=1e-10)
    assert np.trace(task.sigma_eps) == pytest.approx(0.3 * 5)


# ---------------------------------------------------------------------------------------------
# Training: Theorem 1 on small networks, and the gradient-descent control
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_pair():
    """Two small EDLNs of depths 2 and 3 on views of the same 3-dimensional latent data."""
    task = pl.random_task(91, n=3, m=3, noise=0.5)
    net_a = pl.random_edln(92, 3, 3, (4,), cond=2.0, name="A")
    net_b = pl.random_edln(93, 3, 3, (3, 5), cond=2.0, name="B")
    seeds = 4
    return task, net_a, net_b, pl.init_weights(net_a, 94, replicas=seeds), pl.init_weights(net_b, 95, replicas=seeds)


def _all_pairs(task, ka, kb):
    m = pl.joint_alignment(ka, kb, reference=task.platonic_kernel())
    off = ~np.eye(m.shape[-1], dtype=bool)
    return m[:, off]


def test_entropic_loss_reaches_platonic_alignment(small_pair):
    """Gradient descent on L + γS (γ annealed 0.02 → 2e-4, the η → 0⁺ objective) aligns every
    hidden layer of both networks with each other and with K⋆ (quick-mode sizes)."""
    task, net_a, net_b, wa, wb = small_pair
    kw = dict(lr=0.04, steps=4000, gamma=0.02, gamma_warmup=300, gamma_final=2e-4, lr_warmup=300, record_every=4000)
    ra, rb = pl.train_gd(net_a, task, wa, **kw), pl.train_gd(net_b, task, wb, **kw)
    al = _all_pairs(task, ra.kernels[-1], rb.kernels[-1])
    assert al.min() >= 0.9995  # measured 0.99985
    assert np.all(np.abs(ra.loss[-1] - np.trace(task.sigma_eps)) < 1e-3)
    assert np.all(np.abs(rb.loss[-1] - np.trace(task.sigma_eps)) < 1e-3)


def test_sgd_reaches_platonic_alignment_and_gd_does_not(small_pair):
    """Online SGD with label noise (η = 0.03, B = 8, 10⁴ steps, kernels averaged over the last
    30 % of the run) aligns all layers; plain GD from the same initialisations does not."""
    task, net_a, net_b, wa, wb = small_pair
    kw = dict(lr=0.03, batch_size=8, steps=10_000, lr_warmup=300, record_every=200)
    ra = pl.train_sgd(net_a, task, wa, seed=96, **kw)
    rb = pl.train_sgd(net_b, task, wb, seed=97, **kw)
    al = _all_pairs(task, ra.window_kernels(0.3), rb.window_kernels(0.3))
    assert al.min() >= 0.995  # measured 0.998
    # the same initialisations under plain gradient descent keep their imbalance
    gd = dict(lr=0.03, steps=4000, lr_warmup=300, record_every=4000)
    ga, gb = pl.train_gd(net_a, task, wa, **gd), pl.train_gd(net_b, task, wb, **gd)
    assert np.all(np.abs(ga.loss[-1] - np.trace(task.sigma_eps)) < 1e-6)  # GD did converge
    assert np.all(np.abs(gb.loss[-1] - np.trace(task.sigma_eps)) < 1e-6)
    gd_al = _all_pairs(task, ga.kernels[-1], gb.kernels[-1])
    assert gd_al.mean() < 0.85  # measured 0.82
    assert gd_al.min() < 0.6  # measured 0.52
    # the clean control: gradient flow (no learning rate, charges conserved)
    fa = pl.gradient_flow(net_a, task, wa, t_end=60.0, n_records=1)
    fb = pl.gradient_flow(net_b, task, wb, t_end=60.0, n_records=1)
    flow_al = _all_pairs(task, fa.kernels[-1], fb.kernels[-1])
    assert flow_al.mean() < 0.85  # measured 0.81
    assert np.all(np.abs(fb.loss[-1] - np.trace(task.sigma_eps)) < 1e-8)


def test_no_label_noise_selects_nothing(small_pair):
    """Without label noise S vanishes on the minima: SGD ends where gradient descent ends."""
    task, net_a, _, wa, _ = small_pair
    quiet = task.with_noise(np.zeros((3, 3)))
    r = pl.train_sgd(net_a, quiet, wa, lr=0.01, batch_size=4, steps=4000, seed=98, lr_warmup=500, record_every=4000)
    assert np.all(r.entropy[-1] < 1e-6 * r.entropy[0])
    g = pl.train_gd(net_a, quiet, wa, lr=0.01, steps=4000, lr_warmup=500, record_every=4000)
    kstar = task.platonic_kernel()
    a_sgd = pl.kernel_alignment(r.kernels[-1], kstar)
    a_gd = pl.kernel_alignment(g.kernels[-1], kstar)
    assert np.all(np.abs(a_sgd - a_gd) < 0.05)
    assert a_sgd.mean() < 0.95


def test_divergence_is_reported_not_silent(small_pair):
    task, net_a, _, wa, _ = small_pair
    with pytest.raises(pl.DivergenceError, match="lr=2"):
        pl.train_sgd(net_a, task, wa, lr=2.0, batch_size=4, steps=200, seed=1, record_every=10)


def test_window_average(small_pair):
    task, net_a, _, wa, _ = small_pair
    r = pl.train_sgd(net_a, task, wa, lr=0.01, batch_size=4, steps=100, seed=1, record_every=10)
    assert np.allclose(r.window_kernels(0.2), r.kernels[r.steps >= 80].mean(0))
    assert np.allclose(r.window_kernels(1.0), r.kernels[1:].mean(0))


def test_slow_time_and_alignment_deficit(small_pair):
    """The slow time sums the (warmed-up) step weights; the deficit is 1 − mean alignment."""
    task, net_a, _, wa, _ = small_pair
    r = pl.train_sgd(net_a, task, wa, lr=0.01, batch_size=4, steps=100, seed=1, lr_warmup=40, record_every=10)
    w = np.minimum((np.arange(100) + 1) / 40, 1.0)
    assert np.allclose(r.slow_time(2.0, power=2), 2.0 * np.concatenate([[0.0], np.cumsum(w**2)])[r.steps])
    assert np.allclose(r.slow_time(3.0, power=1)[-1], 3.0 * w.sum())
    kstar = task.platonic_kernel()
    expected = [1.0 - np.mean([pl.kernel_alignment(k, kstar) for k in ks.reshape(-1, 3, 3)]) for ks in r.kernels]
    assert np.allclose(r.alignment_deficit(kstar), expected, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="reference"):
        r.alignment_deficit(np.eye(4))
    with pytest.raises(ValueError, match="power"):
        r.slow_time(1.0, power=3)


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


def test_bad_inputs_raise_value_errors_naming_the_parameter():
    rng = make_rng(100)
    good = rng.standard_normal((3, 3))
    singular = np.outer([1.0, 2, 3], [1.0, 0, 1])
    with pytest.raises(ValueError, match="view"):
        pl.EDLN((3,), good, good, singular)
    with pytest.raises(ValueError, match="m_in"):
        pl.EDLN((3,), singular, good, good)
    with pytest.raises(ValueError, match="m_out"):
        pl.EDLN((3,), good, singular, good)
    with pytest.raises(ValueError, match="view"):
        pl.EDLN((3,), good, good, np.eye(4))
    with pytest.raises(ValueError, match="widths"):
        pl.EDLN((), good, good, good)
    with pytest.raises(ValueError, match="widths"):
        pl.EDLN((3, 0), good, good, good)
    not_spd = np.diag([1.0, -1.0, 2.0])
    v = rng.standard_normal((3, 3))
    with pytest.raises(ValueError, match="sigma_x"):
        pl.platonic_kernel(v, not_spd, np.eye(3))
    with pytest.raises(ValueError, match="sigma_eps"):
        pl.platonic_kernel(v, np.eye(3), not_spd)
    with pytest.raises(ValueError, match="sigma_x"):
        pl.platonic_kernel(v, good, np.eye(3))  # not symmetric
    with pytest.raises(ValueError, match="sigma_eps"):
        pl.platonic_kernel(v, np.eye(3), np.zeros((3, 3)))  # no noise: no Platonic kernel
    with pytest.raises(ValueError, match="sigma_x"):
        pl.platonic_kernel(v, np.eye(4), np.eye(3))  # shape mismatch
    with pytest.raises(ValueError, match="sigma_eps"):
        pl.platonic_kernel(v, np.eye(3), np.eye(2))
    with pytest.raises(ValueError, match="V"):
        pl.platonic_kernel(np.zeros((3, 3)), np.eye(3), np.eye(3))
    with pytest.raises(ValueError, match="sigma_x"):
        pl.Task(v, not_spd, np.eye(3))
    with pytest.raises(ValueError, match="sigma_eps"):
        pl.Task(v, np.eye(3), not_spd)
    with pytest.raises(ValueError, match="sigma_x"):
        pl.Task(v, np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="K1"):
        pl.kernel_alignment(np.zeros((3, 3)), np.eye(3))
    with pytest.raises(ValueError, match="K2"):
        pl.kernel_alignment(np.eye(3), np.ones((3, 2)))
    with pytest.raises(ValueError, match="same size"):
        pl.kernel_alignment(np.eye(3), np.eye(2))
    # a width below rank V*
    task = pl.Task(np.diag([1.0, 2.0, 0.5]), np.eye(3), np.eye(3))
    narrow = pl.EDLN((3, 2, 4), good, good, good)
    with pytest.raises(ValueError, match="widths"):
        pl.entropy_term(narrow, task, pl.init_weights(narrow, 0))
    with pytest.raises(ValueError, match="widths"):
        pl.train_sgd(narrow, task, pl.init_weights(narrow, 0), lr=0.01, batch_size=2, steps=1)
    # a narrow layer is fine when V* has low rank
    low = pl.Task(np.diag([1.0, 2.0, 0.0]), np.eye(3), np.eye(3))
    assert np.isfinite(pl.entropy_term(narrow, low, pl.init_weights(narrow, 0)))
    # network and task dimensions, weight shapes
    net = pl.EDLN((3,), good, good, good)
    with pytest.raises(ValueError, match="m_out"):
        pl.population_loss(net, pl.random_task(0, n=3, m=4), pl.init_weights(net, 0))
    with pytest.raises(ValueError, match="m_in"):
        pl.population_loss(net, pl.random_task(0, n=4, m=3), pl.init_weights(pl.random_edln(0, 4, 3, (3,)), 0))
    task3 = pl.random_task(0, n=3, m=3)
    with pytest.raises(ValueError, match=r"weights\[1\]"):
        pl.entropy_term(net, task3, [np.eye(3), np.eye(4)])
    with pytest.raises(ValueError, match="weights"):
        pl.entropy_term(net, task3, [np.eye(3)])
    with pytest.raises(ValueError, match="lr"):
        pl.train_gd(net, task3, pl.init_weights(net, 0), lr=-0.1, steps=1)
    with pytest.raises(ValueError, match="batch_size"):
        pl.train_sgd(net, task3, pl.init_weights(net, 0), lr=0.1, batch_size=0, steps=1)
    with pytest.raises(ValueError, match="s_hat"):
        pl.minibatch_gradient(net, task3, pl.init_weights(net, 0), np.eye(5))
    with pytest.raises(ValueError, match="T"):
        pl.symmetry_transform(pl.init_weights(net, 0), 1, singular)
    with pytest.raises(ValueError, match="widths"):
        pl.platonic_minimum(narrow, task, 0)  # a width below rank V* = 3
    with pytest.raises(ValueError, match="sigma_eps"):
        pl.platonic_minimum(net, low.with_noise(np.zeros((3, 3))), 0)


# ----------------------------------------------------------------------------------------------
# rank-deficient targets, controls, curvature, the field's metrics, sample-level SGD, explorer
# ----------------------------------------------------------------------------------------------


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


def test_gradient_flow_conserves_charges_and_reaches_a_minimum(small_pair):
    task, net_a, *_ = small_pair
    w0 = pl.init_weights(net_a, 3, replicas=2)
    res = pl.gradient_flow(net_a, task, w0, t_end=40.0, n_records=4)
    assert res.params["method"] == "flow" and res.steps[-1] == pytest.approx(40.0)
    assert np.all(res.loss[-1] - np.trace(task.sigma_eps) < 1e-8)
    for c0, c1 in zip(pl.noether_charges(w0), pl.noether_charges(res.weights)):
        assert np.abs(c1 - c0).max() < 1e-5 * np.abs(c0).max()
    with pytest.raises(ValueError, match="t_end"):
        pl.gradient_flow(net_a, task, w0, t_end=0.0)
    for huge in (1.01e10, 1e20, 1e300):  # refused at once, not after ~15 s of solver work
        cpu = time.process_time()
        with pytest.raises(ValueError, match=r"t_end must lie in \(0, 1e\+10\]"):
            pl.gradient_flow(net_a, task, w0, t_end=huge)
        assert time.process_time() - cpu < 0.5
    with pytest.raises(ValueError, match="n_records"):
        pl.gradient_flow(net_a, task, w0, t_end=1.0, n_records=0)
    with pytest.raises(ValueError, match="rtol"):
        pl.gradient_flow(net_a, task, w0, t_end=1.0, rtol=-1.0)


def test_loss_hessian_and_trace_identity():
    task, net_a, _ = pl.example_pair()
    iso = task.with_noise(0.7 * np.eye(task.m))
    w = pl.platonic_minimum(net_a, iso, seed=0)
    h = pl.loss_hessian(net_a, iso, w)
    assert np.allclose(h, h.T)
    lam, tr = pl.sharpness_and_trace(net_a, iso, w)
    assert lam == pytest.approx(pl.sharpness(net_a, iso, w), rel=1e-6)
    assert tr == pytest.approx(pl.hessian_trace_at_minimum(net_a, iso, w), rel=1e-6)
    # S = 2 σ² tr H at a global minimum with isotropic noise
    assert pl.entropy_term(net_a, iso, w) == pytest.approx(2 * 0.7 * tr, rel=1e-6)
    with pytest.raises(ValueError, match="unstacked"):
        pl.loss_hessian(net_a, iso, [a[None] for a in w])
    with pytest.raises(ValueError, match="step"):
        pl.loss_hessian(net_a, iso, w, step=0.0)


def test_cka_equals_weighted_alignment_and_knn_bounds():
    task, net_a, net_b = pl.example_pair()
    x, _, _ = pl.sample_data(task, 0, 20_000)
    wa, wb = pl.init_weights(net_a, 1), pl.init_weights(net_b, 2)
    ha, hb = pl.representations(net_a, wa, x)[0], pl.representations(net_b, wb, x)[1]
    ka, kb = pl.hidden_kernels(net_a, wa)[0], pl.hidden_kernels(net_b, wb)[1]
    assert pl.linear_cka(ha, hb) == pytest.approx(pl.kernel_alignment(ka, kb, metric=task.sigma_x), abs=0.01)
    assert pl.gram_alignment(ha, hb) == pytest.approx(pl.kernel_alignment(ka, kb, metric=task.sigma_x), abs=0.01)
    rot = pl.random_orthogonal(pl.make_rng(3), ha.shape[1])
    assert pl.mutual_knn(ha[:500], 2.5 * ha[:500] @ rot, 10) == pytest.approx(1.0)
    assert pl.linear_cka(ha, 3.0 * ha @ rot) == pytest.approx(1.0)
    unrelated = pl.make_rng(4).standard_normal((500, 3))
    assert pl.mutual_knn(ha[:500], unrelated, 10) < 0.1
    with pytest.raises(ValueError, match="h2"):
        pl.linear_cka(ha, hb[:10])
    with pytest.raises(ValueError, match="k"):
        pl.mutual_knn(ha[:20], hb[:20], 0)
    with pytest.raises(ValueError, match="h1"):
        pl.gram_alignment(np.zeros((5, 2)), hb[:5])


def test_train_sgd_samples_linear_matches_population_sgd_statistics(small_pair):
    """Without activation the sample-level trainer is online SGD on the EDLN: it selects K*."""
    task, net_a, *_ = small_pair
    w0 = pl.init_weights(net_a, 5, replicas=2)
    res = pl.train_sgd_samples(net_a, task, w0, lr=0.01, batch_size=4, steps=20_000, seed=1, lr_warmup=1000)
    al = pl.kernel_alignment(res.window_kernels(0.25), task.platonic_kernel(), metric=task.sigma_x)
    assert al.min() > 0.97
    # narrow widths are allowed here, and a finite dataset can be given
    narrow = pl.random_edln(2, task.n, task.m, (task.n, 1))
    x, _, y = pl.sample_data(task, 3, 64)
    r2 = pl.train_sgd_samples(
        narrow,
        task,
        pl.init_weights(narrow, 4),
        lr=0.01,
        batch_size=4,
        steps=200,
        seed=5,
        data=(x, y),
        activation="tanh",
        scale=0.5,
    )
    assert np.all(np.isfinite(r2.loss[1:]))
    with pytest.raises(ValueError, match="activation"):
        pl.train_sgd_samples(net_a, task, w0, lr=0.01, batch_size=4, steps=100, activation="sigmoid")
    with pytest.raises(ValueError, match="data"):
        pl.train_sgd_samples(net_a, task, w0, lr=0.01, batch_size=4, steps=100, data=(x,))
    with pytest.raises(ValueError, match="scale"):
        pl.train_sgd_samples(net_a, task, w0, lr=0.01, batch_size=4, steps=100, scale=0.0)
    with pytest.raises(pl.DivergenceError):
        pl.train_sgd_samples(net_a, task, w0, lr=5.0, batch_size=4, steps=500)


@pytest.mark.parametrize("eta,noise", [(0.001, 0.01), (0.001, 2.0), (0.03, 0.01), (0.03, 2.0), (0.01, 0.5)])
def test_explorer_never_raises_in_its_box(eta, noise):
    out = pl.explore_alignment(eta, noise, steps=3000, seeds=2)
    assert out["diverged"].shape == (1,)
    if out["diverged"][0]:
        assert "diverged" in out["message"] and np.isnan(out["final"][0])
    else:
        assert 0.5 < out["final"][0] <= 1.0 + 1e-12


def test_explorer_rejects_settings_outside_its_box():
    with pytest.raises(ValueError, match="eta"):
        pl.explore_alignment(0.1, 0.5)
    with pytest.raises(ValueError, match="noise"):
        pl.explore_alignment(0.01, 5.0)
    with pytest.raises(ValueError, match="steps"):
        pl.explore_alignment(0.01, 0.5, steps=10)


def test_new_functions_reject_bad_inputs():
    task, net_a, _ = pl.example_pair()
    w = pl.init_weights(net_a, 0)
    x, _, _ = pl.sample_data(task, 0, 10)
    with pytest.raises(ValueError, match="unstacked"):
        pl.representations(net_a, [a[None] for a in w], x)
    with pytest.raises(ValueError, match="x"):
        pl.representations(net_a, w, x[:, :2])
    with pytest.raises(ValueError, match="activation"):
        pl.representations(net_a, w, x, activation="softplus")
    with pytest.raises(ValueError, match="task"):
        pl.hessian_trace_at_minimum(net_a, "not a task", w)
    with pytest.raises(ValueError, match="lr"):
        pl.train_sgd_samples(net_a, task, w, lr=-0.1, batch_size=4, steps=100)
    with pytest.raises(ValueError, match="batch_size"):
        pl.train_sgd_samples(net_a, task, w, lr=0.1, batch_size=0, steps=100)
    with pytest.raises(ValueError, match="data"):
        pl.train_sgd_samples(net_a, task, w, lr=0.1, batch_size=20, steps=100, data=(x, x @ task.v_star.T))
    with pytest.raises(ValueError, match="h1"):
        pl.linear_cka(x[:1], x[:1])


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
