"""Batch sharpness (P-App. D): the modified batch sharpness (P-Eq. D.21) and its Monte-Carlo estimate.

Pages: ``book/autoencoder/sharpness-relu.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine import (
    WishartBlockSampler,
)
from ..rng import make_rng
from ..validation import (
    MAX_DRAWS,
    check_array,
    check_int,
    finite_result,
)
from ._common import _scales, _spectrum, _undercomplete_k
from .hessian import pca_point

__all__ = ["modified_batch_sharpness", "batch_sharpness_monte_carlo"]


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
