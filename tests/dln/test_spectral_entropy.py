"""Tests of ``symbreak.dln.spectral_entropy`` (moved from test_dln.py, test_dln_matrix.py)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from symbreak import dln
from symbreak.rng import make_rng

from .helpers import FINITE_N, _chamber_point, _fd_gradient, _mp_entropy, _rel, _test_points, _torch_reference


@pytest.mark.parametrize("N", [2, 3, 7, 20])
@pytest.mark.parametrize("gap", [1e-1, 1e-4, 1e-8, 1e-12])
def test_entropy_matches_high_precision_quotient(N, gap):
    sigma = np.array([1.0 + gap, 1.0, 0.3 + 0.5 * gap, 0.3, 2.5])
    assert abs(dln.entropy(sigma, N) - _mp_entropy(sigma, N)) < 1e-13
    # the sinh form (used for N = inf) is an independent evaluation of the same function
    assert abs(dln._entropy_sinh_form(sigma, N) - _mp_entropy(sigma, N)) < 1e-13


def test_naive_quotient_cancels_but_entropy_does_not():
    sigma = np.array([1.0 + 1e-12, 1.0])
    ref = _mp_entropy(sigma, 3)
    assert abs(dln.naive_entropy(sigma, 3) - ref) > 1e-7
    assert abs(dln.entropy(sigma, 3) - ref) < 1e-15


@pytest.mark.parametrize("N", [2, 3, 5, np.inf])
def test_entropy_at_exact_ties_equals_the_limit_from_distinct_values(N):
    tied = np.array([1.7, 1.7, 0.4, 0.4, 0.4])
    s_tie = dln.entropy(tied, N)
    # closed form at the tie: each tied pair contributes ½ log(N σ^{2−2/N}) (½ log σ² at N = ∞)
    kappa = 1.0 if np.isinf(N) else 1 - 1 / N
    logn = 0.0 if np.isinf(N) else math.log(N)
    ell = np.log(tied)
    closed = 0.0
    for i in range(5):
        for j in range(i + 1, 5):
            if tied[i] == tied[j]:
                closed += 0.5 * (2 * kappa * ell[i] + logn)
            else:
                closed += dln.entropy(tied[[i, j]], N)
    assert abs(s_tie - closed) < 1e-13
    # the limit from distinct values: Richardson-extrapolate S(tie + ε v) to ε = 0
    v = np.array([0.3, -0.2, 0.5, 0.1, -0.4])
    for eps in (1e-5, 1e-6):  # Richardson removes O(ε); the O(ε²) remainder is < 1e-10
        s1, s2 = dln.entropy(tied + eps * v, N), dln.entropy(tied + 0.5 * eps * v, N)
        assert abs((2 * s2 - s1) - s_tie) < 1e-8
    assert abs(dln.entropy(tied + 1e-10 * v, N) - s_tie) < 1e-8
    if not np.isinf(N):  # and against 60-digit arithmetic at a distance 1e-12 from the tie
        assert abs(dln.entropy(tied + 1e-12 * v, N) - _mp_entropy(tied + 1e-12 * v, N)) < 1e-13


def test_entropy_trivial_cases():
    assert dln.entropy([0.5, 2.0, 3.0], 1) == 0.0
    assert dln.entropy([0.7], 4) == 0.0
    # N = 2, d = 2: S_2 = ½ log(σ1 + σ2)
    assert abs(dln.entropy([3.0, 0.5], 2) - 0.5 * math.log(3.5)) < 1e-15


def test_entropy_is_symmetric_in_the_order_of_sigma():
    sigma = make_rng(4).uniform(0.1, 3, 6)
    assert abs(dln.entropy(sigma, 4) - dln.entropy(sigma[::-1], 4)) < 1e-13


def test_s_infinity_is_the_limit_of_the_shifted_entropy():
    """S_N − ½ C(d,2) log N → S_∞, and N × (difference) → −½ (d−1) Σ log σ_i."""
    sigma = np.array([2.5, 1.0, 0.6, 0.2])
    d = sigma.size
    s_inf = dln.entropy(sigma, np.inf)
    # S_∞ against its literal quotient in high precision
    with mp.workdps(50):
        s = [mp.mpf(x) for x in sigma]
        ref = (
            sum(
                mp.log((s[i] ** 2 - s[j] ** 2) / (mp.log(s[i] ** 2) - mp.log(s[j] ** 2)))
                for i in range(d)
                for j in range(i + 1, d)
            )
            / 2
        )
    assert abs(s_inf - float(ref)) < 1e-13
    target = -0.5 * (d - 1) * np.log(sigma).sum()
    for N in (100, 1000, 10000):
        diff = dln.entropy(sigma, N) - 0.5 * d * (d - 1) / 2 * math.log(N) - s_inf
        assert abs(N * diff - target) < 2.0 / N * abs(target) + 1e-6


@pytest.mark.parametrize("N", FINITE_N + [np.inf])
@pytest.mark.parametrize("kind", ["distinct", "near", "tied"])
def test_gradient_against_finite_differences(N, kind):
    sigma = _test_points()[kind]
    g = dln.entropy_gradient(sigma, N)
    fd = _fd_gradient(lambda s: dln.entropy(s, N), sigma)
    if N == 1:
        assert np.all(g == 0.0)
    else:
        assert _rel(g, fd) < 1e-8


@pytest.mark.parametrize("N", [2, 3, 6])
@pytest.mark.parametrize("kind", ["distinct", "near", "tied"])
def test_gradient_and_hessian_against_autograd(N, kind):
    sigma = _test_points()[kind]
    val, grad, hess = dln.entropy_autograd(sigma, N)
    assert abs(val - dln.entropy(sigma, N)) < 1e-13
    assert _rel(dln.entropy_gradient(sigma, N), grad) < 1e-12
    assert _rel(dln.entropy_hessian(sigma, N), hess) < 1e-12


def test_gradient_and_hessian_against_independent_autograd():
    for N in (2, 4):
        for sigma in _test_points(seed=3).values():
            g, h = _torch_reference(sigma, N)
            assert _rel(dln.entropy_gradient(sigma, N), g) < 1e-12
            assert _rel(dln.entropy_hessian(sigma, N), h) < 1e-12


@pytest.mark.parametrize("N", [2, 3, 5, np.inf])
def test_gradient_at_ties_is_the_limit(N):
    """(3.10): each tied summand tends to (1 − 1/N)/(2σ); the gradient is continuous across ties."""
    tied = np.array([2.0, 1.0, 1.0, 1.0, 0.5])
    g = dln.entropy_gradient(tied, N)
    v = np.array([0.0, 1.0, -0.5, 0.3, 0.0])
    g_near = dln.entropy_gradient(tied + 1e-9 * v, N)
    assert _rel(g, g_near) < 1e-8
    kappa = 1.0 if np.isinf(N) else 1 - 1 / N
    # a point with all values tied: ∂S/∂σ_i = (d−1)(1 − 1/N)/(2σ)
    d, s = 6, 0.7
    assert _rel(dln.entropy_gradient(np.full(d, s), N), np.full(d, (d - 1) * kappa / (2 * s))) < 1e-14


def test_hessian_of_s_infinity_against_finite_differences():
    for sigma in _test_points(seed=5).values():
        h = dln.entropy_hessian(sigma, np.inf)
        fd = np.stack(
            [_fd_gradient(lambda s, i=i: dln.entropy_gradient(s, np.inf)[i], sigma) for i in range(sigma.size)]
        )
        assert _rel(h, fd) < 1e-8


@pytest.mark.parametrize("N", [2, 3])
def test_derivatives_for_widely_separated_singular_values(N):
    """Entry-wise relative accuracy when σ spans six decades (no cancellation far from ties either)."""
    sig = [mp.mpf(1000), mp.mpf(3), mp.mpf("0.5"), mp.mpf("0.001")]
    d = len(sig)

    def f(*x):
        return (
            sum(
                mp.log((x[i] ** 2 - x[j] ** 2) / (x[i] ** (mp.mpf(2) / N) - x[j] ** (mp.mpf(2) / N)))
                for i in range(d)
                for j in range(i + 1, d)
            )
            / 2
        )

    with mp.workdps(40):
        grad = np.array([float(mp.diff(f, sig, tuple(int(k == i) for k in range(d)))) for i in range(d)])
        hess = np.array(
            [
                [
                    float(mp.diff(f, sig, tuple((2 if i == j else 1) if k in (i, j) else 0 for k in range(d))))
                    for j in range(d)
                ]
                for i in range(d)
            ]
        )
    s = np.array([float(x) for x in sig])
    assert np.max(np.abs(dln.entropy_gradient(s, N) / grad - 1)) < 1e-12
    assert np.max(np.abs(dln.entropy_hessian(s, N) / hess - 1)) < 1e-10


@pytest.mark.parametrize("N", [2, 3, 4, 10, np.inf])
def test_pair_kernels_at_ties_and_against_their_quotient_forms(N):
    a = np.array([1.3])
    p, q = dln.pair_kernels(a, a, N)
    inv_n2 = 0.0 if np.isinf(N) else 1 / N**2
    inv_n = 0.0 if np.isinf(N) else 1 / N
    p_star = -(1 - inv_n2) / (6 * a**2)
    q_star = -(1 - 1.5 * inv_n + 0.5 * inv_n2) / (3 * a**2)
    assert _rel(p, p_star) < 1e-13 and _rel(q, q_star) < 1e-13
    if not np.isinf(N):  # the quotient forms (4.9)-(4.10) far from the tie
        x, y = 2.0, 0.7
        pq = (
            2 * x * y / (x**2 - y**2) ** 2
            - 2 * x ** (2 / N - 1) * y ** (2 / N - 1) / (N * (x ** (2 / N) - y ** (2 / N))) ** 2
        )
        qq = (
            -(x**2 + y**2) / (x**2 - y**2) ** 2
            + x ** (2 / N - 2)
            * (N * (x ** (2 / N) - y ** (2 / N)) + 2 * y ** (2 / N))
            / (N * (x ** (2 / N) - y ** (2 / N))) ** 2
        )
        p2, q2 = dln.pair_kernels(x, y, N)
        assert abs(p2 - pq) < 1e-13 and abs(q2 - qq) < 1e-13
        # and negativity (Lemma 4.3), on a grid of ratios, not one point
        ratios = np.exp(np.linspace(-6.0, 6.0, 121))
        P, Q = dln.pair_kernels(ratios, 1.0, N)
        assert np.all(P < 0) and np.all(Q < 0) and np.all(dln.pair_kernels(1.0, ratios, N)[1] < 0)
        assert p2 < 0 and q2 < 0 and dln.pair_kernels(y, x, N)[1] < 0


@pytest.mark.parametrize("N, d", [(2, 3), (2, 5), (3, 2), (3, 5), (5, 4), (np.inf, 3)])
def test_euclidean_hessian_is_negative_definite(N, d):
    rng = make_rng(11)
    for _ in range(30):
        sigma = _chamber_point(rng, d, 0.05, 5.0)
        ev = np.linalg.eigvalsh(dln.entropy_hessian(sigma, N))
        assert ev.max() < 0
        assert ev.max() < -1e-8 * abs(ev.min())


def test_euclidean_hessian_has_rank_one_for_n2_d2():
    rng = make_rng(12)
    for _ in range(30):
        sigma = _chamber_point(rng, 2, 0.05, 5.0)
        h = dln.entropy_hessian(sigma, 2)
        ev = np.linalg.eigvalsh(h)
        assert ev[0] < 0 and abs(ev[1]) < 1e-12 * abs(ev[0])
        gamma = 1 / (2 * (sigma.sum()) ** 2)  # B_2 = −γ (1 1; 1 1)
        assert _rel(h, -gamma * np.ones((2, 2))) < 1e-10
        assert np.abs(h @ np.array([1.0, -1.0])).max() < 1e-12 * gamma


@pytest.mark.parametrize("N, d", [(2, 2), (2, 4), (3, 3), (4, 6), (10, 5)])
def test_riemannian_hessian_at_equal_values_is_indefinite(N, d):
    s = 0.8
    h = dln.riemannian_entropy_hessian(np.full(d, s), N)
    ev = np.linalg.eigvalsh(h)
    theta1 = -(d - 1) * (1 - 1 / N) / (2 * N * s**2)
    theta_perp = (1 - 1 / N) * (d * (1 - 2 / N) + 3 / N) / (6 * s**2)
    assert abs(ev[0] - theta1) < 1e-12 and theta1 < 0
    assert np.allclose(ev[1:], theta_perp, rtol=1e-12, atol=0) and theta_perp > 0
    # the eigenvector of the negative eigenvalue is (1, ..., 1)
    assert _rel(h @ np.ones(d), theta1 * np.ones(d)) < 1e-12


def test_riemannian_hessian_is_the_flat_hessian_in_lambda():
    """In λ = σ^{1/N} the metric is N Σ dλ² (flat), so ∇²_g S = Jᵀ (∂²S/∂λ²) J with J = dλ/dσ."""
    import torch

    rng = make_rng(13)
    for N in (2, 3, 5):
        for sigma in (_chamber_point(rng, 4), np.array([1.5, 1.0, 1.0, 0.3])):
            d = sigma.size

            def s_of_lambda(lam, N=N, d=d):
                lam2 = lam**2
                return sum(
                    0.5 * torch.log(sum(lam2[i] ** (N - 1 - m) * lam2[j] ** m for m in range(N)))
                    for i in range(d)
                    for j in range(i + 1, d)
                )

            lam = torch.tensor(sigma ** (1 / N), dtype=torch.float64)
            h_lam = torch.autograd.functional.hessian(s_of_lambda, lam).numpy()
            jac = np.diag(sigma ** (1 / N - 1) / N)
            assert _rel(dln.riemannian_entropy_hessian(sigma, N), jac.T @ h_lam @ jac) < 1e-8


def test_bad_inputs_raise_value_errors_naming_the_parameter():
    ok = np.array([2.0, 1.0])
    for bad in ([1.0, 0.0], [1.0, -2.0], [1.0, np.nan], []):
        for fn in (dln.entropy, dln.entropy_gradient, dln.entropy_hessian, dln.riemannian_entropy_hessian):
            with pytest.raises(ValueError, match=r"^sigma\b"):
                fn(bad, 3)
    for bad_n in (0, -1, 2.5, "3", np.nan):
        with pytest.raises(ValueError, match=r"^N\b"):
            dln.entropy(ok, bad_n)
        with pytest.raises(ValueError, match=r"^N\b"):
            dln.entropy_gradient(ok, bad_n)
        for fn in (dln.entropy_hessian, dln.riemannian_entropy_hessian):
            with pytest.raises(ValueError, match=r"^N\b"):
                fn(ok, bad_n)
        with pytest.raises(ValueError, match=r"^N\b"):
            dln.singular_value_flow(ok, [0.0, 1.0], N=bad_n, beta=1.0, p=2.0)
        with pytest.raises(ValueError, match=r"^N\b"):
            dln.relaxation_rates(2.0, bad_n, 3, 1.0)
    with pytest.raises(ValueError, match=r"^N\b"):
        dln.schatten_sigma_star(2.0, 1, 3, 1.0)  # N = 1: no entropy, no positive equilibrium
    for bad_beta in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match=r"^beta\b"):
            dln.schatten_sigma_star(2.0, 3, 3, bad_beta)
        with pytest.raises(ValueError, match=r"^beta\b"):
            dln.relaxation_rates(2.0, 3, 3, bad_beta)
        with pytest.raises(ValueError, match=r"^beta\b"):
            dln.singular_value_flow(ok, [0.0, 1.0], N=3, beta=bad_beta, p=2.0)
    for bad_p in (0.5, 0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match=r"^p\b"):
            dln.schatten_sigma_star(bad_p, 3, 3, 1.0)
        with pytest.raises(ValueError, match=r"^p\b"):
            dln.schatten_scale([1.0], 0.5, p=bad_p, N=3, d=3, beta=1.0)
        with pytest.raises(ValueError, match=r"^p\b"):
            dln.relaxation_rates(bad_p, 3, 3, 1.0)
        with pytest.raises(ValueError, match=r"^p\b"):
            dln.singular_value_flow(ok, [0.0, 1.0], N=3, beta=1.0, p=bad_p)
    for bad_d in (1, 0, 2.5):
        with pytest.raises(ValueError, match=r"^d\b"):
            dln.schatten_sigma_star(2.0, 3, bad_d, 1.0)
        with pytest.raises(ValueError, match=r"^d\b"):
            dln.relaxation_rates(2.0, 3, bad_d, 1.0)
        with pytest.raises(ValueError, match=r"^d\b"):
            dln.schatten_scale([1.0], 0.5, p=2.0, N=3, d=bad_d, beta=1.0)
    with pytest.raises(ValueError, match=r"^s0\b"):
        dln.schatten_scale([1.0], 0.0, p=2.0, N=3, d=3, beta=1.0)
    with pytest.raises(ValueError, match=r"^t\b"):
        dln.schatten_scale([-1.0], 0.5, p=2.0, N=3, d=3, beta=1.0)
    with pytest.raises(ValueError, match=r"^sigma0\b"):
        dln.singular_value_flow([1.0, -1.0], [0.0, 1.0], N=3, beta=1.0, p=2.0)
    with pytest.raises(ValueError, match="p.*energy"):
        dln.singular_value_flow(ok, [0.0, 1.0], N=3, beta=1.0)
    with pytest.raises(ValueError, match=r"^t_eval\b"):
        dln.singular_value_flow(ok, [1.0, 0.5], N=3, beta=1.0, p=2.0)


def test_entropic_completion_is_unbounded_below():
    rng = make_rng(2)
    X = rng.standard_normal((3, 3))
    Z = np.zeros((3, 3))
    Z[0, 2] = 1.0
    S = [dln.entropy(np.linalg.svd(X + t * Z, compute_uv=False), 3) for t in (1e6, 1e7)]  # correction ~ t^(-2/N)
    assert (S[1] - S[0]) / math.log(10) == pytest.approx(2 * (1 - 1 / 3), rel=1e-4)
