"""Plotting house style, progress bars, input validation."""

import matplotlib
import matplotlib.pyplot

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


# Machado, Oliveira & Fernandes (2009), severity 1.0, in linear RGB.
_CVD = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
}


def _seen_as(color, kind):
    """sRGB colour as a reader with ``kind`` colour blindness sees it (sRGB in [0, 1])."""
    rgb = np.array(matplotlib.colors.to_rgb(color))
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    sim = np.clip(np.array(_CVD[kind]) @ lin, 0, 1)
    return np.where(sim <= 0.0031308, 12.92 * sim, 1.055 * sim ** (1 / 2.4) - 0.055)


def _min_cvd_distance(c1, c2):
    return min(np.linalg.norm(_seen_as(c1, k) - _seen_as(c2, k)) for k in _CVD)


def test_contrasting_roles_are_colour_blind_safe():
    # the simulation separates what it should: the classic red/green pair collapses under deuteranopia
    assert _min_cvd_distance("#d62728", "#2ca02c") < 0.2
    for a, b in plotting.CONTRASTING_ROLES:
        assert _min_cvd_distance(plotting.ROLE_COLORS[a], plotting.ROLE_COLORS[b]) > 0.2, (a, b)


def test_legible_raises_small_text_of_wide_figures():
    fig, axes = plotting.subplots(1, 4, width=2.9, height=2.6)  # 11.6 in: shown at 7.5/11.6 of its size
    axes[0, 0].set_title("small", fontsize=7)
    axes[0, 1].set_xlabel("label")
    axes[0, 2].plot([0, 1], [0, 1], label="line")
    axes[0, 2].legend(fontsize=6)
    plotting.legible(fig)
    need = plotting.MIN_FONT_PT * 11.6 / plotting.PAGE_WIDTH_IN
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
    fig.canvas.draw()
    ticks = [t for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    assert texts and ticks
    assert min(t.get_fontsize() for t in texts + ticks) >= need - 1e-9
    matplotlib.pyplot.close(fig)


def test_legible_leaves_narrow_figures_at_the_house_sizes():
    fig, axes = plotting.subplots(1, 1)  # 3.4 in: shown at full size
    axes[0, 0].set_title("title")
    plotting.legible(fig)
    assert axes[0, 0].title.get_fontsize() == 10
    with pytest.raises(ValueError, match="page_width_in"):
        plotting.legible(fig, page_width_in=0)
    matplotlib.pyplot.close(fig)


def test_inline_pngs_are_200_dpi_shown_at_100_px_per_inch():
    import base64

    fig, axes = plotting.subplots(1, 1, width=4.0, height=3.0)
    axes[0, 0].plot([0, 1], [0, 1])
    data, meta = plotting._house_png(fig)
    png = base64.b64decode(data)
    width_px = int.from_bytes(png[16:20], "big")
    assert meta["width"] == width_px // 2
    assert abs(meta["width"] - 400) < 40  # about 4 in at 100 px per inch (bbox "tight" trims or pads a little)
    matplotlib.pyplot.close(fig)


def test_notebook_figures_use_the_house_png(tmp_path):
    """In a kernel, after use_style(), a shown figure is a 200 dpi palette PNG at 100 px per inch."""
    import base64
    import io

    import nbclient
    import nbformat
    from PIL import Image

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import matplotlib.pyplot as plt\n"
            "from symbreak import plotting\n"
            "plotting.use_style()\n"
            "fig, axes = plotting.subplots(1, 4, width=2.9, height=2.6)\n"
            "axes[0, 0].set_title('tiny', fontsize=6)\n"
            "plt.show()\n"
        )
    ]
    nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    (out,) = [o for o in nb.cells[0].outputs if "image/png" in o.get("data", {})]
    png = Image.open(io.BytesIO(base64.b64decode(out["data"]["image/png"])))
    shown = out["metadata"]["image/png"]["width"]
    assert png.mode == "P" and abs(png.size[0] - 2 * shown) <= 1  # palette PNG, pixel-doubled
    assert abs(shown - 1160) < 60  # 11.6 in at 100 px per inch
    assert "image/svg+xml" not in out["data"]


def test_panel_grid_keeps_strips_within_the_page_column():
    """Five 2.5-inch panels: three in a row, then two (the sixth cell removed); the figure is no
    wider than the column, so legible() leaves the house text sizes and the titles do not meet."""
    fig, axes = plotting.panel_grid(5, width=2.5, height=2.3)
    assert len(axes) == 5 and len(fig.axes) == 5
    assert fig.get_size_inches()[0] <= plotting.PAGE_WIDTH_IN + 1e-9
    for i, ax in enumerate(axes):
        ax.set_title(f"eta=0.02, B=128, panel {i}")
    plotting.legible(fig)
    assert min(ax.title.get_fontsize() for ax in axes) == 10
    fig.canvas.draw()
    boxes = [ax.title.get_window_extent() for ax in axes]
    overlaps = [(i, j) for i in range(5) for j in range(i + 1, 5) if boxes[i].overlaps(boxes[j])]
    assert overlaps == []
    matplotlib.pyplot.close(fig)
    fig, axes = plotting.panel_grid(2, width=5.0)  # wider than half the column: one per row
    assert fig.get_size_inches()[0] == 5.0 and len(axes) == 2
    matplotlib.pyplot.close(fig)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="n must"):
            plotting.panel_grid(bad)
    with pytest.raises(ValueError, match="width"):
        plotting.panel_grid(3, width=-1)


def test_streamlines_put_one_head_per_streamline_pointing_along_the_flow():
    """A uniform flow to the right: straight horizontal streamlines, each with one head whose tip
    lies to the right of its base."""
    x = y = np.linspace(0.0, 1.0, 12)
    u, v = np.ones((12, 12)), np.zeros((12, 12))
    fig, axes = plotting.subplots(1, 1, width=3.0, height=3.0)
    lines, heads = plotting.streamlines(axes[0, 0], x, y, u, v)
    polys = heads.get_paths()
    assert len(polys) >= 5
    assert not axes[0, 0].patches  # no FancyArrowPatch left to render
    for path in polys:
        tip, b1, b2 = path.vertices[:3]
        assert tip[0] > max(b1[0], b2[0]) and abs(tip[1] - 0.5 * (b1[1] + b2[1])) < 1e-12


def test_place_legends_moves_a_legend_off_the_data():
    """A legend put where the curves are is moved to an empty corner; one that leaves the data free
    stays where it is."""
    fig, axes = plotting.subplots(1, 2)
    x = np.linspace(0, 1, 50)
    ax = axes[0, 0]
    ax.plot(x, 1 - x, label="falling")  # through the upper-left and lower-right corners
    ax.plot(x, 1 - x**2, label="bowed")
    ax.legend(loc="upper left")
    free = axes[0, 1]
    free.plot(x, x, label="rising")
    free.legend(loc="upper left")
    assert plotting.legend_overlap(ax.get_legend()) > 0
    assert plotting.legend_overlap(free.get_legend()) == 0
    plotting.place_legends(fig)
    assert plotting.legend_overlap(ax.get_legend()) == 0
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["falling", "bowed"]
    assert free.get_legend()._loc == 2  # untouched
    matplotlib.pyplot.close(fig)


def test_place_legends_puts_a_legend_below_when_the_data_fill_the_axes():
    fig, axes = plotting.subplots(1, 1)
    ax = axes[0, 0]
    rng = np.random.default_rng(0)
    for k in range(6):
        ax.plot(np.linspace(0, 1, 200), rng.random(200), label=f"noise {k}")
    ax.legend(loc="lower left")
    assert plotting.legend_overlap(ax.get_legend()) > 0
    plotting.place_legends(fig)
    assert plotting.legend_overlap(ax.get_legend()) == 0
    fig.canvas.draw()
    box = ax.get_legend().get_window_extent()
    labels = ax.get_tightbbox(bbox_extra_artists=[])  # the axes with their tick and axis labels
    assert box.y1 <= labels.y0 + 1  # below the axes and the x label
    assert box.y0 >= fig.bbox.y0 - 1  # and inside the figure (constrained layout made room)
    matplotlib.pyplot.close(fig)


def test_the_house_png_places_legends(monkeypatch):
    """The inline PNG of a figure goes through place_legends, after legible."""
    calls = []
    monkeypatch.setattr(plotting, "place_legends", lambda fig: calls.append(fig) or fig)
    fig, axes = plotting.subplots(1, 1)
    axes[0, 0].plot([0, 1], [0, 1], label="line")
    axes[0, 0].legend()
    plotting._house_png(fig)
    assert calls == [fig]
    matplotlib.pyplot.close(fig)
