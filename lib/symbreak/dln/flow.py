"""The free-energy flow on the chamber (P-Lemma 2.5): vector field, Jacobian and the singular-value
flows.

Pages: ``book/dln/equilibrium.md``, ``book/dln/index.md``.
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import (
    check_array,
    check_choice,
    check_positive,
    check_tolerance,
    finite_result,
    solve_ivp_bounded,
)
from ._common import _check_beta, _check_depth, _check_sigma
from .energy import _resolve_energy
from .spectral_entropy import _entropy_grad_batched, _entropy_hess_batched, _entropy_log_grad, _entropy_log_hessian

__all__ = ["flow_vector_field", "flow_jacobian", "singular_value_flow", "singular_value_flows", "numerical_jacobian"]

# ---------------------------------------------------------------------------------------------
# the flow on the chamber (Lemma 2.5)
# ---------------------------------------------------------------------------------------------


def _free_energy_grad(sigma, N, beta, energy):
    grad = energy._gradient(sigma)
    if not math.isinf(beta):
        grad = grad - _entropy_grad_batched(sigma, N) / beta
    return grad


def flow_vector_field(sigma, *, N, beta, p=None, energy=None) -> np.ndarray:
    """The vector field ``σ̇_i = −N σ_i^{2−2/N} ∂F_β/∂σ_i`` of Lemma 2.5 / (1.10).

    Parameters
    ----------
    sigma : array_like, shape (..., d)
        Points of the chamber (a batch of points is allowed, e.g. a grid for a phase portrait).
    N : int
        Depth ``≥ 1``.
    beta : float
        Inverse temperature ``> 0``; ``numpy.inf`` drops the entropy (pure energy).
    p, energy
        Either the Schatten exponent ``p ≥ 1`` or a :class:`SpectralEnergy`.

    Returns
    -------
    numpy.ndarray, same shape as ``sigma``
    """
    sigma = check_array("sigma", sigma)
    if sigma.ndim < 1 or sigma.size == 0 or np.any(sigma <= 0):
        raise ValueError("sigma must be a non-empty array with all entries in (0, inf)")
    N = _check_depth(N)
    beta = _check_beta(beta, allow_inf=True)
    energy = _resolve_energy(p, energy)
    return finite_result("flow_vector_field", -N * sigma ** (2.0 - 2.0 / N) * _free_energy_grad(sigma, N, beta, energy))


def flow_jacobian(sigma, *, N, beta, p=None, energy=None) -> np.ndarray:
    """Analytic Jacobian ``∂σ̇_i/∂σ_j`` of the flow (1.10) at one point ``σ`` (shape (d,))."""
    sigma = _check_sigma(sigma)
    N = _check_depth(N)
    beta = _check_beta(beta, allow_inf=True)
    energy = _resolve_energy(p, energy)
    gF = _free_energy_grad(sigma, N, beta, energy)
    hF = energy._hessian(sigma)
    if not math.isinf(beta):
        hF = hF - _entropy_hess_batched(sigma, N) / beta
    pref = N * sigma ** (2.0 - 2.0 / N)
    jac = -pref[:, None] * hF
    jac[np.diag_indices_from(jac)] -= N * (2.0 - 2.0 / N) * sigma ** (1.0 - 2.0 / N) * gF
    return finite_result("flow_jacobian", jac)


def _mu_rhs_and_jac(N, beta, energy):
    """Right-hand side and Jacobian of the flow in ``μ = log λ = (log σ)/N`` (flat-metric variables).

    ``μ̇_i = −σ_i^{1−2/N} ∂E/∂σ_i + σ_i^{−2/N} g_i/β``, ``g_i = ∂S_N/∂ℓ_i`` (``ℓ = log σ = Nμ``).
    """
    entropic = not math.isinf(beta)

    def rhs(_t, mu):
        sigma = np.exp(N * mu)
        out = -(sigma ** (1.0 - 2.0 / N)) * energy._gradient(sigma)
        if entropic:
            out = out + sigma ** (-2.0 / N) * _entropy_log_grad(sigma, N) / beta
        return out

    def jac(_t, mu):
        # mu of shape (..., d): one Jacobian (..., d, d) per point
        sigma = np.exp(N * mu)
        e1 = energy._gradient(sigma)
        e2 = energy._hessian(sigma)
        a = sigma ** (1.0 - 2.0 / N)
        j = -(a[..., :, None] * e2) * (N * sigma)[..., None, :]
        diag = np.arange(sigma.shape[-1])
        j[..., diag, diag] -= (N - 2.0) * a * e1
        if entropic:
            b = sigma ** (-2.0 / N)
            g = _entropy_log_grad(sigma, N)
            j += (b[..., :, None] * _entropy_log_hessian(sigma, N)) * (N / beta)
            j[..., diag, diag] -= 2.0 * b * g / beta
        return j

    return rhs, jac


def _check_flow_args(t_eval, N, beta, p, energy, rtol, atol):
    """The shared arguments of the singular-value flows, validated (tolerances before they reach
    LSODA, which keeps bad state)."""
    t_eval = check_array("t_eval", t_eval, ndim=1)
    if t_eval.size == 0 or np.any(t_eval < 0) or np.any(np.diff(t_eval) < 0):
        raise ValueError("t_eval must be a non-empty, non-decreasing array of times >= 0")
    N = _check_depth(N)
    beta = _check_beta(beta, allow_inf=True)
    energy = _resolve_energy(p, energy)
    return t_eval, N, beta, energy, check_tolerance("rtol", rtol), check_tolerance("atol", atol)


def singular_value_flow(
    sigma0, t_eval, *, N, beta, p=None, energy=None, method: str = "LSODA", rtol: float = 1e-10, atol: float = 1e-12
) -> np.ndarray:
    """Integrate the singular-value flow ``σ̇_i = −N σ_i^{2−2/N} ∂F_β/∂σ_i`` (Lemma 2.5).

    The flow is integrated in ``μ_i = log λ_i = (1/N) log σ_i``: the metric (2.9) is flat in
    ``λ`` (``g = N Σ dλ_i²``) and the logarithm keeps every ``σ_i > 0`` and resolves singular values
    of very different sizes. The entropic force is analytic across ties (it has no ``1/(σ_i − σ_j)``
    singularity), so the integrator needs no small steps where singular values meet; the analytic
    Jacobian is supplied to implicit methods (default LSODA). The permutation symmetry of ``F_β``
    keeps each hyperplane ``σ_i = σ_j`` invariant, so the order of ``sigma0`` is kept.

    Parameters
    ----------
    sigma0 : array_like, shape (d,)
        Initial singular values (positive, any order).
    t_eval : array_like, shape (T,)
        Non-decreasing times ``≥ 0`` (the flow starts at ``t = 0``).
    N : int
        Depth ``≥ 1``.
    beta : float
        Inverse temperature ``> 0`` or ``numpy.inf`` (energy only).
    p, energy
        Schatten exponent ``p ≥ 1`` or a :class:`SpectralEnergy` (exactly one).
    method, rtol, atol
        Passed to :func:`scipy.integrate.solve_ivp` (tolerances apply to ``log λ``).

    Returns
    -------
    numpy.ndarray, shape (T, d)
    """
    sigma0 = _check_sigma(sigma0, "sigma0")
    method = check_choice("method", method, ("LSODA", "Radau", "BDF", "RK45", "RK23", "DOP853"))
    t_eval, N, beta, energy, rtol, atol = _check_flow_args(t_eval, N, beta, p, energy, rtol, atol)
    rhs, jac = _mu_rhs_and_jac(N, beta, energy)
    mu0 = np.log(sigma0) / N
    t_end = float(t_eval[-1])
    if t_end == 0.0:
        return np.tile(sigma0, (t_eval.size, 1))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f0, j0 = rhs(0.0, mu0), jac(0.0, mu0)
    if not (np.all(np.isfinite(f0)) and np.all(np.isfinite(j0))):
        raise ValueError(
            "sigma0 is outside the range where the flow's vector field is representable in "
            f"float64 (it overflows at sigma0 = {sigma0!r})"
        )
    jnorm = float(np.abs(j0).sum(axis=1).max())
    if t_end * jnorm <= 1e-6:
        # a horizon far below the flow's time scale 1/‖J‖ (LSODA cannot step through t_end = 1e-200):
        # second-order Taylor, error O((t‖J‖)² t‖f‖) below round-off of the displacement
        mu = mu0[None, :] + t_eval[:, None] * f0[None, :] + 0.5 * t_eval[:, None] ** 2 * (j0 @ f0)[None, :]
        return np.exp(N * mu)
    with np.errstate(over="ignore", invalid="ignore"):
        mu = solve_ivp_bounded(
            rhs, t_end, mu0, t_eval, method=method, rtol=rtol, atol=atol, jac=jac, what="singular_value_flow"
        )
    out = np.exp(N * mu)
    if not np.all(np.isfinite(out)) or np.any(out <= 0):
        raise ValueError("singular_value_flow: the singular values left the float64 range (sigma0 too extreme)")
    return out


def singular_value_flows(
    sigma0s, t_eval, *, N, beta, p=None, energy=None, rtol: float = 1e-10, atol: float = 1e-12
) -> np.ndarray:
    """:func:`singular_value_flow` from several starts at once: one LSODA solve of the uncoupled system.

    The Jacobian is block diagonal (the analytic one of each start), and LSODA's local error test
    holds every component to ``rtol``/``atol`` (its weighted max-norm), so each trajectory is
    integrated to the same tolerances as alone; the steps are those of the most demanding start.

    Parameters
    ----------
    sigma0s : array_like, shape (B, d)
        Initial singular values of the ``B`` starts (positive).
    t_eval, N, beta, p, energy, rtol, atol
        As in :func:`singular_value_flow` (method LSODA).

    Returns
    -------
    numpy.ndarray, shape (B, T, d)
    """
    sigma0s = check_array("sigma0s", sigma0s, ndim=2)
    if sigma0s.size == 0 or np.any(sigma0s <= 0):
        raise ValueError("sigma0s must be a non-empty (B, d) array with all entries in (0, inf)")
    t_eval, N, beta, energy, rtol, atol = _check_flow_args(t_eval, N, beta, p, energy, rtol, atol)
    rhs, jac = _mu_rhs_and_jac(N, beta, energy)
    mu0 = np.log(sigma0s) / N
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f0, j0 = rhs(0.0, mu0), jac(0.0, mu0)
    jnorm = float(np.abs(j0).sum(axis=-1).max()) if np.all(np.isfinite(j0)) else math.inf
    if t_eval[-1] == 0.0 or not np.all(np.isfinite(f0)) or t_eval[-1] * jnorm <= 1e-6:
        # the start-by-start path handles these (no motion, overflow errors, the Taylor horizon)
        return np.stack(
            [singular_value_flow(s0, t_eval, N=N, beta=beta, energy=energy, rtol=rtol, atol=atol) for s0 in sigma0s]
        )
    with np.errstate(over="ignore", invalid="ignore"):
        return _flow_batch(sigma0s, t_eval, N=N, beta=beta, energy=energy, rtol=rtol, atol=atol)


def _flow_batch(sigma0s, t_eval, *, N, beta, energy, rtol, atol) -> np.ndarray:
    """:func:`singular_value_flow` from several starts ``sigma0s`` (shape (B, d)) in one LSODA solve.

    The B systems are uncoupled: the Jacobian is block diagonal, and LSODA's error test takes the
    weighted max-norm over all components, so every trajectory is held to ``rtol``/``atol`` as in a
    solve of its own, with one solver's overhead instead of B. Returns shape (B, T, d). Internal: the
    caller passes validated, moderate starts and ``t_eval[-1] > 0``.
    """
    from scipy.linalg import block_diag

    sigma0s = np.asarray(sigma0s, dtype=float)
    n_batch, d = sigma0s.shape
    rhs, jac = _mu_rhs_and_jac(N, beta, energy)
    mu = solve_ivp_bounded(
        lambda t, y: rhs(t, y.reshape(n_batch, d)).ravel(),
        float(t_eval[-1]),
        (np.log(sigma0s) / N).ravel(),
        t_eval,
        method="LSODA",
        rtol=rtol,
        atol=atol,
        jac=lambda t, y: block_diag(*jac(t, y.reshape(n_batch, d))),
        what="singular_value_flow",
    )
    out = np.exp(N * mu).reshape(t_eval.size, n_batch, d).transpose(1, 0, 2)
    if not np.all(np.isfinite(out)) or np.any(out <= 0):
        raise ValueError("singular_value_flow: the singular values left the float64 range")
    return out


def numerical_jacobian(fun, x, *, rel_step: float = 1e-3) -> np.ndarray:
    """Jacobian of ``fun: R^d → R^d`` at ``x`` by Richardson-extrapolated central differences.

    Each column combines central differences with steps ``h`` and ``h/2``
    (``(4 D(h/2) − D(h))/3``), error ``O(h⁴)``; ``h = rel_step · max(|x_j|, 1e-8)``.
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {fun!r}")
    x = check_array("x", x, ndim=1)
    rel_step = check_positive("rel_step", rel_step)
    if rel_step >= 1:
        raise ValueError(f"rel_step must lie in (0, 1), got {rel_step!r}")
    d = x.size
    cols = []
    for j in range(d):
        h = rel_step * max(abs(x[j]), 1e-8)

        def central(step):
            e = np.zeros(d)
            e[j] = step
            return (np.asarray(fun(x + e)) - np.asarray(fun(x - e))) / (2.0 * step)

        cols.append((4.0 * central(h / 2.0) - central(h)) / 3.0)
    return finite_result("numerical_jacobian", np.stack(cols, axis=1))
