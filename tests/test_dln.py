"""symbreak.dln: the entropy of the deep linear network, its flow, equilibria, rates, exact solution.

Every test compares a computed number with an independent reference (high-precision arithmetic,
autograd, finite differences, a tight ODE solve, a trained matrix network) at a stated tolerance.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, special

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


# ------------------------------------------------------------------------------------------------
# entropy
# ------------------------------------------------------------------------------------------------


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


def test_entropy_equals_quarter_log_determinant_of_A():
    """S_N = ¼ log det A_{N,X} − ¼ Σ_k log(N σ_k^{2−2/N}): the pair terms are A's off-diagonal eigenvalues."""
    rng = make_rng(7)
    for N in (2, 3, 5):
        X = rng.standard_normal((4, 4))
        s = np.linalg.svd(X, compute_uv=False)
        _, logdet = np.linalg.slogdet(dln.A_matrix(X, N))
        rhs = 0.25 * logdet - 0.25 * np.sum(np.log(N * s ** (2 - 2 / N)))
        assert abs(dln.entropy(s, N) - rhs) < 1e-10


# ------------------------------------------------------------------------------------------------
# gradient and Hessian
# ------------------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------------------
# concavity (Theorems 1.9 and 1.10)
# ------------------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------------------
# equilibrium and rates (Theorems 1.2 and 1.3)
# ------------------------------------------------------------------------------------------------

CASES = [(2.0, 3, 4, 1.0), (1.0, 2, 3, 0.5), (1.5, 4, 5, 0.3), (3.0, 2, 2, 2.0), (2.0, 5, 8, 4.0)]


@pytest.mark.parametrize("p, N, d, beta", CASES)
def test_sigma_star_solves_the_balance_equation(p, N, d, beta):
    s = dln.schatten_sigma_star(p, N, d, beta)
    # (1.12): g'(d f) f'(σ⋆) = (d − 1)(1 − 1/N)/(2βσ⋆) with g' = 1, f' = σ^{p−1}
    assert abs(s ** (p - 1) - (d - 1) * (1 - 1 / N) / (2 * beta * s)) < 1e-13 * s ** (p - 1)
    # σ⋆(1,…,1) is a critical point of F_β
    grad_f = np.full(d, s ** (p - 1)) - dln.entropy_gradient(np.full(d, s), N) / beta
    assert np.abs(grad_f).max() < 1e-13 * s ** (p - 1)
    assert abs(dln.sigma_star(dln.schatten_energy(p), N, d, beta) - s) < 1e-13 * s


@pytest.mark.parametrize("p, N, d, beta", CASES)
def test_flows_from_random_starts_reach_sigma_star(p, N, d, beta):
    s = dln.schatten_sigma_star(p, N, d, beta)
    rho1, rho_perp = dln.relaxation_rates(p, N, d, beta)
    t_end = 30.0 / min(abs(rho1), abs(rho_perp))
    rng = make_rng(21)
    for _ in range(6):
        sigma0 = s * np.exp(rng.uniform(-2.0, 1.5, d))
        out = dln.singular_value_flow(sigma0, [0.0, t_end], N=N, beta=beta, p=p)
        assert np.max(np.abs(out[-1] / s - 1)) < 1e-6
        # the order of the initial values is kept (hyperplanes σ_i = σ_j are invariant)
        mid = dln.singular_value_flow(sigma0, [0.0, 0.1 * t_end], N=N, beta=beta, p=p)[-1]
        assert np.array_equal(np.argsort(mid), np.argsort(sigma0))


@pytest.mark.parametrize("p, N, d, beta", CASES)
def test_rates_against_the_numerical_jacobian(p, N, d, beta):
    s = dln.schatten_sigma_star(p, N, d, beta)
    rho1, rho_perp = dln.relaxation_rates(p, N, d, beta)
    jac = dln.numerical_jacobian(lambda x: dln.flow_vector_field(x, N=N, beta=beta, p=p), np.full(d, s))
    ev = np.linalg.eigvals(jac)
    assert np.max(np.abs(ev.imag)) < 1e-8 * abs(rho1)
    ev = np.sort(ev.real)
    expected = np.sort([rho1] + [rho_perp] * (d - 1))
    assert _rel(ev, expected) < 1e-9
    # eigenvectors: J·1 = ρ_1·1
    assert _rel(jac @ np.ones(d), rho1 * np.ones(d)) < 1e-9
    # ρ_1 = −N p σ⋆^{p−2/N} for the Schatten energy
    assert abs(rho1 + N * p * s ** (p - 2 / N)) < 1e-12 * abs(rho1)
    # analytic Jacobian of the flow agrees too, and its eigenvalues are the rates to 1e-11
    jac_a = dln.flow_jacobian(np.full(d, s), N=N, beta=beta, p=p)
    assert _rel(jac_a, jac) < 1e-9
    assert _rel(np.sort(np.linalg.eigvalsh(0.5 * (jac_a + jac_a.T))), expected) < 1e-11


def test_rates_for_a_general_spectral_energy():
    """g(x) = x + x²/2 couples the singular values (h_2 ≠ 0): Theorem 1.3 with θ_1 ≠ θ_⊥."""
    base = dln.schatten_energy(2.0)
    energy = dln.SpectralEnergy(
        f=base.f,
        df=base.df,
        d2f=base.d2f,
        g=lambda x: x + 0.5 * x**2,
        dg=lambda x: 1.0 + x,
        d2g=lambda x: np.ones_like(x),
    )
    N, d, beta = 3, 4, 2.0
    s = dln.sigma_star(energy, N, d, beta)
    assert abs((1 + d * s**2 / 2) * s - (d - 1) * (1 - 1 / N) / (2 * beta * s)) < 1e-12
    rho1, rho_perp = dln.relaxation_rates_general(energy, N, d, beta)
    jac = dln.numerical_jacobian(lambda x: dln.flow_vector_field(x, N=N, beta=beta, energy=energy), np.full(d, s))
    ev = np.sort(np.linalg.eigvals(jac).real)
    assert _rel(ev, np.sort([rho1] + [rho_perp] * (d - 1))) < 1e-6


def test_measured_decay_of_uniform_and_relative_modes():
    p, N, d, beta = 2.0, 3, 4, 1.0
    s = dln.schatten_sigma_star(p, N, d, beta)
    rho1, rho_perp = dln.relaxation_rates(p, N, d, beta)
    t = np.linspace(0.5, 2.5, 9)
    for v, rho in ((np.ones(d), rho1), (np.array([1.0, -1.0, 0.5, -0.5]), rho_perp)):
        out = dln.singular_value_flow(
            s * (1 + 1e-5 * v), np.concatenate([[0.0], t]), N=N, beta=beta, p=p, rtol=1e-13, atol=1e-15
        )[1:]
        amp = (out - s) @ v / (v @ v)
        slope = np.polyfit(t, np.log(np.abs(amp)), 1)[0]
        assert abs(slope / rho - 1) < 1e-3


# ------------------------------------------------------------------------------------------------
# the exact solution (Theorem 1.7)
# ------------------------------------------------------------------------------------------------


def _scale_ode(t, s0, p, N, d, beta):
    nu = N * p
    ss = dln.schatten_sigma_star(p, N, d, beta) ** (1 / N)
    sol = integrate.solve_ivp(
        lambda _t, s: -(s ** (nu - 1)) + ss**nu / s, (0, t[-1]), [s0], method="DOP853", rtol=1e-13, atol=1e-16, t_eval=t
    )
    return sol.y[0]


@pytest.mark.parametrize("p, N, d, beta", CASES + [(1.0, 5, 10, 0.05)])
@pytest.mark.parametrize("ratio", [0.05, 0.7, 1.0, 1.3, 4.0])
def test_exact_solution_against_solve_ivp(p, N, d, beta, ratio):
    ss = dln.schatten_sigma_star(p, N, d, beta) ** (1 / N)
    t = np.linspace(0.0, 6.0, 61)
    exact = dln.schatten_scale(t, ratio * ss, p=p, N=N, d=d, beta=beta)
    assert exact[0] == ratio * ss
    # the test tolerance is 1e-8; the public API promises 1e-10 relative against a tight ODE
    # solve (DOP853, rtol 1e-13), so assert that (measured worst case over these cases: ~1e-11)
    assert np.max(np.abs(exact / _scale_ode(t, ratio * ss, p, N, d, beta) - 1)) < 1e-10


def test_exact_solution_for_nu_equal_two_has_a_closed_form():
    """ν = Np = 2 (N = 2, p = 1): d(s²)/dt = 2(s⋆² − s²), so s² = s⋆² + (s0² − s⋆²) e^{−2t}."""
    p, N, d, beta = 1.0, 2, 3, 0.5
    ss = dln.schatten_sigma_star(p, N, d, beta) ** (1 / N)
    t = np.linspace(0, 10, 41)
    for s0 in (0.1 * ss, 3 * ss):
        closed = np.sqrt(ss**2 + (s0**2 - ss**2) * np.exp(-2 * t))
        assert _rel(dln.schatten_scale(t, s0, p=p, N=N, d=d, beta=beta), closed) < 1e-12


def test_time_function_is_the_papers_formula_below_and_the_principal_value_above():
    p, N, d, beta = 2.0, 3, 4, 0.7
    nu, a = N * p, 2 / (N * p)
    ss = dln.schatten_sigma_star(p, N, d, beta) ** (1 / N)
    for s in (0.1 * ss, 0.5 * ss, 0.999 * ss):
        paper = s**2 / (2 * ss**nu) * special.hyp2f1(1, a, 1 + a, (s / ss) ** nu)
        assert abs(dln.scale_time_function(s, p=p, N=N, d=d, beta=beta) - paper) < 1e-12 * paper
    for s in (1.05 * ss, 1.5 * ss, 3 * ss):
        z = (s / ss) ** nu
        # principal value of ∫_0^z v^{a−1}/(1 − v) dv by quadrature with a Cauchy weight
        head = integrate.quad(lambda w: 1 / (a * (1 - w ** (1 / a))), 0, 0.5**a, epsabs=1e-14, epsrel=1e-13)[0]
        pv = -integrate.quad(lambda v: v ** (a - 1), 0.5, z, weight="cauchy", wvar=1.0, epsabs=1e-14, epsrel=1e-13)[0]
        ref = ss ** (2 - nu) / nu * (head + pv)
        closed = (
            ss ** (2 - nu)
            / nu
            * (
                math.pi / math.tan(math.pi * a)
                + z ** (a - 1) / (1 - a)
                + z ** (a - 2) / (2 - a) * special.hyp2f1(1, 2 - a, 3 - a, 1 / z)
            )
        )
        got = dln.scale_time_function(s, p=p, N=N, d=d, beta=beta)
        assert abs(got - ref) < 1e-9 * abs(ref)
        assert abs(got - closed) < 1e-12 * abs(closed)


def test_exact_solution_is_the_flow_on_the_diagonal():
    """σ_i = s^N on the invariant set of equal singular values (d-dimensional flow, Lemma 7.3)."""
    p, N, d, beta = 2.0, 3, 5, 0.4
    ss = dln.schatten_sigma_star(p, N, d, beta) ** (1 / N)
    t = np.linspace(0, 4, 21)
    for s0 in (0.3 * ss, 2.0 * ss):
        flow = dln.singular_value_flow(np.full(d, s0**N), t, N=N, beta=beta, p=p, rtol=1e-12, atol=1e-14)
        exact = dln.schatten_scale(t, s0, p=p, N=N, d=d, beta=beta) ** N
        assert np.max(np.abs(flow - exact[:, None]) / exact[:, None]) < 1e-9


# ------------------------------------------------------------------------------------------------
# matrices: A_{N,X}, balanced factors, trained networks
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("N", [1, 2, 3, 5])
def test_lemma_2_1_eigenstructure(N):
    rng = make_rng(31)
    X = rng.standard_normal((4, 4))
    U, s, Vt = np.linalg.svd(X)
    a = dln.A_eigenvalues(s, N)
    for k in range(4):
        for l in range(4):
            P = np.outer(U[:, k], Vt[l])
            assert _rel(dln.A_operator(X, P, N), a[k, l] * P) < 1e-10
    ev = np.sort(np.linalg.eigvals(dln.A_matrix(X, N)).real)
    assert _rel(ev, np.sort(a.ravel())) < 1e-10
    # a_kl = (σ_k² − σ_l²)/(σ_k^{2/N} − σ_l^{2/N}) off the diagonal, N σ_k^{2−2/N} on it
    assert _rel(np.diag(a), N * s ** (2 - 2 / N)) < 1e-13
    if N > 1:
        assert abs(a[0, 1] - (s[0] ** 2 - s[1] ** 2) / (s[0] ** (2 / N) - s[1] ** (2 / N))) < 1e-10 * a[0, 1]


@pytest.mark.parametrize("N", [2, 3, 4])
def test_factor_metric_is_A_on_the_balanced_manifold(N):
    rng = make_rng(32)
    X = rng.standard_normal((3, 3))
    Ws = dln.balanced_factors(X, N, rng)
    assert _rel(dln.end_to_end(Ws), X) < 1e-12
    assert dln.balance_defect(Ws) < 1e-12
    P = rng.standard_normal((3, 3))
    assert _rel(dln.factor_metric_operator(Ws, P), dln.A_operator(X, P, N)) < 1e-10
    # off the balanced manifold the two differ
    Ws[0] = Ws[0] @ np.diag([2.0, 1.0, 0.5])
    Ws[1] = Ws[1] @ np.diag([0.5, 1.0, 2.0])
    X2 = dln.end_to_end(Ws)
    assert _rel(dln.factor_metric_operator(Ws, P), dln.A_operator(X2, P, N)) > 1e-2


def test_trained_matrix_network_follows_the_chamber_flow():
    """Gradient descent on N = 3 factors (4×4) of a spectral energy, β = ∞, from a balanced start.

    Tolerance: max |σ_GD(t) − σ_flow(t)| ≤ 1.5 h on t ∈ [0, 8] (measured ≈ 1.14 h), first order in h.
    Source: GD keeps W_k = Q_k Λ Q_{k−1}ᵀ exactly (the balance defect stays at rounding level), and
    is then the explicit Euler scheme for λ̇ = −λ^{N−1} ∂E/∂σ: an O(h) global error.
    """
    N, d, T = 3, 4, 8.0
    rng = make_rng(33)
    energy = dln.quadratic_energy(1.0)
    sigma0 = np.array([2.0, 1.2, 0.3, 0.05])
    U = np.linalg.qr(rng.standard_normal((d, d)))[0]
    V = np.linalg.qr(rng.standard_normal((d, d)))[0]
    Ws = dln.balanced_factors(U @ np.diag(sigma0) @ V.T, N, rng)
    errors = []
    for h in (4e-3, 2e-3):
        steps = int(round(T / h))
        res = dln.train_factors(Ws, N=N, beta=np.inf, energy=energy, step=h, steps=steps, record_every=steps // 40)
        flow = dln.singular_value_flow(sigma0, res["times"], N=N, beta=np.inf, energy=energy)
        err = np.max(np.abs(res["sigma"] - flow))
        assert err < 1.5 * h
        assert res["balance"].max() < 1e-12
        # GD equals explicit Euler on λ for each singular value, to rounding
        lam = sigma0 ** (1 / N)
        euler = [lam.copy()]
        for n in range(steps):
            lam = lam - h * lam ** (N - 1) * (lam**N - 1.0)
            if (n + 1) % (steps // 40) == 0:
                euler.append(lam.copy())
        assert np.max(np.abs(res["sigma"] - np.sort(np.array(euler) ** N, axis=1)[:, ::-1])) < 1e-11
        errors.append(err)
    assert 1.8 < errors[0] / errors[1] < 2.2


def test_trained_matrices_reach_sigma_star_times_the_initial_polar_factor():
    p, N, d, beta = 2.0, 3, 4, 1.0
    rng = make_rng(34)
    X0 = rng.standard_normal((d, d))
    U, _, Vt = np.linalg.svd(X0)
    s = dln.schatten_sigma_star(p, N, d, beta)
    res = dln.train_factors(
        dln.balanced_factors(X0, N, rng), N=N, beta=beta, p=p, step=2e-3, steps=3000, record_every=3000
    )
    assert np.max(np.abs(res["X"] / s - U @ Vt)) < 1e-5


# ------------------------------------------------------------------------------------------------
# large d (Section 8.3)
# ------------------------------------------------------------------------------------------------


def test_large_d_equilibrium_is_a_dirac_mass_and_the_coulomb_gas_spreads():
    d, N, p, beta0 = 200, 3, 2.0, 1.0
    beta = beta0 * d
    rng = make_rng(41)
    g = rng.standard_normal((d + 1, d)) / math.sqrt(beta0 * d)
    sigma0 = np.linalg.svd(g, compute_uv=False)
    s = dln.schatten_sigma_star(p, N, d, beta)
    dirac, info = dln.equilibrium_spectrum(sigma0, N=N, beta=beta, p=p, interaction="dln")
    assert np.max(np.abs(dirac / s - 1)) < 1e-10 and info["gradient_norm"] < 1e-10
    spread, info = dln.equilibrium_spectrum(sigma0, N=N, beta=beta, p=p, interaction="ginibre")
    assert info["gradient_norm"] < 1e-10
    # quarter-circle law on [0, √(2/β0)]: compare the empirical CDF with the limit CDF
    x = np.sort(spread)
    a = math.sqrt(2 / beta0)
    grid = np.linspace(0, a, 400)
    dens = dln.quarter_circle_density(grid, beta0)
    cdf = np.concatenate([[0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(grid))])
    emp = np.searchsorted(x, grid, side="right") / d
    assert abs(cdf[-1] - 1) < 1e-4
    assert np.max(np.abs(emp - cdf)) < 0.02
    assert x[-1] / x[0] > 20


# ------------------------------------------------------------------------------------------------
# bad inputs
# ------------------------------------------------------------------------------------------------


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


def test_singular_value_flows_matches_one_solve_per_start():
    """The batched solve holds every start to the same tolerances as a solve of its own."""
    rng = make_rng(3)
    starts = np.exp(rng.uniform(-2.5, 1.5, (6, 4)))
    t = np.linspace(0.0, 4.0, 81)
    batch = dln.singular_value_flows(starts, t, N=3, beta=0.7, p=2.0)
    assert batch.shape == (6, t.size, 4)
    single = np.stack([dln.singular_value_flow(s0, t, N=3, beta=0.7, p=2.0) for s0 in starts])
    assert np.abs(np.log(batch / single)).max() < 1e-7
    # a coupled energy and the energy-only flow (beta = inf)
    coupled = dln.SpectralEnergy(
        f=lambda x: x**2 / 2,
        df=lambda x: x,
        d2f=lambda x: np.ones_like(x),
        g=lambda x: x + 0.5 * x**2,
        dg=lambda x: 1.0 + x,
        d2g=lambda x: np.ones_like(x),
    )
    for beta, energy in ((2.0, coupled), (np.inf, dln.schatten_energy(1.5))):
        batch = dln.singular_value_flows(starts[:3], t, N=4, beta=beta, energy=energy)
        single = np.stack([dln.singular_value_flow(s0, t, N=4, beta=beta, energy=energy) for s0 in starts[:3]])
        assert np.abs(np.log(batch / single)).max() < 1e-7
    # t = 0 only: the starts themselves
    assert np.array_equal(dln.singular_value_flows(starts, [0.0], N=3, beta=1.0, p=2.0)[:, 0], starts)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"sigma0s": [1.0, 2.0]}, ValueError),
        ({"sigma0s": [[1.0, -2.0]]}, ValueError),
        ({"t_eval": [1.0, 0.5]}, ValueError),
        ({"rtol": 0.0}, ValueError),
    ],
)
def test_singular_value_flows_rejects_bad_input(kwargs, error):
    args = {"sigma0s": [[1.0, 2.0]], "t_eval": [0.0, 1.0], "N": 3, "beta": 1.0, "p": 2.0} | kwargs
    with pytest.raises(error):
        dln.singular_value_flows(args.pop("sigma0s"), args.pop("t_eval"), **args)


@pytest.mark.parametrize("N", [1, 2, 3, 7, 64, np.inf])
def test_h_tie_series_is_kappa_plus_G1(N):
    """h(δ) = κ + G_N'(δ) on the tie series |δ| < 1/2 (one polynomial in δ), against 40-digit
    coth δ − coth(δ/N)/N (and coth δ − 1/δ at N = inf)."""
    for d in [-0.49, -0.2, -1e-6, 0.0, 1e-9, 0.1, 0.3, 0.4999]:
        with mp.workdps(40):
            dm = mp.mpf(d)
            if d == 0.0:
                g1 = mp.mpf(0)
            elif math.isinf(N):
                g1 = mp.coth(dm) - 1 / dm
            else:
                g1 = mp.coth(dm) - mp.coth(dm / N) / N
            ref = float((1 - (0 if math.isinf(N) else mp.mpf(1) / N)) + g1)
        got = float(dln._h(np.array([d]), N)[0])
        assert abs(got - ref) <= 4e-16 * max(abs(ref), 1e-300) + 1e-300, (N, d, got, ref)  # two roundings
