"""Tests of ``symbreak.dln.concavity`` (moved from test_dln_matrix.py)."""

from __future__ import annotations

import numpy as np
import pytest

from symbreak import dln


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


def test_certify_concavity_restores_the_interval_precision():
    """mpmath.workdps restores mp's precision only; iv's used to stay at dps=120 for the process."""
    import mpmath

    before = (mpmath.iv.prec, mpmath.mp.prec)
    dln.certify_concavity(3, dps=120, max_intervals=50)
    assert (mpmath.iv.prec, mpmath.mp.prec) == before
    with pytest.raises(ValueError, match="dps"):
        dln.certify_concavity(3, dps=10**6)
    assert (mpmath.iv.prec, mpmath.mp.prec) == before
