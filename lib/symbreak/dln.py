"""Entropy of the deep linear network: free energy on singular values (Chen, Kotwal & Menon).

The deep linear network (DLN) ``X = W_N ⋯ W_1`` of ``d×d`` matrices, trained by gradient flow from
a balanced initialisation, moves its end-to-end matrix ``X`` by a Riemannian gradient flow for the
metric ``g^N`` whose inverse is the operator ``A_{N,X}`` (Lemma 2.1 of the paper). For a spectral
energy the flow acts on the singular values alone, in the chamber ``σ_1 ≥ … ≥ σ_d > 0``, with the
pushforward metric (2.9); adding the Boltzmann entropy ``S_N`` of the balanced fibre at inverse
temperature ``β`` gives the free energy ``F_β = E − S_N/β`` and the flow (1.10)

    σ̇_i = −N σ_i^{2−2/N} ∂F_β/∂σ_i .

Everything in this module is evaluated without cancellation at and near coincident singular values.
The key is to write each pair term of the entropy in logarithmic variables ``ℓ_i = log σ_i``,
``δ = ℓ_i − ℓ_j``:

    log[(σ_i² − σ_j²)/(σ_i^{2/N} − σ_j^{2/N})] = (1 − 1/N)(ℓ_i + ℓ_j) + G_N(δ),
    G_N(δ) = log[sinh δ / sinh(δ/N)],

an even, real-analytic function with ``G_N(0) = log N``; its derivatives
``G_N'(δ) = c(δ) − c(δ/N)/N`` and ``G_N''(δ) = −e(δ) + e(δ/N)/N²`` use ``c(x) = coth x − 1/x`` and
``e(x) = csch² x − 1/x²``, whose ``1/x`` poles cancel exactly and which are evaluated by their Taylor
series near 0. The entropy itself is evaluated by the λ-polynomial form (3.4)–(3.5),
``λ = σ^{1/N}``, with the larger value factored out.

Contents
--------
Entropy (Sections 3–5): :func:`entropy`, :func:`entropy_gradient`, :func:`entropy_hessian`,
:func:`riemannian_entropy_hessian`, :func:`pair_kernels` (``p_N, q_N``),
:func:`log_form_derivatives`, :func:`naive_entropy`,
:func:`entropy_autograd` (PyTorch reference).

Energies and flows (Sections 2, 6): :class:`SpectralEnergy`, :func:`schatten_energy`,
:func:`quadratic_energy`, :func:`flow_vector_field`, :func:`flow_jacobian`,
:func:`singular_value_flow`, :func:`numerical_jacobian`.

Equilibria and rates (Theorems 1.2, 1.3): :func:`schatten_sigma_star`, :func:`sigma_star`,
:func:`relaxation_rates`, :func:`relaxation_rates_general`.

Exact solution (Theorem 1.7): :func:`scale_time_function`, :func:`schatten_scale`.

Matrices (Section 2): :func:`A_operator`, :func:`A_matrix`, :func:`A_eigenvalues`,
:func:`factor_metric_operator`, :func:`balanced_factors`, :func:`end_to_end`,
:func:`balance_defect`, :func:`spectral_gradient_matrix`, :func:`train_factors`.

Large ``d`` (Section 8.3): :func:`equilibrium_spectrum`, :func:`quarter_circle_density`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import integrate, optimize, special

from .validation import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_positive_array,
    check_tolerance,
    solve_ivp_bounded,
)
from .validation import MAX_STEPS, finite_result

__all__ = [
    "entropy",
    "entropy_gradient",
    "entropy_hessian",
    "riemannian_entropy_hessian",
    "pair_kernels",
    "log_form_derivatives",
    "naive_entropy",
    "entropy_autograd",
    "SpectralEnergy",
    "schatten_energy",
    "quadratic_energy",
    "flow_vector_field",
    "flow_jacobian",
    "singular_value_flow",
    "numerical_jacobian",
    "schatten_sigma_star",
    "sigma_star",
    "relaxation_rates",
    "relaxation_rates_general",
    "scale_time_function",
    "schatten_scale",
    "A_operator",
    "A_matrix",
    "A_eigenvalues",
    "factor_metric_operator",
    "balanced_factors",
    "end_to_end",
    "balance_defect",
    "spectral_gradient_matrix",
    "train_factors",
    "equilibrium_spectrum",
    "quarter_circle_density",
]


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------

def _check_sigma(sigma, name: str = "sigma", *, min_d: int = 1) -> np.ndarray:
    arr = check_positive_array(name, sigma, ndim=1)
    if arr.size < min_d:
        raise ValueError(f"{name} must hold at least {min_d} singular values (d >= {min_d}), got d={arr.size}")
    return arr


def _check_depth(N, *, allow_inf: bool = False, minimum: int = 1):
    """Depth ``N``: an integer ``>= minimum`` (or ``numpy.inf`` where allowed)."""
    if allow_inf and isinstance(N, (float, np.floating)) and math.isinf(N) and N > 0:
        return math.inf
    try:
        return check_int("N", N, minimum=minimum, maximum=_MAX_DEPTH)
    except ValueError as exc:
        extra = " or numpy.inf" if allow_inf else ""
        raise type(exc)(f"N (the depth) must be an integer in [{minimum}, 2**53]{extra}, got {N!r}") from None


#: Largest finite depth accepted (every integer up to it is an exact float).
_MAX_DEPTH = 2**53
#: Above this depth, sums over the N layers are evaluated in closed form (geometric series).
_LOOP_DEPTH = 64
#: Largest depth for which A_operator / A_matrix / entropy_autograd sum the N terms literally.
_LITERAL_DEPTH = 10_000


def _log_geometric(delta_abs, N):
    """``log Σ_{m=0}^{N−1} e^{−2|δ|m/N} = log[(1 − e^{−2|δ|}) / (1 − e^{−2|δ|/N})]`` (``log N`` at ``δ = 0``),
    accurate for every ``N`` and ``δ`` (both ``expm1``): the work does not grow with ``N``."""
    delta_abs = np.asarray(delta_abs, dtype=float)
    x = -2.0 * delta_abs / N
    pos = delta_abs > 0
    safe = np.where(pos, delta_abs, 1.0)
    with np.errstate(divide="ignore"):
        val = np.log(-np.expm1(-2.0 * safe)) - np.log(-np.expm1(np.where(pos, x, -1.0)))
    return np.where(pos, val, math.log(N))


def _check_beta(beta, *, allow_inf: bool = False) -> float:
    return check_positive("beta", beta, allow_inf=allow_inf)


def _check_p(p) -> float:
    v = check_positive("p", p)
    if v < 1:
        raise ValueError(f"p (the Schatten exponent) must lie in [1, inf), got {p!r}")
    return v


def _check_d(d, *, minimum: int = 2) -> int:
    try:
        return check_int("d", d, minimum=minimum)
    except ValueError:
        raise ValueError(f"d must be an integer >= {minimum} (the formula needs pairs of singular values), "
                         f"got {d!r}") from None


def _check_factors(Ws, name: str = "Ws") -> list:
    """A non-empty list of finite real ``d×d`` matrices of one size (the factors ``[W_1, …, W_N]``)."""
    if isinstance(Ws, np.ndarray) and Ws.ndim == 3:
        Ws = list(Ws)
    if not isinstance(Ws, (list, tuple)) or len(Ws) == 0:
        raise ValueError(f"{name} must be a non-empty list of square matrices [W_1, ..., W_N]")
    out = [check_array(f"{name}[{k}]", W, ndim=2) for k, W in enumerate(Ws)]
    d = out[0].shape[0]
    for k, W in enumerate(out):
        if W.shape != (d, d) or d == 0:
            raise ValueError(f"{name}[{k}] must be a {d}x{d} matrix like {name}[0], got shape {W.shape}")
    return out


def _kappa(N) -> float:
    """``1 − 1/N`` (``1`` at ``N = inf``)."""
    return 1.0 if math.isinf(N) else 1.0 - 1.0 / N


# ---------------------------------------------------------------------------------------------
# tie-safe elementary functions: c(x) = coth x − 1/x, e(x) = csch² x − 1/x², L(x) = log(sinh x / x)
# ---------------------------------------------------------------------------------------------

_SERIES_CUT = 0.5
_NTERMS = 16
_B2N = np.array([special.bernoulli(2 * n)[2 * n] for n in range(1, _NTERMS + 1)])
# c(x) = sum_n a_n x^(2n-1), a_n = 2^(2n) B_2n / (2n)!
_A_N = np.array([2.0 ** (2 * n) * _B2N[n - 1] / math.factorial(2 * n) for n in range(1, _NTERMS + 1)])


def _poly_even(x2: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
    """``sum_k coeffs[k] * x2**k`` by Horner."""
    out = np.zeros_like(x2)
    for ck in coeffs[::-1]:
        out = out * x2 + ck
    return out


def _coth_minus_inv(x):
    """``c(x) = coth x − 1/x``, odd and analytic (``c(0) = 0``, ``c'(0) = 1/3``)."""
    x = np.asarray(x, dtype=float)
    ax = np.abs(x)
    small = ax < _SERIES_CUT
    out = np.empty_like(x)
    xs = x[small]
    out[small] = xs * _poly_even(xs * xs, _A_N)
    xl = ax[~small]
    y = np.exp(-2.0 * xl)
    out[~small] = np.sign(x[~small]) * ((1.0 + y) / (-np.expm1(-2.0 * xl)) - 1.0 / xl)
    return out


def _csch2_minus_inv2(x):
    """``e(x) = csch² x − 1/x² = −c'(x)``, even and analytic (``e(0) = −1/3``)."""
    x = np.asarray(x, dtype=float)
    ax = np.abs(x)
    small = ax < _SERIES_CUT
    out = np.empty_like(x)
    xs2 = x[small] ** 2
    # c'(x) = sum_n a_n (2n-1) x^(2n-2)
    coeffs = _A_N * (2 * np.arange(1, _NTERMS + 1) - 1)
    out[small] = -_poly_even(xs2, coeffs)
    xl = ax[~small]
    y = np.exp(-2.0 * xl)
    out[~small] = 4.0 * y / np.expm1(-2.0 * xl) ** 2 - 1.0 / xl**2
    return out


def _log_sinhc(x):
    """``L(x) = log(sinh x / x)``, even, ``L(0) = 0``."""
    x = np.asarray(x, dtype=float)
    ax = np.abs(x)
    out = np.empty_like(ax)
    small = ax < _SERIES_CUT
    coeffs = _A_N / (2 * np.arange(1, _NTERMS + 1))
    xs2 = ax[small] ** 2
    out[small] = xs2 * _poly_even(xs2, coeffs)
    mid = (~small) & (ax < 20.0)
    out[mid] = np.log(np.sinh(ax[mid]) / ax[mid])
    big = ax >= 20.0
    xb = ax[big]
    out[big] = xb - math.log(2.0) - np.log(xb) + np.log1p(-np.exp(-2.0 * xb))
    return out


def _G1(delta, N):
    """``G_N'(δ) = coth δ − coth(δ/N)/N`` (odd), tie-safe."""
    if math.isinf(N):
        return _coth_minus_inv(delta)
    return _coth_minus_inv(delta) - _coth_minus_inv(delta / N) / N


def _h(delta, N):
    """``h(δ) = (1 − 1/N) + G_N'(δ)``: twice the pair's contribution to ``∂S_N/∂ℓ_i``.

    Tie-safe (series for ``|δ| < 1/2``) and free of cancellation when the two singular values are far
    apart: ``1 + coth x = −2/expm1(−2x)`` for ``x ≠ 0``, so
    ``h(δ) = −2/expm1(−2δ) + (2/N)/expm1(−2δ/N)`` (``−2/expm1(−2δ) − 1/δ`` at ``N = inf``), whose
    terms keep full relative accuracy also for ``δ → −∞`` where ``h`` is exponentially small.
    """
    delta = np.asarray(delta, dtype=float)
    out = np.empty_like(delta)
    small = np.abs(delta) < _SERIES_CUT
    out[small] = _kappa(N) + _G1(delta[small], N)
    dl = delta[~small]
    first = -2.0 / np.expm1(-2.0 * dl)
    out[~small] = first - 1.0 / dl if math.isinf(N) else first + (2.0 / N) / np.expm1(-2.0 * dl / N)
    return out


def _G2_minus_h(delta, N):
    """``G_N''(δ) − h(δ)`` (the numerator of ``q_N``); exact closed form ``−1/(1 + e^{−δ})²`` at ``N = 2``,
    where the general expression would cancel for widely separated values."""
    if N == 2:
        return -1.0 / (1.0 + np.exp(-np.asarray(delta, dtype=float))) ** 2
    return _G2(delta, N) - _h(delta, N)


def _G2(delta, N):
    """``G_N''(δ) = −csch² δ + csch²(δ/N)/N²`` (even), tie-safe; ``G_N''(0) = (1 − 1/N²)/3``."""
    if math.isinf(N):
        return -_csch2_minus_inv2(delta)
    return -_csch2_minus_inv2(delta) + _csch2_minus_inv2(delta / N) / N**2


# ---------------------------------------------------------------------------------------------
# entropy and its derivatives (batched internals: sigma of shape (..., d))
# ---------------------------------------------------------------------------------------------

def _deltas(ell):
    return ell[..., :, None] - ell[..., None, :]


def _entropy_log_grad(sigma, N):
    """``g_i = ∂S_N/∂ℓ_i`` for ``ℓ = log σ``; sigma of shape (..., d)."""
    d = sigma.shape[-1]
    if N == 1 or d < 2:
        return np.zeros_like(sigma)
    delta = _deltas(np.log(sigma))
    hd = _h(delta, N)
    idx = np.arange(d)
    hd[..., idx, idx] = 0.0
    return 0.5 * hd.sum(axis=-1)


def _entropy_log_hessian(sigma, N):
    """Hessian of ``S_N`` in ``ℓ = log σ``: off-diagonal ``−G''(δ_ij)/2``, diagonal ``Σ_k G''(δ_ik)/2``."""
    d = sigma.shape[-1]
    if N == 1 or d < 2:
        return np.zeros(sigma.shape + (d,))
    delta = _deltas(np.log(sigma))
    g2 = _G2(delta, N)
    idx = np.arange(d)
    g2_off = g2.copy()
    g2_off[..., idx, idx] = 0.0
    h = -0.5 * g2_off
    h[..., idx, idx] = 0.5 * g2_off.sum(axis=-1)
    return h


def _entropy_grad_batched(sigma, N):
    return _entropy_log_grad(sigma, N) / sigma


def _entropy_hess_batched(sigma, N):
    """Euclidean Hessian: ``p_N(σ_i, σ_j)`` off the diagonal, ``Σ_{k≠i} q_N(σ_i, σ_k)`` on it."""
    d = sigma.shape[-1]
    if N == 1 or d < 2:
        return np.zeros(sigma.shape + (d,))
    delta = _deltas(np.log(sigma))
    idx = np.arange(d)
    h = -_G2(delta, N) / (2.0 * sigma[..., :, None] * sigma[..., None, :])
    qn = _G2_minus_h(delta, N)
    qn[..., idx, idx] = 0.0
    h[..., idx, idx] = qn.sum(axis=-1) / (2.0 * sigma**2)
    return h


def _entropy_sinh_form(sigma, N) -> float:
    """``S_N`` by the logarithmic form ``½ Σ_{i<j} [(1 − 1/N)(ℓ_i + ℓ_j) + G_N(ℓ_i − ℓ_j)]``.

    ``G_N(δ) = L(δ) − L(δ/N) + log N`` with ``L(x) = log(sinh x/x)``; at ``N = inf`` the ``log N`` is
    dropped, which gives ``S_∞``. Used for ``N = inf`` and as an independent cross-check.
    """
    d = sigma.size
    if d < 2 or N == 1:
        return 0.0
    ell = np.log(sigma)
    iu = np.triu_indices(d, 1)
    delta = (ell[:, None] - ell[None, :])[iu]
    kappa = _kappa(N)
    if math.isinf(N):
        pair = _log_sinhc(delta)
    else:
        pair = _log_sinhc(delta) - _log_sinhc(delta / N) + math.log(N)
    return float(0.5 * (kappa * (d - 1) * ell.sum() + pair.sum()))


def entropy(sigma, N) -> float:
    """The entropy ``S_N(σ)`` of the DLN (Section 1.2), without the constant ``(N − 1) c_d``.

    ``S_N(σ) = ½ Σ_{i<j} log[(σ_i² − σ_j²) / (σ_i^{2/N} − σ_j^{2/N})]``, evaluated for finite ``N`` in
    the λ-variables ``λ = σ^{1/N}`` of (3.4): each ratio is the polynomial (3.5)
    ``Σ_{m=0}^{N−1} λ_i^{2(N−1−m)} λ_j^{2m}``, computed as ``λ_max^{2(N−1)} Σ_m r^{2m}`` with
    ``r = λ_min/λ_max ≤ 1`` (Horner), so there is no cancellation at or near ties. At a tie the pair
    term is ``½ log(N σ^{2−2/N})``.

    Parameters
    ----------
    sigma : array_like, shape (d,)
        Positive singular values, in any order.
    N : int or numpy.inf
        Depth ``N ≥ 1``. ``N = 1`` gives 0; ``N = numpy.inf`` gives
        ``S_∞(σ) = ½ Σ_{i<j} log[(σ_i² − σ_j²)/(log σ_i² − log σ_j²)]`` (the limit of
        ``S_N − ½ C(d,2) log N``).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If a singular value is ``≤ 0`` or not finite, or ``N`` is not an integer ``≥ 1`` / ``inf``.
    """
    sigma = _check_sigma(sigma)
    N = _check_depth(N, allow_inf=True)
    d = sigma.size
    if d < 2 or N == 1:
        return 0.0
    if math.isinf(N):
        return _entropy_sinh_form(sigma, N)
    iu = np.triu_indices(d, 1)
    ell = np.log(sigma)
    li, lj = ell[iu[0]], ell[iu[1]]
    lmax = np.maximum(li, lj)
    if N > _LOOP_DEPTH:  # geometric series in closed form: no loop over the N layers
        pair = 2.0 * (1.0 - 1.0 / N) * lmax + _log_geometric(np.abs(li - lj), N)
        return float(0.5 * pair.sum())
    r2 = np.exp(-2.0 * np.abs(li - lj) / N)  # (λ_min/λ_max)², in (0, 1]
    acc = np.ones_like(r2)
    for _ in range(N - 1):
        acc = acc * r2 + 1.0
    pair = 2.0 * (N - 1) / N * lmax + np.log(acc)
    return finite_result("entropy", float(0.5 * pair.sum()))


def naive_entropy(sigma, N) -> float:
    """``S_N`` by the literal quotient of Section 1.2 (for demonstrating cancellation; NaN at ties)."""
    sigma = _check_sigma(sigma)
    N = _check_depth(N)
    d = sigma.size
    iu = np.triu_indices(d, 1)
    a, b = sigma[iu[0]], sigma[iu[1]]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (a**2 - b**2) / (a ** (2.0 / N) - b ** (2.0 / N))
        return float(0.5 * np.sum(np.log(ratio)))


def entropy_gradient(sigma, N) -> np.ndarray:
    """Gradient ``∂S_N/∂σ_i`` (3.9), with the correct limits at ties.

    ``∂S_N/∂σ_i = Σ_{k≠i} [σ_i/(σ_i² − σ_k²) − σ_i^{2/N−1}/(N(σ_i^{2/N} − σ_k^{2/N}))]``
    ``= (1/(2σ_i)) Σ_{k≠i} [1 − 1/N + G_N'(log σ_i − log σ_k)]``; each summand tends to
    ``(1 − 1/N)/(2σ_i)`` as ``σ_k → σ_i`` (3.10). ``N = inf`` gives the gradient of ``S_∞``.

    Returns
    -------
    numpy.ndarray, shape (d,)
    """
    sigma = _check_sigma(sigma)
    N = _check_depth(N, allow_inf=True)
    return finite_result("entropy_gradient", _entropy_grad_batched(sigma, N))


def entropy_hessian(sigma, N) -> np.ndarray:
    """Euclidean Hessian ``∇²_σ S_N`` (Section 4): ``p_N(σ_i, σ_j)`` off the diagonal (4.9), ``Σ_{k≠i}
    q_N(σ_i, σ_k)`` on it (4.10), each with its finite limit at ties
    (``p⋆ = −(1 − 1/N²)/(6σ²)``, ``q⋆ = −(1 − 3/(2N) + 1/(2N²))/(3σ²)``).

    Returns
    -------
    numpy.ndarray, shape (d, d)
    """
    sigma = _check_sigma(sigma)
    N = _check_depth(N, allow_inf=True)
    h = _entropy_hess_batched(sigma, N)
    return finite_result("entropy_hessian", 0.5 * (h + h.T))


def pair_kernels(a, b, N):
    """The kernels ``p_N(a, b)`` and ``q_N(a, b)`` of (4.9)–(4.10), tie-safe (arrays broadcast).

    ``p_N(a,b) = 2ab/(a²−b²)² − 2a^{2/N−1}b^{2/N−1}/(N(a^{2/N}−b^{2/N}))² = −G_N''(δ)/(2ab)``,
    ``q_N(a,b) = −(a²+b²)/(a²−b²)² + a^{2/N−2}(N(a^{2/N}−b^{2/N}) + 2b^{2/N})/(N(a^{2/N}−b^{2/N}))²
    = [G_N''(δ) − (1 − 1/N) − G_N'(δ)]/(2a²)``, with ``δ = log(a/b)``.
    """
    a = check_positive_array("a", a, ndim=None)
    b = check_positive_array("b", b, ndim=None)
    N = _check_depth(N, allow_inf=True)
    a, b = np.broadcast_arrays(a, b)
    delta = np.log(a) - np.log(b)
    p = -_G2(delta, N) / (2.0 * a * b)
    q = _G2_minus_h(delta, N) / (2.0 * a**2)
    return finite_result("pair_kernels", (p, q))


def log_form_derivatives(delta, N):
    """``(G_N'(δ), G_N''(δ))`` of the logarithmic form ``G_N(δ) = log[sinh δ / sinh(δ/N)]``, tie-safe.

    ``G_N'(δ) = coth δ − coth(δ/N)/N`` (odd, ``G_N'(0) = 0``) and
    ``G_N''(δ) = −csch² δ + csch²(δ/N)/N²`` (even, ``G_N''(0) = (1 − 1/N²)/3``); ``N = inf`` gives
    ``coth δ − 1/δ`` and ``1/δ² − csch² δ``. Each pair term of ``S_N`` is
    ``½[(1 − 1/N)(ℓ_i + ℓ_j) + G_N(ℓ_i − ℓ_j)]`` with ``ℓ = log σ``.
    """
    delta = check_array("delta", delta)
    N = _check_depth(N, allow_inf=True)
    return finite_result("log_form_derivatives", (_G1(delta, N), _G2(delta, N)))


def riemannian_entropy_hessian(sigma, N) -> np.ndarray:
    """Hessian of ``S_N`` for the metric ``g_σ^N = Σ_i (1/N) σ_i^{2/N−2} dσ_i²`` (Section 5).

    The metric is diagonal with ``g_ii`` depending on ``σ_i`` only, so the only Christoffel symbols
    are ``Γ^i_ii = −(N−1)/(N σ_i)`` and
    ``(∇²_g S)_ij = ∂²S/∂σ_i∂σ_j + δ_ij (N−1)/N · (1/σ_i) ∂S/∂σ_i``.
    Returned as the coordinate matrix of this (0,2)-tensor (the paper's convention). At equal
    singular values ``g`` is a multiple of the identity, so the eigenvalue signs of this matrix are
    those of the operator ``g⁻¹∇²S`` (Theorem 1.10).
    """
    sigma = _check_sigma(sigma)
    N = _check_depth(N, allow_inf=True)
    h = entropy_hessian(sigma, N)
    g = _entropy_grad_batched(sigma, N)
    h[np.diag_indices_from(h)] += _kappa(N) * g / sigma
    return finite_result("riemannian_entropy_hessian", h)


def entropy_autograd(sigma, N):
    """Reference value, gradient and Hessian of ``S_N`` by PyTorch autograd (float64).

    Differentiates the λ-polynomial form (3.4)–(3.5) written out term by term,
    ``½ Σ_{i<j} log Σ_{m=0}^{N−1} λ_i^{2(N−1−m)} λ_j^{2m}``, ``λ = σ^{1/N}``; it has no quotient, so
    autograd is exact (to rounding) also at ties. Finite ``N`` only. Imports torch lazily.

    Returns
    -------
    (float, numpy.ndarray (d,), numpy.ndarray (d, d))
    """
    import torch

    sigma = _check_sigma(sigma, min_d=2)
    N = _check_depth(N)
    if N > _LITERAL_DEPTH:
        raise ValueError(f"N must be <= {_LITERAL_DEPTH} for entropy_autograd (it differentiates the N-term "
                         f"polynomial literally), got {N}")
    d = sigma.size
    iu = torch.triu_indices(d, d, 1)

    def fn(s):
        lam2 = s ** (2.0 / N)
        a, b = lam2[iu[0]], lam2[iu[1]]
        total = sum(a ** (N - 1 - m) * b**m for m in range(N))
        return 0.5 * torch.log(total).sum()

    s = torch.tensor(np.ascontiguousarray(sigma), dtype=torch.float64, requires_grad=True)
    val = fn(s)
    (grad,) = torch.autograd.grad(val, s)
    hess = torch.autograd.functional.hessian(fn, s.detach())
    return finite_result("entropy_autograd", (float(val.detach()), grad.numpy().copy(), hess.numpy().copy()))


# ---------------------------------------------------------------------------------------------
# spectral energies
# ---------------------------------------------------------------------------------------------

def _check_energy_sigma(sigma) -> np.ndarray:
    sigma = check_array("sigma", sigma)
    if sigma.ndim < 1 or sigma.size == 0 or np.any(sigma < 0):
        raise ValueError("sigma must be a non-empty array of singular values in [0, inf), shape (..., d)")
    return sigma


@dataclass(frozen=True)
class SpectralEnergy:
    """A spectral energy ``E(σ) = g(Σ_i f(σ_i))`` (Section 1.2) with its first two derivatives.

    ``f``, ``df``, ``d2f`` act elementwise on arrays; ``g``, ``dg``, ``d2g`` on arrays of sums. The
    standing assumptions of Theorem 1.2 are ``g' > 0``, ``f`` strictly convex, ``E`` convex.
    """

    f: Callable
    df: Callable
    d2f: Callable
    g: Callable = staticmethod(lambda x: x)
    dg: Callable = staticmethod(lambda x: np.ones_like(x))
    d2g: Callable = staticmethod(lambda x: np.zeros_like(x))
    name: str = "spectral energy"

    def value(self, sigma):
        """``E(σ)`` for sigma of shape (..., d)."""
        sigma = _check_energy_sigma(sigma)
        return finite_result("SpectralEnergy.value", self.g(np.sum(self.f(sigma), axis=-1)))

    def gradient(self, sigma):
        """``∂E/∂σ_i = g'(Σf) f'(σ_i)``, shape (..., d)."""
        return finite_result("SpectralEnergy.gradient", self._gradient(_check_energy_sigma(sigma)))

    def hessian(self, sigma):
        """``∂²E/∂σ_i∂σ_j = g''(Σf) f'(σ_i) f'(σ_j) + g'(Σf) f''(σ_i) δ_ij``, shape (..., d, d)."""
        return finite_result("SpectralEnergy.hessian", self._hessian(_check_energy_sigma(sigma)))

    # unvalidated versions for the module's inner loops (the ODE right-hand sides)
    def _gradient(self, sigma):
        h = np.sum(self.f(sigma), axis=-1)
        return np.asarray(self.dg(h))[..., None] * self.df(sigma)

    def _hessian(self, sigma):
        h = np.sum(self.f(sigma), axis=-1)
        fp = self.df(sigma)
        out = np.asarray(self.d2g(h))[..., None, None] * fp[..., :, None] * fp[..., None, :]
        d = sigma.shape[-1]
        idx = np.arange(d)
        out[..., idx, idx] += np.asarray(self.dg(h))[..., None] * self.d2f(sigma)
        return out


def schatten_energy(p) -> SpectralEnergy:
    """The Schatten energy ``E_p(σ) = (1/p) Σ σ_i^p`` (1.22), ``p ≥ 1``."""
    p = _check_p(p)
    return SpectralEnergy(
        f=lambda s: s**p / p,
        df=lambda s: s ** (p - 1.0),
        d2f=lambda s: (p - 1.0) * s ** (p - 2.0),
        name=f"Schatten p={p:g}",
    )


def quadratic_energy(target=1.0) -> SpectralEnergy:
    """``E(σ) = ½ Σ (σ_i − τ)²``: the squared distance of ``X`` to ``τ`` times the orthogonal matrices.

    Its matrix gradient is ``X − τ·polar(X)``. Used to validate the chamber flow against trained
    networks at ``β = ∞`` (small singular values grow along sigmoids, as in DLN learning curves).
    """
    tau = check_positive("target", target)
    return SpectralEnergy(
        f=lambda s: 0.5 * (s - tau) ** 2,
        df=lambda s: s - tau,
        d2f=lambda s: np.ones_like(s),
        name=f"quadratic, target {tau:g}",
    )


def _resolve_energy(p, energy) -> SpectralEnergy:
    if (p is None) == (energy is None):
        raise ValueError("give exactly one of p (Schatten exponent) and energy (a SpectralEnergy)")
    if energy is not None:
        if not isinstance(energy, SpectralEnergy):
            raise ValueError(f"energy must be a SpectralEnergy, got {type(energy).__name__}")
        return energy
    return schatten_energy(p)


# ---------------------------------------------------------------------------------------------
# the flow on the chamber (Lemma 2.5)
# ---------------------------------------------------------------------------------------------

def _free_energy_grad(sigma, N, beta, energy):
    grad = energy._gradient(sigma)
    if not math.isinf(beta):
        grad = grad - _entropy_grad_batched(sigma, N) / beta
    return grad


def flow_vector_field(sigma, *, N, beta, p=None, energy=None) -> np.ndarray:
    """The vector field ``σ̇_i = −N σ_i^{2−2/N} ∂F_β/∂σ_i`` of Lemma 2.5 / (1.10).

    Parameters
    ----------
    sigma : array_like, shape (..., d)
        Points of the chamber (a batch of points is allowed, e.g. a grid for a phase portrait).
    N : int
        Depth ``≥ 1``.
    beta : float
        Inverse temperature ``> 0``; ``numpy.inf`` drops the entropy (pure energy).
    p, energy
        Either the Schatten exponent ``p ≥ 1`` or a :class:`SpectralEnergy`.

    Returns
    -------
    numpy.ndarray, same shape as ``sigma``
    """
    sigma = check_array("sigma", sigma)
    if sigma.ndim < 1 or sigma.size == 0 or np.any(sigma <= 0):
        raise ValueError("sigma must be a non-empty array with all entries in (0, inf)")
    N = _check_depth(N)
    beta = _check_beta(beta, allow_inf=True)
    energy = _resolve_energy(p, energy)
    return finite_result("flow_vector_field", -N * sigma ** (2.0 - 2.0 / N) * _free_energy_grad(sigma, N, beta, energy))


def flow_jacobian(sigma, *, N, beta, p=None, energy=None) -> np.ndarray:
    """Analytic Jacobian ``∂σ̇_i/∂σ_j`` of the flow (1.10) at one point ``σ`` (shape (d,))."""
    sigma = _check_sigma(sigma)
    N = _check_depth(N)
    beta = _check_beta(beta, allow_inf=True)
    energy = _resolve_energy(p, energy)
    gF = _free_energy_grad(sigma, N, beta, energy)
    hF = energy._hessian(sigma)
    if not math.isinf(beta):
        hF = hF - _entropy_hess_batched(sigma, N) / beta
    pref = N * sigma ** (2.0 - 2.0 / N)
    jac = -pref[:, None] * hF
    jac[np.diag_indices_from(jac)] -= N * (2.0 - 2.0 / N) * sigma ** (1.0 - 2.0 / N) * gF
    return finite_result("flow_jacobian", jac)


def _mu_rhs_and_jac(N, beta, energy):
    """Right-hand side and Jacobian of the flow in ``μ = log λ = (log σ)/N`` (flat-metric variables).

    ``μ̇_i = −σ_i^{1−2/N} ∂E/∂σ_i + σ_i^{−2/N} g_i/β``, ``g_i = ∂S_N/∂ℓ_i`` (``ℓ = log σ = Nμ``).
    """
    entropic = not math.isinf(beta)

    def rhs(_t, mu):
        sigma = np.exp(N * mu)
        out = -sigma ** (1.0 - 2.0 / N) * energy._gradient(sigma)
        if entropic:
            out = out + sigma ** (-2.0 / N) * _entropy_log_grad(sigma, N) / beta
        return out

    def jac(_t, mu):
        sigma = np.exp(N * mu)
        e1 = energy._gradient(sigma)
        e2 = energy._hessian(sigma)
        a = sigma ** (1.0 - 2.0 / N)
        j = -(a[:, None] * e2) * (N * sigma)[None, :]
        j[np.diag_indices_from(j)] -= (N - 2.0) * a * e1
        if entropic:
            b = sigma ** (-2.0 / N)
            g = _entropy_log_grad(sigma, N)
            j += (b[:, None] * _entropy_log_hessian(sigma, N)) * (N / beta)
            j[np.diag_indices_from(j)] -= 2.0 * b * g / beta
        return j

    return rhs, jac


def singular_value_flow(sigma0, t_eval, *, N, beta, p=None, energy=None, method: str = "LSODA",
                        rtol: float = 1e-10, atol: float = 1e-12) -> np.ndarray:
    """Integrate the singular-value flow ``σ̇_i = −N σ_i^{2−2/N} ∂F_β/∂σ_i`` (Lemma 2.5).

    The flow is integrated in ``μ_i = log λ_i = (1/N) log σ_i``: the metric (2.9) is flat in
    ``λ`` (``g = N Σ dλ_i²``) and the logarithm keeps every ``σ_i > 0`` and resolves singular values
    of very different sizes. The entropic force is analytic across ties (it has no ``1/(σ_i − σ_j)``
    singularity), so the integrator needs no small steps where singular values meet; the analytic
    Jacobian is supplied to implicit methods (default LSODA). The permutation symmetry of ``F_β``
    keeps each hyperplane ``σ_i = σ_j`` invariant, so the order of ``sigma0`` is kept.

    Parameters
    ----------
    sigma0 : array_like, shape (d,)
        Initial singular values (positive, any order).
    t_eval : array_like, shape (T,)
        Non-decreasing times ``≥ 0`` (the flow starts at ``t = 0``).
    N : int
        Depth ``≥ 1``.
    beta : float
        Inverse temperature ``> 0`` or ``numpy.inf`` (energy only).
    p, energy
        Schatten exponent ``p ≥ 1`` or a :class:`SpectralEnergy` (exactly one).
    method, rtol, atol
        Passed to :func:`scipy.integrate.solve_ivp` (tolerances apply to ``log λ``).

    Returns
    -------
    numpy.ndarray, shape (T, d)
    """
    sigma0 = _check_sigma(sigma0, "sigma0")
    t_eval = check_array("t_eval", t_eval, ndim=1)
    if t_eval.size == 0 or np.any(t_eval < 0) or np.any(np.diff(t_eval) < 0):
        raise ValueError("t_eval must be a non-empty, non-decreasing array of times >= 0")
    N = _check_depth(N)
    beta = _check_beta(beta, allow_inf=True)
    energy = _resolve_energy(p, energy)
    method = check_choice("method", method, ("LSODA", "Radau", "BDF", "RK45", "RK23", "DOP853"))
    rtol = check_tolerance("rtol", rtol)  # checked before they reach LSODA, which keeps bad state
    atol = check_tolerance("atol", atol)
    rhs, jac = _mu_rhs_and_jac(N, beta, energy)
    mu0 = np.log(sigma0) / N
    t_end = float(t_eval[-1])
    if t_end == 0.0:
        return np.tile(sigma0, (t_eval.size, 1))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f0, j0 = rhs(0.0, mu0), jac(0.0, mu0)
    if not (np.all(np.isfinite(f0)) and np.all(np.isfinite(j0))):
        raise ValueError("sigma0 is outside the range where the flow's vector field is representable in "
                         f"float64 (it overflows at sigma0 = {sigma0!r})")
    jnorm = float(np.abs(j0).sum(axis=1).max())
    if t_end * jnorm <= 1e-6:
        # a horizon far below the flow's time scale 1/‖J‖ (LSODA cannot step through t_end = 1e-200):
        # second-order Taylor, error O((t‖J‖)² t‖f‖) below round-off of the displacement
        mu = mu0[None, :] + t_eval[:, None] * f0[None, :] + 0.5 * t_eval[:, None] ** 2 * (j0 @ f0)[None, :]
        return np.exp(N * mu)
    with np.errstate(over="ignore", invalid="ignore"):
        mu = solve_ivp_bounded(rhs, t_end, mu0, t_eval, method=method, rtol=rtol, atol=atol, jac=jac,
                               what="singular_value_flow")
    out = np.exp(N * mu)
    if not np.all(np.isfinite(out)) or np.any(out <= 0):
        raise ValueError("singular_value_flow: the singular values left the float64 range (sigma0 too extreme)")
    return out


def numerical_jacobian(fun, x, *, rel_step: float = 1e-3) -> np.ndarray:
    """Jacobian of ``fun: R^d → R^d`` at ``x`` by Richardson-extrapolated central differences.

    Each column combines central differences with steps ``h`` and ``h/2``
    (``(4 D(h/2) − D(h))/3``), error ``O(h⁴)``; ``h = rel_step · max(|x_j|, 1e-8)``.
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {fun!r}")
    x = check_array("x", x, ndim=1)
    rel_step = check_positive("rel_step", rel_step)
    if rel_step >= 1:
        raise ValueError(f"rel_step must lie in (0, 1), got {rel_step!r}")
    d = x.size
    cols = []
    for j in range(d):
        h = rel_step * max(abs(x[j]), 1e-8)

        def central(step):
            e = np.zeros(d)
            e[j] = step
            return (np.asarray(fun(x + e)) - np.asarray(fun(x - e))) / (2.0 * step)

        cols.append((4.0 * central(h / 2.0) - central(h)) / 3.0)
    return finite_result("numerical_jacobian", np.stack(cols, axis=1))


# ---------------------------------------------------------------------------------------------
# equilibria and rates (Theorems 1.2 and 1.3)
# ---------------------------------------------------------------------------------------------

def schatten_sigma_star(p, N, d, beta) -> float:
    """Equilibrium ``σ⋆`` of ``F_β = E_p − S_N/β`` (Theorem 1.2): the root of the balance equation
    (1.12), ``σ⋆^{p−1} = (d−1)(1 − 1/N)/(2βσ⋆)``, i.e. ``σ⋆^p = (d−1)(1 − 1/N)/(2β)``.

    Needs ``N ≥ 2`` and ``d ≥ 2`` (for ``N = 1`` or ``d = 1`` the entropy vanishes and ``σ⋆ = 0``).
    For ``p = 1`` and ``(N, d) = (2, 2)`` the equilibrium is not unique (a whole line, since
    ``S_2 = ½ log(σ_1 + σ_2)``); ``σ⋆(1, 1)`` is one of them.
    """
    p = _check_p(p)
    N = _check_depth(N, allow_inf=True, minimum=2)
    d = _check_d(d)
    beta = _check_beta(beta)
    base = (d - 1) * _kappa(N) / (2.0 * beta)
    if math.isfinite(base) and base > 0:
        return float(base ** (1.0 / p))
    log_s = (math.log((d - 1) * _kappa(N)) - math.log(2.0) - math.log(beta)) / p  # beta = 5e-324: no overflow
    if log_s >= math.log(np.finfo(float).max):
        raise ValueError(f"sigma_star = ((d-1)(1-1/N)/(2 beta))^(1/p) exceeds the float64 range (beta = {beta!r} too small)")
    return float(math.exp(log_s))


def sigma_star(energy: SpectralEnergy, N, d, beta) -> float:
    """Root ``σ⋆ > 0`` of the balance equation (1.12) for a general spectral energy:
    ``g'(d f(σ)) f'(σ) = (d − 1)(1 − 1/N)/(2βσ)`` (unique under the standing assumptions, Lemma 6.3).
    """
    if not isinstance(energy, SpectralEnergy):
        raise ValueError(f"energy must be a SpectralEnergy, got {type(energy).__name__}")
    N = _check_depth(N, allow_inf=True, minimum=2)
    d = _check_d(d)
    beta = _check_beta(beta)
    rhs_c = (d - 1) * _kappa(N) / (2.0 * beta)

    def bal(logs):
        s = math.exp(logs)
        lhs = float(np.asarray(energy.dg(np.asarray(d * energy.f(np.asarray(s)))))) * float(energy.df(np.asarray(s)))
        return s * lhs - rhs_c

    lo, hi = -1.0, 1.0
    for _ in range(200):
        if bal(lo) < 0:
            break
        lo -= 2.0
    for _ in range(200):
        if bal(hi) > 0:
            break
        hi += 2.0
    if not (bal(lo) < 0 < bal(hi)):
        raise ValueError("the balance equation (1.12) has no sign change: check the energy's assumptions")
    return finite_result("sigma_star", float(math.exp(optimize.brentq(bal, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps))))


def _rates_from(s, h1, h2, N, d, beta):
    kappa = _kappa(N)
    pref = N * s ** (2.0 - 2.0 / N)
    rho1 = -pref * (h1 + (d - 1) * h2) - N * s ** (-2.0 / N) * (d - 1) * kappa / (2.0 * beta)
    rho_perp = -pref * (h1 - h2) - N * s ** (-2.0 / N) * (2 * d - 3 - 3 * (d - 1) / N + d / N**2) / (6.0 * beta)
    return float(rho1), float(rho_perp)


def relaxation_rates(p, N, d, beta):
    """Eigenvalues ``(ρ_1, ρ_⊥)`` of the linearised flow at ``σ⋆(1,…,1)`` (Theorem 1.3), Schatten energy.

    ``ρ_1 = −N σ⋆^{2−2/N} θ_1(E) − N σ⋆^{−2/N} (d−1)(1 − 1/N)/(2β)`` on ``(1,…,1)`` and
    ``ρ_⊥ = −N σ⋆^{2−2/N} θ_⊥(E) − N σ⋆^{−2/N} (2d − 3 − 3(d−1)/N + d/N²)/(6β)`` (multiplicity ``d−1``)
    with ``θ_1(E) = θ_⊥(E) = (p − 1) σ⋆^{p−2}`` for ``E_p``; in particular ``ρ_1 = −N p σ⋆^{p−2/N}``.
    """
    p = _check_p(p)
    N = _check_depth(N, minimum=2)
    d = _check_d(d)
    beta = _check_beta(beta)
    s = schatten_sigma_star(p, N, d, beta)
    return finite_result("relaxation_rates", _rates_from(s, (p - 1.0) * s ** (p - 2.0), 0.0, N, d, beta))


def relaxation_rates_general(energy: SpectralEnergy, N, d, beta):
    """``(ρ_1, ρ_⊥)`` of Theorem 1.3 for a general spectral energy (``h_1``, ``h_2`` from its Hessian)."""
    N = _check_depth(N, minimum=2)
    d = _check_d(d)
    if d > 10**6:
        raise ValueError(f"d must be <= 10**6 here (the Hessian is evaluated at d equal singular values), got {d}")
    beta = _check_beta(beta)
    s = sigma_star(energy, N, d, beta)
    h = energy._hessian(np.full(d, s))
    return finite_result("relaxation_rates_general", _rates_from(s, float(h[0, 0]), float(h[0, 1]), N, d, beta))


# ---------------------------------------------------------------------------------------------
# the exact solution (Theorem 1.7)
# ---------------------------------------------------------------------------------------------

_NSER = 70


def _R(a: float, u):
    """``R_a(u) = ∫_0^u (v^{a−1} − 1)/(1 − v) dv``: analytic on ``(0, ∞)``, also across ``u = 1``.

    * ``u < 1/2``: ``R_a(u) = (u^a/a) ₂F₁(1, a; 1+a; u) + log(1 − u)``;
    * ``|u − 1| ≤ 1/2``: ``R_a(u) = −ψ(a) − γ − Σ_{k≥1} ((1−a)_k/k!) (1 − u)^k / k``;
    * ``u > 3/2``: by ``v → 1/v``,
      ``R_a(u) = ψ(2−a) − ψ(a) + R_{2−a}(1/u) + (u^{a−1} − 1)/(1 − a) + log u``.
    """
    u = np.asarray(u, dtype=float)
    out = np.empty_like(u)
    low = u < 0.5
    mid = np.abs(u - 1.0) <= 0.5
    high = u > 1.5
    if np.any(low):
        ul = u[low]
        out[low] = ul**a / a * special.hyp2f1(1.0, a, 1.0 + a, ul) + np.log1p(-ul)
    if np.any(mid):
        x = 1.0 - u[mid]
        k = np.arange(1, _NSER + 1)
        ck = np.cumprod((k - a) / k)  # (1−a)_k / k!
        terms = (ck / k)[:, None] * x[None, :] ** k[:, None]
        out[mid] = -special.digamma(a) - np.euler_gamma - terms[::-1].sum(axis=0)
    if np.any(high):
        uh = u[high]
        logu = np.log(uh)
        b = 1.0 - a
        expo = -logu if b == 0.0 else np.expm1(-b * logu) / b  # (u^{a−1} − 1)/(1 − a)
        out[high] = (special.digamma(2.0 - a) - special.digamma(a) + _R(2.0 - a, 1.0 / uh) + expo + logu)
    return out


def _Phi(a: float, u):
    """``PV ∫_0^u v^{a−1}/(1 − v) dv = R_a(u) − log|1 − u|`` (``u ≠ 1``)."""
    u = np.asarray(u, dtype=float)
    return _R(a, u) - np.log(np.abs(1.0 - u))


def _scale_setup(p, N, d, beta):
    p = _check_p(p)
    N = _check_depth(N, minimum=2)
    d = _check_d(d)
    beta = _check_beta(beta)
    nu = N * p
    s_star = schatten_sigma_star(p, N, d, beta) ** (1.0 / N)
    return nu, s_star


def scale_time_function(s, *, p, N, d, beta):
    """The quadrature ``T`` of Theorem 1.7: ``t − t0 = T(s(t)) − T(s0)`` for the scale ``s = λ_d``.

    With ``ν = Np``, ``s⋆^ν = (d−1)(1 − 1/N)/(2β)``, ``z = (s/s⋆)^ν`` and ``a = 2/ν``:

    * ``s < s⋆``: ``T(s) = s²/(2 s⋆^ν) ₂F₁(1, 2/ν; 1 + 2/ν; z)`` (the paper's formula, (1.27));
    * ``s > s⋆``: the principal value of the same integral,
      ``T(s) = (s⋆^{2−ν}/ν) [π cot(πa) + z^{a−1}/(1−a) + z^{a−2}/(2−a) ₂F₁(1, 2−a; 3−a; 1/z)]``
      (real; obtained by ``v → 1/v``; evaluated here through the function ``R_a`` that is analytic
      across ``z = 1``, which also covers ``a = 1``, i.e. ``ν = 2``).

    ``T`` has a logarithmic singularity at ``s⋆`` (``T → +∞`` from both sides), matching the
    exponential approach to the equilibrium. Returns ``inf`` at ``s = s⋆``.
    """
    nu, s_star = _scale_setup(p, N, d, beta)
    s = check_positive_array("s", s, ndim=None)
    u = np.exp(nu * (np.log(s) - math.log(s_star)))
    out = np.full(u.shape, np.inf)
    ne = u != 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        out[ne] = s_star ** (2.0 - nu) / nu * _Phi(2.0 / nu, u[ne])
    if np.any(np.isnan(out)) or np.any(np.isinf(out[ne])):
        raise ValueError("scale_time_function: T(s) is not representable in float64 for these s (too far from s_star)")
    return out if out.ndim else float(out)


def schatten_scale(t, s0, *, p, N, d, beta) -> np.ndarray:
    """Exact solution ``s(t)`` of ``ṡ = −s^{ν−1} + s⋆^ν/s`` (Theorem 1.7), ``s = λ_d = σ_d^{1/N}`` on
    the invariant set of equal singular values, from ``s(0) = s0`` below, at or above ``s⋆``.

    Inverts ``t = T(s(t)) − T(s0)`` of :func:`scale_time_function`. Writing
    ``w = −log|1 − z|`` (``z = (s/s⋆)^ν``) the equation reads ``w + R_a(1 ∓ e^{−w}) = τ(t)`` with
    ``τ`` linear in ``t`` and ``R_a`` analytic and monotone; its root is bracketed in an interval of
    length ``|R_a(1) − R_a(z0)|`` and found by Brent's method to machine precision, so ``s(t)`` stays
    accurate also when ``|s − s⋆|`` is exponentially small.

    Parameters
    ----------
    t : array_like
        Times ``≥ 0`` (``s(0) = s0``).
    s0 : float
        Initial scale ``> 0``.
    p, N, d, beta
        Schatten exponent ``p ≥ 1``, depth ``N ≥ 2``, dimension ``d ≥ 2``, ``β > 0``.

    Returns
    -------
    numpy.ndarray, shape of ``t``
    """
    nu, s_star = _scale_setup(p, N, d, beta)
    s0 = check_positive("s0", s0)
    t = check_array("t", t)
    if np.any(t < 0):
        raise ValueError("t must contain times >= 0 (the solution starts from s0 at t = 0)")
    a = 2.0 / nu
    logu0 = nu * (math.log(s0) - math.log(s_star))
    u0 = math.exp(logu0)
    if u0 == 1.0:
        return np.full(t.shape, s_star)
    side = 1.0 if u0 < 1.0 else -1.0  # +1: from below (u = 1 − e^{−w}); −1: from above (u = 1 + e^{−w})
    w0 = -math.log(abs(-math.expm1(logu0)))
    r0 = float(_R(a, np.array([u0]))[0])
    r1 = -float(special.digamma(a)) - np.euler_gamma
    rate = nu * s_star ** (nu - 2.0)
    out = np.empty(t.shape)
    flat_t, flat_out = t.reshape(-1), out.reshape(-1)
    for n, tn in enumerate(flat_t):
        if tn == 0.0:
            flat_out[n] = s0
            continue
        tau = w0 + r0 + rate * tn

        def f(w):
            return w + float(_R(a, np.array([1.0 - side * math.exp(-w)]))[0]) - tau

        lo, hi = (tau - r1, tau - r0) if side > 0 else (tau - r0, tau - r1)
        lo = max(lo, w0)
        if hi <= lo:
            w = lo
        else:
            flo, fhi = f(lo), f(hi)
            if flo >= 0.0:
                w = lo
            elif fhi <= 0.0:
                w = hi
            else:
                w = optimize.brentq(f, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=200)
        flat_out[n] = s_star * math.exp(math.log1p(-side * math.exp(-w)) / nu)
    return out


# ---------------------------------------------------------------------------------------------
# matrices: the operator A_{N,X}, balanced factors, gradient descent on the factors
# ---------------------------------------------------------------------------------------------

def _sym_power(m, power):
    """``M^power`` of a symmetric positive semi-definite matrix (``0^0 = 1``)."""
    w, q = np.linalg.eigh(0.5 * (m + m.T))
    w = np.clip(w, 0.0, None)
    with np.errstate(divide="ignore"):
        wp = np.where(w > 0, w ** power, 1.0 if power == 0 else 0.0)
    return (q * wp) @ q.T


def A_operator(X, P, N) -> np.ndarray:
    """``A_{N,X}(P) = Σ_{p=1}^N (XXᵀ)^{(N−p)/N} P (XᵀX)^{(p−1)/N}`` (Section 2.2), evaluated literally
    with the fractional powers of ``XXᵀ`` and ``XᵀX`` (no singular value decomposition of ``X``).

    ``A_{N,X}`` is the inverse of the DLN metric ``g^N`` at ``X``; the gradient flow (1.1) is
    ``Ẋ = −A_{N,X}(∇E(X))``.
    """
    X = check_array("X", X, ndim=2)
    if X.shape[0] != X.shape[1]:
        raise ValueError(f"X must be square, got shape {X.shape}")
    P = check_array("P", P, shape=X.shape)
    N = _check_depth(N)
    if N > _LITERAL_DEPTH:
        raise ValueError(f"N must be <= {_LITERAL_DEPTH} for A_operator (it sums the N terms literally), got {N}; "
                         "A_eigenvalues gives the operator's eigenvalues for any N")
    with np.errstate(over="ignore", invalid="ignore"):
        left = X @ X.T
        right = X.T @ X
    if not (np.all(np.isfinite(left)) and np.all(np.isfinite(right))):  # no eigh on non-finite input
        raise ValueError("X is too large in scale: X Xᵀ overflows float64")
    return sum(_sym_power(left, (N - k) / N) @ P @ _sym_power(right, (k - 1) / N) for k in range(1, N + 1))


def A_matrix(X, N) -> np.ndarray:
    """The ``d²×d²`` matrix of :func:`A_operator` on row-major ``vec(P)``."""
    X = check_array("X", X, ndim=2)
    if X.shape[0] != X.shape[1] or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty square matrix, got shape {X.shape}")
    N = _check_depth(N)
    d = X.shape[0]
    if N * d * d > 50 * _LITERAL_DEPTH:
        raise ValueError(f"A_matrix applies the N-term sum to d² = {d * d} basis matrices: N * d² must be <= "
                         f"{50 * _LITERAL_DEPTH}, got N = {N}, d = {d} (A_eigenvalues gives the eigenvalues for any N)")
    cols = []
    for k in range(d * d):
        e = np.zeros(d * d)
        e[k] = 1.0
        cols.append(A_operator(X, e.reshape(d, d), N).reshape(-1))
    return np.stack(cols, axis=1)


def A_eigenvalues(sigma, N) -> np.ndarray:
    """Lemma 2.1: ``A_{N,X} u_k v_lᵀ = a_kl u_k v_lᵀ`` with
    ``a_kl = (σ_k² − σ_l²)/(σ_k^{2/N} − σ_l^{2/N}) = Σ_{m=0}^{N−1} σ_k^{2(N−1−m)/N} σ_l^{2m/N}``
    (``a_kk = N σ_k^{2−2/N}``). Returns the ``d×d`` array ``a_kl`` (tie-safe polynomial form)."""
    sigma = _check_sigma(sigma)
    N = _check_depth(N)
    if N > _LOOP_DEPTH:  # a_kl = λ_max^{2(N−1)} Σ_m r^{2m} in closed form: no loop over the N layers
        ell = np.log(sigma)
        hi = np.maximum(ell[:, None], ell[None, :])
        with np.errstate(over="ignore"):
            out = np.exp(2.0 * (1.0 - 1.0 / N) * hi + _log_geometric(np.abs(ell[:, None] - ell[None, :]), N))
    else:
        lam2 = sigma ** (2.0 / N)
        with np.errstate(over="ignore"):
            out = sum(np.outer(lam2 ** (N - 1 - m), lam2**m) for m in range(N))
    if not np.all(np.isfinite(out)):
        raise ValueError("A_eigenvalues: a_kl ~ N sigma^(2-2/N) exceeds the float64 range (sigma too large)")
    return out


def end_to_end(Ws) -> np.ndarray:
    """``X = W_N ⋯ W_1`` for factors given in the order ``[W_1, …, W_N]``."""
    Ws = _check_factors(Ws)
    X = Ws[0]
    for W in Ws[1:]:
        X = W @ X
    return finite_result("end_to_end", X)


def factor_metric_operator(Ws, P) -> np.ndarray:
    """``Dφ Dφ*(P) = Σ_k (W_N⋯W_{k+1})(W_N⋯W_{k+1})ᵀ P (W_{k−1}⋯W_1)ᵀ(W_{k−1}⋯W_1)``.

    The end-to-end velocity produced by gradient flow on the factors is ``−DφDφ*(∇E(X))``; on the
    balanced manifold this operator equals ``A_{N,X}`` (the geometric origin of Lemma 2.1).
    """
    Ws = _check_factors(Ws)
    P = check_array("P", P, shape=Ws[0].shape)
    n = len(Ws)
    d = P.shape[0]
    out = np.zeros_like(P)
    for k in range(n):
        left = end_to_end(Ws[k + 1:]) if k + 1 < n else np.eye(d)
        right = end_to_end(Ws[:k]) if k > 0 else np.eye(d)
        out += left @ left.T @ P @ right.T @ right
    return finite_result("factor_metric_operator", out)


def _haar_orthogonal(rng, d):
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))[None, :]


def balanced_factors(X, N, rng=None) -> list:
    """Balanced factors ``[W_1, …, W_N]`` with ``W_N ⋯ W_1 = X`` and ``W_{k+1}ᵀW_{k+1} = W_kW_kᵀ``.

    With ``X = UΣVᵀ``: ``W_1 = Q_1Σ^{1/N}Vᵀ``, ``W_k = Q_kΣ^{1/N}Q_{k−1}ᵀ``, ``W_N = UΣ^{1/N}Q_{N−1}ᵀ``
    where ``Q_k`` are Haar-random orthogonal matrices drawn from ``rng`` (identity if ``rng`` is None):
    the balanced fibre over ``X`` is exactly this orbit of ``O_d^{N−1}``.
    """
    X = check_array("X", X, ndim=2)
    if X.shape[0] != X.shape[1] or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty square matrix, got shape {X.shape}")
    N = _check_depth(N)
    if N > _LITERAL_DEPTH:
        raise ValueError(f"N must be <= {_LITERAL_DEPTH} for balanced_factors (it builds N matrices), got {N}")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (symbreak.rng.make_rng) or None, got {rng!r}")
    d = X.shape[0]
    U, s, Vt = np.linalg.svd(X)
    root = np.diag(s ** (1.0 / N))
    Qs = [np.eye(d) if rng is None else _haar_orthogonal(rng, d) for _ in range(N - 1)]
    if N == 1:
        return [X.copy()]
    Ws = [Qs[0] @ root @ Vt]
    for k in range(1, N - 1):
        Ws.append(Qs[k] @ root @ Qs[k - 1].T)
    Ws.append(U @ root @ Qs[-1].T)
    return Ws


def balance_defect(Ws) -> float:
    """``max_k ‖W_{k+1}ᵀW_{k+1} − W_kW_kᵀ‖_F`` (zero on the balanced manifold)."""
    Ws = _check_factors(Ws)
    if len(Ws) < 2:
        return 0.0
    return finite_result("balance_defect", float(max(np.linalg.norm(Ws[k + 1].T @ Ws[k + 1] - Ws[k] @ Ws[k].T) for k in range(len(Ws) - 1))))


def spectral_gradient_matrix(X, *, N, beta, p=None, energy=None) -> np.ndarray:
    """Euclidean gradient ``∇_X F_β = U diag(∂F_β/∂σ) Vᵀ`` of a spectral free energy at ``X``.

    Well defined also at repeated singular values (``∂F/∂σ_i`` is then the same for the tied ones,
    by the symmetry of ``F_β``), which is why a tie-safe entropy gradient is needed here.
    """
    X = check_array("X", X, ndim=2)
    if X.shape[0] != X.shape[1] or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty square matrix, got shape {X.shape}")
    N = _check_depth(N)
    beta = _check_beta(beta, allow_inf=True)
    energy = _resolve_energy(p, energy)
    U, s, Vt = np.linalg.svd(X)
    if np.any(s <= 0):
        raise ValueError("X must be invertible (all singular values > 0)")
    return finite_result("spectral_gradient_matrix", (U * _free_energy_grad(s, N, beta, energy)[None, :]) @ Vt)


def train_factors(Ws, *, N, beta, step, steps, p=None, energy=None, record_every: int = 1) -> dict:
    """Gradient descent on the factors of ``F_β(W_N ⋯ W_1)``: ``W_k ← W_k − h ∇_{W_k} F_β``.

    ``∇_{W_k} F = (W_N⋯W_{k+1})ᵀ ∇_X F (W_{k−1}⋯W_1)ᵀ``. Started on the balanced manifold, small
    steps ``h`` follow the end-to-end flow ``Ẋ = −A_{N,X}(∇_X F)`` with time ``t = h × steps``; the
    singular values then follow the chamber flow of Lemma 2.5. The residual against the flow is
    ``O(h)``: the Euler discretisation error and the drift of balancedness (each step changes
    ``W_{k+1}ᵀW_{k+1} − W_kW_kᵀ`` by ``O(h²)``).

    Returns
    -------
    dict with ``times`` (``h × recorded steps``), ``sigma`` (recorded singular values, descending,
    shape (T, d)), ``balance`` (balance defect at the recorded steps), ``Ws`` (final factors) and
    ``X`` (final end-to-end matrix).
    """
    Ws = [W.copy() for W in _check_factors(Ws)]
    N = _check_depth(N)
    if len(Ws) != N:
        raise ValueError(f"Ws must hold N={N} factors, got {len(Ws)}")
    beta = _check_beta(beta, allow_inf=True)
    step = check_positive("step", step)
    steps = check_int("steps", steps, minimum=0, maximum=MAX_STEPS)
    record_every = check_int("record_every", record_every, minimum=1)
    energy = _resolve_energy(p, energy)
    d = Ws[0].shape[0]
    eye = np.eye(d)
    rec_t, rec_s, rec_b = [], [], []
    for n in range(steps + 1):
        # prefix[k] = W_k ⋯ W_1 (prefix[0] = I); suffix[k] = W_N ⋯ W_{k+1} (suffix[N] = I)
        prefix = [eye]
        for W in Ws:
            prefix.append(W @ prefix[-1])
        X = prefix[-1]
        U, s, Vt = np.linalg.svd(X)
        if n % record_every == 0 or n == steps:
            rec_t.append(n * step)
            rec_s.append(s.copy())
            rec_b.append(balance_defect(Ws))
        if n == steps:
            break
        if not np.all(np.isfinite(s)) or s.min() <= 0:
            raise RuntimeError(f"train_factors: X became singular or non-finite at step {n}; lower the step")
        G = (U * _free_energy_grad(s, N, beta, energy)[None, :]) @ Vt
        suffix = [eye] * (N + 1)
        for k in range(N - 1, -1, -1):
            suffix[k] = suffix[k + 1] @ Ws[k]
        grads = [suffix[k + 1].T @ G @ prefix[k].T for k in range(N)]
        Ws = [W - step * gk for W, gk in zip(Ws, grads)]
    return {"times": np.array(rec_t), "sigma": np.array(rec_s), "balance": np.array(rec_b),
            "Ws": Ws, "X": end_to_end(Ws)}


# ---------------------------------------------------------------------------------------------
# large d (Section 8.3): equilibria of the free energy and a random-matrix contrast
# ---------------------------------------------------------------------------------------------

def _ginibre_terms(sigma):
    """Value, gradient, Hessian of ``S_G = ½ Σ_{i<j} log|σ_i² − σ_j²| + ½ Σ_i log σ_i``."""
    d = sigma.size
    s2 = sigma**2
    diff = s2[:, None] - s2[None, :]
    np.fill_diagonal(diff, 1.0)
    iu = np.triu_indices(d, 1)
    val = 0.5 * np.log(np.abs(diff[iu])).sum() + 0.5 * np.log(sigma).sum()
    inv = 1.0 / diff
    np.fill_diagonal(inv, 0.0)
    grad = sigma * inv.sum(axis=1) + 0.5 / sigma
    inv2 = inv**2
    hess = 2.0 * np.outer(sigma, sigma) * inv2
    np.fill_diagonal(hess, 0.0)
    summ = (s2[:, None] + s2[None, :]) * inv2
    np.fill_diagonal(summ, 0.0)
    hess[np.diag_indices(d)] = -summ.sum(axis=1) - 0.5 / s2
    return val, grad, hess


def equilibrium_spectrum(sigma0, *, N, beta, p, interaction: str = "dln", tol: float = 1e-12,
                         max_iter: int = 200):
    """Minimise ``F_β(σ) = E_p(σ) − S(σ)/β`` over the chamber by damped Newton iterations.

    ``interaction="dln"`` uses the DLN entropy ``S_N`` (Theorem 1.2: the minimiser has all
    ``σ_i = σ⋆``). ``interaction="ginibre"`` is the random-matrix contrast: half the log-density of
    the singular values of a real ``(d+1)×d`` Gaussian matrix (the same ½ as in ``S_N``),
    ``S_G = ½ Σ_{i<j} log|σ_i² − σ_j²| + ½ Σ_i log σ_i``, a Coulomb gas whose minimiser spreads out.
    Both free energies are convex (strictly for ``p > 1``), so Newton's method with backtracking
    (keeping ``σ > 0`` and, for the Coulomb gas, the order of ``sigma0``) converges to the unique
    minimiser.

    Returns
    -------
    (numpy.ndarray (d,), dict)
        The minimiser and ``{"iterations", "gradient_norm"}``.
    """
    sigma = _check_sigma(sigma0, "sigma0", min_d=2)
    N = _check_depth(N, minimum=2)
    beta = _check_beta(beta)
    p = _check_p(p)
    tol = check_positive("tol", tol)
    max_iter = check_int("max_iter", max_iter, minimum=1, maximum=100_000)
    if not isinstance(interaction, str) or interaction not in ("dln", "ginibre"):
        raise ValueError(f"interaction must be 'dln' or 'ginibre', got {interaction!r}")
    if interaction == "ginibre":
        sigma = np.sort(sigma)[::-1]
        if np.any(np.diff(sigma) >= 0):
            raise ValueError("sigma0 must have distinct values for interaction='ginibre'")

    def terms(s):
        e = np.sum(s**p) / p
        ge = s ** (p - 1.0)
        he = np.diag((p - 1.0) * s ** (p - 2.0))
        if interaction == "dln":
            sv = entropy(s, N)
            sg = _entropy_grad_batched(s, N)
            sh = _entropy_hess_batched(s, N)
        else:
            sv, sg, sh = _ginibre_terms(s)
        return e - sv / beta, ge - sg / beta, he - sh / beta

    def feasible(s):
        if np.any(s <= 0) or not np.all(np.isfinite(s)):
            return False
        return interaction == "dln" or bool(np.all(np.diff(s) < 0))

    f, g, h = terms(sigma)
    it = 0
    for it in range(1, max_iter + 1):
        h = 0.5 * (h + h.T)
        try:
            step = -np.linalg.solve(h, g)
        except np.linalg.LinAlgError:
            step = -g
        slope = float(g @ step)
        if slope >= 0:
            step, slope = -g, -float(g @ g)
        alpha = 1.0
        while alpha > 1e-12:
            trial = sigma + alpha * step
            if feasible(trial):
                ft, gt, ht = terms(trial)
                if ft <= f + 1e-4 * alpha * slope or abs(ft - f) <= 1e-15 * abs(f):
                    break
            alpha *= 0.5
        else:
            break
        sigma, f, g, h = trial, ft, gt, ht
        if np.max(np.abs(g * sigma)) < tol:
            break
    with np.errstate(over="ignore", invalid="ignore"):
        gnorm = float(np.max(np.abs(g * sigma)))
    finite_result("equilibrium_spectrum", (sigma, gnorm))
    return sigma, {"iterations": it, "gradient_norm": gnorm}


def quarter_circle_density(x, beta0):
    """Limit density of the Coulomb-gas minimiser for ``p = 2``, ``β = β0 d`` (``d → ∞``):
    the quarter-circle law ``ρ(σ) = (2β0/π) √(2/β0 − σ²)`` on ``[0, √(2/β0)]``.

    (Its squares ``x = σ²`` solve ``β0 = PV∫ρ_x(y)/(x − y) dy`` with a hard edge at 0:
    ``ρ_x(x) = (β0/π)√((2/β0 − x)/x)``.)
    """
    beta0 = check_positive("beta0", beta0)
    x = check_array("x", x)
    a = 2.0 / beta0
    return finite_result("quarter_circle_density", np.where((x >= 0) & (x <= math.sqrt(a)), 2.0 * beta0 / math.pi * np.sqrt(np.clip(a - x**2, 0, None)), 0.0))
