"""Tests of ``symbreak.platonic.kernel`` (moved from test_platonic.py)."""

import numpy as np
import pytest

from symbreak import platonic as pl
from symbreak.rng import make_rng


def test_platonic_kernel_closed_form_properties():
    rng = make_rng(1)
    v = rng.standard_normal((4, 3))
    sx, se = pl.random_spd(rng, 3, 4.0), pl.random_spd(rng, 4, 4.0)
    k = pl.platonic_kernel(v, sx, se)
    assert np.linalg.norm(k) == pytest.approx(1.0, abs=1e-14)
    assert np.allclose(k, k.T, atol=1e-15) and np.linalg.eigvalsh(k)[0] > 0
    # only the shape of the label noise matters: K⋆(cΣε) = K⋆(Σε)
    assert np.allclose(pl.platonic_kernel(v, sx, 7.0 * se), k, atol=1e-13)
    # isotropic data and noise: K⋆ ∝ (V*ᵀV*)^{1/2}
    ref = pl.sqrtm_psd(v.T @ v)
    assert np.allclose(pl.platonic_kernel(v, np.eye(3), np.eye(4)), ref / np.linalg.norm(ref), atol=1e-13)
    # defining equation: Σx^{1/2} K Σx K Σx^{1/2} ∝ Σx^{1/2} Vᵀ Σε V Σx^{1/2}
    r = pl.sqrtm_psd(sx)
    lhs, rhs = r @ k @ sx @ k @ r, r @ v.T @ se @ v @ r
    assert np.allclose(lhs / np.linalg.norm(lhs), rhs / np.linalg.norm(rhs), atol=1e-12)
    # rank-deficient V*: rank of K⋆ is rank V*
    v2 = np.outer(rng.standard_normal(4), rng.standard_normal(3))
    assert np.linalg.matrix_rank(pl.platonic_kernel(v2, sx, se), tol=1e-10) == 1


def test_kernel_alignment_properties():
    rng = make_rng(2)
    p = rng.standard_normal((5, 4))
    k = p.T @ p
    assert pl.kernel_alignment(k, 3.7 * k) == pytest.approx(1.0, abs=1e-15)
    o = pl.random_orthogonal(rng, 5)
    q = rng.standard_normal((6, 4))
    k2 = q.T @ q
    # rotation of either representation leaves the kernel and the alignment unchanged
    assert pl.kernel_alignment((o @ p).T @ (o @ p), k2) == pytest.approx(pl.kernel_alignment(k, k2), rel=1e-13)
    assert pl.kernel_alignment(0.01 * k, 50 * k2) == pytest.approx(pl.kernel_alignment(k, k2), rel=1e-13)
    vals = []
    for _ in range(200):
        a, b = rng.standard_normal((2, 4, int(rng.integers(1, 6))))
        vals.append(pl.kernel_alignment(a @ a.T, b @ b.T))
    vals = np.array(vals)
    assert np.all((vals >= 0) & (vals <= 1 + 1e-15))
    assert vals.min() < 0.2 and vals.max() < 1  # not trivially constant
    # stacked input broadcasts
    assert pl.kernel_alignment(np.stack([k, k2]), k2) == pytest.approx([pl.kernel_alignment(k, k2), 1.0])


def test_joint_alignment_matrix():
    rng = make_rng(4)
    ks_a = np.stack([(lambda p: p.T @ p)(rng.standard_normal((3, 3))) for _ in range(2)])
    ks_b = np.stack([(lambda p: p.T @ p)(rng.standard_normal((3, 3))) for _ in range(3)])
    m = pl.joint_alignment(ks_a, ks_b, reference=np.eye(3))
    assert m.shape == (6, 6)
    assert np.allclose(np.diag(m), 1) and np.allclose(m, m.T)
    assert m[1, 3] == pytest.approx(pl.kernel_alignment(ks_a[1], ks_b[1]))
    assert m[4, 5] == pytest.approx(pl.kernel_alignment(ks_b[2], np.eye(3)))
