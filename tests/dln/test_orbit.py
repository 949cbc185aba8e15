"""Tests of ``symbreak.dln.orbit`` (moved from test_dln_matrix.py)."""

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
