"""Tests of ``symbreak.platonic.model`` (moved from test_platonic.py)."""

import numpy as np
import pytest

from symbreak import platonic as pl
from symbreak.rng import make_rng


def test_compiled_sgd_reports_divergence(monkeypatch):
    """Past the stability edge the compiled step's weights overflow; the runner's check sees it
    and raises DivergenceError naming the replica and its learning rate, as the NumPy step does."""
    task, net, _ = pl.example_pair()
    w0 = pl.init_weights(net, 1, replicas=3)
    monkeypatch.setattr(pl.training, "_COMPILED_SGD", True)
    with pytest.raises(pl.DivergenceError, match=r"replica 1; lr=3,"):
        pl.train_sgd(net, task, w0, lr=np.array([0.01, 3.0, 0.01]), batch_size=4, steps=500, seed=1)


def test_sharpness_against_explicit_hessian():
    import torch

    task = pl.random_task(71, n=2, m=2, noise=0.5)
    net = pl.random_edln(72, 2, 2, (3,), cond=2.0)
    w = pl.platonic_minimum(net, task, 73)
    shapes = [a.shape for a in w]
    sizes = [a.size for a in w]

    def loss(flat):
        parts = torch.split(flat, sizes)
        ws = [pp.reshape(s) for pp, s in zip(parts, shapes)]
        u = torch.tensor(net.m_out) @ ws[1] @ ws[0] @ torch.tensor(net.input_map)
        a = u - torch.tensor(task.v_star)
        return torch.trace(a @ torch.tensor(task.sigma_x) @ a.T)

    flat = torch.tensor(np.concatenate([a.ravel() for a in w]))
    h = torch.autograd.functional.hessian(loss, flat).numpy()
    assert pl.sharpness(net, task, w, iters=500) == pytest.approx(np.linalg.eigvalsh(h)[-1], rel=1e-8)


def test_bad_inputs_raise_value_errors_naming_the_parameter():
    rng = make_rng(100)
    good = rng.standard_normal((3, 3))
    singular = np.outer([1.0, 2, 3], [1.0, 0, 1])
    with pytest.raises(ValueError, match="view"):
        pl.EDLN((3,), good, good, singular)
    with pytest.raises(ValueError, match="m_in"):
        pl.EDLN((3,), singular, good, good)
    with pytest.raises(ValueError, match="m_out"):
        pl.EDLN((3,), good, singular, good)
    with pytest.raises(ValueError, match="view"):
        pl.EDLN((3,), good, good, np.eye(4))
    with pytest.raises(ValueError, match="widths"):
        pl.EDLN((), good, good, good)
    with pytest.raises(ValueError, match="widths"):
        pl.EDLN((3, 0), good, good, good)
    not_spd = np.diag([1.0, -1.0, 2.0])
    v = rng.standard_normal((3, 3))
    with pytest.raises(ValueError, match="sigma_x"):
        pl.platonic_kernel(v, not_spd, np.eye(3))
    with pytest.raises(ValueError, match="sigma_eps"):
        pl.platonic_kernel(v, np.eye(3), not_spd)
    with pytest.raises(ValueError, match="sigma_x"):
        pl.platonic_kernel(v, good, np.eye(3))  # not symmetric
    with pytest.raises(ValueError, match="sigma_eps"):
        pl.platonic_kernel(v, np.eye(3), np.zeros((3, 3)))  # no noise: no Platonic kernel
    with pytest.raises(ValueError, match="sigma_x"):
        pl.platonic_kernel(v, np.eye(4), np.eye(3))  # shape mismatch
    with pytest.raises(ValueError, match="sigma_eps"):
        pl.platonic_kernel(v, np.eye(3), np.eye(2))
    with pytest.raises(ValueError, match="V"):
        pl.platonic_kernel(np.zeros((3, 3)), np.eye(3), np.eye(3))
    with pytest.raises(ValueError, match="sigma_x"):
        pl.Task(v, not_spd, np.eye(3))
    with pytest.raises(ValueError, match="sigma_eps"):
        pl.Task(v, np.eye(3), not_spd)
    with pytest.raises(ValueError, match="sigma_x"):
        pl.Task(v, np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="K1"):
        pl.kernel_alignment(np.zeros((3, 3)), np.eye(3))
    with pytest.raises(ValueError, match="K2"):
        pl.kernel_alignment(np.eye(3), np.ones((3, 2)))
    with pytest.raises(ValueError, match="same size"):
        pl.kernel_alignment(np.eye(3), np.eye(2))
    # a width below rank V*
    task = pl.Task(np.diag([1.0, 2.0, 0.5]), np.eye(3), np.eye(3))
    narrow = pl.EDLN((3, 2, 4), good, good, good)
    with pytest.raises(ValueError, match="widths"):
        pl.entropy_term(narrow, task, pl.init_weights(narrow, 0))
    with pytest.raises(ValueError, match="widths"):
        pl.train_sgd(narrow, task, pl.init_weights(narrow, 0), lr=0.01, batch_size=2, steps=1)
    # a narrow layer is fine when V* has low rank
    low = pl.Task(np.diag([1.0, 2.0, 0.0]), np.eye(3), np.eye(3))
    assert np.isfinite(pl.entropy_term(narrow, low, pl.init_weights(narrow, 0)))
    # network and task dimensions, weight shapes
    net = pl.EDLN((3,), good, good, good)
    with pytest.raises(ValueError, match="m_out"):
        pl.population_loss(net, pl.random_task(0, n=3, m=4), pl.init_weights(net, 0))
    with pytest.raises(ValueError, match="m_in"):
        pl.population_loss(net, pl.random_task(0, n=4, m=3), pl.init_weights(pl.random_edln(0, 4, 3, (3,)), 0))
    task3 = pl.random_task(0, n=3, m=3)
    with pytest.raises(ValueError, match=r"weights\[1\]"):
        pl.entropy_term(net, task3, [np.eye(3), np.eye(4)])
    with pytest.raises(ValueError, match="weights"):
        pl.entropy_term(net, task3, [np.eye(3)])
    with pytest.raises(ValueError, match="lr"):
        pl.train_gd(net, task3, pl.init_weights(net, 0), lr=-0.1, steps=1)
    with pytest.raises(ValueError, match="batch_size"):
        pl.train_sgd(net, task3, pl.init_weights(net, 0), lr=0.1, batch_size=0, steps=1)
    with pytest.raises(ValueError, match="s_hat"):
        pl.minibatch_gradient(net, task3, pl.init_weights(net, 0), np.eye(5))
    with pytest.raises(ValueError, match="T"):
        pl.symmetry_transform(pl.init_weights(net, 0), 1, singular)
    with pytest.raises(ValueError, match="widths"):
        pl.platonic_minimum(narrow, task, 0)  # a width below rank V* = 3
    with pytest.raises(ValueError, match="sigma_eps"):
        pl.platonic_minimum(net, low.with_noise(np.zeros((3, 3))), 0)


def test_task_holds_read_only_copies_so_its_rank_cannot_go_stale():
    """Task copies V*, Σx, Σε and freezes the copies: rank V* (computed once, read by check_task at
    every call) cannot disagree with V* after the caller changes its own arrays."""
    v, sx, se = np.diag([1.0, 2.0, 0.5]), np.eye(3), np.eye(3)
    task = pl.Task(v, sx, se)
    v[:] = 0.0
    v[0, 0] = 1.0
    sx[0, 0] = -1.0
    assert task.rank == 3 == np.linalg.matrix_rank(task.v_star)
    assert task.v_star[1, 1] == 2.0 and task.sigma_x[0, 0] == 1.0
    for a in (task.v_star, task.sigma_x, task.sigma_eps):
        with pytest.raises(ValueError, match="read-only"):
            a[0, 0] = 5.0
    assert pl.Task(np.diag([1.0, 2.0, 0.0]), sx * 0 + np.eye(3), se).rank == 2
