"""symbreak.explorer: precomputed static explorers and the live ipywidgets version."""

import base64
import json
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from symbreak import explorer, plotting

GRID = {"eta": [0.01, 0.02, 0.04], "B": [32, 128]}


@pytest.fixture(autouse=True)
def _no_open_figures():
    plt.close("all")
    yield


def draw_lines(eta, B):
    fig, axes = plotting.subplots(1, 1, width=3.0, height=2.0)
    t = np.linspace(0, 1, 50)
    axes[0, 0].plot(t, np.exp(eta * B * t))
    axes[0, 0].set_title(f"eta={eta}, B={B}")
    return fig


def _data(html_out):
    payload = re.search(r'<script type="application/json">(.*?)</script>', html_out, re.S).group(1)
    return json.loads(payload.replace("<\\/", "</"))


def test_static_html_has_one_distinct_frame_per_grid_point():
    html_out, png = explorer.static_html(draw_lines, GRID, alt="An exponential curve")
    data = _data(html_out)
    assert data["names"] == ["eta", "B"]
    assert data["values"] == {"eta": ["0.01", "0.02", "0.04"], "B": ["32", "128"]}
    assert sorted(data["frames"]) == sorted(f"{i}-{j}" for i in range(3) for j in range(2))
    # every setting draws a different figure, so every frame differs
    assert len(set(data["frames"].values())) == 6
    assert all(v.startswith(("data:image/png;base64,", "data:image/svg+xml;base64,")) for v in data["frames"].values())
    # two range sliders with the grid's index range; the image starts at the first setting
    sliders = re.findall(r'<input type="range" data-param="(\w+)" min="0" max="(\d+)"', html_out)
    assert sliders == [("eta", "2"), ("B", "1")]
    assert f'src="{data["frames"]["0-0"]}"' in html_out
    assert 'alt="An exponential curve (eta = 0.01, B = 32)."' in html_out
    # no network: nothing is loaded from elsewhere
    assert "http://" not in html_out and "https://" not in html_out
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert plt.get_fignums() == []  # every figure was closed


def test_static_html_shows_the_figure_at_its_natural_width():
    html_out, _ = explorer.static_html(draw_lines, {"eta": [0.01], "B": [32]}, alt="curve")
    assert "width:300px;max-width:100%" in html_out  # 3.0 in at 100 px per inch, never shrunk below


class _InPlace:
    """One figure for every setting, its line and title updated in place."""

    def __init__(self):
        self.fig, axes = plotting.subplots(1, 1, width=3.0, height=2.0)
        self.ax = axes[0, 0]
        self.t = np.linspace(0, 1, 50)
        (self.line,) = self.ax.plot(self.t, self.t)
        self.calls = 0

    def __call__(self, eta, B):
        self.calls += 1
        self.line.set_ydata(np.exp(eta * B * self.t))
        self.ax.relim()
        self.ax.autoscale_view()
        self.ax.set_title(f"eta={eta}, B={B}")
        return self.fig


@pytest.fixture(scope="module")
def fresh_html():
    """The explorer of ``draw_lines`` over ``GRID``, a new figure per setting, at full resolution
    (built once: several tests compare with it)."""
    html_out, _ = explorer.static_html(draw_lines, GRID, alt="curve")
    return html_out


def test_a_figure_updated_in_place_gives_the_same_frames_as_new_figures(fresh_html):
    fresh = fresh_html
    in_place = _InPlace()
    reused, _ = explorer.static_html(in_place, GRID, alt="curve")
    assert in_place.calls == 6
    frames_fresh, frames_reused = _data(fresh)["frames"], _data(reused)["frames"]
    assert len(set(frames_reused.values())) == 6  # every setting encoded before the next was drawn
    assert frames_reused == frames_fresh  # pixel for pixel what a new figure per setting gives
    assert plt.get_fignums() == []


def test_a_figure_updated_in_place_is_redrawn_at_a_lower_resolution():
    full, _ = explorer.static_html(_InPlace(), GRID, alt="curve")
    budget = int(0.85 * sum(map(len, _data(full)["frames"].values())))  # the frames do not fit at full resolution
    in_place = _InPlace()
    reduced, _ = explorer.static_html(in_place, GRID, alt="curve", max_bytes=budget)
    assert len(reduced) <= budget + 10_000
    assert in_place.calls > 6  # drawn again: the first frames were overwritten
    assert len(set(_data(reduced)["frames"].values())) == 6


def test_initial_setting_and_labels():
    html_out, _ = explorer.static_html(
        draw_lines, GRID, alt="curve", initial={"eta": 0.04, "B": 128}, labels={"eta": "&eta;"}
    )
    data = _data(html_out)
    assert f'src="{data["frames"]["2-1"]}"' in html_out
    assert '<span style="min-width:5em">&eta;</span>' in html_out
    assert 'value="2" aria-valuetext="0.04"' in html_out
    assert 'alt="curve (η = 0.04, B = 128)."' in html_out  # the alt text names sliders by their labels
    assert data["labels"] == {"eta": "η", "B": "B"}


def test_frames_that_exceed_the_budget_are_refused():
    with pytest.raises(ValueError, match="max_bytes"):
        explorer.static_html(draw_lines, GRID, alt="curve", max_bytes=1000)
    assert plt.get_fignums() == []


def test_resolution_drops_before_the_budget_is_refused(fresh_html):
    budget = int(0.85 * sum(map(len, _data(fresh_html)["frames"].values())))  # the frames do not fit
    reduced, _ = explorer.static_html(draw_lines, GRID, alt="curve", max_bytes=budget)
    # the frames fit the budget; the initial image repeats one frame and the controls add a little
    assert len(reduced) <= budget + max(map(len, _data(reduced)["frames"].values())) + 10_000
    assert sum(map(len, _data(reduced)["frames"].values())) < sum(map(len, _data(fresh_html)["frames"].values()))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(draw=1, grid=GRID, alt="a"), TypeError, "draw must be callable"),
        (dict(draw=draw_lines, grid=[1, 2], alt="a"), TypeError, "grid must be a mapping"),
        (dict(draw=draw_lines, grid={}, alt="a"), ValueError, "at least one parameter"),
        (dict(draw=draw_lines, grid={"eta": []}, alt="a"), ValueError, r"grid\['eta'\] must hold"),
        (dict(draw=draw_lines, grid={"eta": "abc"}, alt="a"), TypeError, r"grid\['eta'\] must be a sequence"),
        (dict(draw=draw_lines, grid={"not a name": [1]}, alt="a"), ValueError, "identifiers"),
        (dict(draw=draw_lines, grid=GRID, alt="  "), ValueError, "alt must be"),
        (dict(draw=draw_lines, grid=GRID, alt="a", initial={"eta": 0.5}), ValueError, r"initial\['eta'\]"),
        (dict(draw=draw_lines, grid=GRID, alt="a", initial={"k": 1}), ValueError, "not in grid"),
        (dict(draw=draw_lines, grid=GRID, alt="a", colors=1), ValueError, "colors must be"),
        (dict(draw=draw_lines, grid=GRID, alt="a", colors="abc"), TypeError, "colors must be an integer"),
        (dict(draw=draw_lines, grid=GRID, alt="a", colors=True), TypeError, "colors must be an integer"),
        (dict(draw=draw_lines, grid=GRID, alt="a", colors=64.5), TypeError, "colors must be an integer"),
        (dict(draw=draw_lines, grid=GRID, alt="a", dpi="200"), TypeError, "dpi must be"),
        (dict(draw=draw_lines, grid=GRID, alt="a", dpi=1e6), ValueError, "dpi must lie"),
        (dict(draw=draw_lines, grid=GRID, alt="a", max_bytes=True), TypeError, "max_bytes must be"),
        (dict(draw=draw_lines, grid=GRID, alt="a", max_bytes=0), ValueError, "max_bytes must be"),
        (dict(draw=draw_lines, grid=GRID, alt="a", labels="eta"), TypeError, "labels must be"),
        (dict(draw=draw_lines, grid={"a": range(200), "b": range(200)}, alt="a"), ValueError, "MAX_FRAMES"),
        (dict(draw=draw_lines, grid=GRID, alt="a", dpi=float("nan")), ValueError, "dpi must be"),
        (dict(draw=lambda eta, B: None, grid=GRID, alt="a"), TypeError, "must return a matplotlib Figure"),
    ],
)
def test_bad_input_is_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        explorer.static_html(**kwargs)


def test_numpy_grids_are_accepted():
    html_out, _ = explorer.static_html(draw_lines, {"eta": np.array([0.01, 0.02]), "B": range(30, 32)}, alt="c")
    assert _data(html_out)["values"] == {"eta": ["0.01", "0.02"], "B": ["30", "31"]}


def test_mode_detection(monkeypatch):
    monkeypatch.delenv(explorer.EXPLORER_ENV_VAR, raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert explorer.explorer_mode() == "static"  # book builds and tests: nbclient kernels
    monkeypatch.setenv("JPY_SESSION_NAME", "page.ipynb")
    assert explorer.explorer_mode() == "live"  # a kernel started by JupyterLab / Binder
    monkeypatch.setenv(explorer.EXPLORER_ENV_VAR, "static")
    assert explorer.explorer_mode() == "static"
    monkeypatch.setenv(explorer.EXPLORER_ENV_VAR, "sometimes")
    with pytest.raises(ValueError, match="SYMBREAK_EXPLORER"):
        explorer.explorer_mode()


def test_live_widget_redraws_on_every_slider_move():
    calls = []

    def draw(eta, B):
        calls.append((eta, B))
        return draw_lines(eta, B)

    box = explorer.live_widget(draw, GRID, alt="curve", initial={"B": 128})
    sliders = box.children[:-1]
    assert [s.description for s in sliders] == ["eta", "B"]
    assert [s.value for s in sliders] == [0.01, 128]
    assert calls == [(0.01, 128)]
    sliders[0].value = 0.04
    assert calls[-1] == (0.04, 128)
    assert plt.get_fignums() == []


def test_show_emits_html_and_a_png_fallback(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: shown.append((obj, raw)))
    explorer.show(draw_lines, GRID, alt="curve", mode="static")
    ((bundle, raw),) = shown
    assert raw and set(bundle) == {"text/html", "image/png", "text/plain"}
    assert base64.b64decode(bundle["image/png"])[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="mode must be"):
        explorer.show(draw_lines, GRID, alt="curve", mode="kernel")


def _png_sizes(html_out):
    from io import BytesIO

    from PIL import Image

    out = []
    for url in _data(html_out)["frames"].values():
        if url.startswith("data:image/png;base64,"):
            img = Image.open(BytesIO(base64.b64decode(url.split(",", 1)[1])))
            out.append((img.size, img.mode, len(img.getcolors(1 << 16) or [])))
    return out


def test_frames_are_200_dpi_palette_pngs_by_default():
    """A 3 × 2 inch figure gives 600 × 400 pixel frames, at most 128 colours (no dithering), and the
    HTML records the resolution and palette used."""
    html_out, _ = explorer.static_html(draw_lines, GRID, alt="curve", colors=128)
    sizes = _png_sizes(html_out)
    assert sizes and all(size == (600, 400) and mode == "P" and n <= 128 for size, mode, n in sizes), sizes
    assert 'data-dpi="200" data-colors="128"' in html_out


def test_the_palette_shrinks_before_the_resolution_drops():
    """Frames that do not fit the budget at 128 colours are tried at 64 colours, still at full
    resolution, before the resolution is lowered."""
    full, _ = explorer.static_html(draw_lines, GRID, alt="curve", colors=256)
    small, _ = explorer.static_html(draw_lines, GRID, alt="curve", colors=64)
    frames = lambda h: sum(map(len, _data(h)["frames"].values()))  # noqa: E731
    assert frames(small) < frames(full)
    budget = (frames(small) + frames(full)) // 2
    fitted, _ = explorer.static_html(draw_lines, GRID, alt="curve", colors=256, max_bytes=budget)
    assert 'data-dpi="200" data-colors="64"' in fitted
    assert all(size == (600, 400) for size, _, _ in _png_sizes(fitted))


def test_the_budget_is_checked_frame_by_frame():
    """Issue 28: a 60 x 60 grid drew all 3,600 frames (~7 min) before reporting the budget it passed
    after the first few; now each attempt stops at the first frame past the budget."""
    calls = []

    def counted(a, b):
        calls.append((a, b))
        return draw_lines(0.01 * (1 + a % 3), 32)

    grid = {"a": list(range(60)), "b": list(range(60))}
    with pytest.raises(ValueError, match="max_bytes"):
        explorer.static_html(counted, grid, alt="curve", max_bytes=40_000)
    assert 1 <= len(calls) <= 12, len(calls)  # a few frames fit, then four attempts stop at once
    plt.close("all")
