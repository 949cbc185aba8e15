"""Tests of ``symbreak.platonic.minima`` (moved from test_platonic.py)."""

import numpy as np
import pytest

from symbreak import platonic as pl

from .helpers import _orbit_minimum


def test_deeper_orbit_minimum_has_the_same_kernel_in_every_layer(task):
    net = pl.random_edln(21, 3, 3, (3, 3), cond=2.0)
    w0 = pl.random_global_minimum(net, task, 5)
    w, res = _orbit_minimum(net, task, w0, [1, 2])
    ks = pl.hidden_kernels(net, w, normalize=True)
    kstar = task.platonic_kernel()
    for k in ks:
        assert np.linalg.norm(k - kstar) < 1e-6
    assert res.fun == pytest.approx(pl.minimal_entropy(net, task), rel=1e-9)


def test_library_orbit_minimiser_agrees(task, square_net):
    w0 = pl.random_global_minimum(square_net, task, 7)
    w, res = pl.minimize_entropy_on_orbit(square_net, task, w0)
    assert res.fun == pytest.approx(pl.minimal_entropy(square_net, task), rel=1e-10)
    k = pl.hidden_kernels(square_net, w, normalize=True)[0]
    assert np.linalg.norm(k - task.platonic_kernel()) < 1e-7
    assert not any(np.shares_memory(a, b) for a in w for b in w0)  # new arrays, not views of the input


def test_orbit_minimiser_returns_new_arrays_for_layers_it_does_not_move():
    task, _, net_b = pl.example_pair()
    w0 = pl.random_global_minimum(net_b, task, 2)
    w, _ = pl.minimize_entropy_on_orbit(net_b, task, w0, layers=[2], restarts=0)
    assert not any(np.shares_memory(a, b) for a in w for b in w0)
    assert np.array_equal(w[0], w0[0]) and np.array_equal(w[4], w0[4])  # untouched layers keep their values
