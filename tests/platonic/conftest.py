"""Fixtures shared by the tests of ``symbreak.platonic``."""

import pytest

from symbreak import platonic as pl

from .helpers import *  # noqa: F403


@pytest.fixture(scope="module")
def task():
    return pl.random_task(11, n=3, m=3, noise=0.6)


@pytest.fixture(scope="module")
def square_net():
    """A two-layer EDLN with a square hidden layer (the orbit is GL(3))."""
    return pl.random_edln(12, 3, 3, (3,), cond=2.0)


@pytest.fixture(scope="module")
def deep():
    task = pl.random_task(31, n=4, m=3, noise=0.5)
    net = pl.random_edln(32, 4, 3, (5, 3, 6), cond=3.0)
    return net, task, pl.init_weights(net, 33)


@pytest.fixture(scope="module")
def small_pair():
    """Two small EDLNs of depths 2 and 3 on views of the same 3-dimensional latent data."""
    task = pl.random_task(91, n=3, m=3, noise=0.5)
    net_a = pl.random_edln(92, 3, 3, (4,), cond=2.0, name="A")
    net_b = pl.random_edln(93, 3, 3, (3, 5), cond=2.0, name="B")
    seeds = 4
    return task, net_a, net_b, pl.init_weights(net_a, 94, replicas=seeds), pl.init_weights(net_b, 95, replicas=seeds)
