"""The house PNG's legend placement measures a laid-out figure without rasterizing it: the same
placement and the same pixels as measuring on real draws."""

import base64
import io

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from symbreak import plotting


def _crowded(seed=0):
    """One panel whose legend covers data in every corner (it goes below) and one whose legend
    has a free corner (it moves there)."""
    plotting.use_style()
    fig, axes = plotting.subplots(1, 2)
    rng = np.random.default_rng(seed)
    for k in range(6):
        axes[0, 0].plot(np.linspace(0, 1, 200), rng.random(200), label=f"noise {k}")
    axes[0, 0].legend(loc="lower left")
    x = np.linspace(0, 1, 50)
    axes[0, 1].plot(x, 1 - x, label="falling")
    axes[0, 1].plot(x, 1 - x**2, label="bowed")
    axes[0, 1].legend(loc="upper left")
    axes[0, 1].set_title(r"$\sigma_1/\sigma_\star$")
    return fig


def _pixels(fig):
    data, _ = plotting._house_png(fig)
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))


def _placement(fig):
    return [
        (ax.get_legend()._loc, tuple(np.round(ax.get_legend().get_bbox_to_anchor().bounds, 9))) for ax in fig.axes
    ], tuple(fig.get_size_inches())


def test_measuring_without_rasterizing_places_legends_as_real_draws_do(monkeypatch):
    fast = _crowded()
    height = fast.get_size_inches()[1]
    fast_png = _pixels(fast)
    fast_place = _placement(fast)
    monkeypatch.setattr(plotting, "_laid_out_renderer", plotting._drawn_renderer)
    slow = _crowded()
    slow_png = _pixels(slow)
    assert _placement(slow) == fast_place
    assert fast_place[1][1] > height + 0.1  # a legend went below: the figure grew
    assert fast_png.shape == slow_png.shape and np.array_equal(fast_png, slow_png)
    plt.close(fast)
    plt.close(slow)


def test_a_figure_without_layout_engine_is_drawn_as_placed():
    """The explorer encodes frames from the canvas that place_legends drew: it shows the moved legend."""
    fig = _crowded()
    fig.set_layout_engine("none")
    plotting.place_legends(fig)
    assert not fig.stale
    shown = np.array(fig.canvas.buffer_rgba())
    fig.canvas.draw()
    assert np.array_equal(shown, np.array(fig.canvas.buffer_rgba()))
    plt.close(fig)


def test_the_house_png_is_a_palette_png_no_larger_than_the_full_colour_one():
    fig = _crowded()
    data, meta = plotting._house_png(fig)
    png = Image.open(io.BytesIO(base64.b64decode(data)))
    assert png.mode == "P" and abs(png.size[0] - 2 * meta["width"]) <= 1
    plt.close(fig)


@pytest.fixture(autouse=True)
def _agg():
    with matplotlib.rc_context():
        yield


@pytest.mark.parametrize("backend", [None, "Agg"])  # the book's inline backend; the tests' Agg
def test_a_notebook_with_the_house_style_glues_without_the_iri_grammar(tmp_path, monkeypatch, backend):
    """use_style() keeps the first glue from building jsonschema's IRI parser, whatever the backend;
    glue and nbformat's validation still work in that kernel."""
    import nbclient
    import nbformat

    if backend is None:
        monkeypatch.delenv("MPLBACKEND", raising=False)
    else:
        monkeypatch.setenv("MPLBACKEND", backend)

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import sys\n"
            "from myst_nb import glue\n"
            "from symbreak import plotting\n"
            "plotting.use_style()\n"
            "glue('answer', 42, display=False)\n"
            "import nbformat\n"
            "nbformat.validate(nbformat.v4.new_notebook())\n"
            "print(sys.modules.get('rfc3987_syntax', 'absent'), 'jsonschema' in sys.modules)\n"
        )
    ]
    nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = nb.cells[0].outputs
    glued = [o for o in outputs if o.get("metadata", {}).get("scrapbook", {}).get("name") == "answer"]
    assert glued and "42" in str(glued[0]["data"])
    printed = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
    assert printed.strip() == "None True"


# ------------------------------------------------------------------------------------------------
# sizes are bounded and bad input names its parameter (issue 28)
# ------------------------------------------------------------------------------------------------
def test_sizes_are_bounded_before_anything_is_made():
    import time

    from symbreak import plotting as pt

    t0 = time.perf_counter()
    for call, match in (
        (lambda: pt.mode_colors(10**7), "n must be an integer in \\[1, 100000\\]"),
        (lambda: pt.mode_color(0, 2**40), "n must be"),
        (lambda: pt.subplots(10**4, 10**4), "nrows must be"),
        (lambda: pt.subplots(30, 30), "MAX_PANELS"),
        (lambda: pt.panel_grid(10**6), "n must be"),
    ):
        with pytest.raises(ValueError, match=match):
            call()
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda pt: pt.mode_colors("3"), "n must be an integer"),
        (lambda pt: pt.mode_colors(True), "n must be an integer"),
        (lambda pt: pt.mode_colors(2.5), "n must be an integer"),
        (lambda pt: pt.mode_color(3, 3), "index must be"),
        (lambda pt: pt.param_colors(5), "values must be"),
        (lambda pt: pt.param_colors([]), "values must hold"),
        (lambda pt: pt.param_colors([1, "a"]), "orderable"),
        (lambda pt: pt.subplots(1, 1, width=float("nan")), "width"),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    from symbreak import plotting as pt

    with pytest.raises((TypeError, ValueError), match=match):
        call(pt)


def test_show_live_displays_only_in_a_notebook_session_kernel(monkeypatch):
    """In the build (nbclient: no JPY_SESSION_NAME) a figure cell shows nothing new; in a kernel
    Jupyter Server started for a notebook, the figure is displayed."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    fig, _ = plotting.subplots()
    monkeypatch.delenv(plotting.LIVE_KERNEL_ENV_VAR, raising=False)
    assert plotting.show_live(fig) is None and shown == []
    monkeypatch.setenv(plotting.LIVE_KERNEL_ENV_VAR, "book/dln/index.md")
    plotting.show_live(fig)
    assert shown == [fig]
    plt.close(fig)


def test_place_legends_leaves_a_figure_without_legends_untouched(monkeypatch):
    """No legend, nothing to place: no layout pass (a third of a draw, on every figure of the book
    that has no legend), the figure returned as it came."""
    fig, ax = plt.subplots(layout="constrained")
    ax.plot([0, 1], [0, 1], label="hidden")
    ax.legend().set_visible(False)
    calls = []
    monkeypatch.setattr(plotting, "_laid_out_renderer", lambda f: calls.append(f))
    monkeypatch.setattr(plotting, "_drawn_renderer", lambda f: calls.append(f))
    assert plotting.place_legends(fig) is fig and calls == []
    ax.get_legend().set_visible(True)
    measure = plotting._laid_out_renderer
    monkeypatch.setattr(plotting, "_laid_out_renderer", lambda f: calls.append(f) or measure(f))
    assert plotting.place_legends(fig) is fig and calls and calls[0] is fig  # a visible legend: measured
    plt.close(fig)
