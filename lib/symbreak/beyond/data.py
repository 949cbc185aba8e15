"""Real data for the 'Beyond the theorems' part: the 8×8 digits and 8×8 grey patches of two photographs
(both shipped with scikit-learn), and the digits' PCA theory.

Pages: ``book/beyond/alignment.md``, ``book/beyond/autoencoders.md``.
"""

from __future__ import annotations

import numpy as np

from ..rng import make_rng
from ..validation import check_array, check_choice, check_int, finite_result

__all__ = ["load_digits_data", "load_image_patches", "pca_theory"]


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------
def load_digits_data(name: str = "digits"):
    """A data set shipped with scikit-learn, centred and scaled to ``E‖x‖² = 1``.

    Parameters
    ----------
    name : {"digits", "iris", "wine", "breast_cancer"}
        ``"digits"``: the 1797 8×8 handwritten digits (``d = 64``); the others are the small
        tabular sets scikit-learn also ships (for the exercises). Nothing is downloaded.

    Returns
    -------
    X : numpy.ndarray, shape (n, d)
        Centred data with mean squared norm 1 (so ``tr Σ = 1``).
    y : numpy.ndarray of int, shape (n,)
        Class labels.
    """
    from sklearn import datasets

    loaders = {
        "digits": datasets.load_digits,
        "iris": datasets.load_iris,
        "wine": datasets.load_wine,
        "breast_cancer": datasets.load_breast_cancer,
    }
    check_choice("name", name, tuple(loaders))
    bunch = loaders[name]()
    x = np.asarray(bunch.data, dtype=float)
    if name != "digits":  # tabular sets: standardise the features first (their units differ)
        x = (x - x.mean(0)) / x.std(0)
    x = x - x.mean(axis=0)
    x = x / np.sqrt(np.mean(np.sum(x * x, axis=1)))
    return x, np.asarray(bunch.target, dtype=int)


#: ITU-R BT.601 luma weights of the red, green and blue channels: the grey level of a colour pixel.
LUMA = (0.299, 0.587, 0.114)


def load_image_patches(n: int, *, size: int = 8, seed=None):
    """Grey ``size × size`` patches of the two photographs scikit-learn ships, standardised.

    ``sklearn.datasets.load_sample_images`` holds two 427×640 colour photographs (a temple in China,
    a flower; read with Pillow, nothing downloaded). Each is turned grey with the luma weights
    ``LUMA`` and scaled to ``[0, 1]``; patch ``i`` comes from a photograph and a top-left corner
    drawn uniformly (seeded), so patches may overlap. Standardisation, in this order: each patch's own
    mean grey level is subtracted (its brightness, the "DC" component that would dominate the
    variance of natural-image patches); the patches are centred over the sample; and the whole set is
    scaled to mean squared norm 1 (``tr Σ = 1``, as :func:`load_digits_data`). After the first step
    every patch sums to 0, so the covariance has rank at most ``size² − 1``.

    Parameters
    ----------
    n : int
        Number of patches, ``2 ≤ n ≤ 10⁶``.
    size : int
        Side of a patch in pixels, ``2 ≤ size ≤ 64``.
    seed : int, optional
        Seed of the photographs and corners drawn (:func:`symbreak.rng.make_rng`).

    Returns
    -------
    X : numpy.ndarray, shape (n, size²)
        The standardised patches, row-major pixels.
    image : numpy.ndarray of int, shape (n,)
        Which photograph each patch comes from (0 or 1).
    """
    n = check_int("n", n, minimum=2, maximum=10**6)
    size = check_int("size", size, minimum=2, maximum=64)
    from sklearn.datasets import load_sample_images

    grey = [np.asarray(im, dtype=float) @ np.asarray(LUMA) / 255.0 for im in load_sample_images().images]
    rng = make_rng(seed)
    image = rng.integers(0, len(grey), size=n)
    x = np.empty((n, size * size))
    for j, g in enumerate(grey):
        sel = np.flatnonzero(image == j)
        rows = rng.integers(0, g.shape[0] - size + 1, size=sel.size)
        cols = rng.integers(0, g.shape[1] - size + 1, size=sel.size)
        win = np.lib.stride_tricks.sliding_window_view(g, (size, size))
        x[sel] = win[rows, cols].reshape(sel.size, -1)
    x = x - x.mean(axis=1, keepdims=True)
    x = x - x.mean(axis=0)
    scale = np.sqrt(np.mean(np.sum(x * x, axis=1)))
    if not scale > 0:
        raise ValueError(f"every one of the n={n} patches drawn is flat (one grey level): draw more patches")
    return x / scale, image


def pca_theory(X, k: int) -> dict:
    """The linear autoencoder theory fed by a data set's own moments.

    For a linear autoencoder at a PCA solution with ``k`` hidden units the charge
    ``Q = WᵀW − UUᵀ`` drifts at ``dQ/dτ = U C Uᵀ`` with ``C = E[‖x_⊥‖² x_∥ x_∥ᵀ]`` (the
    autoencoder chapter's Eq. 5, which holds for any data distribution); in the eigenbasis and
    with ``S = I`` its diagonal ``c_a = C_aa`` is the growth rate of mode ``a`` in the Lambert-W
    law. For Gaussian data ``c_a = λ_a Σ_{j>k} λ_j``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Centred data.
    k : int
        Hidden width, ``1 ≤ k < d``.

    Returns
    -------
    dict with ``lambdas`` (d,) eigenvalues of ``Σ`` (descending), ``basis`` (d, d) eigenvectors,
    ``C`` (k, k) in the eigenbasis, ``c_data`` (k,) its diagonal, ``c_gauss`` (k,), and
    ``offdiag`` = ``max |C_ab| (a ≠ b) / max C_aa``.
    """
    X = check_array("X", X, ndim=2)
    n, d = X.shape
    if n < 2:
        raise ValueError(f"X must have at least 2 rows (samples), got {n}")
    k = check_int("k", k, minimum=1, maximum=d - 1)
    with np.errstate(over="ignore", invalid="ignore"):
        cov = X.T @ X / n
    finite_result("pca_theory (the covariance of X)", cov)
    lam, vec = np.linalg.eigh(cov)
    lam, vec = lam[::-1], vec[:, ::-1]
    z = X @ vec
    perp = np.sum(z[:, k:] ** 2, axis=1)
    c = (z[:, :k] * perp[:, None]).T @ z[:, :k] / n
    if not np.abs(np.diag(c)).max() > 0:  # X so small that its fourth moments underflow
        raise ValueError("pca_theory: the fourth moments of X underflow float64 (X too small in scale)")
    with np.errstate(over="ignore", invalid="ignore"):
        off = np.abs(c - np.diag(np.diag(c))).max() / np.abs(np.diag(c)).max() if k > 1 else 0.0
    finite_result("pca_theory", (c, off))
    return {
        "lambdas": lam,
        "basis": vec,
        "C": c,
        "c_data": np.diag(c).copy(),
        "c_gauss": lam[:k] * lam[k:].sum(),
        "offdiag": float(off),
    }
