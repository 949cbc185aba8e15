"""Tests of ``symbreak.platonic.curvature`` (moved from test_platonic.py)."""

import time

import numpy as np
import pytest

from symbreak import platonic as pl


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
    for huge in (1.01e10, 1e20, 1e300):  # refused at once, not after ~24 s of solver work
        cpu = time.process_time()
        with pytest.raises(ValueError, match=r"t_end must lie in \(0, 1e\+10\]"):
            pl.gradient_flow(net_a, task, w0, t_end=huge)
        assert time.process_time() - cpu < 0.5
    with pytest.raises(ValueError, match="n_records"):
        pl.gradient_flow(net_a, task, w0, t_end=1.0, n_records=0)
    with pytest.raises(ValueError, match="rtol"):
        pl.gradient_flow(net_a, task, w0, t_end=1.0, rtol=-1.0)


def test_flow_jacobian_is_the_hessian_block_by_block(small_pair):
    """The complex-step Jacobian of the flow is −∇²L of each replica (block-diagonal): against
    pl.loss_hessian (central differences of the exact gradient, an independent computation) away
    from any minimum, for two replicas integrated as one system."""
    from symbreak.platonic import curvature

    task, net_a, *_ = small_pair
    w0 = pl.init_weights(net_a, 5, replicas=2)
    y = curvature._flatten(w0).ravel()
    jac = curvature._flow_jacobian(net_a, task, y, 2, net_a.shapes)
    p = y.size // 2
    for s in range(2):
        h = pl.loss_hessian(net_a, task, [w[s] for w in w0])
        block = jac[s * p : (s + 1) * p, s * p : (s + 1) * p]
        assert np.abs(block + h).max() < 1e-7 * np.abs(h).max()
        off = jac[s * p : (s + 1) * p, (1 - s) * p : (2 - s) * p]
        assert not off.any()  # replicas do not couple


def test_gradient_flow_with_its_exact_jacobian_is_lsodas_own_flow(small_pair, monkeypatch):
    """The exact Jacobian changes LSODA's work, not its answer: the records agree with LSODA's
    finite-difference Jacobian within the solver's tolerance, with far fewer evaluations."""
    from symbreak.platonic import curvature

    task, net_a, *_ = small_pair
    w0 = pl.init_weights(net_a, 3, replicas=2)
    exact = pl.gradient_flow(net_a, task, w0, t_end=40.0, n_records=4)
    inner = curvature.solve_ivp_bounded
    monkeypatch.setattr(curvature, "solve_ivp_bounded", lambda *a, jac=None, **k: inner(*a, **k))
    fd = pl.gradient_flow(net_a, task, w0, t_end=40.0, n_records=4)
    assert exact.params["njev"] > 0 and fd.params["njev"] == 0
    assert exact.params["nfev"] < fd.params["nfev"] / 2
    for a, b in zip(exact.weights, fd.weights):
        assert np.abs(a - b).max() < 1e-5 * np.abs(b).max()
    assert np.abs(exact.kernels - fd.kernels).max() < 1e-5 * np.abs(fd.kernels).max()


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


def test_flow_to_minimum_doubles_the_horizon_until_the_loss_is_minimal():
    """flow_to_minimum doubles t_end until every replica's L − tr Σε ≤ tol: from a horizon far too
    short it reaches the criterion after some doublings, and the replicas are those of
    gradient_flow run one at a time to the same horizon (identical records). With no doubling
    allowed it returns the short horizon unconverged. Bad input is refused."""
    task = pl.random_task(1, n=3, m=3, noise=0.5)
    net = pl.random_edln(2, 3, 3, (3,))
    w0 = pl.init_weights(net, 3, replicas=2)
    tr = np.trace(task.sigma_eps)
    res = pl.flow_to_minimum(net, task, w0, t_end=0.5, tol=1e-8, doublings=12, n_records=5)
    assert res.params["doublings"] > 0 and (res.loss[-1] - tr).max() <= 1e-8
    assert res.params["t_end"] == 0.5 * 2 ** res.params["doublings"]
    one = pl.gradient_flow(net, task, [w[1:2] for w in w0], t_end=res.params["t_end"], n_records=5)
    assert np.array_equal(one.kernels[:, 0], res.kernels[:, 1]) and np.array_equal(one.weights[0][0], res.weights[0][1])
    short = pl.flow_to_minimum(net, task, w0, t_end=0.01, tol=1e-8, doublings=0)
    assert short.params["t_end"] == 0.01 and (short.loss[-1] - tr).max() > 1e-8
    for kw in (dict(t_end=0.0), dict(tol=0.0), dict(doublings=-1), dict(n_records=0)):
        args = dict(t_end=1.0) | kw
        with pytest.raises(ValueError, match=next(iter(kw))):
            pl.flow_to_minimum(net, task, w0, **args)
