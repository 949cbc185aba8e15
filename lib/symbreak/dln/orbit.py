"""The entropy as the volume of the balanced fibre (P-Sec. 1.2): the orbit Gram determinant and its
pair factorisation.

Pages: ``book/dln/entropy.md``.
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import (
    check_array,
    check_int,
    check_positive,
    check_positive_array,
    finite_result,
)
from ._common import _check_sigma

__all__ = ["orbit_gram_logdet", "pair_gram_determinant", "tridiagonal_toeplitz_det"]

# ---------------------------------------------------------------------------------------------
# the entropy from the orbit volume (Section 1.2): Gram determinant of the balanced fibre
# ---------------------------------------------------------------------------------------------


def _skew_basis(d):
    basis = []
    for i in range(d):
        for j in range(i + 1, d):
            a = np.zeros((d, d))
            a[i, j], a[j, i] = 1.0, -1.0
            basis.append(a)
    return basis


def orbit_gram_logdet(sigma, N, *, rng=None, step: float = 1e-5) -> float:
    """``½ log det`` of the Gram matrix of the balanced fibre above ``X = diag(σ)``, by finite differences.

    The fibre is the orbit ``(Q_1, …, Q_{N−1}) ↦ (W_1, …, W_N)``, ``W_1 = Q_1ΛVᵀ``,
    ``W_k = Q_kΛQ_{k−1}ᵀ``, ``W_N = UΛQ_{N−1}ᵀ`` (``Λ = Σ^{1/N}``, :func:`balanced_factors`). At a point
    ``Q`` (Haar-random from ``rng``, identity if None) the map ``(A_1, …, A_{N−1}) ↦ W(Q_1e^{A_1}, …)``
    on skew matrices (basis ``e_ie_jᵀ − e_je_iᵀ``) is differentiated by central differences with
    ``step``, and ``½ log det(JᵀJ)`` is returned: the log of the volume density of the orbit, the same at
    every point of the orbit. It equals :func:`entropy` plus ``¼ d(d−1)(N−1) log 2`` (the closed form of
    :func:`pair_gram_determinant`).

    Parameters
    ----------
    sigma : array_like, shape (d,)
        Distinct positive singular values (``d ≥ 2``; at most ``d = 8``).
    N : int
        Depth, ``2 ≤ N ≤ 16``.
    step : float
        Central-difference step on the rotation angles, in ``(0, 0.01]``.
    """
    from scipy.linalg import expm

    sigma = _check_sigma(sigma, min_d=2)
    N = check_int("N", N, minimum=2, maximum=16)
    if sigma.size > 8:
        raise ValueError(f"sigma must hold at most 8 values (d <= 8), got d={sigma.size}")
    step = check_positive("step", step)
    if step > 1e-2:
        raise ValueError(f"step must lie in (0, 0.01] (a finite-difference step on the rotation angles), got {step!r}")
    d = sigma.size
    lam = np.diag(sigma ** (1.0 / N))
    Qs = [np.eye(d) if rng is None else _haar_orthogonal(rng, d) for _ in range(N - 1)]

    def factors(qs):
        Ws = [qs[0] @ lam]
        for k in range(1, N - 1):
            Ws.append(qs[k] @ lam @ qs[k - 1].T)
        Ws.append(lam @ qs[-1].T)
        return np.concatenate([W.ravel() for W in Ws])

    cols = []
    for k in range(N - 1):
        for a in _skew_basis(d):
            plus = [q @ expm(step * a) if m == k else q for m, q in enumerate(Qs)]
            minus = [q @ expm(-step * a) if m == k else q for m, q in enumerate(Qs)]
            cols.append((factors(plus) - factors(minus)) / (2.0 * step))
    J = np.stack(cols, axis=1)
    sign, logdet = np.linalg.slogdet(J.T @ J)
    if sign <= 0:
        raise ValueError("the orbit map is degenerate here (repeated singular values?)")
    return 0.5 * float(logdet)


def pair_gram_determinant(lam_i, lam_j, N):
    """Determinant of the ``(N−1)×(N−1)`` tridiagonal Toeplitz Gram matrix of one pair ``(i, j)``:
    diagonal ``2(λ_i² + λ_j²)``, off-diagonal ``−2λ_iλ_j``. Its characteristic roots are ``2λ_i²`` and
    ``2λ_j²``, so ``D = 2^{N−1}(λ_i^{2N} − λ_j^{2N})/(λ_i² − λ_j²) = 2^{N−1} Σ_m λ_i^{2(N−1−m)}λ_j^{2m}``
    (the λ-polynomial P(3.5)); arrays broadcast.
    """
    a = check_positive_array("lam_i", lam_i, ndim=None)
    b = check_positive_array("lam_j", lam_j, ndim=None)
    N = check_int("N", N, minimum=2, maximum=10_000)
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        out = 2.0 ** (N - 1) * sum(a ** (2 * (N - 1 - m)) * b ** (2 * m) for m in range(N))
    return finite_result("pair_gram_determinant", out)


def tridiagonal_toeplitz_det(diag, off, n):
    """``det`` of the ``n×n`` tridiagonal Toeplitz matrix (diagonal ``diag``, off-diagonal ``off``) by the
    three-term recursion ``D_k = diag·D_{k−1} − off²·D_{k−2}`` (an independent check of
    :func:`pair_gram_determinant`)."""
    diag = float(check_array("diag", diag, ndim=0))
    off = float(check_array("off", off, ndim=0))
    n = check_int("n", n, minimum=1, maximum=100_000)
    d_prev, d_cur = 1.0, diag
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(n - 1):
            d_prev, d_cur = d_cur, diag * d_cur - off * off * d_prev
            if not math.isfinite(d_cur):
                break
    return finite_result("tridiagonal_toeplitz_det", d_cur)


# names from later modules of this package, imported last so that the import cycle resolves
from .matrix import _haar_orthogonal  # noqa: E402
