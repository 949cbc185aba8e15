"""Tests of ``symbreak.dln.pairs`` (moved from test_dln_referee.py)."""

import math

import mpmath as mp
import numpy as np
import pytest

from symbreak import dln

from .helpers import _r_mp


@pytest.mark.parametrize("N", [2, 3, 5, 12])
def test_pair_force_matches_literal_formula(N):
    a = np.array([1.0 + 1e-3, 1.5, 3.0, 40.0])
    with mp.workdps(40):
        ref = np.array([float(_r_mp(x, 1.0, N)) for x in a])
    np.testing.assert_allclose(dln.pair_force(a, 1.0, N), ref, rtol=1e-12)
    np.testing.assert_allclose(dln.pair_force(2.0, 2.0, N), (1 - 1 / N) / 4.0, rtol=1e-15)


@pytest.mark.parametrize("N", [2, 3, 4, 7, 30])
def test_pair_force_asymmetry_closed_form_and_sign(N):
    a = np.exp(np.linspace(1e-4, 8.0, 60))
    got = dln.pair_force_asymmetry(a, 1.0, N)
    with mp.workdps(50):
        ref = np.array([float(_r_mp(x, 1.0, N) - _r_mp(1.0, x, N)) for x in a])
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-30)
    assert np.all(got <= 0.0)
    if N == 2:
        assert np.all(got == 0.0)
    else:
        assert np.all(got < 0.0)
    assert dln.pair_force_asymmetry(1.3, 1.3, N) == 0.0


def test_pair_force_asymmetry_rejects_bad_input():
    with pytest.raises(ValueError, match="a >= b"):
        dln.pair_force_asymmetry(1.0, 2.0, 3)
    with pytest.raises(ValueError, match="N"):
        dln.pair_force_asymmetry(2.0, 1.0, 1)
    with pytest.raises(ValueError, match="a"):
        dln.pair_force_asymmetry(-1.0, 1.0, 3)


@pytest.mark.parametrize("N", [2, 3, 6])
def test_phi_pair_limit_and_literal(N):
    a = 1.7
    np.testing.assert_allclose(dln.phi_pair(a, a, N), (N - 1) / (2 * N * a), rtol=1e-15)
    b = np.array([0.3, 1.0, 2.5])
    lit = a ** (2 * N - 1) / (a ** (2 * N) - b ** (2 * N)) - a / (N * (a**2 - b**2))
    np.testing.assert_allclose(dln.phi_pair(a, b, N), lit, rtol=1e-12)


def test_scale_ratio_diagonal_is_invariant():
    ud, sd = dln.scale_ratio_velocity([1.0, 1.0], 0.7, N=4, p=1.5, beta=0.5)
    assert np.all(ud == 0.0)
    # on the diagonal the scale follows P(1.26): s' = -s^(nu-1) + s_star^nu / s
    s_star_nu = 2 * (1 - 1 / 4) / (2 * 0.5)
    assert sd == pytest.approx(-(0.7 ** (4 * 1.5 - 1)) + s_star_nu / 0.7, rel=1e-14)


def test_scale_ratio_velocity_validation():
    with pytest.raises(ValueError, match="u"):
        dln.scale_ratio_velocity([0.0], 1.0, N=3, p=2.0, beta=1.0)
    with pytest.raises(ValueError, match="p"):
        dln.scale_ratio_velocity([1.2], 1.0, N=3, p=0.5, beta=1.0)
    with pytest.raises(ValueError, match="beta"):
        dln.scale_ratio_velocity([1.2], 1.0, N=3, p=2.0, beta=0.0)


@pytest.mark.parametrize("N", [2, 3, 7])
def test_mean_field_pair_matrix_is_the_entropy_pair_term(N):
    x = np.array([0.4, 1.0, 1.0, 2.5])
    P = dln.mean_field_pair_matrix(x, N)
    assert np.allclose(P, P.T, rtol=0, atol=1e-15)
    for i in range(4):
        for j in range(4):
            if i != j:
                np.testing.assert_allclose(P[i, j], dln.entropy([max(x[i], x[j]), min(x[i], x[j])], N), rtol=1e-13)
    np.testing.assert_allclose(np.diag(P), 0.5 * np.log(N * x ** (2 - 2 / N)), rtol=1e-13)


def test_mean_field_free_energy_dirac_and_validation():
    N, p, beta0 = 3, 2.0, 1.0
    x = 0.8
    expected = x**p / p - 0.5 * math.log(N * x ** (2 - 2 / N)) / (2 * beta0)
    assert dln.mean_field_free_energy([x], [1.0], N=N, p=p, beta0=beta0) == pytest.approx(expected, rel=1e-14)
    with pytest.raises(ValueError, match="w"):
        dln.mean_field_free_energy([1.0, 2.0], [0.7, 0.7], N=N, p=p, beta0=beta0)
    with pytest.raises(ValueError, match="shape"):
        dln.mean_field_free_energy([1.0, 2.0], [1.0], N=N, p=p, beta0=beta0)
    with pytest.raises(ValueError, match="beta0"):
        dln.mean_field_free_energy([1.0], [1.0], N=N, p=p, beta0=-1.0)


def test_factor_gradients_validation():
    with pytest.raises(ValueError, match="grad_X"):
        dln.factor_gradients([np.eye(2), np.eye(2)], np.eye(3))
