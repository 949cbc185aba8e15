"""The ensemble engine against naive PyTorch training loops, on the same workloads, in one run.

Two workloads, each the book's own:

* **autoencoder** (the autoencoder chapter's Fig. 1D–F): a linear autoencoder ``x̂ = W U x`` with
  ``d = 20``, ``k = 10``, Gaussian data with the geometric spectrum 12 → 0.18, minibatch
  ``B = 128``, learning rate ``η = 0.02``, PCA initialisation;
* **platonic** (the Platonic chapter's SGD runs): the embedded deep linear network A of
  :func:`symbreak.platonic.example_pair` (depth 3, widths 5, 6; ``n = 4``, ``m = 5``) on its
  noisy task, ``B = 4``, ``η = 0.01`` with the chapter's learning-rate warm-up over 1000 steps.

Baselines: one network trained by a plain PyTorch autograd loop — draw the minibatch, forward,
``loss.backward()``, manual SGD update — step after step, in float64 and float32, with one
intra-op thread and with PyTorch's default threads, after a warm-up. The *best* of these is the
baseline. When the default threads are slower than one thread (they thrash on tiny tensors), that
configuration is reported as such, not as a rate.

Engine: :func:`symbreak.autoencoder.simulate_sgd` / :func:`symbreak.platonic.train_sgd`, a batched
ensemble of replicas over all cores (:func:`symbreak.engine.run_ensemble`), exact Wishart
minibatch statistics, float64 and float32, after a warm-up.

Rates are replica-steps per second (one SGD step of one network), wall clock; the engine's CPU
time per replica-step is printed against two floors measured in the same run: the **RNG floor**
(the step's ``d(d−1)/2 + d`` normals drawn in bulk by the compiled SFC64 ziggurat that the
engine uses, :mod:`symbreak._sfc64`; NumPy's own bulk draw is printed next to it) and the **FLOP floor**
(the step's multiply-adds at the rate of a large single-thread matrix product). A breakdown of
one engine chunk says where the rest goes. Usage: ``python benchmarks/bench_engine.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from symbreak import platonic as pl
from symbreak.autoencoder import _FusedLinearStepper, _LinearStepper, geometric_spectrum, simulate_sgd
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


def naive_platonic(steps: int, dtype, threads) -> float:
    """Replica-steps/s of a plain PyTorch autograd loop training one EDLN on data points."""
    task, net = _platonic_setup()

    def run():
        dt = TORCH_DT[dtype]
        t = lambda a: torch.tensor(np.asarray(a), dtype=dt)  # noqa: E731
        lx, le = t(np.linalg.cholesky(task.sigma_x)), t(pl.sqrtm_psd(task.sigma_eps))
        v, m_in, m_out = t(task.v_star), t(net.input_map), t(net.m_out)
        ws = [t(w).requires_grad_(True) for w in pl.init_weights(net, 1)]
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

    def normals_once():  # the step's 210 normals (190 off-diagonal + one per Marsaglia–Tsang gamma), compiled
        fill_normals([rng], zz)

    rate = _timed(rng_once, 10, 2)
    out = {"numpy_rng": 1e6 / (rate * n)}
    out["rng"] = 1e6 / (_timed(normals_once, 10, 2) * n)
    big = np.random.default_rng(0).standard_normal((512, 512)).astype(dtype)
    c = np.empty_like(big)
    mm = _timed(lambda: np.matmul(big, big, out=c), 10, 2) * 2 * 512**3  # flop/s, BLAS threads as configured
    # per step: A Aᵀ (d³ with a triangular A: d³/3 useful), U Σ̂, W(UΣ̂), WᵀP, UPᵀ (4 k d² each)
    flops = 2 * (D**3 / 3 + 4 * K * D * D)
    out["flop"] = flops / mm * 1e6
    out["gflops"] = mm / 1e9
    return out


def breakdown(dtype, replicas: int = 64, m: int = 16) -> dict:
    """CPU µs per replica-step of one engine chunk's parts: the block's random variates and the
    compiled step the engine takes (each block's ηΣ̂ by the compiled Bartlett kernel, 16 replicas at
    a time, then the SGD update's BLAS products), and for comparison the batched NumPy path (each
    step's Σ̂ built by the compiled Bartlett kernel, then the NumPy update), the same numbers."""
    lam = geometric_spectrum(D)
    sampler = WishartBlockSampler(
        np.sqrt(lam), np.full(replicas, B), scale=np.full(replicas, ETA), dtype=dtype, max_steps=m
    )
    streams = replica_streams(0, range(replicas))
    V = np.zeros((replicas, 2 * K, D), dtype=dtype)
    V[:, np.arange(K), np.arange(K)] = 1.0
    V[:, K + np.arange(K), np.arange(K)] = 1.0
    stepper, fused = _LinearStepper(V.copy(), K), _FusedLinearStepper(V.copy(), K)
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

    def compiled():  # what the engine runs: one call per 8 steps (its divergence checks)
        for t0 in range(0, m, 8):
            fused.steps(var, t0, min(t0 + 8, m))

    per = m * replicas
    out = {
        "draw": 1e6 / (_timed(draw, 30, 3) * per),
        "variates": 1e6 / (_timed(variates, 30, 3) * per),
        "step": 1e6 / (_timed(steps, 30, 3) * per),
        "compiled": 1e6 / (_timed(compiled, 30, 3) * per),
    }
    out["products"] = out["draw"] - out["variates"]
    return out


def platonic_breakdown(replicas: int = 128, m: int = 64) -> dict:
    """CPU µs per replica-step of the Platonic engine's parts, one thread: the block's ``d × B``
    normals per step (compiled SFC64; all the engine draws, as ``B < d``), the compiled step the
    engine runs (one call per 8 steps: the minibatch moments ``c (L X)(L X)ᵀ`` from those normals,
    then the SGD update), and for comparison the batched NumPy path it replaced (the sampler's
    moments, ``L X`` and ``X Xᵀ`` batched, then the NumPy step); and the step's multiply-adds."""
    task, net = _platonic_setup()
    w0 = pl.init_weights(net, 1, replicas=replicas)
    streams = replica_streams(0, range(replicas))
    # (the warm-up keeps the repeated steps on one block of minibatches small: each round starts at step 0)
    kw = dict(lr=np.full(replicas, PL_ETA), wd=np.zeros(replicas), lr_warmup=PL_WARMUP, sgd=True, batch_size=PL_B)
    fast = pl._PlatonicModel(np.arange(replicas), streams, net, task, w0, **kw)
    old, pl._COMPILED_SGD = pl._COMPILED_SGD, False
    try:
        slow = pl._PlatonicModel(np.arange(replicas), streams, net, task, w0, **kw)
    finally:
        pl._COMPILED_SGD = old
    points = tuple(np.copy(a) for a in fast.draw(m))
    moments = slow.draw(m).copy()

    def compiled():
        for t0 in range(0, m, 8):
            fast.steps(points, t0, t0 + 8, 0)

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
        "normals": 1e6 / (_timed(lambda: fast.draw(m), 30, 3) * per),
        "compiled": 1e6 / (_timed(compiled, 30, 3) * per),
        "moments": 1e6 / (_timed(lambda: slow.draw(m), 30, 3) * per),
        "step": 1e6 / (_timed(numpy_step, 10, 1) * per),
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
    for workload, fn, reps in (("autoencoder", naive_autoencoder, replicas), ("platonic", naive_platonic, pl_replicas)):
        if workload == "autoencoder":
            print(f"\n[autoencoder] linear autoencoder d={D}, k={K}, B={B}, eta={ETA}")
        else:
            print(f"\n[platonic] EDLN A of example_pair (depth 3), n=4, m=5, B={PL_B}, eta={PL_ETA}")
        # rounds of the same measurements, the naive loops and the engine interleaved, so that a slow
        # spell of a shared machine hits both; the best of each over the rounds is compared
        bases, engines = [], {np.float64: [], np.float32: []}
        for _ in range(rounds):
            base, lines = naive_table(workload, fn, naive_steps)
            bases.append(base)
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
        for dtype, runs in engines.items():
            if not runs:
                continue
            rate, cpu = max(runs)
            per_round = ", ".join(f"{r / b:.1f}x" for (r, _), b in zip(runs, bases))
            print(
                f"  engine, {reps} replicas, {np.dtype(dtype).name}, {cores} threads{'':<10s}: {rate:12,.0f} "
                f"replica-steps/s = {rate / base:6.1f}x the best naive loop ({cpu:.2f} µs CPU per replica-step)"
                + (f"; round by round: {per_round}" if rounds > 1 else "")
            )
    if args.device:
        print(f"\n[autoencoder] the ensemble on torch device {args.device!r}")
        device_rates(args.device)
    print("\n[autoencoder] where an engine replica-step's CPU time goes (one thread, 64 replicas, blocks of 16 steps)")
    for dtype in (np.float64, np.float32):
        f, b = floors(dtype), breakdown(dtype)
        print(
            f"  {np.dtype(dtype).name}: random variates {b['variates']:.2f} µs + compiled step "
            f"{b['compiled']:.2f} µs (ηΣ̂ = F Fᵀ and the SGD update: what the engine runs) = "
            f"{b['variates'] + b['compiled']:.2f} µs; the batched NumPy path instead: variates + F Fᵀ "
            f"{b['draw']:.2f} + NumPy SGD step {b['step']:.2f} = "
            f"{b['draw'] + b['step']:.2f} µs; floors: RNG {f['rng']:.2f} µs (the step's 210 normals, compiled; "
            f"NumPy's own bulk draw of its 190 normals + 20 gammas: {f['numpy_rng']:.2f} µs), "
            f"FLOP {f['flop']:.2f} µs (at {f['gflops']:.0f} GFLOP/s of a large matrix product)"
        )
    p, f = platonic_breakdown(), floors(np.float64)
    print("\n[platonic] where an engine replica-step's CPU time goes (one thread, 128 replicas, blocks of 64 steps)")
    print(
        f"  float64: the step's {p['normals_per_step']} normals {p['normals']:.2f} µs (compiled SFC64: the RNG "
        "floor) + "
        f"compiled step {p['compiled']:.2f} µs (the moments c (L X)(L X)ᵀ and the SGD update: what the engine runs) = "
        f"{p['normals'] + p['compiled']:.2f} µs; the batched NumPy path instead: normals + moments "
        f"{p['moments']:.2f} + NumPy SGD step {p['step']:.2f} = {p['moments'] + p['step']:.2f} µs; FLOP floor "
        f"{2 * p['fma'] / (f['gflops'] * 1e3):.2f} µs (the update's {p['fma']:,} multiply-adds at {f['gflops']:.0f} "
        "GFLOP/s of a large matrix product)"
    )


if __name__ == "__main__":
    main()
