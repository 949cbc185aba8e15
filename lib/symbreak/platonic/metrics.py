"""The field's representation metrics on samples: linear CKA, Gram alignment and mutual k-nearest
neighbours.

Pages: ``book/platonic/experiments.md``.
"""

from __future__ import annotations

from .. import similarity
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
    Invariant to the scale of each representation at any scale in the float64 range (the shared
    implementation :func:`symbreak.similarity.linear_cka`).
    """
    h1 = check_array("h1", h1, ndim=2)
    h2 = check_array("h2", h2, ndim=2, shape=(h1.shape[0], None))
    if h1.shape[0] < 2:
        raise ValueError("h1 and h2 must hold at least 2 samples")
    return similarity.linear_cka(h1, h2)


def gram_alignment(h1, h2) -> float:
    """Uncentred alignment of the sample Gram matrices ``H1 H1ᵀ`` and ``H2 H2ᵀ`` (``N`` samples):
    the sample version of :func:`kernel_alignment` for representations that need not be linear
    in the latent data. Invariant to the scale of each (:func:`symbreak.similarity.gram_alignment`)."""
    h1 = check_array("h1", h1, ndim=2)
    h2 = check_array("h2", h2, ndim=2, shape=(h1.shape[0], None))
    return similarity.gram_alignment(h1, h2)


def mutual_knn(h1, h2, k: int = 10) -> float:
    """Mutual k-nearest-neighbour alignment (Huh et al. 2024): for each sample, the fraction of its
    ``k`` nearest neighbours (Euclidean, itself excluded) in representation 1 that are also among
    its ``k`` nearest neighbours in representation 2, averaged over samples. 1 for representations
    equal up to a rotation and a scale; about ``k/N`` for unrelated ones
    (:func:`symbreak.similarity.mutual_knn`, invariant to the scale of each)."""
    h1 = check_array("h1", h1, ndim=2)
    h2 = check_array("h2", h2, ndim=2, shape=(h1.shape[0], None))
    n = h1.shape[0]
    k = check_int("k", k, minimum=1, maximum=max(n - 2, 1))
    return similarity.mutual_knn(h1, h2, k)
