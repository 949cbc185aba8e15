"""Seeded random generators: every random draw in the book comes from one of these.

The book never calls ``numpy.random`` global functions or an unseeded generator; the same command
gives the same numbers. Independent streams (one per replica chunk, per chapter figure, ...) are
derived from one seed with :class:`numpy.random.SeedSequence`, which makes them statistically
independent and reproducible.

Extra: ``symbreak[torch]`` for :func:`torch_generator` (PyTorch); the NumPy generators need only
the core dependencies.

One switch moves every seed at once: with ``BOOK_SEED=n`` (a non-negative integer) in the
environment, every seed this module turns into a :class:`~numpy.random.SeedSequence` (and so every
generator, replica stream, sweep point and torch generator derived from it) gets ``n`` mixed into
its entropy, so a page re-executed under ``BOOK_SEED=1, 2, ...`` draws entirely different numbers
with its code unchanged. Unset, empty or ``0`` changes nothing: every number is bit for bit what it
is without the variable. ``make seeds`` re-executes the book this way.
"""

from __future__ import annotations

import os

import numpy as np

from .validation import check_int

__all__ = ["DEFAULT_SEED", "SEED_ENV_VAR", "book_seed", "make_rng", "spawn_rngs", "torch_generator"]

#: Seed used when a caller does not pass one.
DEFAULT_SEED = 20261130

#: Name of the environment variable that offsets every seed (see the module's docstring).
SEED_ENV_VAR = "BOOK_SEED"

#: Largest accepted ``BOOK_SEED``.
_MAX_BOOK_SEED = 2**32 - 1

# A word that separates the seed's own words from the BOOK_SEED offset in the entropy, so that
# ``make_rng(s)`` under ``BOOK_SEED=n`` never equals ``make_rng((s, n))`` under ``BOOK_SEED=0``.
_OFFSET_TAG = 0xB00C5EED


def book_seed() -> int:
    """The seed offset asked for by ``BOOK_SEED`` (``0`` when unset or empty).

    Read at every call (not cached), so a test or a tool can switch it by setting the variable.

    Raises
    ------
    ValueError
        If ``BOOK_SEED`` is not an integer in ``[0, 2**32 - 1]``.
    """
    raw = os.environ.get(SEED_ENV_VAR, "").strip()
    if not raw:
        return 0
    try:
        value = int(raw, 10)
    except ValueError:
        value = None
    if value is None or not 0 <= value <= _MAX_BOOK_SEED:
        raise ValueError(
            f"{SEED_ENV_VAR}={raw!r} is not understood: use an integer in [0, {_MAX_BOOK_SEED}] "
            "(0 or unset: the default seeds)"
        )
    return value


def _seed_sequence(seed) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed  # already derived here (a child or a sweep point), so already offset
    if seed is None:
        seed = DEFAULT_SEED
    if isinstance(seed, (tuple, list)):
        words = [check_int("seed", s, minimum=0) for s in seed]
    else:
        words = check_int("seed", seed, minimum=0)
    offset = book_seed()
    if offset:
        words = [*(words if isinstance(words, list) else [words]), _OFFSET_TAG, offset]
    return np.random.SeedSequence(words)


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
