"""Helpers shared by the tests of ``symbreak.dln`` (moved from the old test files)."""

from __future__ import annotations

import itertools

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate

from symbreak import dln
from symbreak.rng import make_rng

FINITE_N = [1, 2, 3, 6]


def _chamber_point(rng, d, lo=0.2, hi=3.0):
    return np.sort(rng.uniform(lo, hi, d))[::-1].copy()


def _test_points(d=5, seed=0):
    """Distinct, nearly tied (1e-7 apart, relative) and exactly tied chamber points."""
    rng = make_rng(seed)
    distinct = _chamber_point(rng, d)
    near = np.array([2.0, 1.0 + 1e-7, 1.0, 0.5, 0.5 * (1 - 1e-9)])[:d]
    tied = np.array([2.0, 1.0, 1.0, 1.0, 0.5])[:d]
    return {"distinct": distinct, "near": near, "tied": tied}


def _mp_entropy(sigma, N, dps=60):
    """``S_N`` by the literal quotient in 60-digit arithmetic (distinct values only)."""
    with mp.workdps(dps):
        s = [mp.mpf(float(x)) for x in sigma]
        tot = mp.mpf(0)
        for i in range(len(s)):
            for j in range(i + 1, len(s)):
                tot += mp.log((s[i] ** 2 - s[j] ** 2) / (s[i] ** (mp.mpf(2) / N) - s[j] ** (mp.mpf(2) / N)))
        return float(tot / 2)


def _fd_gradient(fun, x, h=1e-3):
    """Five-point central differences (error O(h^4))."""
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h * x[i]
        g[i] = (-fun(x + 2 * e) + 8 * fun(x + e) - 8 * fun(x - e) + fun(x - 2 * e)) / (12 * e[i])
    return g


def _rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))


def _torch_reference(sigma, N):
    """An independent autograd reference written here (not the library's), λ-polynomial form."""
    import torch

    d = sigma.size

    def fn(s):
        lam2 = s ** (2.0 / N)
        tot = 0.0
        for i in range(d):
            for j in range(i + 1, d):
                tot = tot + 0.5 * torch.log(sum(lam2[i] ** (N - 1 - m) * lam2[j] ** m for m in range(N)))
        return tot

    s = torch.tensor(sigma, dtype=torch.float64)
    return (torch.autograd.functional.jacobian(fn, s).numpy(), torch.autograd.functional.hessian(fn, s).numpy())


CASES = [(2.0, 3, 4, 1.0), (1.0, 2, 3, 0.5), (1.5, 4, 5, 0.3), (3.0, 2, 2, 2.0), (2.0, 5, 8, 4.0)]


def _scale_ode(t, s0, p, N, d, beta):
    nu = N * p
    ss = dln.schatten_sigma_star(p, N, d, beta) ** (1 / N)
    sol = integrate.solve_ivp(
        lambda _t, s: -(s ** (nu - 1)) + ss**nu / s, (0, t[-1]), [s0], method="DOP853", rtol=1e-13, atol=1e-16, t_eval=t
    )
    return sol.y[0]


BOX = dln.EXPLORER_BOX


CORNERS = list(itertools.product(BOX["N"], BOX["log10_beta"], BOX["p"]))


GRID = [
    v
    for v in itertools.product((2, 3, 5, 6, 8), (-0.5, 0.5), (1.0, 2.25, 3.0, 4.0))
    if v[0] in (3, 6) or v[2] in (2.25, 3.0)
]


def _check_view(N, lb, p, n_grid=8, n_times=40, compare_flow=True):
    v = dln.explorer_view(N, lb, p, n_grid=n_grid, n_times=n_times)
    beta = 10.0**lb
    s = v["sigma_star"]
    assert s == pytest.approx(dln.schatten_sigma_star(p, N, 2, beta), rel=1e-15)
    for key in ("velocity", "trajectories", "scale_curves", "scale_times", "times"):
        assert np.all(np.isfinite(v[key])), key
    pts = np.stack(np.meshgrid(v["grid"], v["grid"]), axis=-1)
    assert np.array_equal(v["velocity"], dln.flow_vector_field(pts, N=N, beta=beta, p=p))
    ends = v["trajectories"][:, -1, :]
    if (N, p) == (2, 1.0):  # a line of equilibria σ1 + σ2 = 2σ⋆ (rho_perp = 0)
        assert v["rho_perp"] == pytest.approx(0.0, abs=1e-12 * abs(v["rho1"]))
        assert np.max(np.abs(ends.sum(axis=1) / (2 * s) - 1)) < 1e-3
    else:
        assert np.max(np.abs(ends / s - 1)) < 0.05
    curves = v["scale_curves"]
    assert np.allclose(curves[:, 0], v["scale_starts"], rtol=1e-14)
    assert np.max(np.abs(curves[:, -1] - 1)) < 1e-2
    if not compare_flow:
        return v
    # the exact curves are the d = 2 flow on the diagonal
    t = v["scale_times"][:: max(1, n_times // 5)]
    for r, curve in zip(v["scale_starts"], curves):
        flow = dln.singular_value_flow(np.full(2, r * s), t, N=N, beta=beta, p=p, rtol=1e-12, atol=1e-14)
        assert np.max(np.abs(flow[:, 0] / s - curve[:: max(1, n_times // 5)]) / curve[:: max(1, n_times // 5)]) < 1e-8
    return v


def _r_mp(a, b, N):
    a, b = mp.mpf(a), mp.mpf(b)
    return a / (a**2 - b**2) - a ** (mp.mpf(2) / N - 1) / (N * (a ** (mp.mpf(2) / N) - b ** (mp.mpf(2) / N)))


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
