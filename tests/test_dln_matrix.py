"""New DLN library functions: orbit volume (S_N from the fibre), matrix flow and its linearisation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from symbreak import dln
from symbreak.rng import make_rng


@pytest.mark.parametrize("N", [2, 3, 5])
def test_orbit_volume_minus_entropy_is_constant(N):
    rng = make_rng(7)
    offsets = []
    for d in (2, 3, 4):
        for _ in range(2):
            sig = np.sort(np.exp(rng.uniform(-1.5, 1.5, d)))[::-1]
            offsets.append(
                dln.orbit_gram_logdet(sig, N, rng=rng)
                - dln.entropy(sig, N)
                - 0.25 * d * (d - 1) * (N - 1) * math.log(2)
            )
    assert np.max(np.abs(offsets)) < 1e-8


def test_pair_gram_determinant_matches_recursion_and_polynomial():
    for N in (2, 3, 7, 20):
        for a, b in ((1.3, 0.7), (2.0, 2.0), (0.1, 5.0)):
            rec = dln.tridiagonal_toeplitz_det(2 * (a**2 + b**2), -2 * a * b, N - 1)
            assert dln.pair_gram_determinant(a, b, N) == pytest.approx(rec, rel=1e-12)
            if a != b:
                quot = 2 ** (N - 1) * (a ** (2 * N) - b ** (2 * N)) / (a**2 - b**2)
                assert dln.pair_gram_determinant(a, b, N) == pytest.approx(quot, rel=1e-10)


def test_matrix_velocity_equals_literal_A_operator():
    rng = make_rng(3)
    for N in (2, 3, 6):
        X = rng.standard_normal((4, 4))
        M = rng.standard_normal((4, 4))
        grad = lambda Y: Y - M  # noqa: E731
        for beta in (np.inf, 0.7):
            G = grad(X) - (0.0 if np.isinf(beta) else dln.entropy_gradient_matrix(X, N) / beta)
            ref = -dln.A_operator(X, G, N)
            got = dln.matrix_velocity(X, N=N, beta=beta, grad_energy=grad)
            assert np.abs(got - ref).max() < 1e-12 * np.abs(ref).max()


def test_spectral_matrix_flow_keeps_the_polar_factor_and_follows_the_chamber_flow():
    rng = make_rng(5)
    p, N, d, beta = 2.0, 3, 3, 1.0
    U = np.linalg.qr(rng.standard_normal((d, d)))[0]
    V = np.linalg.qr(rng.standard_normal((d, d)))[0]
    s0 = np.array([2.0, 0.9, 0.3])
    t = np.linspace(0, 1.5, 7)
    path = dln.matrix_flow(
        U @ np.diag(s0) @ V.T,
        t,
        N=N,
        beta=beta,
        rtol=1e-11,
        atol=1e-13,
        grad_energy=lambda X: dln.spectral_gradient_matrix(X, N=N, beta=np.inf, p=p),
    )
    flow = dln.singular_value_flow(s0, t, N=N, beta=beta, p=p, rtol=1e-11, atol=1e-13)
    sv = np.linalg.svd(path, compute_uv=False)
    assert np.abs(sv - flow).max() < 1e-8
    Uf, _, Vtf = np.linalg.svd(path[-1])
    assert np.abs(Uf @ Vtf - U @ V.T).max() < 1e-8


@pytest.mark.parametrize("p, N, d, beta", [(2.0, 3, 3, 1.0), (1.5, 4, 3, 0.3), (3.0, 2, 2, 2.0)])
def test_matrix_linearisation_spectrum_and_multiplicities(p, N, d, beta):
    rng = make_rng(11)
    s = dln.schatten_sigma_star(p, N, d, beta)
    X = s * np.linalg.qr(rng.standard_normal((d, d)))[0]
    J = dln.matrix_flow_jacobian(
        X, N=N, beta=beta, grad_energy=lambda Y: dln.spectral_gradient_matrix(Y, N=N, beta=np.inf, p=p)
    )
    ev = np.linalg.eigvals(J)
    r1, rp = dln.relaxation_rates(p, N, d, beta)
    theory = np.sort([0.0] * (d * (d - 1) // 2) + [r1] + [rp] * (d * (d + 1) // 2 - 1))
    assert np.abs(np.sort(ev.real) - theory).max() < 1e-9 * abs(r1)
    assert np.abs(ev.imag).max() < 1e-9 * abs(r1)


def test_entropic_completion_is_unbounded_below():
    rng = make_rng(2)
    X = rng.standard_normal((3, 3))
    Z = np.zeros((3, 3))
    Z[0, 2] = 1.0
    S = [dln.entropy(np.linalg.svd(X + t * Z, compute_uv=False), 3) for t in (1e6, 1e7)]  # correction ~ t^(-2/N)
    assert (S[1] - S[0]) / math.log(10) == pytest.approx(2 * (1 - 1 / 3), rel=1e-4)


def test_matrix_flow_bounds_its_work():
    with pytest.raises(ValueError, match="max_steps"):
        dln.matrix_flow(np.eye(2), [0.0, 10.0], N=2, beta=np.inf, grad_energy=lambda X: X - 2 * np.eye(2), max_steps=5)


def test_new_functions_reject_bad_input():
    with pytest.raises(ValueError, match="N"):
        dln.orbit_gram_logdet([2.0, 1.0], 1)
    with pytest.raises(ValueError, match="N"):
        dln.orbit_gram_logdet([2.0, 1.0], 40)
    with pytest.raises(ValueError, match="d <= 8"):
        dln.orbit_gram_logdet(np.arange(1.0, 10.0), 2)
    with pytest.raises(ValueError, match="sigma"):
        dln.orbit_gram_logdet([2.0, -1.0], 3)
    with pytest.raises(ValueError, match="step"):
        dln.orbit_gram_logdet([2.0, 1.0], 3, step=0.0)
    with pytest.raises(ValueError, match="lam_i"):
        dln.pair_gram_determinant(0.0, 1.0, 3)
    with pytest.raises(ValueError, match="N"):
        dln.pair_gram_determinant(1.0, 1.0, 1)
    with pytest.raises(ValueError, match="n"):
        dln.tridiagonal_toeplitz_det(1.0, 0.5, 0)
    with pytest.raises(ValueError, match="X"):
        dln.entropy_gradient_matrix(np.zeros((2, 2)), 3)
    with pytest.raises(ValueError, match="X"):
        dln.entropy_gradient_matrix(np.ones((2, 3)), 3)
    with pytest.raises(TypeError, match="grad_energy"):
        dln.matrix_velocity(np.eye(2), N=2, beta=1.0, grad_energy=None)
    with pytest.raises(ValueError, match="grad_energy"):
        dln.matrix_velocity(np.eye(2), N=2, beta=1.0, grad_energy=lambda X: np.ones(3))
    with pytest.raises(ValueError, match="beta"):
        dln.matrix_velocity(np.eye(2), N=2, beta=-1.0, grad_energy=lambda X: X)
    with pytest.raises(ValueError, match="X must be invertible"):
        dln.matrix_velocity(np.zeros((2, 2)), N=2, beta=1.0, grad_energy=lambda X: X)
    with pytest.raises(ValueError, match="t_eval"):
        dln.matrix_flow(np.eye(2), [1.0, 0.5], N=2, beta=1.0, grad_energy=lambda X: X)
    with pytest.raises(ValueError, match="max_steps"):
        dln.matrix_flow(np.eye(2), [0.0, 1.0], N=2, beta=1.0, grad_energy=lambda X: X, max_steps=0)
    with pytest.raises(ValueError, match="rel_step"):
        dln.matrix_flow_jacobian(np.eye(2), N=2, beta=1.0, grad_energy=lambda X: X, rel_step=0.0)


def test_concavity_discriminant_against_high_precision():
    import mpmath as mp

    def ref(x, N):
        with mp.workdps(300):
            x, k = mp.mpf(x), 1 - mp.mpf(1) / N
            g1 = mp.coth(x) - mp.coth(x / N) / N
            g2 = -(mp.csch(x) ** 2) + mp.csch(x / N) ** 2 / N**2
            return float(k**2 - 2 * k * g2 - g1**2)

    for N in (3, 4, 7, 20):
        for x in (1e-4, 0.3, 0.5, 0.7, 2.0, 10.0, 40.0, 80.0, 300.0):
            assert dln.concavity_discriminant(x, N) == pytest.approx(ref(x, N), rel=1e-11)
            assert dln.concavity_discriminant(-x, N) == dln.concavity_discriminant(x, N)
    assert np.all(dln.concavity_discriminant(np.linspace(0, 60, 601), 2) < 1e-13)


@pytest.mark.parametrize("N", [3, 4, 5, 8, 16, 64])
def test_theorem_1_9_is_certified(N):
    cert = dln.certify_concavity(N)
    assert cert["certified"] and cert["min_lower"] > 0
    # beyond the tail start the closed-form lower bound is positive and below the true value
    kappa = 1 - 1 / N
    x = cert["tail_start"] * np.array([1.0001, 1.5, 3.0, 10.0])
    eta = 1 / np.expm1(2 * x / N)
    lower = 4 * eta / N * (kappa * (1 - 2 / N) - eta * (2 * kappa + 1) / N)
    assert np.all(lower > 0) and np.all(dln.concavity_discriminant(x, N) >= lower)


def test_certification_reports_failure_when_out_of_budget():
    assert not dln.certify_concavity(3, max_intervals=1)["certified"]
    with pytest.raises(ValueError, match="N"):
        dln.certify_concavity(2)
    with pytest.raises(ValueError, match="N"):
        dln.concavity_tail_start(2)
    with pytest.raises(ValueError, match="N"):
        dln.concavity_discriminant(1.0, 1)
