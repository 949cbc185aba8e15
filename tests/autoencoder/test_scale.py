"""Tests of ``symbreak.autoencoder.scale`` (moved from test_autoencoder.py, test_autoencoder_edge.py, test_autoencoder_extensions.py)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from symbreak import autoencoder as ae
from symbreak.engine import DivergenceError
from symbreak.rng import make_rng

from .helpers import C1, LAM, LAM6, K


# ------------------------------------------------------------------ spectra, rates
def test_geometric_spectrum_and_growth_rates():
    lam = ae.geometric_spectrum(20)
    assert lam[0] == pytest.approx(12.0) and lam[-1] == pytest.approx(0.18)
    assert np.allclose(lam[1:] / lam[:-1], (0.18 / 12.0) ** (1 / 19))
    c = ae.growth_rates(lam, 10)
    assert c.shape == (10,)
    assert np.allclose(c, lam[:10] * lam[10:].sum())
    # C = E[|x_perp|^2 x_par x_par^T] by Monte Carlo for Gaussian data
    x = make_rng(0).standard_normal((400_000, 6)) * np.sqrt(LAM6)
    terms = np.einsum("n,na,nb->nab", (x[:, 2:] ** 2).sum(1), x[:, :2], x[:, :2])
    se = terms.std(0) / np.sqrt(x.shape[0])
    assert np.all(np.abs(terms.mean(0) - ae.charge_drift_matrix(LAM6, 2)) < 4 * se)


# ------------------------------------------------------------------ Lambert-W law
@pytest.mark.parametrize("s0", [0.05, 1.0, 3.0])
def test_lambert_scale_solves_the_implicit_equation(s0):
    c = 7.3
    tau = np.concatenate([[0.0], np.geomspace(1e-8, 1e12, 200)])
    s = ae.lambert_scale(s0, c, tau)
    assert np.all(np.isfinite(s)) and np.all(np.diff(s) >= 0)
    # C.49: s^2/2 + log s = s0^2/2 + log s0 + c tau; a residual r means a relative error r/(s^2 + 1)
    lhs = 0.5 * s**2 + np.log(s)
    rhs = 0.5 * s0**2 + np.log(s0) + c * tau
    assert np.max(np.abs(lhs - rhs) / (s**2 + 1.0)) < 1e-13
    assert s[0] == pytest.approx(s0, rel=1e-14)


def test_lambert_scale_against_high_precision_lambert_w():
    mpmath.mp.dps = 50
    for s0, c, tau in [(1.0, 70.9, 0.3), (0.2, 1.0, 1e-3), (2.0, 9.7, 5.0), (1.0, 50.0, 1e12), (0.5, 3.0, 1e6)]:
        z = mpmath.mpf(s0) ** 2 * mpmath.exp(mpmath.mpf(s0) ** 2 + 2 * mpmath.mpf(c) * mpmath.mpf(tau))
        exact = mpmath.sqrt(mpmath.lambertw(z).real)
        got = ae.lambert_scale(s0, c, tau)
        assert abs(got - float(exact)) / float(exact) < 1e-12


def test_lambert_scale_broadcasts_and_limits():
    s = ae.lambert_scale(np.array([1.0, 2.0])[:, None], np.array([1.0, 3.0, 5.0])[None, :], 0.4)
    assert s.shape == (2, 3)
    assert ae.lambert_scale(1.3, 0.0, 10.0) == pytest.approx(1.3, rel=1e-14)
    # a tiny start: W(x) ≈ x, so s ≈ s0 exp((s0² + 2cτ)/2); no underflow to zero, no NaN
    assert ae.lambert_scale(1e-200, 1.0, 1.0) == pytest.approx(1e-200 * np.e, rel=1e-12)
    # long times: s ~ sqrt(2 c tau) (C.53); the sqrt model of C.74 has the same limit
    big = ae.lambert_scale(1.0, 4.0, 1e10)
    assert big / np.sqrt(8e10) == pytest.approx(1.0, rel=1e-8)
    assert ae.sqrt_scale(1.0, 4.0, 1e10) / big == pytest.approx(1.0, rel=1e-8)
    assert ae.lambert_time(ae.lambert_scale(1.0, 4.0, 0.7), 1.0, 4.0) == pytest.approx(0.7, rel=1e-12)


def test_scale_flow_matches_lambert_when_commuting():
    c = ae.growth_rates(LAM6, 3)
    taus = np.linspace(0, 0.5, 6)
    s0 = np.array([1.0, 0.7, 2.0])
    S = ae.scale_flow(np.diag(s0), np.diag(c), taus)
    assert np.max(np.abs(S - np.eye(3) * ae.lambert_scale(s0, c, taus[:, None])[:, None, :])) < 1e-8


def test_scale_flow_non_commuting_keeps_the_charge_law():
    """d/dτ (S − S⁻¹) = S^{-1/2} C S^{-1/2}: check by differentiating the integrated solution."""
    rot = np.linalg.qr(make_rng(2).standard_normal((3, 3)))[0]
    S0 = rot @ np.diag([2.0, 1.0, 0.5]) @ rot.T
    C = np.diag(ae.growth_rates(LAM6, 3))
    taus = np.array([0.0, 0.1, 0.1 + 1e-5, 0.2])
    S = ae.scale_flow(S0, C, taus)
    q = S - np.linalg.inv(S)
    e, v = np.linalg.eigh(0.5 * (S[1] + S[2]))
    isq = (v / np.sqrt(e)) @ v.T
    assert np.allclose((q[2] - q[1]) / 1e-5, isq @ C @ isq, rtol=1e-5, atol=1e-6)
    assert not np.allclose(S[-1], np.diag(np.diag(S[-1])), atol=1e-3)  # eigenvectors rotate


def test_mbs_decreases_along_the_flow_while_lambda_max_grows():
    lam = ae.geometric_spectrum(20)
    c = ae.growth_rates(lam, 10)
    tau = np.linspace(0, 3, 301)
    s = ae.lambert_scale(1.0, c[None, :], tau[:, None])
    mbs = ae.modified_batch_sharpness(lam, 10, s, 128)
    assert np.all(np.diff(mbs) < 0)  # D.22
    assert np.all(np.diff(ae.hessian_lambda_max(lam, 10, s)) > 0)
    assert np.all(np.diff(lam[:10] / s, axis=1) <= 1e-12)  # ratio ordering C.64


# ------------------------------------------------------------------ simulation
def test_simulated_scales_follow_the_lambert_law():
    """Fig. 1C parameters (n = 20, k = 10, B = 32, η = 0.005, PCA init), up to τ = 0.3."""
    lam = ae.geometric_spectrum(20)
    res = ae.simulate_sgd(lam, 10, 0.005, 32, steps=384_000, seeds=2, record_every=32_000, seed=11)
    assert res.S.shape == (2, 13, 10, 10) and res.tau[-1] == pytest.approx(0.3)
    # the documented result fields: steps (R,), tau = steps η²/B, Q like S, loss (seeds, R)
    assert np.array_equal(res.steps, np.arange(0, 384_001, 32_000))
    assert np.allclose(res.tau, res.steps * 0.005**2 / 32, rtol=1e-15, atol=0)
    assert res.Q.shape == res.S.shape and res.loss.shape == (2, 13)
    # on the PCA manifold the population loss is its minimum ½ Σ_{j>k} λ_j, up to the O(η/B) fluctuations
    assert np.all(res.loss >= 0.5 * lam[10:].sum() - 1e-12)
    assert np.allclose(res.loss, 0.5 * lam[10:].sum(), rtol=0.01)
    theory = ae.lambert_scale(1.0, ae.growth_rates(lam, 10)[None, :], res.tau[:, None])
    err = np.abs(res.scales.mean(0) / theory - 1)
    assert err.max() < 0.03
    assert theory[-1, 0] > 6  # the law was tested over a six-fold growth
    assert np.all(np.linalg.eigvalsh(res.Q[:, -1] - res.Q[:, 0]) > 0)  # Q grew in the PSD cone


def test_the_two_samplers_agree():
    lam = ae.geometric_spectrum(20)
    kw = dict(seeds=8, record_every=8_000, seed=12)
    a = ae.simulate_sgd(lam, 10, 0.01, 32, 32_000, sampler="wishart", **kw).scales[:, -1, 0]
    b = ae.simulate_sgd(lam, 10, 0.01, 32, 32_000, sampler="samples", **kw).scales[:, -1, 0]
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) < 4 * se
    th = ae.lambert_scale(1.0, ae.growth_rates(lam, 10)[0], 0.1)
    assert abs(a.mean() / th - 1) < 0.03 and abs(b.mean() / th - 1) < 0.03


def test_grid_runs_each_configuration_to_its_horizon():
    lam = ae.geometric_spectrum(20)
    res = ae.simulate_sgd_grid(lam, 10, [0.01, 0.005], [32, 64], [0.05, 0.02], n_records=4, seeds=2, seed=1)
    assert [r.steps[-1] for r in res] == [16_000, 51_200]
    assert np.allclose([r.tau[-1] for r in res], [0.05, 0.02])
    for r in res:
        th = ae.lambert_scale(1.0, ae.growth_rates(lam, 10), r.tau[-1])
        assert np.max(np.abs(r.scales[:, -1].mean(0) / th - 1)) < 0.03


def test_divergence_is_reported():
    lam = ae.geometric_spectrum(20)
    with pytest.raises(DivergenceError, match=r"eta=0\.2.*batch_size=32") as info:
        ae.simulate_sgd(lam, 10, 0.2, 32, 10_000, seed=1)
    assert info.value.step <= 10_000 and info.value.params["eta"] == 0.2


def test_drift_correction_is_first_order_in_eta_and_independent_of_b():
    lam = ae.geometric_spectrum(20)
    s = ae.lambert_scale(1.0, ae.growth_rates(lam, 10), 0.05)
    e1, e2 = ae.drift_correction(lam, 10, s, 0.002), ae.drift_correction(lam, 10, s, 0.001)
    assert np.all(e1 > 0) and np.allclose(e1 / e2, 2.0, rtol=0.01)
    # the fluctuation sizes it rests on scale like η/B
    w1, u1 = ae.off_manifold_fluctuations(lam, 10, s, 0.002, 32)
    w2, u2 = ae.off_manifold_fluctuations(lam, 10, s, 0.002, 64)
    assert w1 / w2 == pytest.approx(2.0, rel=1e-12) and u1 / u2 == pytest.approx(2.0, rel=1e-12)
    tau = np.linspace(0, 0.3, 7)
    assert np.allclose(
        ae.corrected_scale(lam, 10, 1e-7, tau),
        ae.lambert_scale(1.0, ae.growth_rates(lam, 10)[None, :], tau[:, None]),
        rtol=1e-5,
    )


def test_corrected_flow_and_fluctuations_match_sgd_at_large_eta():
    """η = 0.02, B = 128: Eq. 6 is off by ~3%, the first-order correction by < 1%."""
    lam = ae.geometric_spectrum(20)
    res = ae.simulate_sgd(lam, 10, 0.02, 128, 32_000, seeds=4, record_every=4_000, seed=22, record_weights=True)
    sim = res.scales.mean(0)[1:]
    lw = ae.lambert_scale(1.0, ae.growth_rates(lam, 10)[None, :], res.tau[1:, None])
    cor = ae.corrected_scale(lam, 10, 0.02, res.tau[1:])
    assert np.abs(sim / lw - 1).max() > 0.025
    assert np.abs(sim / cor - 1).max() < 0.01
    # Q = WᵀW − UUᵀ and S = WᵀW as recorded agree with the recorded weights
    Wt = np.swapaxes(res.W, -1, -2)
    assert np.allclose(res.S, Wt @ res.W, rtol=1e-12, atol=1e-12)
    assert np.allclose(res.Q, Wt @ res.W - res.U @ np.swapaxes(res.U, -1, -2), rtol=1e-12, atol=1e-12)
    w_sim = (res.W[:, 1:, 10:, :] ** 2).sum((-1, -2)).mean()
    w_th = np.mean([ae.off_manifold_fluctuations(lam, 10, s, 0.02, 128)[0] for s in res.scales.mean(0)[1:]])
    assert w_sim == pytest.approx(w_th, rel=0.1)


def test_reduced_map_follows_eq6_below_the_edge():
    eta, b = 0.02, 64
    t1 = ae.lambert_time(ae.eos_ceiling(eta, LAM[0]), 1.0, C1)
    (r,) = ae.eos_reduced_map(LAM, K, [eta], [b], 0.5 * t1, seeds=4, n_records=50, seed=1)
    th = ae.lambert_scale(1.0, C1, r.tau)
    assert r.s.shape == (4, r.tau.size) and r.e.shape == r.s.shape
    np.testing.assert_allclose(r.s, np.broadcast_to(th, r.s.shape), rtol=2e-3)
    assert np.max(np.abs(r.e)) < 1e-2


def test_sgd_takes_the_fused_step_only_where_every_batch_draws_by_bartlett():
    lam, k = ae.geometric_spectrum(6), 3
    init = [lambda s: (np.eye(6, k), np.eye(k, 6))] * 2
    args = (np.arange(2), lam, k, np.full(2, 0.01))

    def model(batches):
        reps, lam_, k_, etas = args
        return ae._LinearModel(reps, [make_rng(0), make_rng(1)], lam_, k_, etas, batches, init, np.float64, False)

    fused, plain = model(np.array([8, 6])), model(np.array([8, 4]))  # B = 4 < d draws its points
    assert fused.fused and callable(getattr(fused, "steps", None))
    assert not plain.fused and getattr(plain, "steps", None) is None


@pytest.mark.parametrize("activation", ["relu", "linear"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_sampled_minibatch_steps_are_the_numpy_steps_bit_for_bit(activation, dtype):
    """The trainer with drawn data points (any activation) takes its steps in compiled blocks: the
    same numbers as its NumPy step, for every replica."""
    from symbreak.engine import replica_streams

    d, k, b, n = 8, 5, 16, 3
    lam = ae.geometric_spectrum(d)
    init = [lambda s: (0.3 * s.standard_normal((d, k)), 0.3 * s.standard_normal((k, d)))] * n

    def model():
        streams = replica_streams(2, range(n))
        return ae._SamplesModel(
            np.arange(n), streams, lam, k, np.full(n, 0.01), np.full(n, b), init, dtype, False, activation
        )

    a, c = model(), model()
    for _ in range(4):
        xa, xc = a.draw(16), c.draw(16)
        for t in range(16):
            a.step(xa, t, t)
        c.steps(xc, 0, 5, 0)
        c.steps(xc, 5, 16, 5)
    assert np.array_equal(a.W, c.W) and np.array_equal(a.U, c.U)
    assert np.isfinite(c.W).all() and not np.array_equal(c.W, model().W)


def test_gl_flow_equals_eq5_when_c_is_isotropic():
    lam = np.concatenate([np.full(K, 3.0), LAM[K:]])
    rot = np.linalg.qr(make_rng(3).standard_normal((K, K)))[0]
    S0 = rot @ np.diag(np.geomspace(2.0, 0.6, K)) @ rot.T
    A0 = ae.pca_point(S0, 20)[0][:K]
    taus = np.linspace(0, 0.05, 6)
    A = ae.gl_flow(lam, K, A0, taus)
    S = np.einsum("tji,tjl->til", A, A)
    np.testing.assert_allclose(S, ae.scale_flow(S0, np.diag(ae.growth_rates(lam, K)), taus), rtol=1e-5, atol=1e-6)
