"""The d = 2 explorer of the equilibrium page: one view's flows, equilibria and rates.

Pages: ``book/dln/equilibrium.md``.
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import (
    check_int,
    check_positive_array,
    check_real,
)
from ._common import _check_p
from .energy import schatten_energy
from .equilibrium import relaxation_rates, schatten_sigma_star
from .exact import scale_time_function, schatten_scale
from .flow import _flow_batch, flow_vector_field

__all__ = ["EXPLORER_BOX", "explorer_view"]

# ---------------------------------------------------------------------------------------------
# the d = 2 explorer: everything one view of the equilibrium page's explorer draws
# ---------------------------------------------------------------------------------------------

#: The explorer's slider box: depth, log10 of the inverse temperature, Schatten exponent.
EXPLORER_BOX = {"N": (2, 8), "log10_beta": (-1.5, 1.5), "p": (1.0, 4.0)}


def explorer_view(N, log10_beta, p, *, n_grid: int = 28, n_times: int = 120, starts=(0.1, 0.5, 1.5, 3.0)) -> dict:
    """Data of one view of the ``d = 2`` explorer: phase portrait, trajectories and the exact scale.

    For ``F_β = E_p − S_N/β`` with ``d = 2``: the vector field (1.10) on an ``n_grid × n_grid`` grid of
    the window ``[0, 2.6σ⋆]²``, four trajectories of :func:`singular_value_flow` up to
    ``t_end`` = the exact arrival time of the diagonal flow from the window's corners to
    ``|(σ/σ⋆)^p − 1| = e^{−2}`` plus ``8/|ρ_⊥|`` (``8/|ρ_1|`` when ``ρ_⊥ = 0``, i.e. ``N = 2``, ``p = 1``),
    and the exact solution on the diagonal (Theorem 1.7, :func:`schatten_scale`) from ``σ(0) = r σ⋆``
    for each ``r`` in ``starts``, up to the latest arrival plus ``6/|ρ_1|``, as ``σ(t)/σ⋆``.

    Parameters
    ----------
    N : int
        Depth, ``2 ≤ N ≤ 64``.
    log10_beta : float
        ``log10 β`` in ``[−6, 6]``.
    p : float
        Schatten exponent ``1 ≤ p ≤ 64``.
    n_grid, n_times : int
        Grid points per axis (4 to 200) and output times per curve (2 to 2000).
    starts : sequence of float
        Initial ``σ(0)/σ⋆`` of the exact curves, each in ``[1e-6, 1e6]``.

    Returns
    -------
    dict
        ``sigma_star``, ``rho1``, ``rho_perp``, ``lim`` (window size), ``grid`` (1-D), ``velocity``
        (``n_grid × n_grid × 2``, rows ``σ_2``, columns ``σ_1``), ``trajectory_starts`` (4 × 2),
        ``trajectories`` (4 × ``n_times`` × 2), ``t_end``, ``scale_times``, ``scale_starts`` and
        ``scale_curves`` (``len(starts)`` × ``n_times``).
    """
    N = check_int("N", N, minimum=2, maximum=64)
    log10_beta = check_real("log10_beta", log10_beta)
    if not -6.0 <= log10_beta <= 6.0:
        raise ValueError(f"log10_beta must be a number in [-6, 6], got {log10_beta!r}")
    p = _check_p(p)
    if p > 64:
        raise ValueError(f"p must lie in [1, 64] for the explorer, got {p!r}")
    n_grid = check_int("n_grid", n_grid, minimum=4, maximum=200)
    n_times = check_int("n_times", n_times, minimum=2, maximum=2000)
    starts = check_positive_array("starts", starts, ndim=1)
    if np.any(starts < 1e-6) or np.any(starts > 1e6):
        raise ValueError("starts must hold ratios sigma(0)/sigma_star in [1e-6, 1e6]")
    beta = 10.0**log10_beta
    s = schatten_sigma_star(p, N, 2, beta)
    rho1, rho_perp = relaxation_rates(p, N, 2, beta)
    lim = 2.6 * s
    grid = np.linspace(0.02 * s, lim, n_grid)
    pts = np.stack(np.meshgrid(grid, grid), axis=-1)
    velocity = flow_vector_field(pts, N=N, beta=beta, p=p)
    ss = s ** (1.0 / N)
    nu = N * p

    def arrival(r):
        # exact time (Theorem 1.7) for the diagonal flow from σ = rσ⋆ to |z − 1| = e^{−2}, z = (σ/σ⋆)^p
        target = ss * (1.0 + math.copysign(math.exp(-2.0), r - 1.0)) ** (1.0 / nu)
        start = ss * r ** (1.0 / N)
        return max(
            0.0,
            float(
                scale_time_function(target, p=p, N=N, d=2, beta=beta)
                - scale_time_function(start, p=p, N=N, d=2, beta=beta)
            ),
        )

    slow = rho_perp if rho_perp < -1e-9 * abs(rho1) else rho1
    traj_starts = np.array([(0.95, 0.02), (0.95, 0.8), (0.3, 0.05), (0.1, 0.08)]) * lim
    # arrival of the slowest start's scale (its geometric mean, the smallest one), then 8 slow e-folds
    t_end = max(arrival(0.02 * 2.6), arrival(0.95 * 2.6)) + 8.0 / abs(slow)
    tt = np.linspace(0.0, t_end, n_times)
    trajectories = _flow_batch(traj_starts, tt, N=N, beta=beta, energy=schatten_energy(p), rtol=1e-8, atol=1e-10)
    ts = np.linspace(0.0, max(arrival(r) for r in starts) + 6.0 / abs(rho1), n_times)
    curves = np.stack([(schatten_scale(ts, r ** (1.0 / N) * ss, p=p, N=N, d=2, beta=beta) / ss) ** N for r in starts])
    return {
        "sigma_star": s,
        "rho1": rho1,
        "rho_perp": rho_perp,
        "lim": lim,
        "grid": grid,
        "velocity": velocity,
        "trajectory_starts": traj_starts,
        "trajectories": trajectories,
        "times": tt,
        "t_end": t_end,
        "scale_times": ts,
        "scale_starts": starts,
        "scale_curves": curves,
    }
