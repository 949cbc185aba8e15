"""The book's reduced map for the edge of stability (autoencoder chapter): the gain noise, the two
stability thresholds of the gain, the map itself and the plateau read-out."""

import numpy as np
import pytest

from symbreak import autoencoder as ae
from symbreak.engine import DivergenceError, WishartBlockSampler
from symbreak.rng import make_rng

LAM = ae.geometric_spectrum(20)
K = 10
C1 = ae.growth_rates(LAM, K)[0]


def test_gain_noise_variance_scales_as_eta_cubed_over_b_squared():
    s = 3.0
    v = ae.gain_noise_variance(LAM, K, s, 1e-4, 32)
    assert ae.gain_noise_variance(LAM, K, s, 1e-4, 64) == pytest.approx(v / 4, rel=1e-12)
    # Ξ = O(η) at small η, so σ_e² = O(η³)
    assert ae.gain_noise_variance(LAM, K, s, 2e-4, 32) / v == pytest.approx(8.0, rel=2e-3)
    arr = ae.gain_noise_variance(LAM, K, np.array([[1.0, 3.0]]), 1e-4, 32)
    assert arr.shape == (1, 2) and arr[0, 1] == pytest.approx(v, rel=1e-12) and np.all(arr > 0)


def test_gain_noise_variance_against_monte_carlo_of_one_sgd_step():
    """Draw the out-of-subspace pair (W_j1, U_1j) from its stationary law N(0, Ξ_1j/B), then many
    exact Wishart minibatches, take one SGD step (ae.sgd_step) and measure the variance of the change of
    (WU)_11 over minibatches: it is σ_e² to first order."""
    eta, b, s1 = 0.004, 32, 2.5
    s = np.full(K, s1)
    W0, U0 = ae.pca_point(s, LAM.size)
    _, xi = ae._perp_lyapunov(LAM, K, s, eta)
    rng = make_rng(3)
    sampler = WishartBlockSampler(np.sqrt(LAM), np.array([b]), max_steps=400)
    var = []
    for _ in range(150):
        W, U = W0.copy(), U0.copy()
        for j in range(K, LAM.size):
            w_j, u_j = rng.multivariate_normal(np.zeros(2), xi[0, j - K] / b)
            W[j, 0], U[0, j] = w_j, u_j
        e0 = (W @ U)[0, 0]
        sh = sampler.draw(rng, 400)[:, 0]
        W1, U1 = ae.sgd_step(W, U, sh, eta)  # batched over the 400 minibatches
        de = (W1[..., 0, :] * U1[..., :, 0]).sum(-1) - e0
        var.append(de.var(ddof=1))
    var = np.array(var)
    pred = ae.gain_noise_variance(LAM, K, s1, eta, b)
    assert var.mean() == pytest.approx(pred, rel=4 * var.std(ddof=1) / np.sqrt(var.size) / pred + 0.03)


def test_gain_stability_thresholds():
    for b in (4, 32, 128):
        x_ms, x_as = ae.gain_stability_thresholds(b)
        assert x_ms == pytest.approx(2 * b / (b + 2), rel=1e-15)
        assert x_ms < 2 < x_as
        if b >= 32:
            assert abs(x_as - 2 - 4 / b) * b**2 < 30  # 2 + 4/B + O(1/B²)
    # E log|1 − x_as Z| = 0, by Monte Carlo over Z = χ²_B/B
    b = 16
    x_as = ae.gain_stability_thresholds(b)[1]
    z = make_rng(1).chisquare(b, 1_000_000) / b
    vals = np.log(np.abs(1 - x_as * z))
    assert abs(vals.mean()) < 4 * vals.std() / np.sqrt(z.size)
    # and E(1 − x_ms Z)² = 1
    x_ms = ae.gain_stability_thresholds(b)[0]
    sq = (1 - x_ms * z) ** 2
    assert abs(sq.mean() - 1) < 4 * sq.std() / np.sqrt(z.size)
    with pytest.raises(ValueError, match="batch_size"):
        ae.gain_stability_thresholds(0)
    with pytest.raises(ValueError, match="batch_size"):
        ae.gain_stability_thresholds(10**6)


def test_reduced_map_follows_eq6_below_the_edge():
    eta, b = 0.02, 64
    t1 = ae.lambert_time(ae.eos_ceiling(eta, LAM[0]), 1.0, C1)
    (r,) = ae.eos_reduced_map(LAM, K, [eta], [b], 0.5 * t1, seeds=4, n_records=50, seed=1)
    th = ae.lambert_scale(1.0, C1, r.tau)
    assert r.s.shape == (4, r.tau.size) and r.e.shape == r.s.shape
    np.testing.assert_allclose(r.s, np.broadcast_to(th, r.s.shape), rtol=2e-3)
    assert np.max(np.abs(r.e)) < 1e-2


def test_reduced_map_saturates_between_the_edges():
    eta, b = 0.026, 64
    out = ae.eos_reduced_kappa(eta, b, lambdas=LAM, k=K, seeds=16, seed=2)
    x_ms, x_as = ae.gain_stability_thresholds(b)
    assert set(out) >= {"median", "mean", "max", "s_median", "tau_from"}
    assert x_ms - 0.02 < out["median"].mean() < 2.0
    assert out["mean"].mean() < out["median"].mean() < out["max"].mean()
    assert out["max"].mean() > 2.0
    # without the random curvature the gain has no Kesten bursts: s_1 climbs to the GD ceiling
    flat = ae.eos_reduced_kappa(eta, b, lambdas=LAM, k=K, seeds=8, seed=2, multiplicative=False)
    assert abs(flat["median"].mean() - 2.0) < 0.005


def test_reduced_map_reproducible_and_replica_independent():
    kw = dict(seeds=3, n_records=20, seed=7)
    a = ae.eos_reduced_map(LAM, K, [0.026], [32], 0.1, **kw)[0]
    b = ae.eos_reduced_map(LAM, K, [0.026], [32], 0.1, **kw)[0]
    np.testing.assert_array_equal(a.s, b.s)
    # the first configuration's replicas do not depend on a second configuration that runs longer
    both = ae.eos_reduced_map(LAM, K, [0.026, 0.02], [32, 128], [0.1, 0.3], **kw)
    np.testing.assert_array_equal(both[0].s, a.s)
    np.testing.assert_array_equal(both[0].e, a.e)


def test_reduced_map_errors():
    with pytest.raises(ValueError, match="kappa_tilde"):
        ae.eos_reduced_map(LAM, K, [0.2], [32], 0.1)  # η λ_1 > 1: no ceiling
    with pytest.raises(ValueError, match="batch_sizes"):
        ae.eos_reduced_map(LAM, K, [0.01, 0.02], [32], 0.1)
    with pytest.raises(ValueError, match="seeds"):
        ae.eos_reduced_map(LAM, K, [0.01], [32], 0.1, seeds=0)
    with pytest.raises(ValueError, match="replica-steps"):
        ae.eos_reduced_map(LAM, K, [0.01], [32], 1e2, seeds=10**5)
    with pytest.raises(DivergenceError, match="eta=0.02"):
        ae.eos_reduced_map(LAM, K, [0.02], [32], 0.01, seeds=2, s0=3 * ae.eos_ceiling(0.02, LAM[0]))
    with pytest.raises(ValueError, match="plateau"):
        ae.eos_reduced_kappa(0.02, 32, lambdas=LAM, k=K, horizon=1.0, plateau=1.5)


def test_plateau_kappa():
    tau = np.linspace(0, 1, 11)
    s = np.vstack([np.full(11, 4.0), np.r_[np.ones(6), np.full(5, 5.0)]])
    np.testing.assert_allclose(ae.plateau_kappa(tau, s, 0.5, 0.02, 12.0), 0.24 * np.array([4.25, 5.2]))
    np.testing.assert_allclose(ae.plateau_kappa(tau, s, 0.0, 0.02, 12.0, "max"), 0.24 * np.array([4.25, 5.2]))
    with pytest.raises(ValueError, match="tau_from"):
        ae.plateau_kappa(tau, s, 2.0, 0.02, 12.0)
    with pytest.raises(ValueError, match="statistic"):
        ae.plateau_kappa(tau, s, 0.5, 0.02, 12.0, "mode")
    with pytest.raises(ValueError, match="shape"):
        ae.plateau_kappa(tau[:5], s, 0.5, 0.02, 12.0)


@pytest.mark.parametrize("group", [16, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_compiled_step_is_the_numpy_step_bit_for_bit(dtype, group, monkeypatch):
    """The compiled linear-autoencoder step (each block's ηΣ̂ by the Bartlett kernel, then the
    update, a group of replicas at a time) gives the NumPy path's numbers exactly: the sampler's Σ̂
    then ``_LinearStepper``'s BLAS products; with one group, and with groups of 2 of the 3 replicas."""
    monkeypatch.setattr(ae._FusedLinearStepper, "GROUP", group)
    from symbreak.engine import WishartBlockSampler, replica_streams

    d, k, m = 6, 3, 10
    lam = ae.geometric_spectrum(d)
    kw = dict(scale=[0.02, 0.05, 0.01], dtype=dtype, max_steps=m)
    a = WishartBlockSampler(np.sqrt(lam), np.array([6, 17, 128]), **kw)
    b = WishartBlockSampler(np.sqrt(lam), np.array([6, 17, 128]), **kw)
    V0 = (0.5 * np.random.default_rng(0).standard_normal((3, 2 * k, d))).astype(dtype)
    ref, fused = ae._LinearStepper(V0.copy(), k), ae._FusedLinearStepper(V0.copy(), k)
    sa, sb = replica_streams(5, range(3)), replica_streams(5, range(3))
    for _ in range(3):
        sig = a.draw(sa, m)
        for t in range(m):
            ref.step(sig[t])
        var = b.variates(sb, m)
        fused.steps(var, 0, 4)
        fused.steps(var, 4, m)
    assert np.array_equal(fused.V, ref.V) and fused.V.dtype == dtype
    assert not np.array_equal(fused.V, V0)


def test_sgd_takes_the_fused_step_only_where_every_batch_draws_by_bartlett():
    lam, k = ae.geometric_spectrum(6), 3
    init = [lambda s: (np.eye(6, k), np.eye(k, 6))] * 2
    args = (np.arange(2), lam, k, np.full(2, 0.01))

    def model(batches):
        reps, lam_, k_, etas = args
        return ae._LinearModel(reps, [make_rng(0), make_rng(1)], lam_, k_, etas, batches, init, np.float64, False)

    fused, plain = model(np.array([8, 6])), model(np.array([8, 4]))  # B = 4 < d draws its points
    assert fused.fused and callable(getattr(fused, "steps", None))
    assert not plain.fused and getattr(plain, "steps", None) is None


@pytest.mark.parametrize("activation", ["relu", "linear"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_sampled_minibatch_steps_are_the_numpy_steps_bit_for_bit(activation, dtype):
    """The trainer with drawn data points (any activation) takes its steps in compiled blocks: the
    same numbers as its NumPy step, for every replica."""
    from symbreak.engine import replica_streams

    d, k, b, n = 8, 5, 16, 3
    lam = ae.geometric_spectrum(d)
    init = [lambda s: (0.3 * s.standard_normal((d, k)), 0.3 * s.standard_normal((k, d)))] * n

    def model():
        streams = replica_streams(2, range(n))
        return ae._SamplesModel(
            np.arange(n), streams, lam, k, np.full(n, 0.01), np.full(n, b), init, dtype, False, activation
        )

    a, c = model(), model()
    for _ in range(4):
        xa, xc = a.draw(16), c.draw(16)
        for t in range(16):
            a.step(xa, t, t)
        c.steps(xc, 0, 5, 0)
        c.steps(xc, 5, 16, 5)
    assert np.array_equal(a.W, c.W) and np.array_equal(a.U, c.U)
    assert np.isfinite(c.W).all() and not np.array_equal(c.W, model().W)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_small_chunks_compiled_large_chunks_numpy_same_numbers(monkeypatch, dtype):
    """With a limit of 32 replicas for the compiled steps, a chunk below it takes compiled steps, a
    larger one the batched NumPy products: replica r's trajectory is the same bit for bit either way
    (so the limit, today none, is a matter of speed only)."""
    assert ae._FUSED_MAX_REPLICAS >= 2**31 - 1  # today every chunk is compiled
    monkeypatch.setattr(ae.sgd, "_FUSED_MAX_REPLICAS", 32)
    monkeypatch.setenv("SYMBREAK_THREADS", "1")  # one chunk: 40 replicas (NumPy) against 2 (compiled)
    lam = ae.geometric_spectrum(6)
    kw = dict(steps=200, record_every=50, seed=9, init="random", dtype=dtype, record_weights=True)
    big = ae.simulate_sgd(lam, 3, 0.02, 8, seeds=40, **kw)
    small = ae.simulate_sgd(lam, 3, 0.02, 8, seeds=2, **kw)
    assert np.array_equal(big.W[:2], small.W) and np.array_equal(big.U[:2], small.U)
    init = [lambda s: (np.eye(6, 3), np.eye(3, 6))] * 40
    args = (lam, 3, np.full(40, 0.01), np.full(40, 8), init, np.float64, False)
    assert not ae._LinearModel(np.arange(40), [make_rng(i) for i in range(40)], *args).fused
    assert ae._LinearModel(np.arange(31), [make_rng(i) for i in range(31)], *args).fused
