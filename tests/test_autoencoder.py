"""Scale drift in undercomplete linear autoencoders: closed forms against independent computations."""

import mpmath
import numpy as np
import pytest

from symbreak import autoencoder as ae
from symbreak.engine import DivergenceError
from symbreak.rng import make_rng

LAM6 = ae.geometric_spectrum(6, 5.0, 0.3)


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


# ------------------------------------------------------------------ Hessian (App. B)
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("s", [[1.0, 1.0, 1.0], [2.5, 1.7, 1.2], [0.4, 3.0, 1.0], [7.0, 0.2, 0.9]])
def test_pca_hessian_eigenvalues_match_autograd(k, s):
    s = np.array(s[:k])
    W, U = ae.pca_point(s, 6)
    auto = np.linalg.eigvalsh(ae.autograd_hessian(LAM6, W, U))
    closed = ae.pca_hessian_eigenvalues(LAM6, k, s)
    assert closed.shape == (2 * k * 6,)
    assert np.max(np.abs(auto - closed)) < 1e-8
    assert np.sum(np.abs(closed) < 1e-12) == k * k  # the GL(k) zero modes
    assert ae.hessian_lambda_max(LAM6, k, s) == pytest.approx(closed[-1], rel=1e-12)
    assert ae.hessian_trace(LAM6, k, s) == pytest.approx(np.trace(ae.autograd_hessian(LAM6, W, U)), rel=1e-10)


def test_lambda_max_bounds_and_trace_minimiser():
    lam = ae.geometric_spectrum(20)
    s = np.sort(make_rng(1).uniform(1.0, 9.0, 10))[::-1]
    lmax = ae.hessian_lambda_max(lam, 10, s)
    assert lam[0] * (s[0] + 1 / s[0]) <= lmax <= lam[0] * (s[0] + 1)  # B.95
    s_star = ae.trace_minimizing_scale(lam, 10)
    assert s_star >= 1
    grid = np.linspace(0.3, 4.0, 4001)
    tr = ae.hessian_trace(lam, 10, grid[:, None] * np.ones(10))
    assert grid[np.argmin(tr)] == pytest.approx(s_star, abs=1e-3)
    # encoder-heavy costs more trace than the mirrored decoder-heavy point (d λ > tr Σ, B.39)
    assert ae.hessian_trace(lam, 10, np.full(10, 0.5)) > ae.hessian_trace(lam, 10, np.full(10, 2.0))


def test_overcomplete_hessian_is_invariant_under_inversion():
    lam = LAM6[:4]
    for s in (0.3, 1.0, 2.5):
        W, U = ae.overcomplete_point(4, 6, s)
        auto = np.linalg.eigvalsh(ae.autograd_hessian(lam, W, U))
        assert np.max(np.abs(auto - ae.overcomplete_hessian_eigenvalues(lam, 6, s))) < 1e-9
        assert np.allclose(
            ae.overcomplete_hessian_eigenvalues(lam, 6, s),
            ae.overcomplete_hessian_eigenvalues(lam, 6, 1 / s),
            atol=1e-12,
        )


# ------------------------------------------------------------------ edge of stability
def test_eos_ceiling():
    lam1, eta = 12.0, 0.02
    s = ae.eos_ceiling(eta, lam1)
    kt = 2.0 / (eta * lam1)
    assert s + 1 / s == pytest.approx(kt, rel=1e-14) and s > 1
    # the saturated dangerous modes sit exactly at the threshold: η λ1 (1/s1 + s_a) = κ (C.78–C.79)
    assert eta * lam1 * (1 / s + s) == pytest.approx(2.0, rel=1e-14)
    etas = np.array([0.014, 0.02, 0.026])
    assert np.allclose(ae.eos_ceiling(etas, lam1, kappa=1.8), [ae.eos_ceiling(e, lam1, 1.8) for e in etas])
    assert ae.eos_ceiling(1e-6, 1.0) == pytest.approx(2e6 - 0.5e-6, rel=1e-12)  # κ̃ − 1/κ̃ + …
    assert ae.eos_ceiling(1.0, 1.0) == pytest.approx(1.0)  # κ̃ = 2: s + 1/s = 2
    with pytest.raises(ValueError, match="kappa_tilde"):
        ae.eos_ceiling(0.1, 12.0)


def test_fit_kappa_recovers_a_known_threshold():
    etas = np.arange(0.014, 0.0261, 0.002)
    sat = ae.eos_ceiling(etas, 12.0, kappa=1.93) * (1 + 0.004 * make_rng(5).standard_normal(etas.size))
    kappa, se = ae.fit_kappa(etas, sat, 12.0)
    assert abs(kappa - 1.93) < 4 * se and se < 0.02


# ------------------------------------------------------------------ batch sharpness (App. D)
@pytest.mark.parametrize("s", [[1.0, 1.0, 1.0], [3.0, 2.0, 1.5]])
def test_modified_batch_sharpness_matches_monte_carlo(s):
    s = np.array(s)
    B = 12
    mc = ae.batch_sharpness_monte_carlo(LAM6, 3, s, B, 60_000, seed=3)
    mbs = ae.modified_batch_sharpness(LAM6, 3, s, B)
    assert abs(mc.mbs - mbs) < 3 * mc.mbs_se
    assert mc.mbs_se < 0.01 * mbs


def test_batch_sharpness_is_homogeneous_of_degree_minus_one():
    s = np.array([2.0, 1.5, 1.1])
    a = ae.batch_sharpness_monte_carlo(LAM6, 3, s, 10, 4000, seed=9)
    b = ae.batch_sharpness_monte_carlo(LAM6, 3, 3.0 * s, 10, 4000, seed=9)  # same minibatches
    assert b.bs == pytest.approx(a.bs / 3.0, rel=1e-10)
    assert b.mbs == pytest.approx(a.mbs / 3.0, rel=1e-10)


def test_mbs_decreases_along_the_flow_while_lambda_max_grows():
    lam = ae.geometric_spectrum(20)
    c = ae.growth_rates(lam, 10)
    tau = np.linspace(0, 3, 301)
    s = ae.lambert_scale(1.0, c[None, :], tau[:, None])
    mbs = ae.modified_batch_sharpness(lam, 10, s, 128)
    assert np.all(np.diff(mbs) < 0)  # D.22
    assert np.all(np.diff(ae.hessian_lambda_max(lam, 10, s)) > 0)
    assert np.all(np.diff(lam[:10] / s, axis=1) <= 1e-12)  # ratio ordering C.64


# ------------------------------------------------------------------ charges and flows (App. A)
def test_charge_is_conserved_by_gradient_flow():
    g = make_rng(4)
    W0, U0 = 0.5 * g.standard_normal((6, 2)), 0.5 * g.standard_normal((2, 6))
    W, U = ae.gradient_flow(W0, U0, LAM6, np.linspace(0, 20, 11))
    Q = ae.noether_charge(W, U)
    assert np.max(np.abs(Q - Q[0])) < 1e-8
    assert ae.population_loss(W[-1], U[-1], LAM6) < ae.population_loss(W0, U0, LAM6) - 1.0  # it did learn


def test_sgd_charge_update_and_its_sign_on_the_pca_manifold():
    g = make_rng(6)
    x = g.standard_normal((6, 16)) * np.sqrt(LAM6)[:, None]
    sh = x @ x.T / 16
    W, U = 0.7 * g.standard_normal((6, 3)), 0.7 * g.standard_normal((3, 6))
    W1, U1 = ae.sgd_step(W, U, sh, 0.05)
    assert np.allclose(
        ae.noether_charge(W1, U1) - ae.noether_charge(W, U), ae.charge_increment(W, U, sh, 0.05), atol=1e-13
    )  # A.15 exactly
    W, U = ae.pca_point([2.0, 1.0, 0.5], 6)
    _, gU = ae.minibatch_gradients(W, U, sh)
    assert np.max(np.abs(gU)) < 1e-14  # A.21
    assert np.linalg.eigvalsh(ae.charge_increment(W, U, sh, 0.05)).min() > -1e-15  # A.26
    assert np.linalg.eigvalsh(ae.charge_increment(W, U, sh, 0.05)).max() > 1e-4


def test_relu_population_loss_matches_monte_carlo():
    g = make_rng(8)
    W, U = 0.6 * g.standard_normal((6, 4)), 0.6 * g.standard_normal((4, 6))
    x = g.standard_normal((6, 400_000)) * np.sqrt(LAM6)[:, None]
    per = 0.5 * np.sum((W @ np.maximum(U @ x, 0) - x) ** 2, axis=0)
    exact = ae.population_loss(W, U, LAM6, "relu")
    assert abs(per.mean() - exact) < 4 * per.std() / np.sqrt(per.size)
    per_lin = 0.5 * np.sum((W @ (U @ x) - x) ** 2, axis=0)
    assert abs(per_lin.mean() - ae.population_loss(W, U, LAM6)) < 4 * per_lin.std() / np.sqrt(per.size)


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


def test_float32_gives_the_same_curves():
    lam = ae.geometric_spectrum(20)
    kw = dict(seeds=2, record_every=5_000, seed=13)
    a = ae.simulate_sgd(lam, 10, 0.02, 128, 40_000, **kw).scales.mean(0)
    b = ae.simulate_sgd(lam, 10, 0.02, 128, 40_000, dtype=np.float32, **kw).scales.mean(0)
    assert np.max(np.abs(b / a - 1)) < 0.01


def test_grid_runs_each_configuration_to_its_horizon():
    lam = ae.geometric_spectrum(20)
    res = ae.simulate_sgd_grid(lam, 10, [0.01, 0.005], [32, 64], [0.05, 0.02], n_records=4, seeds=2, seed=1)
    assert [r.steps[-1] for r in res] == [16_000, 51_200]
    assert np.allclose([r.tau[-1] for r in res], [0.05, 0.02])
    for r in res:
        th = ae.lambert_scale(1.0, ae.growth_rates(lam, 10), r.tau[-1])
        assert np.max(np.abs(r.scales[:, -1].mean(0) / th - 1)) < 0.03


def test_expansive_autoencoder_learns_identity_and_keeps_its_charge():
    lam = ae.geometric_spectrum(20)
    res = ae.simulate_sgd(lam, 40, 0.003, 48, 30_000, seeds=2, record_every=5_000, init="random", seed=3)
    assert res.loss[:, -1].max() < 1e-12  # exact reconstruction: no residual, no noise
    assert np.abs(res.q[:, -1] - res.q[:, 3]).max() < 1e-6  # q frozen once learned
    assert np.abs(res.q[:, -1]).max() < 0.2
    con = ae.simulate_sgd(lam, 10, 0.003, 48, 30_000, seeds=2, record_every=5_000, init="random", seed=3)
    assert np.all(con.q[:, -1] - con.q[:, 3] > 0.5)  # the contractive one keeps drifting decoder-heavy


def test_divergence_is_reported():
    lam = ae.geometric_spectrum(20)
    with pytest.raises(DivergenceError, match=r"eta=0\.2.*batch_size=32") as info:
        ae.simulate_sgd(lam, 10, 0.2, 32, 10_000, seed=1)
    assert info.value.step <= 10_000 and info.value.params["eta"] == 0.2


# ------------------------------------------------------------------ input validation
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: ae.growth_rates(LAM6, 6), "k"),
        (lambda: ae.pca_hessian_eigenvalues(LAM6, 7, 1.0), "k"),
        (lambda: ae.modified_batch_sharpness(LAM6, 6, 1.0, 4), "k"),
        (lambda: ae.growth_rates(LAM6[::-1], 2), "lambdas"),
        (lambda: ae.growth_rates(np.array([1.0, 0.0, -1.0]), 1), "lambdas"),
        (lambda: ae.pca_hessian_eigenvalues(LAM6, 2, [1.0, -1.0]), "s"),
        (lambda: ae.pca_hessian_eigenvalues(LAM6, 2, [1.0, 0.0]), "s"),
        (lambda: ae.modified_batch_sharpness(LAM6, 2, 1.0, 0), "batch_size"),
        (lambda: ae.lambert_scale(0.0, 1.0, 1.0), "s0"),
        (lambda: ae.lambert_scale(1.0, -1.0, 1.0), "c"),
        (lambda: ae.lambert_scale(1.0, 1.0, -1.0), "tau"),
        (lambda: ae.eos_ceiling(0.0, 12.0), "eta"),
        (lambda: ae.eos_ceiling(-0.01, 12.0), "eta"),
        (lambda: ae.eos_ceiling(0.01, 0.0), "lambda1"),
        (lambda: ae.eos_ceiling(0.1, 12.0), "kappa_tilde"),
        (lambda: ae.simulate_sgd(LAM6, 2, 0.0, 8, 10), "eta"),
        (lambda: ae.simulate_sgd(LAM6, 2, -0.1, 8, 10), "eta"),
        (lambda: ae.simulate_sgd(LAM6, 2, 0.01, 0, 10), "batch_size"),
        (lambda: ae.simulate_sgd(LAM6[::-1], 2, 0.01, 8, 10), "lambdas"),
        (lambda: ae.simulate_sgd(LAM6, 2, 0.01, 8, 10, activation="relu"), "sampler"),
        (lambda: ae.simulate_sgd(LAM6, 2, 0.01, 8, 10, activation="tanh"), "activation"),
        (lambda: ae.simulate_sgd(LAM6, 6, 0.01, 8, 10, init="pca"), "k"),
        (lambda: ae.simulate_sgd(LAM6, 2, 0.01, 8, 10, dtype=np.float16), "dtype"),
        (lambda: ae.simulate_sgd_grid(LAM6, 2, [0.01, 0.02], [8], 0.1), "batch_sizes"),
        (lambda: ae.scale_flow(-np.eye(2), np.eye(2), [0.0, 1.0]), "S0"),
    ],
)
def test_bad_input_raises_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# ------------------------------------------------------------------ finite-η extension and helpers
def test_expected_charge_increment_matches_monte_carlo_and_the_manifold_value():
    from symbreak.engine import wishart_covariance

    g = make_rng(21)
    W, U = 0.7 * g.standard_normal((6, 2)), 0.7 * g.standard_normal((2, 6))
    sh = wishart_covariance(g, np.sqrt(LAM6), 8, 200_000)
    inc = ae.charge_increment(W, U, sh, 0.1)
    se = inc.std(0) / np.sqrt(inc.shape[0])
    assert np.all(np.abs(inc.mean(0) - ae.expected_charge_increment(W, U, LAM6, 0.1, 8)) < 4 * se)
    s = np.array([2.0, 0.7])
    Wm, Um = ae.pca_point(s, 6)  # on the manifold: (η²/B) S^{-1/2} C S^{-1/2}
    assert np.allclose(
        ae.expected_charge_increment(Wm, Um, LAM6, 0.1, 8),
        0.1**2 / 8 * np.diag(ae.growth_rates(LAM6, 2) / s),
        rtol=1e-12,
        atol=1e-15,
    )


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


def test_residual_split_and_helpers():
    lam = ae.geometric_spectrum(20)
    X = make_rng(24).standard_normal((20, 4000)) * np.sqrt(lam)[:, None]
    W, U = ae.pca_point(np.geomspace(3, 1, 10), 20)
    par, perp = ae.residual_split(W, U, X, "linear")
    assert par < 1e-20 and perp == pytest.approx(lam[10:].sum(), rel=0.05)  # r = -x_perp exactly
    inc = ae.charge_increments_along_sgd(lam, 10, 0.02, 128, 200, seed=3)
    assert inc["formula_error"].max() < 1e-13 and inc["manifold_min_eig"].min() >= 0
    res = ae.simulate_sgd(lam, 10, 0.02, 128, 2000, seeds=2, record_every=500, seed=1)
    assert np.allclose(ae.saturation_scale(res, 0.003), res.scales[:, 2:, 0].mean(1))
    with pytest.raises(ValueError, match="tau_from"):
        ae.saturation_scale(res, 10.0)
