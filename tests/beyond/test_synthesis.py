"""Tests of ``symbreak.beyond.synthesis`` (moved from test_synthesis.py)."""

from __future__ import annotations

import numpy as np
import pytest

from symbreak import synthesis as sy
from symbreak.engine import DivergenceError


def test_charge_is_decoder_minus_encoder_norm():
    w = np.array([[3.0, 4.0], [1.0, 0.0]])
    u = np.array([2.0, 1.0])
    assert np.allclose(sy.charge(w, u), [25.0 - 4.0, 0.0])


def test_charge_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="u must have the shape"):
        sy.charge(np.ones((3, 2)), np.ones(2))


def test_model_validation():
    with pytest.raises(ValueError, match="theta"):
        sy.KnobModel(theta=2.0)
    with pytest.raises(ValueError, match="lam"):
        sy.KnobModel(lam=0.0)
    with pytest.raises(ValueError, match="m must be an integer"):
        sy.KnobModel(m=1)
    with pytest.raises(TypeError, match="KnobModel"):
        sy.balance_scale("not a model")


def test_noise_covariance_has_the_requested_angle():
    m = sy.KnobModel(sigma2=2.0, theta=np.pi / 3)
    assert np.isclose(np.trace(m.sigma_eps), 2.0)
    assert np.isclose(m.sigma_par, 2.0 * 0.25)


def test_balance_scale_and_charge():
    assert np.isclose(sy.balance_scale(sy.KnobModel(theta=0.0)), 1.0)
    assert np.isclose(sy.balance_scale(sy.KnobModel(theta=np.pi / 3, v_norm=2.0)), 4.0)
    assert np.isinf(sy.balance_scale(sy.KnobModel(theta=np.pi / 2)))
    assert np.isclose(sy.balance_charge(sy.KnobModel(theta=np.pi / 3)), 2.0 - 0.5)
    with pytest.raises(ValueError, match="sigma2 must be > 0"):
        sy.balance_scale(sy.KnobModel(sigma2=0.0))


def test_drift_vanishes_at_the_balance_point_and_changes_sign():
    m = sy.KnobModel(theta=0.9, lam=1.7, sigma2=0.8)
    s = sy.balance_scale(m)
    assert abs(sy.slow_drift(m, s)) < 1e-12
    assert sy.slow_drift(m, 0.5 * s) > 0 > sy.slow_drift(m, 2.0 * s)
    with pytest.raises(ValueError, match="s must"):
        sy.slow_drift(m, -1.0)


def test_relaxation_rate_matches_numerical_derivative():
    m = sy.KnobModel(theta=0.7, lam=1.3, sigma2=0.6)
    s = sy.balance_scale(m)
    h = 1e-6

    def ds(x):
        return sy.slow_drift(m, x) / (1 + 1 / x**2)

    rate = -(ds(s + h) - ds(s - h)) / (2 * h)
    assert np.isclose(rate, sy.relaxation_rate(m), rtol=1e-6)
    assert np.isclose(rate, 2 * 1.3 * 0.6 * np.cos(0.7) ** 2 / (1 + np.cos(0.7) ** 2), rtol=1e-6)
    assert sy.relaxation_rate(sy.KnobModel(theta=np.pi / 2)) == 0.0


def test_lambert_scale_solves_the_implicit_law():
    tau = np.linspace(0, 7, 15)
    s = sy.lambert_scale(1.3, 0.8, tau, v_norm=1.5)
    lhs = s**2 / 2 + 1.5**2 * np.log(s)
    rhs = 1.3**2 / 2 + 1.5**2 * np.log(1.3) + 0.8 * 1.5**2 * tau
    assert np.allclose(lhs, rhs, rtol=1e-12)
    with pytest.raises(ValueError, match="s0"):
        sy.lambert_scale(0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="tau"):
        sy.lambert_scale(1.0, 1.0, -1.0)


def test_slow_scale_equals_lambert_for_orthogonal_noise_and_relaxes_otherwise():
    m = sy.KnobModel(theta=np.pi / 2, lam=0.7, sigma2=1.3)
    taus = np.linspace(0, 4, 9)
    assert np.allclose(sy.slow_scale(m, 1.2, taus), sy.lambert_scale(1.2, 0.7 * 1.3, taus), rtol=1e-7)
    m2 = sy.KnobModel(theta=np.pi / 4)
    late = sy.slow_scale(m2, 0.5, np.array([0.0, 40.0]))[-1]
    assert np.isclose(late, np.sqrt(2), rtol=1e-6)
    with pytest.raises(ValueError, match="taus"):
        sy.slow_scale(m2, 1.0, np.array([1.0, 0.5]))


def test_hessian_lambda_max_against_finite_differences():
    m = sy.KnobModel(lam=1.4, v_norm=1.2, m=3)
    s = 2.5
    w = np.array([np.sqrt(s), 0.0, 0.0])
    u = 1.2 / np.sqrt(s)
    theta = np.concatenate([w, [u]])

    def loss(p):
        return 0.5 * 1.4 * np.sum((p[:3] * p[3] - m.v) ** 2)

    h = 1e-4
    n = theta.size
    hess = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            hess[i, j] = (
                loss(theta + e_i + e_j) - loss(theta + e_i - e_j) - loss(theta - e_i + e_j) + loss(theta - e_i - e_j)
            ) / (4 * h * h)
    assert np.isclose(np.linalg.eigvalsh(hess).max(), sy.hessian_lambda_max(m, s), rtol=1e-5)


def test_eos_ceiling_solves_the_threshold_and_rejects_large_eta():
    m = sy.KnobModel(lam=2.0)
    s = sy.eos_ceiling(m, 0.1, kappa=1.5)
    assert np.isclose(0.1 * sy.hessian_lambda_max(m, s), 1.5)
    with pytest.raises(ValueError, match="eta must be"):
        sy.eos_ceiling(m, 1.0)


def test_expected_charge_step_matches_monte_carlo():
    m = sy.KnobModel(lam=1.0, sigma2=1.0, theta=0.7)
    reps = 200_000
    w = np.tile([1.3, -0.4], (reps, 1))
    u = np.full(reps, 0.6)
    run = sy.simulate(m, w, u, eta=0.1, batch_size=2, steps=1, sigma_p2=0.01, seed=5)
    exact = sy.expected_charge_step(m, w[0], u[0], eta=0.1, batch_size=2, sigma_p2=0.01)
    se = run.mean_dq.std() / np.sqrt(reps)
    assert abs(run.mean_dq.mean() - exact) < 4 * se
    assert np.isclose(run.mean_dq_expected[0], exact, rtol=1e-12)


def test_expected_step_at_a_minimum_is_the_slow_drift():
    m = sy.KnobModel(lam=1.3, sigma2=0.7, theta=0.4)
    w, u = sy.on_manifold_point(m, 1.7)
    eta, b = 0.05, 3
    step = sy.expected_charge_step(m, w, u, eta=eta, batch_size=b)
    assert np.isclose(step[0], eta**2 / b * sy.slow_drift(m, 1.7), rtol=1e-12)


def test_expected_charge_step_validation():
    m = sy.KnobModel()
    w, u = sy.on_manifold_point(m, 1.0)
    with pytest.raises(ValueError, match="eta"):
        sy.expected_charge_step(m, w, u, eta=0.0, batch_size=1)
    with pytest.raises(ValueError, match="batch_size"):
        sy.expected_charge_step(m, w, u, eta=0.1, batch_size=0)
    with pytest.raises(ValueError, match="last axis"):
        sy.expected_charge_step(m, np.ones((1, 3)), u, eta=0.1, batch_size=1)


def test_gradient_flow_limit_conserves_the_charge_without_noise():
    m = sy.KnobModel(sigma2=0.0)
    w0 = np.array([[1.5, 0.3]])
    u0 = np.array([0.2])
    run = sy.simulate(m, w0, u0, eta=1e-2, batch_size=10_000, steps=4000, record_every=500, seed=1)
    q = run.q[:, 0]
    assert np.abs(q - q[0]).max() < 5e-3 * abs(q[0])  # O(η) drift only
    assert np.allclose(run.w[-1, 0] * run.u[-1, 0], m.v, atol=0.02)  # reached the minimum


def test_simulation_is_reproducible_and_seeded():
    m = sy.KnobModel(theta=0.3)
    w0, u0 = sy.on_manifold_point(m, 1.0, 5)
    a = sy.simulate(m, w0, u0, eta=0.05, batch_size=1, steps=300, seed=3)
    b = sy.simulate(m, w0, u0, eta=0.05, batch_size=1, steps=300, seed=3)
    c = sy.simulate(m, w0, u0, eta=0.05, batch_size=1, steps=300, seed=4)
    assert np.array_equal(a.w, b.w) and not np.array_equal(a.w, c.w)


def test_simulation_detects_divergence():
    m = sy.KnobModel(theta=np.pi / 2)
    w0, u0 = sy.on_manifold_point(m, 1.0, 4)
    with pytest.raises(DivergenceError):
        sy.simulate(m, w0, u0, eta=3.0, batch_size=1, steps=400, seed=1)


def test_a_diverging_replica_can_stop_while_the_others_go_on():
    m = sy.KnobModel(theta=np.pi / 2)
    w0, u0 = sy.on_manifold_point(m, 1.0, 16)
    run = sy.simulate(m, w0, u0, eta=0.3, batch_size=1, steps=400, seed=1, divergence="stop")
    gone = run.diverged
    assert 0 < gone.sum() < 16 and np.all(run.diverged_at[~gone] == -1) and np.all(run.diverged_at[gone] > 0)
    for r in np.flatnonzero(gone):
        after = run.steps >= run.diverged_at[r]
        assert np.isnan(run.w[after, r]).all() and np.isfinite(run.w[~after, r]).all()
    assert np.isfinite(run.w[:, ~gone]).all()
    # replica r draws from its own stream: the first two (survivors) run alone give the same numbers
    assert not gone[:2].any()
    alone = sy.simulate(m, w0[:2], u0[:2], eta=0.3, batch_size=1, steps=400, seed=1)
    np.testing.assert_array_equal(alone.w, run.w[:, :2])
    # and a run in which nothing diverges is the same in both modes
    calm = [sy.simulate(m, w0, u0, eta=0.05, batch_size=1, steps=200, seed=2, divergence=d) for d in ("raise", "stop")]
    np.testing.assert_array_equal(calm[0].w, calm[1].w)


def test_divergence_mode_is_validated():
    m = sy.KnobModel()
    w0, u0 = sy.on_manifold_point(m, 1.0, 2)
    with pytest.raises(ValueError, match="divergence"):
        sy.simulate(m, w0, u0, eta=0.1, batch_size=1, steps=1, divergence="ignore")
    run = sy.simulate(m, w0, u0, eta=0.1, batch_size=1, steps=3)
    assert run.diverged_at is None and not run.diverged.any()


def test_simulation_validation():
    m = sy.KnobModel()
    w0, u0 = sy.on_manifold_point(m, 1.0, 2)
    with pytest.raises(ValueError, match="w0 must have shape"):
        sy.simulate(m, np.ones((2, 3)), u0, eta=0.1, batch_size=1, steps=1)
    with pytest.raises(ValueError, match="steps"):
        sy.simulate(m, w0, u0, eta=0.1, batch_size=1, steps=0)
    with pytest.raises(ValueError, match="sigma_p2"):
        sy.simulate(m, w0, u0, eta=0.1, batch_size=1, steps=1, sigma_p2=-1.0)
    with pytest.raises(ValueError, match="s must"):
        sy.on_manifold_point(m, 0.0)


def test_window_means():
    x = np.arange(10.0)
    assert np.allclose(sy.window_means(x, 2), [2.0, 7.0])
    with pytest.raises(ValueError, match="n_windows"):
        sy.window_means(x, 11)
