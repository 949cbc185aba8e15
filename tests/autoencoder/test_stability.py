"""Tests of ``symbreak.autoencoder.stability`` (moved from test_autoencoder.py, test_autoencoder_edge.py)."""

import numpy as np
import pytest

from symbreak import autoencoder as ae
from symbreak.engine import DivergenceError
from symbreak.rng import make_rng

from .helpers import LAM, K


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


def test_gain_noise_variance_scales_as_eta_cubed_over_b_squared():
    s = 3.0
    v = ae.gain_noise_variance(LAM, K, s, 1e-4, 32)
    assert ae.gain_noise_variance(LAM, K, s, 1e-4, 64) == pytest.approx(v / 4, rel=1e-12)
    # Ξ = O(η) at small η, so σ_e² = O(η³)
    assert ae.gain_noise_variance(LAM, K, s, 2e-4, 32) / v == pytest.approx(8.0, rel=2e-3)
    arr = ae.gain_noise_variance(LAM, K, np.array([[1.0, 3.0]]), 1e-4, 32)
    assert arr.shape == (1, 2) and arr[0, 1] == pytest.approx(v, rel=1e-12) and np.all(arr > 0)


def test_gain_stability_thresholds():
    for b in (4, 32, 128):
        x_ms, x_as = ae.gain_stability_thresholds(b)
        assert x_ms == pytest.approx(2 * b / (b + 2), rel=1e-15)
        assert x_ms < 2 < x_as
        if b >= 32:
            assert abs(x_as - 2 - 4 / b) * b**2 < 30  # 2 + 4/B + O(1/B²)
    # E log|1 − x_as Z| = 0, by Monte Carlo over Z = χ²_B/B
    b = 16
    x_as = ae.gain_stability_thresholds(b)[1]
    z = make_rng(1).chisquare(b, 1_000_000) / b
    vals = np.log(np.abs(1 - x_as * z))
    assert abs(vals.mean()) < 4 * vals.std() / np.sqrt(z.size)
    # and E(1 − x_ms Z)² = 1
    x_ms = ae.gain_stability_thresholds(b)[0]
    sq = (1 - x_ms * z) ** 2
    assert abs(sq.mean() - 1) < 4 * sq.std() / np.sqrt(z.size)
    with pytest.raises(ValueError, match="batch_size"):
        ae.gain_stability_thresholds(0)
    with pytest.raises(ValueError, match="batch_size"):
        ae.gain_stability_thresholds(10**6)


def test_reduced_map_saturates_between_the_edges():
    eta, b = 0.026, 64
    out = ae.eos_reduced_kappa(eta, b, lambdas=LAM, k=K, seeds=16, seed=2)
    x_ms, x_as = ae.gain_stability_thresholds(b)
    assert set(out) >= {"median", "mean", "max", "s_median", "tau_from"}
    assert x_ms - 0.02 < out["median"].mean() < 2.0
    assert out["mean"].mean() < out["median"].mean() < out["max"].mean()
    assert out["max"].mean() > 2.0
    # without the random curvature the gain has no Kesten bursts: s_1 climbs to the GD ceiling
    flat = ae.eos_reduced_kappa(eta, b, lambdas=LAM, k=K, seeds=8, seed=2, multiplicative=False)
    assert abs(flat["median"].mean() - 2.0) < 0.005


def test_reduced_map_reproducible_and_replica_independent():
    kw = dict(seeds=3, n_records=20, seed=7)
    a = ae.eos_reduced_map(LAM, K, [0.026], [32], 0.1, **kw)[0]
    b = ae.eos_reduced_map(LAM, K, [0.026], [32], 0.1, **kw)[0]
    np.testing.assert_array_equal(a.s, b.s)
    # the first configuration's replicas do not depend on a second configuration that runs longer
    both = ae.eos_reduced_map(LAM, K, [0.026, 0.02], [32, 128], [0.1, 0.3], **kw)
    np.testing.assert_array_equal(both[0].s, a.s)
    np.testing.assert_array_equal(both[0].e, a.e)


def test_reduced_map_errors():
    with pytest.raises(ValueError, match="kappa_tilde"):
        ae.eos_reduced_map(LAM, K, [0.2], [32], 0.1)  # η λ_1 > 1: no ceiling
    with pytest.raises(ValueError, match="batch_sizes"):
        ae.eos_reduced_map(LAM, K, [0.01, 0.02], [32], 0.1)
    with pytest.raises(ValueError, match="seeds"):
        ae.eos_reduced_map(LAM, K, [0.01], [32], 0.1, seeds=0)
    with pytest.raises(ValueError, match="replica-steps"):
        ae.eos_reduced_map(LAM, K, [0.01], [32], 1e2, seeds=10**5)
    with pytest.raises(DivergenceError, match="eta=0.02"):
        ae.eos_reduced_map(LAM, K, [0.02], [32], 0.01, seeds=2, s0=3 * ae.eos_ceiling(0.02, LAM[0]))
    with pytest.raises(ValueError, match="plateau"):
        ae.eos_reduced_kappa(0.02, 32, lambdas=LAM, k=K, horizon=1.0, plateau=1.5)


def test_plateau_kappa():
    tau = np.linspace(0, 1, 11)
    s = np.vstack([np.full(11, 4.0), np.r_[np.ones(6), np.full(5, 5.0)]])
    np.testing.assert_allclose(ae.plateau_kappa(tau, s, 0.5, 0.02, 12.0), 0.24 * np.array([4.25, 5.2]))
    np.testing.assert_allclose(ae.plateau_kappa(tau, s, 0.0, 0.02, 12.0, "max"), 0.24 * np.array([4.25, 5.2]))
    with pytest.raises(ValueError, match="tau_from"):
        ae.plateau_kappa(tau, s, 2.0, 0.02, 12.0)
    with pytest.raises(ValueError, match="statistic"):
        ae.plateau_kappa(tau, s, 0.5, 0.02, 12.0, "mode")
    with pytest.raises(ValueError, match="shape"):
        ae.plateau_kappa(tau[:5], s, 0.5, 0.02, 12.0)
