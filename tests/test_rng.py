import numpy as np
import pytest

from symbreak.rng import DEFAULT_SEED, make_rng, spawn_rngs, torch_generator


def test_same_seed_same_numbers():
    assert np.array_equal(make_rng(3).standard_normal(5), make_rng(3).standard_normal(5))
    assert np.array_equal(make_rng(None).standard_normal(3), make_rng(DEFAULT_SEED).standard_normal(3))
    assert not np.array_equal(make_rng(3).standard_normal(5), make_rng(4).standard_normal(5))


def test_spawned_streams_are_distinct_and_reproducible():
    a = [g.standard_normal(4) for g in spawn_rngs(7, 3)]
    b = [g.standard_normal(4) for g in spawn_rngs(7, 3)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], a[1])


def test_torch_generator_is_seeded():
    import torch

    x = torch.randn(4, generator=torch_generator(5), dtype=torch.float64)
    y = torch.randn(4, generator=torch_generator(5), dtype=torch.float64)
    assert torch.equal(x, y)


@pytest.mark.parametrize("bad", [-1, 1.5, "seed"])
def test_bad_seed(bad):
    with pytest.raises(ValueError, match="seed"):
        make_rng(bad)
