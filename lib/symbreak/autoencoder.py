"""Scale drift in undercomplete linear autoencoders.

The mathematics and the simulations of the chapter on F. Pashakhanloo and J. A. Zavatone-Veth,
*Broken scale symmetries in undercomplete linear autoencoders* (arXiv:2610.03640). Equation
numbers (A.15, B.94, C.52, D.21, E.13, ...) refer to that paper.

A linear autoencoder ``f(x) = W U x`` with encoder ``U`` (``k×d``) and decoder ``W`` (``d×k``),
``k < d``, trained on zero-mean data with covariance ``Σ = diag(λ_1 ≥ … ≥ λ_d)``, has the
``GL(k)`` symmetry ``(W, U) ↦ (W A, A⁻¹ U)`` and the Noether charge ``Q = WᵀW − UUᵀ`` (Eq. 2).
On the PCA manifold ``(W, U) = (Pᵀ S^{1/2}, S^{-1/2} P)`` SGD makes ``Q`` grow in the positive
semi-definite cone (A.26); on the slow time ``τ = t η²/B`` the scales follow the Lambert-W law
(Eq. 6 / C.52) until the edge of stability stops them at a common ceiling (C.81).

Contents
--------
Spectra and rates
    :func:`geometric_spectrum`, :func:`growth_rates`, :func:`charge_drift_matrix`.
Effective dynamics (App. C)
    :func:`lambert_scale`, :func:`sqrt_scale`, :func:`lambert_time`, :func:`scale_flow`.
Finite-step corrections (the book's extension, not in the paper)
    :func:`drift_correction`, :func:`corrected_scale`, :func:`off_manifold_fluctuations`,
    :func:`expected_charge_increment`.
Hessian (App. B) and the edge of stability (App. C.5)
    :func:`pca_point`, :func:`pca_hessian_eigenvalues`, :func:`hessian_lambda_max`,
    :func:`hessian_trace`, :func:`trace_minimizing_scale`, :func:`overcomplete_point`,
    :func:`overcomplete_hessian_eigenvalues`, :func:`autograd_hessian`, :func:`eos_ceiling`,
    :func:`fit_kappa`, :func:`saturation_scale`.
Batch sharpness (App. D)
    :func:`modified_batch_sharpness`, :func:`batch_sharpness_monte_carlo`.
Charges, gradients and flows (App. A, E)
    :func:`noether_charge`, :func:`minibatch_gradients`, :func:`sgd_step`,
    :func:`charge_increment`, :func:`charge_increments_along_sgd`, :func:`gradient_flow`,
    :func:`population_loss`, :func:`sample_gradients`, :func:`neuron_balance_autograd`,
    :func:`residual_split`.
Simulation
    :func:`simulate_sgd`, :func:`simulate_sgd_grid`, :class:`SGDResult`. Linear networks use
    exact Wishart minibatch covariances (:class:`symbreak.engine.WishartBlockSampler`) with the
    learning rate folded into the draw; seeds and ``(η, B)`` grids run as one batched ensemble on
    two threads; divergence raises :class:`symbreak.engine.DivergenceError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.special import wrightomega

from .engine import (
    Configuration,
    TorchWishartBlockSampler,
    WishartBlockSampler,
    _bartlett_kernel,
    _compiled,
    check_divergence,
    fill_normals,
    record_steps,
    replica_streams,
    run_ensemble,
)
from .rng import make_rng
from .validation import (
    MAX_DRAWS,
    MAX_ODE_EVALUATIONS,
    MAX_STEPS,
    check_array,
    check_choice,
    check_int,
    check_invertible,
    check_nonnegative,
    check_positive,
    check_positive_array,
    check_symmetric_positive_definite,
    check_tolerance,
    finite_result,
    solve_ivp_bounded,
)

__all__ = [
    "geometric_spectrum",
    "growth_rates",
    "charge_drift_matrix",
    "lambert_scale",
    "sqrt_scale",
    "lambert_time",
    "scale_flow",
    "gl_flow_drift",
    "gl_flow",
    "polar_rotation",
    "charge_noise_std",
    "simulate_sgd_variants",
    "EXPLORER_BOX",
    "explorer_run",
    "explorer_runs",
    "drift_correction",
    "corrected_scale",
    "off_manifold_fluctuations",
    "pca_point",
    "pca_hessian_eigenvalues",
    "hessian_lambda_max",
    "hessian_trace",
    "trace_minimizing_scale",
    "overcomplete_point",
    "overcomplete_hessian_eigenvalues",
    "autograd_hessian",
    "eos_ceiling",
    "fit_kappa",
    "gain_noise_variance",
    "gain_stability_thresholds",
    "ReducedEdgeResult",
    "eos_reduced_map",
    "plateau_kappa",
    "eos_reduced_kappa",
    "modified_batch_sharpness",
    "batch_sharpness_monte_carlo",
    "noether_charge",
    "minibatch_gradients",
    "sgd_step",
    "charge_increment",
    "expected_charge_increment",
    "charge_increments_along_sgd",
    "saturation_scale",
    "gradient_flow",
    "gradient_flow_horizon",
    "population_loss",
    "sample_gradients",
    "neuron_balance_autograd",
    "residual_split",
    "SGDResult",
    "simulate_sgd",
    "simulate_sgd_grid",
    "DIVERGENCE_LIMIT",
    "GL_FLOW_MAX_TAU",
]

#: Largest dimension or width accepted (matrices of this size already need gigabytes).
_MAX_DIM = 100_000

#: A replica whose largest weight exceeds this (or is not finite) has diverged.
DIVERGENCE_LIMIT = 1e6

#: Longest slow time :func:`gl_flow` integrates (about a second of work per decade beyond 1e8).
GL_FLOW_MAX_TAU = 1e10


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------
def _spectrum(lambdas) -> np.ndarray:
    """A 1-D array of positive eigenvalues of Σ sorted in non-increasing order."""
    lam = check_positive_array("lambdas", lambdas, ndim=1)
    if np.any(np.diff(lam) > 0):
        raise ValueError("lambdas must be sorted in non-increasing order (λ_1 ≥ λ_2 ≥ … ≥ λ_d)")
    return lam


def _undercomplete_k(k, d: int) -> int:
    """``k`` in ``[1, d − 1]``: the formulas of the paper are for undercomplete autoencoders."""
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool) and not 1 <= int(k) <= d - 1:
        raise ValueError(f"k must be an integer in [1, {d - 1}] (undercomplete, k < d = {d}) for this formula, got {k}")
    return check_int("k", k, minimum=1, maximum=d - 1)


def _scales(s, k: int) -> np.ndarray:
    s = check_positive_array("s", np.atleast_1d(check_array("s", s)), ndim=1)
    if s.size == 1 and k > 1:
        s = np.full(k, s[0])
    if s.size != k:
        raise ValueError(f"s must have k = {k} entries (or be a scalar), got {s.size}")
    return s


def _check_decoder_encoder(W, U, d: int, *, names=("W", "U")):
    """Validate a decoder ``W`` (d, k) and an encoder ``U`` (k, d) of matching width."""
    W = check_array(names[0], W, ndim=2)
    if W.shape[0] != d:
        raise ValueError(f"{names[0]} must have d = {d} rows, got shape {W.shape}")
    U = check_array(names[1], U, shape=(W.shape[1], d))
    return W, U


def _check_pair(W, U, names=("W", "U"), d: int | None = None):
    """A decoder stack ``W`` (..., d, k) and an encoder stack ``U`` (..., k, d) of matching shapes."""
    W = check_array(names[0], W)
    U = check_array(names[1], U)
    if W.ndim < 2 or U.ndim < 2 or W.shape[-1] != U.shape[-2] or W.shape[-2] != U.shape[-1] or W.size == 0:
        raise ValueError(
            f"{names[0]} must have shape (..., d, k) and {names[1]} shape (..., k, d), got {W.shape} and {U.shape}"
        )
    if d is not None and W.shape[-2] != d:
        raise ValueError(f"{names[0]} must have d = {d} rows (one per eigenvalue in lambdas), got shape {W.shape}")
    return W, U


def _check_sigma_hat(sigma_hat, d: int) -> np.ndarray:
    sh = check_array("sigma_hat", sigma_hat)
    if sh.ndim < 2 or sh.shape[-2:] != (d, d):
        raise ValueError(f"sigma_hat must have shape (..., {d}, {d}), got {sh.shape}")
    return sh


def _dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be numpy.float64 or numpy.float32, got {dt}")
    return dt


# --------------------------------------------------------------------------------------------
# spectra and rates
# --------------------------------------------------------------------------------------------
def geometric_spectrum(d: int, first: float = 12.0, last: float = 0.18) -> np.ndarray:
    """Geometrically spaced covariance eigenvalues of App. F.

    ``λ_i = first · (last/first)^((i−1)/(d−1))``, ``i = 1 … d``; ``first = 12``, ``last = 0.18`` in
    every experiment of the paper.

    Raises
    ------
    ValueError
        If ``d < 2``, a value is not positive, or ``last > first`` (the spectrum must be sorted).
    """
    d = check_int("d", d, minimum=2, maximum=_MAX_DIM)
    first = check_positive("first", first)
    last = check_positive("last", last)
    if last > first:
        raise ValueError(f"last must not exceed first (a non-increasing spectrum), got first={first}, last={last}")
    return first * (last / first) ** (np.arange(d) / (d - 1))


def growth_rates(lambdas, k: int) -> np.ndarray:
    """Growth rates ``c_a = λ_a Σ_{j>k} λ_j``, ``a = 1 … k`` (C.54, Gaussian data).

    They are the diagonal of ``C = E[‖x_⊥‖² x_∥ x_∥ᵀ]`` in the eigenbasis of ``Σ``: for Gaussian data
    ``x_∥`` and ``x_⊥`` are independent, so ``C = (Σ_{j>k} λ_j) Λ_+``.
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    return finite_result("growth_rates", lam[:k] * lam[k:].sum())


def charge_drift_matrix(lambdas, k: int) -> np.ndarray:
    """The matrix ``C = E[‖x_⊥‖² x_∥ x_∥ᵀ]`` of Eq. 5 for Gaussian data, ``diag(c_1, …, c_k)``."""
    return np.diag(growth_rates(lambdas, k))


# --------------------------------------------------------------------------------------------
# effective dynamics (App. C)
# --------------------------------------------------------------------------------------------
def _broadcast_positive(name, value, *, allow_zero=False):
    arr = check_array(name, value)
    if allow_zero and np.any(arr < 0):
        raise ValueError(f"{name} must lie in [0, inf), got min {arr.min()!r}")
    if not allow_zero and np.any(arr <= 0):
        raise ValueError(f"{name} must lie in (0, inf), got min {arr.min()!r}")
    return arr


def lambert_scale(s0, c, tau):
    """Scale ``s(τ)`` under the effective flow: ``s = sqrt(W[s0² exp(s0² + 2cτ)])`` (Eq. 6 / C.52).

    ``W`` is the principal branch of the Lambert W function. The argument overflows for moderate
    ``cτ``, so the formula is evaluated in log space: ``W(e^z)`` with
    ``z = 2 log s0 + s0² + 2cτ`` is the Wright omega function ``ω(z)``, the solution of
    ``ω + log ω = z``; ``scipy.special.wrightomega`` is polished by one Newton step on that
    equation. Relative error below ``1e-12`` and finite for every ``τ`` in ``[0, 1e12]``.

    Parameters
    ----------
    s0 : array_like
        Initial scale ``s(0) > 0``.
    c : array_like
        Growth rate ``c ≥ 0`` (e.g. :func:`growth_rates`).
    tau : array_like
        Slow time ``τ = t η²/B ≥ 0``.

    Returns
    -------
    numpy.ndarray or float
        ``s(τ)``, broadcast over the three arguments. It solves the implicit equation (C.49)
        ``s²/2 + log s = s0²/2 + log s0 + cτ``.
    """
    s0 = _broadcast_positive("s0", s0)
    c = _broadcast_positive("c", c, allow_zero=True)
    tau = _broadcast_positive("tau", tau, allow_zero=True)
    s0, c, tau = (np.array(a, dtype=float) for a in np.broadcast_arrays(s0, c, tau))
    with np.errstate(divide="ignore"):
        log_s2 = 2.0 * np.log(s0)
        log_ct = np.log(c) + np.log(tau)  # −inf where cτ = 0
    # s² ≥ max(s0², 2cτ) − 1500: past 1e16 the log in (C.49) is a relative 1e-13 correction, and
    # s0² or cτ may overflow; there s² is computed in log space (below)
    big = (log_s2 > math.log(1e16)) | (log_ct > math.log(1e16))
    s = np.empty_like(s0)
    with np.errstate(over="ignore"):
        z = np.asarray(log_s2 + s0 * s0 + 2.0 * c * tau, dtype=float)[~big]
    out = np.empty_like(z)
    tiny = z < -500.0  # W(x) = x (1 − x + …) with x = e^z < 1e-217: s = e^{z/2} to full precision
    out[tiny] = np.exp(0.5 * z[tiny])
    zz = z[~tiny]
    w = np.asarray(wrightomega(zz), dtype=float)
    w = w - (w + np.log(w) - zz) * w / (w + 1.0)  # Newton on w + log w = z
    out[~tiny] = np.sqrt(w)
    s[~big] = out
    if np.any(big):
        # s² − s0² + log(s²/s0²) = 2cτ: log s² = log(s0² + 2cτ) + log1p(−log(s²/s0²)/(s0² + 2cτ))
        l0, l1 = log_s2[big], math.log(2.0) + log_ct[big]  # log s0², log 2cτ
        la = np.logaddexp(l0, l1)
        corr = la - l0  # log(s²/s0²) at the first estimate; at most ~1500
        # s = s_ref · exp(½ log(s²/s_ref²)) with s_ref the larger of s0 and sqrt(2cτ): a small exponent,
        # so no digits are lost to exp of a large logarithm
        s0_ref = l0 >= l1
        rel = np.log1p(np.exp(-np.abs(l1 - l0))) + np.log1p(-corr * np.exp(-la))
        with np.errstate(over="ignore"):
            ref = np.where(s0_ref, s0[big], math.sqrt(2.0) * np.sqrt(c[big]) * np.sqrt(tau[big]))
            sb = ref * np.exp(0.5 * rel)
        if not np.all(np.isfinite(sb)):
            raise ValueError("lambert_scale: s(tau) exceeds the float64 range (s0 or c*tau too large)")
        s[big] = sb
    return float(s) if s.ndim == 0 else s


def sqrt_scale(s0, c, tau):
    """The alternative effective model of App. C.4: ``s(τ) = sqrt(s0² + 2cτ)`` (C.74).

    It comes from the dynamics of ``WᵀW`` alone (C.71) and agrees with :func:`lambert_scale` only
    at long times, ``s ~ sqrt(2cτ)`` (C.53).
    """
    s0 = _broadcast_positive("s0", s0)
    c = _broadcast_positive("c", c, allow_zero=True)
    tau = _broadcast_positive("tau", tau, allow_zero=True)
    with np.errstate(over="ignore"):
        s = np.hypot(s0, math.sqrt(2.0) * np.sqrt(c) * np.sqrt(tau))  # sqrt(s0² + 2cτ), no overflow of s0²
    return finite_result("sqrt_scale", float(s) if s.ndim == 0 else s)


def lambert_time(s, s0, c):
    """Slow time at which the Lambert-W flow started at ``s0`` reaches the scale ``s`` (from C.49).

    ``τ = (s² − s0² + 2 log(s/s0)) / (2c)``.
    """
    s = _broadcast_positive("s", s)
    s0 = _broadcast_positive("s0", s0)
    c = _broadcast_positive("c", c)
    with np.errstate(over="ignore", invalid="ignore"):
        tau = ((s - s0) * (s + s0) + 2.0 * np.log(s / s0)) / (2.0 * c)
    if not np.all(np.isfinite(tau)):
        raise ValueError(
            "lambert_time: tau = (s² − s0² + 2 log(s/s0))/(2c) exceeds the float64 range "
            "(s or s0 too large, or c too small)"
        )
    return float(tau) if np.ndim(tau) == 0 else tau


def drift_correction(lambdas, k: int, s, eta: float) -> np.ndarray:
    """Relative finite-``η`` excess ``ε_a`` of the mean charge drift on the PCA manifold.

    *Not in the paper: the book's first-order extension of the effective model (C.32–C.37).* SGD
    does not sit exactly on the manifold: the minibatch noise ``−X_⊥X_∥ᵀA^{-T}/B`` kicks the
    out-of-subspace coordinates ``(δW_⊥, δU_⊥)``, which relax with the Hessian blocks
    ``H_aj = [[λ_a/s_a, −λ_j], [−λ_j, λ_j s_a]]`` (B.91). For ``S = diag(s)`` each pair
    ``(a, j)``, ``a ≤ k < j``, is an independent linear process
    ``ξ ← (I − ηH_aj) ξ + η n``, ``n = (n_1, 0)``, ``Var n_1 = λ_aλ_j/(B s_a)``, whose stationary
    covariance ``Ξ_aj = (I − ηH)Ξ(I − ηH)ᵀ + η² Var n`` is of order ``η/B``. The population gradient
    ``H_aj ξ`` then adds ``η² Σ_j [(HΞH)_11 − (HΞH)_22]`` to ``E[ΔQ_aa]`` (the ``(1 + 1/B)`` terms
    of :func:`expected_charge_increment`), against the leading ``η² c_a/(B s_a)``; the ratio
    ``ε_a`` is independent of ``B`` and of order ``η λ``.

    Returns
    -------
    numpy.ndarray, shape (k,)
        ``ε_a``, so that ``d(s_a − 1/s_a)/dτ = (c_a/s_a)(1 + ε_a)``.
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    s = _scales(s, k)
    eta = check_positive("eta", eta)
    _check_gap(lam, k)
    H, xi = _perp_lyapunov(lam, k, s, eta)
    hxh = H @ xi @ H
    excess = eta**2 * np.sum(hxh[..., 0, 0] - hxh[..., 1, 1], axis=1)
    lead = eta**2 * growth_rates(lam, k) / s
    return finite_result("drift_correction", excess / lead)


def _perp_lyapunov(lam, k, s, eta):
    """Out-of-subspace Hessian blocks ``H_aj`` and stationary covariances ``Ξ_aj`` for ``B = 1``."""
    return _pair_lyapunov(lam[:k], s, lam[k:], eta)


def _pair_lyapunov(la, s, lm, eta):
    """Blocks ``H = [[λ_a/s_a, −λ_j], [−λ_j, λ_j s_a]]`` and the stationary covariances ``Ξ`` of
    ``ξ ← (I − ηH)ξ + η n``, ``Var n_1 = λ_aλ_j/s_a`` (``B = 1``), for every entry ``a`` of ``la``, ``s``
    (shape ``(n,)``) and every ``λ_j`` of ``lm``: arrays of shape ``(n, len(lm), 2, 2)``."""
    lp, lm = la[:, None], lm[None, :]
    sa = s[:, None]
    H = np.empty((la.size, lm.size, 2, 2))
    H[..., 0, 0] = lp / sa
    H[..., 0, 1] = H[..., 1, 0] = -lm
    H[..., 1, 1] = lm * sa
    mu_max = np.linalg.eigvalsh(H).max()
    if eta * mu_max >= 2.0:
        raise ValueError(
            f"eta = {eta:.4g} is past the stability edge of the out-of-subspace modes: "
            f"eta * mu_max = {eta * mu_max:.4g} >= 2 (eta must be < {2.0 / mu_max:.4g})"
        )
    A = np.eye(2) - eta * H
    kron = np.einsum("...ij,...kl->...ikjl", A, A).reshape(la.size, lm.size, 4, 4)
    rhs = np.zeros((la.size, lm.size, 4))
    rhs[..., 0] = eta**2 * (lp * lm / sa)
    xi = np.linalg.solve(np.eye(4) - kron, rhs[..., None])[..., 0].reshape(la.size, lm.size, 2, 2)
    return H, xi


def _check_gap(lam, k):
    """The out-of-subspace modes relax only if ``λ_k > λ_{k+1}`` (a gap at ``k``): at a tie the
    Hessian block ``H_aj`` has a zero eigenvalue and the fluctuations have no stationary state."""
    if not lam[k - 1] > lam[k] * (1.0 + 1e-12):
        raise ValueError(
            f"lambdas must have a gap at k = {k} (lambda_k > lambda_(k+1), got "
            f"{lam[k - 1]:.6g} and {lam[k]:.6g}): with tied eigenvalues across the gap the "
            "out-of-subspace modes do not relax and the finite-eta correction is undefined"
        )


def off_manifold_fluctuations(lambdas, k: int, s, eta: float, batch_size: int):
    """Stationary ``E‖W_⊥‖_F²`` and ``E‖U_⊥‖_F²`` of SGD around the PCA point ``S = diag(s)``.

    The linearised out-of-subspace dynamics of :func:`drift_correction` (the book's extension):
    both are of order ``η/B`` (C.18), so the iterate stays within ``O(sqrt(η/B))`` of the manifold.
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    s = _scales(s, k)
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1)
    _check_gap(lam, k)
    _, xi = _perp_lyapunov(lam, k, s, eta)
    return finite_result("off_manifold_fluctuations", (float(xi[..., 0, 0].sum() / b), float(xi[..., 1, 1].sum() / b)))


def corrected_scale(lambdas, k: int, eta: float, taus, s0=1.0, *, rtol: float = 1e-9) -> np.ndarray:
    """Scales under the effective flow with the finite-``η`` correction of :func:`drift_correction`.

    *The book's extension, not in the paper.* Integrates
    ``ds_a/dτ = (c_a/s_a)(1 + ε_a(s_a; η)) / (1 + 1/s_a²)`` (commuting case, Gaussian data);
    ``η → 0`` gives back :func:`lambert_scale`.

    Returns
    -------
    numpy.ndarray, shape (len(taus), k)
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    eta = check_positive("eta", eta)
    rtol = check_tolerance("rtol", rtol)
    _check_gap(lam, k)
    c = growth_rates(lam, k)
    s0 = _scales(s0, k)
    taus = check_array("taus", taus, ndim=1)
    if taus.size == 0 or np.any(taus < 0) or np.any(np.diff(taus) < 0):
        raise ValueError("taus must be a non-empty, non-decreasing array of slow times >= 0")

    def rhs(_t, s):
        return c / s * (1.0 + drift_correction(lam, k, s, eta)) / (1.0 + 1.0 / s**2)

    return solve_ivp_bounded(
        rhs, float(taus[-1]), s0, taus, method="DOP853", rtol=rtol, atol=1e-12, what="corrected_scale"
    )


def _commuting_scale_flow(S0, C_hat, ex, taus):
    """The closed form for commuting ``S(0)`` and ``C = 2^ex Ĉ``: in a common eigenbasis every mode
    follows :func:`lambert_scale` (Eq. 6). ``None`` when they do not commute (to round-off)."""
    s_max = np.linalg.eigvalsh(S0).max()
    # a generic combination of two commuting symmetric matrices has their common eigenvectors
    _, v = np.linalg.eigh(S0 / s_max + (1.0 / math.pi) * C_hat)
    s_d, c_d = v.T @ S0 @ v, v.T @ C_hat @ v
    off = ~np.eye(S0.shape[0], dtype=bool)
    if np.abs(s_d[off]).max(initial=0.0) > 1e-13 * s_max or np.abs(c_d[off]).max(initial=0.0) > 1e-13:
        return None
    c = np.ldexp(np.maximum(np.diag(c_d), 0.0), ex)
    s = lambert_scale(np.diag(s_d)[None, :], c[None, :], taus[:, None])
    return np.einsum("ij,tj,kj->tik", v, s, v)


def scale_flow(S0, C, taus, *, rtol: float = 1e-10, atol: float = 1e-12) -> np.ndarray:
    """Integrate the matrix effective dynamics (C.37) ``d/dτ (S − S⁻¹) = S^{-1/2} C S^{-1/2}``.

    Works for any symmetric positive-definite ``S(0)`` and ``C``, commuting or not, at any scale of
    ``S(0)``, ``C`` and ``τ`` in the float64 range. When ``S(0)`` and ``C`` commute (to round-off) the
    closed form is used: every mode of their common eigenbasis follows :func:`lambert_scale`
    (Eq. 6). Otherwise the integrated variable is ``L = log S``: in the
    eigenbasis ``S = V diag(e^{l}) Vᵀ``, with ``C̃ = Vᵀ C V``, the flow (C.37) reads

    ``(Vᵀ L̇ V)_ij = C̃_ij φ(l_i − l_j) / (1 + e^{l_i + l_j})``,  ``φ(δ) = (δ/2)/sinh(δ/2)``

    (the derivative of ``S − S⁻¹`` is ``Ṡ + S⁻¹ṠS⁻¹``, that of the matrix logarithm the divided
    difference ``(l_i − l_j)/(s_i − s_j)``); every factor is bounded, and ``L`` resolves scales of
    ``S`` from ``1e-308`` to ``1e308`` at once, where ``S − S⁻¹`` would not. For a single mode it is
    ``l̇ = c/(1 + e^{2l})``, i.e. (C.48). Further:

    * only the product ``Cτ`` enters (the flow is invariant under ``C → aC``, ``τ → τ/a``): with
      ``C = 2^e Ĉ`` (``max |Ĉ_ij| ∈ [1/2, 1)``, an exact rescaling) the time is ``T = 2^e τ``;
    * the solver's time is ``u = log(1 + T/T_f)``, with ``T_f = 1 + s_min² + 2 log⁺(1/s_min)``
      (``s_min`` the smallest eigenvalue of ``S(0)``) the time on which the fastest direction of ``S``
      changes (``d log s/dT ≤ 1``, and ``≈ 1/s²`` once ``s > 1``);
    * the state is ``M = L − ½ log(T_f + T) I``: the late growth ``S ~ (2TĈ)^{1/2}`` (C.53) is the
      fixed point ``M = ½ log(2T_f Ĉ)``, and ``(T_f + T)/(1 + e^{l_i + l_j}) = 1/((T_f + T)^{-1} + e^{m_i + m_j})``
      is evaluated without large logarithms, so ``Cτ`` may exceed the float64 range.

    Parameters
    ----------
    S0 : array_like, shape (k, k)
        Initial scale matrix, symmetric positive definite.
    C : array_like, shape (k, k)
        Drift matrix ``E[‖x_⊥‖² x_∥ x_∥ᵀ]``, symmetric positive semi-definite.
    taus : array_like, shape (n,)
        Non-decreasing slow times ``≥ 0`` at which to return ``S``.
    rtol, atol : float
        Tolerances of the integration (LSODA) of ``log S``: both bound relative errors of the scales
        (the relative tolerance is divided by the largest ``|log s|`` the flow reaches).

    Returns
    -------
    numpy.ndarray, shape (n, k, k)

    Raises
    ------
    ValueError
        On invalid input, or when ``S(τ)`` exceeds the float64 range.
    """
    S0 = check_symmetric_positive_definite("S0", S0)
    rtol = check_tolerance("rtol", rtol)
    atol = check_tolerance("atol", atol)
    k = S0.shape[0]
    C = check_array("C", C, shape=(k, k))
    taus = check_array("taus", taus, ndim=1)
    if taus.size == 0 or np.any(taus < 0) or np.any(np.diff(taus) < 0):
        raise ValueError("taus must be a non-empty, non-decreasing array of slow times >= 0")
    c_max = float(np.abs(C).max())
    _, ex = math.frexp(c_max)
    C_hat = np.ldexp(C, -ex)  # exact: C = 2^ex Ĉ with max |Ĉ_ij| in [1/2, 1)
    if np.abs(C_hat - C_hat.T).max() > 1e-10:
        raise ValueError("C must be symmetric")
    C_hat = 0.5 * (C_hat + C_hat.T)
    if c_max > 0 and np.linalg.eigvalsh(C_hat).min() < -1e-12:
        raise ValueError("C must be positive semi-definite")
    if c_max > 0:
        closed = _commuting_scale_flow(S0, C_hat, ex, taus)
        if closed is not None:
            return closed
    return _scale_flow_ode(S0, C_hat, ex if c_max > 0 else None, taus, rtol, atol)


def _scale_flow_ode(S0, C_hat, ex, taus, rtol, atol):
    """The integration of :func:`scale_flow` (validated input; ``ex is None`` for ``C = 0``)."""
    k = S0.shape[0]
    s0, v0 = np.linalg.eigh(S0)
    # log T_f, T_f = 1 + s_min² + 2 log⁺(1/s_min): the time on which the fastest direction changes
    # (log s grows at most linearly, at rate ≤ 1, until s reaches 1)
    log_tf = float(np.logaddexp(0.0, 2.0 * math.log(s0.min())))
    log_tf = float(np.logaddexp(log_tf, math.log(max(-2.0 * math.log(s0.min()), 1e-300))))
    with np.errstate(divide="ignore"):
        log_t = ex * math.log(2.0) + np.log(taus) if ex is not None else np.full(taus.size, -np.inf)
    u_eval = np.logaddexp(0.0, log_t - log_tf)  # u = log(1 + T/T_f); T itself may exceed float64
    if u_eval[-1] == 0.0:  # C = 0, τ = 0, or T/T_f below 1e-308: a relative change of S below T/T_f
        return np.broadcast_to(S0, (taus.size, k, k)).copy()

    def rhs(u, mflat):  # M = log S − ½ log(T_f + T) I: no cancellation of large logarithms
        mm = mflat.reshape(k, k)
        m, v = np.linalg.eigh(0.5 * (mm + mm.T))
        d = np.abs(m[:, None] - m[None, :])
        with np.errstate(over="ignore", invalid="ignore"):
            phi = np.where(d > 1e-8, d * np.exp(-0.5 * d) / -np.expm1(-np.maximum(d, 1e-300)), 1.0 - d * d / 24.0)
            # (T_f + T)/(1 + e^{l_i + l_j}) = 1/((T_f + T)^{-1} + e^{m_i + m_j})
            w = phi * np.exp(-np.logaddexp(-(log_tf + u), m[:, None] + m[None, :]))
            out = (v @ ((v.T @ C_hat @ v) * w) @ v.T - 0.5 * np.eye(k)).ravel()
        if not np.all(np.isfinite(out)):
            raise ValueError(
                "scale_flow: the growth rate of a small direction of S exceeds the float64 range "
                "(S0 and C too ill-conditioned for this horizon)"
            )
        return out

    m0 = (v0 * (np.log(s0) - 0.5 * log_tf)) @ v0.T
    # an error δ in log S is a relative error δ in S: the solver's relative tolerance is taken on the
    # largest |log s| the flow reaches (up to ~700), so that rtol stays a relative accuracy of S
    l_scale = 1.0 + max(float(np.abs(np.log(s0)).max()), 0.5 * max(float(log_t[-1]), 0.0))
    rtol_l = max(rtol / l_scale, 100 * np.finfo(float).eps)
    # one integration per output time, each continuing from the last (the solver's dense output is
    # less accurate than its steps over the long steps of the late, nearly linear growth of log S)
    ls = np.empty((taus.size, k * k))
    mflat, u_prev, used = m0.ravel(), 0.0, [0]

    def counted(t, y, u0):
        used[0] += 1
        return rhs(u0 + t, y)

    for i, u in enumerate(u_eval):
        if u > u_prev:
            if used[0] >= MAX_ODE_EVALUATIONS:
                raise ValueError(
                    f"scale_flow: reaching tau = {taus[i]:.6g} needs more than {MAX_ODE_EVALUATIONS} evaluations "
                    "of the vector field; shorten the horizon"
                )
            mflat = solve_ivp_bounded(
                lambda t, y, u0=u_prev: counted(t, y, u0),
                float(u - u_prev),
                mflat,
                [float(u - u_prev)],
                # LSODA: at late times M relaxes at rate ~1 in u and the explicit DOP853 is held to steps
                # of ~6 by stability; LSODA switches to BDF there (3-10x fewer evaluations). A span far
                # below the time scale (~1 in u) is left to DOP853 (LSODA cannot step through 1e-300).
                method="LSODA" if u - u_prev > 1e-3 else "DOP853",
                rtol=rtol_l,
                atol=atol,
                what="scale_flow",
                max_evaluations=MAX_ODE_EVALUATIONS - used[0],
            )[-1]
            u_prev = float(u)
        ls[i] = mflat
    out = np.empty((taus.size, k, k))
    for i, (u, mflat) in enumerate(zip(u_eval, ls)):
        mm = mflat.reshape(k, k)
        m, v = np.linalg.eigh(0.5 * (mm + mm.T))
        l = m + 0.5 * (log_tf + u)
        if l.max() > math.log(np.finfo(float).max):
            raise ValueError(
                f"scale_flow: S(tau) exceeds the float64 range at tau = {taus[i]:.6g} (S0, C or taus too large)"
            )
        out[i] = (v * np.exp(l)) @ v.T
    return out


# --------------------------------------------------------------------------------------------
# the slow flow on GL(k), rotation included (the book's extension of App. C)
# --------------------------------------------------------------------------------------------
def _gl_check(lambdas, k, A):
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    A = check_invertible("A", A, size=k)
    if lam[k - 1] <= lam[k]:
        raise ValueError(f"lambdas must have a spectral gap lambda_k > lambda_(k+1), got {lam[k - 1]!r} <= {lam[k]!r}")
    return lam, k, A


def _gl_drift(lam, k, A):
    from scipy.linalg import solve_continuous_lyapunov

    lp = np.diag(lam[:k])
    Ai = np.linalg.inv(A)
    M = Ai @ lp @ Ai.T
    S = A.T @ A
    eye = np.eye(k)
    eww = np.zeros((k, k))
    euu = np.zeros((k, k))
    for lj in lam[k:]:
        H = np.block([[M, -lj * eye], [-lj * eye, lj * S]])  # out-of-subspace block j (B.77)
        sig = np.zeros((2 * k, 2 * k))
        sig[:k, :k] = lj * M  # per-sample noise, decoder row j only
        X = solve_continuous_lyapunov(H, sig)  # H X + X H = Σ_j
        eww += X[:k, :k]
        euu += lj * X[k:, k:]
    gw = A @ euu  # E ∇_{W∥} L, second order in ξ
    gu = eww @ Ai @ lp  # E ∇_{U∥} L, second order in ξ
    # orthogonal projection of (gw, gu) on the tangent directions (X, −A⁻¹XA⁻¹)
    mat = np.eye(k * k) + np.kron(np.linalg.inv(S), np.linalg.inv(A @ A.T))
    x = np.linalg.solve(mat, (gw - Ai.T @ gu @ Ai.T).ravel(order="F")).reshape(k, k, order="F")
    return -x


def gl_flow_drift(lambdas, k: int, A) -> np.ndarray:
    """Slow drift ``dA/dτ`` of the full ``GL(k)`` point ``(W, U) = (Pᵀ A, A⁻¹ P)``, Gaussian data.

    *The book's extension of App. C, not in the paper.* The paper writes ``A = S^{1/2}``; SGD's
    ``A = O S^{1/2}`` also carries a rotation ``O`` that leaves the charge ``Q = S − S⁻¹`` unchanged but
    changes its drift ``A⁻¹ C A⁻ᵀ`` (A.26). In the limit ``η → 0`` on ``τ = t η²/B`` the point moves as
    the gradient-flow projection ``Φ`` of SGD {Li, Wang and Arora's slow SDE}:
    ``dΦ/dτ = ½ ∂²Φ[Σ₁] = −∂Φ · E_Ξ[∇L]``, where ``Σ₁`` is the per-sample gradient covariance (on the
    manifold it lives in the decoder's out-of-subspace rows: ``λ_j A⁻¹Λ₊A⁻ᵀ`` for row ``j``),
    ``Ξ = L_H⁻¹(Σ₁)`` solves the Lyapunov equation ``HΞ + ΞH = Σ₁`` in each out-of-subspace block
    ``H_j = [[A⁻¹Λ₊A⁻ᵀ, −λ_j I], [−λ_j I, λ_j AᵀA]]`` (B.77), ``E_Ξ[∇L]`` is the second-order part of the
    population gradient, ``(A E[U_⊥Λ₋U_⊥ᵀ], E[W_⊥ᵀW_⊥] A⁻¹Λ₊)`` in the within-subspace blocks, and
    ``∂Φ`` is the orthogonal projection onto the tangent directions ``(X, −A⁻¹XA⁻¹)``.

    The charge it implies reproduces Eq. 5 exactly, ``d(AᵀA − (AᵀA)⁻¹)/dτ = A⁻¹CA⁻ᵀ`` (tested).

    Parameters
    ----------
    lambdas : array_like, shape (d,)
        Eigenvalues of the diagonal ``Σ``, non-increasing, with ``λ_k > λ_{k+1}``.
    k : int
        Hidden width, ``1 ≤ k < d``.
    A : array_like, shape (k, k)
        Invertible.

    Returns
    -------
    numpy.ndarray, shape (k, k)

    Raises
    ------
    ValueError
        If ``A`` is not an invertible ``k × k`` matrix, or the spectrum has no gap at ``k``.
    """
    lam, k, A = _gl_check(lambdas, k, A)
    return _gl_drift(lam, k, A)


def gl_flow(lambdas, k: int, A0, taus, *, rtol: float = 1e-8, atol: float = 1e-10) -> np.ndarray:
    """Integrate :func:`gl_flow_drift` from ``A(0) = A0``; returns ``A(τ)``, shape ``(len(taus), k, k)``.

    ``S = AᵀA`` and the rotation :func:`polar_rotation` ``O`` follow from it. Eq. 5 (with ``A = S^{1/2}``)
    is exact exactly when ``Oᵀ C O = C`` along the flow: when ``S(0)`` commutes with ``C`` (then ``A``
    stays symmetric) or when ``C ∝ I``.

    Raises
    ------
    ValueError
        On a bad ``A0`` (see :func:`gl_flow_drift`), or ``taus`` that are not non-decreasing, ``≥ 0``
        and ``≤`` :data:`GL_FLOW_MAX_TAU`.
    """
    from scipy.integrate import solve_ivp

    lam, k, A0 = _gl_check(lambdas, k, A0)
    taus = check_array("taus", taus, ndim=1)
    if taus.size == 0 or np.any(taus < 0) or np.any(np.diff(taus) < 0):
        raise ValueError("taus must be a non-empty, non-decreasing array of slow times >= 0")
    if taus[-1] > GL_FLOW_MAX_TAU:
        raise ValueError(
            f"taus reach {taus[-1]:.3g}, beyond the horizon {GL_FLOW_MAX_TAU:.0e} that gl_flow integrates "
            "(a few seconds of work; S then grows like (2τC)^(1/2), see sqrt_scale)"
        )
    if taus[-1] == 0.0:  # nothing to integrate
        return np.repeat(A0[None], taus.size, axis=0)
    sol = solve_ivp(
        lambda _t, a: _gl_drift(lam, k, a.reshape(k, k)).ravel(),
        (0.0, float(taus[-1])),
        A0.ravel(),
        t_eval=taus,
        method="DOP853",
        rtol=rtol,
        atol=atol,
    )
    if not sol.success:  # pragma: no cover
        raise RuntimeError(f"gl_flow: integration failed: {sol.message}")
    return sol.y.T.reshape(-1, k, k)


def polar_rotation(A) -> np.ndarray:
    """Orthogonal factor ``O`` of the polar decomposition ``A = O (AᵀA)^{1/2}`` (batched over leading axes)."""
    A = check_array("A", A)  # TypeError for complex, bool, strings (asarray(dtype=float) cast them)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A must be a finite square matrix (or a stack of them), got shape {A.shape}")
    u, _, vt = np.linalg.svd(A)
    return u @ vt


def charge_noise_std(lambdas, k: int, eta: float, batch_size: int, taus, s0: float = 1.0) -> np.ndarray:
    """Seed-to-seed standard deviation of the charge ``Q_11`` along the flow from ``S(0) = s0 I`` (C.36).

    *The book's quantitative form of C.36.* On the PCA manifold one step adds
    ``ΔQ_11 = (η²/(B² s_1)) ‖Σ_i x_{1i} x_{⊥i}‖²``; for Gaussian data its variance is
    ``η⁴ V_B/(B⁴ s_1²)`` with ``V_B = λ_1² [2B(B+2) Σ_{j>k} λ_j² + 2B (Σ_{j>k} λ_j)²]``. A deviation
    ``δQ_11`` relaxes at rate ``γ = c_1/(s_1² + 1)`` (``d(c_1/s_1)/dQ_11``), so on ``τ = tη²/B`` the
    variance obeys ``dV/dτ = −2γV + η² V_B/(B³ s_1²)``, with ``s_1(τ)`` from Eq. 6. It is ``O(η²/B)``.

    Returns
    -------
    numpy.ndarray, shape (len(taus),)
        ``sqrt(V(τ))``.

    Raises
    ------
    ValueError
        On non-positive ``eta``, ``batch_size < 1``, ``s0 <= 0`` or bad ``taus``.
    """
    from scipy.integrate import solve_ivp

    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1)
    s0 = check_positive("s0", s0)
    taus = check_array("taus", taus, ndim=1)
    if taus.size == 0 or np.any(taus < 0) or np.any(np.diff(taus) < 0):
        raise ValueError("taus must be a non-empty, non-decreasing array of slow times >= 0")
    c1 = lam[0] * lam[k:].sum()
    vb = lam[0] ** 2 * (2 * b * (b + 2) * np.sum(lam[k:] ** 2) + 2 * b * lam[k:].sum() ** 2)

    src = vb / float(b) ** 3  # V is proportional to η²: integrate at η = 1, scale the result by η

    def rhs(t, v):
        s1 = lambert_scale(s0, c1, t)
        return -2 * c1 / (s1 * s1 + 1) * v + src / (s1 * s1)

    if taus[-1] == 0.0:
        return np.zeros(taus.size)
    sol = solve_ivp(rhs, (0.0, float(taus[-1])), [0.0], t_eval=taus, rtol=1e-8, atol=1e-14 * src)
    with np.errstate(over="ignore"):
        out = eta * np.sqrt(np.maximum(sol.y[0], 0.0))
    return finite_result("charge_noise_std", out)


def simulate_sgd_variants(
    lambdas,
    k: int,
    eta: float,
    batch_size: int,
    steps: int,
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    data: str = "gaussian",
    seeds: int = 1,
    n_records: int = 50,
    seed=None,
) -> SGDResult:
    """SGD beyond the paper's assumptions: heavy-ball momentum, weight decay, non-Gaussian data.

    A small, separate simulator (explicit samples, PCA initialisation ``S(0) = I``, seeds batched)
    for the linear autoencoder: ``v ← β v + ∇L̂ + λ_wd θ``, ``θ ← θ − η v`` for ``θ = (W, U)``. With
    ``data="scale-mixture"`` every point is ``x = r g``, ``g ~ N(0, diag λ)`` and ``r² ∈ {1/2, 3/2}``
    with equal probability: the covariance is unchanged, ``x_∥`` and ``x_⊥`` stay uncorrelated but are
    no longer independent, and ``C = E[r⁴] (Σ_{j>k}λ_j) Λ₊ = 1.25 C_Gauss``.

    Returns
    -------
    SGDResult
        With ``tau = steps η²/B`` (the plain-SGD slow time), ``S``, ``Q`` and ``loss``.

    Raises
    ------
    ValueError
        If ``momentum`` is not in ``[0, 1)``, ``weight_decay < 0``, ``data`` is not ``"gaussian"`` or
        ``"scale-mixture"``, or another argument is out of range.
    symbreak.engine.DivergenceError
        If a replica diverges.
    """
    from .engine import DivergenceError

    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1, maximum=10**6)
    steps = check_int("steps", steps, minimum=1, maximum=MAX_STEPS)
    n = check_int("seeds", seeds, minimum=1, maximum=10**5)
    n_records = check_int("n_records", n_records, minimum=1, maximum=10**6)
    if steps * n * b > MAX_DRAWS:
        raise ValueError(
            f"steps × seeds × batch_size = {steps * n * b:.3g} samples exceeds {MAX_DRAWS:.3g}: "
            "shorten the run or use fewer seeds"
        )
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float, np.floating)) or not 0 <= momentum < 1:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    if (
        isinstance(weight_decay, bool)
        or not isinstance(weight_decay, (int, float, np.floating))
        or not (np.isfinite(weight_decay) and weight_decay >= 0)
    ):
        raise ValueError(f"weight_decay must be a finite number >= 0, got {weight_decay!r}")
    data = check_choice("data", data, ("gaussian", "scale-mixture"))
    d = lam.size
    rng = make_rng(seed)
    W = np.zeros((n, d, k))
    W[:, :k, :] = np.eye(k)
    U = np.swapaxes(W, 1, 2).copy()
    vW, vU = np.zeros_like(W), np.zeros_like(U)
    sq = np.sqrt(lam)[None, :, None]
    rec = np.unique(np.round(np.linspace(0, steps, n_records + 1)).astype(np.int64))
    S_rec, Q_rec, L_rec = [], [], []
    eye = np.eye(d)

    def record():
        S_rec.append(np.einsum("nji,njl->nil", W, W))
        Q_rec.append(S_rec[-1] - np.einsum("nij,nlj->nil", U, U))
        E = np.einsum("nij,njl->nil", W, U) - eye
        L_rec.append(0.5 * np.einsum("nij,j,nij->n", E, lam, E))

    record()
    for t in range(1, steps + 1):
        X = rng.standard_normal((n, d, b)) * sq
        if data == "scale-mixture":
            X *= np.sqrt(np.where(rng.random((n, 1, b)) < 0.5, 0.5, 1.5))
        G = (W @ U - eye) @ (X @ np.swapaxes(X, 1, 2)) / b  # (WU − I) Σ̂
        gW = G @ np.swapaxes(U, 1, 2) + weight_decay * W
        gU = np.swapaxes(W, 1, 2) @ G + weight_decay * U
        vW = momentum * vW + gW
        vU = momentum * vU + gU
        W = W - eta * vW
        U = U - eta * vU
        if t in rec:
            if not (np.all(np.isfinite(W)) and np.abs(W).max() < DIVERGENCE_LIMIT):
                with np.errstate(invalid="ignore"):
                    mag = np.abs(W).reshape(n, -1).max(axis=1)
                bad = int(np.argmax(~(np.isfinite(mag) & (mag < DIVERGENCE_LIMIT))))
                raise DivergenceError(
                    t,
                    bad,
                    {"eta": eta, "batch_size": b, "momentum": momentum, "weight_decay": weight_decay},
                    float(mag[bad]),
                    DIVERGENCE_LIMIT,
                )
            record()
    return SGDResult(
        steps=rec,
        tau=rec * eta**2 / b,
        S=np.stack(S_rec, 1),
        Q=np.stack(Q_rec, 1),
        loss=np.stack(L_rec, 1),
        eta=eta,
        batch_size=b,
        lambdas=lam,
        k=k,
    )


#: The explorer's slider box: each parameter's (low, high).
#:
#: :meta hide-value:
EXPLORER_BOX = {
    "eta": (0.002, 0.04),
    "batch_size": (16, 512),
    "k": (1, 19),
    "gap": (1.0, 4.0),
    "noncommuting": (0.0, 1.0),
}


def _explorer_check(name, value, *, integer=False):
    lo, hi = EXPLORER_BOX[name]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not np.isfinite(value) or (integer and int(value) != value):
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{name} must be {kind} in [{lo}, {hi}], got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {value!r}")
    return int(value) if integer else float(value)


def explorer_run(
    eta: float = 0.02,
    batch_size: int = 128,
    k: int = 10,
    gap: float = 1.0,
    noncommuting: float = 0.0,
    *,
    max_steps: int = 60_000,
    n_records: int = 60,
    seeds: int = 2,
    seed: int = 1,
) -> dict:
    """Everything the chapter's explorer draws for one setting of its sliders (:data:`EXPLORER_BOX`).

    Linear autoencoder, ``d = 20``, the geometric spectrum of App. F with the out-of-subspace
    eigenvalues ``λ_{j>k}`` divided by ``gap`` (``gap = 1``: the paper's spectrum), exact Wishart
    minibatches, ``seeds`` replicas from ``S(0) = (1 − ν) I + ν R diag(2.5 … 0.5) Rᵀ`` with a fixed
    random rotation ``R`` and ``ν = noncommuting`` (``ν = 0``: the paper's balanced start, commuting
    with ``C``). The run length is set in slow time: SGD runs to ``1.3`` times the slow time at which
    the top scale would reach the ceiling (C.81, ``κ = 2``), or to ``max_steps`` steps if that comes
    first (``truncated``). The theory is Eq. 6 per mode (``ν = 0``) or the diagonal of ``S`` under the
    GL(k) flow (:func:`gl_flow`, ``ν > 0``), capped at the ceiling. Seed ``s`` of the run draws from
    the stream ``(seed, s)``, so the result is the same as the matching entry of :func:`explorer_runs`.

    Returns
    -------
    dict
        ``tau`` (R,), ``scales`` (R, k) the seed mean of ``diag(WᵀW)``, ``tau_theory`` (M,),
        ``theory`` (M, k), ``ceiling`` (float), ``steps`` (int), ``truncated`` (bool), ``diverged``
        (``None`` or the divergence message: then ``tau`` and ``scales`` are empty), ``lambdas``, ``k``,
        ``eta``, ``batch_size``.

    Raises
    ------
    ValueError
        If a slider value lies outside :data:`EXPLORER_BOX` (the message names it and its range), or
        ``max_steps``, ``n_records`` or ``seeds`` is not a positive integer.
    """
    setting = dict(eta=eta, batch_size=batch_size, k=k, gap=gap, noncommuting=noncommuting)
    return explorer_runs([setting], max_steps=max_steps, n_records=n_records, seeds=seeds, seed=seed)[0]


def _explorer_setting(setting) -> dict:
    """Validate one explorer setting (a mapping of slider values) and fill in the defaults."""
    if not isinstance(setting, Mapping):
        raise TypeError(f"each setting must be a mapping of slider values, got {type(setting).__name__}")
    unknown = set(setting) - set(EXPLORER_BOX)
    if unknown:
        raise ValueError(f"unknown explorer parameter(s) {sorted(unknown)}; the sliders are {list(EXPLORER_BOX)}")
    full = dict(eta=0.02, batch_size=128, k=10, gap=1.0, noncommuting=0.0)
    full.update(setting)
    return {
        "eta": _explorer_check("eta", full["eta"]),
        "batch_size": _explorer_check("batch_size", full["batch_size"], integer=True),
        "k": _explorer_check("k", full["k"], integer=True),
        "gap": _explorer_check("gap", full["gap"]),
        "noncommuting": _explorer_check("noncommuting", full["noncommuting"]),
    }


def _explorer_theory(s, max_steps, n_records) -> tuple[dict, tuple, np.ndarray]:
    """The theory side of one explorer setting, its initial point and its record grid."""
    eta, b, k, gap, nu = s["eta"], s["batch_size"], s["k"], s["gap"], s["noncommuting"]
    d = 20
    lam = geometric_spectrum(d)
    lam[k:] /= gap
    c = growth_rates(lam, k)
    ceiling = eos_ceiling(eta, lam[0])
    rot = np.linalg.qr(make_rng(7).standard_normal((k, k)))[0]
    S0 = (1 - nu) * np.eye(k) + nu * (rot * np.geomspace(2.5, 0.5, k)) @ rot.T
    s0_top = max(float(np.linalg.eigvalsh(S0)[-1]), 1.0)
    tau_goal = 1.3 * lambert_time(max(ceiling, s0_top * 1.01), min(s0_top, ceiling / 1.01), c[0])
    steps = int(min(max(1, round(tau_goal * b / eta**2)), max_steps))
    truncated = steps < round(tau_goal * b / eta**2)
    tau_end = steps * eta**2 / b
    tau_th = np.linspace(0.0, tau_end, 120)
    init = pca_point(S0, d)
    if nu == 0.0:
        theory = lambert_scale(1.0, c[None, :], tau_th[:, None])
    else:
        A_t = gl_flow(lam, k, init[0][:k], tau_th, rtol=1e-6, atol=1e-8)
        theory = np.einsum("tji,tji->ti", A_t, A_t)
    out = {
        "tau_theory": tau_th,
        "theory": np.minimum(theory, ceiling),
        "ceiling": ceiling,
        "steps": steps,
        "truncated": truncated,
        "diverged": None,
        "lambdas": lam,
        "k": k,
        "eta": eta,
        "batch_size": b,
    }
    record_at = np.unique(np.round(np.linspace(0, steps, min(n_records, steps) + 1)).astype(np.int64))
    return out, init, record_at


def explorer_runs(
    settings,
    *,
    max_steps: int = 60_000,
    n_records: int = 60,
    seeds: int = 2,
    seed: int = 1,
) -> list[dict]:
    """:func:`explorer_run` for many slider settings at once (the site's precomputed explorer grid).

    Settings that share ``k`` and ``gap`` (hence the data spectrum) run as one ensemble on the batched
    engine, which is several times faster than one run per setting with a handful of replicas. Every
    setting's seed ``s`` draws from the stream ``(seed, s)`` whatever its position in the list (common
    random numbers across settings), so each entry equals ``explorer_run(**setting, ...)`` with the
    same keyword arguments. If the batched run diverges, its settings are re-run one by one and only
    the diverging ones carry the message.

    Parameters
    ----------
    settings : sequence of mapping
        Slider values (keys among :data:`EXPLORER_BOX`; missing keys take :func:`explorer_run`'s
        defaults).
    max_steps, n_records, seeds, seed
        As in :func:`explorer_run`.

    Returns
    -------
    list of dict
        One :func:`explorer_run` result per setting, in order.

    Raises
    ------
    TypeError
        If a setting is not a mapping or a value not a number.
    ValueError
        If ``settings`` is empty, a key is not a slider, a value lies outside :data:`EXPLORER_BOX`,
        or ``max_steps``, ``n_records`` or ``seeds`` is not a positive integer.
    """
    from .engine import DivergenceError

    if isinstance(settings, Mapping) or not isinstance(settings, Sequence):
        raise TypeError(f"settings must be a sequence of mappings, got {type(settings).__name__}")
    if len(settings) == 0:
        raise ValueError("settings must hold at least one setting")
    checked = [_explorer_setting(s) for s in settings]
    max_steps = check_int("max_steps", max_steps, minimum=1, maximum=MAX_STEPS)
    n_records = check_int("n_records", n_records, minimum=2, maximum=10**6)
    seeds = check_int("seeds", seeds, minimum=1, maximum=10**4)
    seed = check_int("seed", seed, minimum=0)
    prepared = [_explorer_theory(s, max_steps, n_records) for s in checked]
    groups: dict = {}
    for i, s in enumerate(checked):
        groups.setdefault((s["k"], s["gap"]), []).append(i)
    outs = [p[0] for p in prepared]
    for (k, _gap), idx in groups.items():
        lam = outs[idx[0]]["lambdas"]
        try:
            runs = _run(
                lam,
                k,
                np.array([checked[i]["eta"] for i in idx]),
                np.array([checked[i]["batch_size"] for i in idx], dtype=np.int64),
                [prepared[i][2] for i in idx],
                seeds=seeds,
                init=[prepared[i][1] for i in idx],
                init_std=0.01,
                activation="linear",
                sampler="wishart",
                dtype=np.float64,
                seed=seed,
                record_weights=False,
                shared_streams=True,
            )
        except DivergenceError as err:
            if len(idx) == 1:
                k_ = outs[idx[0]]["k"]
                outs[idx[0]].update(tau=np.zeros(0), scales=np.zeros((0, k_)), diverged=str(err))
                continue
            for i in idx:  # find the diverging settings: one run each
                outs[i] = explorer_runs([checked[i]], max_steps=max_steps, n_records=n_records, seeds=seeds, seed=seed)[
                    0
                ]
            continue
        for i, res in zip(idx, runs):
            outs[i].update(tau=res.tau, scales=res.scales.mean(0))
    return outs


# --------------------------------------------------------------------------------------------
# Hessian (App. B) and edge of stability (App. C.5)
# --------------------------------------------------------------------------------------------
def pca_point(S, d: int):
    """The PCA solution ``W = Pᵀ S^{1/2}``, ``U = S^{-1/2} P`` with ``P = [I_k, 0]`` (A.18, B.85).

    Parameters
    ----------
    S : array_like
        A vector ``s`` of ``k`` positive scales (``S = diag(s)``) or a symmetric positive-definite
        ``k×k`` matrix.
    d : int
        Input dimension, ``> k``.

    Returns
    -------
    W : numpy.ndarray, shape (d, k)
    U : numpy.ndarray, shape (k, d)
        with ``WᵀW = S`` and ``UUᵀ = S⁻¹``.
    """
    arr = check_array("S", S)
    if arr.ndim <= 1:
        s = check_positive_array("S", np.atleast_1d(arr), ndim=1)
        half, ihalf = np.diag(np.sqrt(s)), np.diag(1.0 / np.sqrt(s))
    else:
        mat = check_symmetric_positive_definite("S", arr)
        e, v = np.linalg.eigh(mat)
        half, ihalf = (v * np.sqrt(e)) @ v.T, (v / np.sqrt(e)) @ v.T
    k = half.shape[0]
    d = check_int("d", d, minimum=2, maximum=_MAX_DIM)
    _undercomplete_k(k, d)
    W = np.zeros((d, k))
    U = np.zeros((k, d))
    W[:k] = half
    U[:, :k] = ihalf
    return finite_result("pca_point", (W, U))


def pca_hessian_eigenvalues(lambdas, k: int, s) -> np.ndarray:
    """All ``2kd`` eigenvalues of the population-loss Hessian on the PCA manifold (App. B.2).

    At ``W = Pᵀ S^{1/2}``, ``U = S^{-1/2} P``, ``S = diag(s)``, ``Σ = diag(λ)``, the Hessian splits
    into three sectors (B.76–B.77, B.87, B.92):

    * ``k²`` zero modes, the ``GL(k)`` symmetry directions (B.74);
    * ``k²`` within-subspace eigenvalues ``μ^∥_ab = λ_a (s_b + 1/s_a)``, ``a, b = 1 … k``;
    * for every ``a ≤ k < j`` the two eigenvalues of ``[[λ_a/s_a, −λ_j], [−λ_j, λ_j s_a]]``,
      ``μ_aj,± = ½[t ± sqrt((λ_a/s_a − λ_j s_a)² + 4λ_j²)]`` with ``t = λ_a/s_a + λ_j s_a``.

    The Hessian is that of ``L = ½ tr[(WU − I)Σ(WU − I)ᵀ]`` with respect to ``(W, U)``, i.e. the
    quadratic form (B.44).

    Returns
    -------
    numpy.ndarray, shape (2kd,)
        Sorted ascending.
    """
    lam = _spectrum(lambdas)
    d = lam.size
    k = _undercomplete_k(k, d)
    s = _scales(s, k)
    lp, lm = lam[:k], lam[k:]
    mu_par = lp[:, None] * (s[None, :] + 1.0 / s[:, None])
    a_ = (lp / s)[:, None]
    b_ = lm[None, :] * s[:, None]
    tr = a_ + b_
    disc = np.sqrt((a_ - b_) ** 2 + 4.0 * lm[None, :] ** 2)
    mu_plus = 0.5 * (tr + disc)
    det = lm[None, :] * (lp[:, None] - lm[None, :])
    mu_minus = det / mu_plus  # stable form of ½(t − disc)
    return finite_result(
        "pca_hessian_eigenvalues",
        np.sort(np.concatenate([np.zeros(k * k), mu_par.ravel(), mu_plus.ravel(), mu_minus.ravel()])),
    )


def hessian_lambda_max(lambdas, k: int, s):
    """Largest Hessian eigenvalue on the PCA manifold, ``max_a λ_a (max_b s_b + 1/s_a)`` (B.94).

    With ``s_1 ≥ … ≥ s_k ≥ 1`` it lies between ``λ_1(s_1 + 1/s_1)`` and ``λ_1(s_1 + 1)`` (B.95).
    ``s`` may carry leading batch axes (``(..., k)``).
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    s = check_array("s", s)
    if s.shape[-1:] != (k,) or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"s must have a last axis of length k = {k} with entries in (0, inf)")
    return finite_result("hessian_lambda_max", np.max(lam[:k] * (s.max(axis=-1, keepdims=True) + 1.0 / s), axis=-1))


def hessian_trace(lambdas, k: int, s):
    """Trace of the Hessian on the PCA manifold, ``d Σ_a λ_a/s_a + tr(Σ) Σ_a s_a`` (B.84)."""
    lam = _spectrum(lambdas)
    d = lam.size
    k = _undercomplete_k(k, d)
    s = check_array("s", s)
    if s.ndim == 0:
        s = np.full(k, float(s)) if s > 0 else _scales(s, k)
    if s.shape[-1:] != (k,) or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"s must have a last axis of length k = {k} with entries in (0, inf)")
    return finite_result("hessian_trace", d * np.sum(lam[:k] / s, axis=-1) + lam.sum() * np.sum(s, axis=-1))


def trace_minimizing_scale(lambdas, k: int) -> float:
    """Global scale ``s⋆`` minimising ``tr H`` over ``S = s I_k`` (Sec. 4; B.40 for ``k = 1``).

    ``s⋆² = (Σ_{j≤k} λ_j / k) / (Σ_j λ_j / d) ≥ 1``: the flattest point in the sense of the trace is
    decoder-heavy.
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    return finite_result("trace_minimizing_scale", float(np.sqrt(lam[:k].mean() / lam.mean())))


def overcomplete_point(d: int, k: int, s: float):
    """Overcomplete (``k > d``) exact-reconstruction point ``W = sqrt(s) Pᵀ``, ``U = P/sqrt(s)``, ``P = [I_d; 0]``."""
    d = check_int("d", d, minimum=1, maximum=_MAX_DIM)
    k = check_int("k", k, minimum=d + 1, maximum=_MAX_DIM)
    s = check_positive("s", s)
    P = np.zeros((k, d))
    P[:d, :d] = np.eye(d)
    return finite_result("overcomplete_point", (np.sqrt(s) * P.T, P / np.sqrt(s)))


def overcomplete_hessian_eigenvalues(lambdas, k: int, s: float) -> np.ndarray:
    """Hessian eigenvalues at the overcomplete point of global scale ``s`` (B.104–B.113).

    ``JJᵀ = (s + 1/s)(Σ ⊗ I_d)``: the non-zero eigenvalues are ``(s + 1/s) λ_i``, each ``d`` times,
    and there are ``2kd − d²`` zeros. All are invariant under ``s ↦ 1/s``.
    """
    lam = _spectrum(lambdas)
    d = lam.size
    k = check_int("k", k, minimum=d + 1, maximum=_MAX_DIM)
    s = check_positive("s", s)
    nonzero = np.repeat((s + 1.0 / s) * lam, d)
    return finite_result(
        "overcomplete_hessian_eigenvalues", np.sort(np.concatenate([np.zeros(2 * k * d - d * d), nonzero]))
    )


def autograd_hessian(lambdas, W, U) -> np.ndarray:
    """The population-loss Hessian at ``(W, U)`` by automatic differentiation (``torch.func``).

    ``L(W, U) = ½ tr[(WU − I) Σ (WU − I)ᵀ]`` with ``Σ = diag(λ)``; parameters ordered as
    ``(vec_row(W), vec_row(U))``. An independent check of the closed forms of App. B.

    Returns
    -------
    numpy.ndarray, shape (2kd, 2kd)
        Symmetric, float64.
    """
    import torch
    from torch.func import jacrev

    lam = _spectrum(lambdas)
    d = lam.size
    W, U = _check_decoder_encoder(W, U, d, names=("W", "U"))
    k = W.shape[1]
    sig = torch.tensor(lam, dtype=torch.float64)
    eye = torch.eye(d, dtype=torch.float64)

    def loss(theta):
        w = theta[: d * k].reshape(d, k)
        u = theta[d * k :].reshape(k, d)
        m = w @ u - eye
        return 0.5 * torch.sum(m * m * sig[None, :])

    theta = torch.tensor(np.concatenate([W.ravel(), U.ravel()]), dtype=torch.float64)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: intra-op threads only add synchronisation
    try:
        h = jacrev(jacrev(loss))(theta).numpy()  # reverse-over-reverse: the Hessian of a scalar
    finally:
        torch.set_num_threads(threads)
    return finite_result("autograd_hessian", 0.5 * (h + h.T))


def eos_ceiling(eta, lambda1: float, kappa: float = 2.0):
    """Common saturation scale at the edge of stability (C.81).

    With the threshold ``η μ = κ`` on the dangerous modes ``μ^∥_1a = λ_1(1/s_1 + s_a)``, all scales
    saturate at ``s* = (κ̃ + sqrt(κ̃² − 4))/2``, ``κ̃ = κ/(η λ_1)``, the larger root of
    ``s + 1/s = κ̃``.

    Raises
    ------
    ValueError
        If ``κ̃ < 2`` (no positive scale is stable: ``λ_1(s + 1/s) ≥ 2λ_1``), or if ``eta``,
        ``lambda1`` or ``kappa`` is not positive.
    """
    eta = _broadcast_positive("eta", eta)
    lambda1 = check_positive("lambda1", lambda1)
    kappa = check_positive("kappa", kappa)
    log_kt = math.log(kappa) - np.log(eta) - math.log(lambda1)  # no underflow of eta * lambda1
    if np.any(log_kt >= math.log(np.finfo(float).max)):
        raise ValueError(
            f"kappa/(eta*lambda1) exceeds the float64 range (eta = {np.min(eta):.3g}, "
            f"lambda1 = {lambda1:.3g}): the ceiling s* ~ kappa/(eta*lambda1) is not representable"
        )
    with np.errstate(over="ignore", divide="ignore"):
        prod = eta * lambda1
        kt = np.where(prod > 0, kappa / np.where(prod > 0, prod, 1.0), kappa / eta / lambda1)
    if np.any(kt < 2.0):
        raise ValueError(
            f"kappa_tilde = kappa/(eta*lambda1) must be >= 2 for a ceiling to exist, got "
            f"{np.min(kt):.4g} (eta too large: eta must be <= kappa/(2*lambda1) = {kappa / (2 * lambda1):.4g})"
        )
    s = 0.5 * kt * (1.0 + np.sqrt((1.0 - 2.0 / kt) * (1.0 + 2.0 / kt)))  # kt² would overflow
    return float(s) if np.ndim(s) == 0 else s


def fit_kappa(etas, saturation, lambda1: float):
    """Fit the stability threshold ``κ`` to measured saturation scales (Fig. 1F, C.81).

    At the ceiling ``s* + 1/s* = κ/(η λ_1)``, so ``y = s* + 1/s*`` is proportional to
    ``x = 1/(η λ_1)`` with slope ``κ``. Least squares through the origin gives ``κ``; its standard
    error comes from the scatter of the points around the line (``n − 1`` degrees of freedom).

    Parameters
    ----------
    etas : array_like, shape (n,)
        Learning rates.
    saturation : array_like, shape (n,)
        Measured saturation scales (one per learning rate, e.g. averaged over seeds).
    lambda1 : float
        Largest eigenvalue of ``Σ``.

    Returns
    -------
    kappa, kappa_se : float
    """
    etas = check_positive_array("etas", etas)
    sat = check_positive_array("saturation", saturation)
    if sat.shape != etas.shape or etas.size < 2:
        raise ValueError("etas and saturation must have the same length, at least 2")
    lambda1 = check_positive("lambda1", lambda1)
    x = 1.0 / (etas * lambda1)
    y = sat + 1.0 / sat
    kappa = float(np.sum(x * y) / np.sum(x * x))
    resid = y - kappa * x
    se = float(np.sqrt(np.sum(resid**2) / (x.size - 1) / np.sum(x * x)))
    return finite_result("fit_kappa", (kappa, se))


# --------------------------------------------------------------------------------------------
# a reduced map for the edge of stability (the book's, not in the paper)
# --------------------------------------------------------------------------------------------
def gain_noise_variance(lambdas, k: int, s, eta: float, batch_size: int):
    """Per-step variance of the additive minibatch noise on the top gain ``e = (WU)_11 − 1``.

    *The book's derivation, not in the paper.* Near the PCA point ``S = diag(s)`` with ``e = 0`` the
    minibatch gradients move ``e`` by ``−η Σ_{j>k} Σ̂_j1 √s_1 [U_1j (s_1 + 1/s_1) − W_j1]`` to first
    order in the out-of-subspace fluctuations ``(W_j1, U_1j)``. These are independent of the current
    minibatch, with the stationary covariance ``Ξ_1j/B`` of :func:`drift_correction`'s linear
    processes (order ``η/B``, C.18), and ``Var Σ̂_j1 = λ_jλ_1/B``, so

    ``σ_e² = (η² s_1 λ_1/B²) Σ_{j>k} λ_j [m² Ξ_uu − 2m Ξ_wu + Ξ_ww]``, ``m = s_1 + 1/s_1``,

    of order ``η³/B²``: second order in the noise, unlike the multiplicative noise ``Σ̂_11`` on the
    gain's curvature (see :func:`eos_reduced_map`).

    Parameters
    ----------
    s : float or array_like
        Scale ``s_1`` of the top mode (one value or an array of values).

    Returns
    -------
    float or numpy.ndarray
        ``σ_e²``, with the shape of ``s``.
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1)
    _check_gap(lam, k)
    s_arr = check_positive_array("s", np.atleast_1d(check_array("s", s)), ndim=None).reshape(-1)
    out = _gain_noise_b1(lam, k, s_arr, eta) / b**2
    out = finite_result("gain_noise_variance", out)
    return float(out[0]) if np.ndim(s) == 0 else out.reshape(np.shape(s))


def _gain_noise_b1(lam, k, s, eta):
    """``B² σ_e²`` of :func:`gain_noise_variance` for an array of top scales ``s`` (vectorised)."""
    l1, lj = lam[0], lam[k:]
    _, xi = _pair_lyapunov(np.full(s.size, l1), s, lj, eta)  # the pairs (W_j1, U_1j) at every s
    s_ = s[:, None]
    m = s_ + 1.0 / s_
    return eta**2 * s * l1 * np.sum(lj * (m * m * xi[..., 1, 1] - 2.0 * m * xi[..., 0, 1] + xi[..., 0, 0]), axis=1)


def gain_stability_thresholds(batch_size: int) -> tuple[float, float]:
    """The two stability thresholds of the gain map ``e ← (1 − x Z) e``, ``Z = χ²_B/B`` (Gaussian data).

    *The book's, not in the paper.* The gain of the top mode has the minibatch curvature
    ``μ̂ = Σ̂_11 (s_1 + 1/s_1) = μ Z`` with ``E Z = 1``, ``Var Z = 2/B``. With ``x = ημ``:

    - mean-square stability, ``E(1 − xZ)² < 1``, holds for ``x < 2B/(B + 2)``;
    - almost-sure stability, ``E log|1 − xZ| < 0``, holds up to the root ``x_as > 2`` of
      ``E log|1 − xZ| = 0`` (``x_as = 2 + 4/B + O(B⁻²)``).

    Between the two, ``e`` is a Kesten process: a typical trajectory decays but ``E e²`` grows, so
    the gain moves in rare bursts. ``batch_size`` runs from 1 to ``10⁵``.

    Returns
    -------
    x_ms, x_as : float
    """
    from scipy import integrate, optimize, stats

    b = check_int("batch_size", batch_size, minimum=1, maximum=10**5)  # beyond, x_as = 2 + 4/B to 1e-9
    x_ms = 2.0 * b / (b + 2.0)
    z = stats.gamma(b / 2.0, scale=2.0 / b)
    lo, hi = z.ppf(1e-15), z.isf(1e-15)

    def lyap(x):
        pts = [1.0 / x] if lo < 1.0 / x < hi else None
        val, _ = integrate.quad(
            lambda t: np.log(abs(1.0 - x * t)) * z.pdf(t), lo, hi, points=pts, limit=400, epsabs=1e-13, epsrel=1e-11
        )
        return val

    x_as = optimize.brentq(lyap, 2.0, 2.0 + 40.0 / b + 1.0, xtol=1e-13)
    return finite_result("gain_stability_thresholds", (float(x_ms), float(x_as)))


@dataclass
class ReducedEdgeResult:
    """One configuration of :func:`eos_reduced_map`: records on a grid of steps."""

    steps: np.ndarray  #: (R,) recorded step numbers
    tau: np.ndarray  #: (R,) slow time ``η² t/B``
    s: np.ndarray  #: (seeds, R) scale of the top mode, ``w²``
    e: np.ndarray  #: (seeds, R) gain error ``wu − 1``
    eta: float
    batch_size: int


def eos_reduced_map(
    lambdas,
    k: int,
    etas,
    batch_sizes,
    tau_max,
    *,
    seeds: int = 16,
    n_records: int = 200,
    s0: float = 1.0,
    multiplicative: bool = True,
    noise_scale: float = 1.0,
    seed=None,
) -> list[ReducedEdgeResult]:
    """A two-variable stochastic map for the top mode at the edge of stability.

    *The book's reduction, not in the paper.* The top mode is the scalar pair ``(w, u)`` with
    ``s_1 = w²`` and gain ``e = wu − 1``. Each step applies, in order,

    1. the minibatch gradient step of ``½ Σ̂_11 (wu − 1)²``: ``w ← w − ηΣ̂_11 e u``,
       ``u ← u − ηΣ̂_11 e w``, with the exact ``Σ̂_11 = λ_1 χ²_B/B`` of Gaussian data
       (``multiplicative=False`` replaces it by ``λ_1``). It carries the instability
       (``ημ = ηλ_1(s_1 + 1/s_1)``) and drains the charge, ``q ← q(1 − η²Σ̂_11²e²)`` (the book's
       charge-balance proposition);
    2. the on-manifold charge drift of Eq. 5, ``q = w² − u² ← q + η²c_1/(B s_1)``, applied at fixed
       ``wu``;
    3. the additive gain noise ``e ← e + ξ``, ``ξ ~ N(0, σ_e²(s_1))`` of
       :func:`gain_noise_variance` (times ``noise_scale``), applied at fixed ``q``.

    Steps 2 and 3 move ``(w, u)`` along ``(w, −u)`` and ``(u, w)``, the gradients of ``q/2`` and of
    ``wu``, which are orthogonal; they are applied to first order (the second-order errors, of order
    ``(η²c_1/B)²`` and ``σ_e²`` per step, are far below the drift). ``σ_e`` is refreshed every 64
    steps. The loop is compiled with numba.

    Below the edge the map follows Eq. 6; at the edge ``e`` becomes a Kesten process
    (:func:`gain_stability_thresholds`) whose bursts hold ``s_1`` near the ceiling. Nothing is
    fitted to the SGD simulations.

    Parameters
    ----------
    etas, batch_sizes : array_like, shape (n,)
        One configuration per entry; each runs ``round(τ_max B/η²)`` steps and is recorded
        ``n_records + 1`` times, evenly in steps.
    tau_max : float or array_like, shape (n,)
        Slow-time horizon of each configuration.
    seeds : int
        Replicas per configuration. Replica ``r = c·seeds + i`` draws from the ``r``-th generator
        spawned from ``seed``: its trajectory does not depend on the other configurations.
    s0 : float
        Initial scale (``w = √s0``, ``u = 1/√s0``, ``e = 0``).

    Returns
    -------
    list of ReducedEdgeResult

    Raises
    ------
    ValueError
        If a learning rate has no ceiling (``ηλ_1 ≥ 1``), or an argument is out of range.
    symbreak.engine.DivergenceError
        If a replica's ``w`` or ``u`` leaves every bounded region (e.g. ``s0`` far above the ceiling).
    """
    from .engine import DivergenceError  # noqa: F401  (raised through check_divergence)
    from .rng import spawn_rngs

    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    _check_gap(lam, k)
    etas = check_positive_array("etas", etas, ndim=1)
    bsz = np.asarray(batch_sizes)
    if bsz.shape != etas.shape:
        raise ValueError("batch_sizes must have one entry per learning rate")
    bsz = np.array([check_int("batch_sizes", b, minimum=1, maximum=10**7) for b in bsz], dtype=np.int64)
    tau_max = np.broadcast_to(_broadcast_positive("tau_max", tau_max), etas.shape)
    seeds = check_int("seeds", seeds, minimum=1, maximum=10**5)
    n_records = check_int("n_records", n_records, minimum=1, maximum=10**6)
    s0 = check_positive("s0", s0)
    noise_scale = check_positive("noise_scale", noise_scale)
    ceil = eos_ceiling(etas, lam[0])  # ValueError if no ceiling exists
    totals = []
    for eta, b, tm in zip(etas, bsz, tau_max):
        steps_f = tm * b / eta**2
        if not steps_f <= MAX_STEPS:
            raise ValueError(f"tau_max * B / eta² = {steps_f:.3g} steps (eta = {eta:g}, B = {b}) exceeds {MAX_STEPS}")
        totals.append(max(1, int(round(steps_f))))
    if seeds * sum(totals) > _MAX_MAP_WORK:
        raise ValueError(
            f"seeds × steps = {seeds * sum(totals):.3g} replica-steps exceeds {_MAX_MAP_WORK:.0e}: "
            "use fewer seeds or a shorter tau_max"
        )
    c1 = growth_rates(lam, k)[0]
    kernel = _edge_map_kernel()
    children = spawn_rngs(seed, etas.size * seeds)
    results = []
    for c, (eta, b, total) in enumerate(zip(etas, bsz, totals)):
        # σ_e² on a grid of s (it changes slowly with s_1: refreshed every 64 steps)
        # (up to twice the ceiling; beyond it the table's last value is used)
        grid = np.geomspace(min(s0, 1.0) / 2.0, 2.0 * float(np.atleast_1d(ceil)[c]), 120)
        table = noise_scale * _gain_noise_b1(lam, k, grid, float(eta)) / float(b) ** 2
        rec = np.unique(np.round(np.linspace(0, total, n_records + 1)).astype(np.int64))
        # two streams per replica (curvature, kicks): its numbers do not depend on the block sizes
        streams = [g.spawn(2) for g in children[c * seeds : (c + 1) * seeds]]
        w = np.full(seeds, math.sqrt(s0))
        u = 1.0 / w
        sig = np.zeros(seeds)
        half_drift = 0.5 * eta**2 * c1 / b
        out_s, out_e = np.empty((seeds, rec.size)), np.empty((seeds, rec.size))
        params = {"eta": float(eta), "batch_size": int(b)}
        b0 = nb = t = 0
        zb = xb = None
        for j, target in enumerate(rec):
            while t < target:
                if t >= b0 + nb:  # the next block of minibatch curvatures and kicks, per replica
                    b0, nb = t, min(4096, total - t)
                    if multiplicative:
                        zb = np.stack([g[0].standard_gamma(b / 2.0, nb) for g in streams], axis=1)
                        zb *= 2.0 * lam[0] * eta / b  # η Σ̂_11 = η λ_1 χ²_B/B
                    else:
                        zb = np.full((nb, seeds), lam[0] * eta)
                    xb = np.stack([g[1].standard_normal(nb) for g in streams], axis=1)
                m = min(int(target), b0 + nb) - t
                bad = kernel(w, u, sig, zb, xb, t - b0, m, t, grid, table, half_drift, DIVERGENCE_LIMIT)
                if bad >= 0:
                    check_divergence(
                        np.maximum(np.abs(w), np.abs(u)), step=t + bad // seeds, limit=DIVERGENCE_LIMIT, params=params
                    )
                t += m
            out_s[:, j] = w * w
            out_e[:, j] = w * u - 1.0
        results.append(
            ReducedEdgeResult(
                steps=rec, tau=rec * float(eta) ** 2 / float(b), s=out_s, e=out_e, eta=float(eta), batch_size=int(b)
            )
        )
    return results


_EDGE_KERNEL = None
#: Largest number of replica-steps one call of :func:`eos_reduced_map` may run (about 20 min).
_MAX_MAP_WORK = 10**11


def _edge_map_kernel():
    """The compiled inner loop of :func:`eos_reduced_map` (numba; compiled on first use)."""
    global _EDGE_KERNEL
    if _EDGE_KERNEL is not None:
        return _EDGE_KERNEL
    import numba

    @numba.njit(cache=False, nogil=True)
    def kernel(w, u, sig, zb, xb, off, n, t0, grid, table, half_drift, limit):  # pragma: no cover - compiled
        R = w.size
        for i in range(n):
            if (t0 + i) % 64 == 0:  # refresh σ_e(s_1) from the table
                for r in range(R):
                    sig[r] = math.sqrt(np.interp(w[r] * w[r], grid, table))
            for r in range(R):
                ez = zb[off + i, r] * (w[r] * u[r] - 1.0)  # 1. minibatch gradient step on ½Σ̂_11(wu − 1)²
                w1 = w[r] - ez * u[r]
                u1 = u[r] - ez * w[r]
                inv = 1.0 / (w1 * w1 + u1 * u1)
                dq = half_drift / (w1 * w1)  # 2. charge drift at fixed wu
                xi = xb[off + i, r] * sig[r]  # 3. gain kick at fixed q
                w[r] = w1 + (dq * w1 + xi * u1) * inv
                u[r] = u1 + (xi * w1 - dq * u1) * inv
                if not (abs(w[r]) <= limit and abs(u[r]) <= limit):
                    return i * R + r
        return -1

    _EDGE_KERNEL = kernel
    return kernel


def plateau_kappa(tau, s, tau_from: float, eta: float, lambda1: float, statistic: str = "median") -> np.ndarray:
    """Threshold ``κ = ηλ_1(m + 1/m)`` read off the plateau level ``m`` of the top scale, per seed.

    ``m`` is the median (``statistic="median"``), mean (``"mean"``) or maximum (``"max"``: the peaks)
    of ``s[i, τ ≥ tau_from]`` for each seed ``i`` (C.81 inverted).
    """
    tau = check_array("tau", tau, ndim=1)
    s = check_array("s", s, ndim=2)
    if s.shape[1] != tau.size:
        raise ValueError(f"s must have shape (seeds, {tau.size}) to match tau, got {s.shape}")
    statistic = check_choice("statistic", statistic, ("median", "mean", "max"))
    tau_from = check_nonnegative("tau_from", tau_from)
    eta = check_positive("eta", eta)
    lambda1 = check_positive("lambda1", lambda1)
    sel = tau >= tau_from
    if not np.any(sel):
        raise ValueError(f"tau_from = {tau_from:g} is past the last record (tau = {tau[-1]:g})")
    m = {"median": np.median, "mean": np.mean, "max": np.max}[statistic](s[:, sel], axis=1)
    if np.any(m <= 0):
        raise ValueError("s must be positive on the plateau")
    return finite_result("plateau_kappa", eta * lambda1 * (m + 1.0 / m))


def eos_reduced_kappa(
    eta: float,
    batch_size: int,
    *,
    lambdas,
    k: int,
    horizon: float = 2.0,
    plateau: float = 1.2,
    seeds: int = 16,
    n_records: int = 400,
    seed=None,
    **options,
) -> dict:
    """One point of a ``κ(η, B)`` diagram from :func:`eos_reduced_map` (a function for :func:`symbreak.sweep.sweep`).

    The map runs from ``s_1 = 1`` to ``horizon · τ_1*``, where ``τ_1*`` is the slow time at which
    Eq. 6 reaches the ``κ = 2`` ceiling (C.49, C.81), and the threshold is read off the plateau
    ``τ ≥ plateau · τ_1*`` with :func:`plateau_kappa`, exactly as for the SGD runs.

    Returns
    -------
    dict
        ``eta``, ``batch_size``, ``median``, ``mean``, ``max``: per-seed ``κ`` from the plateau's
        median, mean and maximum of ``s_1`` (arrays of shape ``(seeds,)``), ``s_median`` the
        plateau medians of ``s_1`` themselves, ``tau_from``.
        ``options`` are passed to :func:`eos_reduced_map` (``multiplicative``, ``noise_scale``).
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    horizon = check_positive("horizon", horizon)
    plateau = check_positive("plateau", plateau)
    if not plateau < horizon:
        raise ValueError(f"plateau ({plateau:g}) must be below horizon ({horizon:g})")
    eta = check_positive("eta", eta)
    t1 = float(lambert_time(eos_ceiling(eta, lam[0]), 1.0, growth_rates(lam, k)[0]))
    (res,) = eos_reduced_map(
        lam, k, [eta], [batch_size], horizon * t1, seeds=seeds, n_records=n_records, seed=seed, **options
    )
    sel = res.tau >= plateau * t1
    out = {
        "eta": eta,
        "batch_size": res.batch_size,
        "tau_from": plateau * t1,
        "s_median": np.median(res.s[:, sel], axis=1),
    }
    for stat in ("median", "mean", "max"):
        out[stat] = plateau_kappa(res.tau, res.s, plateau * t1, eta, lam[0], stat)
    return out


# --------------------------------------------------------------------------------------------
# batch sharpness (App. D)
# --------------------------------------------------------------------------------------------
def modified_batch_sharpness(lambdas, k: int, s, batch_size: int):
    """Modified batch sharpness on the PCA manifold for Gaussian data (D.21).

    ``MBS = E[∇L̂ᵀ Ĥ ∇L̂] / E[‖∇L̂‖²] = (1/B)(a_1 + (B + 1) a_2/a_1)`` with ``a_1 = Σ_a λ_a/s_a`` and
    ``a_2 = Σ_a λ_a²/s_a²`` (D.20). (The paper's D.19 drops a factor ``B``: Isserlis' theorem gives
    ``E tr K_B² = B a_1² + B(B + 1) a_2``, which is what D.21 uses.) ``s`` may carry leading batch
    axes.
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    s = check_array("s", s)
    if s.ndim == 0:
        s = _scales(s, k)
    if s.shape[-1:] != (k,) or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"s must have a last axis of length k = {k} with entries in (0, inf)")
    a1 = np.sum(lam[:k] / s, axis=-1)
    a2 = np.sum((lam[:k] / s) ** 2, axis=-1)
    out = (a1 + (batch_size + 1) * a2 / a1) / batch_size
    return finite_result("modified_batch_sharpness", float(out) if np.ndim(out) == 0 else out)


@dataclass
class BatchSharpness:
    """Monte Carlo batch sharpness at one point of the PCA manifold (App. D)."""

    bs: float  #: batch sharpness E[gᵀĤg / ‖g‖²] (D.1)
    bs_se: float  #: its standard error
    mbs: float  #: modified batch sharpness E[gᵀĤg] / E[‖g‖²] (D.16)
    mbs_se: float  #: its standard error (delta method)
    n_batches: int


def batch_sharpness_monte_carlo(
    lambdas, k: int, S, batch_size: int, n_batches: int, *, seed=None, chunk: int = 4096
) -> BatchSharpness:
    """Batch sharpness and modified batch sharpness by Monte Carlo over exact Gaussian minibatches.

    For each minibatch covariance ``Σ̂`` (drawn exactly, :class:`~symbreak.engine.WishartBlockSampler`)
    the minibatch gradient ``g = (∇_W L̂, ∇_U L̂)`` (A.11–A.12) and the minibatch Hessian quadratic
    form ``Ĥ(g, g) = tr[(W g_U + g_W U) Σ̂ (W g_U + g_W U)ᵀ] + 2 tr[g_W g_U Σ̂ (WU − I)ᵀ]`` (D.5) are
    computed directly from the matrices at ``W = Pᵀ S^{1/2}``, ``U = S^{-1/2} P`` (no use of the
    trace reduction D.10–D.14).

    Parameters
    ----------
    S : array_like
        Scales ``s`` (vector, ``S = diag(s)``) or a symmetric positive-definite ``k×k`` matrix.
    n_batches : int
        Number of minibatches.
    """
    lam = _spectrum(lambdas)
    d = lam.size
    k = _undercomplete_k(k, d)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    n_batches = check_int("n_batches", n_batches, minimum=2, maximum=MAX_DRAWS)
    chunk = check_int("chunk", chunk, minimum=1, maximum=10**6)
    W, U = pca_point(S, d)
    if W.shape[1] != k:
        raise ValueError(f"S must describe k = {k} scales")
    rng = make_rng(seed)
    sampler = WishartBlockSampler(np.sqrt(lam), np.array([batch_size]), max_steps=chunk)
    M = W @ U - np.eye(d)
    num, den = [], []
    done = 0
    while done < n_batches:
        n = min(chunk, n_batches - done)
        sh = sampler.draw(rng, n)[:, 0]
        gW = M @ sh @ U.T
        gU = W.T @ M @ sh
        J = W @ gU + gW @ U
        num.append(np.einsum("nij,nij->n", J @ sh, J) + 2.0 * np.einsum("nij,ij->n", gW @ gU @ sh, M))
        den.append(np.einsum("nij,nij->n", gW, gW) + np.einsum("nij,nij->n", gU, gU))
        done += n
    num, den = np.concatenate(num), np.concatenate(den)
    ratio = num / den
    bs, bs_se = float(ratio.mean()), float(ratio.std(ddof=1) / np.sqrt(n_batches))
    mn, md = num.mean(), den.mean()
    mbs = float(mn / md)
    cov = np.cov(num, den)
    var = (cov[0, 0] - 2.0 * mbs * cov[0, 1] + mbs * mbs * cov[1, 1]) / (md * md) / n_batches
    finite_result("batch_sharpness_monte_carlo", (bs, bs_se, mbs, var))
    return BatchSharpness(bs, bs_se, mbs, float(np.sqrt(var)), n_batches)


# --------------------------------------------------------------------------------------------
# charges, gradients, flows (App. A, E)
# --------------------------------------------------------------------------------------------
def noether_charge(W, U) -> np.ndarray:
    """Noether charge of the ``GL(k)`` symmetry, ``Q = WᵀW − UUᵀ`` (Eq. 2). Batched over leading axes.

    Its diagonal entries are the per-neuron charges ``q_i = ‖w_i‖² − ‖u_i‖²`` (E.13) and its trace
    is the scalar charge ``q = ‖W‖_F² − ‖U‖_F²``.
    """
    W, U = _check_pair(W, U)
    return finite_result("noether_charge", np.swapaxes(W, -1, -2) @ W - U @ np.swapaxes(U, -1, -2))


def minibatch_gradients(W, U, sigma_hat):
    """Minibatch gradients ``∇_W L̂ = (WU − I)Σ̂Uᵀ``, ``∇_U L̂ = Wᵀ(WU − I)Σ̂`` (A.11–A.12)."""
    W, U = _check_pair(W, U)
    M = W @ U - np.eye(W.shape[-2])
    ms = M @ _check_sigma_hat(sigma_hat, W.shape[-2])
    return finite_result("minibatch_gradients", (ms @ np.swapaxes(U, -1, -2), np.swapaxes(W, -1, -2) @ ms))


def sgd_step(W, U, sigma_hat, eta: float):
    """One SGD step on the minibatch loss with covariance ``Σ̂`` (A.13–A.14)."""
    eta = check_positive("eta", eta)
    W, U = _check_pair(W, U)
    gW, gU = minibatch_gradients(W, U, sigma_hat)
    return finite_result("sgd_step", (W - eta * gW, U - eta * gU))


def charge_increment(W, U, sigma_hat, eta: float) -> np.ndarray:
    """``Q_{t+1} − Q_t = η²[(∇_W L̂)ᵀ(∇_W L̂) − (∇_U L̂)(∇_U L̂)ᵀ]`` (A.15 / Eq. 3).

    The order-``η`` terms cancel exactly because ``Wᵀ∇_W L̂ = (∇_U L̂)Uᵀ``; on the PCA manifold
    ``∇_U L̂ = 0`` and the increment is positive semi-definite (A.26).
    """
    eta = check_positive("eta", eta)
    W, U = _check_pair(W, U)
    gW, gU = minibatch_gradients(W, U, sigma_hat)
    return finite_result(
        "charge_increment", (eta * eta) * (np.swapaxes(gW, -1, -2) @ gW - gU @ np.swapaxes(gU, -1, -2))
    )


def expected_charge_increment(W, U, lambdas, eta: float, batch_size: int) -> np.ndarray:
    """Exact mean ``E[Q_{t+1} − Q_t | W, U]`` over a fresh Gaussian minibatch, at any point.

    With ``M = WU − I`` and the Wishart moment ``E[Σ̂ A Σ̂] = (1 + 1/B) Σ A Σ + tr(AΣ) Σ/B``
    (``A`` symmetric; Isserlis),

    ``E[ΔQ] = η² { U[(1 + 1/B) Σ MᵀM Σ + tr(MᵀMΣ) Σ/B] Uᵀ − WᵀM[(1 + 1/B) Σ² + tr(Σ) Σ/B] MᵀW }``.

    On the PCA manifold it reduces to ``(η²/B) S^{-1/2} C S^{-1/2}`` (C.32–C.33); off the manifold
    the population-gradient terms ``(1 + 1/B)(…)`` add the finite-``η`` corrections. Batched over
    leading axes of ``W`` and ``U``.
    """
    lam = check_positive_array("lambdas", lambdas, ndim=1)
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1)
    d = lam.size
    W, U = _check_pair(W, U, d=d)
    M = W @ U - np.eye(d)
    Mt = np.swapaxes(M, -1, -2)
    mtm = Mt @ M
    tr_ = np.einsum("...ii,i->...", mtm, lam)[..., None, None]
    first = (1 + 1 / b) * (lam[:, None] * mtm * lam[None, :]) + tr_ * np.diag(lam) / b
    wm = np.swapaxes(W, -1, -2) @ M
    second = (1 + 1 / b) * np.diag(lam**2) + lam.sum() * np.diag(lam) / b
    return finite_result(
        "expected_charge_increment",
        (eta * eta) * (U @ first @ np.swapaxes(U, -1, -2) - wm @ second @ np.swapaxes(wm, -1, -2)),
    )


def charge_increments_along_sgd(lambdas, k: int, eta: float, batch_size: int, steps: int, *, init="pca", seed=None):
    """Follow one SGD run step by step and record every charge increment ``ΔQ_t = Q_{t+1} − Q_t``.

    Float64, one replica, plain matrix algebra (:func:`sgd_step`), minibatch covariances drawn
    exactly. For each step returns the extreme eigenvalues of the measured ``ΔQ_t``, of the formula
    A.15 evaluated at the same state and batch, and of the PSD increment A.26 at the PCA point
    with the same ``S_t = W_tᵀW_t`` (same batch, rotated to the eigenbasis of ``S_t``).

    Returns
    -------
    dict of numpy.ndarray
        ``measured``, ``formula`` (steps, k, k) increments (measured and A.15); ``formula_error``
        (steps,) ``max|measured − A.15|``; ``min_eig``, ``max_eig`` (steps,) of the measured increment;
        ``manifold_min_eig`` (steps,) of A.26 at the projected PCA point; ``S`` (steps + 1, k, k).
    """
    from .engine import wishart_covariance

    lam = _spectrum(lambdas)
    d = lam.size
    k = _undercomplete_k(k, d)
    eta = check_positive("eta", eta)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    steps = check_int("steps", steps, minimum=1, maximum=MAX_DRAWS // (k * k))  # stores steps k×k increments
    rng = make_rng(seed)
    W, U = _make_init(init, lam, k, 0.01)(rng)
    sig = wishart_covariance(rng, np.sqrt(lam), batch_size, steps)
    meas = np.empty((steps, k, k))
    form = np.empty((steps, k, k))
    man = np.empty(steps)
    S = [W.T @ W]
    for t in range(steps):
        q0 = noether_charge(W, U)
        form[t] = charge_increment(W, U, sig[t], eta)
        try:
            Wm, Um = pca_point(S[-1], d)  # the manifold point with the same scale matrix
        except ValueError:
            raise ValueError(
                f"charge_increments_along_sgd: at step {t} the scale matrix S = WᵀW is singular: SGD "
                f"at eta = {eta:g}, batch_size = {batch_size} has collapsed a mode (eta is past the "
                "stability edge)"
            ) from None
        man[t] = np.linalg.eigvalsh(charge_increment(Wm, Um, sig[t], eta)).min()
        with np.errstate(over="ignore", invalid="ignore"):
            W, U = sgd_step(W, U, sig[t], eta)
        check_divergence(
            np.array([max(np.abs(W).max(), np.abs(U).max())]),
            step=t + 1,
            limit=DIVERGENCE_LIMIT,
            params={"eta": eta, "batch_size": batch_size},
        )
        meas[t] = noether_charge(W, U) - q0
        S.append(W.T @ W)
    ev = np.linalg.eigvalsh(meas)
    return {
        "measured": meas,
        "formula": form,
        "formula_error": np.abs(meas - form).max(axis=(1, 2)),
        "min_eig": ev[:, 0],
        "max_eig": ev[:, -1],
        "manifold_min_eig": man,
        "S": np.array(S),
    }


def saturation_scale(result: "SGDResult", tau_from: float, tau_to: float | None = None, mode: int = 0) -> np.ndarray:
    """Time average of ``s_mode = (WᵀW)_mode,mode`` over ``τ ∈ [tau_from, tau_to]``, one value per seed."""
    if not isinstance(result, SGDResult):
        raise TypeError(f"result must be an SGDResult (from simulate_sgd), got {type(result).__name__}")
    tau_from = check_positive("tau_from", tau_from)
    if tau_to is not None:
        tau_to = check_positive("tau_to", tau_to, allow_inf=True)
    mode = check_int("mode", mode, minimum=0, maximum=result.k - 1)
    sel = (result.tau >= tau_from) & (result.tau <= (np.inf if tau_to is None else tau_to))
    if sel.sum() < 2:
        raise ValueError("tau_from/tau_to must select at least two records")
    return finite_result("saturation_scale", result.scales[:, sel, mode].mean(axis=1))


def gradient_flow_horizon(lambdas) -> float:
    """The longest horizon :func:`gradient_flow` accepts: ``MAX_ODE_EVALUATIONS / (2 λ_1)``.

    Near a critical point the explicit DOP853 is held by stability to steps ``h ≲ 6/ρ``, ``ρ`` the
    largest Hessian eigenvalue, and spends 12 evaluations a step, so ``t`` costs about ``2ρt``
    evaluations. ``ρ ≥ λ_1`` at the critical points the flow approaches: ``λ_1`` at ``W = U = 0``,
    ``≥ 2λ_1`` on the PCA manifold (:func:`hessian_lambda_max`; ``24`` for ``λ_1 = 12``, ``s = 1``). A horizon past this bound would exhaust
    the work bound of :func:`symbreak.validation.solve_ivp_bounded` after seconds of work; it is
    refused at once instead.
    """
    lam = _spectrum(lambdas)
    return MAX_ODE_EVALUATIONS / (2.0 * float(lam[0]))


def gradient_flow(W0, U0, lambdas, times, *, rtol: float = 1e-12, atol: float = 1e-12):
    """Integrate population gradient flow (A.6) ``Ẇ = −(WU − I)ΣUᵀ``, ``U̇ = −Wᵀ(WU − I)Σ``.

    Horizons up to :func:`gradient_flow_horizon` (``~4000`` for ``λ_1 = 12``); a longer one raises
    ``ValueError`` at once, before any integration.

    Returns
    -------
    W : numpy.ndarray, shape (n, d, k)
    U : numpy.ndarray, shape (n, k, d)
        At the requested ``times`` (non-decreasing, ``≥ 0``).
    """
    lam = _spectrum(lambdas)
    d = lam.size
    W0, U0 = _check_decoder_encoder(W0, U0, d, names=("W0", "U0"))
    rtol = check_tolerance("rtol", rtol)
    atol = check_tolerance("atol", atol)
    k = W0.shape[1]
    times = check_array("times", times, ndim=1)
    if times.size == 0 or np.any(times < 0) or np.any(np.diff(times) < 0):
        raise ValueError("times must be a non-empty, non-decreasing array >= 0")
    t_max = gradient_flow_horizon(lam)
    if times[-1] > t_max:
        raise ValueError(
            f"times must end at t <= {t_max:.6g} for lambda_1 = {lam[0]:.6g}, got {times[-1]:.6g}: near the "
            f"critical points the flow approaches, DOP853 needs about 2 lambda_1 t = {2.0 * lam[0] * times[-1]:.3g} "
            f"evaluations of the vector field, more than the work bound {MAX_ODE_EVALUATIONS} (the flow relaxes "
            "on times of order 1/lambda, far shorter)"
        )
    eye = np.eye(d)

    def rhs(_t, y):
        w = y[: d * k].reshape(d, k)
        u = y[d * k :].reshape(k, d)
        ms = (w @ u - eye) * lam[None, :]
        return np.concatenate([-(ms @ u.T).ravel(), -(w.T @ ms).ravel()])

    y = solve_ivp_bounded(
        rhs,
        float(times[-1]),
        np.concatenate([W0.ravel(), U0.ravel()]),
        times,
        method="DOP853",
        rtol=rtol,
        atol=atol,
        what="gradient_flow",
    )
    return y[:, : d * k].reshape(-1, d, k), y[:, d * k :].reshape(-1, k, d)


def sample_gradients(W, U, X, activation: str = "relu"):
    """Minibatch gradients from data points, ``L̂ = (1/2B) Σ_i ‖W φ(U x_i) − x_i‖²``.

    ``∇_W L̂ = R φ(H)ᵀ/B`` and ``∇_U L̂ = [(WᵀR) ⊙ φ'(H)] Xᵀ/B`` with ``H = UX``, ``R = Wφ(H) − X``;
    ``X`` has shape (d, B). Batched over leading axes.
    """
    activation = check_choice("activation", activation, ("linear", "relu"))
    W, U = _check_pair(W, U)
    X = check_array("X", X)
    if X.ndim < 2 or X.shape[-2] != W.shape[-2] or X.shape[-1] == 0:
        raise ValueError(f"X must have shape (..., d, B) with d = {W.shape[-2]} and B >= 1, got {X.shape}")
    b = X.shape[-1]
    H = U @ X
    A = np.maximum(H, 0.0) if activation == "relu" else H
    R = W @ A - X
    back = np.swapaxes(W, -1, -2) @ R
    if activation == "relu":
        back = back * (H > 0)
    return finite_result("sample_gradients", (R @ np.swapaxes(A, -1, -2) / b, back @ np.swapaxes(X, -1, -2) / b))


def neuron_balance_autograd(W, U, x, activation: str = "relu") -> np.ndarray:
    """``⟨∇_{w_i} ℓ, w_i⟩ − ⟨∇_{u_i} ℓ, u_i⟩`` for one example, by autograd (zero by E.4 / E.14).

    ``ℓ = ½‖W φ(Ux) − x‖²``; ``w_i`` is the ``i``-th column of ``W``, ``u_iᵀ`` the ``i``-th row of ``U``.
    Returns one value per hidden unit.
    """
    import torch

    activation = check_choice("activation", activation, ("linear", "relu"))
    W, U = _check_pair(W, U)
    if W.ndim != 2 or U.ndim != 2:
        raise ValueError(f"W and U must be single matrices (d, k) and (k, d) here, got {W.shape} and {U.shape}")
    x = check_array("x", x, shape=(W.shape[0],))
    w = torch.tensor(W, requires_grad=True)
    u = torch.tensor(U, requires_grad=True)
    xt = torch.tensor(x)
    h = u @ xt
    out = w @ (torch.relu(h) if activation == "relu" else h)
    loss = 0.5 * torch.sum((out - xt) ** 2)
    gw, gu = torch.autograd.grad(loss, (w, u))
    return finite_result("neuron_balance_autograd", ((gw * w).sum(0) - (gu * u).sum(1)).detach().numpy())


def residual_split(W, U, X, activation: str = "relu"):
    """Mean squared residual tangent and normal to the decoder image (App. E.1).

    At an input ``x`` the network's output ``g(h(x)) = W φ(Ux)`` moves, for small changes of the
    hidden code ``z = φ(Ux)`` that the encoder can produce, within the span of the decoder columns
    ``w_i`` of the *active* units (all units for the linear network): that span is the tangent
    space of the decoder image at ``g(h(x))``. ``r_∥`` is the projection of the residual
    ``r = g(h(x)) − x`` onto it and ``r_⊥ = r − r_∥`` satisfies ``(∂g/∂z)ᵀ r_⊥ = 0`` on the active
    units, so the encoder gradient sees only ``r_∥``. Returns ``(E‖r_∥‖², E‖r_⊥‖²)`` over the
    columns of ``X`` (shape (d, n)).
    """
    activation = check_choice("activation", activation, ("linear", "relu"))
    W, U = _check_pair(W, U)
    if W.ndim != 2:
        raise ValueError(f"W and U must be single matrices (d, k) and (k, d) here, got {W.shape}")
    X = check_array("X", X, ndim=2)
    if X.shape[0] != W.shape[0] or X.shape[1] == 0:
        raise ValueError(f"X must have shape ({W.shape[0]}, n) with n >= 1, got {X.shape}")
    H = U @ X
    R = W @ (np.maximum(H, 0.0) if activation == "relu" else H) - X
    if activation == "linear":
        par = W @ np.linalg.lstsq(W, R, rcond=None)[0]
    else:
        Wa = W[None, :, :] * (H.T > 0)[:, None, :]  # (n, d, k): columns of the active units
        par = (Wa @ (np.linalg.pinv(Wa) @ R.T[:, :, None]))[..., 0].T
    return finite_result(
        "residual_split", (float(np.mean(np.sum(par**2, axis=0))), float(np.mean(np.sum((R - par) ** 2, axis=0))))
    )


def _relu_second_moments(U, lam):
    """``E[h hᵀ]`` for ``h = relu(U x)``, ``x ~ N(0, diag λ)`` (arc-cosine kernel of degree 1)."""
    C = (U * lam) @ np.swapaxes(U, -1, -2)
    sd = np.sqrt(np.clip(np.diagonal(C, axis1=-2, axis2=-1), 0.0, None))
    outer = sd[..., :, None] * sd[..., None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(outer > 0, C / np.where(outer > 0, outer, 1.0), 0.0)
    rho = np.clip(rho, -1.0, 1.0)
    theta = np.arccos(rho)
    return outer / (2.0 * np.pi) * (np.sin(theta) + (np.pi - theta) * rho)


def population_loss(W, U, lambdas, activation: str = "linear"):
    """Population reconstruction loss ``½ E‖W φ(Ux) − x‖²`` for ``x ~ N(0, diag λ)``.

    Linear: ``½ tr[(WU − I)Σ(WU − I)ᵀ]`` (A.5). ReLU: exact, from the arc-cosine kernel
    ``E[relu(z_i) relu(z_j)] = σ_iσ_j (sin θ_ij + (π − θ_ij) cos θ_ij)/(2π)`` and
    ``E[relu(u_i·x) x] = Σu_i/2``. Batched over leading axes of ``W`` (``(..., d, k)``) and ``U``.
    """
    lam = check_positive_array("lambdas", lambdas, ndim=1)
    activation = check_choice("activation", activation, ("linear", "relu"))
    d = lam.size
    W, U = _check_pair(W, U, d=d)
    if activation == "linear":
        M = W @ U - np.eye(d)
        return finite_result("population_loss", 0.5 * np.sum(M * M * lam, axis=(-2, -1)))
    m2 = _relu_second_moments(U, lam)
    wtw = np.swapaxes(W, -1, -2) @ W
    cross = 0.5 * np.sum(np.diagonal(W @ U, axis1=-2, axis2=-1) * lam, axis=-1)
    return finite_result("population_loss", 0.5 * (np.sum(m2 * wtw, axis=(-2, -1)) - 2.0 * cross + lam.sum()))


# --------------------------------------------------------------------------------------------
# the SGD engine
# --------------------------------------------------------------------------------------------
@dataclass
class SGDResult:
    """Recorded SGD trajectories of one configuration ``(η, B)``, several seeds.

    Arrays are indexed ``[seed, record]`` (and then matrix indices).
    """

    steps: np.ndarray  #: (R,) SGD steps at which the state was recorded
    tau: np.ndarray  #: (R,) slow time ``steps · η²/B``
    S: np.ndarray  #: (seeds, R, k, k) ``WᵀW``
    Q: np.ndarray  #: (seeds, R, k, k) ``WᵀW − UUᵀ``
    loss: np.ndarray  #: (seeds, R) population loss
    eta: float
    batch_size: int
    lambdas: np.ndarray
    k: int
    activation: str = "linear"
    sampler: str = "wishart"
    W: np.ndarray | None = field(default=None, repr=False)  #: (seeds, R, d, k) if recorded
    U: np.ndarray | None = field(default=None, repr=False)  #: (seeds, R, k, d) if recorded

    @property
    def scales(self) -> np.ndarray:
        """``s_a = (WᵀW)_aa``, shape (seeds, R, k)."""
        return np.diagonal(self.S, axis1=-2, axis2=-1)

    @property
    def q(self) -> np.ndarray:
        """Scalar charge ``q = tr Q = ‖W‖_F² − ‖U‖_F²``, shape (seeds, R)."""
        return np.trace(self.Q, axis1=-2, axis2=-1)

    @property
    def neuron_charges(self) -> np.ndarray:
        """Per-neuron charges ``q_i = ‖w_i‖² − ‖u_i‖²`` (E.13), shape (seeds, R, k)."""
        return np.diagonal(self.Q, axis1=-2, axis2=-1)

    @property
    def decoder_norm(self) -> np.ndarray:
        """``‖W‖_F``, shape (seeds, R)."""
        return np.sqrt(np.trace(self.S, axis1=-2, axis2=-1))

    @property
    def encoder_norm(self) -> np.ndarray:
        """``‖U‖_F``, shape (seeds, R)."""
        return np.sqrt(np.clip(np.trace(self.S - self.Q, axis1=-2, axis2=-1), 0.0, None))


_BLOCK = 64  # at most this many SGD steps have their minibatches drawn in one go
_BLOCK_DRAWS = 1024  # ... and at most about this many minibatches (steps × replicas) per block


class _LinearStepper:
    """In-place SGD steps for a stack of linear autoencoders, state ``V = [U; Wᵀ]`` (R, 2k, d).

    The learning rate is folded into the minibatch covariance (the update is linear in ``Σ̂``):
    with ``P = (WU − I)(ηΣ̂) = W(U ηΣ̂) − ηΣ̂``, ``η∇_U L̂ = WᵀP`` and ``η∇_W L̂ᵀ = U Pᵀ``. Six NumPy
    calls and ``4kd²`` multiply-adds per step; for the small stacks of the book the call overhead
    matters as much as the arithmetic.
    """

    def __init__(self, V: np.ndarray, k: int):
        self.V = V
        r, _, d = V.shape
        self.k, self.d = k, d
        self.G = np.empty_like(V)
        self.Y = np.empty((r, k, d), V.dtype)
        self.P = np.empty((r, d, d), V.dtype)

    def step(self, sig: np.ndarray) -> None:
        V, G, Y, P, k = self.V, self.G, self.Y, self.P, self.k
        U, Wt = V[:, :k], V[:, k:]
        np.matmul(U, sig, out=Y)
        np.matmul(Wt.transpose(0, 2, 1), Y, out=P)
        P -= sig
        np.matmul(Wt, P, out=G[:, :k])
        np.matmul(U, P.transpose(0, 2, 1), out=G[:, k:])
        V -= G


def _linear_sgd_block(S, t0, t1, V, k, Y, P, G):  # pragma: no cover - run compiled
    """Steps ``t0 … t1 − 1`` of a block for every replica of the stack ``V = [U; Wᵀ]`` (R, 2k, d),
    compiled (numba, ``nogil``): the update of :meth:`_LinearStepper.step` with the same BLAS
    products (``np.dot`` calls ``gemm``) in the same order, so the numbers are bit for bit those of
    the NumPy path; one call replaces about ten NumPy calls per step, which is what the small
    ensembles of the book pay for. ``S`` (R, t1 − t0, d, d) holds the steps' ``ηΣ̂`` (built by
    :func:`symbreak.engine._bartlett_kernel`); ``P`` (d, d), ``Y`` (k, d) and ``G`` (2k, d) are
    scratch."""
    d = V.shape[2]
    for r in range(V.shape[0]):
        U = V[r, :k]
        Wt = V[r, k:]
        for t in range(t0, t1):
            Sr = S[r, t - t0]
            np.dot(U, Sr, Y)
            np.dot(Wt.T, Y, P)
            for i in range(d):
                for j in range(d):
                    P[i, j] -= Sr[i, j]
            np.dot(Wt, P, G[:k])
            np.dot(U, P.T, G[k:])
            for a in range(2 * k):
                for j in range(d):
                    V[r, a, j] -= G[a, j]


class _FusedLinearStepper:
    """:class:`_LinearStepper` in compiled blocks: each block's ``ηΣ̂`` from the variates by the
    engine's compiled Bartlett kernel, then the steps by :func:`_linear_sgd_block`."""

    #: replicas whose block of ηΣ̂ is built and used at a time (it then stays in the core's cache)
    GROUP = 16

    def __init__(self, V: np.ndarray, k: int):
        self.V = V
        d, dt = V.shape[2], V.dtype
        self.k = k
        self.S = np.empty((min(self.GROUP, V.shape[0]), 0, d, d), dt)
        self.scratch = (np.empty((k, d), dt), np.empty((d, d), dt), np.empty((2 * k, d), dt))
        self.bartlett = _bartlett_kernel()
        self.kernel = _compiled(_linear_sgd_block)

    def steps(self, variates, t0: int, t1: int) -> None:
        z, g, mz, mg = variates
        n, d = self.S.shape[0], self.V.shape[2]
        if self.S.shape[1] < t1 - t0:
            self.S = np.empty((n, t1 - t0, d, d), self.V.dtype)
        for a in range(0, self.V.shape[0], n):
            b = min(a + n, self.V.shape[0])
            self.bartlett(z[a:b], g[a:b], mz[a:b], mg[a:b], np.arange(b - a), t0, t1, self.S)
            self.kernel(self.S, t0, t1, self.V[a:b], self.k, *self.scratch)


def _samples_sgd_block(X, t0, t1, W, U, relu, H, A, R, back, gW, gU):  # pragma: no cover - run compiled
    """Steps ``t0 … t1 − 1`` of :meth:`_SamplesModel.step` for every replica, compiled (numba,
    ``nogil``): the same BLAS products (``np.dot`` calls ``gemm``) and element-wise operations in
    the same order, so bit for bit the NumPy path's numbers, in one call instead of about ten NumPy
    calls per step. ``X`` (R, m, d, B) holds the scaled data points; ``H``, ``A``, ``back`` (k, B),
    ``R`` (d, B), ``gW`` (d, k), ``gU`` (k, d) are scratch."""
    k, b = H.shape
    d = R.shape[0]
    for r in range(W.shape[0]):
        Wr = W[r]
        Ur = U[r]
        for t in range(t0, t1):
            x = X[r, t]
            np.dot(Ur, x, H)
            if relu:
                for a in range(k):
                    for j in range(b):
                        h = H[a, j]
                        A[a, j] = h if (h >= 0.0 or h != h) else 0.0  # np.maximum(h, 0.0), NaN kept
                np.dot(Wr, A, R)
            else:
                np.dot(Wr, H, R)
            for i in range(d):
                for j in range(b):
                    R[i, j] -= x[i, j]
            np.dot(Wr.T, R, back)
            if relu:
                for a in range(k):
                    for j in range(b):
                        if not H[a, j] > 0.0:
                            back[a, j] = 0.0 * back[a, j]
                np.dot(R, A.T, gW)
            else:
                np.dot(R, H.T, gW)
            np.dot(back, x.T, gU)
            for i in range(d):
                for a in range(k):
                    Wr[i, a] -= gW[i, a]
            for a in range(k):
                for i in range(d):
                    Ur[a, i] -= gU[a, i]


def _record_linear(V, k, lam, want_weights):
    V = V.astype(np.float64)
    U, Wt = V[:, :k], V[:, k:]
    S = Wt @ Wt.transpose(0, 2, 1)
    Q = S - U @ U.transpose(0, 2, 1)
    M = Wt.transpose(0, 2, 1) @ U - np.eye(V.shape[2])
    loss = 0.5 * np.einsum("rij,j->r", M * M, lam)
    return S, Q, loss, (Wt.transpose(0, 2, 1).copy(), U.copy()) if want_weights else None


def _record_samples(W, U, k, lam, activation, want_weights):
    W = W.astype(np.float64)
    U = U.astype(np.float64)
    S = W.transpose(0, 2, 1) @ W
    Q = S - U @ U.transpose(0, 2, 1)
    loss = population_loss(W, U, lam, activation)
    return S, Q, loss, (W.copy(), U.copy()) if want_weights else None


#: From this many replicas on, _LinearModel builds each step's Σ̂ when the step reads it.
_STEPWISE_MIN_REPLICAS = 24
#: Below this many replicas in a chunk, _LinearModel takes its steps in compiled blocks (where every
#: replica draws by the Bartlett decomposition); from it on, the batched NumPy products. No limit: on
#: two threads the compiled step, which holds no lock, is faster at the benchmark's 2 × 64 replicas
#: (float64: 490k against 464k replica-steps/s, means of five and three runs on the same machine),
#: although one thread alone runs the batched NumPy path faster (3.3 against 3.7 µs per replica-step).
_FUSED_MAX_REPLICAS = 2**31 - 1


class _LinearModel:
    """The linear autoencoder's step for :func:`symbreak.engine.run_ensemble` (Wishart minibatches)."""

    def __init__(self, reps, streams, lam, k, etas, bsz, init, dtype, want_weights):
        d, n = lam.size, len(reps)
        V = np.empty((n, 2 * k, d), dtype=dtype)
        for j in range(n):
            W0, U0 = init[reps[j]](streams[j])
            V[j, :k] = U0
            V[j, k:] = W0.T
        self.k, self.lam, self.dtype, self.want_weights = k, lam, dtype, want_weights
        self.streams = list(streams)
        self.sampler = WishartBlockSampler(np.sqrt(lam), bsz[reps], scale=etas[reps], dtype=dtype, max_steps=_BLOCK)
        # the compiled step saves the ~10 NumPy calls per step that a small chunk pays (2 replicas: 13.7
        # against 33 µs per replica-step) and the lock those calls take; the numbers are the same
        self.fused = self.sampler.bartlett_only and n < _FUSED_MAX_REPLICAS
        self.stepper = (_FusedLinearStepper if self.fused else _LinearStepper)(V, k)
        if self.fused:  # the runner calls steps(); the compiled step builds each Σ̂ itself
            self.steps = self._steps

    def draw(self, m):
        # bit-identical paths. Fused (every B >= d): the block's variates only, the compiled step does
        # the rest. Otherwise: with many replicas each step's Σ̂ is built as it is used
        # (cache-friendly); with few, per-step assembly costs more than it saves
        if self.fused:
            return self.sampler.variates(self.streams, m)
        if len(self.streams) >= _STEPWISE_MIN_REPLICAS:
            return self.sampler.draw_steps(self.streams, m)
        return self.sampler.draw(self.streams, m)

    def step(self, sig, t, _step):
        if self.fused:
            self.stepper.steps(sig, t, t + 1)
        else:
            self.stepper.step(sig[t])

    def _steps(self, variates, t0, t1, _step):
        self.stepper.steps(variates, t0, t1)

    def magnitude(self):
        return np.abs(self.stepper.V).max(axis=(1, 2))

    def record(self, mask):
        S, Q, loss, wu = _record_linear(self.stepper.V[mask], self.k, self.lam, self.want_weights)
        return (S, Q, loss) + (wu if wu is not None else ())

    def final(self, mask):
        return ()

    def keep(self, mask):
        self.sampler.keep(mask)
        self.stepper = type(self.stepper)(np.ascontiguousarray(self.stepper.V[mask]), self.k)
        self.streams = [s for s, kp in zip(self.streams, mask) if kp]


class _TorchLinearModel:
    """:class:`_LinearModel` on a torch device (the GPU path): the same step with ``torch.bmm``,
    the minibatches drawn on the device (:class:`symbreak.engine.TorchWishartBlockSampler`)."""

    def __init__(self, reps, streams, lam, k, etas, bsz, init, dtype, want_weights, device):
        import torch

        d, n = lam.size, len(reps)
        V = np.empty((n, 2 * k, d), dtype=dtype)
        for j in range(n):
            W0, U0 = init[reps[j]](streams[j])
            V[j, :k] = U0
            V[j, k:] = W0.T
        self.torch, self.k, self.lam, self.want_weights = torch, k, lam, want_weights
        self.device = torch.device(device)
        self.V = torch.as_tensor(V, device=self.device)
        gen = torch.Generator(device=self.device)
        gen.manual_seed(int(streams[0].integers(2**63)))
        self.sampler = TorchWishartBlockSampler(
            np.sqrt(lam), bsz[reps], scale=etas[reps], dtype=dtype, device=self.device, generator=gen
        )

    def draw(self, m):
        return self.sampler.draw(m)

    def step(self, sig, t, _step):
        V, k = self.V, self.k
        U, Wt, s = V[:, :k], V[:, k:], sig[t]
        P = Wt.transpose(1, 2) @ (U @ s) - s
        V[:, :k] -= Wt @ P
        V[:, k:] -= U @ P.transpose(1, 2)

    def magnitude(self):
        return self.V.abs().amax(dim=(1, 2)).cpu().numpy()

    def record(self, mask):
        V = self.V[self.torch.as_tensor(mask, device=self.device)].cpu().numpy()
        S, Q, loss, wu = _record_linear(V, self.k, self.lam, self.want_weights)
        return (S, Q, loss) + (wu if wu is not None else ())

    def final(self, mask):
        return ()

    def keep(self, mask):
        self.V = self.V[self.torch.as_tensor(mask, device=self.device)].contiguous()
        self.sampler.keep(mask)


class _SamplesModel:
    """The autoencoder's step with the ``B`` data points drawn (any activation)."""

    def __init__(self, reps, streams, lam, k, etas, bsz, init, dtype, want_weights, activation):
        d, n = lam.size, len(reps)
        b = int(bsz[reps[0]])
        if np.any(bsz[reps] != b):
            raise ValueError("sampler='samples' needs one batch size for all configurations")
        self.W = np.empty((n, d, k), dtype=dtype)
        self.U = np.empty((n, k, d), dtype=dtype)
        for j in range(n):
            self.W[j], self.U[j] = init[reps[j]](streams[j])
        # φ is positively homogeneous, so η∇L̂(x) = ∇L̂(c x) with c = sqrt(η/B): fold the step into the data
        self.amp = (np.sqrt(etas[reps] / b)[:, None] * np.sqrt(lam)[None, :]).astype(dtype)[:, :, None]  # (n, d, 1)
        self.k, self.d, self.b, self.lam, self.dtype = k, d, b, lam, dtype
        self.want_weights, self.activation, self.relu = want_weights, activation, activation == "relu"
        self.streams = list(streams)
        self._buffers(n)
        self.kernel = _compiled(_samples_sgd_block)

    def steps(self, X, t0, t1, _step):
        """Steps ``t0 … t1 − 1`` at once, compiled (:func:`_samples_sgd_block`): the numbers of :meth:`step`."""
        self.kernel(X, t0, t1, self.W, self.U, self.relu, *self._scratch)

    def _buffers(self, m):
        k, d, b, dt = self.k, self.d, self.b, self.dtype
        self.H, self.A, self.R = np.empty((m, k, b), dt), np.empty((m, k, b), dt), np.empty((m, d, b), dt)
        self.gW, self.back, self.gU = np.empty((m, d, k), dt), np.empty((m, k, b), dt), np.empty((m, k, d), dt)
        self.mask = np.empty((m, k, b), dtype=bool)
        self._scratch = tuple(np.empty(shape, dt) for shape in ((k, b), (k, b), (d, b), (k, b), (d, k), (k, d)))

    def draw(self, m):
        X = np.empty((len(self.streams), m, self.d, self.b), dtype=self.dtype)
        fill_normals(self.streams, X)  # each replica's own stream, as standard_normal(out=X[j])
        X *= self.amp[:, None]
        return X

    def step(self, X, t, _step):
        W, U, H, A, R, gW, back, gU, mask = (
            self.W,
            self.U,
            self.H,
            self.A,
            self.R,
            self.gW,
            self.back,
            self.gU,
            self.mask,
        )
        x = X[:, t]
        np.matmul(U, x, out=H)
        if self.relu:
            np.maximum(H, 0.0, out=A)
            np.greater(H, 0.0, out=mask)
        act = A if self.relu else H
        np.matmul(W, act, out=R)
        R -= x
        np.matmul(W.transpose(0, 2, 1), R, out=back)
        if self.relu:
            back *= mask
        np.matmul(R, act.transpose(0, 2, 1), out=gW)
        np.matmul(back, x.transpose(0, 2, 1), out=gU)
        W -= gW
        U -= gU

    def magnitude(self):
        return np.maximum(np.abs(self.W).max(axis=(1, 2)), np.abs(self.U).max(axis=(1, 2)))

    def record(self, mask):
        S, Q, loss, wu = _record_samples(
            self.W[mask], self.U[mask], self.k, self.lam, self.activation, self.want_weights
        )
        return (S, Q, loss) + (wu if wu is not None else ())

    def final(self, mask):
        return ()

    def keep(self, mask):
        self.W, self.U = np.ascontiguousarray(self.W[mask]), np.ascontiguousarray(self.U[mask])
        self.amp = self.amp[mask]
        self.streams = [s for s, kp in zip(self.streams, mask) if kp]
        self._buffers(len(self.streams))


def _make_init(init, lam, k, init_std):
    d = lam.size
    if isinstance(init, str):
        init = check_choice("init", init, ("pca", "random"))
        if init == "pca":
            if k >= d:
                raise ValueError(f"init='pca' needs an undercomplete autoencoder, k < d = {d}; got k = {k}")
            W0, U0 = pca_point(np.ones(k), d)
            return lambda rng: (W0, U0)
        std = check_positive("init_std", init_std)
        return lambda rng: (std * rng.standard_normal((d, k)), std * rng.standard_normal((k, d)))
    try:
        W0, U0 = init
    except (TypeError, ValueError):
        raise ValueError("init must be 'pca', 'random' or a pair (W0, U0) of arrays") from None
    W0 = check_array("init W0", W0, shape=(d, k))
    U0 = check_array("init U0", U0, shape=(k, d))
    return lambda rng: (W0, U0)


def _run(
    lam,
    k,
    etas,
    bsz,
    rec_steps,
    *,
    seeds,
    init,
    init_std,
    activation,
    sampler,
    dtype,
    seed,
    record_weights,
    device=None,
    shared_streams=False,
):
    """Run every configuration × seed as one ensemble on :func:`symbreak.engine.run_ensemble`.

    ``shared_streams``: seed ``s`` of every configuration draws from the stream ``(seed, s)`` (common
    random numbers across configurations) instead of the engine's stream ``(seed, c·seeds + s)``.
    """
    n_conf = len(etas)
    if isinstance(init, list):
        if len(init) != n_conf:
            raise ValueError(f"init must have one entry per configuration ({n_conf}), got {len(init)}")
        fns = [_make_init(i, lam, k, init_std) for i in init]
    else:
        fns = [_make_init(init, lam, k, init_std)] * n_conf
    init_r = [fns[c] for c in range(n_conf) for _ in range(seeds)]
    etas_r, bsz_r = np.repeat(etas, seeds), np.repeat(bsz, seeds)
    confs = [
        Configuration(
            seeds, np.asarray(rec_steps[c], dtype=np.int64), {"eta": float(etas[c]), "batch_size": int(bsz[c])}
        )
        for c in range(n_conf)
    ]

    if device is not None:
        if sampler != "wishart":
            raise ValueError("device: the torch path runs the linear model with sampler='wishart' only")
        if np.any(bsz < lam.size):
            raise ValueError(f"device: the torch path needs batch_size >= d = {lam.size}")

    def factory(reps, streams):
        if shared_streams:
            streams = replica_streams(seed, [int(r) % seeds for r in reps])
        if device is not None:
            return _TorchLinearModel(reps, streams, lam, k, etas_r, bsz_r, init_r, dtype, record_weights, device)
        if sampler == "wishart":
            return _LinearModel(reps, streams, lam, k, etas_r, bsz_r, init_r, dtype, record_weights)
        return _SamplesModel(reps, streams, lam, k, etas_r, bsz_r, init_r, dtype, record_weights, activation)

    names = ("S", "Q", "loss") + (("W", "U") if record_weights else ())
    big = dict(n_chunks=1, block_draws=1 << 22) if device is not None else {}  # one device, large blocks
    runs = run_ensemble(
        factory,
        confs,
        seed=seed,
        record_names=names,
        block_steps=_BLOCK,
        block_draws=big.pop("block_draws", _BLOCK_DRAWS),
        work=1.0 if sampler == "wishart" else 3.0,
        desc="autoencoder SGD",
        **big,
    )
    results = []
    for c, run in enumerate(runs):
        steps = run.steps
        results.append(
            SGDResult(
                steps=steps,
                tau=steps * float(etas[c]) ** 2 / float(bsz[c]),
                S=run.S,
                Q=run.Q,
                loss=run.loss,
                eta=float(etas[c]),
                batch_size=int(bsz[c]),
                lambdas=lam,
                k=k,
                activation=activation,
                sampler=sampler,
                W=run.records.get("W"),
                U=run.records.get("U"),
            )
        )
    return results


def _check_common(lambdas, k, activation, sampler, dtype, seeds):
    lam = _spectrum(lambdas)
    k = check_int("k", k, minimum=1)
    activation = check_choice("activation", activation, ("linear", "relu"))
    sampler = check_choice("sampler", sampler, ("wishart", "samples"))
    if activation == "relu" and sampler == "wishart":
        raise ValueError(
            "sampler='wishart' draws only the minibatch covariance, which suffices for the "
            "linear model alone; activation='relu' needs sampler='samples'"
        )
    return lam, k, activation, sampler, _dtype(dtype), check_int("seeds", seeds, minimum=1, maximum=10**6)


def simulate_sgd(
    lambdas,
    k: int,
    eta: float,
    batch_size: int,
    steps: int,
    *,
    seeds: int = 1,
    record_every: int = 1000,
    init="pca",
    activation: str = "linear",
    sampler: str = "wishart",
    dtype=np.float64,
    seed=None,
    init_std: float = 0.01,
    record_weights: bool = False,
    record_at=None,
    device=None,
) -> SGDResult:
    """Online minibatch SGD on a two-layer autoencoder ``x̂ = W φ(U x)``, ``x ~ N(0, diag λ)`` (App. F).

    Every step draws a fresh minibatch of ``B`` points and takes
    ``W ← W − η ∇_W L̂``, ``U ← U − η ∇_U L̂`` on ``L̂ = (1/2B) Σ_i ‖W φ(U x_i) − x_i‖²``.

    Parameters
    ----------
    lambdas : array_like, shape (d,)
        Covariance eigenvalues, positive and non-increasing (e.g. :func:`geometric_spectrum`).
    k : int
        Hidden width (``k < d`` contractive, ``k > d`` expansive).
    eta : float
        Learning rate ``> 0``.
    batch_size : int
        ``B ≥ 1``.
    steps : int
        Number of SGD steps.
    seeds : int
        Independent replicas (run as one batched ensemble on both cores).
    record_every : int
        Record every this many steps (and at the last step).
    init : {"pca", "random"} or (W0, U0)
        ``"pca"``: App. F's ``W0 = [I; 0]``, ``U0 = [I, 0]`` (``S0 = I``); ``"random"``: i.i.d.
        ``N(0, init_std²)`` entries (``init_std = 0.01`` in the paper); or explicit arrays.
    activation : {"linear", "relu"}
    sampler : {"wishart", "samples"}
        ``"wishart"`` draws the minibatch covariance ``Σ̂`` exactly (Bartlett decomposition): the
        linear update depends on the batch only through ``Σ̂``. ``"samples"`` draws the ``B``
        points and back-propagates through them (needed for ReLU).
    dtype : numpy.float64 or numpy.float32
        Precision of the state and the draws (records are float64).
    seed : int, optional
        Seed of the ensemble's random streams: replica ``r`` draws its initialisation and
        minibatches from its own stream ``(seed, r)`` (:func:`symbreak.engine.replica_streams`),
        so its trajectory does not depend on how many replicas run or on the number of cores.
    record_weights : bool
        Also keep ``W`` and ``U`` at every record.
    record_at : array_like of int, optional
        Explicit record steps (e.g. log-spaced), overriding ``record_every``; ``0`` and ``steps``
        are always included.
    device : str or torch.device, optional
        Run the ensemble on this torch device (e.g. ``"cuda"``) instead of NumPy on the CPU
        (linear model, ``sampler="wishart"``, ``B ≥ d``). Same law and results type; the random
        stream is one per ensemble there, so a replica's draws also depend on the ensemble.

    Returns
    -------
    SGDResult
        ``steps`` (R,), ``tau = steps η²/B``, ``S = WᵀW`` and ``Q = WᵀW − UUᵀ`` (seeds, R, k, k),
        ``loss`` (seeds, R) the population loss.

    Raises
    ------
    ValueError
        On bad input (naming the parameter), including ``activation="relu"`` with
        ``sampler="wishart"``.
    symbreak.engine.DivergenceError
        If a replica runs past its stability edge; the message names ``η``, ``B`` and the step.
    """
    lam, k, activation, sampler, dt, seeds = _check_common(lambdas, k, activation, sampler, dtype, seeds)
    eta = check_positive("eta", eta)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    steps = check_int("steps", steps, minimum=1, maximum=MAX_STEPS)
    if record_at is None:
        grid = record_steps(steps, record_every)
    else:
        at = np.asarray(record_at)
        if at.ndim != 1 or not np.issubdtype(at.dtype, np.integer) or np.any(at < 0) or np.any(at > steps):
            raise ValueError(f"record_at must be a 1-D array of integer steps in [0, {steps}]")
        grid = np.unique(np.concatenate([[0], at, [steps]]).astype(np.int64))
    return _run(
        lam,
        k,
        np.array([eta]),
        np.array([batch_size]),
        [grid],
        seeds=seeds,
        init=init,
        init_std=init_std,
        activation=activation,
        sampler=sampler,
        dtype=dt,
        seed=seed,
        record_weights=record_weights,
        device=device,
    )[0]


def simulate_sgd_grid(
    lambdas,
    k: int,
    etas,
    batch_sizes,
    tau_max,
    *,
    n_records: int = 200,
    seeds: int = 1,
    init="pca",
    activation: str = "linear",
    sampler: str = "wishart",
    dtype=np.float64,
    seed=None,
    init_std: float = 0.01,
    record_weights: bool = False,
) -> list[SGDResult]:
    """Several ``(η, B)`` configurations, each to its own slow-time horizon, as one ensemble.

    Configuration ``c`` runs ``round(τ_max,c B_c/η_c²)`` steps and is recorded ``n_records + 1``
    times, evenly in slow time. All configurations × seeds share the batched engine and both cores
    (work is balanced between the two threads); replicas that finish leave the ensemble.

    Parameters
    ----------
    etas, batch_sizes : array_like, shape (n,)
        One learning rate and batch size per configuration.
    tau_max : float or array_like, shape (n,)
        Slow-time horizon of each configuration.
    init : str, pair (W0, U0), or list of these
        As in :func:`simulate_sgd`; a list gives each configuration its own initialisation.

    Returns
    -------
    list of SGDResult
        One per configuration, in order. Other parameters as in :func:`simulate_sgd`.
    """
    lam, k, activation, sampler, dt, seeds = _check_common(lambdas, k, activation, sampler, dtype, seeds)
    etas = check_positive_array("etas", etas)
    bsz = np.asarray(batch_sizes)
    if bsz.shape != etas.shape:
        raise ValueError("batch_sizes must have one entry per learning rate")
    bsz = np.array([check_int("batch_sizes", b, minimum=1) for b in bsz], dtype=np.int64)
    tau_max = np.broadcast_to(_broadcast_positive("tau_max", tau_max), etas.shape)
    n_records = check_int("n_records", n_records, minimum=1, maximum=10**7)
    rec = []
    for eta, b, tm in zip(etas, bsz, tau_max):
        steps_f = tm * b / eta**2
        if not steps_f <= MAX_STEPS:
            raise ValueError(
                f"tau_max * B / eta² = {steps_f:.3g} SGD steps (eta = {eta:g}, B = {b}) exceeds "
                f"{MAX_STEPS}: shorten tau_max"
            )
        total = max(1, int(round(steps_f)))
        rec.append(np.unique(np.round(np.linspace(0, total, n_records + 1)).astype(np.int64)))
    return _run(
        lam,
        k,
        etas,
        bsz,
        rec,
        seeds=seeds,
        init=init,
        init_std=init_std,
        activation=activation,
        sampler=sampler,
        dtype=dt,
        seed=seed,
        record_weights=record_weights,
    )
