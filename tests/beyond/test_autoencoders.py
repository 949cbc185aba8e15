"""Tests of ``symbreak.beyond.autoencoders`` (moved from test_nonlinear.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from symbreak import nonlinear as nl
from symbreak import synthesis as sy
from symbreak.beyond import autoencoders as bae
from symbreak.beyond._common import _tensor
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


# ---------------------------------------------------------------------------------------------
# the edge of stability as a measured curve (issue 25, item 4)
# ---------------------------------------------------------------------------------------------


def test_exact_hvp_and_per_sample_curvatures_match_autograd():
    """The Hessian–vector product without double back-propagation equals autograd's, for a stack
    mixing the three activations, and the per-sample curvatures average to the Rayleigh quotient."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 6))
    W, U = rng.standard_normal((3, 6, 2)), rng.standard_normal((3, 2, 6))
    kinds = ("linear", "relu", "tanh")
    xs = _tensor(X).T
    Wt, Ut = _tensor(W, True), _tensor(U, True)
    fs = (lambda p: p, torch.relu, torch.tanh)
    losses = [0.5 * ((Wt[i] @ fs[i](Ut[i] @ xs) - xs) ** 2).sum() / 30 for i in range(3)]
    gW, gU = torch.autograd.grad(sum(losses), (Wt, Ut), create_graph=True)
    V, Y = torch.from_numpy(rng.standard_normal((3, 6, 2))), torch.from_numpy(rng.standard_normal((3, 2, 6)))
    aW, aU = torch.autograd.grad((gW * V).sum() + (gU * Y).sum(), (Wt, Ut))
    curv = bae._Curvature(_tensor(X), _tensor(W), _tensor(U), bae._masks(kinds))
    hW, hU = curv.hvp(V, Y)
    assert torch.allclose(hW, aW, atol=1e-12) and torch.allclose(hU, aU, atol=1e-12)
    assert torch.allclose(curv.loss(), torch.stack([v.detach() for v in losses]), atol=1e-12)
    rq = (hW * V).sum(dim=(1, 2)) + (hU * Y).sum(dim=(1, 2))
    assert torch.allclose(curv.per_sample(V, Y).mean(dim=1), rq, atol=1e-12)


def test_mean_square_edge_is_gaussian_for_gaussian_data_and_reads_the_data_otherwise(digits):
    g = np.random.default_rng(1).standard_normal((200_000, 3)) * np.array([2.0, 1.0, 0.5])
    for b in (1, 4, 32):  # m₄ = 3 for Gaussian data: 2B/(B + 2)
        assert np.isclose(bae.mean_square_edge(g, b), 2 * b / (b + 2), rtol=0.01)
    assert bae.mean_square_edge(g, [4, 8]).shape == (2,)
    # two-point data (±1 along the direction): m₄ = 1, no fluctuation of the curvature, edge 2
    pm = np.repeat([[1.0, 0.0], [-1.0, 0.0]], 5, axis=0) + np.repeat([[0.0, 0.1], [0.0, -0.1]], 5, axis=0)[::-1]
    assert np.isclose(bae.mean_square_edge(pm, 7, direction=[1.0, 0.0]), 2.0)
    X, _ = digits
    th = nl.pca_theory(X, 4)
    z = X @ th["basis"][:, 0]
    m4 = np.mean(z**4) / th["lambdas"][0] ** 2
    assert np.isclose(bae.mean_square_edge(X, 8), 16 / (7 + m4)) and m4 < 3  # the digits are sub-Gaussian here
    for bad, match in ((0, "batch_size"), ([[4]], "batch_size")):
        with pytest.raises(ValueError, match=match):
            bae.mean_square_edge(X, bad)
    with pytest.raises(ValueError, match="direction"):
        bae.mean_square_edge(X, 4, direction=np.zeros(64))
    with pytest.raises(ValueError, match="at least 2 rows"):
        bae.mean_square_edge(X[:1], 4)


def test_edge_runs_measure_sharpness_and_count_every_divergence(digits):
    X, _ = digits
    X = X[:300]
    W, U = nl.init_autoencoder(X, 3, 3, seed=2)
    run = bae.edge_of_stability_runs(
        X,
        W,
        U,
        activations=["relu", "linear", "relu"],
        etas=[0.1, 0.1, 400.0],
        batch_size=4,
        steps=60,
        n_records=5,
        n_late=3,
        first_steps=60,
        seed=3,
    )
    # step 0: the top eigenvalue of the dense Hessian of each replica's full-data loss
    xs = torch.from_numpy(X).T
    ref = []
    for i, fn in enumerate((torch.relu, lambda p: p, torch.relu)):

        def loss(w, u, fn=fn):
            return 0.5 * ((w @ fn(u @ xs) - xs) ** 2).sum() / X.shape[0]

        w, u = torch.from_numpy(W[i]), torch.from_numpy(U[i])
        (hww, hwu), (huw, huu) = torch.autograd.functional.hessian(loss, (w, u))
        p, q = w.numel(), u.numel()
        H = torch.cat(
            [torch.cat([hww.reshape(p, p), hwu.reshape(p, q)], 1), torch.cat([huw.reshape(q, p), huu.reshape(q, q)], 1)]
        )
        ref.append(float(torch.linalg.eigvalsh(H)[-1]))
    assert np.allclose(run.sharpness[0], ref, rtol=1e-8)
    assert run.steps[0] == 0 and run.steps[-1] == 60 and np.all(np.diff(run.steps) > 0)
    assert run.diverged_at[2] > 0 and np.all(run.diverged_at[:2] == -1)  # the huge rate diverges …
    assert np.all(np.isfinite(run.sharpness[:, :2])) and np.isnan(run.sharpness[-1, 2])  # … the others run on
    assert np.allclose(run.tau[:, 0], run.steps * 0.01 / 4)
    assert run.late_mean(run.loss).shape == (3,) and np.all(run.own_edge()[:, :2] > 0)
    with pytest.raises(ValueError, match="activations"):
        bae.edge_of_stability_runs(X, W, U, activations=["relu"], etas=[0.1] * 3, batch_size=4, steps=2)
    with pytest.raises(ValueError, match="etas"):
        bae.edge_of_stability_runs(X, W, U, activations=["relu"] * 3, etas=[0.1, -1, 0.1], batch_size=4, steps=2)
    with pytest.raises(ValueError, match="start"):
        run.late_mean(run.loss, start=1.5)


def test_edge_of_stability_replicas_are_independent(digits):
    X, _ = digits
    X = X[:200]
    W, U = nl.init_autoencoder(X, 3, 3, seed=4)
    opts = dict(batch_size=4, steps=40, n_records=4, n_late=2, seed=9)
    many = bae.edge_of_stability_runs(X, W, U, activations=["relu"] * 3, etas=[0.5, 0.7, 0.9], **opts)
    one = bae.edge_of_stability_runs(X, W[:1], U[:1], activations=["relu"], etas=[0.5], **opts)
    assert np.allclose(one.sharpness[:, 0], many.sharpness[:, 0], rtol=1e-12)


def test_edge_time_and_sweep(digits):
    X, _ = digits
    th = nl.pca_theory(X, 4)
    l1, c1 = th["lambdas"][0], th["c_data"][0]
    t = bae.edge_time(c1, l1, 2.0, 1.8)
    s = sy.lambert_scale(1.0, c1, t)  # the Lambert-W law sits on the C.81 ceiling at τ*
    assert np.isclose(2.0 * l1 * (s + 1 / s), 1.8, rtol=1e-8)
    with pytest.raises(ValueError, match="no ceiling"):
        bae.edge_time(c1, l1, 10.0, 1.8)
    V = th["basis"][:, :4]
    out = bae.edge_sweep(
        X[:400],
        4,
        {"linear": (V[None], V.T[None].copy())},
        etas=[4.0],
        batch_sizes=[8],
        horizon=0.05,
        n_records=3,
        n_late=0,
        seed=1,
    )
    ((b, eta),) = out
    run, t_star = out[(b, eta)]
    assert (b, eta) == (8, 4.0) and run.activation == ("linear",) and run.steps[-1] == round(0.05 * t_star * 8 / 16)
    with pytest.raises(ValueError, match="starts"):
        bae.edge_sweep(X, 4, {}, etas=[1.0], batch_sizes=[8])


def test_clopper_pearson():
    lo, hi = bae.clopper_pearson(0, 96)
    assert lo == 0.0 and np.isclose(hi, 1 - 0.025 ** (1 / 96))
    lo, hi = bae.clopper_pearson(96, 96)
    assert hi == 1.0 and np.isclose(lo, 0.025 ** (1 / 96))
    lo, hi = bae.clopper_pearson(3, 10)
    assert 0.06 < lo < 0.07 and 0.65 < hi < 0.66  # the textbook values 0.0667, 0.6525
    with pytest.raises(ValueError, match="count"):
        bae.clopper_pearson(11, 10)
    with pytest.raises(ValueError, match="level"):
        bae.clopper_pearson(1, 10, level=1.0)


def test_edge_runs_step_as_per_replica_sgd(digits):
    """The stacked step (own learning rate and activation per replica) is plain SGD: each replica
    follows ae_gradients on its own minibatches (its stream gives its start vector first, then its
    minibatches in blocks of 256 steps)."""
    from symbreak.engine import replica_streams

    X, _ = digits
    W, U = nl.init_autoencoder(X, 3, 3, seed=1)
    acts, etas = ["linear", "relu", "tanh"], [0.5, 1.0, 0.7]
    run = bae.edge_of_stability_runs(
        X, W, U, activations=acts, etas=etas, batch_size=8, steps=300, n_records=2, n_late=0, seed=3
    )
    streams = replica_streams(3, range(3))
    for g in streams:
        g.standard_normal(2 * 64 * 3)
    Wt, Ut, xt = torch.from_numpy(W.copy()), torch.from_numpy(U.copy()), torch.from_numpy(X)
    for t in range(300):
        if t % 256 == 0:
            idx = torch.from_numpy(np.stack([g.integers(0, X.shape[0], size=(256, 8)) for g in streams], axis=1))
        xb = xt[idx[t % 256]].transpose(1, 2)
        for i, a in enumerate(acts):
            _, gW, gU = nl.ae_gradients(Wt[i : i + 1], Ut[i : i + 1], xb[i : i + 1], a)
            Wt[i] -= etas[i] * gW[0]
            Ut[i] -= etas[i] * gU[0]
    assert np.allclose(run.top_scale[-1], (Wt**2).sum(dim=1).amax(dim=1).numpy(), rtol=1e-10)


def test_edge_runs_refuse_an_overflowing_hessian():
    g = np.random.default_rng(0)
    with pytest.raises(ValueError, match="float64 range"):
        bae.edge_of_stability_runs(
            np.full((5, 3), 1e300),
            g.standard_normal((1, 3, 2)),
            g.standard_normal((1, 2, 3)),
            activations=["relu"],
            etas=[0.1],
            batch_size=2,
            steps=3,
        )
    with pytest.raises(ValueError, match="float64 range"):
        bae.mean_square_edge(np.full((5, 3), 1e300), 4)
