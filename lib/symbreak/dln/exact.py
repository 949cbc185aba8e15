"""The exact solution (P-Theorem 1.7): the scale's time function and its exact inversion (the scale
clock).

Pages: ``book/dln/equilibrium.md``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize, special

from ..validation import (
    check_array,
    check_positive,
    check_positive_array,
)
from ._common import _check_beta, _check_d, _check_depth, _check_p
from .equilibrium import schatten_sigma_star

__all__ = ["scale_time_function", "schatten_scale"]

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
