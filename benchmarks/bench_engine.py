"""The ensemble engine against naive PyTorch training loops, on the same workloads, in one run.

Two workloads, each the book's own:

* **autoencoder** (the autoencoder chapter's Fig. 1D–F): a linear autoencoder ``x̂ = W U x`` with
  ``d = 20``, ``k = 10``, Gaussian data with the geometric spectrum 12 → 0.18, minibatch
  ``B = 128``, learning rate ``η = 0.02``, PCA initialisation;
* **platonic** (the Platonic chapter's SGD runs): the embedded deep linear network A of
  :func:`symbreak.platonic.example_pair` (depth 3, widths 5, 6; ``n = 4``, ``m = 5``) on its
  noisy task, ``B = 4``, ``η = 0.01`` with the chapter's learning-rate warm-up over 1000 steps.

Baselines, as a user who needs an ensemble would write them, all replicas at once as batched
tensors: PyTorch with autograd, PyTorch with hand-written gradients, and (with the optional extra
``symbreak[bench]``) JAX ``jit`` + ``vmap`` over replicas inside ``lax.scan``; for the autoencoder
also PyTorch drawing each minibatch as its sufficient statistic, the Wishart matrix ``XᵀX``, by the
Bartlett decomposition — the engine's algorithm in PyTorch, which separates what the algorithm gives
from what the implementation gives. Each in float64 and float32, with one thread and with PyTorch's
default threads; the strongest is named and the engine's ratio to it printed first. And the naive
loop: one network trained by a plain PyTorch autograd loop — draw the minibatch, forward,
``loss.backward()``, manual SGD update — step after step, in float64 and float32, with one
intra-op thread and with PyTorch's default threads, after a warm-up. The *best* of these is the
baseline. When the default threads are slower than one thread (they thrash on tiny tensors), that
configuration is reported as such, not as a rate.

Engine: :func:`symbreak.autoencoder.simulate_sgd` / :func:`symbreak.platonic.train_sgd`, a batched
ensemble of replicas over all cores (:func:`symbreak.engine.run_ensemble`), exact Wishart
minibatch statistics, float64 and float32, after a warm-up.

Rates are replica-steps per second (one SGD step of one network), wall clock; the engine's CPU
time per replica-step is printed against two floors measured in the same run: the **RNG floor**
(the step's ``d(d−1)/2 + d`` normals drawn in bulk by the compiled SFC64 ziggurat, a SIMD group's
streams in lanes at once as the engine draws them, :mod:`symbreak._sfc64_lanes`; one stream at a
time, :mod:`symbreak._sfc64`, and NumPy's own bulk draw are printed next to it) and the **FLOP floor**
(the step's multiply-adds at the rate of a large single-thread matrix product). A breakdown of
one engine chunk says where the rest goes. Usage: ``python benchmarks/bench_engine.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from symbreak import _sfc64
from symbreak import platonic as pl
from symbreak._ae_lanes import _LANES
from symbreak._sfc64_lanes import fill_normal_lanes
from symbreak.autoencoder import _FusedLinearStepper, _LinearStepper, geometric_spectrum, simulate_sgd
from symbreak.autoencoder.sgd import _LaneLinearStepper
from symbreak.engine import WishartBlockSampler, fill_normals, n_workers, replica_streams
from symbreak.rng import torch_generator

D, K, B, ETA = 20, 10, 128, 0.02
PL_B, PL_ETA, PL_WARMUP = 4, 0.01, 1000
TORCH_DT = {np.float64: torch.float64, np.float32: torch.float32}


def _timed(fn, steps: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    return steps / (time.perf_counter() - t0)


def _cpu_timed(fn, steps: int, warmup: int) -> float:
    """Calls of ``fn`` per second of this process's CPU time (all its threads): what a breakdown of
    CPU time per replica-step needs, and what a loaded machine does not inflate as it does wall time."""
    for _ in range(warmup):
        fn()
    t0 = time.process_time()
    for _ in range(steps):
        fn()
    return steps / (time.process_time() - t0)


def _with_threads(threads, fn):
    old = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return fn()
    finally:
        torch.set_num_threads(old)


def naive_autoencoder(steps: int, dtype, threads) -> float:
    """Replica-steps/s of a plain PyTorch autograd loop training one autoencoder."""

    def run():
        dt = TORCH_DT[dtype]
        sd = torch.tensor(np.sqrt(geometric_spectrum(D)), dtype=dt)
        W = torch.zeros(D, K, dtype=dt)
        W[:K, :K] = torch.eye(K, dtype=dt)
        U = W.T.clone()
        W.requires_grad_(True)
        U.requires_grad_(True)
        gen = torch_generator(0)

        def step():
            x = torch.randn(B, D, dtype=dt, generator=gen) * sd  # a fresh minibatch
            loss = 0.5 * ((x @ U.T @ W.T - x) ** 2).sum(dim=1).mean()
            loss.backward()
            with torch.no_grad():
                W.sub_(ETA * W.grad)
                U.sub_(ETA * U.grad)
            W.grad = None
            U.grad = None

        return _timed(step, steps, min(200, steps))

    return _with_threads(threads, run)


def _platonic_setup():
    task, net, _ = pl.example_pair()
    return task, net


def _platonic_tensors(task, net, dt):
    """The Platonic workload's fixed matrices as torch tensors of dtype ``dt``: the Cholesky factor of
    Σx, the square root of Σε, V⋆, the input and output maps, and the initial weights."""
    t = lambda a: torch.tensor(np.asarray(a), dtype=dt)  # noqa: E731
    fixed = (t(np.linalg.cholesky(task.sigma_x)), t(pl.sqrtm_psd(task.sigma_eps)))
    fixed += (t(task.v_star), t(net.input_map), t(net.m_out))
    return fixed, [t(w) for w in pl.init_weights(net, 1)]


def naive_platonic(steps: int, dtype, threads) -> float:
    """Replica-steps/s of a plain PyTorch autograd loop training one EDLN on data points."""
    task, net = _platonic_setup()

    def run():
        dt = TORCH_DT[dtype]
        (lx, le, v, m_in, m_out), w0 = _platonic_tensors(task, net, dt)
        ws = [w.requires_grad_(True) for w in w0]
        gen = torch_generator(1)
        count = [0]

        def step():
            count[0] += 1
            lr = PL_ETA * min(count[0] / PL_WARMUP, 1.0)  # the book's learning-rate warm-up
            x = torch.randn(PL_B, task.n, dtype=dt, generator=gen) @ lx.T
            eps = torch.randn(PL_B, task.m, dtype=dt, generator=gen) @ le.T
            h = x @ m_in.T
            for w in ws:
                h = h @ w.T
            loss = ((h @ m_out.T - x @ v.T - eps) ** 2).sum(dim=1).mean()
            loss.backward()
            with torch.no_grad():
                for w in ws:
                    w.sub_(lr * w.grad)
                    w.grad = None

        return _timed(step, steps, min(200, steps))

    return _with_threads(threads, run)


# ---------------------------------------------------------------------------------------------
# what a user who needs an ensemble would write: all replicas as batched tensors
# ---------------------------------------------------------------------------------------------

#: the batched baselines: name -> what it is (printed with each rate)
BATCHED_KINDS = {
    "autograd": "PyTorch batched, autograd",
    "manual": "PyTorch batched, hand-written gradients",
    "wishart": "PyTorch batched, Wishart draw (Bartlett; the engine's algorithm)",
}


def ae_grads_manual(W, U, x):
    """Hand-written gradients of the batched autoencoder loss ``½ mean_b |WUx_b − x_b|²``:
    ``∇_W = Eᵀ(XUᵀ)/B``, ``∇_U = (EW)ᵀX/B`` with ``E = XUᵀWᵀ − X`` (shapes ``(R, D, K)``, ``(R, K, D)``)."""
    r = x @ U.transpose(1, 2)  # (R, B, K)
    e = r @ W.transpose(1, 2) - x  # (R, B, D)
    n = x.shape[1]
    return e.transpose(1, 2) @ r / n, (e @ W).transpose(1, 2) @ x / n


def ae_grads_wishart(W, U, sigma):
    """The same gradients through the minibatch's sufficient statistic ``Σ̂ = XᵀX/B``:
    ``∇_W = MΣ̂Uᵀ``, ``∇_U = WᵀMΣ̂`` with ``M = WU − I``."""
    m = (W @ U - torch.eye(W.shape[1], dtype=W.dtype)) @ sigma
    return m @ U.transpose(1, 2), W.transpose(1, 2) @ m


def platonic_grads_manual(ws, m_in, m_out, x, y):
    """Hand-written backpropagation of ``mean_b |M_out W_L ⋯ W_1 M_in x_b − y_b|²`` through the
    batched product of layers ``ws`` (each ``(R, out, in)``); returns the gradients of ``ws``."""
    hs = [x @ m_in.T]
    for w in ws:
        hs.append(hs[-1] @ w.transpose(1, 2))
    g = (hs[-1] @ m_out.T - y) @ m_out * (2.0 / x.shape[1])  # ∂L/∂h_L
    grads = []
    for i in range(len(ws) - 1, -1, -1):
        grads.append(g.transpose(1, 2) @ hs[i])
        g = g @ ws[i]
    return grads[::-1]


def bartlett_scatter(half_df, sd, gen):
    """``F Fᵀ`` for ``F = diag(sd) A``, ``A`` the Bartlett factor of a Wishart(I, n) matrix: normals
    below the diagonal, ``sqrt(χ²_{n−i})`` on it (``half_df[:, i] = (n − i)/2``); so ``F Fᵀ/n`` is
    distributed as ``XᵀX/n`` for ``n`` Gaussian rows of covariance ``diag(sd²)``. Shape ``(R, d, d)``."""
    replicas, d = half_df.shape
    a = torch.randn(replicas, d, d, dtype=half_df.dtype, generator=gen).tril_(-1)
    a.diagonal(dim1=1, dim2=2).copy_((2 * torch._standard_gamma(half_df)).sqrt_())
    f = a * sd[:, None]
    return f @ f.transpose(1, 2)


def batched_autoencoder(steps: int, dtype, threads, replicas: int, kind: str) -> float:
    """Replica-steps/s of ``replicas`` autoencoders trained together as batched PyTorch tensors.

    ``kind``: ``"autograd"`` (``loss.backward()`` on the summed loss), ``"manual"`` (the gradients
    ``∇_W L̂ = E ᵀ(XUᵀ)/B``, ``∇_U L̂ = (EW)ᵀX/B`` with ``E = XUᵀWᵀ − X`` written out) or
    ``"wishart"`` (the same loss through its sufficient statistic ``Σ̂ = XᵀX/B``, drawn by the
    Bartlett decomposition — ``D(D−1)/2`` normals and ``D`` chi-squares instead of ``B·D`` normals —
    with ``∇_W L̂ = MΣ̂Uᵀ``, ``∇_U L̂ = WᵀMΣ̂``, ``M = WU − I``: the engine's algorithm, written in
    PyTorch)."""
    if kind not in BATCHED_KINDS:
        raise ValueError(f"kind must be one of {tuple(BATCHED_KINDS)}, got {kind!r}")

    def run():
        dt = TORCH_DT[dtype]
        torch.manual_seed(0)  # torch._standard_gamma draws from the global generator
        gen = torch_generator(0)
        sd = torch.tensor(np.sqrt(geometric_spectrum(D)), dtype=dt)
        W = torch.zeros(replicas, D, K, dtype=dt)
        W[:, :K, :K] = torch.eye(K, dtype=dt)
        U = W.transpose(1, 2).clone()
        half_df = ((B - torch.arange(D, dtype=dt)) / 2).expand(replicas, D).contiguous()
        if kind == "autograd":
            W.requires_grad_(True)
            U.requires_grad_(True)

        def step_autograd():
            x = torch.randn(replicas, B, D, dtype=dt, generator=gen) * sd
            loss = 0.5 * ((x @ U.transpose(1, 2) @ W.transpose(1, 2) - x) ** 2).sum(dim=2).mean(dim=1).sum()
            loss.backward()
            with torch.no_grad():
                W.sub_(ETA * W.grad)
                U.sub_(ETA * U.grad)
            W.grad = None
            U.grad = None

        def step_manual():
            x = torch.randn(replicas, B, D, dtype=dt, generator=gen) * sd
            g_w, g_u = ae_grads_manual(W, U, x)
            W.sub_(g_w, alpha=ETA)
            U.sub_(g_u, alpha=ETA)

        def step_wishart():
            g_w, g_u = ae_grads_wishart(W, U, bartlett_scatter(half_df, sd, gen))
            W.sub_(g_w, alpha=ETA / B)
            U.sub_(g_u, alpha=ETA / B)

        step = {"autograd": step_autograd, "manual": step_manual, "wishart": step_wishart}[kind]
        return replicas * _timed(step, steps, min(50, steps))

    return _with_threads(threads, run)


def batched_platonic(steps: int, dtype, threads, replicas: int, kind: str) -> float:
    """Replica-steps/s of ``replicas`` copies of the Platonic workload's network trained together as
    batched PyTorch tensors, by autograd (``kind="autograd"``) or by hand-written backpropagation
    through the product of layers (``kind="manual"``)."""
    if kind not in ("autograd", "manual"):
        raise ValueError(f"kind must be 'autograd' or 'manual' for the Platonic workload, got {kind!r}")
    task, net = _platonic_setup()

    def run():
        dt = TORCH_DT[dtype]
        (lx, le, v, m_in, m_out), w0 = _platonic_tensors(task, net, dt)
        ws = [w.expand(replicas, *w.shape).clone() for w in w0]
        if kind == "autograd":
            for w in ws:
                w.requires_grad_(True)
        gen = torch_generator(1)
        count = [0]

        def forward():
            x = torch.randn(replicas, PL_B, task.n, dtype=dt, generator=gen) @ lx.T
            eps = torch.randn(replicas, PL_B, task.m, dtype=dt, generator=gen) @ le.T
            h = x @ m_in.T
            for w in ws:
                h = h @ w.transpose(1, 2)
            return h @ m_out.T - x @ v.T - eps

        def step():
            count[0] += 1
            lr = PL_ETA * min(count[0] / PL_WARMUP, 1.0)
            if kind == "autograd":
                e = forward()
                (e**2).sum(dim=2).mean(dim=1).sum().backward()
                with torch.no_grad():
                    for w in ws:
                        w.sub_(lr * w.grad)
                        w.grad = None
                return
            x = torch.randn(replicas, PL_B, task.n, dtype=dt, generator=gen) @ lx.T
            y = x @ v.T + torch.randn(replicas, PL_B, task.m, dtype=dt, generator=gen) @ le.T
            for w, gw in zip(ws, platonic_grads_manual(ws, m_in, m_out, x, y)):
                w.sub_(gw, alpha=lr)

        return replicas * _timed(step, steps, min(50, steps))

    return _with_threads(threads, run)


def jax_rate(workload: str, steps: int, dtype, replicas: int) -> float | None:
    """Replica-steps/s of JAX ``jit`` + ``vmap`` over replicas inside ``lax.scan`` (autograd by
    ``jax.grad``), or ``None`` when JAX is not installed (``pip install -e ".[bench]"``)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    dt = jnp.float64 if dtype is np.float64 else jnp.float32
    chunk = 100
    if workload == "autoencoder":
        sd = jnp.asarray(np.sqrt(geometric_spectrum(D)), dt)

        def loss(params, x):
            w, u = params
            r = x @ u.T @ w.T - x
            return 0.5 * jnp.mean(jnp.sum(r * r, axis=1))

        def sample(key):
            return jax.random.normal(key, (B, D), dt) * sd

        w0 = np.zeros((D, K))
        w0[:K, :K] = np.eye(K)
        params0 = (jnp.asarray(w0, dt), jnp.asarray(w0.T, dt))
        lr_of = lambda i: ETA  # noqa: E731
    else:
        task, net = _platonic_setup()
        a = lambda m: jnp.asarray(np.asarray(m), dt)  # noqa: E731
        lx, le = a(np.linalg.cholesky(task.sigma_x)), a(pl.sqrtm_psd(task.sigma_eps))
        v, m_in, m_out = a(task.v_star), a(net.input_map), a(net.m_out)

        def loss(params, xe):
            x, eps = xe
            h = x @ m_in.T
            for w in params:
                h = h @ w.T
            e = h @ m_out.T - x @ v.T - eps
            return jnp.mean(jnp.sum(e * e, axis=1))

        def sample(key):
            k1, k2 = jax.random.split(key)
            return (
                jax.random.normal(k1, (PL_B, task.n), dt) @ lx.T,
                jax.random.normal(k2, (PL_B, task.m), dt) @ le.T,
            )

        params0 = tuple(a(w) for w in pl.init_weights(net, 1))
        lr_of = lambda i: PL_ETA * jnp.minimum(i / PL_WARMUP, 1.0)  # noqa: E731

    grad = jax.grad(loss)

    def one(params, key_and_index):
        key, i = key_and_index
        g = grad(params, sample(key))
        lr = lr_of(i)
        return jax.tree_util.tree_map(lambda p, q: p - lr * q, params, g), None

    def run(params, keys, idx):
        return jax.lax.scan(one, params, (keys, idx))[0]

    vrun = jax.jit(jax.vmap(run, in_axes=(0, 0, None)))
    params = jax.tree_util.tree_map(lambda p: jnp.broadcast_to(p, (replicas, *p.shape)), params0)
    base = jax.random.PRNGKey(0)

    def chunk_keys(c):
        return jax.random.split(jax.random.fold_in(base, c), replicas * chunk).reshape(replicas, chunk, -1)

    params = vrun(params, chunk_keys(0), jnp.arange(1, chunk + 1, dtype=dt))  # compile and warm up
    jax.block_until_ready(params)
    n_chunks = max(1, steps // chunk)
    keys = [chunk_keys(c + 1) for c in range(n_chunks)]
    jax.block_until_ready(keys)
    t0 = time.perf_counter()
    for c in range(n_chunks):
        params = vrun(params, keys[c], jnp.arange(1, chunk + 1, dtype=dt) + chunk * (c + 1))
    jax.block_until_ready(params)
    return replicas * n_chunks * chunk / (time.perf_counter() - t0)


def engine_rate(workload: str, steps: int, replicas: int, dtype) -> tuple[float, float]:
    """Replica-steps/s of the engine (wall clock) and its CPU time per replica-step in µs."""
    if workload == "autoencoder":
        lam = geometric_spectrum(D)

        def run(n, seed):
            simulate_sgd(lam, K, ETA, B, n, seeds=replicas, record_every=n, dtype=dtype, seed=seed)
    else:
        task, net = _platonic_setup()
        w0 = pl.init_weights(net, 1, replicas=replicas)

        def run(n, seed):
            pl.train_sgd(
                net,
                task,
                w0,
                lr=PL_ETA,
                batch_size=PL_B,
                steps=n,
                seed=seed,
                record_every=n,
                lr_warmup=PL_WARMUP,
                n_chunks=n_workers(),
                dtype=dtype,
            )

    run(200, 1)  # warm-up
    t0, c0 = time.perf_counter(), time.process_time()
    run(steps, 2)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return replicas * steps / wall, cpu / (replicas * steps) * 1e6


def floors(dtype) -> dict:
    """CPU µs per replica-step of the autoencoder step's random numbers and arithmetic, one thread."""
    rng = replica_streams(0, [0])[0]
    n = 4096
    z = np.empty((n, D * (D - 1) // 2), dtype=dtype)
    g = np.empty((n, D), dtype=dtype)
    shape = np.tile((B - np.arange(D)) / 2.0, (n, 1)).astype(dtype)

    def rng_once():
        rng.standard_normal(out=z, dtype=dtype)
        rng.standard_gamma(shape, out=g, dtype=dtype)

    zz = np.empty((1, n * (D * (D - 1) // 2 + D)), dtype=dtype)
    lanes = _LANES[np.dtype(dtype).name]
    lane_rngs = replica_streams(0, range(lanes))  # (kept alive: the draw writes to their states)
    addr = np.array([_sfc64.state_address(g) for g in lane_rngs], dtype=np.int64)
    per_lane = n // lanes * (D * (D - 1) // 2 + D)
    zl = np.empty(per_lane * lanes, dtype=dtype)

    def normals_once():  # the step's 210 normals (190 off-diagonal + one per Marsaglia–Tsang gamma), compiled
        fill_normals([rng], zz)

    def lane_normals_once():  # the same, a SIMD group's lanes at once, as the engine's step draws them
        fill_normal_lanes(addr, zl, per_lane)
        return lane_rngs

    rate = _cpu_timed(rng_once, 10, 2)
    out = {"numpy_rng": 1e6 / (rate * n)}
    out["scalar_rng"] = 1e6 / (_cpu_timed(normals_once, 10, 2) * n)
    out["rng"] = 1e6 / (_cpu_timed(lane_normals_once, 10, 2) * n)
    big = np.random.default_rng(0).standard_normal((512, 512)).astype(dtype)
    c = np.empty_like(big)
    try:  # one BLAS thread: with more, their spin-waiting counts as CPU time on a loaded machine
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    if threadpool_limits is None:  # flop per second of the BLAS threads as configured
        mm = _timed(lambda: np.matmul(big, big, out=c), 10, 2) * 2 * 512**3
    else:
        with threadpool_limits(1, user_api="blas"):  # flop per CPU second
            mm = _cpu_timed(lambda: np.matmul(big, big, out=c), 10, 2) * 2 * 512**3
    # per step: A Aᵀ (d³ with a triangular A: d³/3 useful), U Σ̂, W(UΣ̂), WᵀP, UPᵀ (4 k d² each)
    flops = 2 * (D**3 / 3 + 4 * K * D * D)
    out["flop"] = flops / mm * 1e6
    out["gflops"] = mm / 1e9
    return out


def breakdown(dtype, replicas: int = 64, m: int = 16) -> dict:
    """CPU µs per replica-step of one engine chunk's parts, one thread: the compiled step the engine
    runs (one call per 8 steps: each step's Bartlett variates drawn inside the step, replicas in SIMD
    lanes, the update through the Bartlett factor), and for comparison the block path it replaced
    (the block's random variates first, then each block's ηΣ̂ by the compiled Bartlett kernel, 16
    replicas at a time, and the SGD update's BLAS products) and the batched NumPy path (each step's
    Σ̂ built by the compiled Bartlett kernel, then the NumPy update); the same minibatches."""
    lam = geometric_spectrum(D)

    def sampler():
        return WishartBlockSampler(
            np.sqrt(lam), np.full(replicas, B), scale=np.full(replicas, ETA), dtype=dtype, max_steps=m
        )

    sampler, lane_sampler = sampler(), sampler()
    streams, lane_streams = replica_streams(0, range(replicas)), replica_streams(0, range(replicas))
    V = np.zeros((replicas, 2 * K, D), dtype=dtype)
    V[:, np.arange(K), np.arange(K)] = 1.0
    V[:, K + np.arange(K), np.arange(K)] = 1.0
    stepper, fused, lanes = (
        _LinearStepper(V.copy(), K),
        _FusedLinearStepper(V.copy(), K),
        _LaneLinearStepper(V.copy(), K),
    )
    sig = sampler.draw(streams, m).copy()
    var = tuple(np.copy(a) for a in sampler.variates(streams, m))

    def steps():
        for t in range(m):
            stepper.step(sig[t])

    def draw():  # the NumPy path: the block's variates, then each step's Σ̂ as it is used
        block = sampler.draw_steps(streams, m)
        for t in range(m):
            block[t]

    def variates():  # the random numbers alone: normals, uniforms and gammas, one compiled loop (SFC64)
        sampler._variates(None, streams, m)

    def compiled():  # the block path's compiled step: one call per 8 steps (the engine's divergence checks)
        for t0 in range(0, m, 8):
            fused.steps(var, t0, min(t0 + 8, m))

    def lane_steps():  # what the engine runs: one call per 8 steps, each drawing its steps' minibatches
        args = lane_sampler.lane_arguments(lane_streams)
        for t0 in range(0, m, 8):
            lanes.steps(args, min(8, m - t0))

    per = m * replicas
    out = {
        "lanes": 1e6 / (_cpu_timed(lane_steps, 30, 3) * per),
        "draw": 1e6 / (_cpu_timed(draw, 30, 3) * per),
        "variates": 1e6 / (_cpu_timed(variates, 30, 3) * per),
        "step": 1e6 / (_cpu_timed(steps, 30, 3) * per),
        "compiled": 1e6 / (_cpu_timed(compiled, 30, 3) * per),
    }
    out["products"] = out["draw"] - out["variates"]
    return out


def platonic_breakdown(replicas: int = 128, m: int = 64) -> dict:
    """CPU µs per replica-step of the Platonic engine's parts, one thread: the compiled step the
    engine runs (one call per block of 64 steps: each step's ``d × B`` normals drawn inside the step
    from the replicas' own SFC64 streams, the minibatch moments ``c (L X)(L X)ᵀ``, then the SGD
    update), the same normals drawn alone by the sampler (compiled SFC64: the RNG floor), and for
    comparison the batched NumPy path (the sampler's moments, ``L X`` and ``X Xᵀ`` batched, then
    the NumPy step); and the step's multiply-adds."""
    task, net = _platonic_setup()
    w0 = pl.init_weights(net, 1, replicas=replicas)
    streams = replica_streams(0, range(replicas))
    # (the warm-up keeps the repeated steps on one block of minibatches small: each round starts at step 0)
    kw = dict(lr=np.full(replicas, PL_ETA), wd=np.zeros(replicas), lr_warmup=PL_WARMUP, sgd=True, batch_size=PL_B)
    fast = pl._PlatonicModel(np.arange(replicas), streams, net, task, w0, **kw)
    from symbreak.platonic import training  # the module that reads the switch

    old, training._COMPILED_SGD = training._COMPILED_SGD, False
    try:
        slow = pl._PlatonicModel(np.arange(replicas), streams, net, task, w0, **kw)
    finally:
        training._COMPILED_SGD = old
    consts = fast.draw(m)  # (the compiled step draws its own normals: only the factor and c_r / B)
    moments = slow.draw(m).copy()
    sampler, streams2 = fast.sampler, replica_streams(1, range(replicas))

    def compiled():  # one call per block of m steps, as the engine runs it
        fast.steps(consts, 0, m, 0)

    def numpy_step():
        for t in range(m):
            slow.step(moments, t, 0)

    per = m * replicas
    dims = (net.n,) + net.widths + (net.m,)
    n, mm, depth = net.n, net.m, net.depth
    fma = sum(dims[i + 1] * dims[i] * n for i in range(depth))  # prefix maps P
    fma += sum(mm * dims[i + 1] * dims[i + 2] for i in range(depth - 1))  # suffix maps Q
    fma += mm * mm * n + mm * n * n  # A and E
    fma += sum(dims[i + 1] * mm * n + dims[i + 1] * n * dims[i] for i in range(depth))  # gradients
    return {
        "normals": 1e6 / (_cpu_timed(lambda: sampler.points(streams2, m), 30, 3) * per),
        "compiled": 1e6 / (_cpu_timed(compiled, 30, 3) * per),
        "moments": 1e6 / (_cpu_timed(lambda: slow.draw(m), 30, 3) * per),
        "step": 1e6 / (_cpu_timed(numpy_step, 10, 1) * per),
        "fma": fma,
        "normals_per_step": (task.n + task.m) * PL_B,
    }


def naive_table(name, fn, steps):
    """Time the naive loop in every configuration; return the best rate and the printed lines."""
    default_threads = torch.get_num_threads()
    best, lines, one = 0.0, [], {}
    for dtype in (np.float64, np.float32):
        r1 = fn(steps, dtype, 1)
        one[dtype] = r1
        lines.append(f"  naive PyTorch loop, {np.dtype(dtype).name}, 1 thread{'':<14s}: {r1:12,.0f} replica-steps/s")
        best = max(best, r1)
        if default_threads > 1:
            # a short probe first: thrashing threads can be 50x slower, and a full run would take minutes
            rd = fn(min(steps, 100), dtype, None)
            if rd >= r1:
                rd = fn(steps, dtype, None)
            if rd < r1:
                name = np.dtype(dtype).name
                lines.append(
                    f"  naive PyTorch loop, {name}, default ({default_threads} threads): slower "
                    f"than 1 thread ({rd / r1:.2f}x): extra intra-op threads only add overhead (or thrash) on "
                    "these tiny tensors; not a baseline"
                )
            else:
                lines.append(
                    f"  naive PyTorch loop, {np.dtype(dtype).name}, default ({default_threads} threads): "
                    f"{rd:12,.0f} replica-steps/s"
                )
                best = max(best, rd)
        else:
            lines.append(
                f"  naive PyTorch loop, {np.dtype(dtype).name}, default threads: PyTorch has 1 thread here "
                "(same as above)"
            )
    return best, lines


def device_rates(device: str, steps: int = 64) -> None:
    """Replica-steps/s of the autoencoder ensemble on a torch device at R = 10⁴, 10⁵, 10⁶."""
    lam = geometric_spectrum(D)
    for replicas in (10**4, 10**5, 10**6):
        for dtype in (np.float32, np.float64):
            try:
                simulate_sgd(lam, K, ETA, B, 8, seeds=replicas, record_every=8, dtype=dtype, seed=1, device=device)
                t0 = time.perf_counter()
                simulate_sgd(
                    lam, K, ETA, B, steps, seeds=replicas, record_every=steps, dtype=dtype, seed=2, device=device
                )
                rate = replicas * steps / (time.perf_counter() - t0)
                print(f"  {device}, {replicas:>9,d} replicas, {np.dtype(dtype).name}: {rate:14,.0f} replica-steps/s")
            except (RuntimeError, MemoryError) as err:  # out of device memory
                print(f"  {device}, {replicas:>9,d} replicas, {np.dtype(dtype).name}: failed ({str(err)[:80]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke test)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="rounds of the naive loops and the engine, interleaved; the best of each is compared (default 3)",
    )
    parser.add_argument("--device", help="also time the autoencoder ensemble on this torch device (e.g. cuda)")
    args = parser.parse_args()
    naive_steps, eng_steps, replicas, pl_replicas = (300, 400, 64, 64) if args.quick else (3000, 3000, 128, 256)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    cores = n_workers()
    print(
        f"machine: {cores} cores for the engine, torch {torch.__version__} with {torch.get_num_threads()} default "
        f"threads, load average {load:.1f} at the start"
        + (
            " (a loaded machine: absolute rates are low and noisy; the ratios are measured within this run)"
            if load > 0.5 * cores
            else ""
        )
    )
    rounds = max(1, args.repeat)
    batched_steps = 60 if args.quick else 400
    for workload, fn, reps in (("autoencoder", naive_autoencoder, replicas), ("platonic", naive_platonic, pl_replicas)):
        if workload == "autoencoder":
            print(f"\n[autoencoder] linear autoencoder d={D}, k={K}, B={B}, eta={ETA}")
            kinds = tuple(BATCHED_KINDS)
            batched = batched_autoencoder
        else:
            print(f"\n[platonic] EDLN A of example_pair (depth 3), n=4, m=5, B={PL_B}, eta={PL_ETA}")
            kinds = ("autograd", "manual")
            batched = batched_platonic
        # rounds of the same measurements, the baselines and the engine interleaved, so that a slow
        # spell of a shared machine hits both; the best of each over the rounds is compared
        bases, engines = [], {np.float64: [], np.float32: []}
        others: dict[str, float] = {}
        for _ in range(rounds):
            base, lines = naive_table(workload, fn, naive_steps)
            bases.append(base)
            for kind in kinds:
                for dtype in (np.float64, np.float32):
                    for threads in (1, None):
                        name = f"{BATCHED_KINDS[kind]}, {np.dtype(dtype).name}"
                        rate = batched(batched_steps, dtype, threads, reps, kind)
                        others[name] = max(others.get(name, 0.0), rate)
            for dtype in (np.float64, np.float32):
                rate = jax_rate(workload, batched_steps if args.quick else 1000, dtype, reps)
                if rate is not None:
                    name = f"JAX jit + vmap inside lax.scan, {np.dtype(dtype).name}"
                    others[name] = max(others.get(name, 0.0), rate)
            for dtype in engines:
                rate, cpu = engine_rate(workload, eng_steps, reps, dtype)
                if np.isfinite(rate):
                    engines[dtype].append((rate, cpu))
        if rounds > 1:
            print(f"  (each naive configuration as timed in the last of {rounds} rounds)")
        print("\n".join(lines))
        base = max(bases)
        print(
            f"  best naive loop{'':<33s}: {base:12,.0f} replica-steps/s"
            + (f" (best of {rounds} rounds: " + ", ".join(f"{b:,.0f}" for b in bases) + ")" if rounds > 1 else "")
        )
        print(
            f"  baselines over all {reps} replicas at once (best of 1 thread and the default threads, {rounds} rounds):"
        )
        for name, rate in others.items():
            print(f"    {name}: {rate:12,.0f} replica-steps/s")
        if not any(n.startswith("JAX") for n in others):
            print('    JAX: not installed (pip install -e ".[bench]" to time it)')
        strongest = max(others, key=others.get)
        user = {n: r for n, r in others.items() if "Wishart" not in n}
        strongest_user = max(user, key=user.get)
        print(f"  strongest baseline: {strongest} ({others[strongest]:,.0f} replica-steps/s)")
        if strongest_user != strongest:
            print(
                f"  strongest baseline without the engine's algorithm (a fresh minibatch of B·d normals): "
                f"{strongest_user} ({user[strongest_user]:,.0f} replica-steps/s)"
            )
        for dtype, runs in engines.items():
            if not runs:
                continue
            rate, cpu = max(runs)
            per_round = ", ".join(f"{r / b:.1f}x" for (r, _), b in zip(runs, bases))
            print(
                f"  engine, {reps} replicas, {np.dtype(dtype).name}, {cores} threads: {rate:12,.0f} replica-steps/s = "
                f"{rate / others[strongest]:.1f}x the strongest baseline"
                + (
                    f", {rate / user[strongest_user]:.1f}x the strongest without its algorithm"
                    if strongest_user != strongest
                    else ""
                )
                + f", {rate / base:.1f}x the best naive loop ({cpu:.2f} µs CPU per replica-step)"
                + (f"; against the naive loop round by round: {per_round}" if rounds > 1 else "")
            )
    if args.device:
        print(f"\n[autoencoder] the ensemble on torch device {args.device!r}")
        device_rates(args.device)
    print("\n[autoencoder] where an engine replica-step's CPU time goes (one thread, 64 replicas, blocks of 16 steps)")
    for dtype in (np.float64, np.float32):
        f, b = floors(dtype), breakdown(dtype)
        print(
            f"  {np.dtype(dtype).name}: compiled step {b['lanes']:.2f} µs (each step's Bartlett variates drawn "
            f"inside the step, {_LANES[np.dtype(dtype).name]} replicas in SIMD lanes, the update through the factor: "
            "what the engine runs) = "
            f"{b['lanes'] / (f['rng'] + f['flop']):.1f}x the RNG + FLOP floor; the block path it replaced: random "
            f"variates {b['variates']:.2f} + compiled step {b['compiled']:.2f} (ηΣ̂ = F Fᵀ, then the update's BLAS "
            f"products) = {b['variates'] + b['compiled']:.2f} µs; the batched NumPy path: variates + F Fᵀ "
            f"{b['draw']:.2f} + NumPy SGD step {b['step']:.2f} = "
            f"{b['draw'] + b['step']:.2f} µs; floors: RNG {f['rng']:.2f} µs (the step's 210 normals, compiled, "
            f"{_LANES[np.dtype(dtype).name]} streams in SIMD lanes as the engine draws them; one stream at a time: "
            f"{f['scalar_rng']:.2f} µs; NumPy's own bulk draw of its 190 normals + 20 gammas: "
            f"{f['numpy_rng']:.2f} µs), "
            f"FLOP {f['flop']:.2f} µs (at {f['gflops']:.0f} GFLOP/s of a large matrix product)"
        )
    p, f = platonic_breakdown(), floors(np.float64)
    print("\n[platonic] where an engine replica-step's CPU time goes (one thread, 128 replicas, blocks of 64 steps)")
    print(
        f"  float64: compiled step {p['compiled']:.2f} µs (the step's {p['normals_per_step']} normals drawn inside it, "
        "8 replicas in SIMD lanes, the moments c (L X)(L X)ᵀ and the SGD update: what the engine runs), of which "
        f"the normals alone take {p['normals']:.2f} µs (the sampler's compiled SFC64 draw: the RNG floor); "
        "the batched NumPy path instead: normals + moments "
        f"{p['moments']:.2f} + NumPy SGD step {p['step']:.2f} = {p['moments'] + p['step']:.2f} µs; FLOP floor "
        f"{2 * p['fma'] / (f['gflops'] * 1e3):.2f} µs (the update's {p['fma']:,} multiply-adds at {f['gflops']:.0f} "
        "GFLOP/s of a large matrix product)"
    )


if __name__ == "__main__":
    main()
