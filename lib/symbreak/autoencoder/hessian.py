"""The Hessian on the PCA manifold (P-App. B): eigenvalues, sharpness, trace, the trace-minimising scale,
the overcomplete case and an autograd check.

Pages: ``book/autoencoder/lambert.md``, ``book/autoencoder/sharpness-relu.md``,
``book/autoencoder/stability.md``.
"""

from __future__ import annotations

import numpy as np

from .._autodiff import hessian as _autograd_hessian
from ..validation import (
    check_array,
    check_int,
    check_positive,
    check_positive_array,
    check_symmetric_positive_definite,
    finite_result,
)
from ._common import _MAX_DIM, _check_decoder_encoder, _scales, _spectrum, _undercomplete_k

__all__ = [
    "pca_point",
    "pca_hessian_eigenvalues",
    "hessian_lambda_max",
    "hessian_trace",
    "trace_minimizing_scale",
    "overcomplete_point",
    "overcomplete_hessian_eigenvalues",
    "autograd_hessian",
]


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
    """The population-loss Hessian at ``(W, U)`` by automatic differentiation (PyTorch, reverse mode
    over reverse mode).

    ``L(W, U) = ½ tr[(WU − I) Σ (WU − I)ᵀ]`` with ``Σ = diag(λ)``; parameters ordered as
    ``(vec_row(W), vec_row(U))``. An independent check of the closed forms of App. B.

    Returns
    -------
    numpy.ndarray, shape (2kd, 2kd)
        Symmetric, float64.
    """
    import torch

    lam = _spectrum(lambdas)
    d = lam.size
    W, U = _check_decoder_encoder(W, U, d, names=("W", "U"))
    k = W.shape[1]
    sig = torch.tensor(np.ascontiguousarray(lam), dtype=torch.float64)  # (a view with negative strides)
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
        h = _autograd_hessian(loss, theta)
    finally:
        torch.set_num_threads(threads)
    return finite_result("autograd_hessian", 0.5 * (h + h.T))
