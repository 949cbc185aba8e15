"""Representation similarity shared by the chapters: Gram alignment, linear CKA and mutual kNN.

One implementation of the three sample-based similarity measures, used by the Platonic chapter
(``symbreak.platonic.metrics``) and by the part *Beyond the theorems*
(``symbreak.beyond.alignment``), which validate their own arguments (their parameter names and
bounds) and call these cores.

All three are invariant to a positive rescaling of either representation; each representation is
divided by its largest absolute entry before any product is formed, so that a scale anywhere in the
float64 range (``1e-200 H`` or ``1e200 H``) neither underflows nor overflows: the answer is the
one at scale 1, to rounding.

Contents
--------
:func:`unit_scale`
    A representation divided by its largest absolute entry.
:func:`gram_alignment`
    Uncentred alignment of the sample Gram matrices ``H1 H1ᵀ`` and ``H2 H2ᵀ``.
:func:`linear_cka`
    The same after centring the samples (Kornblith et al. 2019).
:func:`mutual_knn`
    Mutual k-nearest-neighbour alignment (Huh et al. 2024).
"""

from __future__ import annotations

import numpy as np

__all__ = ["unit_scale", "gram_alignment", "linear_cka", "mutual_knn"]


def unit_scale(h: np.ndarray) -> np.ndarray:
    """``h`` divided by its largest absolute entry (zero stays zero): the scale-invariant measures use it.

    For an array of any shape; the maximum is over the whole array.
    """
    m = np.max(np.abs(h)) if h.size else 0.0
    return h / m if m > 0 else h


def _gram_alignment_2d(a: np.ndarray, b: np.ndarray, names) -> float:
    a, b = unit_scale(a), unit_scale(b)
    den = np.linalg.norm(a.T @ a) * np.linalg.norm(b.T @ b)
    if den == 0:
        raise ValueError(f"{names[0]} or {names[1]} is identically zero: its alignment is undefined")
    return float(np.linalg.norm(a.T @ b) ** 2 / den)


def _broadcast_pairs(h1: np.ndarray, h2: np.ndarray, fn, names):
    """``fn`` of every pair of 2-D representations of the broadcast leading axes of ``h1``, ``h2``."""
    if h1.ndim == 2 and h2.ndim == 2:
        return fn(h1, h2, names)
    lead = np.broadcast_shapes(h1.shape[:-2], h2.shape[:-2])
    a = np.broadcast_to(h1, lead + h1.shape[-2:])
    b = np.broadcast_to(h2, lead + h2.shape[-2:])
    out = np.empty(lead)
    for idx in np.ndindex(lead):
        out[idx] = fn(a[idx], b[idx], names)
    return out


def gram_alignment(h1: np.ndarray, h2: np.ndarray, *, names=("h1", "h2")):
    """Uncentred alignment ``‖H1ᵀH2‖²_F / (‖H1ᵀH1‖_F ‖H2ᵀH2‖_F)`` of ``K = H Hᵀ`` over the samples.

    Parameters
    ----------
    h1, h2 : numpy.ndarray, shape (..., n_samples, features_1) and (..., n_samples, features_2)
        Finite real representations (validated by the caller) of the same samples; leading axes
        broadcast, and each 2-D pair is compared on its own (its own scale).
    names : pair of str
        The caller's names of ``h1`` and ``h2``, for the error message.

    Returns
    -------
    float or numpy.ndarray
        In ``[0, 1]``; a float for 2-D input, else an array of the broadcast leading shape.

    Raises
    ------
    ValueError
        If a representation is identically zero.
    """
    return _broadcast_pairs(h1, h2, _gram_alignment_2d, names)


def _cka_2d(a: np.ndarray, b: np.ndarray, names) -> float:
    a, b = _centred(a), _centred(b)
    den = np.linalg.norm(a.T @ a) * np.linalg.norm(b.T @ b)
    if den == 0:
        raise ValueError(f"{names[0]} or {names[1]} is constant over the samples: its CKA is undefined")
    return float(np.linalg.norm(a.T @ b) ** 2 / den)


def _centred(h: np.ndarray) -> np.ndarray:
    """``h`` minus its mean over the samples, divided by its largest absolute entry.

    Centred at the input's own scale (as the chapters always did), unless the entries are so large
    that the mean could overflow: then scaled to unit largest entry first.
    """
    if h.size and np.max(np.abs(h)) > 1e300:
        h = unit_scale(h)
    return unit_scale(h - h.mean(0))


def linear_cka(h1: np.ndarray, h2: np.ndarray, *, names=("h1", "h2")):
    """Linear centred kernel alignment (CKA, Kornblith et al. 2019): :func:`gram_alignment` of the
    representations after removing their mean over the samples; same shapes and broadcasting.

    Raises
    ------
    ValueError
        If a representation is constant over the samples.
    """
    return _broadcast_pairs(h1, h2, _cka_2d, names)


def mutual_knn(h1: np.ndarray, h2: np.ndarray, k: int) -> float:
    """Mutual k-nearest-neighbour alignment (Huh et al. 2024): the mean over samples of
    ``|N_k^1(i) ∩ N_k^2(i)| / k``, neighbourhoods in Euclidean distance (the sample itself excluded).

    Parameters
    ----------
    h1, h2 : numpy.ndarray, shape (n_samples, features_1) and (n_samples, features_2)
        Finite real representations (validated by the caller).
    k : int
        Neighbours per sample, ``1 <= k <= n_samples - 1`` (validated by the caller).

    Returns
    -------
    float
        1 when the neighbourhoods agree (representations equal up to a rotation and a scale), about
        ``k/n`` for unrelated ones.
    """
    n = h1.shape[0]

    def knn(h):
        sq = (h**2).sum(1)
        d = sq[:, None] + sq[None, :] - 2 * h @ h.T
        np.fill_diagonal(d, np.inf)
        return np.argpartition(d, k - 1, axis=1)[:, :k]

    a, b = knn(unit_scale(h1)), knn(unit_scale(h2))  # neighbours do not depend on the scale: no overflow
    hits = [np.intersect1d(a[i], b[i]).size for i in range(n)]
    return float(np.mean(hits) / k)
