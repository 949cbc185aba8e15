"""Theorem 1.7: ``dln.schatten_scale`` against an independent 60-digit reference over the whole box
``s0/s⋆ ∈ [1e-12, 1e6]``, ``ν = Np ∈ [2, 64]``, both sides of ``s⋆``, every time.

The reference does not invert anything: for a start ``s0`` and a target scale ``s`` between ``s0`` and
``s⋆`` it computes the time ``t(s) = T(s) − T(s0)`` with mpmath's own ``hyp2f1`` (the paper's (1.27)
below ``s⋆``, the principal-value form ``π cot(πa) + z^{a−1}/(1−a) + z^{a−2}/(2−a) ₂F₁(1, 2−a; 3−a; 1/z)``
above), and the library must return ``s`` at that time.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from symbreak import dln
from symbreak.rng import make_rng

RTOL = 1e-12


def _reference_time(s, s0, p, N, d, beta):
    """``t`` with ``s(t) = s`` from ``s(0) = s0`` (mpmath, 60 digits); ``s``, ``s0`` mpf."""
    nu = mp.mpf(N) * mp.mpf(p)
    sstar = (mp.mpf(d - 1) * (1 - mp.mpf(1) / N) / (2 * mp.mpf(beta))) ** (1 / (mp.mpf(p) * N))
    a = 2 / nu

    def phi(sv):
        z = (sv / sstar) ** nu
        if z < 1:
            return z**a / a * mp.hyp2f1(1, a, 1 + a, z)
        if nu == 2:
            return -mp.log(z - 1)
        return (
            mp.pi * mp.cot(mp.pi * a)
            + z ** (a - 1) / (1 - a)
            + z ** (a - 2) / (2 - a) * mp.hyp2f1(1, 2 - a, 3 - a, 1 / z)
        )

    return sstar ** (2 - nu) / nu * (phi(s) - phi(s0)), sstar


def _check(p, N, d, beta, ratio0, q):
    """Start at ``ratio0·s⋆`` (rounded to a double), target ``s⋆·ratio0^{1−q}`` (``q ∈ (0, 1)``)."""
    with mp.workdps(60):
        _, sstar = _reference_time(mp.mpf(1), mp.mpf(1), p, N, d, beta)
        s0 = mp.mpf(float(sstar * mp.mpf(ratio0)))
        s = sstar * mp.exp(mp.log(mp.mpf(ratio0)) * (1 - mp.mpf(q)))
        t, _ = _reference_time(s, s0, p, N, d, beta)
    t = float(t)
    if not t > 1e-300:  # the time itself underflows a double (e.g. 1e-9 of the way down from 1e6 s⋆ at ν=64)
        return None
    got = dln.schatten_scale([0.0, t], float(s0), p=p, N=N, d=d, beta=beta)
    assert got[0] == float(s0)
    return abs(got[1] / float(s) - 1)


# (p, N, d, beta): ν = Np from 2 to 64, integer and not
PARAMS = [
    (1.0, 2, 3, 0.5),
    (1.25, 2, 3, 1.0),
    (1.0, 3, 2, 2.0),
    (2.0, 3, 4, 1.0),
    (4.0, 8, 3, 5.0),
    (3.0, 8, 2, 10**-1.5),
    (8.0, 8, 2, 0.1),
    (32.0, 2, 5, 3.0),
    (4.0, 16, 3, 1.0),
]
RATIOS = [1e-12, 1e-3, 0.2, 0.6, 1 - 1e-7, 1 + 1e-7, 1.3, 3.0, 1e6]
QS = [1e-9, 0.3, 0.9, 1 - 1e-10]


@pytest.mark.parametrize("p, N, d, beta", PARAMS)
def test_schatten_scale_on_a_sparse_grid_of_starts_and_times(p, N, d, beta):
    errs = [e for e in (_check(p, N, d, beta, r, q) for r in RATIOS for q in QS) if e is not None]
    assert len(errs) >= 0.8 * len(RATIOS) * len(QS)
    assert max(errs) < RTOL, max(errs)


def test_schatten_scale_at_random_points_of_the_box():
    rng = make_rng(1234)
    errs = []
    for _ in range(60):
        N = int(rng.integers(2, 17))
        p = float(rng.uniform(1.0, 64.0 / N))
        d = int(rng.integers(2, 9))
        beta = float(10 ** rng.uniform(-1.5, 1.5))
        ratio = float(10 ** rng.uniform(-12, 6))
        q = float(rng.uniform(0, 1))
        errs.append(_check(p, N, d, beta, ratio, q))
    errs = [e for e in errs if e is not None]
    assert len(errs) >= 40  # the rest: times below 1e-300
    assert max(errs) < RTOL, max(errs)


def test_schatten_scale_at_the_issue_reproducers():
    """The starts that raised or were 6% off before (p=2, N=3, d=4, β=1 and p=4, N=8, d=3, β=5)."""
    for p, N, d, beta in ((2.0, 3, 4, 1.0), (4.0, 8, 3, 5.0)):
        for r in (1e-3, 0.01, 0.2):
            assert _check(p, N, d, beta, r, 0.5) < RTOL


def test_schatten_scale_long_times_reach_s_star_and_monotone():
    p, N, d, beta = 4.0, 8, 3, 5.0
    ss = dln.schatten_sigma_star(p, N, d, beta) ** (1 / N)
    t = np.concatenate([[0.0], np.logspace(-30, 6, 200)])
    for r in (1e-12, 0.5, 2.0, 1e6):
        s = dln.schatten_scale(t, r * ss, p=p, N=N, d=d, beta=beta)
        assert np.all(np.isfinite(s))
        steps = np.diff(s) * (1 if r < 1 else -1)
        assert np.all(steps >= -4e-16 * ss)  # monotone up to rounding
        assert s[-1] == pytest.approx(ss, rel=1e-15)
    assert np.all(dln.schatten_scale(t, ss, p=p, N=N, d=d, beta=beta) == ss)


@pytest.mark.parametrize("bad_t", [[-1.0], [np.nan], [np.inf]])
def test_schatten_scale_rejects_bad_times(bad_t):
    with pytest.raises(ValueError, match="t"):
        dln.schatten_scale(bad_t, 0.5, p=2.0, N=3, d=3, beta=1.0)


@pytest.mark.parametrize("bad_s0", [0.0, -1.0, np.inf, np.nan])
def test_schatten_scale_rejects_bad_starts(bad_s0):
    with pytest.raises(ValueError, match="s0"):
        dln.schatten_scale([1.0], bad_s0, p=2.0, N=3, d=3, beta=1.0)


@pytest.mark.parametrize("a", [0.03, 0.1, 1 / 3, 0.5, 0.9])
def test_clock_series_near_one_matches_a_high_precision_sum(a):
    """R_a(1 − x) − R_a(1) = −Σ_k ((1−a)_k/k!) x^k/k by Horner on cached coefficients, |x| ≤ 1/2,
    against the same series summed in 40-digit arithmetic."""
    for x in [-0.5, -0.31, -1e-3, -1e-300, 1e-300, 1e-8, 0.2, 0.4999, 0.5]:
        with mp.workdps(40):
            ref = -mp.nsum(lambda k: mp.rf(1 - a, k) / mp.factorial(k) * mp.mpf(x) ** k / k, [1, mp.inf])
        got = dln._R_near_one(a, x)
        assert abs(got - float(ref)) <= 4e-16 * abs(float(ref)), (a, x, got, float(ref))
    assert dln._R_near_one(a, 0.0) == 0.0
