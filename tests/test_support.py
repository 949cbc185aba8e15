"""Plotting house style, progress bars, input validation."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from symbreak import plotting
from symbreak.progress import progress, progress_enabled
from symbreak.validation import (
    check_int,
    check_invertible,
    check_positive,
    check_positive_array,
    check_symmetric_positive_definite,
)


def test_theory_dashed_simulation_solid():
    fig, axes = plotting.subplots(1, 1)
    ax = axes[0, 0]
    (sim,) = plotting.simulation(ax, [0, 1], [0, 1], band=([0, 0.5], [0.5, 1.5]), label="sim")
    (th,) = plotting.theory(ax, [0, 1], [0, 1], label="th")
    assert sim.get_linestyle() == "-" and th.get_linestyle() == "--"
    leg = plotting.style_legend(ax)
    assert [t.get_text() for t in leg.get_texts()][-2:] == ["simulation", "theory"]
    matplotlib.pyplot.close(fig)


def test_mode_colours_are_consistent():
    assert plotting.mode_color(2, 5) == plotting.mode_colors(5)[2]
    cols = plotting.param_colors([0.02, 0.01, 0.02])
    assert list(cols) == [0.01, 0.02]
    with pytest.raises(ValueError, match="index"):
        plotting.mode_color(5, 5)


def test_save_figure_only_when_asked(monkeypatch, tmp_path):
    fig, _ = plotting.subplots()
    monkeypatch.delenv(plotting.FIGURES_ENV_VAR, raising=False)
    assert plotting.save_figure(fig, "x") is None
    monkeypatch.setenv(plotting.FIGURES_ENV_VAR, str(tmp_path))
    assert (tmp_path / "x.png").samefile(plotting.save_figure(fig, "x"))
    with pytest.raises(ValueError, match="name"):
        plotting.save_figure(fig, "../x")
    matplotlib.pyplot.close(fig)


def test_progress_quiet_unless_forced(monkeypatch):
    monkeypatch.setenv("SYMBREAK_PROGRESS", "0")
    assert not progress_enabled()
    it = range(3)
    assert progress(it) is it
    monkeypatch.setenv("SYMBREAK_PROGRESS", "1")
    assert progress_enabled()
    assert list(progress(range(3))) == [0, 1, 2]


def test_validation_messages_name_the_parameter():
    assert check_positive("eta", 0.1) == 0.1
    for bad in (0, -1.0, float("nan"), float("inf"), "x", True):
        with pytest.raises(ValueError, match="eta"):
            check_positive("eta", bad)
    assert check_positive("beta", float("inf"), allow_inf=True) == float("inf")
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 5\]"):
        check_int("k", 7, minimum=1, maximum=5)
    with pytest.raises(ValueError, match="sigma"):
        check_positive_array("sigma", [1.0, 0.0])
    with pytest.raises(ValueError, match="Sigma_x.*symmetric"):
        check_symmetric_positive_definite("Sigma_x", np.array([[1.0, 0.2], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="Sigma_x.*positive definite"):
        check_symmetric_positive_definite("Sigma_x", -np.eye(2))
    with pytest.raises(ValueError, match="Z.*invertible"):
        check_invertible("Z", np.ones((3, 3)))
