"""Tie-safe elementary functions of the entropy: c(x) = coth x − 1/x, e(x) = csch² x − 1/x², L(x) =
log(sinh x / x), by series near 0.

No page calls this module directly; it serves the package's other modules.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from ._common import _kappa

__all__ = []

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
