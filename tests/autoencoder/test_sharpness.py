"""Tests of ``symbreak.autoencoder.sharpness`` (moved from test_autoencoder.py)."""

import numpy as np
import pytest

from symbreak import autoencoder as ae

from .helpers import LAM6


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
