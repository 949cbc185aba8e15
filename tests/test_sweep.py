"""Sweeps over parameter grids: the same results on any executor and any number of workers."""

from __future__ import annotations

import concurrent.futures
import functools

import numpy as np
import pytest

from symbreak import autoencoder as ae
from symbreak.sweep import SweepResult, grid_points, point_seed, sweep

LAM = ae.geometric_spectrum(6)


def final_scale(eta, batch_size, seed):
    """A small run: the top mode's scale after 200 SGD steps (module level, so processes can run it)."""
    res = ae.simulate_sgd(LAM, 2, eta, batch_size, 200, seeds=2, record_every=200, seed=seed)
    return res.scales[:, -1, 0]


GRID = {"eta": [0.02, 0.05], "batch_size": [8, 16, 32]}


@pytest.fixture(scope="module")
def serial():
    return sweep(final_scale, GRID, seed=7, executor="serial")


def test_grid_points_and_shape():
    points, shape = grid_points(GRID)
    assert (
        shape == (2, 3)
        and points[0] == {"eta": 0.02, "batch_size": 8}
        and points[-1] == {"eta": 0.05, "batch_size": 32}
    )
    assert grid_points([{"a": 1}, {"a": 2}]) == ([{"a": 1}, {"a": 2}], (2,))
    for bad, err in (({}, ValueError), ({"a": []}, ValueError), ([], ValueError), (3, TypeError)):
        with pytest.raises(err):
            grid_points(bad)


def test_serial_sweep_shapes_and_seeds(serial):
    assert isinstance(serial, SweepResult) and len(serial) == 6
    assert serial.array().shape == (2, 3, 2)
    assert serial.array(lambda r: r.mean()).shape == (2, 3)
    # point i ran with point_seed(7, i): a point's result does not depend on the others
    again = final_scale(0.05, 16, point_seed(7, 4))
    assert np.array_equal(serial.results[4], again)
    assert not np.array_equal(serial.results[0], serial.results[1])


@pytest.mark.parametrize("workers", [1, 3])
def test_thread_pool_gives_the_serial_results(serial, workers):
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        res = sweep(final_scale, GRID, seed=7, executor=pool)
    assert all(np.array_equal(a, b) for a, b in zip(res.results, serial.results))


def test_local_processes_give_the_serial_results(serial):
    res = sweep(final_scale, GRID, seed=7, max_workers=2)
    assert all(np.array_equal(a, b) for a, b in zip(res.results, serial.results))


def test_dask_cluster_gives_the_serial_results(serial):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        res = sweep(final_scale, GRID, seed=7, executor=client.get_executor())
    assert all(np.array_equal(a, b) for a, b in zip(res.results, serial.results))


def test_errors_are_re_raised_and_bad_arguments_rejected():
    with pytest.raises(ValueError, match="eta"):
        sweep(final_scale, {"eta": [0.02, -1.0]}, batch_size=8, seed=1, executor="serial")
    with pytest.raises(ValueError, match="eta"):
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            sweep(final_scale, {"eta": [0.02, -1.0]}, batch_size=8, seed=1, executor=pool)
    with pytest.raises(ValueError, match="seed"):
        sweep(final_scale, {"eta": [0.02], "seed": [1]}, batch_size=8, seed=1, executor="serial")
    with pytest.raises(TypeError, match="executor"):
        sweep(final_scale, GRID, seed=1, executor=object())
    with pytest.raises(ValueError, match="executor"):
        sweep(final_scale, GRID, seed=1, executor="cluster")
    with pytest.raises(TypeError, match="fn"):
        sweep(3, GRID)
    part = functools.partial(final_scale, batch_size=8)
    assert sweep(part, {"eta": [0.02]}, seed=1, executor="serial").array().shape == (1, 2)
