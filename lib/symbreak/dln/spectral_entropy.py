"""The entropy S_N on singular values (P-Theorem 1.1), its gradient and Hessian, the Riemannian Hessian
and an autograd reference.

Pages: ``book/dln/entropy.md``, ``book/dln/equilibrium.md``, ``book/dln/index.md``.
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import (
    check_array,
    check_positive_array,
    finite_result,
)
from ._common import _LITERAL_DEPTH, _LOOP_DEPTH, _check_depth, _check_sigma, _kappa, _log_geometric
from ._special import _G1, _G2, _G2_minus_h, _h, _log_sinhc

__all__ = [
    "entropy",
    "entropy_gradient",
    "entropy_hessian",
    "riemannian_entropy_hessian",
    "pair_kernels",
    "log_form_derivatives",
    "naive_entropy",
    "entropy_autograd",
]

# ---------------------------------------------------------------------------------------------
# entropy and its derivatives (batched internals: sigma of shape (..., d))
# ---------------------------------------------------------------------------------------------


def _deltas(ell):
    return ell[..., :, None] - ell[..., None, :]


def _entropy_log_grad(sigma, N):
    """``g_i = ∂S_N/∂ℓ_i`` for ``ℓ = log σ``; sigma of shape (..., d)."""
    d = sigma.shape[-1]
    if N == 1 or d < 2:
        return np.zeros_like(sigma)
    delta = _deltas(np.log(sigma))
    hd = _h(delta, N)
    idx = np.arange(d)
    hd[..., idx, idx] = 0.0
    return 0.5 * hd.sum(axis=-1)


def _entropy_log_hessian(sigma, N):
    """Hessian of ``S_N`` in ``ℓ = log σ``: off-diagonal ``−G''(δ_ij)/2``, diagonal ``Σ_k G''(δ_ik)/2``."""
    d = sigma.shape[-1]
    if N == 1 or d < 2:
        return np.zeros(sigma.shape + (d,))
    delta = _deltas(np.log(sigma))
    g2 = _G2(delta, N)
    idx = np.arange(d)
    g2_off = g2.copy()
    g2_off[..., idx, idx] = 0.0
    h = -0.5 * g2_off
    h[..., idx, idx] = 0.5 * g2_off.sum(axis=-1)
    return h


def _entropy_grad_batched(sigma, N):
    return _entropy_log_grad(sigma, N) / sigma


def _entropy_hess_batched(sigma, N):
    """Euclidean Hessian: ``p_N(σ_i, σ_j)`` off the diagonal, ``Σ_{k≠i} q_N(σ_i, σ_k)`` on it."""
    d = sigma.shape[-1]
    if N == 1 or d < 2:
        return np.zeros(sigma.shape + (d,))
    delta = _deltas(np.log(sigma))
    idx = np.arange(d)
    h = -_G2(delta, N) / (2.0 * sigma[..., :, None] * sigma[..., None, :])
    qn = _G2_minus_h(delta, N)
    qn[..., idx, idx] = 0.0
    h[..., idx, idx] = qn.sum(axis=-1) / (2.0 * sigma**2)
    return h


def _entropy_sinh_form(sigma, N) -> float:
    """``S_N`` by the logarithmic form ``½ Σ_{i<j} [(1 − 1/N)(ℓ_i + ℓ_j) + G_N(ℓ_i − ℓ_j)]``.

    ``G_N(δ) = L(δ) − L(δ/N) + log N`` with ``L(x) = log(sinh x/x)``; at ``N = inf`` the ``log N`` is
    dropped, which gives ``S_∞``. Used for ``N = inf`` and as an independent cross-check.
    """
    d = sigma.size
    if d < 2 or N == 1:
        return 0.0
    ell = np.log(sigma)
    iu = np.triu_indices(d, 1)
    delta = (ell[:, None] - ell[None, :])[iu]
    kappa = _kappa(N)
    if math.isinf(N):
        pair = _log_sinhc(delta)
    else:
        pair = _log_sinhc(delta) - _log_sinhc(delta / N) + math.log(N)
    return float(0.5 * (kappa * (d - 1) * ell.sum() + pair.sum()))


def entropy(sigma, N) -> float:
    """The entropy ``S_N(σ)`` of the DLN (Section 1.2), without the constant ``(N − 1) c_d``.

    ``S_N(σ) = ½ Σ_{i<j} log[(σ_i² − σ_j²) / (σ_i^{2/N} − σ_j^{2/N})]``, evaluated for finite ``N`` in
    the λ-variables ``λ = σ^{1/N}`` of (3.4): each ratio is the polynomial (3.5)
    ``Σ_{m=0}^{N−1} λ_i^{2(N−1−m)} λ_j^{2m}``, computed as ``λ_max^{2(N−1)} Σ_m r^{2m}`` with
    ``r = λ_min/λ_max ≤ 1`` (Horner), so there is no cancellation at or near ties. At a tie the pair
    term is ``½ log(N σ^{2−2/N})``.

    Parameters
    ----------
    sigma : array_like, shape (d,)
        Positive singular values, in any order.
    N : int or numpy.inf
        Depth ``N ≥ 1``. ``N = 1`` gives 0; ``N = numpy.inf`` gives
        ``S_∞(σ) = ½ Σ_{i<j} log[(σ_i² − σ_j²)/(log σ_i² − log σ_j²)]`` (the limit of
        ``S_N − ½ C(d,2) log N``).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If a singular value is ``≤ 0`` or not finite, or ``N`` is not an integer ``≥ 1`` / ``inf``.
    """
    sigma = _check_sigma(sigma)
    N = _check_depth(N, allow_inf=True)
    d = sigma.size
    if d < 2 or N == 1:
        return 0.0
    if math.isinf(N):
        return _entropy_sinh_form(sigma, N)
    iu = np.triu_indices(d, 1)
    ell = np.log(sigma)
    li, lj = ell[iu[0]], ell[iu[1]]
    lmax = np.maximum(li, lj)
    if N > _LOOP_DEPTH:  # geometric series in closed form: no loop over the N layers
        pair = 2.0 * (1.0 - 1.0 / N) * lmax + _log_geometric(np.abs(li - lj), N)
        return float(0.5 * pair.sum())
    r2 = np.exp(-2.0 * np.abs(li - lj) / N)  # (λ_min/λ_max)², in (0, 1]
    acc = np.ones_like(r2)
    for _ in range(N - 1):
        acc = acc * r2 + 1.0
    pair = 2.0 * (N - 1) / N * lmax + np.log(acc)
    return finite_result("entropy", float(0.5 * pair.sum()))


def naive_entropy(sigma, N) -> float:
    """``S_N`` by the literal quotient of Section 1.2 (for demonstrating cancellation; NaN at ties).

    ``S_N = ½ Σ_{i<j} log[(σ_i² − σ_j²)/(σ_i^{2/N} − σ_j^{2/N})]``, evaluated literally: digits are lost
    to cancellation near a tie, and at an exact tie ``σ_i = σ_j`` the quotient is ``0/0`` and the
    result is ``NaN``, by design (:func:`entropy` is the stable form).

    Raises
    ------
    ValueError
        When ``σ²`` leaves the normal float64 range (``σ > 1.3e154`` or ``σ < 1.5e-154``): there the
        literal quotient would overflow or underflow, which is not the cancellation it demonstrates.
    """
    sigma = _check_sigma(sigma)
    N = _check_depth(N)
    with np.errstate(over="ignore", under="ignore"):
        s2 = sigma * sigma
    if not (np.all(np.isfinite(s2)) and np.all(s2 >= np.finfo(float).tiny)):
        raise ValueError(
            "naive_entropy: sigma**2 leaves the float64 range (sigma must lie in [1.5e-154, 1.3e154] "
            f"for the literal quotient, got min {sigma.min():.3g}, max {sigma.max():.3g}); use entropy"
        )
    d = sigma.size
    iu = np.triu_indices(d, 1)
    a, b = sigma[iu[0]], sigma[iu[1]]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (a**2 - b**2) / (a ** (2.0 / N) - b ** (2.0 / N))
        return float(0.5 * np.sum(np.log(ratio)))


def entropy_gradient(sigma, N) -> np.ndarray:
    """Gradient ``∂S_N/∂σ_i`` (3.9), with the correct limits at ties.

    ``∂S_N/∂σ_i = Σ_{k≠i} [σ_i/(σ_i² − σ_k²) − σ_i^{2/N−1}/(N(σ_i^{2/N} − σ_k^{2/N}))]``
    ``= (1/(2σ_i)) Σ_{k≠i} [1 − 1/N + G_N'(log σ_i − log σ_k)]``; each summand tends to
    ``(1 − 1/N)/(2σ_i)`` as ``σ_k → σ_i`` (3.10). ``N = inf`` gives the gradient of ``S_∞``.

    Returns
    -------
    numpy.ndarray, shape (d,)
    """
    sigma = _check_sigma(sigma)
    N = _check_depth(N, allow_inf=True)
    return finite_result("entropy_gradient", _entropy_grad_batched(sigma, N))


def entropy_hessian(sigma, N) -> np.ndarray:
    """Euclidean Hessian ``∇²_σ S_N`` (Section 4): ``p_N(σ_i, σ_j)`` off the diagonal (4.9), ``Σ_{k≠i}
    q_N(σ_i, σ_k)`` on it (4.10), each with its finite limit at ties
    (``p⋆ = −(1 − 1/N²)/(6σ²)``, ``q⋆ = −(1 − 3/(2N) + 1/(2N²))/(3σ²)``).

    Returns
    -------
    numpy.ndarray, shape (d, d)
    """
    sigma = _check_sigma(sigma)
    N = _check_depth(N, allow_inf=True)
    h = _entropy_hess_batched(sigma, N)
    return finite_result("entropy_hessian", 0.5 * (h + h.T))


def pair_kernels(a, b, N):
    """The kernels ``p_N(a, b)`` and ``q_N(a, b)`` of (4.9)–(4.10), tie-safe (arrays broadcast).

    ``p_N(a,b) = 2ab/(a²−b²)² − 2a^{2/N−1}b^{2/N−1}/(N(a^{2/N}−b^{2/N}))² = −G_N''(δ)/(2ab)``,
    ``q_N(a,b) = −(a²+b²)/(a²−b²)² + a^{2/N−2}(N(a^{2/N}−b^{2/N}) + 2b^{2/N})/(N(a^{2/N}−b^{2/N}))²
    = [G_N''(δ) − (1 − 1/N) − G_N'(δ)]/(2a²)``, with ``δ = log(a/b)``.
    """
    a = check_positive_array("a", a, ndim=None)
    b = check_positive_array("b", b, ndim=None)
    N = _check_depth(N, allow_inf=True)
    a, b = np.broadcast_arrays(a, b)
    delta = np.log(a) - np.log(b)
    p = -_G2(delta, N) / (2.0 * a * b)
    q = _G2_minus_h(delta, N) / (2.0 * a**2)
    return finite_result("pair_kernels", (p, q))


def log_form_derivatives(delta, N):
    """``(G_N'(δ), G_N''(δ))`` of the logarithmic form ``G_N(δ) = log[sinh δ / sinh(δ/N)]``, tie-safe.

    ``G_N'(δ) = coth δ − coth(δ/N)/N`` (odd, ``G_N'(0) = 0``) and
    ``G_N''(δ) = −csch² δ + csch²(δ/N)/N²`` (even, ``G_N''(0) = (1 − 1/N²)/3``); ``N = inf`` gives
    ``coth δ − 1/δ`` and ``1/δ² − csch² δ``. Each pair term of ``S_N`` is
    ``½[(1 − 1/N)(ℓ_i + ℓ_j) + G_N(ℓ_i − ℓ_j)]`` with ``ℓ = log σ``.
    """
    delta = check_array("delta", delta)
    N = _check_depth(N, allow_inf=True)
    return finite_result("log_form_derivatives", (_G1(delta, N), _G2(delta, N)))


def riemannian_entropy_hessian(sigma, N) -> np.ndarray:
    """Hessian of ``S_N`` for the metric ``g_σ^N = Σ_i (1/N) σ_i^{2/N−2} dσ_i²`` (Section 5).

    The metric is diagonal with ``g_ii`` depending on ``σ_i`` only, so the only Christoffel symbols
    are ``Γ^i_ii = −(N−1)/(N σ_i)`` and
    ``(∇²_g S)_ij = ∂²S/∂σ_i∂σ_j + δ_ij (N−1)/N · (1/σ_i) ∂S/∂σ_i``.
    Returned as the coordinate matrix of this (0,2)-tensor (the paper's convention). At equal
    singular values ``g`` is a multiple of the identity, so the eigenvalue signs of this matrix are
    those of the operator ``g⁻¹∇²S`` (Theorem 1.10).
    """
    sigma = _check_sigma(sigma)
    N = _check_depth(N, allow_inf=True)
    h = entropy_hessian(sigma, N)
    g = _entropy_grad_batched(sigma, N)
    h[np.diag_indices_from(h)] += _kappa(N) * g / sigma
    return finite_result("riemannian_entropy_hessian", h)


def entropy_autograd(sigma, N):
    """Reference value, gradient and Hessian of ``S_N`` by PyTorch autograd (float64).

    Differentiates the λ-polynomial form (3.4)–(3.5) written out term by term,
    ``½ Σ_{i<j} log Σ_{m=0}^{N−1} λ_i^{2(N−1−m)} λ_j^{2m}``, ``λ = σ^{1/N}``; it has no quotient, so
    autograd is exact (to rounding) also at ties. Finite ``N`` only. Imports torch lazily.

    Returns
    -------
    (float, numpy.ndarray (d,), numpy.ndarray (d, d))
    """
    import torch

    sigma = _check_sigma(sigma, min_d=2)
    N = _check_depth(N)
    if N > _LITERAL_DEPTH:
        raise ValueError(
            f"N must be <= {_LITERAL_DEPTH} for entropy_autograd (it differentiates the N-term "
            f"polynomial literally), got {N}"
        )
    d = sigma.size
    iu = torch.triu_indices(d, d, 1)

    def fn(s):
        lam2 = s ** (2.0 / N)
        a, b = lam2[iu[0]], lam2[iu[1]]
        total = sum(a ** (N - 1 - m) * b**m for m in range(N))
        return 0.5 * torch.log(total).sum()

    s = torch.tensor(np.ascontiguousarray(sigma), dtype=torch.float64, requires_grad=True)
    val = fn(s)
    (grad,) = torch.autograd.grad(val, s)
    hess = torch.autograd.functional.hessian(fn, s.detach())
    return finite_result("entropy_autograd", (float(val.detach()), grad.numpy().copy(), hess.numpy().copy()))
