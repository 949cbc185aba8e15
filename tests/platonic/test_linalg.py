"""Tests of ``symbreak.platonic.linalg`` (moved from test_platonic.py)."""

import numpy as np
import pytest

from symbreak import platonic as pl
from symbreak.rng import make_rng


def test_alignment_with_metric_is_population_gram_alignment():
    """With a metric Σ, the alignment equals E[k1 k2]/sqrt(E k1² E k2²) over x1, x2 ~ N(0, Σ)."""
    rng = make_rng(3)
    a, b = rng.standard_normal((2, 3, 3))
    k1, k2 = a @ a.T, b @ b.T
    sig = pl.random_spd(rng, 3, 3.0)
    n = 400_000
    x1, x2 = rng.multivariate_normal(np.zeros(3), sig, size=(2, n))
    f1 = np.einsum("ni,ij,nj->n", x1, k1, x2)
    f2 = np.einsum("ni,ij,nj->n", x1, k2, x2)
    mc = np.mean(f1 * f2) / np.sqrt(np.mean(f1**2) * np.mean(f2**2))
    assert pl.kernel_alignment(k1, k2, metric=sig) == pytest.approx(mc, abs=0.01)


def test_random_matrices_have_the_stated_conditioning():
    rng = make_rng(81)
    assert np.linalg.cond(pl.random_invertible(rng, 5, 3.0)) == pytest.approx(3.0, rel=1e-10)
    assert np.linalg.cond(pl.random_spd(rng, 4, 2.0)) == pytest.approx(2.0, rel=1e-10)
    task = pl.random_task(82, n=4, m=5, noise=0.3, cond_v=3.0)
    sv = np.linalg.svd(task.v_star, compute_uv=False)
    assert sv[0] / sv[-1] == pytest.approx(3.0, rel=1e-10)
    assert np.trace(task.sigma_eps) == pytest.approx(0.3 * 5)
