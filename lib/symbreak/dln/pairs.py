"""The pair force and its asymmetry (P-Sec. 6.2), the scale-and-ratio reduction (P-Sec. 7.2), the mean-
field pair free energy and factor gradients.

Pages: ``book/dln/equilibrium.md``, ``book/dln/index.md``.
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import (
    check_array,
    check_positive,
    check_positive_array,
    finite_result,
)
from ._common import _check_beta, _check_depth, _check_factors, _check_p, _kappa, _log_geometric
from ._special import _h

__all__ = [
    "pair_force",
    "pair_force_asymmetry",
    "phi_pair",
    "scale_ratio_velocity",
    "mean_field_pair_matrix",
    "mean_field_free_energy",
    "factor_gradients",
]

# ---------------------------------------------------------------------------------------------
# referee additions: the pair-force asymmetry (Sec. 6.2), the scale-and-ratio reduction (Sec. 7.2),
# the mean-field functional (Sec. 8.3)
# ---------------------------------------------------------------------------------------------


def pair_force(a, b, N):
    """The pair force ``r_N(a, b) = a/(a² − b²) − a^{2/N−1}/(N(a^{2/N} − b^{2/N}))`` of (6.1), tie-safe.

    It is the pair's summand of ``∂S_N/∂σ_i`` in (3.9): ``r_N(a, b) = [1 − 1/N + G_N'(δ)]/(2a)`` with
    ``δ = log(a/b)``, and ``r_N(a, a) = (1 − 1/N)/(2a)`` (the limit (3.10)). Arrays broadcast.

    Parameters
    ----------
    a, b : array_like
        Positive singular values.
    N : int or numpy.inf
        The depth, ``N >= 1``.

    Returns
    -------
    numpy.ndarray
    """
    a = check_positive_array("a", a, ndim=None)
    b = check_positive_array("b", b, ndim=None)
    N = _check_depth(N, allow_inf=True)
    a, b = np.broadcast_arrays(a, b)
    return finite_result("pair_force", _h(np.log(a) - np.log(b), N) / (2.0 * a))


def _sinh_excess(m: float, x: np.ndarray) -> np.ndarray:
    """``sinh(m x) − m sinh x`` for ``x >= 0``, ``m >= 1``: a sum of non-negative Taylor terms where
    ``m x < 1`` (no cancellation, exactly ``>= 0``), the direct difference beyond."""
    out = np.empty_like(x)
    small = m * x < 1.0
    xs = x[small]
    term_sum = np.zeros_like(xs)
    for k in range(1, 12):
        term_sum += (m ** (2 * k + 1) - m) * xs ** (2 * k + 1) / math.factorial(2 * k + 1)
    out[small] = term_sum
    xb = x[~small]
    out[~small] = np.sinh(m * xb) - m * np.sinh(xb)
    return out


def pair_force_asymmetry(a, b, N):
    """``r_N(a, b) − r_N(b, a)`` for ``a >= b`` in closed form (the inequality of Sec. 6.2).

    With ``x = log(a/b)/N``,

    ``r_N(a, b) − r_N(b, a) = −(a + b)/(2ab) · [sinh((N−1)x) − (N−1) sinh x] / (N sinh x sinh(Nx))``,

    which is ``<= 0`` because ``sinh(m x) >= m sinh x`` for ``m >= 1``, ``x >= 0`` (``sinh y / y``
    increases), with equality exactly for ``N = 2`` or ``a = b``. Derivation: ``r_N(a, b) =
    [κ + G_N'(δ)]/(2a)`` and ``r_N(b, a) = [κ − G_N'(δ)]/(2b)`` (``G_N'`` is odd), so the difference is
    ``(a + b)/(2ab)·[G_N'(δ) − κ tanh(δ/2)]``; then ``tanh(δ/2) = coth δ − csch δ`` and
    ``coth(x) − coth(Nx) = sinh((N−1)x)/(sinh x sinh Nx)``.

    Parameters
    ----------
    a, b : array_like
        Positive singular values with ``a >= b`` (broadcast).
    N : int
        Finite depth ``N >= 2``.

    Returns
    -------
    numpy.ndarray
        The (non-positive) differences.
    """
    a = check_positive_array("a", a, ndim=None)
    b = check_positive_array("b", b, ndim=None)
    N = _check_depth(N, minimum=2)
    a, b = np.broadcast_arrays(a, b)
    if np.any(a < b):
        raise ValueError("pair_force_asymmetry needs a >= b (the difference is antisymmetric)")
    x = (np.log(a) - np.log(b)) / N
    out = np.zeros_like(x)
    pos = x > 0
    xp = x[pos]
    # sinh x sinh(Nx) without overflow: log sinh y = y + log1p(−e^{−2y}) − log 2
    log_den = xp + N * xp + np.log(-np.expm1(-2.0 * xp)) + np.log(-np.expm1(-2.0 * N * xp)) - 2 * math.log(2.0)
    num = _sinh_excess(float(N - 1), xp)
    with np.errstate(over="ignore", divide="ignore"):
        ratio = np.exp(np.log(np.where(num > 0, num, 1.0)) - log_den) * (num > 0)
    out[pos] = -(a[pos] + b[pos]) / (2.0 * a[pos] * b[pos]) * ratio / N
    return finite_result("pair_force_asymmetry", out)


def phi_pair(a, b, N):
    """``φ_N(a, b) = a^{2N−1}/(a^{2N} − b^{2N}) − a/(N(a² − b²))`` of (7.8), tie-safe, in ``λ``-units.

    ``φ_N(a, b) = [1 − 1/N + G_N'(N log(a/b))]/(2a)`` (the pair force (6.1) in ``λ = σ^{1/N}``,
    ``λ_i^{N−1} r_N(λ_i^N, λ_k^N)``), so it is finite at ``a = b``, where it equals ``(N − 1)/(2Na)``:
    the limit (7.11). Arrays broadcast.

    Parameters
    ----------
    a, b : array_like
        Positive values of ``λ``.
    N : int
        Finite depth ``N >= 1``.

    Returns
    -------
    numpy.ndarray
    """
    a = check_positive_array("a", a, ndim=None)
    b = check_positive_array("b", b, ndim=None)
    N = _check_depth(N)
    a, b = np.broadcast_arrays(a, b)
    return finite_result("phi_pair", _h(N * (np.log(a) - np.log(b)), N) / (2.0 * a))


def scale_ratio_velocity(u, s, *, N, p, beta):
    """The chamber flow of the Schatten energy in scale and ratios, (7.10) ((7.7) for ``d = 2``).

    With ``λ_d = s`` and ``λ_i = u_i s`` (``i < d``), the flow ``λ̇_i = −λ_i^{Np−1} + β^{−1} Σ_{k≠i} φ_N(λ_i, λ_k)``
    (7.4) becomes

    ``ṡ = −s^{Np−1} + (β s)^{−1} Σ_j φ_N(1, u_j)``,
    ``u̇_i = s^{Np−2}(u_i − u_i^{Np−1}) + (β s²)^{−1}[Σ_{k≠i} φ_N(u_i, u_k) + φ_N(u_i, 1) − u_i Σ_j φ_N(1, u_j)]``,

    using that ``φ_N`` is homogeneous of degree −1. ``u ≡ 1`` is invariant (the limit (7.11)).

    Parameters
    ----------
    u : array_like
        The ``d − 1`` positive ratios ``u_i = λ_i/λ_d``.
    s : float
        The scale ``λ_d > 0``.
    N : int
        Depth ``N >= 2``.
    p : float
        Schatten exponent ``p >= 1``.
    beta : float
        Inverse temperature ``β > 0``.

    Returns
    -------
    tuple of (numpy.ndarray, float)
        ``(u̇, ṡ)``.
    """
    u = check_positive_array("u", u, ndim=1)
    s = check_positive("s", s)
    N = _check_depth(N, minimum=2)
    p = _check_p(p)
    beta = _check_beta(beta)
    nu = N * p
    phi_1u = phi_pair(1.0, u, N)  # φ_N(1, u_j)
    pair = phi_pair(u[:, None], u[None, :], N)
    np.fill_diagonal(pair, 0.0)
    bracket = pair.sum(axis=1) + phi_pair(u, 1.0, N) - u * phi_1u.sum()
    s = np.float64(s)  # NumPy powers: an overflow gives inf, which finite_result reports as a ValueError
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        s_dot = -(s ** (nu - 1)) + phi_1u.sum() / (beta * s)
        u_dot = s ** (nu - 2) * (u - u ** (nu - 1)) + bracket / (beta * s**2)
    return finite_result("scale_ratio_velocity", (u_dot, float(s_dot)))


def mean_field_pair_matrix(x, N):
    """The pair term ``P(x_i, x_j) = ½ log[(x_i² − x_j²)/(x_i^{2/N} − x_j^{2/N})]`` for all pairs, ties
    included (``P(x, x) = ½ log(N x^{2−2/N})``), through the positive polynomial (3.5).

    Parameters
    ----------
    x : array_like
        Positive atoms, shape ``(n,)``.
    N : int
        Depth ``N >= 1``.

    Returns
    -------
    numpy.ndarray
        Shape ``(n, n)``.
    """
    x = check_positive_array("x", x, ndim=1)
    N = _check_depth(N)
    ell = np.log(x)
    delta = ell[:, None] - ell[None, :]
    # ½[(1 − 1/N)(ℓ_i + ℓ_j) + G_N(δ)], G_N(δ) = |δ|(1 − 1/N) + log Σ_m e^{−2|δ|m/N}
    val = 0.5 * (_kappa(N) * (ell[:, None] + ell[None, :] + np.abs(delta)) + _log_geometric(np.abs(delta), N))
    return finite_result("mean_field_pair_matrix", val)


def mean_field_free_energy(x, w, *, N, p, beta0) -> float:
    """The mean-field free energy ``F[μ] = ∫ f dμ − (2β0)^{−1} ∬ P dμ dμ`` of a discrete measure
    ``μ = Σ_i w_i δ_{x_i}`` (Sec. 8.3 at ``β = β0 d``), with ``f(x) = x^p/p``.

    Parameters
    ----------
    x : array_like
        Positive atoms, shape ``(n,)``.
    w : array_like
        Non-negative weights summing to 1, shape ``(n,)``.
    N : int
        Depth ``N >= 1``.
    p : float
        Schatten exponent ``p >= 1``.
    beta0 : float
        ``β0 > 0``.

    Returns
    -------
    float
    """
    x = check_positive_array("x", x, ndim=1)
    w = check_array("w", w, ndim=1)
    if w.shape != x.shape:
        raise ValueError(f"w must have the shape of x {x.shape}, got {w.shape}")
    if np.any(w < 0) or abs(w.sum() - 1.0) > 1e-12:
        raise ValueError("w must be non-negative weights summing to 1")
    p = _check_p(p)
    beta0 = check_positive("beta0", beta0)
    P = mean_field_pair_matrix(x, N)
    return finite_result("mean_field_free_energy", float(w @ (x**p / p) - (w @ P @ w) / (2.0 * beta0)))


def factor_gradients(Ws, grad_X) -> list:
    """Gradients of ``E(W_N ⋯ W_1)`` with respect to each factor, for any energy (spectral or not).

    ``∇_{W_k} E = (W_N ⋯ W_{k+1})ᵀ ∇E(X) (W_{k−1} ⋯ W_1)ᵀ`` (the factor gradient flow of the chapter's
    first section).

    Parameters
    ----------
    Ws : list of numpy.ndarray
        The factors ``[W_1, …, W_N]``, each ``d×d``.
    grad_X : array_like
        ``∇E(X)`` at ``X = W_N ⋯ W_1``, shape ``(d, d)``.

    Returns
    -------
    list of numpy.ndarray
        ``[∇_{W_1} E, …, ∇_{W_N} E]``.
    """
    Ws = _check_factors(Ws)
    d = Ws[0].shape[0]
    G = check_array("grad_X", grad_X, shape=(d, d))
    n = len(Ws)
    left = [np.eye(d)] * (n + 1)  # left[k] = W_n ⋯ W_{k+1} (0-based: product of Ws[k:] from the top)
    for k in range(n - 1, -1, -1):
        left[k] = left[k + 1] @ Ws[k]
    out, right = [], np.eye(d)  # right = W_{k−1} ⋯ W_1
    for k in range(n):
        out.append(left[k + 1].T @ G @ right.T)
        right = Ws[k] @ right
    return finite_result("factor_gradients", out)
