"""Tests of ``symbreak.autoencoder.sgd`` (moved from test_autoencoder.py, test_autoencoder_edge.py)."""

import numpy as np
import pytest

from symbreak import autoencoder as ae
from symbreak.engine import WishartBlockSampler
from symbreak.rng import make_rng

from .helpers import LAM6


def test_float32_gives_the_same_curves():
    lam = ae.geometric_spectrum(20)
    kw = dict(seeds=2, record_every=5_000, seed=13)
    a = ae.simulate_sgd(lam, 10, 0.02, 128, 40_000, **kw).scales.mean(0)
    b = ae.simulate_sgd(lam, 10, 0.02, 128, 40_000, dtype=np.float32, **kw).scales.mean(0)
    assert np.max(np.abs(b / a - 1)) < 0.01


def test_expansive_autoencoder_learns_identity_and_keeps_its_charge():
    lam = ae.geometric_spectrum(20)
    res = ae.simulate_sgd(lam, 40, 0.003, 48, 30_000, seeds=2, record_every=5_000, init="random", seed=3)
    assert res.loss[:, -1].max() < 1e-12  # exact reconstruction: no residual, no noise
    assert np.abs(res.q[:, -1] - res.q[:, 3]).max() < 1e-6  # q frozen once learned
    assert np.abs(res.q[:, -1]).max() < 0.2
    con = ae.simulate_sgd(lam, 10, 0.003, 48, 30_000, seeds=2, record_every=5_000, init="random", seed=3)
    assert np.all(con.q[:, -1] - con.q[:, 3] > 0.5)  # the contractive one keeps drifting decoder-heavy


# ------------------------------------------------------------------ input validation
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: ae.growth_rates(LAM6, 6), "k"),
        (lambda: ae.pca_hessian_eigenvalues(LAM6, 7, 1.0), "k"),
        (lambda: ae.modified_batch_sharpness(LAM6, 6, 1.0, 4), "k"),
        (lambda: ae.growth_rates(LAM6[::-1], 2), "lambdas"),
        (lambda: ae.growth_rates(np.array([1.0, 0.0, -1.0]), 1), "lambdas"),
        (lambda: ae.pca_hessian_eigenvalues(LAM6, 2, [1.0, -1.0]), "s"),
        (lambda: ae.pca_hessian_eigenvalues(LAM6, 2, [1.0, 0.0]), "s"),
        (lambda: ae.modified_batch_sharpness(LAM6, 2, 1.0, 0), "batch_size"),
        (lambda: ae.lambert_scale(0.0, 1.0, 1.0), "s0"),
        (lambda: ae.lambert_scale(1.0, -1.0, 1.0), "c"),
        (lambda: ae.lambert_scale(1.0, 1.0, -1.0), "tau"),
        (lambda: ae.eos_ceiling(0.0, 12.0), "eta"),
        (lambda: ae.eos_ceiling(-0.01, 12.0), "eta"),
        (lambda: ae.eos_ceiling(0.01, 0.0), "lambda1"),
        (lambda: ae.eos_ceiling(0.1, 12.0), "kappa_tilde"),
        (lambda: ae.simulate_sgd(LAM6, 2, 0.0, 8, 10), "eta"),
        (lambda: ae.simulate_sgd(LAM6, 2, -0.1, 8, 10), "eta"),
        (lambda: ae.simulate_sgd(LAM6, 2, 0.01, 0, 10), "batch_size"),
        (lambda: ae.simulate_sgd(LAM6[::-1], 2, 0.01, 8, 10), "lambdas"),
        (lambda: ae.simulate_sgd(LAM6, 2, 0.01, 8, 10, activation="relu"), "sampler"),
        (lambda: ae.simulate_sgd(LAM6, 2, 0.01, 8, 10, activation="tanh"), "activation"),
        (lambda: ae.simulate_sgd(LAM6, 6, 0.01, 8, 10, init="pca"), "k"),
        (lambda: ae.simulate_sgd(LAM6, 2, 0.01, 8, 10, dtype=np.float16), "dtype"),
        (lambda: ae.simulate_sgd_grid(LAM6, 2, [0.01, 0.02], [8], 0.1), "batch_sizes"),
        (lambda: ae.scale_flow(-np.eye(2), np.eye(2), [0.0, 1.0]), "S0"),
    ],
)
def test_bad_input_raises_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("group", [16, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_compiled_step_is_the_numpy_step_bit_for_bit(dtype, group, monkeypatch):
    """The compiled linear-autoencoder step (each block's ηΣ̂ by the Bartlett kernel, then the
    update, a group of replicas at a time) gives the NumPy path's numbers exactly: the sampler's Σ̂
    then ``_LinearStepper``'s BLAS products; with one group, and with groups of 2 of the 3 replicas."""
    monkeypatch.setattr(ae._FusedLinearStepper, "GROUP", group)
    from symbreak.engine import replica_streams

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


def test_select_seeds_is_the_run_of_fewer_seeds():
    """The first seeds of a run are the run of that many seeds with the same arguments, bit for bit
    (each seed draws from its own stream), also with another record grid; a bad index is named."""
    lam = ae.geometric_spectrum(8)
    kw = dict(init="random", activation="relu", sampler="samples", record_weights=True, seed=210)
    many = ae.simulate_sgd(lam, 3, 0.01, 8, 300, seeds=4, record_at=[0, 100, 300], **kw)
    two = ae.simulate_sgd(lam, 3, 0.01, 8, 300, seeds=2, record_at=[0, 300], **kw)
    sub = many.select_seeds(slice(0, 2))
    for name in ("S", "Q", "loss", "W", "U"):
        assert np.array_equal(getattr(sub, name)[:, [0, -1]], getattr(two, name))
        assert getattr(sub, name).shape[0] == 2
    assert np.array_equal(sub.steps, many.steps) and np.array_equal(sub.tau, many.tau)
    assert np.array_equal(many.select_seeds([3, 1]).W, many.W[[3, 1]])
    assert ae.simulate_sgd(lam, 3, 0.01, 8, 30, seeds=2).select_seeds(slice(1, 2)).W is None
    with pytest.raises(ValueError, match="index"):
        many.select_seeds(slice(4, 9))
    with pytest.raises(ValueError, match="index"):
        many.select_seeds(2)


def test_trajectories_do_not_depend_on_the_divergence_check_interval(monkeypatch):
    """The runner calls the compiled step once per divergence check (``_CHECK_EVERY`` steps); the
    numbers are the same, bit for bit, with a check every 8 steps: the linear model in chunks of many
    replicas (another block size) and of few, B < d (the NumPy step), and the ReLU samples model."""
    import symbreak.autoencoder.sgd as sgd_mod

    lam = ae.geometric_spectrum(20)
    rec = np.unique(np.geomspace(1, 600, 30).astype(int))
    runs = {}
    for every in (8, 64):
        monkeypatch.setattr(sgd_mod, "_CHECK_EVERY", every)
        runs[every] = ae.simulate_sgd_grid(
            lam, 10, np.array([0.026, 0.02]), np.array([32, 128]), 0.01, n_records=50, seeds=24, record_weights=True, seed=47
        ) + [
            ae.simulate_sgd(lam, 10, 0.02, 8, 600, seeds=3, record_every=50, seed=3),
            ae.simulate_sgd(lam, 10, 0.003, 48, 600, seeds=2, record_at=rec, init="random", activation="relu",
                            sampler="samples", record_weights=True, seed=210),
        ]  # fmt: skip
    for a, b in zip(runs[8], runs[64]):
        assert np.array_equal(a.S, b.S) and np.array_equal(a.Q, b.Q) and np.array_equal(a.loss, b.loss)
        assert a.W is None or np.array_equal(a.W, b.W)
