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


# ------------------------------------------------------------------------------------------------
# Ctrl-C, failing points, bad grids (issue 28)
# ------------------------------------------------------------------------------------------------
_CTRL_C = """
import concurrent.futures, json, multiprocessing, os, signal, sys, threading, time
from symbreak import engine
from symbreak.sweep import sweep

def nap(i):
    for _ in range(100):  # 5 s per point, stoppable at each check_interrupt (as symbreak's simulations are)
        time.sleep(0.05)
        engine.check_interrupt()
    return i

mode, target = sys.argv[1], sys.argv[2]
fired = []

def fire():
    time.sleep(0.6)  # the forked workers are napping by then
    fired.append(time.monotonic())
    if target == "group":  # a terminal's Ctrl-C: the whole foreground process group
        os.killpg(0, signal.SIGINT)
    else:  # a notebook's interrupt: the kernel process only
        os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=fire, daemon=True).start()
t0 = time.monotonic()
try:
    if mode == "process":
        sweep(nap, {"i": list(range(8))}, max_workers=2)
    else:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            try:
                sweep(nap, {"i": list(range(8))}, executor=pool)
            finally:
                raised = time.monotonic()
    outcome = "finished"
except KeyboardInterrupt:
    outcome = "interrupted"
end = time.monotonic()
print(json.dumps({"outcome": outcome, "stop_s": end - fired[0], "total_s": end - t0,
                  "children": len(multiprocessing.active_children()), "threads": threading.active_count()}))
"""


@pytest.mark.parametrize("mode", ["process", "thread"])
@pytest.mark.parametrize("target", ["parent", "group"])
def test_ctrl_c_stops_a_sweep_within_a_second(mode, target):
    """Before: the queued points ran to completion first (12 s, 23 s when only the parent got SIGINT)."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, OMP_NUM_THREADS="1")
    res = subprocess.run(
        [sys.executable, "-c", _CTRL_C, mode, target],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        start_new_session=True,  # its own process group: the "group" signal reaches nothing else
    )
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["outcome"] == "interrupted", out
    assert out["stop_s"] < 1.0, out  # points take 5 s each: nothing ran to completion
    assert out["children"] == 0, out  # no worker process left behind
    assert "Traceback" not in res.stderr, res.stderr[-2000:]  # nor an error in the pool's own thread


def _fails_at(eta, seed=None):
    if eta > 0.03:
        raise ValueError(f"eta too large: {eta}")
    return eta


@pytest.mark.parametrize("where", ["serial", "threads", "processes"])
def test_a_failing_point_is_named_and_its_error_chained(where):
    from symbreak.sweep import SweepPointError

    grid = {"eta": [0.01, 0.02, 0.05]}
    if where == "threads":
        with concurrent.futures.ThreadPoolExecutor(2) as pool, pytest.raises(SweepPointError) as info:
            sweep(_fails_at, grid, executor=pool)
    elif where == "processes":
        with pytest.raises(SweepPointError) as info:
            sweep(_fails_at, grid, max_workers=2)
    else:
        with pytest.raises(SweepPointError) as info:
            sweep(_fails_at, grid, executor="serial")
    err = info.value
    assert isinstance(err, ValueError)  # still caught by `except ValueError`
    assert err.index == 2 and err.point == {"eta": 0.05}
    assert "sweep point 2 {'eta': 0.05}" in str(err) and "eta too large" in str(err)
    assert isinstance(err.__cause__, ValueError) and not isinstance(err.__cause__, SweepPointError)


def test_a_failing_point_keeps_the_attributes_of_its_error():
    from symbreak.engine import DivergenceError

    def diverge(eta):
        raise DivergenceError(step=8, replica=0, params={"eta": eta}, value=float("inf"), limit=1e6)

    with pytest.raises(DivergenceError) as info:
        sweep(diverge, {"eta": [0.5]}, executor="serial")
    assert info.value.step == 8 and info.value.index == 0


@pytest.mark.parametrize(
    "grid, err, match",
    [
        ({"eta": {0.1, 0.2}}, TypeError, "sequence"),
        ({"eta": (x for x in [0.1])}, TypeError, "sequence"),
        ({"a": range(10**5), "b": range(10**5)}, ValueError, "MAX_POINTS"),
        ({"a": range(10**10)}, ValueError, "MAX_POINTS"),
        ([{"a": 1}] * (10**6 + 1), ValueError, "MAX_POINTS"),
        ({1: [0.1]}, TypeError, "names"),
        ([{"a": 1}, 3], TypeError, "grid"),
    ],
)
def test_bad_grids_are_refused_before_anything_is_built(grid, err, match):
    import time

    t0 = time.perf_counter()
    with pytest.raises(err, match=match):
        grid_points(grid)
    assert time.perf_counter() - t0 < 1.0


def test_grid_size_error_gives_the_memory():
    with pytest.raises(ValueError, match="GiB"):
        grid_points({"a": range(10**5), "b": range(10**5)})
    assert grid_points({"act": "relu", "eta": [0.1, 0.2]})[1] == (1, 2)  # a string is one value


def test_max_workers_only_with_the_default_pool():
    with pytest.raises(ValueError, match="max_workers"):
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            sweep(_fails_at, {"eta": [0.01]}, executor=pool, max_workers=2)
    for bad in (0, True, 2.5, "2", 10**6):
        with pytest.raises((TypeError, ValueError), match="max_workers"):
            sweep(_fails_at, {"eta": [0.01]}, max_workers=bad)
