"""The equilibrium page's explorer: ``dln.explorer_view`` over its whole slider box."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from symbreak import dln

BOX = dln.EXPLORER_BOX
CORNERS = list(itertools.product(BOX["N"], BOX["log10_beta"], BOX["p"]))
GRID = [
    v
    for v in itertools.product((2, 3, 5, 6, 8), (-0.5, 0.5), (1.0, 2.25, 3.0, 4.0))
    if v[0] in (3, 6) or v[2] in (2.25, 3.0)
]


def _check_view(N, lb, p, n_grid=8, n_times=40, compare_flow=True):
    v = dln.explorer_view(N, lb, p, n_grid=n_grid, n_times=n_times)
    beta = 10.0**lb
    s = v["sigma_star"]
    assert s == pytest.approx(dln.schatten_sigma_star(p, N, 2, beta), rel=1e-15)
    for key in ("velocity", "trajectories", "scale_curves", "scale_times", "times"):
        assert np.all(np.isfinite(v[key])), key
    pts = np.stack(np.meshgrid(v["grid"], v["grid"]), axis=-1)
    assert np.array_equal(v["velocity"], dln.flow_vector_field(pts, N=N, beta=beta, p=p))
    ends = v["trajectories"][:, -1, :]
    if (N, p) == (2, 1.0):  # a line of equilibria σ1 + σ2 = 2σ⋆ (rho_perp = 0)
        assert v["rho_perp"] == pytest.approx(0.0, abs=1e-12 * abs(v["rho1"]))
        assert np.max(np.abs(ends.sum(axis=1) / (2 * s) - 1)) < 1e-3
    else:
        assert np.max(np.abs(ends / s - 1)) < 0.05
    curves = v["scale_curves"]
    assert np.allclose(curves[:, 0], v["scale_starts"], rtol=1e-14)
    assert np.max(np.abs(curves[:, -1] - 1)) < 1e-2
    if not compare_flow:
        return v
    # the exact curves are the d = 2 flow on the diagonal
    t = v["scale_times"][:: max(1, n_times // 5)]
    for r, curve in zip(v["scale_starts"], curves):
        flow = dln.singular_value_flow(np.full(2, r * s), t, N=N, beta=beta, p=p, rtol=1e-12, atol=1e-14)
        assert np.max(np.abs(flow[:, 0] / s - curve[:: max(1, n_times // 5)]) / curve[:: max(1, n_times // 5)]) < 1e-8
    return v


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
