"""Tests of ``symbreak.dln._special`` (moved from test_dln.py)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from symbreak import dln


@pytest.mark.parametrize("N", [1, 2, 3, 7, 64, np.inf])
def test_h_tie_series_is_kappa_plus_G1(N):
    """h(δ) = κ + G_N'(δ) on the tie series |δ| < 1/2 (one polynomial in δ), against 40-digit
    coth δ − coth(δ/N)/N (and coth δ − 1/δ at N = inf)."""
    for d in [-0.49, -0.2, -1e-6, 0.0, 1e-9, 0.1, 0.3, 0.4999]:
        with mp.workdps(40):
            dm = mp.mpf(d)
            if d == 0.0:
                g1 = mp.mpf(0)
            elif math.isinf(N):
                g1 = mp.coth(dm) - 1 / dm
            else:
                g1 = mp.coth(dm) - mp.coth(dm / N) / N
            ref = float((1 - (0 if math.isinf(N) else mp.mpf(1) / N)) + g1)
        got = float(dln._h(np.array([d]), N)[0])
        assert abs(got - ref) <= 4e-16 * max(abs(ref), 1e-300) + 1e-300, (N, d, got, ref)  # two roundings
