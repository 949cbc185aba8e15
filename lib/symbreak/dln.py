"""Entropy of the deep linear network: free energy on singular values (Chen, Kotwal & Menon).

The deep linear network (DLN) ``X = W_N ⋯ W_1`` of ``d×d`` matrices, trained by gradient flow from
a balanced initialisation, moves its end-to-end matrix ``X`` by a Riemannian gradient flow for the
metric ``g^N`` whose inverse is the operator ``A_{N,X}`` (Lemma 2.1 of the paper). For a spectral
energy the flow acts on the singular values alone, in the chamber ``σ_1 ≥ … ≥ σ_d > 0``, with the
pushforward metric (2.9); adding the Boltzmann entropy ``S_N`` of the balanced fibre at inverse
temperature ``β`` gives the free energy ``F_β = E − S_N/β`` and the flow (1.10)::

    σ̇_i = −N σ_i^{2−2/N} ∂F_β/∂σ_i .

Everything in this module is evaluated without cancellation at and near coincident singular values.
The key is to write each pair term of the entropy in logarithmic variables ``ℓ_i = log σ_i``,
``δ = ℓ_i − ℓ_j``::

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

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np
from scipy import integrate, optimize, special

from .engine import Configuration, DivergenceError, record_steps, run_ensemble
from .validation import (
    MAX_STEPS,
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_positive_array,
    check_real,
    check_tolerance,
    finite_result,
    solve_ivp_bounded,
)

__all__ = [
    "entropy",
    "entropy_gradient",
    "entropy_hessian",
    "riemannian_entropy_hessian",
    "pair_kernels",
    "log_form_derivatives",
    "naive_entropy",
    "entropy_autograd",
    "orbit_gram_logdet",
    "concavity_discriminant",
    "concavity_tail_start",
    "certify_concavity",
    "pair_gram_determinant",
    "tridiagonal_toeplitz_det",
    "SpectralEnergy",
    "schatten_energy",
    "quadratic_energy",
    "flow_vector_field",
    "flow_jacobian",
    "singular_value_flow",
    "singular_value_flows",
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
    "entropy_gradient_matrix",
    "matrix_velocity",
    "matrix_flow_jacobian",
    "matrix_flow",
    "EXPLORER_BOX",
    "explorer_view",
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
        raise ValueError(
            f"d must be an integer >= {minimum} (the formula needs pairs of singular values), got {d!r}"
        ) from None


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


def _bernoulli(m: int) -> Fraction:
    """The Bernoulli number ``B_m`` (``B_1 = −1/2``), exactly, by the Akiyama–Tanigawa recursion."""
    a = [Fraction(0)] * (m + 1)
    for k in range(m + 1):
        a[k] = Fraction(1, k + 1)
        for j in range(k, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
    return a[0] if m != 1 else Fraction(-1, 2)


_NTERMS = 16
# c(x) = sum_n a_n x^(2n-1), a_n = 2^(2n) B_2n / (2n)!, from the exact Bernoulli numbers (rounded once;
# scipy.special.bernoulli's B_4 is off by 2e-12 relative, which put 3e-14 relative errors into c near 1/2)
_A_N = np.array(
    [float(Fraction(2 ** (2 * n)) * _bernoulli(2 * n) / math.factorial(2 * n)) for n in range(1, _NTERMS + 1)]
)


def _poly_even(x2: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
    """``sum_k coeffs[k] * x2**k`` by Horner."""
    out = np.full_like(x2, coeffs[-1])
    for ck in coeffs[-2::-1]:
        out *= x2
        out += ck
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


@functools.lru_cache(maxsize=64)
def _g1_coeffs(N) -> np.ndarray:
    """Series of ``G_N'(δ) = c(δ) − c(δ/N)/N = Σ_n a_n (1 − N^{−2n}) δ^{2n−1}`` (``|δ| < 1/2``)."""
    if math.isinf(N):
        return _A_N
    return _A_N * (1.0 - float(N) ** (-2.0 * np.arange(1, _NTERMS + 1)))


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
    ds = delta[small]
    out[small] = _kappa(N) + ds * _poly_even(ds * ds, _g1_coeffs(N))  # G_N'(δ), one series
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
    """``S_N`` by the literal quotient of Section 1.2 (for demonstrating cancellation; NaN at ties).

    ``S_N = ½ Σ_{i<j} log[(σ_i² − σ_j²)/(σ_i^{2/N} − σ_j^{2/N})]``, evaluated literally: digits are lost
    to cancellation near a tie, and at an exact tie ``σ_i = σ_j`` the quotient is ``0/0`` and the
    result is ``NaN``, by design (:func:`entropy` is the stable form).

    Raises
    ------
    ValueError
        When ``σ²`` leaves the normal float64 range (``σ > 1.3e154`` or ``σ < 1.5e-154``): there the
        literal quotient would overflow or underflow, which is not the cancellation it demonstrates.
    """
    sigma = _check_sigma(sigma)
    N = _check_depth(N)
    with np.errstate(over="ignore", under="ignore"):
        s2 = sigma * sigma
    if not (np.all(np.isfinite(s2)) and np.all(s2 >= np.finfo(float).tiny)):
        raise ValueError(
            "naive_entropy: sigma**2 leaves the float64 range (sigma must lie in [1.5e-154, 1.3e154] "
            f"for the literal quotient, got min {sigma.min():.3g}, max {sigma.max():.3g}); use entropy"
        )
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
        raise ValueError(
            f"N must be <= {_LITERAL_DEPTH} for entropy_autograd (it differentiates the N-term "
            f"polynomial literally), got {N}"
        )
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


# ---------------------------------------------------------------------------------------------
# Theorem 1.9 for N > 2: the pair discriminant Δ_N, without cancellation, and its certification
# ---------------------------------------------------------------------------------------------


def concavity_discriminant(delta, N):
    """``Δ_N(δ) = κ² − 2κG_N''(δ) − G_N'(δ)²`` (``κ = 1 − 1/N``): a pair block of the Euclidean Hessian
    of ``S_N`` is negative definite iff ``Δ_N(δ) > 0`` (Theorem 1.9), ``δ = log(σ_i/σ_j)``.

    Evaluated without cancellation: for ``|δ| ≥ 1/2`` by the exact identity (the book's)
    ``Δ_N = (4κη/N)(1 − 2/N) − 8κη²/N² + 4κε(1 + 2ε) − 4(η/N − ε)²`` with ``ε = 1/(e^{2|δ|} − 1)``,
    ``η = 1/(e^{2|δ|/N} − 1)`` (``0 ≤ ε ≤ η/N``), whose leading term carries the exponentially small
    value; for ``|δ| < 1/2`` by the tie-safe series of :func:`log_form_derivatives`. ``Δ_N`` is even.

    Parameters
    ----------
    delta : array_like
        Log-ratios (any real values).
    N : int
        Depth ``≥ 2``.
    """
    delta = np.abs(check_array("delta", delta))
    N = _check_depth(N, minimum=2)
    kappa = _kappa(N)
    out = np.empty_like(delta)
    small = delta < 0.5
    g1, g2 = _G1(delta[small], N), _G2(delta[small], N)
    out[small] = kappa**2 - 2.0 * kappa * g2 - g1**2
    x = delta[~small]
    eps = 1.0 / np.expm1(2.0 * x)
    eta = 1.0 / np.expm1(2.0 * x / N)
    out[~small] = (
        4.0 * kappa * eta / N * (1.0 - 2.0 / N)
        - 8.0 * kappa * eta**2 / N**2
        + 4.0 * kappa * eps * (1.0 + 2.0 * eps)
        - 4.0 * (eta / N - eps) ** 2
    )
    return out if out.ndim else float(out)


def concavity_tail_start(N) -> float:
    """``δ_N`` beyond which ``Δ_N(δ) > 0`` is proved in closed form (the book's bound):
    ``Δ_N ≥ (4η/N)[κ(1 − 2/N) − η(2κ + 1)/N] > 0`` once ``η < Nκ(1 − 2/N)/(2κ + 1)``, i.e. for
    ``δ > δ_N = (N/2) log(1 + (2κ + 1)/(Nκ(1 − 2/N)))``. Needs ``N ≥ 3``."""
    N = check_int("N", N, minimum=3)
    kappa = _kappa(N)
    return 0.5 * N * math.log1p((2.0 * kappa + 1.0) / (N * kappa * (1.0 - 2.0 / N)))


def certify_concavity(N, *, max_intervals: int = 20_000, dps: int = 30) -> dict:
    """Certify ``Δ_N(δ) > 0`` on ``[0, δ_N]`` (:func:`concavity_tail_start`) by interval arithmetic
    (``mpmath.iv``), which with the closed-form tail bound proves it for every ``δ`` (Theorem 1.9, one
    depth ``N ≥ 3``).

    On ``[0, 1/2]`` the functions ``c(x) = coth x − 1/x`` and ``e(x) = csch²x − 1/x²`` are enclosed by
    their alternating Taylor series with the first omitted term as remainder
    (``c ∈ x/3 − x³/45 + [0, 2x⁵/945]``, ``e ∈ −1/3 + x²/15 − [0, 2x⁴/189]``, valid for ``0 ≤ x ≤ 1/2``);
    beyond, ``Δ_N`` is enclosed through ``ε = 1/(e^{2δ} − 1)`` and ``η = 1/(e^{2δ/N} − 1)``. Intervals
    whose enclosure is not positive are bisected, at most ``max_intervals`` evaluations in all.

    Returns
    -------
    dict with ``certified`` (bool), ``tail_start``, ``intervals`` (evaluations used) and
    ``min_lower`` (smallest certified lower bound of ``Δ_N`` over the accepted intervals; ``None``
    when ``max_intervals`` ran out before any interval was accepted).
    """
    import mpmath

    N = check_int("N", N, minimum=3, maximum=10_000)
    max_intervals = check_int("max_intervals", max_intervals, minimum=1, maximum=10**7)
    dps = check_int("dps", dps, minimum=15, maximum=200)
    iv = mpmath.iv
    tail = concavity_tail_start(N)
    with mpmath.workdps(dps):
        iv.dps = dps
        # every constant enclosed once: mixing Python numbers into interval expressions converts
        # them at every operation, most of the cost (any grouping of the same real expression gives
        # a valid enclosure)
        one, n = iv.mpf(1), iv.mpf(N)
        inv_n = one / n
        inv_n2 = inv_n * inv_n
        kap = one - inv_n
        kap2, two_kap, four_kap = kap * kap, 2 * kap, 4 * kap
        lead = 4 * kap * inv_n * (one - 2 * inv_n)  # 4κ(1 − 2/N)/N
        quad = 8 * kap * inv_n2  # 8κ/N²
        c3, c45, c945 = one / 3, one / 45, iv.mpf(2) / 945
        e3, e15, e189 = -one / 3, one / 15, iv.mpf(2) / 189
        unit = iv.mpf([0, 1])
        two, four = iv.mpf(2), iv.mpf(4)
        two_inv_n = two * inv_n

        def c_enc(x):
            x2 = x * x
            return x * c3 - x * x2 * c45 + unit * (x * x2 * x2 * c945)

        def e_enc(x):
            x2 = x * x
            return e3 + x2 * e15 - unit * (x2 * x2 * e189)

        def enclose(a, b):
            x = iv.mpf([a, b])
            if b <= 0.5:
                xn = x * inv_n
                g1 = c_enc(x) - c_enc(xn) * inv_n
                g2 = e_enc(xn) * inv_n2 - e_enc(x)
                return kap2 - two_kap * g2 - g1 * g1
            eps = one / (iv.exp(two * x) - one)
            eta = one / (iv.exp(two_inv_n * x) - one)
            diff = eta * inv_n - eps
            return lead * eta - quad * (eta * eta) + four_kap * eps * (one + two * eps) - four * (diff * diff)

        stack = [(0.0, 0.5), (0.5, float(tail) + 1e-9)] if tail > 0.5 else [(0.0, 0.5)]
        used, min_lower, ok = 0, math.inf, True
        while stack:
            a, b = stack.pop()
            used += 1
            if used > max_intervals:
                ok = False
                break
            lo = float(enclose(a, b).a)
            if lo > 0:
                min_lower = min(min_lower, lo)
            elif b - a < 1e-12:
                ok = False
                break
            else:
                m = 0.5 * (a + b)
                stack += [(a, m), (m, b)]
    min_lower = min_lower if math.isfinite(min_lower) else None
    return {"certified": ok and not stack, "tail_start": tail, "intervals": used, "min_lower": min_lower}


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
        out = -(sigma ** (1.0 - 2.0 / N)) * energy._gradient(sigma)
        if entropic:
            out = out + sigma ** (-2.0 / N) * _entropy_log_grad(sigma, N) / beta
        return out

    def jac(_t, mu):
        # mu of shape (..., d): one Jacobian (..., d, d) per point
        sigma = np.exp(N * mu)
        e1 = energy._gradient(sigma)
        e2 = energy._hessian(sigma)
        a = sigma ** (1.0 - 2.0 / N)
        j = -(a[..., :, None] * e2) * (N * sigma)[..., None, :]
        diag = np.arange(sigma.shape[-1])
        j[..., diag, diag] -= (N - 2.0) * a * e1
        if entropic:
            b = sigma ** (-2.0 / N)
            g = _entropy_log_grad(sigma, N)
            j += (b[..., :, None] * _entropy_log_hessian(sigma, N)) * (N / beta)
            j[..., diag, diag] -= 2.0 * b * g / beta
        return j

    return rhs, jac


def _check_flow_args(t_eval, N, beta, p, energy, rtol, atol):
    """The shared arguments of the singular-value flows, validated (tolerances before they reach
    LSODA, which keeps bad state)."""
    t_eval = check_array("t_eval", t_eval, ndim=1)
    if t_eval.size == 0 or np.any(t_eval < 0) or np.any(np.diff(t_eval) < 0):
        raise ValueError("t_eval must be a non-empty, non-decreasing array of times >= 0")
    N = _check_depth(N)
    beta = _check_beta(beta, allow_inf=True)
    energy = _resolve_energy(p, energy)
    return t_eval, N, beta, energy, check_tolerance("rtol", rtol), check_tolerance("atol", atol)


def singular_value_flow(
    sigma0, t_eval, *, N, beta, p=None, energy=None, method: str = "LSODA", rtol: float = 1e-10, atol: float = 1e-12
) -> np.ndarray:
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
    method = check_choice("method", method, ("LSODA", "Radau", "BDF", "RK45", "RK23", "DOP853"))
    t_eval, N, beta, energy, rtol, atol = _check_flow_args(t_eval, N, beta, p, energy, rtol, atol)
    rhs, jac = _mu_rhs_and_jac(N, beta, energy)
    mu0 = np.log(sigma0) / N
    t_end = float(t_eval[-1])
    if t_end == 0.0:
        return np.tile(sigma0, (t_eval.size, 1))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f0, j0 = rhs(0.0, mu0), jac(0.0, mu0)
    if not (np.all(np.isfinite(f0)) and np.all(np.isfinite(j0))):
        raise ValueError(
            "sigma0 is outside the range where the flow's vector field is representable in "
            f"float64 (it overflows at sigma0 = {sigma0!r})"
        )
    jnorm = float(np.abs(j0).sum(axis=1).max())
    if t_end * jnorm <= 1e-6:
        # a horizon far below the flow's time scale 1/‖J‖ (LSODA cannot step through t_end = 1e-200):
        # second-order Taylor, error O((t‖J‖)² t‖f‖) below round-off of the displacement
        mu = mu0[None, :] + t_eval[:, None] * f0[None, :] + 0.5 * t_eval[:, None] ** 2 * (j0 @ f0)[None, :]
        return np.exp(N * mu)
    with np.errstate(over="ignore", invalid="ignore"):
        mu = solve_ivp_bounded(
            rhs, t_end, mu0, t_eval, method=method, rtol=rtol, atol=atol, jac=jac, what="singular_value_flow"
        )
    out = np.exp(N * mu)
    if not np.all(np.isfinite(out)) or np.any(out <= 0):
        raise ValueError("singular_value_flow: the singular values left the float64 range (sigma0 too extreme)")
    return out


def singular_value_flows(
    sigma0s, t_eval, *, N, beta, p=None, energy=None, rtol: float = 1e-10, atol: float = 1e-12
) -> np.ndarray:
    """:func:`singular_value_flow` from several starts at once: one LSODA solve of the uncoupled system.

    The Jacobian is block diagonal (the analytic one of each start), and LSODA's local error test
    holds every component to ``rtol``/``atol`` (its weighted max-norm), so each trajectory is
    integrated to the same tolerances as alone; the steps are those of the most demanding start.

    Parameters
    ----------
    sigma0s : array_like, shape (B, d)
        Initial singular values of the ``B`` starts (positive).
    t_eval, N, beta, p, energy, rtol, atol
        As in :func:`singular_value_flow` (method LSODA).

    Returns
    -------
    numpy.ndarray, shape (B, T, d)
    """
    sigma0s = check_array("sigma0s", sigma0s, ndim=2)
    if sigma0s.size == 0 or np.any(sigma0s <= 0):
        raise ValueError("sigma0s must be a non-empty (B, d) array with all entries in (0, inf)")
    t_eval, N, beta, energy, rtol, atol = _check_flow_args(t_eval, N, beta, p, energy, rtol, atol)
    rhs, jac = _mu_rhs_and_jac(N, beta, energy)
    mu0 = np.log(sigma0s) / N
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f0, j0 = rhs(0.0, mu0), jac(0.0, mu0)
    jnorm = float(np.abs(j0).sum(axis=-1).max()) if np.all(np.isfinite(j0)) else math.inf
    if t_eval[-1] == 0.0 or not np.all(np.isfinite(f0)) or t_eval[-1] * jnorm <= 1e-6:
        # the start-by-start path handles these (no motion, overflow errors, the Taylor horizon)
        return np.stack(
            [singular_value_flow(s0, t_eval, N=N, beta=beta, energy=energy, rtol=rtol, atol=atol) for s0 in sigma0s]
        )
    with np.errstate(over="ignore", invalid="ignore"):
        return _flow_batch(sigma0s, t_eval, N=N, beta=beta, energy=energy, rtol=rtol, atol=atol)


def _flow_batch(sigma0s, t_eval, *, N, beta, energy, rtol, atol) -> np.ndarray:
    """:func:`singular_value_flow` from several starts ``sigma0s`` (shape (B, d)) in one LSODA solve.

    The B systems are uncoupled: the Jacobian is block diagonal, and LSODA's error test takes the
    weighted max-norm over all components, so every trajectory is held to ``rtol``/``atol`` as in a
    solve of its own, with one solver's overhead instead of B. Returns shape (B, T, d). Internal: the
    caller passes validated, moderate starts and ``t_eval[-1] > 0``.
    """
    from scipy.linalg import block_diag

    sigma0s = np.asarray(sigma0s, dtype=float)
    n_batch, d = sigma0s.shape
    rhs, jac = _mu_rhs_and_jac(N, beta, energy)
    mu = solve_ivp_bounded(
        lambda t, y: rhs(t, y.reshape(n_batch, d)).ravel(),
        float(t_eval[-1]),
        (np.log(sigma0s) / N).ravel(),
        t_eval,
        method="LSODA",
        rtol=rtol,
        atol=atol,
        jac=lambda t, y: block_diag(*jac(t, y.reshape(n_batch, d))),
        what="singular_value_flow",
    )
    out = np.exp(N * mu).reshape(t_eval.size, n_batch, d).transpose(1, 0, 2)
    if not np.all(np.isfinite(out)) or np.any(out <= 0):
        raise ValueError("singular_value_flow: the singular values left the float64 range")
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
        raise ValueError(
            f"sigma_star = ((d-1)(1-1/N)/(2 beta))^(1/p) exceeds the float64 range (beta = {beta!r} too small)"
        )
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
    return finite_result(
        "sigma_star", float(math.exp(optimize.brentq(bal, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)))
    )


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
        out[high] = special.digamma(2.0 - a) - special.digamma(a) + _R(2.0 - a, 1.0 / uh) + expo + logu
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


# --- the scale clock: exact inversion of Theorem 1.7 in logarithmic variables ---------------------
#
# With z = (s/s⋆)^ν, a = 2/ν and τ = ν s⋆^{ν−2} t, the scalar flow is dz/dτ = z^{1−a}(1 − z), so
# τ = C(z) − C(z0) for the positive "clock"
#   below (z < 1):  C(z) = Φ_a(z) = ∫_0^z v^{a−1}/(1−v) dv         = (z^a/a) Σ_k a z^k/(a+k)
#   above (z > 1):  C(z) = Φ_a(z) − Φ_a(∞) = ∫_z^∞ v^{a−1}/(v−1) dv = z^{a−1} Σ_k z^{−k}/(k+1−a)
# (Φ_a(∞) = π cot(πa)). Both are sums of positive terms, the target C(z0) + τ is a sum of two
# positive numbers, and every quantity is carried in logarithms, so nothing cancels, overflows or
# underflows for s0/s⋆ in [1e-12, 1e6] and ν up to 64 (and far beyond). Near z = 1 the clock is
# written through w = −log|1 − z| and the Taylor series of R_a about 1, so |s − s⋆| keeps full
# relative accuracy down to the underflow of e^{−w}.

_CLOCK_TERMS = 120
_LOG_TAIL = math.log(1e-19)


@functools.lru_cache(maxsize=256)
def _series_coeffs(a: float, side: int) -> tuple:
    """Coefficients of the clock's series: ``a/(a+k)`` below (``side = 1``), ``1/(k+1−a)`` above;
    ``k = 0, …, _CLOCK_TERMS − 1``, positive and decreasing."""
    if side > 0:
        return tuple(a / (a + k) for k in range(_CLOCK_TERMS))
    return tuple(1.0 / (k + 1.0 - a) for k in range(_CLOCK_TERMS))


def _horner_tail_free(coeffs: tuple, z: float) -> float:
    """``Σ_k coeffs[k] z^k`` for ``0 ≤ z ≤ 2/3`` by Horner's rule on the first ``n`` terms, ``z^{n−1} <
    1e-19``: the coefficients decrease, so the neglected tail is below ``3e-19`` of the first term."""
    if z == 0.0:
        return coeffs[0]
    n = min(len(coeffs), int(_LOG_TAIL / math.log(z)) + 2)
    total = 0.0
    for k in range(n - 1, -1, -1):
        total = total * z + coeffs[k]
    return total


def _series_below(a: float, z: float) -> float:
    """``Σ_{k≥0} a z^k/(a+k)`` for ``0 ≤ z ≤ 1/2`` (positive terms; ``≥ 1``)."""
    return _horner_tail_free(_series_coeffs(a, 1), z)


def _series_above(a: float, u: float) -> float:
    """``Σ_{k≥0} u^k/(k+1−a)`` for ``0 ≤ u ≤ 2/3``, ``a < 1`` (positive terms)."""
    return _horner_tail_free(_series_coeffs(a, -1), u)


@functools.lru_cache(maxsize=256)
def _near_one_coeffs(a: float) -> tuple:
    """``b_k = ((1−a)_k/k!)/k`` for ``k = 1, …, _CLOCK_TERMS − 1`` (``0 < a < 1``: positive, decreasing)."""
    out, ck = [], 1.0
    for k in range(1, _CLOCK_TERMS):
        ck *= (k - a) / k
        out.append(ck / k)
    return tuple(out)


def _R_near_one(a: float, x: float) -> float:
    """``R_a(1 − x) − R_a(1) = −Σ_{k≥1} ((1−a)_k/k!) x^k/k`` for ``|x| ≤ 1/2``.

    Horner's rule on the cached coefficients, with the ``n`` terms for which ``|x|^{n−1} < 1e-19``
    (the ``b_k`` decrease, so the neglected tail is below ``2e-19`` of the first term); the clock's
    root finder calls this for every time point and every iterate."""
    if x == 0.0:
        return -0.0
    b = _near_one_coeffs(a)
    n = min(len(b), int(_LOG_TAIL / math.log(abs(x))) + 2)
    total = 0.0
    for k in range(n - 1, -1, -1):
        total = total * x + b[k]
    return -total * x


def _log_clock(a: float, side: int, *, x: float | None = None, w: float | None = None) -> float:
    """``log C`` at ``x = log z`` (far from ``z = 1``) or at ``w = −log|1 − z| ≥ log 2`` (near it)."""
    r1 = -float(special.digamma(a)) - np.euler_gamma  # R_a(1)
    if side > 0:  # below
        if w is None:
            z = math.exp(x)
            return a * x - math.log(a) + math.log(_series_below(a, z))
        return math.log(w + r1 + _R_near_one(a, math.exp(-w)))
    if w is None:
        return (a - 1.0) * x + math.log(_series_above(a, math.exp(-x)))
    pcot = math.pi / math.tan(math.pi * a)
    return math.log(w + r1 + _R_near_one(a, -math.exp(-w)) - pcot)


def _solve_increasing(fun, lo: float, hi: float) -> float:
    """Root of an increasing ``fun`` on ``[lo, hi]`` (ends clipped to the bracket)."""
    flo, fhi = fun(lo), fun(hi)
    if flo >= 0.0:
        return lo
    if fhi <= 0.0:
        return hi
    ends = {lo: flo, hi: fhi}  # brentq evaluates the ends first: reuse them (a quarter of the evaluations)
    return optimize.brentq(
        lambda v: ends[v] if v in ends else fun(v), lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=300
    )


def _scale_log_ratio(a: float, side: int, log_target: float) -> tuple:
    """Solve ``log C = log_target`` on one side; returns ``(x, w)`` with ``x = log z`` and
    ``w = −log|1 − z|`` (``inf`` when ``1 − z`` underflows)."""
    if side > 0:
        x_cut = -math.log(2.0)
        if log_target <= _log_clock(a, 1, x=x_cut):  # far below: unknown x = log z ≤ −log 2
            s_hi = math.log(_series_below(a, 0.5))
            hi = min((log_target + math.log(a)) / a, x_cut)
            lo = min((log_target + math.log(a) - s_hi) / a, hi)
            x = _solve_increasing(lambda v: _log_clock(a, 1, x=v) - log_target, lo, hi)
            return x, -math.log1p(-math.exp(x))
        c = math.exp(log_target)  # near: unknown w = −log(1 − z) ≥ log 2
        r1 = -float(special.digamma(a)) - np.euler_gamma
        lo = max(c - r1, math.log(2.0))
        hi = max(c - r1 - _R_near_one(a, 0.5), lo)
        w = _solve_increasing(lambda v: v + r1 + _R_near_one(a, math.exp(-v)) - c, lo, hi)
        return math.log1p(-math.exp(-w)), w
    x_cut = math.log(1.5)
    if log_target <= _log_clock(a, -1, x=x_cut):  # far above: unknown x = log z ≥ log 1.5 (decreasing)
        t_hi = math.log(_series_above(a, 1.0 / 1.5))
        t_lo = -math.log(1.0 - a)
        lo = max((t_lo - log_target) / (1.0 - a), x_cut)
        hi = max((t_hi - log_target) / (1.0 - a), lo)
        x = _solve_increasing(lambda v: log_target - _log_clock(a, -1, x=v), lo, hi)
        return x, -math.log(math.expm1(x))
    c = math.exp(log_target)  # near: unknown w = −log(z − 1) ≥ log 2
    r1 = -float(special.digamma(a)) - np.euler_gamma
    pcot = math.pi / math.tan(math.pi * a)
    hi = max(c - (r1 - pcot), math.log(2.0))  # R_a increases on [1, 3/2]
    lo = min(max(c - (r1 + _R_near_one(a, -0.5) - pcot), math.log(2.0)), hi)
    w = _solve_increasing(lambda v: v + r1 + _R_near_one(a, -math.exp(-v)) - pcot - c, lo, hi)
    return math.log1p(math.exp(-w)), w


def schatten_scale(t, s0, *, p, N, d, beta) -> np.ndarray:
    """Exact solution ``s(t)`` of ``ṡ = −s^{ν−1} + s⋆^ν/s`` (Theorem 1.7, the paper's (1.26)–(1.27)),
    ``s = λ_d = σ_d^{1/N}`` on the invariant set of equal singular values, from ``s(0) = s0`` below, at
    or above ``s⋆``; relative accuracy ~1e-14 for every start and time.

    With ``z = (s/s⋆)^ν``, ``a = 2/ν`` and ``τ = ν s⋆^{ν−2} t`` the flow is ``dz/dτ = z^{1−a}(1 − z)``,
    so ``τ = C(z) − C(z0)`` with the positive clock ``C(z) = (z^a/a) ₂F₁(1, a; 1 + a; z)`` below ``s⋆``
    (the paper's (1.27)) and ``C(z) = Σ_{k≥0} z^{a−1−k}/(k + 1 − a)``, the principal value of the same
    integral minus its limit ``π cot(πa)`` at ``z = ∞``, above. Both are sums of positive terms and the
    target ``C(z0) + τ`` is a sum of two positive numbers; everything is carried in logarithms (``log z``
    far from ``s⋆``, ``w = −log|1 − z|`` near it) and the monotone equation is solved by Brent's method
    to a relative ``4ε``. ``ν = 2`` (``N = 2``, ``p = 1``) uses the closed form
    ``1 − z = (1 − z0) e^{−τ}``.

    Parameters
    ----------
    t : array_like
        Times ``≥ 0`` (``s(0) = s0``), finite.
    s0 : float
        Initial scale, ``0 < s0 < inf``.
    p, N, d, beta
        Schatten exponent ``p ≥ 1``, depth ``N ≥ 2``, dimension ``d ≥ 2``, ``β > 0``.

    Returns
    -------
    numpy.ndarray, shape of ``t``

    Raises
    ------
    ValueError
        If a time is negative or not finite, ``s0`` is not in ``(0, inf)``, or a parameter is out of range.
    """
    nu, s_star = _scale_setup(p, N, d, beta)
    s0 = check_positive("s0", s0)
    t = check_array("t", t)
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError("t must contain finite times >= 0 (the solution starts from s0 at t = 0)")
    log_ss = math.log(s_star)
    x0 = nu * (math.log(s0) - log_ss)  # log z0
    out = np.empty(t.shape)
    flat_t, flat_out = t.reshape(-1), out.reshape(-1)
    if x0 == 0.0:
        flat_out[:] = s_star
        return out
    side = 1 if x0 < 0.0 else -1
    a = 2.0 / nu
    log_rate = math.log(nu) + (nu - 2.0) * log_ss  # log of dτ/dt
    if nu == 2.0:
        one_minus_z0 = -math.expm1(x0)  # signed: > 0 below, < 0 above
    else:
        if side > 0:
            log_c0 = _log_clock(a, 1, x=x0) if x0 <= -math.log(2.0) else _log_clock(a, 1, w=-math.log(-math.expm1(x0)))
        else:
            log_c0 = _log_clock(a, -1, x=x0) if x0 >= math.log(1.5) else _log_clock(a, -1, w=-math.log(math.expm1(x0)))
    for n, tn in enumerate(flat_t):
        if tn == 0.0:
            flat_out[n] = s0
            continue
        log_tau = log_rate + math.log(tn)
        if nu == 2.0:
            tau = math.exp(min(log_tau, 700.0))
            # z = 1 − (1 − z0) e^{−τ}; below: z = z0 e^{−τ} − expm1(−τ) (two positive terms)
            if side > 0:
                z = math.exp(x0 - tau) - math.expm1(-tau)
                x = math.log(z)
            else:
                x = math.log1p(-one_minus_z0 * math.exp(-tau))
        else:
            log_target = np.logaddexp(log_c0, log_tau)
            x, _ = _scale_log_ratio(a, side, float(log_target))
        flat_out[n] = math.exp(log_ss + x / nu)
    return out


# ---------------------------------------------------------------------------------------------
# matrices: the operator A_{N,X}, balanced factors, gradient descent on the factors
# ---------------------------------------------------------------------------------------------


def _sym_power(m, power):
    """``M^power`` of a symmetric positive semi-definite matrix (``0^0 = 1``)."""
    w, q = np.linalg.eigh(0.5 * (m + m.T))
    w = np.clip(w, 0.0, None)
    with np.errstate(divide="ignore"):
        wp = np.where(w > 0, w**power, 1.0 if power == 0 else 0.0)
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
        raise ValueError(
            f"N must be <= {_LITERAL_DEPTH} for A_operator (it sums the N terms literally), got {N}; "
            "A_eigenvalues gives the operator's eigenvalues for any N"
        )
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
        raise ValueError(
            f"A_matrix applies the N-term sum to d² = {d * d} basis matrices: N * d² must be <= "
            f"{50 * _LITERAL_DEPTH}, got N = {N}, d = {d} (A_eigenvalues gives the eigenvalues for any N)"
        )
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
    return _a_kl(_check_sigma(sigma), _check_depth(N))


def _a_kl(sigma, N) -> np.ndarray:
    """The body of :func:`A_eigenvalues`, unvalidated (for the matrix flow's right-hand side)."""
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
        left = end_to_end(Ws[k + 1 :]) if k + 1 < n else np.eye(d)
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
    return finite_result(
        "balance_defect",
        float(max(np.linalg.norm(Ws[k + 1].T @ Ws[k + 1] - Ws[k] @ Ws[k].T) for k in range(len(Ws) - 1))),
    )


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


class _FactorModel:
    """Gradient descent on the factors of ``F_β(W_N ⋯ W_1)``, one replica, for
    :func:`symbreak.engine.run_ensemble`."""

    def __init__(self, Ws, N, beta, energy, step):
        self.Ws, self.N, self.beta, self.energy, self.h = Ws, N, beta, energy, step
        self.eye = np.eye(Ws[0].shape[0])

    def _prefix(self):
        # prefix[k] = W_k ⋯ W_1 (prefix[0] = I)
        prefix = [self.eye]
        for W in self.Ws:
            prefix.append(W @ prefix[-1])
        return prefix

    def _svd(self, X, step):
        # never hand a non-finite matrix to the SVD (LAPACK can loop forever on it)
        if not np.all(np.isfinite(X)):
            raise DivergenceError(
                step,
                0,
                {"step": self.h, "N": self.N, "beta": self.beta},
                float(np.max(np.abs(np.nan_to_num(X, nan=np.inf)))),
                _FACTOR_LIMIT,
                "factor gradient descent",
            )
        return np.linalg.svd(X)

    def draw(self, m):
        return None

    def step(self, _noise, _t, n):
        prefix = self._prefix()
        U, s, Vt = self._svd(prefix[-1], n)
        if s.min() <= 0:
            raise DivergenceError(
                n,
                0,
                {"step": self.h, "N": self.N, "beta": self.beta},
                0.0,
                _FACTOR_LIMIT,
                "factor gradient descent (X became singular)",
            )
        G = (U * _free_energy_grad(s, self.N, self.beta, self.energy)[None, :]) @ Vt
        N, Ws = self.N, self.Ws
        suffix = [self.eye] * (N + 1)
        for k in range(N - 1, -1, -1):
            suffix[k] = suffix[k + 1] @ Ws[k]
        grads = [suffix[k + 1].T @ G @ prefix[k].T for k in range(N)]
        self.Ws = [W - self.h * gk for W, gk in zip(Ws, grads)]

    def magnitude(self):
        return np.array([max(float(np.max(np.abs(W))) for W in self.Ws)])

    def record(self, _mask):
        X = self._prefix()[-1]
        s = np.linalg.svd(X)[1] if np.all(np.isfinite(X)) else np.full(X.shape[0], np.nan)
        return (s[None], np.array([balance_defect(self.Ws)]))

    def final(self, _mask):
        return tuple(W[None] for W in self.Ws)

    def keep(self, _mask):  # pragma: no cover - a single replica finishes once
        raise AssertionError


_FACTOR_LIMIT = 1e12


def entropy_gradient_matrix(X, N) -> np.ndarray:
    """Euclidean gradient ``∇_X S_N = U diag(∂S_N/∂σ_i) Vᵀ`` of the entropy at an invertible ``X``
    (well defined at repeated singular values: the tie-safe gradient is equal on tied values)."""
    X = check_array("X", X, ndim=2)
    if X.shape[0] != X.shape[1]:
        raise ValueError(f"X must be square, got shape {X.shape}")
    N = _check_depth(N, minimum=2)
    U, s, Vt = np.linalg.svd(X)
    if not np.all(s > 0):
        raise ValueError("X must be invertible (all singular values > 0)")
    return (U * _entropy_grad_batched(s, N)[None, :]) @ Vt


def matrix_velocity(X, *, N, beta, grad_energy) -> np.ndarray:
    """The matrix flow (1.1)/(1.5): ``Ẋ = −A_{N,X}(∇E(X) − ∇S_N(X)/β)`` for any energy.

    ``A_{N,X}`` is applied in the singular basis of ``X`` by Lemma 2.1 (``A(u_kv_lᵀ) = a_kl u_kv_lᵀ``,
    :func:`A_eigenvalues`), which agrees with the literal :func:`A_operator` to rounding.

    Parameters
    ----------
    X : array_like, shape (d, d)
        Invertible end-to-end matrix.
    N : int
        Depth ``≥ 2``.
    beta : float
        Inverse temperature ``> 0`` or ``numpy.inf`` (no entropy: the plain DLN gradient flow).
    grad_energy : callable
        ``X ↦ ∇E(X)`` (Euclidean gradient, same shape as ``X``); spectral or not.
    """
    X, N, beta = _check_matrix_flow_args(X, N, beta, grad_energy)
    return _matrix_velocity(X, N, beta, grad_energy)


def _check_matrix_flow_args(X, N, beta, grad_energy, name: str = "X"):
    X = check_array(name, X, ndim=2)
    N = _check_depth(N, minimum=2)
    beta = _check_beta(beta, allow_inf=True)
    if not callable(grad_energy):
        raise TypeError("grad_energy must be a callable X -> grad E(X)")
    if X.shape[0] != X.shape[1]:
        raise ValueError(f"{name} must be square, got shape {X.shape}")
    return X, N, beta


def _matrix_velocity(X, N, beta, grad_energy) -> np.ndarray:
    """The body of :func:`matrix_velocity` for validated ``N``, ``beta``, ``grad_energy`` and a square
    float ``X`` (the ODE right-hand side: validated once per solve, not at every evaluation)."""
    if not np.all(np.isfinite(X)):  # never hand a non-finite matrix to the SVD (LAPACK can loop forever on it)
        raise ValueError("matrix_velocity: X must contain only finite numbers (the flow left the float64 range)")
    G = check_array("grad_energy(X)", grad_energy(X))
    if G.shape != X.shape:
        raise ValueError(f"grad_energy(X) must return an array of shape {X.shape}, got {G.shape}")
    U, s, Vt = np.linalg.svd(X)
    if not np.all(s > 0) or not np.all(np.isfinite(s)):
        raise ValueError("X must be invertible and finite (all singular values in (0, inf))")
    # A_{N,X} in the singular basis (Lemma 2.1): one SVD instead of N fractional matrix powers
    a = _a_kl(s, N)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow (β → 0, huge ∇E) is reported, not returned
        if not math.isinf(beta):
            G = G - (U * _entropy_grad_batched(s, N)[None, :]) @ Vt / beta
        return finite_result("matrix_velocity", -U @ (a * (U.T @ G @ Vt.T)) @ Vt)


def matrix_flow_jacobian(X, *, N, beta, grad_energy, rel_step: float = 1e-4) -> np.ndarray:
    """Jacobian of :func:`matrix_velocity` at ``X`` (``d²×d²`` on row-major ``vec``), by
    Richardson-extrapolated central differences (:func:`numerical_jacobian`)."""
    X, N, beta = _check_matrix_flow_args(X, N, beta, grad_energy)
    shape = X.shape
    h = check_positive("rel_step", rel_step) * float(np.abs(X).max())
    fun = lambda v: _matrix_velocity(v.reshape(shape), N, beta, grad_energy).ravel()  # noqa: E731
    x = X.ravel()
    cols = []
    for j in range(x.size):

        def central(step):
            e = np.zeros_like(x)
            e[j] = step
            return (fun(x + e) - fun(x - e)) / (2.0 * step)

        cols.append((4.0 * central(h / 2.0) - central(h)) / 3.0)
    return np.stack(cols, axis=1)


def matrix_flow(
    X0, t_eval, *, N, beta, grad_energy, rtol: float = 1e-9, atol: float = 1e-12, max_steps: int = 200_000
) -> np.ndarray:
    """Integrate :func:`matrix_velocity` from ``X0`` (``scipy.integrate.solve_ivp``, DOP853).

    Returns the matrices at ``t_eval`` (shape ``(T, d, d)``). Raises ``ValueError`` for bad input,
    when the integration fails or needs more than ``max_steps`` right-hand-side evaluations (no
    hang), and when ``grad_energy`` returns a non-finite or misshaped gradient.
    """
    X0, N, beta = _check_matrix_flow_args(X0, N, beta, grad_energy, name="X0")
    t_eval = check_array("t_eval", t_eval, ndim=1)
    if t_eval.size == 0 or np.any(t_eval < 0) or np.any(np.diff(t_eval) < 0) or not np.all(np.isfinite(t_eval)):
        raise ValueError("t_eval must be a non-empty, non-decreasing array of finite times >= 0")
    max_steps = check_int("max_steps", max_steps, minimum=1, maximum=10**8)
    shape = X0.shape
    calls = [0]

    def rhs(_t, v):
        calls[0] += 1
        if calls[0] > max_steps:
            raise ValueError(f"matrix_flow: more than max_steps={max_steps} evaluations; shorten the horizon")
        return _matrix_velocity(v.reshape(shape), N, beta, grad_energy).ravel()

    if t_eval[-1] == 0.0:
        return np.repeat(X0[None], t_eval.size, axis=0)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowing trial step is rejected, or reported below
        sol = integrate.solve_ivp(
            rhs, (0.0, float(t_eval[-1])), X0.ravel(), method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol
        )
    if not sol.success:
        raise ValueError(f"matrix_flow: integration failed ({sol.message})")
    return sol.y.T.reshape((t_eval.size,) + shape)


def train_factors(Ws, *, N, beta, step, steps, p=None, energy=None, record_every: int = 1) -> dict:
    """Gradient descent on the factors of ``F_β(W_N ⋯ W_1)``: ``W_k ← W_k − h ∇_{W_k} F_β``.

    ``∇_{W_k} F = (W_N⋯W_{k+1})ᵀ ∇_X F (W_{k−1}⋯W_1)ᵀ``. Started on the balanced manifold, small
    steps ``h`` follow the end-to-end flow ``Ẋ = −A_{N,X}(∇_X F)`` with time ``t = h × steps``; the
    singular values then follow the chamber flow of Lemma 2.5. The residual against the flow is
    ``O(h)``: the Euler discretisation error and the drift of balancedness (each step changes
    ``W_{k+1}ᵀW_{k+1} − W_kW_kᵀ`` by ``O(h²)``). Runs on :func:`symbreak.engine.run_ensemble`
    (one replica): Ctrl-C stops it, and a step too large for the landscape raises
    :class:`symbreak.engine.DivergenceError` instead of overflowing.

    Returns
    -------
    dict with ``times`` (``h × recorded steps``), ``sigma`` (recorded singular values, descending,
    shape (T, d)), ``balance`` (balance defect at the recorded steps), ``Ws`` (final factors) and
    ``X`` (final end-to-end matrix).

    Raises
    ------
    symbreak.engine.DivergenceError
        If the factors overflow (a weight above 1e12 or non-finite) or ``X`` becomes singular; the
        message names the step count and ``h``, ``N``, ``β``.
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
    grid = record_steps(steps, record_every) if steps else np.zeros(1, dtype=np.int64)
    model = _FactorModel(Ws, N, beta, energy, step)
    run = run_ensemble(
        lambda _reps, _streams: model,
        [Configuration(1, grid, {"step": step, "N": N, "beta": beta})],
        seed=0,
        record_names=("sigma", "balance"),
        final_names=tuple(f"W{k}" for k in range(N)),
        n_chunks=1,
        check_every=1,
        divergence_limit=_FACTOR_LIMIT,
        method="factor gradient descent",
        desc="factor gradient descent",
    )[0]
    Ws = [run.final[f"W{k}"][0] for k in range(N)]
    return {"times": grid * step, "sigma": run.sigma[0], "balance": run.balance[0], "Ws": Ws, "X": end_to_end(Ws)}


# ---------------------------------------------------------------------------------------------
# the d = 2 explorer: everything one view of the equilibrium page's explorer draws
# ---------------------------------------------------------------------------------------------

#: The explorer's slider box: depth, log10 of the inverse temperature, Schatten exponent.
EXPLORER_BOX = {"N": (2, 8), "log10_beta": (-1.5, 1.5), "p": (1.0, 4.0)}


def explorer_view(N, log10_beta, p, *, n_grid: int = 28, n_times: int = 120, starts=(0.1, 0.5, 1.5, 3.0)) -> dict:
    """Data of one view of the ``d = 2`` explorer: phase portrait, trajectories and the exact scale.

    For ``F_β = E_p − S_N/β`` with ``d = 2``: the vector field (1.10) on an ``n_grid × n_grid`` grid of
    the window ``[0, 2.6σ⋆]²``, four trajectories of :func:`singular_value_flow` up to
    ``t_end`` = the exact arrival time of the diagonal flow from the window's corners to
    ``|(σ/σ⋆)^p − 1| = e^{−2}`` plus ``8/|ρ_⊥|`` (``8/|ρ_1|`` when ``ρ_⊥ = 0``, i.e. ``N = 2``, ``p = 1``),
    and the exact solution on the diagonal (Theorem 1.7, :func:`schatten_scale`) from ``σ(0) = r σ⋆``
    for each ``r`` in ``starts``, up to the latest arrival plus ``6/|ρ_1|``, as ``σ(t)/σ⋆``.

    Parameters
    ----------
    N : int
        Depth, ``2 ≤ N ≤ 64``.
    log10_beta : float
        ``log10 β`` in ``[−6, 6]``.
    p : float
        Schatten exponent ``1 ≤ p ≤ 64``.
    n_grid, n_times : int
        Grid points per axis (4 to 200) and output times per curve (2 to 2000).
    starts : sequence of float
        Initial ``σ(0)/σ⋆`` of the exact curves, each in ``[1e-6, 1e6]``.

    Returns
    -------
    dict
        ``sigma_star``, ``rho1``, ``rho_perp``, ``lim`` (window size), ``grid`` (1-D), ``velocity``
        (``n_grid × n_grid × 2``, rows ``σ_2``, columns ``σ_1``), ``trajectory_starts`` (4 × 2),
        ``trajectories`` (4 × ``n_times`` × 2), ``t_end``, ``scale_times``, ``scale_starts`` and
        ``scale_curves`` (``len(starts)`` × ``n_times``).
    """
    N = check_int("N", N, minimum=2, maximum=64)
    log10_beta = check_real("log10_beta", log10_beta)
    if not -6.0 <= log10_beta <= 6.0:
        raise ValueError(f"log10_beta must be a number in [-6, 6], got {log10_beta!r}")
    p = _check_p(p)
    if p > 64:
        raise ValueError(f"p must lie in [1, 64] for the explorer, got {p!r}")
    n_grid = check_int("n_grid", n_grid, minimum=4, maximum=200)
    n_times = check_int("n_times", n_times, minimum=2, maximum=2000)
    starts = check_positive_array("starts", starts, ndim=1)
    if np.any(starts < 1e-6) or np.any(starts > 1e6):
        raise ValueError("starts must hold ratios sigma(0)/sigma_star in [1e-6, 1e6]")
    beta = 10.0**log10_beta
    s = schatten_sigma_star(p, N, 2, beta)
    rho1, rho_perp = relaxation_rates(p, N, 2, beta)
    lim = 2.6 * s
    grid = np.linspace(0.02 * s, lim, n_grid)
    pts = np.stack(np.meshgrid(grid, grid), axis=-1)
    velocity = flow_vector_field(pts, N=N, beta=beta, p=p)
    ss = s ** (1.0 / N)
    nu = N * p

    def arrival(r):
        # exact time (Theorem 1.7) for the diagonal flow from σ = rσ⋆ to |z − 1| = e^{−2}, z = (σ/σ⋆)^p
        target = ss * (1.0 + math.copysign(math.exp(-2.0), r - 1.0)) ** (1.0 / nu)
        start = ss * r ** (1.0 / N)
        return max(
            0.0,
            float(
                scale_time_function(target, p=p, N=N, d=2, beta=beta)
                - scale_time_function(start, p=p, N=N, d=2, beta=beta)
            ),
        )

    slow = rho_perp if rho_perp < -1e-9 * abs(rho1) else rho1
    traj_starts = np.array([(0.95, 0.02), (0.95, 0.8), (0.3, 0.05), (0.1, 0.08)]) * lim
    # arrival of the slowest start's scale (its geometric mean, the smallest one), then 8 slow e-folds
    t_end = max(arrival(0.02 * 2.6), arrival(0.95 * 2.6)) + 8.0 / abs(slow)
    tt = np.linspace(0.0, t_end, n_times)
    trajectories = _flow_batch(traj_starts, tt, N=N, beta=beta, energy=schatten_energy(p), rtol=1e-8, atol=1e-10)
    ts = np.linspace(0.0, max(arrival(r) for r in starts) + 6.0 / abs(rho1), n_times)
    curves = np.stack([(schatten_scale(ts, r ** (1.0 / N) * ss, p=p, N=N, d=2, beta=beta) / ss) ** N for r in starts])
    return {
        "sigma_star": s,
        "rho1": rho1,
        "rho_perp": rho_perp,
        "lim": lim,
        "grid": grid,
        "velocity": velocity,
        "trajectory_starts": traj_starts,
        "trajectories": trajectories,
        "times": tt,
        "t_end": t_end,
        "scale_times": ts,
        "scale_starts": starts,
        "scale_curves": curves,
    }


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


def equilibrium_spectrum(sigma0, *, N, beta, p, interaction: str = "dln", tol: float = 1e-12, max_iter: int = 200):
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
    return finite_result(
        "quarter_circle_density",
        np.where((x >= 0) & (x <= math.sqrt(a)), 2.0 * beta0 / math.pi * np.sqrt(np.clip(a - x**2, 0, None)), 0.0),
    )


# ---------------------------------------------------------------------------------------------
# referee additions: the pair-force asymmetry (Sec. 6.2), the scale-and-ratio reduction (Sec. 7.2),
# the mean-field functional (Sec. 8.3)
# ---------------------------------------------------------------------------------------------

__all__ += [
    "pair_force",
    "pair_force_asymmetry",
    "phi_pair",
    "scale_ratio_velocity",
    "mean_field_pair_matrix",
    "mean_field_free_energy",
]


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


__all__ += ["factor_gradients"]


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
