"""Tests of ``symbreak.dln.matrix`` (moved from test_dln.py, test_dln_matrix.py, test_dln_referee.py)."""

from __future__ import annotations

import numpy as np
import pytest

from symbreak import dln
from symbreak.rng import make_rng

from .helpers import _rel


def test_entropy_equals_quarter_log_determinant_of_A():
    """S_N = ¼ log det A_{N,X} − ¼ Σ_k log(N σ_k^{2−2/N}): the pair terms are A's off-diagonal eigenvalues."""
    rng = make_rng(7)
    for N in (2, 3, 5):
        X = rng.standard_normal((4, 4))
        s = np.linalg.svd(X, compute_uv=False)
        _, logdet = np.linalg.slogdet(dln.A_matrix(X, N))
        rhs = 0.25 * logdet - 0.25 * np.sum(np.log(N * s ** (2 - 2 / N)))
        assert abs(dln.entropy(s, N) - rhs) < 1e-10


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


def test_matrix_velocity_equals_literal_A_operator():
    rng = make_rng(3)
    for N in (2, 3, 6):
        X = rng.standard_normal((4, 4))
        M = rng.standard_normal((4, 4))
        grad = lambda Y: Y - M  # noqa: E731
        for beta in (np.inf, 0.7):
            G = grad(X) - (0.0 if np.isinf(beta) else dln.entropy_gradient_matrix(X, N) / beta)
            ref = -dln.A_operator(X, G, N)
            got = dln.matrix_velocity(X, N=N, beta=beta, grad_energy=grad)
            assert np.abs(got - ref).max() < 1e-12 * np.abs(ref).max()


def test_spectral_matrix_flow_keeps_the_polar_factor_and_follows_the_chamber_flow():
    rng = make_rng(5)
    p, N, d, beta = 2.0, 3, 3, 1.0
    U = np.linalg.qr(rng.standard_normal((d, d)))[0]
    V = np.linalg.qr(rng.standard_normal((d, d)))[0]
    s0 = np.array([2.0, 0.9, 0.3])
    t = np.linspace(0, 1.5, 7)
    path = dln.matrix_flow(
        U @ np.diag(s0) @ V.T,
        t,
        N=N,
        beta=beta,
        rtol=1e-11,
        atol=1e-13,
        grad_energy=lambda X: dln.spectral_gradient_matrix(X, N=N, beta=np.inf, p=p),
    )
    flow = dln.singular_value_flow(s0, t, N=N, beta=beta, p=p, rtol=1e-11, atol=1e-13)
    sv = np.linalg.svd(path, compute_uv=False)
    assert np.abs(sv - flow).max() < 1e-8
    Uf, _, Vtf = np.linalg.svd(path[-1])
    assert np.abs(Uf @ Vtf - U @ V.T).max() < 1e-8


def test_matrix_flow_bounds_its_work():
    with pytest.raises(ValueError, match="max_steps"):
        dln.matrix_flow(np.eye(2), [0.0, 10.0], N=2, beta=np.inf, grad_energy=lambda X: X - 2 * np.eye(2), max_steps=5)


def test_new_functions_reject_bad_input():
    with pytest.raises(ValueError, match="N"):
        dln.orbit_gram_logdet([2.0, 1.0], 1)
    with pytest.raises(ValueError, match="N"):
        dln.orbit_gram_logdet([2.0, 1.0], 40)
    with pytest.raises(ValueError, match="d <= 8"):
        dln.orbit_gram_logdet(np.arange(1.0, 10.0), 2)
    with pytest.raises(ValueError, match="sigma"):
        dln.orbit_gram_logdet([2.0, -1.0], 3)
    with pytest.raises(ValueError, match="step"):
        dln.orbit_gram_logdet([2.0, 1.0], 3, step=0.0)
    with pytest.raises(ValueError, match="lam_i"):
        dln.pair_gram_determinant(0.0, 1.0, 3)
    with pytest.raises(ValueError, match="N"):
        dln.pair_gram_determinant(1.0, 1.0, 1)
    with pytest.raises(ValueError, match="n"):
        dln.tridiagonal_toeplitz_det(1.0, 0.5, 0)
    with pytest.raises(ValueError, match="X"):
        dln.entropy_gradient_matrix(np.zeros((2, 2)), 3)
    with pytest.raises(ValueError, match="X"):
        dln.entropy_gradient_matrix(np.ones((2, 3)), 3)
    with pytest.raises(TypeError, match="grad_energy"):
        dln.matrix_velocity(np.eye(2), N=2, beta=1.0, grad_energy=None)
    with pytest.raises(ValueError, match="grad_energy"):
        dln.matrix_velocity(np.eye(2), N=2, beta=1.0, grad_energy=lambda X: np.ones(3))
    with pytest.raises(ValueError, match="beta"):
        dln.matrix_velocity(np.eye(2), N=2, beta=-1.0, grad_energy=lambda X: X)
    with pytest.raises(ValueError, match="X must be invertible"):
        dln.matrix_velocity(np.zeros((2, 2)), N=2, beta=1.0, grad_energy=lambda X: X)
    with pytest.raises(ValueError, match="t_eval"):
        dln.matrix_flow(np.eye(2), [1.0, 0.5], N=2, beta=1.0, grad_energy=lambda X: X)
    with pytest.raises(ValueError, match="max_steps"):
        dln.matrix_flow(np.eye(2), [0.0, 1.0], N=2, beta=1.0, grad_energy=lambda X: X, max_steps=0)
    with pytest.raises(ValueError, match="rel_step"):
        dln.matrix_flow_jacobian(np.eye(2), N=2, beta=1.0, grad_energy=lambda X: X, rel_step=0.0)


def test_factor_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    Ws = [rng.standard_normal((3, 3)) for _ in range(3)]
    target = rng.standard_normal((3, 3))
    mask = rng.uniform(size=(3, 3)) < 0.6

    def energy(Ws_):
        return 0.5 * np.sum((mask * (dln.end_to_end(Ws_) - target)) ** 2)

    G = dln.factor_gradients(Ws, mask * (dln.end_to_end(Ws) - target))
    h = 1e-6
    for k in range(3):
        for i in range(3):
            for j in range(3):
                up = [W.copy() for W in Ws]
                dn = [W.copy() for W in Ws]
                up[k][i, j] += h
                dn[k][i, j] -= h
                assert (energy(up) - energy(dn)) / (2 * h) == pytest.approx(G[k][i, j], rel=1e-6, abs=1e-8)


def test_completion_task_is_seeded_and_well_formed():
    t1, m1, q1 = dln.completion_task(82)
    t2, m2, q2 = dln.completion_task(82)
    assert np.array_equal(t1, t2) and np.array_equal(m1, m2) and np.array_equal(q1, q2)
    assert np.linalg.matrix_rank(t1) == 1
    assert int((m1 == 0).sum()) == 6 and set(np.unique(m1)) <= {0.0, 1.0}
    np.testing.assert_allclose(q1 @ q1.T, np.eye(4), atol=1e-12)
    assert not np.array_equal(t1, dln.completion_task((82, 1))[0])


def test_completion_low_rank_ratio_falls_with_the_initial_scale():
    # the low-rank bias of the beta = infinity flow: sigma_2/sigma_1 shrinks about like alpha
    r = dln.completion_low_rank_ratios(*dln.completion_task(82), (1e-3, 1e-4), N=3, t_end=60.0)
    assert r[0] < 0.02 and 0.05 < r[1] / r[0] < 0.15


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(d=1), "d"),
        (dict(n_missing=16), "n_missing"),
        (dict(n_missing=-1), "n_missing"),
    ],
)
def test_completion_task_rejects_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dln.completion_task(0, **kwargs)


def test_completion_low_rank_ratios_rejects_bad_input():
    t, m, q = dln.completion_task(0)
    with pytest.raises(ValueError, match="alphas"):
        dln.completion_low_rank_ratios(t, m, q, (1e-3, -1.0), N=3, t_end=1.0)
    with pytest.raises(ValueError, match="mask"):
        dln.completion_low_rank_ratios(t, 0.5 * m, q, (1e-3,), N=3, t_end=1.0)
    with pytest.raises(ValueError, match="square"):
        dln.completion_low_rank_ratios(t[:3], m, q, (1e-3,), N=3, t_end=1.0)
    with pytest.raises(ValueError, match="t_end"):
        dln.completion_low_rank_ratios(t, m, q, (1e-3,), N=3, t_end=0.0)
    with pytest.raises(ValueError, match="max_steps"):  # a horizon beyond the evaluation budget
        dln.completion_low_rank_ratios(t, m, q, (1e-3,), N=3, t_end=60.0, max_steps=50)
    with pytest.raises(ValueError, match="max_steps"):
        dln.completion_low_rank_ratios(t, m, q, (1e-3,), N=3, t_end=1.0, max_steps=0)
