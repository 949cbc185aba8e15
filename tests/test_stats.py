"""Tests of symbreak.stats."""

from __future__ import annotations

import numpy as np
import pytest

from symbreak.claims import Ledger
from symbreak.rng import make_rng
from symbreak.stats import standard_error


def test_standard_error_is_the_spread_of_the_mean_over_replicas():
    # an independent check: the mean of n draws of N(0, 1) has standard deviation 1/sqrt(n)
    x = make_rng(3).standard_normal((20_000, 16))
    se = standard_error(x, axis=1)
    assert abs(se.mean() - 0.25) < 0.005
    np.testing.assert_allclose(standard_error(x.T), se)


def test_the_ledger_helper_is_the_same_function():
    x = make_rng(4).standard_normal((5, 3))
    np.testing.assert_array_equal(Ledger.se(x), standard_error(x))


@pytest.mark.parametrize("values", [[1.0], 2.0, np.zeros((1, 4))])
def test_fewer_than_two_replicas_is_an_error(values):
    with pytest.raises(ValueError, match="at least two replicas"):
        standard_error(values)
