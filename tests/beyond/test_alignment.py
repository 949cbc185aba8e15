"""Tests of ``symbreak.beyond.alignment`` (moved from test_nonlinear.py)."""

from __future__ import annotations

import numpy as np
import pytest

from symbreak import nonlinear as nl


def test_similarity_measures():
    rng = np.random.default_rng(3)
    H = rng.standard_normal((200, 5))
    Q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    assert np.isclose(nl.kernel_alignment(H, 3.0 * H @ Q), 1.0)
    assert np.isclose(nl.linear_cka(H, H @ Q + 2.0), 1.0)
    assert nl.mutual_knn(H, H @ Q, 10) == 1.0
    G = rng.standard_normal((200, 5))
    assert nl.linear_cka(H, G) < 0.2
    assert nl.mutual_knn(H, G, 10) < 0.2
    # uncentred alignment of explicit kernels
    K1, K2 = H @ H.T, G @ G.T
    assert np.isclose(nl.kernel_alignment(H, G), np.sum(K1 * K2) / np.linalg.norm(K1) / np.linalg.norm(K2))
    with pytest.raises(ValueError, match="same number of samples"):
        nl.kernel_alignment(H, G[:10])
    with pytest.raises(ValueError, match="identically zero"):
        nl.kernel_alignment(H, 0 * G)
    with pytest.raises(ValueError, match="k must be"):
        nl.mutual_knn(H, G, 200)


def test_mlp_init_and_hidden():
    ws = nl.init_mlp([6, 5, 4, 3], 2, seed=1)
    assert [w.shape for w in ws] == [(2, 5, 6), (2, 4, 5), (2, 3, 4)]
    h = nl.mlp_hidden(ws, np.ones((7, 6)))
    assert h.shape == (2, 7, 4) and np.all(h >= 0)
    with pytest.raises(ValueError, match="sizes"):
        nl.init_mlp([6, 3], 1)
    with pytest.raises(ValueError, match="features"):
        nl.mlp_hidden(ws, np.ones((7, 5)))


def test_train_mlp_pair_learns_and_validates():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((120, 6))
    Y = np.eye(3)[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0).astype(int)]
    run = nl.train_mlp_pair(
        X,
        X[:, ::-1].copy(),
        Y,
        [6, 8, 3],
        [6, 7, 5, 3],
        eta=0.05,
        batch_size=8,
        steps=400,
        label_noise=0.1,
        replicas=2,
        record_every=200,
        seed=1,
    )
    assert run.hidden_a.shape == (3, 2, 120, 8) and run.hidden_b.shape == (3, 2, 120, 5)
    assert np.all(run.loss_a[-1] < run.loss_a[0]) and np.all(run.loss_b[-1] < run.loss_b[0])
    with pytest.raises(ValueError, match="sizes_a"):
        nl.train_mlp_pair(X, X, Y, [5, 8, 3], [6, 7, 3], eta=0.1, batch_size=8, steps=1, label_noise=0.1)
    with pytest.raises(ValueError, match="label_noise"):
        nl.train_mlp_pair(X, X, Y, [6, 8, 3], [6, 7, 3], eta=0.1, batch_size=8, steps=1, label_noise=-0.1)
    with pytest.raises(ValueError, match="probe"):
        nl.train_mlp_pair(
            X, X, Y, [6, 8, 3], [6, 7, 3], eta=0.1, batch_size=8, steps=1, label_noise=0.1, probe=(X[:5], X[:4])
        )


def test_tanh_mlp_pair_and_activation_validation():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((60, 4))
    Y = np.eye(2)[(X[:, 0] > 0).astype(int)]
    run = nl.train_mlp_pair(
        X,
        X,
        Y,
        [4, 6, 2],
        [4, 5, 2],
        eta=0.05,
        batch_size=8,
        steps=20,
        label_noise=0.1,
        record_every=10,
        activation="tanh",
        seed=2,
    )
    assert np.all(np.abs(run.hidden_a) <= 1.0)
    with pytest.raises(ValueError, match="activation"):
        nl.train_mlp_pair(
            X, X, Y, [4, 6, 2], [4, 5, 2], eta=0.05, batch_size=8, steps=2, label_noise=0.1, activation="gelu"
        )
    with pytest.raises(ValueError, match="activation"):
        nl.mlp_hidden(nl.init_mlp([4, 3, 2], 1), X, "gelu")


def test_mlp_init_and_pair_training_are_replica_independent():
    """Replica r's weights, minibatches and label noise come from its own streams: its numbers are
    the same whether it runs alone (r = 0) or among others (issue 28)."""
    sizes = [6, 5, 4, 3]
    many = nl.init_mlp(sizes, 5, seed=2)
    for one, three, w in zip(nl.init_mlp(sizes, 1, seed=2), nl.init_mlp(sizes, 3, seed=2), many):
        assert np.array_equal(one[0], w[0]) and np.array_equal(three, w[:3])
    assert not np.array_equal(nl.init_mlp(sizes, 1, seed=3)[0][0], many[0][0])
    rng = np.random.default_rng(6)
    X = rng.standard_normal((50, 6))
    Y = np.eye(3)[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0).astype(int)]
    for batch_size in (4, None):
        kw = dict(eta=0.05, batch_size=batch_size, steps=300, label_noise=0.5, record_every=100, seed=9)
        runs = {
            r: nl.train_mlp_pair(X, X[:, ::-1].copy(), Y, [6, 8, 3], [6, 7, 5, 3], replicas=r, **kw) for r in (1, 3)
        }
        for field in ("hidden_a", "hidden_b", "loss_a", "loss_b"):
            a, b = getattr(runs[1], field), getattr(runs[3], field)
            assert np.allclose(a[:, 0], b[:, 0], rtol=1e-12, atol=1e-14), field
        assert not np.allclose(runs[3].loss_a[-1, 0], runs[3].loss_a[-1, 1])
