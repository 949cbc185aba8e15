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
    monkeypatch.setattr(ae.sgd, "_LANE_STEPS", False)  # (the lane step agrees to rounding: tested below)
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


# ------------------------------------------------------------------ the lane step (minibatch drawn inside)
def _pca_stack(r, k, d, dtype, noise=0.1, seed=0):
    V = noise * np.random.default_rng(seed).standard_normal((r, 2 * k, d))
    V[:, np.arange(k), np.arange(k)] += 1.0
    V[:, k + np.arange(k), np.arange(k)] += 1.0
    return V.astype(dtype)


def _state(gen):
    return str(gen.bit_generator.state)


@pytest.mark.parametrize("replicas", [1, 3, 11, 19])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lane_step_follows_the_numpy_step_to_rounding(dtype, replicas):
    """The compiled lane step (each step's Bartlett factor drawn inside the step, replicas in SIMD
    lanes, the update through the factor) against the NumPy reference (the sampler's block of
    ηΣ̂, then _LinearStepper's BLAS products) on the same streams: the same minibatches, so the
    weights agree to rounding after 150 steps (batch sizes from d, with its boosted Gamma(1/2)
    shape, to 128; several η), for a full group of lanes plus single replicas, blocks split
    unevenly; and every stream (normals, uniforms, fallback gammas) ends in the same state."""
    from symbreak.engine import replica_streams

    d, k, m = 7, 3, 10
    lam = ae.geometric_spectrum(d)
    batches = np.array([7, 9, 128, 20, 7, 33, 64, 7, 12, 50, 8, 7, 9, 100, 7, 16, 7, 30, 11])[:replicas]
    kw = dict(scale=np.linspace(0.01, 0.04, replicas), dtype=dtype, max_steps=m)
    a, b = WishartBlockSampler(np.sqrt(lam), batches, **kw), WishartBlockSampler(np.sqrt(lam), batches, **kw)
    V0 = _pca_stack(replicas, k, d, dtype)
    ref, lanes = ae.sgd._LinearStepper(V0.copy(), k), ae.sgd._LaneLinearStepper(V0.copy(), k)
    sa, sb = replica_streams(5, range(replicas)), replica_streams(5, range(replicas))
    for _ in range(15):
        sig = a.draw(sa, m)
        for t in range(m):
            ref.step(sig[t])
        args = b.lane_arguments(sb)
        lanes.steps(args, 3)
        lanes.steps(args, m - 3)
    tol = 1e-12 if dtype == np.float64 else 1e-4
    assert lanes.V.dtype == dtype and np.abs(ref.V - V0).max() > 0.05  # the weights moved
    assert np.abs(lanes.V - ref.V).max() <= tol * np.abs(ref.V).max()
    for x, y in zip(sa, sb):
        assert [_state(g) for g in (x, *a._aux_streams(x))] == [_state(g) for g in (y, *b._aux_streams(y))]


@pytest.mark.parametrize("d, k", [(6, 2), (7, 3), (19, 9), (19, 17)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lane_step_replica_does_not_depend_on_its_group(dtype, d, k):
    """A replica's numbers are the same bit for bit whether it runs in a group of SIMD lanes (8 in
    float64; 16, or 8 of the last 8–15, in float32),
    among the chunk's last replicas (one at a time, vectorised over the rows of its matrices), or
    alone; a replica that diverges (its weights overflow to inf/NaN) leaves the others of its group
    untouched. Shapes with odd k and d, and with k over one or two vectors of rows (8 in float64, 16
    in float32; the rows padded), take every branch of the one-replica path."""
    from symbreak.engine import replica_streams

    r = 27  # float64: three groups of 8, then 3; float32: a group of 16, one of 8, then 3
    lam = ae.geometric_spectrum(d)
    batches, etas = np.full(r, max(16, d)), np.full(r, 0.02)
    etas[4] = 5.0  # far past the stability edge
    V0 = _pca_stack(r, k, d, dtype)

    def run(idx, steps=40):
        smp = WishartBlockSampler(np.sqrt(lam), batches[idx], scale=etas[idx], dtype=dtype, max_steps=8)
        st = ae.sgd._LaneLinearStepper(V0[idx].copy(), k)
        streams = replica_streams(3, idx)
        with np.errstate(over="ignore", invalid="ignore"):
            for t0 in range(0, steps, 8):
                st.steps(smp.lane_arguments(streams), 8)
        return st.V

    everything = run(np.arange(r))
    assert not np.isfinite(everything[4]).all()
    assert np.isfinite(np.delete(everything, 4, axis=0)).all()
    for j in (0, 3, 7, 8, 15, 16, 23, 24, 26):  # lanes of the groups, and the three run one at a time
        assert np.array_equal(run(np.array([j]))[0], everything[j])
    assert np.array_equal(run(np.array([24, 25, 26])), everything[24:])
    assert np.array_equal(run(np.arange(16, 27)), everything[16:])  # float32: 8 in a group of 8, then 3


def test_lane_arguments_refuse_a_stream_shared_by_two_replicas():
    """A SIMD group holds its replicas' streams side by side, each as its own copy: a stream given to
    two replicas (where the one-at-a-time paths draw from it in turn) is no lane argument, so the
    model takes the block path, which draws from it in order."""
    from symbreak.engine import replica_streams

    lam = ae.geometric_spectrum(6)
    smp = WishartBlockSampler(np.sqrt(lam), np.array([8, 8]), scale=np.array([0.01, 0.01]), max_steps=8)
    assert smp.lane_arguments(replica_streams(1, range(2))) is not None
    g = replica_streams(1, range(1))[0]
    assert smp.lane_arguments([g, g]) is None


def test_lane_model_keeps_replicas_and_matches_the_block_path(monkeypatch):
    """_LinearModel takes the lane step on SFC64 streams; after keep() drops replicas (as the runner
    does when they finish), the survivors continue exactly as in a model that kept them all; and the
    trajectories agree to rounding with the block path (variates first, then the compiled BLAS step)
    that the flag _LANE_STEPS = False selects."""
    from symbreak.engine import replica_streams

    d, k, r = 6, 2, 10
    lam = ae.geometric_spectrum(d)
    init = [lambda s: (np.eye(6, 2), np.eye(2, 6))] * r
    args = (lam, k, np.linspace(0.01, 0.03, r), np.full(r, 12), init, np.float64, False)
    mask = np.array([True, False, True, True, False, True, True, True, True, False])

    def run(keep):
        mdl = ae.sgd._LinearModel(np.arange(r), replica_streams(7, range(r)), *args)
        for t0 in range(0, 40, 8):
            if keep and t0 == 16:
                mdl.keep(mask)
            mdl.steps(mdl.draw(8), 0, 8, t0)
        return mdl

    kept, whole = run(True), run(False)
    assert kept.lanes and isinstance(kept.stepper, ae.sgd._LaneLinearStepper)
    assert kept.stepper.V.shape[0] == mask.sum() and np.array_equal(kept.stepper.V, whole.stepper.V[mask])
    monkeypatch.setattr(ae.sgd, "_LANE_STEPS", False)
    block = run(True)
    assert not block.lanes and isinstance(block.stepper, ae.sgd._FusedLinearStepper)
    assert np.abs(block.stepper.V - kept.stepper.V).max() <= 1e-12 * np.abs(block.stepper.V).max()
    assert not np.array_equal(block.stepper.V, kept.stepper.V)  # (a different order of the sums)


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
