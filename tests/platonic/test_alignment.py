"""Tests of ``symbreak.platonic.alignment`` (moved from test_platonic.py)."""

import numpy as np
import pytest

from symbreak import platonic as pl


def test_train_sgd_samples_linear_matches_population_sgd_statistics(small_pair):
    """Without activation the sample-level trainer is online SGD on the EDLN: it selects K*."""
    task, net_a, *_ = small_pair
    w0 = pl.init_weights(net_a, 5, replicas=2)
    res = pl.train_sgd_samples(net_a, task, w0, lr=0.01, batch_size=4, steps=20_000, seed=1, lr_warmup=1000)
    al = pl.kernel_alignment(res.window_kernels(0.25), task.platonic_kernel(), metric=task.sigma_x)
    assert al.min() > 0.97
    # narrow widths are allowed here, and a finite dataset can be given
    narrow = pl.random_edln(2, task.n, task.m, (task.n, 1))
    x, _, y = pl.sample_data(task, 3, 64)
    r2 = pl.train_sgd_samples(
        narrow,
        task,
        pl.init_weights(narrow, 4),
        lr=0.01,
        batch_size=4,
        steps=200,
        seed=5,
        data=(x, y),
        activation="tanh",
        scale=0.5,
    )
    assert np.all(np.isfinite(r2.loss[1:]))
    with pytest.raises(ValueError, match="activation"):
        pl.train_sgd_samples(net_a, task, w0, lr=0.01, batch_size=4, steps=100, activation="sigmoid")
    with pytest.raises(ValueError, match="data"):
        pl.train_sgd_samples(net_a, task, w0, lr=0.01, batch_size=4, steps=100, data=(x,))
    with pytest.raises(ValueError, match="scale"):
        pl.train_sgd_samples(net_a, task, w0, lr=0.01, batch_size=4, steps=100, scale=0.0)
    with pytest.raises(pl.DivergenceError):
        pl.train_sgd_samples(net_a, task, w0, lr=5.0, batch_size=4, steps=500)


@pytest.mark.parametrize("eta,noise", [(0.001, 0.01), (0.001, 2.0), (0.03, 0.01), (0.03, 2.0), (0.01, 0.5)])
def test_explorer_never_raises_in_its_box(eta, noise):
    out = pl.explore_alignment(eta, noise, steps=3000, seeds=2)
    assert out["diverged"].shape == (1,) and out["final_seeds"].shape == (1, 2)
    if out["diverged"][0]:
        assert "diverged" in out["message"] and np.isnan(out["final"][0]) and np.isnan(out["final_seeds"]).all()
    else:
        assert 0.5 < out["final"][0] <= 1.0 + 1e-12
        assert out["final"][0] == pytest.approx(out["final_seeds"][0].mean(), rel=1e-14)  # per seed, then the mean


def test_explorer_rejects_settings_outside_its_box():
    with pytest.raises(ValueError, match="eta"):
        pl.explore_alignment(0.1, 0.5)
    with pytest.raises(ValueError, match="noise"):
        pl.explore_alignment(0.01, 5.0)
    with pytest.raises(ValueError, match="steps"):
        pl.explore_alignment(0.01, 0.5, steps=10)


def test_new_functions_reject_bad_inputs():
    task, net_a, _ = pl.example_pair()
    w = pl.init_weights(net_a, 0)
    x, _, _ = pl.sample_data(task, 0, 10)
    with pytest.raises(ValueError, match="unstacked"):
        pl.representations(net_a, [a[None] for a in w], x)
    with pytest.raises(ValueError, match="x"):
        pl.representations(net_a, w, x[:, :2])
    with pytest.raises(ValueError, match="activation"):
        pl.representations(net_a, w, x, activation="softplus")
    with pytest.raises(ValueError, match="task"):
        pl.hessian_trace_at_minimum(net_a, "not a task", w)
    with pytest.raises(ValueError, match="lr"):
        pl.train_sgd_samples(net_a, task, w, lr=-0.1, batch_size=4, steps=100)
    with pytest.raises(ValueError, match="batch_size"):
        pl.train_sgd_samples(net_a, task, w, lr=0.1, batch_size=0, steps=100)
    with pytest.raises(ValueError, match="data"):
        pl.train_sgd_samples(net_a, task, w, lr=0.1, batch_size=20, steps=100, data=(x, x @ task.v_star.T))
    with pytest.raises(ValueError, match="h1"):
        pl.linear_cka(x[:1], x[:1])
