"""The one training loop (``symbreak.engine.run_ensemble``) and every trainer on it: replica
independence, divergence reporting, Ctrl-C, progress bars."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from toy_models import Walk

from symbreak import autoencoder as ae
from symbreak import dln
from symbreak import platonic as pl
from symbreak.engine import Configuration, DivergenceError, EnsembleResult, replica_streams, run_ensemble
from symbreak.progress import ProgressCounter

LAM = ae.geometric_spectrum(8)


# ------------------------------------------------------------------ a toy model for the runner
_Toy = Walk  # x ← x + noise; replica r blows up to inf at step blow[r] (tests/toy_models.py)


def _toy(confs, blow=None, **kw):
    return run_ensemble(
        lambda reps, streams: _Toy(reps, streams, blow),
        confs,
        record_names=("x",),
        final_names=("x",),
        divergence_limit=1e300,
        **kw,
    )


class _BlockWalk(Walk):
    """The toy walk with a block method: the runner must call steps() between its checks."""

    calls: list = []

    def steps(self, noise, t0, t1, step):
        type(self).calls.append((t0, t1, step))
        for t in range(t0, t1):
            self.step(noise, t, step + t - t0)


def test_runner_calls_a_models_block_steps_between_divergence_checks():
    confs = [Configuration(2, np.array([0, 5, 50]))]
    _BlockWalk.calls = []
    kw = dict(record_names=("x",), final_names=("x",), divergence_limit=1e300, seed=3, check_every=4)
    a = run_ensemble(lambda reps, streams: _BlockWalk(reps, streams, None), confs, n_chunks=1, **kw)
    b = run_ensemble(lambda reps, streams: Walk(reps, streams, None), confs, n_chunks=1, **kw)
    assert np.array_equal(a[0].x, b[0].x)  # the same trajectories as step by step
    assert _BlockWalk.calls and all(1 <= t1 - t0 <= 4 for t0, t1, _ in _BlockWalk.calls)
    assert sum(t1 - t0 for t0, t1, _ in _BlockWalk.calls) == 50  # every step once
    assert _BlockWalk.calls[0] == (0, 4, 0)


def test_runner_records_on_each_grid_and_is_independent_of_chunks_and_replica_count(monkeypatch):
    confs = [Configuration(3, np.array([0, 5, 50]), {"eta": 0.1}), Configuration(2, np.array([0, 7, 13]), {"eta": 0.2})]
    monkeypatch.setenv("SYMBREAK_THREADS", "2")
    a = _toy(confs, seed=3, block_steps=4, block_draws=8)
    monkeypatch.setenv("SYMBREAK_THREADS", "1")
    b = _toy(confs, seed=3, n_chunks=1)
    assert isinstance(a[0], EnsembleResult) and a[0].x.shape == (3, 3) and a[1].x.shape == (2, 3)
    assert a[0].params == {"eta": 0.1} and a[1].steps.tolist() == [0, 7, 13]
    for ra, rb in zip(a, b):
        assert np.array_equal(ra.x, rb.x) and np.array_equal(ra.final["x"], rb.final["x"])
    # replica r's record is the sum of the first steps of its own stream (seed, r)
    for r, s in enumerate(replica_streams(3, range(5))):
        c, j = (0, r) if r < 3 else (1, r - 3)
        grid = confs[c].record_at
        walk = np.concatenate([[0.0], np.cumsum(s.standard_normal(grid[-1]))])
        assert np.allclose(a[c].x[j], walk[grid], rtol=0, atol=1e-12)
    one = _toy([Configuration(1, np.array([0, 5, 50]))], seed=3)
    assert np.array_equal(one[0].x[0], a[0].x[0])


def test_runner_reports_divergence_within_a_few_steps_naming_replica_and_parameters():
    confs = [Configuration(2, np.array([0, 1000]), {"eta": 0.1}), Configuration(2, np.array([0, 1000]), {"eta": 0.5})]
    with pytest.raises(DivergenceError, match=r"step 2\d.*replica 3.*eta=0.5") as info:
        _toy(confs, seed=1, blow={3: 17}, check_every=8)
    assert 17 < info.value.step <= 17 + 8
    assert info.value.replica == 3 and info.value.params == {"eta": 0.5}


def test_bad_runner_arguments():
    with pytest.raises(ValueError, match="record_at"):
        Configuration(1, np.array([1, 2]))
    with pytest.raises(ValueError, match="divergence_limit"):
        run_ensemble(None, [Configuration(1, np.array([0, 1]))], record_names=(), divergence_limit=float("nan"))
    with pytest.raises(ValueError, match="configurations"):
        run_ensemble(None, [], record_names=())


# ------------------------------------------------------------------ every trainer: replica independence
def test_autoencoder_replica_depends_only_on_seed_and_index(monkeypatch):
    kw = dict(record_every=100, seed=5)
    monkeypatch.setenv("SYMBREAK_THREADS", "2")
    five = ae.simulate_sgd(LAM, 3, 0.02, 16, 300, seeds=5, **kw)
    monkeypatch.setenv("SYMBREAK_THREADS", "1")
    one = ae.simulate_sgd(LAM, 3, 0.02, 16, 300, seeds=1, **kw)
    three = ae.simulate_sgd(LAM, 3, 0.02, 16, 300, seeds=3, **kw)
    assert np.array_equal(five.S[0], one.S[0]) and np.array_equal(five.S[:3], three.S)
    assert not np.array_equal(five.S[0], five.S[1])
    relu = dict(sampler="samples", activation="relu", init="random", seed=2, record_every=50)
    a = ae.simulate_sgd(LAM, 3, 0.01, 8, 100, seeds=3, **relu)
    b = ae.simulate_sgd(LAM, 3, 0.01, 8, 100, seeds=1, **relu)
    assert np.array_equal(a.S[0], b.S[0])
    grid = ae.simulate_sgd_grid(LAM, 3, [0.02, 0.01], [16, 32], 0.002, n_records=2, seeds=2, seed=5)
    alone = ae.simulate_sgd_grid(LAM, 3, [0.02], [16], 0.002, n_records=2, seeds=1, seed=5)
    assert np.array_equal(grid[0].S[0], alone[0].S[0])


@pytest.fixture(scope="module")
def edln():
    task, net, _ = pl.example_pair()
    return task, net, pl.init_weights(net, 4, replicas=3)


def test_platonic_replica_depends_only_on_seed_and_index(edln):
    task, net, w = edln
    kw = dict(lr=0.01, batch_size=4, steps=60, seed=9, record_every=20, lr_warmup=60)
    a = pl.train_sgd(net, task, w, **kw)
    b = pl.train_sgd(net, task, [x[:1] for x in w], **kw)
    c = pl.train_sgd(net, task, w, n_chunks=2, **kw)
    assert np.array_equal(a.kernels[:, :1], b.kernels) and np.array_equal(a.kernels, c.kernels)
    assert np.array_equal(a.weights[0][:1], b.weights[0])
    g = pl.train_gd(net, task, w, lr=0.02, steps=40, record_every=20)
    h = pl.train_gd(net, task, [x[1:2] for x in w], lr=0.02, steps=40, record_every=20, n_chunks=2)
    assert np.array_equal(g.kernels[:, 1:2], h.kernels)


def test_factor_training_is_reproducible():
    Ws = dln.balanced_factors(np.diag([2.0, 1.0, 0.5]), 3, np.random.default_rng(0))
    a = dln.train_factors(Ws, N=3, beta=2.0, p=2, step=1e-3, steps=30, record_every=10)
    b = dln.train_factors(Ws, N=3, beta=2.0, p=2, step=1e-3, steps=30, record_every=10)
    assert np.array_equal(a["sigma"], b["sigma"]) and a["sigma"].shape == (4, 3)


# ------------------------------------------------------------------ every trainer: divergence
def test_factor_training_divergence_is_reported_not_a_hang():
    t = time.perf_counter()
    with pytest.raises(DivergenceError, match=r"factor gradient descent diverged at step \d.*step=3.*N=3") as info:
        dln.train_factors(dln.balanced_factors(np.diag([2, 1, 0.5]), 3), N=3, beta=1, p=2, step=3.0, steps=200)
    assert time.perf_counter() - t < 5 and info.value.step <= 5
    assert isinstance(info.value, RuntimeError)  # what train_factors raised before


def test_gradient_descent_divergence_is_reported(edln):
    task, net, w = edln
    with pytest.raises(DivergenceError, match=r"^gradient descent diverged at step \d+ .*lr=5") as info:
        pl.train_gd(net, task, w, lr=5.0, steps=500, record_every=500)
    assert info.value.step < 100


def test_autoencoder_divergence_is_detected_within_a_few_steps():
    """A divergent run of 5 steps is caught at its end; a long one within the runner's check interval
    (``_CHECK_EVERY`` = 64 steps, one call of the compiled step) of the first step whose weights exceed
    the limit (found here by replaying the same replica)."""
    from symbreak.autoencoder import sgd as sgd_mod

    with pytest.raises(DivergenceError):
        ae.simulate_sgd(LAM, 3, 3.0, 16, 5, seed=1)
    with pytest.raises(DivergenceError) as info:
        ae.simulate_sgd(LAM, 3, 0.9, 16, 2000, seed=1)
    first = None
    for n in range(1, info.value.step + 1):
        try:
            ae.simulate_sgd(LAM, 3, 0.9, 16, n, seed=1, record_every=n)
        except DivergenceError:
            first = n
            break
        res = ae.simulate_sgd(LAM, 3, 0.9, 16, n, seed=1, record_every=n, record_weights=True)
        if max(np.abs(res.W[0, -1]).max(), np.abs(res.U[0, -1]).max()) > 1e6:
            first = n
            break
    assert first is not None and info.value.step - sgd_mod._CHECK_EVERY <= first <= info.value.step


# ------------------------------------------------------------------ Ctrl-C
_CHILD = textwrap.dedent("""
    import signal, sys, threading, time, numpy as np
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C as in a terminal, whatever the parent set
    from symbreak import autoencoder as ae, platonic as pl, dln
    which = sys.argv[1]
    def run(steps):
        if which == "autoencoder":
            ae.simulate_sgd(ae.geometric_spectrum(20), 10, 0.001, 128, steps, seeds=8, record_every=steps // 10)
        elif which == "platonic":
            task, net, _ = pl.example_pair()
            pl.train_sgd(net, task, pl.init_weights(net, 0, replicas=4), lr=1e-4, batch_size=4, steps=steps,
                         record_every=steps // 10, n_chunks=2)
        else:
            Ws = dln.balanced_factors(np.diag([2.0, 1.0, 0.5]), 3)
            dln.train_factors(Ws, N=3, beta=1.0, p=2, step=1e-6, steps=steps, record_every=steps // 10)
    run(20)  # the same run, short: the compiled kernels are loaded before the clock starts
    print("running", flush=True)
    try:
        run(10**8)
    except KeyboardInterrupt:
        print("interrupted", time.perf_counter(), threading.active_count(), flush=True)
        sys.exit(3)
""")


@pytest.mark.parametrize(
    "which, threads", [("autoencoder", "2"), ("autoencoder", "1"), ("platonic", "2"), ("dln", "1")]
)
def test_ctrl_c_stops_a_simulation_within_a_second_leaving_no_thread(which, threads):
    env = dict(os.environ, SYMBREAK_THREADS=threads, OMP_NUM_THREADS="1", SYMBREAK_PROGRESS="0")
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, which], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout.readline().strip() == "running"
        time.sleep(0.5)  # well into the run (it started, kernels loaded, when the child printed)
        assert proc.poll() is None
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        elapsed = time.perf_counter() - t0
    finally:
        proc.kill()
        proc.wait()  # reaped here: a child left running would warn (an error) in a later test
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 3, err
    _, stopped_at, threads_left = out.split()
    assert int(threads_left) == 1  # only the main thread is left
    # within a second (plus a second for a loaded machine), from SIGINT to the child's KeyboardInterrupt
    # with its threads joined, on the child's own clock (perf_counter is system-wide monotonic on Linux):
    # the interpreter's exit, which pytest-xdist's parallel workers slow down, is not the simulation's
    assert float(stopped_at) - t0 < 1.0 + 1.0
    assert elapsed < 30


# ------------------------------------------------------------------ progress bars
def test_progress_bar_works_when_shown(monkeypatch, capsys):
    monkeypatch.setenv("SYMBREAK_PROGRESS", "1")
    monkeypatch.setenv("SYMBREAK_THREADS", "2")
    res = ae.simulate_sgd(LAM, 3, 0.02, 16, 200, seeds=3, record_every=100, seed=1)
    assert res.S.shape[:2] == (3, 3)
    pl_task, net, _ = pl.example_pair()
    pl.train_sgd(net, pl_task, pl.init_weights(net, 0, replicas=2), lr=0.01, batch_size=4, steps=20, record_every=10)
    err = capsys.readouterr().err
    assert "autoencoder SGD" in err and "Platonic SGD" in err
    with ProgressCounter(10, desc="x") as bar:
        assert bar.shown
        bar.advance(4)
        bar.advance(6)
        assert bar.count == 10
    monkeypatch.setenv("SYMBREAK_PROGRESS", "0")
    with ProgressCounter(10) as bar:
        bar.advance(3)
        assert not bar.shown and bar.count == 3


# ------------------------------------------------------------------ the torch-device path (tested on the CPU)
def test_torch_device_path_matches_the_numpy_engine():
    pytest.importorskip("torch")
    lam = ae.geometric_spectrum(20)
    kw = dict(seeds=24, record_every=1500, seed=3)
    a = ae.simulate_sgd(lam, 10, 0.02, 128, 3000, device="cpu", **kw)
    b = ae.simulate_sgd(lam, 10, 0.02, 128, 3000, **kw)
    assert a.S.shape == b.S.shape and a.S.dtype == np.float64
    sa, sb = a.scales[:, -1], b.scales[:, -1]
    se = np.sqrt(sa.var(0, ddof=1) / sa.shape[0] + sb.var(0, ddof=1) / sb.shape[0])
    assert np.all(np.abs(sa.mean(0) - sb.mean(0)) < 4.5 * se)  # same law, independent draws
    assert sa.mean(0)[0] > 1.2  # and the scale did grow (the comparison is not vacuous)
    again = ae.simulate_sgd(lam, 10, 0.02, 128, 3000, device="cpu", **kw)
    assert np.array_equal(a.S, again.S)
    with pytest.raises(ValueError, match="device"):
        ae.simulate_sgd(lam, 10, 0.02, 8, 10, device="cpu")


def test_torch_gamma_is_exact():
    torch = pytest.importorskip("torch")
    from scipy import stats

    from symbreak.engine import _torch_gamma

    gen = torch.Generator().manual_seed(0)
    for a in (0.5, 1.0, 10.5, 64.0):
        x = _torch_gamma(torch, torch.full((40_000,), a, dtype=torch.float64), gen).numpy()
        assert stats.kstest(x, stats.gamma(a).cdf).pvalue > 1e-3


def test_replica_does_not_depend_on_the_block_size():
    """Blocks of steps shrink as chunks grow (block_draws / replicas): a replica's draws must not."""
    lam = ae.geometric_spectrum(20)
    kw = dict(record_every=40, seed=8)
    one = ae.simulate_sgd(lam, 10, 0.02, 128, 120, seeds=1, **kw)  # blocks of 64 steps
    many = ae.simulate_sgd(lam, 10, 0.02, 128, 120, seeds=150, **kw)  # blocks of 8 steps
    assert np.array_equal(one.S[0], many.S[0])
    task, net, _ = pl.example_pair()
    w = pl.init_weights(net, 4, replicas=150, scale=0.5)
    pkw = dict(lr=0.005, batch_size=16, steps=24, seed=9, record_every=8, lr_warmup=24)
    a = pl.train_sgd(net, task, [x[:1] for x in w], **pkw)
    b = pl.train_sgd(net, task, w, **pkw)
    assert np.array_equal(a.kernels[:, 0], b.kernels[:, 0])
