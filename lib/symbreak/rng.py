"""Seeded random generators: every random draw in the book comes from one of these.

The book never calls ``numpy.random`` global functions or an unseeded generator; the same command
gives the same numbers. Independent streams (one per replica chunk, per chapter figure, ...) are
derived from one seed with :class:`numpy.random.SeedSequence`, which makes them statistically
independent and reproducible.

Extra: ``symbreak[torch]`` for :func:`torch_generator` (PyTorch); the NumPy generators need only
the core dependencies.
"""

from __future__ import annotations

import numpy as np

from .validation import check_int

__all__ = ["DEFAULT_SEED", "make_rng", "spawn_rngs", "torch_generator"]

#: Seed used when a caller does not pass one.
DEFAULT_SEED = 20261130


def _seed_sequence(seed) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None:
        seed = DEFAULT_SEED
    if isinstance(seed, (tuple, list)):
        return np.random.SeedSequence([check_int("seed", s, minimum=0) for s in seed])
    return np.random.SeedSequence(check_int("seed", seed, minimum=0))


def make_rng(seed=None) -> np.random.Generator:
    """A NumPy ``Generator`` (PCG64) from a non-negative integer seed, a tuple of them, or a
    :class:`~numpy.random.SeedSequence`; ``None`` means :data:`DEFAULT_SEED`, never entropy."""
    return np.random.Generator(np.random.PCG64(_seed_sequence(seed)))


def spawn_rngs(seed, n: int) -> list[np.random.Generator]:
    """``n`` independent generators derived from one seed (for chunks, threads, replicas)."""
    n = check_int("n", n, minimum=1, maximum=10**6)
    return [np.random.Generator(np.random.PCG64(s)) for s in _seed_sequence(seed).spawn(n)]


def torch_generator(seed=None):
    """A seeded ``torch.Generator`` (CPU); imports torch lazily."""
    import torch

    g = torch.Generator(device="cpu")
    g.manual_seed(int(_seed_sequence(seed).generate_state(1, dtype=np.uint64)[0] & ((1 << 63) - 1)))
    return g
