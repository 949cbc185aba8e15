"""Tests of ``symbreak.beyond.data`` (moved from test_nonlinear.py)."""

from __future__ import annotations

import numpy as np
import pytest

from symbreak import nonlinear as nl
from symbreak import synthesis as sy


def test_other_shipped_data_sets_load():
    X, y = nl.load_digits_data("wine")
    assert X.shape == (178, 13) and np.isclose(np.mean(np.sum(X * X, axis=1)), 1.0)
    with pytest.raises(ValueError, match="name must be one of"):
        nl.load_digits_data("mnist")


def test_pca_theory_matches_gaussian_formula_on_gaussian_data():
    rng = np.random.default_rng(0)
    lam = np.array([3.0, 2.0, 1.0, 0.5, 0.25])
    X = rng.standard_normal((400_000, 5)) * np.sqrt(lam)
    th = nl.pca_theory(X, 2)
    assert np.allclose(th["lambdas"], lam, rtol=0.01)
    assert np.allclose(th["c_data"], th["c_gauss"], rtol=0.02)
    assert np.allclose(th["c_gauss"], lam[:2] * lam[2:].sum(), rtol=0.02)
    assert th["offdiag"] < 0.02
    with pytest.raises(ValueError, match="k must be"):
        nl.pca_theory(X[:10], 5)


def test_drift_terms_at_a_linear_pca_point(digits):
    """At a linear PCA solution the encoder term vanishes and the decoder term is C_aa (Eq. 5)."""
    X, _ = digits
    th = nl.pca_theory(X, 3)
    V = th["basis"][:, :3]
    dec, enc = nl.ae_drift_terms(X, V[None], V.T[None], "linear")
    assert np.allclose(enc, 0.0, atol=1e-12)
    assert np.allclose(dec[0], th["c_data"], rtol=1e-10)


def test_sgd_drift_of_linear_autoencoder_follows_data_rates(digits):
    X, _ = digits
    th = nl.pca_theory(X, 2)
    V = th["basis"][:, :2]
    W0 = np.broadcast_to(V, (8, 64, 2)).copy()
    run = nl.train_autoencoder(
        X,
        W0,
        W0.transpose(0, 2, 1).copy(),
        activation="linear",
        eta=0.1,
        batch_size=1,
        steps=2000,
        record_every=1000,
        seed=3,
    )
    s = run.decoder_scale[-1].mean(0)
    assert np.allclose(s, sy.lambert_scale(1.0, th["c_data"], run.tau[-1]), rtol=0.05)


def test_image_patches_are_standardised_and_seeded():
    from symbreak.beyond import data as bd

    X, image = bd.load_image_patches(300, seed=4)
    assert X.shape == (300, 64) and set(np.unique(image)) == {0, 1}
    assert np.allclose(X.sum(axis=1), 0.0, atol=1e-12)  # each patch's own mean removed
    assert np.allclose(X.mean(axis=0), 0.0, atol=1e-12)  # centred over the patches
    assert np.isclose(np.mean(np.sum(X * X, axis=1)), 1.0)
    lam = np.linalg.eigvalsh(X.T @ X / len(X))
    assert abs(lam[0]) < 1e-12  # the removed brightness: a zero-variance direction
    X2, image2 = bd.load_image_patches(300, seed=4)
    assert np.array_equal(X, X2) and np.array_equal(image, image2)
    assert not np.allclose(X, bd.load_image_patches(300, seed=5)[0])
    Xs, _ = bd.load_image_patches(50, size=4, seed=1)
    assert Xs.shape == (50, 16)
    with pytest.raises(ValueError, match="n must be"):
        bd.load_image_patches(1)
    with pytest.raises(ValueError, match="size must be"):
        bd.load_image_patches(10, size=1)
