"""The batched SGD engine against a naive PyTorch training loop, on the same workload.

Workload (the autoencoder chapter's Fig. 1D–F): a linear autoencoder ``x̂ = W U x`` with ``d = 20``,
``k = 10``, Gaussian data with the geometric spectrum 12 → 0.18, minibatch ``B = 128``, learning
rate ``η = 0.02``, PCA initialisation, float64.

* **naive**: one network, PyTorch autograd — draw the minibatch, forward, ``loss.backward()``,
  manual SGD update — step after step. Timed with PyTorch's default intra-op threads and with one
  thread; the faster of the two is the baseline (on tiny tensors extra threads only add overhead).
* **engine**: :func:`symbreak.autoencoder.simulate_sgd`, a batched ensemble of replicas whose
  minibatch covariances are drawn exactly from the Wishart law (Bartlett), over both cores.

Both rates are in replica-steps per second (one SGD step of one network). Usage:
``python benchmarks/bench_engine.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from symbreak.autoencoder import geometric_spectrum, simulate_sgd
from symbreak.rng import torch_generator

D, K, B, ETA = 20, 10, 128, 0.02


def naive_rate(steps: int, threads: int | None) -> float:
    """Replica-steps/s of a plain PyTorch autograd loop training one autoencoder."""
    old = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        sd = torch.tensor(np.sqrt(geometric_spectrum(D)), dtype=torch.float64)
        W = torch.zeros(D, K, dtype=torch.float64)
        W[:K, :K] = torch.eye(K, dtype=torch.float64)
        U = W.T.clone()
        W.requires_grad_(True)
        U.requires_grad_(True)
        gen = torch_generator(0)

        def step():
            x = torch.randn(B, D, dtype=torch.float64, generator=gen) * sd  # a fresh minibatch
            loss = 0.5 * ((x @ U.T @ W.T - x) ** 2).sum(dim=1).mean()
            loss.backward()
            with torch.no_grad():
                W.sub_(ETA * W.grad)
                U.sub_(ETA * U.grad)
            W.grad = None
            U.grad = None

        for _ in range(200):  # warm-up
            step()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        return steps / (time.perf_counter() - t0)
    finally:
        torch.set_num_threads(old)


def engine_rate(steps: int, replicas: int, dtype) -> tuple[float, float]:
    """Replica-steps/s of the engine (wall clock) and its CPU time per replica-step in µs."""
    lam = geometric_spectrum(D)
    simulate_sgd(lam, K, ETA, B, 200, seeds=replicas, record_every=200, dtype=dtype, seed=1)  # warm-up
    t0, c0 = time.perf_counter(), time.process_time()
    simulate_sgd(lam, K, ETA, B, steps, seeds=replicas, record_every=steps, dtype=dtype, seed=2)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return replicas * steps / wall, cpu / (replicas * steps) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke test)")
    args = parser.parse_args()
    naive_steps, eng_steps, replicas = (500, 200, 64) if args.quick else (4000, 2500, 128)

    print(f"workload: linear autoencoder d={D}, k={K}, B={B}, eta={ETA}, float64 unless stated")
    default_threads = torch.get_num_threads()
    naive = {f"torch default ({default_threads} threads)": naive_rate(naive_steps, None),
             "torch 1 thread": naive_rate(naive_steps, 1)}
    for name, rate in naive.items():
        print(f"naive PyTorch loop, {name:<26s}: {rate:12,.0f} replica-steps/s")
    base = max(naive.values())
    rows = []
    for dtype in (np.float64, np.float32):
        rate, cpu_us = engine_rate(eng_steps, replicas, dtype)
        rows.append((dtype, rate))
        print(f"engine, {replicas} replicas, {np.dtype(dtype).name:<7s}           : {rate:12,.0f} replica-steps/s "
              f"({cpu_us:.2f} µs CPU per replica-step)")
    for dtype, rate in rows:
        print(f"ratio engine ({np.dtype(dtype).name}) / naive (faster configuration): {rate / base:6.1f}x")


if __name__ == "__main__":
    main()
