"""Tests of ``symbreak.autoencoder.explorer`` (moved from test_autoencoder_extensions.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from symbreak import autoencoder as ae


@pytest.mark.parametrize(
    "corner", list(itertools.product(*[ae.EXPLORER_BOX[p] for p in ("eta", "batch_size", "k", "gap", "noncommuting")]))
)
def test_explorer_runs_at_every_corner_of_its_box(corner):
    eta, b, k, gap, nu = corner
    r = ae.explorer_run(eta, b, k, gap, nu, max_steps=300, n_records=10, seeds=1)
    assert r["diverged"] is None
    assert np.all(np.isfinite(r["scales"])) and r["scales"].shape == (r["tau"].size, k)
    assert np.all(r["theory"] <= r["ceiling"] + 1e-12)
    th = np.array([np.interp(r["tau"], r["tau_theory"], r["theory"][:, a]) for a in range(k)]).T
    assert np.abs(r["scales"] / th - 1).max() < 0.25
    assert r["tau"][-1] == pytest.approx(r["steps"] * eta**2 / b)


def test_explorer_follows_the_theory_at_the_default_setting():
    r = ae.explorer_run(max_steps=20_000, seeds=2)
    th = np.array([np.interp(r["tau"], r["tau_theory"], r["theory"][:, a]) for a in range(r["k"])]).T
    assert np.abs(r["scales"] / th - 1).max() < 0.06


def test_explorer_scales_se_is_the_standard_error_over_the_seeds():
    assert ae.explorer_run(max_steps=400, n_records=5, seeds=1, seed=3)["scales_se"] is None
    r = ae.explorer_run(max_steps=400, n_records=5, seeds=3, seed=3)
    assert r["scales_se"].shape == r["scales"].shape and np.all(r["scales_se"] >= 0)
    assert np.all(r["scales_se"][1:] > 0)  # the seeds differ after the first record
    assert r["scales_se"][-1].max() < 0.5 * r["scales"][-1].min()


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(eta=0.5), "eta"),
        (dict(eta=0.001), "eta"),
        (dict(batch_size=8), "batch_size"),
        (dict(batch_size=64.5), "batch_size"),
        (dict(k=0), "k"),
        (dict(k=20), "k"),
        (dict(gap=0.5), "gap"),
        (dict(noncommuting=1.5), "noncommuting"),
        (dict(noncommuting=float("nan")), "noncommuting"),
        (dict(max_steps=0), "max_steps"),
        (dict(seeds=0), "seeds"),
    ],
)
def test_explorer_rejects_values_outside_its_box(kw, name):
    with pytest.raises(ValueError, match=name):
        ae.explorer_run(**kw)


def test_explorer_runs_equal_one_run_per_setting():
    settings = [
        dict(eta=0.04, batch_size=32, noncommuting=1.0),
        dict(eta=0.02),
        dict(eta=0.01, batch_size=512, gap=2.5),
    ]
    batched = ae.explorer_runs(settings, max_steps=1500, n_records=12, seeds=2, seed=4)
    for s, r in zip(settings, batched):
        one = ae.explorer_run(**s, max_steps=1500, n_records=12, seeds=2, seed=4)
        np.testing.assert_array_equal(r["scales"], one["scales"])  # common random numbers: bit-identical
        np.testing.assert_array_equal(r["tau"], one["tau"])
        np.testing.assert_array_equal(r["theory"], one["theory"])
        assert r["steps"] == one["steps"] and r["truncated"] == one["truncated"]


def test_explorer_runs_isolate_a_diverging_setting(monkeypatch):
    from symbreak.engine import DivergenceError

    real = ae._run

    def run_that_diverges_at_eta_004(lam, k, etas, *args, **kwargs):
        if np.any(np.asarray(etas) == 0.04):
            raise DivergenceError(7, 0, {"eta": 0.04}, float("inf"), 1e6)
        return real(lam, k, etas, *args, **kwargs)

    monkeypatch.setattr(ae.explorer, "_run", run_that_diverges_at_eta_004)  # explorer_runs calls it there
    out = ae.explorer_runs([dict(eta=0.02), dict(eta=0.04)], max_steps=500, n_records=5, seeds=1, seed=3)
    assert out[0]["diverged"] is None and out[0]["scales"].shape == (6, 10)
    assert "step 7" in out[1]["diverged"] and out[1]["scales"].shape == (0, 10)
    monkeypatch.setattr(ae.explorer, "_run", real)
    np.testing.assert_array_equal(
        out[0]["scales"], ae.explorer_run(0.02, max_steps=500, n_records=5, seeds=1, seed=3)["scales"]
    )


@pytest.mark.parametrize(
    "settings, err, match",
    [
        ([], ValueError, "at least one"),
        (dict(eta=0.02), TypeError, "sequence"),
        ([0.02], TypeError, "mapping"),
        ([dict(lr=0.02)], ValueError, "unknown"),
        ([dict(eta=0.02), dict(eta=1.0)], ValueError, "eta"),
        ([dict(batch_size=float("nan"))], ValueError, "batch_size"),
    ],
)
def test_explorer_runs_reject_bad_settings(settings, err, match):
    with pytest.raises(err, match=match):
        ae.explorer_runs(settings, max_steps=100)


def test_explorer_rejects_non_numbers():
    with pytest.raises(TypeError, match="eta"):
        ae.explorer_run(eta="0.02")
