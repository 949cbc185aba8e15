"""Tests of ``symbreak.autoencoder.glk`` (moved from test_autoencoder_extensions.py)."""

from __future__ import annotations

import numpy as np
import pytest

from symbreak import autoencoder as ae
from symbreak.rng import make_rng

from .helpers import LAM, C, K, _charge_rate


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gl_flow_drift_reproduces_the_charge_drift_of_eq5(seed):
    A = np.eye(K) + 0.3 * make_rng(seed).standard_normal((K, K))
    Ai = np.linalg.inv(A)
    dQ = _charge_rate(A, ae.gl_flow_drift(LAM, K, A))
    np.testing.assert_allclose(dQ, Ai @ np.diag(C) @ Ai.T, rtol=1e-9, atol=1e-9)


def _gl_drift_by_definition(lam, k, A):
    """The drift as its definition reads: one Lyapunov solve per out-of-subspace block (SciPy's
    Bartels–Stewart), the tangent projection as a k² × k² linear system."""
    from scipy.linalg import solve_continuous_lyapunov

    lp = np.diag(lam[:k])
    Ai = np.linalg.inv(A)
    M, S, eye = Ai @ lp @ Ai.T, A.T @ A, np.eye(k)
    eww, euu = np.zeros((k, k)), np.zeros((k, k))
    for lj in lam[k:]:
        H = np.block([[M, -lj * eye], [-lj * eye, lj * S]])
        sig = np.zeros((2 * k, 2 * k))
        sig[:k, :k] = lj * M
        X = solve_continuous_lyapunov(H, sig)
        eww += X[:k, :k]
        euu += lj * X[k:, k:]
    rhs = A @ euu - Ai.T @ (eww @ Ai @ lp) @ Ai.T
    mat = np.eye(k * k) + np.kron(np.linalg.inv(S), np.linalg.inv(A @ A.T))
    return -np.linalg.solve(mat, rhs.ravel(order="F")).reshape(k, k, order="F")


@pytest.mark.parametrize("d, k", [(20, 10), (6, 2), (8, 1), (20, 19)])
def test_gl_flow_drift_matches_its_definition_solved_block_by_block(d, k):
    """The library solves every block's Lyapunov equation by one batched eigendecomposition and the
    projection in the eigenbases of AAᵀ and AᵀA; the definition's own solves agree."""
    g = make_rng(d * 100 + k)
    lam = np.sort(g.uniform(0.1, 3.0, d))[::-1]
    for _ in range(5):
        A = np.eye(k) * g.uniform(0.5, 2.0) + 0.3 * g.standard_normal((k, k))
        want = _gl_drift_by_definition(lam, k, A)
        np.testing.assert_allclose(ae.gl_flow_drift(lam, k, A), want, rtol=0, atol=1e-9 * np.abs(want).max())


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


@pytest.mark.parametrize(
    "singular_values",
    [[1.0, 1e-3, 1e-6], [1e-80, 1.2e-80, 0.9e-80], [1e3, 1.1e3, 0.9e3]],
    ids=["cond-1e6", "tiny", "large"],
)
def test_gl_flow_drift_refuses_a_point_float64_cannot_resolve(singular_values):
    """Far from the book's scales the blocks' small eigenvalues are lost in float64 (80-digit
    arithmetic puts the drift off by 33% to 22 times its size at a condition number of 1e6, and at
    exactly 0 for A of size 1e-80): a ValueError naming the charge identity, not a wrong drift."""
    g = make_rng(5)
    U, V = np.linalg.qr(g.standard_normal((3, 3)))[0], np.linalg.qr(g.standard_normal((3, 3)))[0]
    A = U @ np.diag(singular_values) @ V.T
    lam = np.array([3.0, 2.0, 1.5, 1.0, 0.5, 0.2])
    with pytest.raises(ValueError, match="charge identity"):
        ae.gl_flow_drift(lam, 3, A)
    ae.gl_flow_drift(lam, 3, U @ np.diag([1.0, 0.5, 0.2]) @ V.T)  # a well-conditioned point is fine
