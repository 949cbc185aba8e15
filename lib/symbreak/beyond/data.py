"""Real data for the 'Beyond the theorems' part: the 8×8 digits (shipped with scikit-learn) and their
PCA theory.

Pages: ``book/beyond/alignment.md``, ``book/beyond/autoencoders.md``.
"""

from __future__ import annotations

import numpy as np

from ..validation import check_array, check_choice, check_int, finite_result

__all__ = ["load_digits_data", "pca_theory"]


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
