"""Tests of ``symbreak.dln.energy`` (moved from test_dln.py)."""

from __future__ import annotations

import numpy as np

from symbreak import dln

from .helpers import _rel


def test_rates_for_a_general_spectral_energy():
    """g(x) = x + x²/2 couples the singular values (h_2 ≠ 0): Theorem 1.3 with θ_1 ≠ θ_⊥."""
    base = dln.schatten_energy(2.0)
    energy = dln.SpectralEnergy(
        f=base.f,
        df=base.df,
        d2f=base.d2f,
        g=lambda x: x + 0.5 * x**2,
        dg=lambda x: 1.0 + x,
        d2g=lambda x: np.ones_like(x),
    )
    N, d, beta = 3, 4, 2.0
    s = dln.sigma_star(energy, N, d, beta)
    assert abs((1 + d * s**2 / 2) * s - (d - 1) * (1 - 1 / N) / (2 * beta * s)) < 1e-12
    rho1, rho_perp = dln.relaxation_rates_general(energy, N, d, beta)
    jac = dln.numerical_jacobian(lambda x: dln.flow_vector_field(x, N=N, beta=beta, energy=energy), np.full(d, s))
    ev = np.sort(np.linalg.eigvals(jac).real)
    assert _rel(ev, np.sort([rho1] + [rho_perp] * (d - 1))) < 1e-6
