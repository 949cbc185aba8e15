"""The book's extensions of the autoencoder chapter: the GL(k) slow flow, the C.36 noise size, the explorer."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from symbreak import autoencoder as ae
from symbreak.rng import make_rng

LAM = ae.geometric_spectrum(20)
K = 10
C = ae.growth_rates(LAM, K)


def _charge_rate(A, dA):
    S = A.T @ A
    Si = np.linalg.inv(S)
    dS = dA.T @ A + A.T @ dA
    return dS + Si @ dS @ Si


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gl_flow_drift_reproduces_the_charge_drift_of_eq5(seed):
    A = np.eye(K) + 0.3 * make_rng(seed).standard_normal((K, K))
    Ai = np.linalg.inv(A)
    dQ = _charge_rate(A, ae.gl_flow_drift(LAM, K, A))
    np.testing.assert_allclose(dQ, Ai @ np.diag(C) @ Ai.T, rtol=1e-9, atol=1e-9)


def test_gl_flow_drift_keeps_a_diagonal_point_diagonal():
    A = np.diag(np.geomspace(3.0, 1.2, K))
    dA = ae.gl_flow_drift(LAM, K, A)
    assert np.abs(dA - np.diag(np.diag(dA))).max() < 1e-12
    # and on the diagonal it is the Lambert-W rate: d(s − 1/s)/dτ = c/s with s = A_aa²
    s = np.diag(A) ** 2
    ds = 2 * np.diag(A) * np.diag(dA)
    np.testing.assert_allclose(ds * (1 + 1 / s**2), C / s, rtol=1e-9)


def test_gl_flow_rotates_a_non_commuting_start():
    rot = np.linalg.qr(make_rng(7).standard_normal((K, K)))[0]
    S0 = rot @ np.diag(np.geomspace(2.5, 0.5, K)) @ rot.T
    A0 = ae.pca_point(S0, 20)[0][:K]
    A = ae.gl_flow(LAM, K, A0, [0.0, 0.05])
    O = ae.polar_rotation(A)
    assert np.linalg.norm(O[0] - np.eye(K)) < 1e-8
    assert np.linalg.norm(O[-1] - np.eye(K)) > 0.02


def test_gl_flow_equals_eq5_when_c_is_isotropic():
    lam = np.concatenate([np.full(K, 3.0), LAM[K:]])
    rot = np.linalg.qr(make_rng(3).standard_normal((K, K)))[0]
    S0 = rot @ np.diag(np.geomspace(2.0, 0.6, K)) @ rot.T
    A0 = ae.pca_point(S0, 20)[0][:K]
    taus = np.linspace(0, 0.05, 6)
    A = ae.gl_flow(lam, K, A0, taus)
    S = np.einsum("tji,tjl->til", A, A)
    np.testing.assert_allclose(S, ae.scale_flow(S0, np.diag(ae.growth_rates(lam, K)), taus), rtol=1e-5, atol=1e-6)


def test_polar_rotation_is_the_orthogonal_factor():
    A = make_rng(4).standard_normal((3, 5, 5))
    O = ae.polar_rotation(A)
    np.testing.assert_allclose(np.einsum("nji,njk->nik", O, O), np.broadcast_to(np.eye(5), (3, 5, 5)), atol=1e-12)
    P = np.einsum("nji,njk->nik", O, A)  # Oᵀ A must be symmetric positive semi-definite
    np.testing.assert_allclose(P, np.swapaxes(P, 1, 2), atol=1e-12)


def test_charge_noise_matches_a_monte_carlo_of_one_step():
    """Per-step variance of ΔQ_11 at S = I against the closed form used by charge_noise_std."""
    eta, b = 0.02, 16
    g = make_rng(5)
    n = 40_000
    x1 = g.standard_normal((n, b)) * np.sqrt(LAM[0])
    xp = g.standard_normal((n, b, 10)) * np.sqrt(LAM[K:])
    v = np.einsum("nb,nbj->nj", x1, xp)
    dq = eta**2 / b**2 * (v**2).sum(1)
    vb = LAM[0] ** 2 * (2 * b * (b + 2) * np.sum(LAM[K:] ** 2) + 2 * b * LAM[K:].sum() ** 2)
    assert abs(dq.var() / (eta**4 * vb / b**4) - 1) < 0.05
    # at small τ the accumulated variance is the sum of the per-step ones
    tau = 1e-4
    std = ae.charge_noise_std(LAM, K, eta, b, [0.0, tau])[-1]
    np.testing.assert_allclose(std**2, tau * b / eta**2 * eta**4 * vb / b**4, rtol=2e-2)


def test_charge_noise_std_scales_with_eta():
    taus = np.linspace(0, 0.3, 7)
    a = ae.charge_noise_std(LAM, K, 0.01, 32, taus)
    b = ae.charge_noise_std(LAM, K, 0.02, 32, taus)
    np.testing.assert_allclose(b[1:], 2 * a[1:], rtol=1e-6)


@pytest.mark.parametrize(
    "corner", list(itertools.product(*[ae.EXPLORER_BOX[p] for p in ("eta", "batch_size", "k", "gap", "noncommuting")]))
)
def test_explorer_runs_at_every_corner_of_its_box(corner):
    eta, b, k, gap, nu = corner
    r = ae.explorer_run(eta, b, k, gap, nu, max_steps=300, n_records=10, seeds=1)
    assert r["diverged"] is None
    assert np.all(np.isfinite(r["scales"])) and r["scales"].shape == (r["tau"].size, k)
    assert np.all(r["theory"] <= r["ceiling"] + 1e-12)
    th = np.array([np.interp(r["tau"], r["tau_theory"], r["theory"][:, a]) for a in range(k)]).T
    assert np.abs(r["scales"] / th - 1).max() < 0.25
    assert r["tau"][-1] == pytest.approx(r["steps"] * eta**2 / b)


def test_explorer_follows_the_theory_at_the_default_setting():
    r = ae.explorer_run(max_steps=20_000, seeds=2)
    th = np.array([np.interp(r["tau"], r["tau_theory"], r["theory"][:, a]) for a in range(r["k"])]).T
    assert np.abs(r["scales"] / th - 1).max() < 0.06


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(eta=0.5), "eta"),
        (dict(eta=0.001), "eta"),
        (dict(batch_size=8), "batch_size"),
        (dict(batch_size=64.5), "batch_size"),
        (dict(k=0), "k"),
        (dict(k=20), "k"),
        (dict(gap=0.5), "gap"),
        (dict(noncommuting=1.5), "noncommuting"),
        (dict(noncommuting=float("nan")), "noncommuting"),
        (dict(max_steps=0), "max_steps"),
        (dict(seeds=0), "seeds"),
    ],
)
def test_explorer_rejects_values_outside_its_box(kw, name):
    with pytest.raises(ValueError, match=name):
        ae.explorer_run(**kw)


def test_explorer_runs_equal_one_run_per_setting():
    settings = [
        dict(eta=0.04, batch_size=32, noncommuting=1.0),
        dict(eta=0.02),
        dict(eta=0.01, batch_size=512, gap=2.5),
    ]
    batched = ae.explorer_runs(settings, max_steps=1500, n_records=12, seeds=2, seed=4)
    for s, r in zip(settings, batched):
        one = ae.explorer_run(**s, max_steps=1500, n_records=12, seeds=2, seed=4)
        np.testing.assert_array_equal(r["scales"], one["scales"])  # common random numbers: bit-identical
        np.testing.assert_array_equal(r["tau"], one["tau"])
        np.testing.assert_array_equal(r["theory"], one["theory"])
        assert r["steps"] == one["steps"] and r["truncated"] == one["truncated"]


def test_explorer_runs_isolate_a_diverging_setting(monkeypatch):
    from symbreak.engine import DivergenceError

    real = ae._run

    def run_that_diverges_at_eta_004(lam, k, etas, *args, **kwargs):
        if np.any(np.asarray(etas) == 0.04):
            raise DivergenceError(7, 0, {"eta": 0.04}, float("inf"), 1e6)
        return real(lam, k, etas, *args, **kwargs)

    monkeypatch.setattr(ae.explorer, "_run", run_that_diverges_at_eta_004)  # explorer_runs calls it there
    out = ae.explorer_runs([dict(eta=0.02), dict(eta=0.04)], max_steps=500, n_records=5, seeds=1, seed=3)
    assert out[0]["diverged"] is None and out[0]["scales"].shape == (6, 10)
    assert "step 7" in out[1]["diverged"] and out[1]["scales"].shape == (0, 10)
    monkeypatch.setattr(ae.explorer, "_run", real)
    np.testing.assert_array_equal(
        out[0]["scales"], ae.explorer_run(0.02, max_steps=500, n_records=5, seeds=1, seed=3)["scales"]
    )


@pytest.mark.parametrize(
    "settings, err, match",
    [
        ([], ValueError, "at least one"),
        (dict(eta=0.02), TypeError, "sequence"),
        ([0.02], TypeError, "mapping"),
        ([dict(lr=0.02)], ValueError, "unknown"),
        ([dict(eta=0.02), dict(eta=1.0)], ValueError, "eta"),
        ([dict(batch_size=float("nan"))], ValueError, "batch_size"),
    ],
)
def test_explorer_runs_reject_bad_settings(settings, err, match):
    with pytest.raises(err, match=match):
        ae.explorer_runs(settings, max_steps=100)


def test_explorer_rejects_non_numbers():
    with pytest.raises(TypeError, match="eta"):
        ae.explorer_run(eta="0.02")


@pytest.mark.parametrize("A, match", [(np.zeros((K, K)), "A"), (np.eye(K + 1), "A"), (np.full((K, K), np.nan), "A")])
def test_gl_flow_rejects_a_bad_point(A, match):
    with pytest.raises(ValueError, match=match):
        ae.gl_flow_drift(LAM, K, A)


def test_gl_flow_rejects_bad_times_and_a_missing_gap():
    with pytest.raises(ValueError, match="taus"):
        ae.gl_flow(LAM, K, np.eye(K), [0.1, 0.0])
    flat = np.concatenate([np.full(11, 2.0), np.ones(9)])
    with pytest.raises(ValueError, match="spectral gap"):
        ae.gl_flow_drift(flat, K, np.eye(K))


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(eta=0.0), "eta"),
        (dict(batch_size=0), "batch_size"),
        (dict(s0=-1.0), "s0"),
        (dict(taus=[0.2, 0.1]), "taus"),
    ],
)
def test_charge_noise_std_rejects_bad_input(kw, name):
    args = dict(eta=0.02, batch_size=32, taus=[0.0, 0.1])
    args.update(kw)
    with pytest.raises(ValueError, match=name):
        ae.charge_noise_std(LAM, K, **args)


def test_polar_rotation_rejects_non_square():
    with pytest.raises(ValueError, match="A"):
        ae.polar_rotation(np.ones((3, 4)))


def test_variants_simulator_grows_the_charge_and_stays_on_the_manifold():
    r = ae.simulate_sgd_variants(LAM, K, 0.01, 32, 2000, seeds=2, n_records=4, seed=1)
    q = np.trace(r.Q, axis1=-2, axis2=-1)
    assert np.all(np.diff(q, axis=1) > 0)
    np.testing.assert_allclose(r.loss[:, -1], 0.5 * LAM[K:].sum(), rtol=0.02)


def test_variants_weight_decay_pulls_the_charge_back():
    S0 = ae.simulate_sgd_variants(LAM, K, 0.02, 32, 500, weight_decay=0.05, seeds=1, n_records=2, seed=2)
    assert np.trace(S0.Q[0, -1]) < 0.8 * np.trace(
        ae.simulate_sgd_variants(LAM, K, 0.02, 32, 500, seeds=1, n_records=2, seed=2).Q[0, -1]
    )


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(momentum=1.0), "momentum"),
        (dict(momentum=-0.1), "momentum"),
        (dict(weight_decay=-1.0), "weight_decay"),
        (dict(weight_decay=float("inf")), "weight_decay"),
        (dict(data="cauchy"), "data"),
        (dict(seeds=0), "seeds"),
        (dict(n_records=0), "n_records"),
    ],
)
def test_variants_reject_bad_input(kw, name):
    with pytest.raises(ValueError, match=name):
        ae.simulate_sgd_variants(LAM, K, 0.01, 32, 10, **kw)
