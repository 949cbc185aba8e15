"""Tests of ``symbreak.dln.flow`` (moved from test_dln.py, test_dln_referee.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from symbreak import dln
from symbreak.rng import make_rng

from .helpers import CASES, _rel


@pytest.mark.parametrize("p, N, d, beta", CASES)
def test_rates_against_the_numerical_jacobian(p, N, d, beta):
    s = dln.schatten_sigma_star(p, N, d, beta)
    rho1, rho_perp = dln.relaxation_rates(p, N, d, beta)
    jac = dln.numerical_jacobian(lambda x: dln.flow_vector_field(x, N=N, beta=beta, p=p), np.full(d, s))
    ev = np.linalg.eigvals(jac)
    assert np.max(np.abs(ev.imag)) < 1e-8 * abs(rho1)
    ev = np.sort(ev.real)
    expected = np.sort([rho1] + [rho_perp] * (d - 1))
    assert _rel(ev, expected) < 1e-9
    # eigenvectors: J·1 = ρ_1·1
    assert _rel(jac @ np.ones(d), rho1 * np.ones(d)) < 1e-9
    # ρ_1 = −N p σ⋆^{p−2/N} for the Schatten energy
    assert abs(rho1 + N * p * s ** (p - 2 / N)) < 1e-12 * abs(rho1)
    # analytic Jacobian of the flow agrees too, and its eigenvalues are the rates to 1e-11
    jac_a = dln.flow_jacobian(np.full(d, s), N=N, beta=beta, p=p)
    assert _rel(jac_a, jac) < 1e-9
    assert _rel(np.sort(np.linalg.eigvalsh(0.5 * (jac_a + jac_a.T))), expected) < 1e-11


def test_singular_value_flows_matches_one_solve_per_start():
    """The batched solve holds every start to the same tolerances as a solve of its own."""
    rng = make_rng(3)
    starts = np.exp(rng.uniform(-2.5, 1.5, (6, 4)))
    t = np.linspace(0.0, 4.0, 81)
    batch = dln.singular_value_flows(starts, t, N=3, beta=0.7, p=2.0)
    assert batch.shape == (6, t.size, 4)
    single = np.stack([dln.singular_value_flow(s0, t, N=3, beta=0.7, p=2.0) for s0 in starts])
    assert np.abs(np.log(batch / single)).max() < 1e-7
    # a coupled energy and the energy-only flow (beta = inf)
    coupled = dln.SpectralEnergy(
        f=lambda x: x**2 / 2,
        df=lambda x: x,
        d2f=lambda x: np.ones_like(x),
        g=lambda x: x + 0.5 * x**2,
        dg=lambda x: 1.0 + x,
        d2g=lambda x: np.ones_like(x),
    )
    for beta, energy in ((2.0, coupled), (np.inf, dln.schatten_energy(1.5))):
        batch = dln.singular_value_flows(starts[:3], t, N=4, beta=beta, energy=energy)
        single = np.stack([dln.singular_value_flow(s0, t, N=4, beta=beta, energy=energy) for s0 in starts[:3]])
        assert np.abs(np.log(batch / single)).max() < 1e-7
    # t = 0 only: the starts themselves
    assert np.array_equal(dln.singular_value_flows(starts, [0.0], N=3, beta=1.0, p=2.0)[:, 0], starts)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"sigma0s": [1.0, 2.0]}, ValueError),
        ({"sigma0s": [[1.0, -2.0]]}, ValueError),
        ({"t_eval": [1.0, 0.5]}, ValueError),
        ({"rtol": 0.0}, ValueError),
    ],
)
def test_singular_value_flows_rejects_bad_input(kwargs, error):
    args = {"sigma0s": [[1.0, 2.0]], "t_eval": [0.0, 1.0], "N": 3, "beta": 1.0, "p": 2.0} | kwargs
    with pytest.raises(error):
        dln.singular_value_flows(args.pop("sigma0s"), args.pop("t_eval"), **args)


@pytest.mark.parametrize("sig0", [[2.0, 1.0], [2.5, 1.2, 0.4]])
def test_scale_ratio_reduction_reproduces_chamber_flow(sig0):
    N, p, beta = 3, 2.0, 1.0
    sig0 = np.array(sig0)
    lam = sig0 ** (1 / N)
    t = np.linspace(0.0, 2.0, 21)

    def rhs(_t, y):
        ud, sd = dln.scale_ratio_velocity(y[:-1], y[-1], N=N, p=p, beta=beta)
        return np.append(ud, sd)

    sol = solve_ivp(
        rhs, (0, 2.0), np.append(lam[:-1] / lam[-1], lam[-1]), method="DOP853", rtol=1e-12, atol=1e-14, t_eval=t
    )
    lam_t = np.column_stack([sol.y[:-1].T * sol.y[-1][:, None], sol.y[-1]])
    full = dln.singular_value_flow(sig0, t, N=N, beta=beta, p=p, rtol=1e-12)
    assert np.abs(lam_t**N / full - 1).max() < 1e-9
