"""The Platonic kernel K⋆ (P-Theorem 1) and the kernel-alignment score between layers and networks.

Pages: ``book/platonic/experiments.md``, ``book/platonic/index.md``, ``book/platonic/proof.md``.
"""

from __future__ import annotations

import numpy as np

from ..validation import (
    check_array,
    check_symmetric_positive_definite,
    finite_result,
)
from .linalg import _sym, sqrtm_psd

__all__ = ["platonic_kernel", "kernel_alignment", "alignment_matrix", "joint_alignment"]

# ----------------------------------------------------------------------------------------------
# The Platonic kernel and the alignment score
# ----------------------------------------------------------------------------------------------


def platonic_kernel(V, sigma_x, sigma_eps) -> np.ndarray:
    """The Platonic kernel ``K⋆`` of the reconstructed proof of Theorem 1, unit Frobenius norm.

    .. math::

        K^\\star \\propto \\Sigma_x^{-1/2} \\big(\\Sigma_x^{1/2} V^\\top \\Sigma_\\varepsilon V
        \\Sigma_x^{1/2}\\big)^{1/2} \\Sigma_x^{-1/2} .

    At every minimiser of the entropic term ``S`` among the global minima of the loss (the
    gradient-balance conditions, paper Eqs. 31–33), every hidden layer ``h_k = P_k x`` of every
    EDLN has ``P_kᵀ P_k = √c_k K⋆`` for a layer-dependent constant ``c_k > 0``. ``K⋆`` depends
    on the data and the label noise only, not on ``Z``, ``M^I``, ``M^O``, the widths or the depth.

    Parameters
    ----------
    V : array_like, shape (m, n)
        The target map ``V*`` of ``y = V* x + ε`` (not zero).
    sigma_x : array_like, shape (n, n)
        Covariance of the latent data, symmetric positive definite.
    sigma_eps : array_like, shape (m, m)
        Covariance of the label noise, symmetric positive definite.

    Returns
    -------
    numpy.ndarray, shape (n, n)
        Symmetric positive semi-definite, ``‖K⋆‖_F = 1``; its rank is ``rank V*``.

    Raises
    ------
    ValueError
        If ``V`` is not a non-zero finite matrix, or a covariance is not symmetric positive
        definite or has the wrong size.
    """
    V = check_array("V", V, ndim=2)
    m, n = V.shape
    sx = check_symmetric_positive_definite("sigma_x", sigma_x, size=n)
    se = check_symmetric_positive_definite("sigma_eps", sigma_eps, size=m)
    if not np.any(V):
        raise ValueError("V must not be the zero matrix (the kernel would vanish)")
    # K⋆ has unit norm and is homogeneous in V, Σx and Σε: divide each by its largest entry first, so
    # that no scale in the float64 range overflows or underflows
    V, sx, se = (a / np.abs(a).max() for a in (V, sx, se))
    w, o = np.linalg.eigh(sx)
    sx_half = (o * np.sqrt(w)) @ o.T
    sx_ihalf = (o / np.sqrt(w)) @ o.T
    core = sqrtm_psd(sx_half @ V.T @ se @ V @ sx_half)
    k = _sym(sx_ihalf @ core @ sx_ihalf)
    return finite_result("platonic_kernel", k / np.linalg.norm(k))


def kernel_alignment(K1, K2, *, metric=None):
    """Uncentered kernel alignment ``⟨K1, K2⟩_F / (‖K1‖_F ‖K2‖_F)``.

    Equal to 1 exactly when ``K1 = c K2`` with ``c > 0`` (perfect alignment: the two
    representations agree up to a rotation and a scale), invariant to the scale of either
    kernel and to rotations ``h → O h`` of either representation (which leave ``K = Pᵀ P``
    unchanged), and in ``[0, 1]`` for positive semi-definite kernels.

    Parameters
    ----------
    K1, K2 : array_like, shape (..., n, n)
        Kernels (Gram matrices of the representations in latent coordinates); leading axes
        broadcast.
    metric : array_like, shape (n, n), optional
        If given (a covariance ``Σ``), the kernels are compared as ``Σ^{1/2} K Σ^{1/2}``: this is
        the alignment of the population Gram functions, ``E[k1 k2] / (E[k1²] E[k2²])^{1/2}``
        with ``k(x1, x2) = x1ᵀ K x2`` and independent ``x1, x2 ~ N(0, Σ)``.

    Returns
    -------
    float or numpy.ndarray
        The alignment, with the broadcast leading shape.

    Raises
    ------
    ValueError
        If the kernels are not square, their sizes differ, or one of them is zero.
    """
    K1 = check_array("K1", K1)
    K2 = check_array("K2", K2)
    for name, k in (("K1", K1), ("K2", K2)):
        if k.ndim < 2 or k.shape[-1] != k.shape[-2]:
            raise ValueError(f"{name} must be a square matrix (or a stack of them), got shape {k.shape}")
    if K1.shape[-1] != K2.shape[-1]:
        raise ValueError(f"K1 and K2 must have the same size, got {K1.shape[-1]} and {K2.shape[-1]}")
    # the alignment is scale-invariant: scale each kernel to unit largest entry first, so that
    # ‖K‖_F neither overflows (K = 1e160 I) nor underflows (K = 1e-170 I)
    m1 = np.abs(K1).max(axis=(-2, -1), keepdims=True)
    m2 = np.abs(K2).max(axis=(-2, -1), keepdims=True)
    if np.any(m1 == 0):
        raise ValueError("K1 must not be zero")
    if np.any(m2 == 0):
        raise ValueError("K2 must not be zero")
    K1, K2 = K1 / m1, K2 / m2
    if metric is not None:
        s = check_symmetric_positive_definite("metric", metric, size=K1.shape[-1])
        r = sqrtm_psd(s / np.abs(s).max())  # the metric's scale cancels too
        K1, K2 = r @ K1 @ r, r @ K2 @ r
    n1 = np.sqrt(np.einsum("...ij,...ij->...", K1, K1))
    n2 = np.sqrt(np.einsum("...ij,...ij->...", K2, K2))
    out = np.einsum("...ij,...ij->...", K1, K2) / (n1 * n2)
    return finite_result("kernel_alignment", float(out) if np.ndim(out) == 0 else out)


def alignment_matrix(kernels, *, metric=None) -> np.ndarray:
    """Pairwise :func:`kernel_alignment` of a list of ``n×n`` kernels: a symmetric matrix with ones
    on the diagonal (the heatmap of Theorem 1)."""
    if isinstance(kernels, (str, bytes)) or not hasattr(kernels, "__len__") or len(kernels) == 0:
        raise ValueError("kernels must be a non-empty sequence of n x n matrices")
    ks = [check_array(f"kernels[{i}]", k, ndim=2) for i, k in enumerate(kernels)]
    out = np.ones((len(ks), len(ks)))
    for i in range(len(ks)):
        for j in range(i + 1, len(ks)):
            out[i, j] = out[j, i] = kernel_alignment(ks[i], ks[j], metric=metric)
    return finite_result("alignment_matrix", out)


def joint_alignment(*kernel_stacks, reference=None, metric=None) -> np.ndarray:
    """Pairwise alignments of all hidden layers of several networks, replica by replica.

    Parameters
    ----------
    *kernel_stacks : array_like, shape (R, H_j, n, n) or (H_j, n, n)
        Hidden-layer kernels of each network (e.g. :func:`hidden_kernels`), same replicas.
    reference : array_like, shape (n, n), optional
        A kernel appended as the last row/column (e.g. ``K⋆``).

    Returns
    -------
    numpy.ndarray, shape (R, H, H) or (H, H)
        ``H = Σ_j H_j (+1)``: the alignment of every pair, ones on the diagonal.
    """
    if not kernel_stacks:
        raise ValueError("kernel_stacks must name at least one network's kernels")
    stacks = [check_array(f"kernel_stacks[{i}]", k) for i, k in enumerate(kernel_stacks)]
    squeeze = stacks[0].ndim == 3
    stacks = [k[None] if k.ndim == 3 else k for k in stacks]
    if any(k.ndim != 4 for k in stacks) or len({k.shape[0] for k in stacks}) != 1:
        raise ValueError("kernel_stacks must all have shape (R, H_j, n, n) with the same R")
    ks = np.concatenate(stacks, axis=1)
    if reference is not None:
        ref = check_array("reference", reference, ndim=2, shape=ks.shape[-2:])
        ks = np.concatenate([ks, np.broadcast_to(ref, (ks.shape[0], 1) + ref.shape)], axis=1)
    out = kernel_alignment(ks[:, :, None], ks[:, None, :], metric=metric)
    return finite_result("joint_alignment", out[0] if squeeze else out)
