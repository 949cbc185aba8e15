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


# ---------------------------------------------------------------------------------------------
# the grid of paired runs, matched-loss snapshots, batched cosine kNN, unit imbalance, the study
# ---------------------------------------------------------------------------------------------
from symbreak.beyond import alignment as al  # noqa: E402
from symbreak.beyond import verdicts as vd  # noqa: E402


def _toy(n=60, seed=7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6))
    Y = np.eye(3)[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0).astype(int)]
    return X, X[:, ::-1].copy(), Y


def test_grid_pairs_settings_over_seeds():
    """Settings that share a seed share its initialisation, minibatches and noise draws: two identical
    settings give identical runs, label noise 0 changes only the targets, and a seed's run does not
    depend on how many seeds run."""
    Xa, Xb, Y = _toy()
    kw = dict(batch_size=8, steps=40, record_at=[0, 20, 40], loss_every=10, seed=3)
    g = al.train_pair_grid(
        Xa, Xb, Y, [6, 8, 3], [6, 7, 5, 3], eta=[0.05, 0.05, 0.05], label_noise=[0.5, 0.5, 0.0], seeds=3, **kw
    )
    assert g.hidden_a.shape == (3, 3, 3, 60, 8) and g.hidden_b.shape == (3, 3, 3, 60, 5)
    assert g.loss_a.shape == (5, 3, 3) and np.array_equal(g.loss_steps, [0, 10, 20, 30, 40])
    assert np.array_equal(g.hidden_a[:, 0], g.hidden_a[:, 1])  # same setting, same seed: the same run
    assert np.array_equal(g.hidden_a[0, 0], g.hidden_a[0, 2])  # same initialisation without noise
    assert not np.allclose(g.hidden_a[-1, 0], g.hidden_a[-1, 2])  # ... but another run
    assert not np.allclose(g.hidden_a[-1, 0, 0], g.hidden_a[-1, 0, 1])  # seeds differ
    one = al.train_pair_grid(Xa, Xb, Y, [6, 8, 3], [6, 7, 5, 3], eta=0.05, label_noise=0.5, seeds=1, **kw)
    assert np.allclose(one.hidden_a[:, 0, 0], g.hidden_a[:, 0, 0], rtol=1e-6, atol=1e-7)
    assert len(g.initial_a) == 2 and g.final_a[0].shape == (3, 3, 8, 6)


def test_grid_step_is_train_mlp_pairs_step():
    """Gradient descent without noise is deterministic: the grid (single precision) follows
    train_mlp_pair (double) to single-precision rounding, with and without weight decay."""
    Xa, Xb, Y = _toy()
    for wd in (0.0, 0.05):
        ref = nl.train_mlp_pair(
            Xa,
            Xb,
            Y,
            [6, 8, 3],
            [6, 7, 5, 3],
            eta=0.05,
            batch_size=None,
            steps=30,
            label_noise=0.0,
            weight_decay=wd,
            replicas=2,
            record_every=30,
            seed=5,
        )
        g = al.train_pair_grid(
            Xa,
            Xb,
            Y,
            [6, 8, 3],
            [6, 7, 5, 3],
            eta=0.05,
            batch_size=None,
            steps=30,
            label_noise=0.0,
            weight_decay=wd,
            seeds=2,
            record_at=[0, 30],
            loss_every=30,
            seed=5,
        )
        assert np.allclose(g.hidden_a[:, 0], ref.hidden_a, rtol=1e-4, atol=1e-5)
        assert np.allclose(g.loss_b[:, 0], ref.loss_b, rtol=1e-4)


def test_grid_matched_loss_snapshots():
    Xa, Xb, Y = _toy()
    g0 = al.train_pair_grid(
        Xa,
        Xb,
        Y,
        [6, 8, 3],
        [6, 7, 3],
        eta=0.05,
        batch_size=None,
        steps=200,
        label_noise=0.0,
        seeds=2,
        loss_every=5,
        seed=2,
    )
    target = np.stack([g0.loss_a[20, 0], g0.loss_b[30, 0]], axis=-1)  # (S, 2): reached at steps 100 and 150
    g = al.train_pair_grid(
        Xa,
        Xb,
        Y,
        [6, 8, 3],
        [6, 7, 3],
        eta=0.05,
        batch_size=None,
        steps=200,
        label_noise=0.0,
        seeds=2,
        loss_every=5,
        match_loss=np.stack([target[None], 0.5 * target[None]]),
        seed=2,
    )
    assert g.matched_a.shape == (2, 1, 2, 60, 8) and g.matched_step.shape == (2, 1, 2, 2)
    for k in range(2):
        for col, loss in ((0, g.loss_a), (1, g.loss_b)):
            for s in range(2):
                first = np.flatnonzero(loss[:, 0, s] <= [target, 0.5 * target][k][s, col])
                want = g.loss_steps[first[0]] if first.size else -1
                assert g.matched_step[k, 0, s, col] == want
                if first.size:
                    assert g.matched_loss[k, 0, s, col] == loss[first[0], 0, s]
    assert np.all(g.matched_step[0] >= 0) and np.all(g.matched_loss[0] <= target[None])
    i = g.matched_step[0, 0, 0, 0] // 5
    h = nl.mlp_hidden([w[0, :1] for w in g.final_a], Xa)  # shapes only; the snapshot is the record at that step
    assert h.shape == (1, 60, 8) and np.all(np.isfinite(g.matched_a[0, 0, 0])) and i > 0
    short = al.train_pair_grid(
        Xa,
        Xb,
        Y,
        [6, 8, 3],
        [6, 7, 3],
        eta=0.05,
        batch_size=None,
        steps=200,
        label_noise=0.0,
        seeds=2,
        loss_every=5,
        match_loss=target[None, None],
        until_matched=True,
        seed=2,
    )
    assert short.loss_steps[-1] == g.matched_step[0].max() < 200


def test_grid_validation():
    Xa, Xb, Y = _toy()
    base = dict(batch_size=8, steps=10, seeds=2)
    with pytest.raises(ValueError, match="eta"):
        al.train_pair_grid(Xa, Xb, Y, [6, 8, 3], [6, 7, 3], eta=[0.1, -0.1], label_noise=0.1, **base)
    with pytest.raises(ValueError, match="same number of settings"):
        al.train_pair_grid(Xa, Xb, Y, [6, 8, 3], [6, 7, 3], eta=[0.1, 0.1], label_noise=[0.1, 0.1, 0.1], **base)
    with pytest.raises(ValueError, match="label_noise must be >= 0"):
        al.train_pair_grid(Xa, Xb, Y, [6, 8, 3], [6, 7, 3], eta=0.1, label_noise=[0.1, -0.1], **base)
    with pytest.raises(ValueError, match="match_loss"):
        al.train_pair_grid(
            Xa, Xb, Y, [6, 8, 3], [6, 7, 3], eta=0.1, label_noise=0.1, match_loss=np.ones((2, 2)), **base
        )
    with pytest.raises(ValueError, match="record_at"):
        al.train_pair_grid(Xa, Xb, Y, [6, 8, 3], [6, 7, 3], eta=0.1, label_noise=0.1, record_at=[0, 11], **base)
    with pytest.raises(ValueError, match="until_matched"):
        al.train_pair_grid(Xa, Xb, Y, [6, 8, 3], [6, 7, 3], eta=0.1, label_noise=0.1, until_matched=True, **base)
    with pytest.raises(ValueError, match="sizes_b"):
        al.train_pair_grid(Xa, Xb, Y, [6, 8, 3], [5, 7, 3], eta=0.1, label_noise=0.1, **base)


def test_batched_cosine_knn_matches_the_reference():
    rng = np.random.default_rng(1)
    H1 = np.abs(rng.standard_normal((4, 80, 6))) + 0.05  # no zero row: its neighbours would tie
    H2 = H1 @ np.abs(rng.standard_normal((6, 5))) + 0.3 * np.abs(rng.standard_normal((4, 80, 5)))
    got = al.cosine_mutual_knn_batch(H1, H2, 7)
    assert got.shape == (4,)
    assert np.allclose(got, [vd.cosine_mutual_knn(a, b, 7) for a, b in zip(H1, H2)])
    assert np.allclose(al.cosine_mutual_knn_batch(H1, 5.0 * H1, 7), 1.0)  # scale of each sample: cosine
    scaled = H1 * rng.uniform(0.1, 10.0, size=(4, 80, 1))
    assert np.allclose(al.cosine_mutual_knn_batch(H1, scaled, 7), 1.0)
    assert al.cosine_mutual_knn_batch(H1[0], H2[0], 7).shape == ()
    with pytest.raises(ValueError, match="k must be"):
        al.cosine_mutual_knn_batch(H1, H2, 80)
    scores = al.similarity_scores(H1, H2)
    assert list(scores) == list(al.MEASURES) and all(v.shape == (4,) for v in scores.values())


def test_unit_imbalance():
    rng = np.random.default_rng(2)
    W1 = rng.standard_normal((3, 4, 5))
    # a balanced second layer: column j of W2 has the norm of row j of W1
    W2 = rng.standard_normal((3, 2, 4))
    W2 *= np.linalg.norm(W1, axis=-1)[:, None, :] / np.linalg.norm(W2, axis=-2, keepdims=True)
    assert np.allclose(al.unit_imbalance([W1, W2]), 0.0, atol=1e-12)
    W2b = 2.0 * W2  # ‖out‖² = 4‖in‖²: |q| / (in + out) = 3/5
    assert np.allclose(al.unit_imbalance([W1, W2b]), 0.6)
    with pytest.raises(ValueError, match="follow"):
        al.unit_imbalance([W1, W2[:, :, :3]])
    with pytest.raises(ValueError, match="at least two"):
        al.unit_imbalance([W1])


def test_paired_difference_ci_is_the_interval_of_per_seed_differences():
    rng = np.random.default_rng(3)
    shared = rng.standard_normal(8)
    a, b = shared + 0.3 + 0.05 * rng.standard_normal(8), shared + 0.05 * rng.standard_normal(8)
    d = vd.paired_difference_ci(a, b)
    assert np.allclose(d, vd.mean_ci(a - b))
    w = vd.difference_ci(a, b)
    assert np.isclose(d[0], w[0]) and (d[2] - d[1]) < 0.5 * (w[2] - w[1])  # the shared variation cancels
    assert d[1] > 0 and w[1] < 0
    with pytest.raises(ValueError, match="paired"):
        vd.paired_difference_ci(a, b[:5])


def test_alignment_study_small():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((80, 6))
    Y = np.eye(3)[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0).astype(int)]
    Xa, Xb = X, X[:, ::-1].copy()
    kw = dict(widths=(8, 12), main_width=12, etas=(0.05, 0.1), steps=200, seeds=2, loss_every=8, gd_loss_every=2, k=3)
    st = al.alignment_study(Xa[:60], Xb[:60], Y[:60], (Xa[60:], Xb[60:]), sweep_steps=2000, seed=1, **kw)
    assert ("GD at matched loss", 8, 0.1) in st.scores and ("GD at matched steps", 12, 0.05) in st.scores
    assert ("SGD", 8, 0.05) not in st.scores
    assert set(st.scores[("SGD", 12, 0.1)]) == {"kernel alignment", "linear CKA", "mutual 3-NN"}
    assert all(np.all((r > 0.5) & (r <= 1.0)) for r in st.loss_ratio.values())
    assert st.series[("GD", 0.1)]["linear CKA"].shape == (st.record_steps.size, 2)
    assert np.isclose(st.wd_decay, (1 - 0.1 * 1e-2) ** 400)
    assert set(st.imbalance) == {"initial", "SGD", "SGD without label noise", "GD", "GD + weight decay"}
    # gradient descent conserves every unit's charge at first order; weight decay shrinks it by (1 - ηγ)^{2T}
    q0 = st.charges["initial"]
    for key, want in (("GD", 1.0), ("GD + weight decay", st.wd_decay)):
        c = (st.charges[key] * q0).sum(-1) / (q0 * q0).sum(-1)
        assert np.allclose(c, want, rtol=0.05), (key, c, want)
    # every method of a width starts from the same networks: the charges at the start are those of the SGD runs'
    # initial weights, whose sharpness is recorded, with the end of every SGD rate and of gradient descent
    assert set(st.sharpness) == {"initial", ("SGD", 0.05), ("SGD", 0.1), ("GD", 0.1)}
    assert all(v.shape == (2, 2) and np.all(v > 0) for v in st.sharpness.values())
    from symbreak.rng import make_rng

    wseed = int(make_rng(1).integers(0, 2**31, size=2)[1])  # the study's seed of its second width (12)
    sa, sb = al.pair_sizes(12, 6, 6, 3)
    g = al.train_pair_grid(
        Xa[:60],
        Xb[:60],
        Y[:60],
        sa,
        sb,
        eta=0.1,
        batch_size=None,
        steps=1,
        loss_every=1,
        label_noise=1.0,
        seeds=2,
        seed=wseed,
    )
    assert np.allclose(al.unit_charges([w[0] for w in g.initial_a]), q0)
    with pytest.raises(RuntimeError, match="did not reach"):
        al.alignment_study(Xa[:60], Xb[:60], Y[:60], (Xa[60:], Xb[60:]), sweep_steps=2, seed=1, **kw)
    with pytest.raises(ValueError, match="main_width"):
        al.alignment_study(Xa, Xb, Y, (Xa, Xb), widths=(4, 6), main_width=8)
    with pytest.raises(ValueError, match="etas"):
        al.alignment_study(Xa, Xb, Y, (Xa, Xb), etas=(0.05, 0.02))


def test_mlp_sharpness_matches_the_dense_hessian():
    import torch
    from torch.autograd.functional import hessian

    from symbreak.beyond import alignment as al

    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((30, 5)), rng.standard_normal((30, 3))
    ws = al.init_mlp([5, 4, 6, 3], 2, seed=1)
    lam = al.mlp_sharpness(ws, X, Y, seed=0)
    shapes = [w.shape[1:] for w in ws]
    sizes = [int(np.prod(sh)) for sh in shapes]
    for r in range(2):

        def loss(theta):
            ps = [t.reshape(sh) for t, sh in zip(torch.split(theta, sizes), shapes)]
            h = torch.tensor(X)
            for p in ps[:-1]:
                h = torch.relu(h @ p.T)
            return 0.5 * ((h @ ps[-1].T - torch.tensor(Y)) ** 2).sum(-1).mean()

        theta = torch.cat([torch.tensor(w[r]).reshape(-1) for w in ws])
        ev = np.linalg.eigvalsh(hessian(loss, theta).numpy())
        assert np.isclose(lam[r], ev[-1], rtol=1e-6)  # the largest eigenvalue, not the largest in magnitude
    with pytest.raises(ValueError, match="Y must have 3 columns"):
        al.mlp_sharpness(ws, X, Y[:, :2])
    with pytest.raises(ValueError, match="same number"):
        al.mlp_sharpness(ws, X, Y[:5])
    with pytest.raises(ValueError, match="tol"):
        al.mlp_sharpness(ws, X, Y, tol=2.0)


def test_charge_step_is_the_noether_identity():
    """One full-batch step from the same networks, with weight decay γ and without: the rescaling symmetry
    cancels the first-order term of every unit's charge, so q_wd − (1 − ηγ)² q₀ = q_gd − q₀ (both are
    η²(‖∇_in L‖² − ‖∇_out L‖²)), while each unit's own squared norms move at first order. The page's
    first-order factor (1 − ηγ)^{2T} is this identity with the η² term dropped."""
    Xa, Xb, Y = _toy()
    eta, gamma = 0.05, 0.5
    g = al.train_pair_grid(
        Xa,
        Xb,
        Y,
        [6, 8, 3],
        [6, 7, 5, 3],
        eta=[eta, eta],
        batch_size=None,
        steps=1,
        label_noise=[0.0, 0.0],
        weight_decay=[0.0, gamma],
        seeds=3,
        record_at=[0, 1],
        loss_every=1,
        seed=4,
    )
    q0 = al.unit_charges([w[0] for w in g.initial_a]).astype(np.float64)
    q_gd = al.unit_charges([w[0] for w in g.final_a]).astype(np.float64)
    q_wd = al.unit_charges([w[1] for w in g.final_a]).astype(np.float64)
    second = q_gd - q0  # η² (‖∇_in L‖² − ‖∇_out L‖²)
    assert np.allclose(q_wd - (1 - eta * gamma) ** 2 * q0, second, atol=1e-5)
    assert not np.allclose(q_wd - q0, second, atol=1e-3)  # the factor (1 − ηγ)² is resolved
    assert np.abs(second).max() > 1e-4  # the η² term is not zero ...
    first = (g.final_a[0][0] ** 2).sum(-1) - (g.initial_a[0][0] ** 2).sum(-1)
    assert np.abs(first).max() > 5 * np.abs(second).max()  # ... and much smaller than a unit's own first-order move


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("sizes", [[6, 8, 3], [6, 7, 5, 3]])
def test_written_out_backpropagation_is_autograd_bit_for_bit(activation, sizes):
    """train_pair_grid's step takes its gradients from _mlp_gradients, backpropagation written
    out; torch.autograd's gradients of the same loss are the same numbers, bit for bit."""
    import torch

    from symbreak.beyond._common import _mlp_gradients

    g = np.random.default_rng(3)
    R, b = 4, 9
    ws = [torch.from_numpy(g.standard_normal((R, o, i)).astype(np.float32)) for i, o in zip(sizes[:-1], sizes[1:])]
    x = torch.from_numpy(g.standard_normal((R, b, sizes[0])).astype(np.float32))
    y = torch.from_numpy(g.standard_normal((R, b, sizes[-1])).astype(np.float32))
    got = _mlp_gradients(ws, x, y, activation)
    leaves = [w.clone().requires_grad_(True) for w in ws]
    phi = torch.relu if activation == "relu" else torch.tanh
    h = x
    for w in leaves[:-1]:
        h = phi(h @ w.transpose(1, 2))
    loss = (0.5 * ((h @ leaves[-1].transpose(1, 2) - y) ** 2).sum(-1).mean(-1)).sum()
    want = torch.autograd.grad(loss, leaves)
    assert len(got) == len(want)
    for a, w in zip(got, want):
        assert a.shape == w.shape and torch.equal(a, w)
