"""P-Theorem 1.9 for N > 2: the pair discriminant Δ_N without cancellation and its interval
certification.

Pages: ``book/dln/entropy.md``.
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import (
    check_array,
    check_int,
)
from ._common import _check_depth, _kappa
from ._special import _G1, _G2

__all__ = ["concavity_discriminant", "concavity_tail_start", "certify_concavity"]

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
    old_iv_prec = iv.prec  # mpmath.workdps sets mp's precision only: iv's is restored below
    try:
        with mpmath.workdps(dps):
            iv.dps = dps
            return _certify(N, max_intervals, iv, tail)
    finally:
        iv.prec = old_iv_prec


def _certify(N, max_intervals, iv, tail):
    """The interval bisection of :func:`certify_concavity`, at the interval precision already set."""
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
