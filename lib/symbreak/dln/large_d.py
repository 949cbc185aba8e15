"""Large d (P-Sec. 8.3): equilibria of the free energy with many singular values, and a random-matrix
contrast.

Pages: ``book/dln/equilibrium.md``.
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import (
    check_array,
    check_int,
    check_positive,
    finite_result,
)
from ._common import _check_beta, _check_depth, _check_p, _check_sigma
from .spectral_entropy import _entropy_grad_batched, _entropy_hess_batched, entropy

__all__ = ["equilibrium_spectrum", "quarter_circle_density"]

# ---------------------------------------------------------------------------------------------
# large d (Section 8.3): equilibria of the free energy and a random-matrix contrast
# ---------------------------------------------------------------------------------------------


def _ginibre_terms(sigma):
    """Value, gradient, Hessian of ``S_G = ½ Σ_{i<j} log|σ_i² − σ_j²| + ½ Σ_i log σ_i``."""
    d = sigma.size
    s2 = sigma**2
    diff = s2[:, None] - s2[None, :]
    np.fill_diagonal(diff, 1.0)
    iu = np.triu_indices(d, 1)
    val = 0.5 * np.log(np.abs(diff[iu])).sum() + 0.5 * np.log(sigma).sum()
    inv = 1.0 / diff
    np.fill_diagonal(inv, 0.0)
    grad = sigma * inv.sum(axis=1) + 0.5 / sigma
    inv2 = inv**2
    hess = 2.0 * np.outer(sigma, sigma) * inv2
    np.fill_diagonal(hess, 0.0)
    summ = (s2[:, None] + s2[None, :]) * inv2
    np.fill_diagonal(summ, 0.0)
    hess[np.diag_indices(d)] = -summ.sum(axis=1) - 0.5 / s2
    return val, grad, hess


def equilibrium_spectrum(sigma0, *, N, beta, p, interaction: str = "dln", tol: float = 1e-12, max_iter: int = 200):
    """Minimise ``F_β(σ) = E_p(σ) − S(σ)/β`` over the chamber by damped Newton iterations.

    ``interaction="dln"`` uses the DLN entropy ``S_N`` (Theorem 1.2: the minimiser has all
    ``σ_i = σ⋆``). ``interaction="ginibre"`` is the random-matrix contrast: half the log-density of
    the singular values of a real ``(d+1)×d`` Gaussian matrix (the same ½ as in ``S_N``),
    ``S_G = ½ Σ_{i<j} log|σ_i² − σ_j²| + ½ Σ_i log σ_i``, a Coulomb gas whose minimiser spreads out.
    Both free energies are convex (strictly for ``p > 1``), so Newton's method with backtracking
    (keeping ``σ > 0`` and, for the Coulomb gas, the order of ``sigma0``) converges to the unique
    minimiser.

    Returns
    -------
    (numpy.ndarray (d,), dict)
        The minimiser and ``{"iterations", "gradient_norm"}``.
    """
    sigma = _check_sigma(sigma0, "sigma0", min_d=2)
    N = _check_depth(N, minimum=2)
    beta = _check_beta(beta)
    p = _check_p(p)
    tol = check_positive("tol", tol)
    max_iter = check_int("max_iter", max_iter, minimum=1, maximum=100_000)
    if not isinstance(interaction, str) or interaction not in ("dln", "ginibre"):
        raise ValueError(f"interaction must be 'dln' or 'ginibre', got {interaction!r}")
    if interaction == "ginibre":
        sigma = np.sort(sigma)[::-1]
        if np.any(np.diff(sigma) >= 0):
            raise ValueError("sigma0 must have distinct values for interaction='ginibre'")

    def terms(s):
        e = np.sum(s**p) / p
        ge = s ** (p - 1.0)
        he = np.diag((p - 1.0) * s ** (p - 2.0))
        if interaction == "dln":
            sv = entropy(s, N)
            sg = _entropy_grad_batched(s, N)
            sh = _entropy_hess_batched(s, N)
        else:
            sv, sg, sh = _ginibre_terms(s)
        return e - sv / beta, ge - sg / beta, he - sh / beta

    def feasible(s):
        if np.any(s <= 0) or not np.all(np.isfinite(s)):
            return False
        return interaction == "dln" or bool(np.all(np.diff(s) < 0))

    f, g, h = terms(sigma)
    it = 0
    for it in range(1, max_iter + 1):
        h = 0.5 * (h + h.T)
        try:
            step = -np.linalg.solve(h, g)
        except np.linalg.LinAlgError:
            step = -g
        slope = float(g @ step)
        if slope >= 0:
            step, slope = -g, -float(g @ g)
        alpha = 1.0
        while alpha > 1e-12:
            trial = sigma + alpha * step
            if feasible(trial):
                ft, gt, ht = terms(trial)
                if ft <= f + 1e-4 * alpha * slope or abs(ft - f) <= 1e-15 * abs(f):
                    break
            alpha *= 0.5
        else:
            break
        sigma, f, g, h = trial, ft, gt, ht
        if np.max(np.abs(g * sigma)) < tol:
            break
    with np.errstate(over="ignore", invalid="ignore"):
        gnorm = float(np.max(np.abs(g * sigma)))
    finite_result("equilibrium_spectrum", (sigma, gnorm))
    return sigma, {"iterations": it, "gradient_norm": gnorm}


def quarter_circle_density(x, beta0):
    """Limit density of the Coulomb-gas minimiser for ``p = 2``, ``β = β0 d`` (``d → ∞``):
    the quarter-circle law ``ρ(σ) = (2β0/π) √(2/β0 − σ²)`` on ``[0, √(2/β0)]``.

    (Its squares ``x = σ²`` solve ``β0 = PV∫ρ_x(y)/(x − y) dy`` with a hard edge at 0:
    ``ρ_x(x) = (β0/π)√((2/β0 − x)/x)``.)
    """
    beta0 = check_positive("beta0", beta0)
    x = check_array("x", x)
    a = 2.0 / beta0
    return finite_result(
        "quarter_circle_density",
        np.where((x >= 0) & (x <= math.sqrt(a)), 2.0 * beta0 / math.pi * np.sqrt(np.clip(a - x**2, 0, None)), 0.0),
    )
