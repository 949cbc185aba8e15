"""Tests of ``symbreak.platonic.training`` (moved from test_platonic.py)."""

import numpy as np
import pytest

from symbreak import platonic as pl

from .helpers import _all_pairs


@pytest.mark.parametrize("widths", [(4,), (5, 6), (6, 4, 7, 5)], ids=["depth2", "depth3", "depth5"])
@pytest.mark.parametrize("batch", [4, 16], ids=["points", "bartlett"])
def test_compiled_sgd_agrees_with_the_numpy_step(widths, batch, monkeypatch):
    """The compiled SGD step (replicas in SIMD lanes, products summed in loops) against the batched
    NumPy step it replaces: the same update, so the same trajectories up to the order of each small
    product's sums. 37 replicas (four full groups of 8 SIMD lanes and a partial one in float64),
    per-replica learning rates
    and weight decays (zero for some), the learning-rate warm-up, 1,500 steps. Measured: relative
    differences of a few 1e-15; the tolerance 1e-12 allows rounding to grow 100-fold, far below any
    change of the update (one step of lr 0.01 moves the weights by ~1e-3 relative)."""
    task = pl.random_task(5, n=4, m=5, noise=0.5)
    net = pl.random_edln(6, 4, 5, widths, cond=2.0)
    r = 37
    w0 = pl.init_weights(net, 7, replicas=r)
    lr = np.linspace(0.005, 0.012, r)
    wd = np.where(np.arange(r) % 3 == 0, 0.0, np.linspace(1e-3, 1e-2, r))
    kw = dict(lr=lr, batch_size=batch, steps=1500, seed=8, weight_decay=wd, lr_warmup=300, record_every=500)
    monkeypatch.setattr(pl.training, "_COMPILED_SGD", True)
    fast = pl.train_sgd(net, task, w0, **kw)
    monkeypatch.setattr(pl.training, "_COMPILED_SGD", False)
    ref = pl.train_sgd(net, task, w0, **kw)
    for a, b, b0 in zip(fast.weights, ref.weights, w0):
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()
        assert np.abs(b - b0).max() > 1e-3 * np.abs(b).max()  # the runs did move
    assert np.allclose(fast.kernels, ref.kernels, rtol=1e-12, atol=1e-14)
    assert np.allclose(fast.loss, ref.loss, rtol=1e-12, atol=1e-14)
    # a replica's numbers do not depend on its group: replicas 5 (a lane of the full first group of
    # 8) and 35 (of the partial last), stepped alone from their own streams, bit for bit
    from symbreak.engine import replica_streams

    monkeypatch.setattr(pl.training, "_COMPILED_SGD", True)
    mk = dict(lr=lr, wd=wd, lr_warmup=300, sgd=True, batch_size=batch)
    group = pl._PlatonicModel(np.arange(r), replica_streams(8, range(r)), net, task, w0, **mk)
    alone = [pl._PlatonicModel(np.array([j]), replica_streams(8, [j]), net, task, w0, **mk) for j in (5, 35)]
    for block in range(8):
        for model in [group] + alone:
            model.steps(model.draw(64), 0, 64, 64 * block)
    assert np.array_equal(group.flat[5], alone[0].flat[0]) and np.array_equal(group.flat[35], alone[1].flat[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_sgd_draws_the_samplers_normals(dtype, monkeypatch):
    """With B < n + m the compiled step draws each minibatch's normals itself, from each replica's
    SFC64 stream (``_LANE_DRAWS``): the numbers :meth:`WishartBlockSampler.points` draws ahead of the
    step, in the same order, so the trajectories are the same bit for bit. 21 replicas (two full
    groups of 8 lanes and a partial one in float64; one of 16 and a partial one in float32), weight
    decay, the warm-up, 700 steps (blocks of 64 and a last one of 60)."""
    from symbreak.engine import replica_streams

    task, net, _ = pl.example_pair()
    r = 21
    w0 = pl.init_weights(net, 4, replicas=r)
    kw = dict(lr=0.01, batch_size=4, steps=700, seed=9, weight_decay=1e-3, lr_warmup=100, record_every=350)
    runs = []
    for lanes in (True, False):
        monkeypatch.setattr(pl.training, "_LANE_DRAWS", lanes)
        model = pl._PlatonicModel(np.arange(r), replica_streams(9, range(r)), net, task, w0, sgd=True,
                                  lr=np.full(r, 0.01), wd=np.zeros(r), lr_warmup=0, batch_size=4, dtype=dtype)  # fmt: skip
        assert model._zaddr.size == (r if lanes else 0)  # the path taken
        runs.append(pl.train_sgd(net, task, w0, dtype=dtype, **kw))
    a, b = runs
    assert all(np.array_equal(x, y) for x, y in zip(a.weights, b.weights))
    assert np.array_equal(a.loss, b.loss) and np.array_equal(a.kernels, b.kernels)
    assert np.abs(a.weights[0] - w0[0]).max() > 1e-2  # the runs did move


@pytest.mark.parametrize("widths", [(4,), (5, 6), (6, 4, 7, 5)], ids=["depth2", "depth3", "depth5"])
def test_compiled_gd_agrees_with_the_numpy_step(widths, monkeypatch):
    """The compiled gradient-descent step (:func:`_edln_gd_block`) against the batched NumPy step of
    ``_entropy_and_loss_gradients`` it replaces: the same update of L + γS + λΣ‖W‖², so the same
    trajectories up to the order of each small product's sums. Five replicas with per-replica learning
    rates, γ (zero for one: its plain gradient) and weight decays (zero for some), the γ warm-up and
    ramp, the geometric decay to gamma_final, the learning-rate warm-up, 1,500 steps from near a
    minimum (a run that passes close to a saddle amplifies rounding as any perturbation: tested from
    a random start over its first 200 steps). Measured: relative differences of a few 1e-15; the
    tolerance 1e-12 allows rounding to grow 100-fold."""
    task = pl.random_task(5, n=4, m=5, noise=0.5)
    net = pl.random_edln(6, 4, 5, widths, cond=2.0)
    r = 5
    near = pl.platonic_minimum(net, task, seed=0)
    rng = np.random.default_rng(3)
    w0 = [np.stack([w + 0.05 * rng.standard_normal(w.shape) for _ in range(r)]) for w in near]
    lr = np.linspace(0.005, 0.02, r)
    cases = [
        (w0, dict(lr=lr, gamma=np.array([0.0, 3e-3, 1e-2, 2e-2, 5e-3]), gamma_warmup=100,
                  weight_decay=np.array([0.0, 1e-2, 0.0, 1e-3, 0.1]), lr_warmup=300, steps=1500)),
        (w0, dict(lr=0.01, gamma=1e-2, gamma_final=1e-3, gamma_warmup=200, steps=1500)),
        (w0, dict(lr=lr, weight_decay=1e-2, steps=1500)),
        (pl.init_weights(net, 7, replicas=r), dict(lr=0.02, gamma=1e-2, gamma_warmup=50, lr_warmup=1000, steps=200)),
    ]  # fmt: skip
    for start, kw in cases:
        monkeypatch.setattr(pl.training, "_COMPILED_GD", True)
        fast = pl.train_gd(net, task, start, record_every=50, **kw)
        monkeypatch.setattr(pl.training, "_COMPILED_GD", False)
        ref = pl.train_gd(net, task, start, record_every=50, **kw)
        for a, b, b0 in zip(fast.weights, ref.weights, start):
            assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()
            assert np.abs(b - b0).max() > 1e-3 * np.abs(b).max()  # the runs did move
        assert np.allclose(fast.kernels, ref.kernels, rtol=1e-12, atol=1e-14)
        assert np.allclose(fast.loss, ref.loss, rtol=1e-12, atol=1e-14)
        assert np.allclose(fast.entropy, ref.entropy, rtol=1e-12, atol=1e-14)
    # a replica's numbers do not depend on the others run with it: replica 3 alone, bit for bit
    monkeypatch.setattr(pl.training, "_COMPILED_GD", True)
    kw = cases[0][1]
    alone = pl.train_gd(
        net,
        task,
        [w[3:4] for w in w0],
        record_every=50,
        **{k: (v[3:4] if isinstance(v, np.ndarray) else v) for k, v in kw.items()},
    )
    group = pl.train_gd(net, task, w0, record_every=50, n_chunks=1, **kw)
    assert all(np.array_equal(a[0], b[3]) for a, b in zip(alone.weights, group.weights))
    # nor on the chunks the replicas are split into (threads): the default splits this run over the cores
    for n_chunks in (None, 2, 5):
        split = pl.train_gd(net, task, w0, record_every=50, n_chunks=n_chunks, **kw)
        assert all(np.array_equal(a, b) for a, b in zip(split.weights, group.weights))
        assert np.array_equal(split.kernels, group.kernels) and np.array_equal(split.entropy, group.entropy)


@pytest.mark.parametrize("batch", [4, 16], ids=["points", "bartlett"])
def test_float32_sgd_follows_float64_on_the_same_draws(batch, monkeypatch):
    """train_sgd(dtype=float32) draws float32 minibatches (other random numbers than float64's), so
    the two runs differ; fed the same (float32) draws, the float64 step and the float32 step follow
    each other to float32 rounding: measured ~5e-6 relative after 1,920 steps (tolerance 1e-4)."""
    from symbreak.engine import replica_streams

    task, net_a, _ = pl.example_pair()
    r = 40
    w0 = pl.init_weights(net_a, 1, replicas=r)
    monkeypatch.setattr(pl.training, "_LANE_DRAWS", False)  # the draws handed to both steps
    kw = dict(lr=np.full(r, 0.01), wd=np.full(r, 1e-3), lr_warmup=300, sgd=True, batch_size=batch)
    m32 = pl._PlatonicModel(np.arange(r), replica_streams(3, range(r)), net_a, task, w0, dtype=np.float32, **kw)
    m64 = pl._PlatonicModel(np.arange(r), replica_streams(3, range(r)), net_a, task, w0, **kw)
    for block in range(30):
        noise = m32.draw(64)
        m32.steps(noise, 0, 64, 64 * block)
        cast = tuple(a.astype(np.float64) for a in noise) if isinstance(noise, tuple) else noise.astype(np.float64)
        m64.steps(cast, 0, 64, 64 * block)
    assert m32.flat.dtype == np.float32
    for a, b, b0 in zip(m32.w, m64.w, w0):
        assert np.abs(a - b).max() <= 1e-4 * np.abs(b).max()
        assert np.abs(b - b0).max() > 1e-2 * np.abs(b).max()  # the runs did move


def test_float32_sgd_end_to_end():
    """train_sgd(dtype=float32): float32 weights, float64 records, the same numbers for the same seed
    whatever the chunking, a loss near float64's (both at the noise floor tr Σε after the warm-up:
    means over 32 replicas within 2%), and a ValueError naming dtype for anything but float32/64."""
    task, net_a, _ = pl.example_pair()
    w0 = pl.init_weights(net_a, 2, replicas=32)
    kw = dict(lr=0.01, batch_size=4, steps=6000, seed=3, lr_warmup=1000, record_every=2000)
    a = pl.train_sgd(net_a, task, w0, dtype=np.float32, **kw)
    b = pl.train_sgd(net_a, task, w0, dtype="float32", n_chunks=2, **kw)
    c = pl.train_sgd(net_a, task, w0, **kw)
    assert a.weights[0].dtype == np.float32 and a.kernels.dtype == np.float64
    assert all(np.array_equal(x, y) for x, y in zip(a.weights, b.weights))
    assert abs(a.loss[-1].mean() / c.loss[-1].mean() - 1) < 0.02
    for bad in (np.float16, np.int64, "double precision", 3):
        with pytest.raises(ValueError, match="dtype"):
            pl.train_sgd(net_a, task, w0, dtype=bad, **kw)


def test_entropic_loss_reaches_platonic_alignment(small_pair):
    """Gradient descent on L + γS (γ annealed 0.02 → 2e-4, the η → 0⁺ objective) aligns every
    hidden layer of both networks with each other and with K⋆ (quick-mode sizes)."""
    task, net_a, net_b, wa, wb = small_pair
    kw = dict(lr=0.04, steps=4000, gamma=0.02, gamma_warmup=300, gamma_final=2e-4, lr_warmup=300, record_every=4000)
    ra, rb = pl.train_gd(net_a, task, wa, **kw), pl.train_gd(net_b, task, wb, **kw)
    al = _all_pairs(task, ra.kernels[-1], rb.kernels[-1])
    assert al.min() >= 0.9995  # measured 0.99985
    assert np.all(np.abs(ra.loss[-1] - np.trace(task.sigma_eps)) < 1e-3)
    assert np.all(np.abs(rb.loss[-1] - np.trace(task.sigma_eps)) < 1e-3)


def test_sgd_reaches_platonic_alignment_and_gd_does_not(small_pair):
    """Online SGD with label noise (η = 0.03, B = 8, 10⁴ steps, kernels averaged over the last
    30 % of the run) aligns all layers; plain GD from the same initialisations does not."""
    task, net_a, net_b, wa, wb = small_pair
    kw = dict(lr=0.03, batch_size=8, steps=10_000, lr_warmup=300, record_every=200)
    ra = pl.train_sgd(net_a, task, wa, seed=96, **kw)
    rb = pl.train_sgd(net_b, task, wb, seed=97, **kw)
    al = _all_pairs(task, ra.window_kernels(0.3), rb.window_kernels(0.3))
    assert al.min() >= 0.995  # measured 0.998
    # the same initialisations under plain gradient descent keep their imbalance
    gd = dict(lr=0.03, steps=4000, lr_warmup=300, record_every=4000)
    ga, gb = pl.train_gd(net_a, task, wa, **gd), pl.train_gd(net_b, task, wb, **gd)
    assert np.all(np.abs(ga.loss[-1] - np.trace(task.sigma_eps)) < 1e-6)  # GD did converge
    assert np.all(np.abs(gb.loss[-1] - np.trace(task.sigma_eps)) < 1e-6)
    gd_al = _all_pairs(task, ga.kernels[-1], gb.kernels[-1])
    assert gd_al.mean() < 0.85  # measured 0.82
    assert gd_al.min() < 0.6  # measured 0.52
    # the clean control: gradient flow (no learning rate, charges conserved)
    fa = pl.gradient_flow(net_a, task, wa, t_end=60.0, n_records=1)
    fb = pl.gradient_flow(net_b, task, wb, t_end=60.0, n_records=1)
    flow_al = _all_pairs(task, fa.kernels[-1], fb.kernels[-1])
    assert flow_al.mean() < 0.85  # measured 0.81
    assert np.all(np.abs(fb.loss[-1] - np.trace(task.sigma_eps)) < 1e-8)


def test_no_label_noise_selects_nothing(small_pair):
    """Without label noise S vanishes on the minima: SGD ends where gradient descent ends."""
    task, net_a, _, wa, _ = small_pair
    quiet = task.with_noise(np.zeros((3, 3)))
    r = pl.train_sgd(net_a, quiet, wa, lr=0.01, batch_size=4, steps=4000, seed=98, lr_warmup=500, record_every=4000)
    assert np.all(r.entropy[-1] < 1e-6 * r.entropy[0])
    g = pl.train_gd(net_a, quiet, wa, lr=0.01, steps=4000, lr_warmup=500, record_every=4000)
    kstar = task.platonic_kernel()
    a_sgd = pl.kernel_alignment(r.kernels[-1], kstar)
    a_gd = pl.kernel_alignment(g.kernels[-1], kstar)
    assert np.all(np.abs(a_sgd - a_gd) < 0.05)
    assert a_sgd.mean() < 0.95


def test_divergence_is_reported_not_silent(small_pair):
    task, net_a, _, wa, _ = small_pair
    with pytest.raises(pl.DivergenceError, match="lr=2"):
        pl.train_sgd(net_a, task, wa, lr=2.0, batch_size=4, steps=200, seed=1, record_every=10)


def test_window_average(small_pair):
    task, net_a, _, wa, _ = small_pair
    r = pl.train_sgd(net_a, task, wa, lr=0.01, batch_size=4, steps=100, seed=1, record_every=10)
    assert np.allclose(r.window_kernels(0.2), r.kernels[r.steps >= 80].mean(0))
    assert np.allclose(r.window_kernels(1.0), r.kernels[1:].mean(0))


def test_slow_time_and_alignment_deficit(small_pair):
    """The slow time sums the (warmed-up) step weights; the deficit is 1 − mean alignment."""
    task, net_a, _, wa, _ = small_pair
    r = pl.train_sgd(net_a, task, wa, lr=0.01, batch_size=4, steps=100, seed=1, lr_warmup=40, record_every=10)
    w = np.minimum((np.arange(100) + 1) / 40, 1.0)
    assert np.allclose(r.slow_time(2.0, power=2), 2.0 * np.concatenate([[0.0], np.cumsum(w**2)])[r.steps])
    assert np.allclose(r.slow_time(3.0, power=1)[-1], 3.0 * w.sum())
    kstar = task.platonic_kernel()
    expected = [1.0 - np.mean([pl.kernel_alignment(k, kstar) for k in ks.reshape(-1, 3, 3)]) for ks in r.kernels]
    assert np.allclose(r.alignment_deficit(kstar), expected, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="reference"):
        r.alignment_deficit(np.eye(4))
    with pytest.raises(ValueError, match="power"):
        r.slow_time(1.0, power=3)


def test_converge_entropic_stops_when_the_kernels_stop_moving():
    """converge_entropic runs L + γS until no normalised kernel entry moves by tol over a chunk: the
    returned change is below tol, the steps are a multiple of the chunk, and one more chunk from the
    returned weights moves no entry by tol or more. A cap too small to converge returns a change
    above tol (the caller checks it); bad input is refused."""
    task = pl.random_task(1, n=3, m=3, noise=0.5)
    net = pl.random_edln(2, 3, 3, (3,))
    w0 = pl.init_weights(net, 3, replicas=2, scale=0.5)
    w, k, steps, change = pl.converge_entropic(net, task, w0, gamma=0.01, lr=0.005, chunk=500, tol=1e-4, max_chunks=60)
    assert change < 1e-4 and steps % 500 == 0 and steps >= 1000
    assert np.allclose(k, pl.hidden_kernels(net, w, normalize=True))
    more = pl.train_gd(net, task, w, lr=0.005, steps=500, gamma=0.01, record_every=500).weights
    assert np.abs(pl.hidden_kernels(net, more, normalize=True) - k).max() < 1e-4
    _, _, steps2, change2 = pl.converge_entropic(net, task, w0, gamma=0.01, lr=0.005, chunk=10, tol=1e-12, max_chunks=2)
    assert steps2 == 20 and change2 >= 1e-12
    for kw in (dict(gamma=0.0), dict(chunk=0), dict(tol=-1.0), dict(max_chunks=1)):
        args = dict(gamma=0.01, lr=0.005, chunk=500, tol=1e-4, max_chunks=10) | kw
        with pytest.raises(ValueError, match=next(iter(kw))):
            pl.converge_entropic(net, task, w0, **args)


def test_trajectories_do_not_depend_on_the_divergence_check_interval(monkeypatch):
    """The runner calls the compiled SGD and GD steps once per divergence check (``_CHECK_EVERY``
    steps): the numbers are the same, bit for bit, with a check every 8 steps."""
    task, net_a, net_b = pl.example_pair()
    runs = {}
    for every in (8, 64):
        monkeypatch.setattr(pl.training, "_CHECK_EVERY", every)
        w = pl.init_weights(net_b, 3, replicas=3)
        runs[every] = [
            pl.train_sgd(net_b, task, w, lr=0.01, batch_size=4, steps=700, seed=5, lr_warmup=100, record_every=70),
            pl.train_gd(
                net_b, task, w, lr=0.02, gamma=3e-3, gamma_warmup=100, steps=700, lr_warmup=300, record_every=70
            ),
        ]
    for a, b in zip(runs[8], runs[64]):
        assert all(np.array_equal(x, y) for x, y in zip(a.weights, b.weights))
        assert np.array_equal(a.kernels, b.kernels) and np.array_equal(a.entropy, b.entropy)
