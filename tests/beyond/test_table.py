"""Tests of ``symbreak.beyond.table`` and ``symbreak.beyond.verdicts`` (the synthesis table's cells
and the confidence intervals of the part's verdicts)."""

from __future__ import annotations

import numpy as np
import pytest

from symbreak import autoencoder as ae
from symbreak import platonic as pl
from symbreak.beyond import table as tb
from symbreak.beyond import verdicts as vd


def test_generator_divergence_is_dimension_difference_times_trace():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3))
    assert tb.generator_divergence((3, 5), (2, 3), A) == pytest.approx((5 - 2) * np.trace(A), abs=1e-12)
    assert tb.generator_divergence((3, 3), (3, 3), np.eye(3)) == pytest.approx(0.0, abs=1e-12)
    assert tb.generator_divergence((1, 1), (4, 1), -np.eye(1)) == pytest.approx(3.0)  # knob model: m − 1
    with pytest.raises(ValueError, match="shape_2"):
        tb.generator_divergence((3, 2), (2, 4), np.eye(3))
    with pytest.raises(ValueError, match="A must be"):
        tb.generator_divergence((3, 2), (2, 3), np.eye(2))


def test_projected_ratio():
    e = np.array([[1.0, 2.0], [2.0, 0.0]])
    x = np.stack([e, 3 * e, -e])
    assert np.allclose(tb.projected_ratio(x, e), [1.0, 3.0, -1.0])
    with pytest.raises(ValueError, match="expected must not be zero"):
        tb.projected_ratio(x, 0 * e)
    with pytest.raises(ValueError, match="samples must have shape"):
        tb.projected_ratio(x[:, 0], e)


def test_edln_one_step_charges_mean_is_charge_drift():
    task = pl.random_task(1, n=3, m=3, noise=0.5)
    net = pl.random_edln(2, 3, 3, (4, 3))
    w = pl.random_global_minimum(net, task, seed=3)
    expected = pl.charge_drift(net, task, w, lr=0.05, batch_size=2)
    meas = tb.edln_one_step_charges(net, task, w, lr=0.05, batch_size=2, draws=4000, seed=4)
    flat = np.concatenate([m.reshape(m.shape[0], -1) for m in meas], axis=1)
    ratio = tb.projected_ratio(flat, np.concatenate([e.ravel() for e in expected]))
    assert abs(ratio.mean() - 1.0) < 4 * ratio.std() / np.sqrt(ratio.size)
    with pytest.raises(ValueError, match="weights must have the shapes"):
        tb.edln_one_step_charges(net, task, w[::-1], lr=0.05, batch_size=2, draws=4)
    with pytest.raises(ValueError, match="lr"):
        tb.edln_one_step_charges(net, task, w, lr=0.0, batch_size=2, draws=4)


def test_ae_one_step_charges_mean_is_expected_increment():
    lam = ae.geometric_spectrum(5)
    W, U = ae.pca_point([1.2, 0.7], 5)
    meas = tb.ae_one_step_charges(W, U, lam, eta=0.05, batch_size=3, draws=4000, seed=1)
    ratio = tb.projected_ratio(meas, ae.expected_charge_increment(W, U, lam, 0.05, 3))
    assert abs(ratio.mean() - 1.0) < 4 * ratio.std() / np.sqrt(ratio.size)
    with pytest.raises(ValueError, match="draws"):
        tb.ae_one_step_charges(W, U, lam, eta=0.05, batch_size=3, draws=0)


def test_dln_gradient_flow_conserves_balance_charges():
    rng = np.random.default_rng(2)
    ws = [0.5 * rng.standard_normal((2, 2)) for _ in range(3)]
    traj = tb.dln_gradient_flow(ws, rng.standard_normal((2, 2)), [0.0, 1.0])
    c0, c1 = tb.balance_charges([w[0] for w in traj]), tb.balance_charges([w[-1] for w in traj])
    assert max(np.abs(a - b).max() for a, b in zip(c0, c1)) < 1e-9
    assert max(np.abs(w[-1] - w[0]).max() for w in traj) > 0.05
    with pytest.raises(ValueError, match="times"):
        tb.dln_gradient_flow(ws, np.eye(2), [1.0, 0.0])
    with pytest.raises(ValueError, match="target"):
        tb.dln_gradient_flow(ws, np.eye(3), [0.0, 1.0])


def test_dln_noise_walk_matches_exact_defect_law():
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal((2, 2)) for _ in range(2)]
    steps, reps = 30, 3000
    rec, dc = tb.dln_noise_walk(ws, sigma_p2=0.01, steps=steps, replicas=reps, record_every=10, seed=5)
    assert list(rec) == [0, 10, 20, 30]
    sq = (dc[-1] ** 2).sum(axis=(-2, -1))[:, 0]
    theory = tb.dln_noise_defect_theory(ws, 0.01, steps)[0, 0]
    assert abs(sq.mean() / theory - 1) < 4 * sq.std() / np.sqrt(reps) / theory
    tr = np.trace(dc[-1, :, 0], axis1=-2, axis2=-1)
    assert abs(tr.mean()) < 4 * tr.std() / np.sqrt(reps)
    with pytest.raises(ValueError, match="square"):
        tb.dln_noise_defect_theory([np.ones((2, 3)), np.ones((3, 2))], 0.01, 1)
    with pytest.raises(ValueError, match="sigma_p2"):
        tb.dln_noise_walk(ws, sigma_p2=-1.0, steps=1, replicas=1)


def test_confidence_intervals():
    m, lo, hi = vd.mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and lo < 2.0 < hi
    assert hi - m == pytest.approx(4.302652729911275 * 1.0 / np.sqrt(3))  # t(0.975, 2) s/√n
    d, lo, hi = vd.difference_ci([5.0, 6.0, 7.0], [1.0, 2.0, 3.0])
    assert d == 4.0 and lo > 0
    assert vd.verdict(lo, hi, above="up", below="down") == "up"
    assert vd.verdict(-1.0, 1.0, above="up", below="down") == "not decided at this size"
    assert vd.verdict(-2.0, -1.0, above="up", below="down") == "down"
    with pytest.raises(ValueError, match="at least 2"):
        vd.mean_ci([1.0])
    with pytest.raises(ValueError, match="level"):
        vd.difference_ci([1.0, 2.0], [1.0, 2.0], level=1.5)


def test_cosine_mutual_knn_ignores_row_scale():
    rng = np.random.default_rng(4)
    h = rng.standard_normal((40, 5))
    scaled = h * rng.uniform(0.1, 10.0, size=(40, 1))
    assert vd.cosine_mutual_knn(h, scaled, 5) == 1.0
    with pytest.raises(ValueError, match="same number of rows"):
        vd.cosine_mutual_knn(h, h[:30], 5)


def test_noether_defect_vanishes_for_rescalable_units():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((50, 6))
    W, U = rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 3, 6))
    assert np.abs(vd.noether_defect(X, W, U, "relu")).max() < 1e-12
    assert np.abs(vd.noether_defect(X, W, U, "linear")).max() == 0.0
    assert np.abs(vd.noether_defect(X, W, U, "tanh")).max() > 1e-3
    with pytest.raises(ValueError, match="activation"):
        vd.noether_defect(X, W, U, "gelu")


def test_jackknife_se_of_a_mean_and_of_a_ratio():
    rng = np.random.default_rng(12)
    x = rng.standard_normal(9)
    assert np.isclose(vd.jackknife_se(np.mean, x), x.std(ddof=1) / np.sqrt(x.size))
    # a ratio of two independent means: the delta method to first order
    a, b = 5.0 + rng.standard_normal(400), 10.0 + rng.standard_normal(300)
    delta = (
        a.mean() / b.mean() * np.hypot(a.std(ddof=1) / np.sqrt(400) / a.mean(), b.std(ddof=1) / np.sqrt(300) / b.mean())
    )
    assert np.isclose(vd.jackknife_se(lambda p, q: p.mean() / q.mean(), a, b), delta, rtol=0.02)
    # replicas along the first axis of a 2-D sample
    m = rng.standard_normal((6, 3)) + np.array([0.0, 0.0, 10.0])  # the largest column never changes
    assert np.isclose(
        vd.jackknife_se(lambda y: y.mean(axis=0).max(), m), m[:, m.mean(0).argmax()].std(ddof=1) / np.sqrt(6)
    )
    with pytest.raises(ValueError, match="samples"):
        vd.jackknife_se(np.mean, [1.0])
    with pytest.raises(TypeError, match="callable"):
        vd.jackknife_se("mean", x)


def test_orbit_dimension_equals_the_hessian_null_space_at_a_global_minimum():
    task = pl.random_task(51, n=3, m=3, noise=0.5)
    net = pl.random_edln(52, 3, 3, (4, 3))
    w = pl.random_global_minimum(net, task, seed=53)
    null, gap = tb.hessian_null_dimension(pl.loss_hessian(net, task, w))
    # GL(4) acts with a stabiliser (width 4 above the rank 3 it carries): 16 + 9 − 1 = 24
    assert tb.orbit_dimension(w) == null == 24
    assert gap > 1e-7
    eye = np.eye(3)
    net_sq = pl.EDLN((3, 3), eye, eye, eye)
    task_sq = pl.random_task(60, n=3, m=3, noise=0.5, cond_x=1.0, cond_eps=1.0)
    w_sq = pl.random_global_minimum(net_sq, task_sq, seed=61)
    assert tb.orbit_dimension(w_sq) == tb.hessian_null_dimension(pl.loss_hessian(net_sq, task_sq, w_sq))[0] == 18
    # a generic point of an unconstrained layer pair: the full GL(2) acts freely
    g = np.random.default_rng(0)
    assert tb.orbit_dimension([g.standard_normal((2, 5)), g.standard_normal((4, 2))]) == 4
    assert tb.hessian_null_dimension(np.diag([0.0, 1e-12, 1.0, 2.0])) == (2, 0.5)


def test_orbit_and_null_dimension_reject_bad_input():
    with pytest.raises(ValueError, match="weights"):
        tb.orbit_dimension([np.ones((2, 3)), np.ones((2, 3))])
    with pytest.raises(ValueError, match="rtol"):
        tb.orbit_dimension([np.ones((2, 3)), np.ones((3, 2))], rtol=1.0)
    with pytest.raises(ValueError, match="H must"):
        tb.hessian_null_dimension(np.ones((2, 3)))
    with pytest.raises(ValueError, match="H must not be zero"):
        tb.hessian_null_dimension(np.zeros((2, 2)))


def test_the_groups_leave_each_papers_loss_unchanged():
    """The symmetry of each column of the synthesis table, as identities (moved here from the page)."""
    from symbreak.platonic.linalg import random_invertible, random_orthogonal

    g = np.random.default_rng(50)
    task = pl.random_task(51, n=3, m=3, noise=0.5)
    net = pl.random_edln(52, 3, 3, (4, 3))
    w = pl.random_global_minimum(net, task, seed=53)
    loss = pl.population_loss(net, task, w)
    moved = pl.population_loss(net, task, pl.symmetry_transform(w, 1, random_invertible(g, 4)))
    assert abs(moved - loss) <= 1e-12 * loss
    lam = ae.geometric_spectrum(6)
    W0, U0 = 0.5 * g.standard_normal((6, 2)), 0.5 * g.standard_normal((2, 6))
    A = random_invertible(g, 2)
    assert ae.population_loss(W0 @ A, np.linalg.solve(A, U0), lam) == pytest.approx(
        ae.population_loss(W0, U0, lam), rel=1e-12
    )
    Ws = [0.6 * g.standard_normal((3, 3)) for _ in range(3)]
    G = random_invertible(g, 3)
    prod = Ws[2] @ Ws[1] @ Ws[0]
    np.testing.assert_allclose((Ws[2] @ G) @ np.linalg.solve(G, Ws[1]) @ Ws[0], prod, atol=1e-12)
    # on the balanced variety only the orthogonal part of GL(3) keeps balance
    frames = [random_orthogonal(g, 3) for _ in range(4)]
    Wb = [frames[i + 1] @ np.diag(np.array([1.2, 0.9, 0.6]) ** (1 / 3)) @ frames[i].T for i in range(3)]
    O = random_orthogonal(g, 3)

    def defect(ws):
        return max(np.abs(c).max() for c in tb.balance_charges(ws))

    assert defect(Wb) < 1e-12
    assert defect([O @ Wb[0], Wb[1] @ O.T, Wb[2]]) < 1e-12
    assert defect([G @ Wb[0], Wb[1] @ np.linalg.inv(G), Wb[2]]) > 0.1


def test_encoder_gradient_vanishes_on_the_pca_manifold_and_the_drift_is_positive():
    """On the PCA manifold the encoder's minibatch gradient is zero for every minibatch and the exact
    expected charge step is positive definite at every scale (moved here from the page)."""
    g = np.random.default_rng(1)
    lam = ae.geometric_spectrum(6)
    Wp, Up = ae.pca_point([1.5, 0.8], 6)
    x = g.standard_normal((200, 4, 6)) * np.sqrt(lam)
    g_w, g_u = ae.minibatch_gradients(Wp, Up, np.swapaxes(x, 1, 2) @ x / 4)
    assert np.abs(g_u).max() <= 1e-12 * np.abs(g_w).max()
    for s in np.logspace(-1, 2, 13):
        inc = ae.expected_charge_increment(*ae.pca_point([s, s / 2], 6), lam, 0.02, 4)
        assert np.linalg.eigvalsh(inc).min() > 0


def test_realised_charge_step_is_psd_on_every_draw_on_the_pca_manifold():
    """No balance point on the PCA manifold holds by construction: there the encoder's minibatch gradient
    vanishes, so one SGD step changes Q by η² g_Wᵀ g_W, positive semi-definite on every draw and at every
    scale (the synthesis table states it as a derivation)."""
    lam = ae.geometric_spectrum(6)
    for i, s in enumerate(np.logspace(-1, 2, 7)):
        dq = tb.ae_one_step_charges(*ae.pca_point([s, s / 2], 6), lam, eta=0.02, batch_size=4, draws=500, seed=(58, i))
        eig = np.linalg.eigvalsh((dq + np.swapaxes(dq, 1, 2)) / 2)
        assert eig.min() >= -1e-12 * np.abs(eig).max()
        assert np.trace(dq, axis1=1, axis2=2).min() > 0
