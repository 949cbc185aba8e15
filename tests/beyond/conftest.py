"""Fixtures shared by the tests of ``symbreak.beyond``."""

from __future__ import annotations

import pytest

from symbreak import nonlinear as nl


@pytest.fixture(scope="module")
def digits():
    return nl.load_digits_data()
