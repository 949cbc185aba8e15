"""Tests of ``symbreak.dln.equilibrium`` (moved from test_dln.py, test_dln_matrix.py)."""

from __future__ import annotations

import numpy as np
import pytest

from symbreak import dln
from symbreak.rng import make_rng

from .helpers import CASES, _rel


@pytest.mark.parametrize("p, N, d, beta", CASES)
def test_sigma_star_solves_the_balance_equation(p, N, d, beta):
    s = dln.schatten_sigma_star(p, N, d, beta)
    # (1.12): g'(d f) f'(σ⋆) = (d − 1)(1 − 1/N)/(2βσ⋆) with g' = 1, f' = σ^{p−1}
    assert abs(s ** (p - 1) - (d - 1) * (1 - 1 / N) / (2 * beta * s)) < 1e-13 * s ** (p - 1)
    # σ⋆(1,…,1) is a critical point of F_β
    grad_f = np.full(d, s ** (p - 1)) - dln.entropy_gradient(np.full(d, s), N) / beta
    assert np.abs(grad_f).max() < 1e-13 * s ** (p - 1)
    assert abs(dln.sigma_star(dln.schatten_energy(p), N, d, beta) - s) < 1e-13 * s


@pytest.mark.parametrize("p, N, d, beta", CASES)
def test_flows_from_random_starts_reach_sigma_star(p, N, d, beta):
    s = dln.schatten_sigma_star(p, N, d, beta)
    rho1, rho_perp = dln.relaxation_rates(p, N, d, beta)
    t_end = 30.0 / min(abs(rho1), abs(rho_perp))
    rng = make_rng(21)
    for _ in range(6):
        sigma0 = s * np.exp(rng.uniform(-2.0, 1.5, d))
        out = dln.singular_value_flow(sigma0, [0.0, t_end], N=N, beta=beta, p=p)
        assert np.max(np.abs(out[-1] / s - 1)) < 1e-6
        # the order of the initial values is kept (hyperplanes σ_i = σ_j are invariant)
        mid = dln.singular_value_flow(sigma0, [0.0, 0.1 * t_end], N=N, beta=beta, p=p)[-1]
        assert np.array_equal(np.argsort(mid), np.argsort(sigma0))


def test_measured_decay_of_uniform_and_relative_modes():
    p, N, d, beta = 2.0, 3, 4, 1.0
    s = dln.schatten_sigma_star(p, N, d, beta)
    rho1, rho_perp = dln.relaxation_rates(p, N, d, beta)
    t = np.linspace(0.5, 2.5, 9)
    for v, rho in ((np.ones(d), rho1), (np.array([1.0, -1.0, 0.5, -0.5]), rho_perp)):
        out = dln.singular_value_flow(
            s * (1 + 1e-5 * v), np.concatenate([[0.0], t]), N=N, beta=beta, p=p, rtol=1e-13, atol=1e-15
        )[1:]
        amp = (out - s) @ v / (v @ v)
        slope = np.polyfit(t, np.log(np.abs(amp)), 1)[0]
        assert abs(slope / rho - 1) < 1e-3


def test_exact_solution_for_nu_equal_two_has_a_closed_form():
    """ν = Np = 2 (N = 2, p = 1): d(s²)/dt = 2(s⋆² − s²), so s² = s⋆² + (s0² − s⋆²) e^{−2t}."""
    p, N, d, beta = 1.0, 2, 3, 0.5
    ss = dln.schatten_sigma_star(p, N, d, beta) ** (1 / N)
    t = np.linspace(0, 10, 41)
    for s0 in (0.1 * ss, 3 * ss):
        closed = np.sqrt(ss**2 + (s0**2 - ss**2) * np.exp(-2 * t))
        assert _rel(dln.schatten_scale(t, s0, p=p, N=N, d=d, beta=beta), closed) < 1e-12


def test_exact_solution_is_the_flow_on_the_diagonal():
    """σ_i = s^N on the invariant set of equal singular values (d-dimensional flow, Lemma 7.3)."""
    p, N, d, beta = 2.0, 3, 5, 0.4
    ss = dln.schatten_sigma_star(p, N, d, beta) ** (1 / N)
    t = np.linspace(0, 4, 21)
    for s0 in (0.3 * ss, 2.0 * ss):
        flow = dln.singular_value_flow(np.full(d, s0**N), t, N=N, beta=beta, p=p, rtol=1e-12, atol=1e-14)
        exact = dln.schatten_scale(t, s0, p=p, N=N, d=d, beta=beta) ** N
        assert np.max(np.abs(flow - exact[:, None]) / exact[:, None]) < 1e-9


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
