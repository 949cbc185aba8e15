"""Equilibria and relaxation rates (P-Theorems 1.2 and 1.3): σ⋆ and the rates ρ₁, ρ⊥.

Pages: ``book/dln/equilibrium.md``, ``book/dln/index.md``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from ..validation import (
    finite_result,
)
from ._common import _check_beta, _check_d, _check_depth, _check_p, _kappa
from .energy import SpectralEnergy

__all__ = ["schatten_sigma_star", "sigma_star", "relaxation_rates", "relaxation_rates_general"]

# ---------------------------------------------------------------------------------------------
# equilibria and rates (Theorems 1.2 and 1.3)
# ---------------------------------------------------------------------------------------------


def schatten_sigma_star(p, N, d, beta) -> float:
    """Equilibrium ``σ⋆`` of ``F_β = E_p − S_N/β`` (Theorem 1.2): the root of the balance equation
    (1.12), ``σ⋆^{p−1} = (d−1)(1 − 1/N)/(2βσ⋆)``, i.e. ``σ⋆^p = (d−1)(1 − 1/N)/(2β)``.

    Needs ``N ≥ 2`` and ``d ≥ 2`` (for ``N = 1`` or ``d = 1`` the entropy vanishes and ``σ⋆ = 0``).
    For ``p = 1`` and ``(N, d) = (2, 2)`` the equilibrium is not unique (a whole line, since
    ``S_2 = ½ log(σ_1 + σ_2)``); ``σ⋆(1, 1)`` is one of them.
    """
    p = _check_p(p)
    N = _check_depth(N, allow_inf=True, minimum=2)
    d = _check_d(d)
    beta = _check_beta(beta)
    base = (d - 1) * _kappa(N) / (2.0 * beta)
    if math.isfinite(base) and base > 0:
        return float(base ** (1.0 / p))
    log_s = (math.log((d - 1) * _kappa(N)) - math.log(2.0) - math.log(beta)) / p  # beta = 5e-324: no overflow
    if log_s >= math.log(np.finfo(float).max):
        raise ValueError(
            f"sigma_star = ((d-1)(1-1/N)/(2 beta))^(1/p) exceeds the float64 range (beta = {beta!r} too small)"
        )
    return float(math.exp(log_s))


def sigma_star(energy: SpectralEnergy, N, d, beta) -> float:
    """Root ``σ⋆ > 0`` of the balance equation (1.12) for a general spectral energy:
    ``g'(d f(σ)) f'(σ) = (d − 1)(1 − 1/N)/(2βσ)`` (unique under the standing assumptions, Lemma 6.3).
    """
    if not isinstance(energy, SpectralEnergy):
        raise ValueError(f"energy must be a SpectralEnergy, got {type(energy).__name__}")
    N = _check_depth(N, allow_inf=True, minimum=2)
    d = _check_d(d)
    beta = _check_beta(beta)
    rhs_c = (d - 1) * _kappa(N) / (2.0 * beta)

    def bal(logs):
        s = math.exp(logs)
        lhs = float(np.asarray(energy.dg(np.asarray(d * energy.f(np.asarray(s)))))) * float(energy.df(np.asarray(s)))
        return s * lhs - rhs_c

    lo, hi = -1.0, 1.0
    for _ in range(200):
        if bal(lo) < 0:
            break
        lo -= 2.0
    for _ in range(200):
        if bal(hi) > 0:
            break
        hi += 2.0
    if not (bal(lo) < 0 < bal(hi)):
        raise ValueError("the balance equation (1.12) has no sign change: check the energy's assumptions")
    return finite_result(
        "sigma_star", float(math.exp(optimize.brentq(bal, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)))
    )


def _rates_from(s, h1, h2, N, d, beta):
    kappa = _kappa(N)
    pref = N * s ** (2.0 - 2.0 / N)
    rho1 = -pref * (h1 + (d - 1) * h2) - N * s ** (-2.0 / N) * (d - 1) * kappa / (2.0 * beta)
    rho_perp = -pref * (h1 - h2) - N * s ** (-2.0 / N) * (2 * d - 3 - 3 * (d - 1) / N + d / N**2) / (6.0 * beta)
    return float(rho1), float(rho_perp)


def relaxation_rates(p, N, d, beta):
    """Eigenvalues ``(ρ_1, ρ_⊥)`` of the linearised flow at ``σ⋆(1,…,1)`` (Theorem 1.3), Schatten energy.

    ``ρ_1 = −N σ⋆^{2−2/N} θ_1(E) − N σ⋆^{−2/N} (d−1)(1 − 1/N)/(2β)`` on ``(1,…,1)`` and
    ``ρ_⊥ = −N σ⋆^{2−2/N} θ_⊥(E) − N σ⋆^{−2/N} (2d − 3 − 3(d−1)/N + d/N²)/(6β)`` (multiplicity ``d−1``)
    with ``θ_1(E) = θ_⊥(E) = (p − 1) σ⋆^{p−2}`` for ``E_p``; in particular ``ρ_1 = −N p σ⋆^{p−2/N}``.
    """
    p = _check_p(p)
    N = _check_depth(N, minimum=2)
    d = _check_d(d)
    beta = _check_beta(beta)
    s = schatten_sigma_star(p, N, d, beta)
    return finite_result("relaxation_rates", _rates_from(s, (p - 1.0) * s ** (p - 2.0), 0.0, N, d, beta))


def relaxation_rates_general(energy: SpectralEnergy, N, d, beta):
    """``(ρ_1, ρ_⊥)`` of Theorem 1.3 for a general spectral energy (``h_1``, ``h_2`` from its Hessian)."""
    N = _check_depth(N, minimum=2)
    d = _check_d(d)
    if d > 10**6:
        raise ValueError(f"d must be <= 10**6 here (the Hessian is evaluated at d equal singular values), got {d}")
    beta = _check_beta(beta)
    s = sigma_star(energy, N, d, beta)
    h = energy._hessian(np.full(d, s))
    return finite_result("relaxation_rates_general", _rates_from(s, float(h[0, 0]), float(h[0, 1]), N, d, beta))
