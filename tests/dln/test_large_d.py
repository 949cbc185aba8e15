"""Tests of ``symbreak.dln.large_d`` (moved from test_dln.py)."""

from __future__ import annotations

import math

import numpy as np

from symbreak import dln
from symbreak.rng import make_rng


def test_large_d_equilibrium_is_a_dirac_mass_and_the_coulomb_gas_spreads():
    d, N, p, beta0 = 200, 3, 2.0, 1.0
    beta = beta0 * d
    rng = make_rng(41)
    g = rng.standard_normal((d + 1, d)) / math.sqrt(beta0 * d)
    sigma0 = np.linalg.svd(g, compute_uv=False)
    s = dln.schatten_sigma_star(p, N, d, beta)
    dirac, info = dln.equilibrium_spectrum(sigma0, N=N, beta=beta, p=p, interaction="dln")
    assert np.max(np.abs(dirac / s - 1)) < 1e-10 and info["gradient_norm"] < 1e-10
    spread, info = dln.equilibrium_spectrum(sigma0, N=N, beta=beta, p=p, interaction="ginibre")
    assert info["gradient_norm"] < 1e-10
    # quarter-circle law on [0, √(2/β0)]: compare the empirical CDF with the limit CDF
    x = np.sort(spread)
    a = math.sqrt(2 / beta0)
    grid = np.linspace(0, a, 400)
    dens = dln.quarter_circle_density(grid, beta0)
    cdf = np.concatenate([[0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(grid))])
    emp = np.searchsorted(x, grid, side="right") / d
    assert abs(cdf[-1] - 1) < 1e-4
    assert np.max(np.abs(emp - cdf)) < 0.02
    assert x[-1] / x[0] > 20
