"""The field's representation metrics on samples: linear CKA, Gram alignment and mutual k-nearest
neighbours.

Pages: ``book/platonic/experiments.md``.
"""

from __future__ import annotations

import numpy as np

from ..validation import (
    check_array,
    check_int,
)

__all__ = ["linear_cka", "gram_alignment", "mutual_knn"]


def linear_cka(h1, h2) -> float:
    """Linear centred kernel alignment (CKA) of two representations of the same ``N`` samples
    (Kornblith et al. 2019): ``‖H̃1ᵀH̃2‖_F² / (‖H̃1ᵀH̃1‖_F ‖H̃2ᵀH̃2‖_F)`` with column-centred ``H̃``.

    For zero-mean Gaussian latent data and linear representations ``h = P x`` it converges, as
    ``N → ∞``, to the Σx-weighted kernel alignment ``kernel_alignment(K1, K2, metric=Σx)``.
    """
    h1 = check_array("h1", h1, ndim=2)
    h2 = check_array("h2", h2, ndim=2, shape=(h1.shape[0], None))
    if h1.shape[0] < 2:
        raise ValueError("h1 and h2 must hold at least 2 samples")
    a = _unit_scale(h1 - h1.mean(0))  # CKA is invariant to the scale of each: no overflow or underflow
    b = _unit_scale(h2 - h2.mean(0))
    den = np.linalg.norm(a.T @ a) * np.linalg.norm(b.T @ b)
    if den == 0:
        raise ValueError("h1 and h2 must not be constant")
    return float(np.linalg.norm(a.T @ b) ** 2 / den)


def _unit_scale(h):
    """``h`` divided by its largest absolute entry (zero stays zero); scale-invariant measures use it."""
    m = np.max(np.abs(h)) if h.size else 0.0
    return h / m if m > 0 else h


def gram_alignment(h1, h2) -> float:
    """Uncentred alignment of the sample Gram matrices ``H1 H1ᵀ`` and ``H2 H2ᵀ`` (``N`` samples):
    the sample version of :func:`kernel_alignment` for representations that need not be linear
    in the latent data."""
    h1 = check_array("h1", h1, ndim=2)
    h2 = check_array("h2", h2, ndim=2, shape=(h1.shape[0], None))
    h1, h2 = _unit_scale(h1), _unit_scale(h2)  # invariant to the scale of each
    den = np.linalg.norm(h1.T @ h1) * np.linalg.norm(h2.T @ h2)
    if den == 0:
        raise ValueError("h1 and h2 must not be zero")
    return float(np.linalg.norm(h1.T @ h2) ** 2 / den)


def mutual_knn(h1, h2, k: int = 10) -> float:
    """Mutual k-nearest-neighbour alignment (Huh et al. 2024): for each sample, the fraction of its
    ``k`` nearest neighbours (Euclidean, itself excluded) in representation 1 that are also among
    its ``k`` nearest neighbours in representation 2, averaged over samples. 1 for representations
    equal up to a rotation and a scale; about ``k/N`` for unrelated ones."""
    h1 = check_array("h1", h1, ndim=2)
    h2 = check_array("h2", h2, ndim=2, shape=(h1.shape[0], None))
    n = h1.shape[0]
    k = check_int("k", k, minimum=1, maximum=max(n - 2, 1))

    def knn(h):
        sq = (h**2).sum(1)
        d = sq[:, None] + sq[None, :] - 2 * h @ h.T
        np.fill_diagonal(d, np.inf)
        return np.argpartition(d, k - 1, axis=1)[:, :k]

    a, b = knn(_unit_scale(h1)), knn(_unit_scale(h2))  # neighbours do not depend on the scale: no overflow
    hits = [np.intersect1d(a[i], b[i]).size for i in range(n)]
    return float(np.mean(hits) / k)
