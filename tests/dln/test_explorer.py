"""Tests of ``symbreak.dln.explorer`` (moved from test_dln_explorer.py)."""

from __future__ import annotations

import pytest

from symbreak import dln

from .helpers import CORNERS, GRID, _check_view


@pytest.mark.parametrize("N, lb, p", CORNERS)
def test_explorer_at_the_corners_of_the_slider_box(N, lb, p):
    _check_view(N, lb, p)


def test_explorer_on_a_grid_of_the_slider_box():
    for N, lb, p in GRID:
        _check_view(N, lb, p, n_grid=4, n_times=12, compare_flow=False)


def test_explorer_reproduces_the_issue_crashes_without_error():
    for N, p in ((5, 4.0), (6, 4.0), (8, 3.0), (8, 4.0), (6, 3.0)):
        _check_view(N, -0.5, p)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(N=1, log10_beta=0.0, p=2.0), "N"),
        (dict(N=2.5, log10_beta=0.0, p=2.0), "N"),
        (dict(N=3, log10_beta=7.0, p=2.0), "log10_beta"),
        (dict(N=3, log10_beta=float("nan"), p=2.0), "log10_beta"),
        (dict(N=3, log10_beta=0.0, p=0.5), "p"),
        (dict(N=3, log10_beta=0.0, p=100.0), "p"),
        (dict(N=3, log10_beta=0.0, p=2.0, n_grid=2), "n_grid"),
        (dict(N=3, log10_beta=0.0, p=2.0, n_times=10**6), "n_times"),
        (dict(N=3, log10_beta=0.0, p=2.0, starts=[0.0]), "starts"),
        (dict(N=3, log10_beta=0.0, p=2.0, starts=[1e9]), "starts"),
    ],
)
def test_explorer_rejects_bad_input(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        dln.explorer_view(**kwargs)
