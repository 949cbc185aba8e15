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

from .validation import check_array, check_int

__all__ = ["unit_scale", "gram_alignment", "linear_cka", "mutual_knn"]


def _check_names(names):
    if not isinstance(names, (tuple, list)) or len(names) != 2 or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"names must be a pair of non-empty strings, got {names!r}")
    return tuple(names)


def _check_pair(h1, h2, names, *, two_d: bool = False):
    """``h1``, ``h2`` as finite real arrays of shape ``(..., n_samples, features)`` with the same
    ``n_samples >= 1`` (``>= 2`` and exactly 2-D for ``two_d``) and broadcasting leading axes."""
    n1, n2 = _check_names(names)
    h1, h2 = check_array(n1, h1), check_array(n2, h2)
    for name, h in ((n1, h1), (n2, h2)):
        if (h.ndim != 2) if two_d else (h.ndim < 2):
            want = "2-D (n_samples, features)" if two_d else "(..., n_samples, features)"
            raise ValueError(f"{name} must be {want}, got shape {h.shape}")
        if h.shape[-1] == 0:
            raise ValueError(f"{name} must have at least one feature, got shape {h.shape}")
    if h1.shape[-2] != h2.shape[-2]:
        raise ValueError(f"{n1} and {n2} must have the same number of samples, got {h1.shape[-2]} and {h2.shape[-2]}")
    if h1.shape[-2] < (2 if two_d else 1):
        raise ValueError(f"{n1} and {n2} must hold at least {2 if two_d else 1} samples, got {h1.shape[-2]}")
    try:
        np.broadcast_shapes(h1.shape[:-2], h2.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading axes of {n1} {h1.shape[:-2]} and {n2} {h2.shape[:-2]} must broadcast together"
        ) from None
    # one memory layout, so that a Fortran-ordered or strided copy gives the same rounding as the original
    return np.ascontiguousarray(h1), np.ascontiguousarray(h2), (n1, n2)


def unit_scale(h: np.ndarray) -> np.ndarray:
    """``h`` divided by its largest absolute entry (zero stays zero): the scale-invariant measures use it.

    For a finite real array of any shape; the maximum is over the whole array.
    """
    h = check_array("h", h)
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
        If a representation is identically zero, or the arguments are not finite real arrays of
        these shapes (the error names the argument).
    """
    h1, h2, names = _check_pair(h1, h2, names)
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
        If a representation is constant over the samples, or the arguments are not finite real
        arrays of the shapes of :func:`gram_alignment`.
    """
    h1, h2, names = _check_pair(h1, h2, names)
    return _broadcast_pairs(h1, h2, _cka_2d, names)


def mutual_knn(h1: np.ndarray, h2: np.ndarray, k: int) -> float:
    """Mutual k-nearest-neighbour alignment (Huh et al. 2024): the mean over samples of
    ``|N_k^1(i) ∩ N_k^2(i)| / k``, neighbourhoods in Euclidean distance (the sample itself excluded).

    Parameters
    ----------
    h1, h2 : numpy.ndarray, shape (n_samples, features_1) and (n_samples, features_2)
        Finite real representations of the same ``n_samples >= 2`` samples.
    k : int
        Neighbours per sample, ``1 <= k <= n_samples - 1``.

    Returns
    -------
    float
        1 when the neighbourhoods agree (representations equal up to a rotation and a scale), about
        ``k/n`` for unrelated ones.

    Raises
    ------
    ValueError
        If ``h1``, ``h2`` are not finite real 2-D arrays with the same number of samples, or ``k`` is
        not an integer in ``[1, n_samples - 1]``.
    """
    h1, h2, _ = _check_pair(h1, h2, ("h1", "h2"), two_d=True)
    n = h1.shape[0]
    k = check_int("k", k, minimum=1, maximum=n - 1)

    def knn(h):
        sq = (h**2).sum(1)
        d = sq[:, None] + sq[None, :] - 2 * h @ h.T
        np.fill_diagonal(d, np.inf)
        return np.argpartition(d, k - 1, axis=1)[:, :k]

    a, b = knn(unit_scale(h1)), knn(unit_scale(h2))  # neighbours do not depend on the scale: no overflow
    hits = [np.intersect1d(a[i], b[i]).size for i in range(n)]
    return float(np.mean(hits) / k)
