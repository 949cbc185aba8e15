"""Explorers: sliders over a figure, live in a kernel and precomputed on the static site.

An explorer is a drawing function ``draw(**params) -> matplotlib.figure.Figure`` and a grid of
slider values for each parameter. :func:`show` displays it in one of two ways:

* **live** — in a kernel started by a Jupyter server (JupyterLab, Notebook, Binder) with
  ``ipywidgets`` installed: one slider per parameter, and every move calls ``draw`` again;
* **static** — everywhere else, in particular when the book is built: ``draw`` runs once for every
  point of the grid, each figure becomes a compact image (a palette PNG, or SVG when that is
  smaller), and the cell's output is a self-contained piece of HTML with range sliders and a few
  lines of JavaScript that swap the images. It needs no kernel, no CDN and no widget library, so
  the sliders move on the built site, offline too. A PNG of the first setting rides along in the
  same output for formats without JavaScript (the PDF).

``SYMBREAK_EXPLORER=live`` or ``=static`` forces a mode. The library's maths modules never import
this one; notebooks do.

Extra: ``symbreak[book]`` for the live mode (ipywidgets and IPython); the static mode needs only the
core dependencies (matplotlib and Pillow).
"""

from __future__ import annotations

import base64
import cmath
import html
import io
import itertools
import json
import math
import numbers
import os
import re
import uuid
from collections.abc import Callable, Mapping, Sequence

from .validation import check_int, check_real

__all__ = ["EXPLORER_ENV_VAR", "MAX_BYTES", "MAX_FRAMES", "explorer_mode", "static_html", "live_widget", "show"]

#: Environment variable that forces the explorer mode (``live`` or ``static``).
EXPLORER_ENV_VAR = "SYMBREAK_EXPLORER"

#: Default budget for all images of one static explorer, in bytes of HTML: the frames of the
#: book's largest explorer at 200 dpi (about 1.8 MB) fit, and its page stays under 3 MB.
MAX_BYTES = 2_000_000

#: Palette of the frames when the requested one does not fit the budget: tried before the
#: resolution is lowered (line art loses little at 64 colours, a frame about an eighth of its bytes).
_FALLBACK_COLORS = 64

#: CSS pixels per inch of figure, as for every figure of the book (symbreak.plotting): a frame is
#: shown at its natural size, shrunk only on screens narrower than the figure.
_CSS_PX_PER_INCH = 100

_MODES = {"live", "static"}

#: Most grid points of a static explorer: every one is drawn and embedded in the page.
MAX_FRAMES = 10_000


def explorer_mode() -> str:
    """``"live"`` in a Jupyter-server kernel with ipywidgets, else ``"static"``.

    ``SYMBREAK_EXPLORER`` (``live``/``static``) overrides the detection.

    Raises
    ------
    ValueError
        If ``SYMBREAK_EXPLORER`` holds anything else.
    """
    forced = os.environ.get(EXPLORER_ENV_VAR, "").strip().lower()
    if forced:
        if forced not in _MODES:
            raise ValueError(f"{EXPLORER_ENV_VAR}={forced!r} is not understood: use 'live' or 'static'")
        return forced
    # Jupyter servers (JupyterLab, Notebook, Binder) set JPY_SESSION_NAME for the kernels they
    # start; book builds and tests run kernels through nbclient, which does not.
    if "JPY_SESSION_NAME" not in os.environ:
        return "static"
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return "static"
    return "live"


def _validate(draw, grid, alt, initial):
    if not callable(draw):
        raise TypeError(f"draw must be callable, got {type(draw).__name__}")
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid must be a mapping from parameter name to its slider values, got {type(grid).__name__}")
    if not grid:
        raise ValueError("grid must name at least one parameter")
    clean = {}
    for name, values in grid.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"grid keys must be parameter names (identifiers), got {name!r}")
        if (
            isinstance(values, (str, bytes))
            or not isinstance(values, Sequence | range)
            and not hasattr(values, "tolist")
        ):
            raise TypeError(f"grid[{name!r}] must be a sequence of slider values, got {type(values).__name__}")
        try:
            n_values = len(values)
        except TypeError:
            raise TypeError(
                f"grid[{name!r}] must be a sequence of slider values, got {type(values).__name__}"
            ) from None
        if n_values > MAX_FRAMES:  # checked before the values are listed (range(10**12) ended in MemoryError)
            raise ValueError(
                f"grid[{name!r}] holds {n_values} values, more than MAX_FRAMES = {MAX_FRAMES} positions of a slider"
            )
        values = list(values.tolist() if hasattr(values, "tolist") else values)
        if not values:
            raise ValueError(f"grid[{name!r}] must hold at least one value")
        for v in values:  # a NaN is equal to nothing, so no slider can select it
            if isinstance(v, numbers.Number) and not isinstance(v, numbers.Integral) and not cmath.isfinite(v):
                raise ValueError(f"grid[{name!r}] must hold finite values (a slider cannot select {v!r})")
        clean[name] = values
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError("alt must be a non-empty description of the figure (read to screen-reader users)")
    start = {}
    for name, values in clean.items():
        if initial is not None and name in initial:
            if initial[name] not in values:
                raise ValueError(f"initial[{name!r}]={initial[name]!r} is not one of grid[{name!r}]={values!r}")
            start[name] = values.index(initial[name])
        else:
            start[name] = 0
    if initial is not None:
        unknown = set(initial) - set(clean)
        if unknown:
            raise ValueError(f"initial names parameters that are not in grid: {sorted(unknown)}")
    return clean, start


def _format_value(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _lays_out(fig) -> bool:
    """Whether ``fig`` has a layout engine that moves its axes at every draw. A figure made with
    ``layout="none"`` has none, but ``savefig`` gives it the rc default on the way out (constrained
    in the house style); ``fig.set_layout_engine("none")`` on a figure made with a layout engine
    leaves a placeholder, which does nothing and which ``savefig`` keeps."""
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    engine = fig.get_layout_engine()
    return engine is not None and not isinstance(engine, PlaceHolderLayoutEngine)


def _rgba(fig, dpi: float, *, fresh: bool):
    """``fig`` rendered by Agg at ``dpi``: an ``(h, w, 4)`` uint8 array, the pixels ``savefig`` writes.

    ``savefig`` draws a figure with a layout engine twice (once to place it, once to render it). A
    ``fresh`` figure gets the same placing draw first; a figure that ``draw`` updated in place was
    placed by the previous frame's render already, so one draw does (half the cost per frame). A
    figure without a layout engine (:func:`_lays_out`) that is already drawn at ``dpi`` on an Agg canvas and unchanged
    since (``_drawn`` places the legends, of a figure that has any, with a draw at the frame's
    resolution) is not drawn again.
    """
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if (
        isinstance(fig.canvas, FigureCanvasAgg) and not _lays_out(fig) and not fig.stale and fig.dpi == dpi
    ):  # drawn at this resolution (by place_legends if it has legends, see _drawn), unchanged since: its pixels
        return np.array(fig.canvas.buffer_rgba())
    old_canvas, old_dpi = fig.canvas, fig.dpi
    canvas = FigureCanvasAgg(fig)  # also for figures closed in pyplot or made by another backend
    try:
        fig.dpi = dpi
        if fresh and _lays_out(fig):
            fig.draw_without_rendering()
        canvas.draw()
        return np.array(canvas.buffer_rgba())
    finally:
        fig.dpi = old_dpi
        fig.set_canvas(old_canvas)


def _png_bytes(fig, dpi: float, colors: int, *, fresh: bool = True) -> bytes:
    """``fig`` as a palette PNG (``colors`` colours, no dithering) at ``dpi``, zlib level 8 (as the
    house PNG, :func:`symbreak.plotting._house_png`: the same pixels as ``optimize=True``, a few
    percent more bytes, well under half its encoding time)."""
    from PIL import Image

    img = Image.fromarray(_rgba(fig, dpi, fresh=fresh)).convert("RGB")
    out = io.BytesIO()
    img.quantize(colors=colors, dither=Image.Dither.NONE).save(out, format="PNG", compress_level=8)
    return out.getvalue()


def _svg_bytes(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def _drawn(draw, grid, dpi=None):
    """Yield ``(key, figure, fresh)`` for every grid point; ``fresh`` is ``False`` when ``draw``
    returned a figure it had returned before (updated in place: it must be encoded before the next
    point is drawn). With ``dpi``, the legends (if any) are placed by a draw at that resolution, which
    ``_rgba`` reuses for a figure without a layout engine (one render per frame instead of three);
    the figure's own resolution is restored when the next point is drawn."""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from symbreak.plotting import legible, place_legends

    names = list(grid)
    seen = set()
    for idx in itertools.product(*(range(len(grid[n])) for n in names)):
        params = {n: grid[n][i] for n, i in zip(names, idx)}
        fig = draw(**params)
        if not isinstance(fig, Figure):
            plt.close("all")
            raise TypeError(f"draw must return a matplotlib Figure, got {type(fig).__name__} for {params}")
        own_dpi = fig.dpi
        try:
            if dpi is not None:
                fig.dpi = dpi
            place_legends(legible(fig))
        finally:
            plt.close(fig)  # off pyplot's list; it still renders
        fresh = id(fig) not in seen
        seen.add(id(fig))
        yield "-".join(map(str, idx)), fig, fresh
        fig.dpi = own_dpi


def _encode(fig, fresh, dpi, colors, use_svg):
    png = _png_bytes(fig, dpi, colors, fresh=fresh)
    if use_svg is None:
        use_svg = len(_svg_bytes(fig)) < len(png)
    mime, data = ("image/svg+xml", _svg_bytes(fig)) if use_svg else ("image/png", png)
    return (mime, data, png), use_svg


def _data_url_size(mime, data) -> int:
    return len(f"data:{mime};base64,") + 4 * ((len(data) + 2) // 3)


def _frames(draw, grid, dpi, colors, max_bytes):
    """Every grid point drawn and encoded (PNG or SVG, whichever is smaller for the first one), at
    ``dpi`` with ``colors``; when the data URLs pass ``max_bytes``, first with a 64-colour palette,
    then at 80 % or 60 % of ``dpi``.

    Each frame is encoded as soon as it is drawn, so ``draw`` may return one figure updated in place
    (much cheaper than a new figure per point). The budget is checked frame by frame: an attempt
    stops at the first frame that passes it, so no point is drawn that cannot be used. Distinct
    figures are kept and only re-encoded at a lower resolution (the points not drawn yet are drawn
    then); when ``draw`` updates a figure in place, every point is drawn again.
    Returns ``(frames, total, size_in, dpi, colors)`` with the resolution and palette used,
    ``frames`` ``None`` when even 60 % does not fit.
    """
    kept, reused, size_in, total, gen = {}, False, None, 0, None
    attempts = [(1.0, colors)] + ([(1.0, _FALLBACK_COLORS)] if colors > _FALLBACK_COLORS else [])
    attempts += [(0.8, min(colors, _FALLBACK_COLORS)), (0.6, min(colors, _FALLBACK_COLORS))]
    for scale, colors in attempts:
        frames, total, use_svg = {}, 0, None
        if gen is None or reused:
            gen = _drawn(draw, grid, dpi * scale)
            source = gen
        else:  # the figures drawn so far, re-encoded; then the points not drawn yet
            source = itertools.chain([(key, fig, True) for key, fig in kept.items()], gen)
        for key, fig, fresh in source:
            if size_in is None:
                size_in = tuple(fig.get_size_inches())
            if not fresh:  # draw updates one figure in place: a later attempt draws every point again
                reused, kept = True, {}
            elif not reused:
                kept[key] = fig
            frames[key], use_svg = _encode(fig, fresh, dpi * scale, colors, use_svg)
            total += _data_url_size(*frames[key][:2])
            if total > max_bytes:
                break  # the budget is passed: the next palette or resolution, without drawing the rest
        else:
            return frames, total, size_in, dpi * scale, colors
    return None, total, size_in, None, None


def static_html(
    draw: Callable,
    grid: Mapping[str, Sequence],
    *,
    alt: str,
    labels: Mapping[str, str] | None = None,
    initial: Mapping | None = None,
    dpi: float = 200,
    colors: int = 128,
    max_bytes: int = MAX_BYTES,
) -> tuple[str, bytes]:
    """Precompute every grid point of an explorer; return (HTML, PNG of the initial setting).

    Parameters
    ----------
    draw : callable
        ``draw(**params)`` returns a matplotlib Figure (closed here after rendering). It may return
        the same Figure every time, updated in place (only the changing artists redrawn): each
        frame is encoded before the next point is drawn.
    grid : mapping
        Parameter name -> list of slider values, in slider order.
    alt : str
        Alt text of the figure; the current parameter values are appended to it.
    labels : mapping, optional
        Parameter name -> slider label (plain text or HTML entities), default the name.
    initial : mapping, optional
        Starting value of each parameter (must be one of its grid values); default the first.
    dpi : float
        Resolution of the PNG frames (the book's figures are 200 dpi); lowered automatically (down
        to 60 % of it) when all frames together would exceed ``max_bytes`` even with a 64-colour
        palette. The HTML records the resolution and palette used (``data-dpi``, ``data-colors``).
    colors : int
        Palette size of the PNG frames (2..256), no dithering; reduced to 64 before the resolution
        drops when the frames do not fit.
    max_bytes : int
        Budget for the whole HTML output (1 to 2**31), checked frame by frame: an attempt stops at
        the first frame that passes it.

    Raises
    ------
    TypeError
        If ``draw`` is not callable or does not return a Figure, or ``grid`` is not a mapping of
        sequences.
    ValueError
        If the grid is empty or has more than :data:`MAX_FRAMES` points, ``alt`` is empty, ``initial``
        is not on the grid, ``colors`` is not an integer in 2..256, ``dpi`` not a number in
        [50, 2000], or the frames do not fit ``max_bytes`` even at the lowest resolution.
    """
    grid, start = _validate(draw, grid, alt, initial)
    colors = check_int("colors", colors, minimum=2, maximum=256)
    dpi = check_real("dpi", dpi)
    if not 50 <= dpi <= 2000:
        raise ValueError(f"dpi must lie in [50, 2000], got {dpi!r}")
    max_bytes = check_int("max_bytes", max_bytes, minimum=1, maximum=2**31)
    if labels is not None and not isinstance(labels, Mapping):
        raise TypeError(f"labels must be a mapping from parameter name to label, got {type(labels).__name__}")
    n_frames = math.prod(len(v) for v in grid.values())
    if n_frames > MAX_FRAMES:
        raise ValueError(
            f"the grid has {n_frames} points, more than MAX_FRAMES = {MAX_FRAMES} frames of a static explorer "
            "(each is drawn and embedded in the page): use fewer grid points"
        )
    labels = dict(labels or {})
    names = list(grid)

    frames, total, size_in, dpi_used, colors_used = _frames(draw, grid, dpi, colors, max_bytes)
    if frames is None:
        raise ValueError(
            f"the frames of this explorer pass max_bytes={max_bytes} bytes even at the lowest resolution "
            f"(reached after {total} bytes; the grid has {n_frames} points): use fewer grid points or smaller "
            "figures"
        )
    payload = {
        key: f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}" for key, (mime, data, _) in frames.items()
    }

    uid = "symbreak-explorer-" + uuid.uuid4().hex[:10]
    start_key = "-".join(str(start[n]) for n in names)
    values_text = {n: [_format_value(v) for v in grid[n]] for n in names}

    # the alt text names each slider by its label as plain text (no markup, no code names)
    plain = {n: re.sub(r"<[^>]+>", "", html.unescape(str(labels.get(n, n)))).strip() or n for n in names}

    def current_alt(idx: Mapping[str, int]) -> str:
        return alt.rstrip(". ") + " (" + ", ".join(f"{plain[n]} = {values_text[n][idx[n]]}" for n in names) + ")."

    width_px = int(round(size_in[0] * _CSS_PX_PER_INCH))
    controls = []
    for n in names:
        label = labels.get(n, n)
        controls.append(
            f'<label style="display:flex;align-items:center;gap:.6em;margin:.2em 0">'
            f'<span style="min-width:5em">{label}</span>'
            f'<input type="range" data-param="{html.escape(n)}" min="0" max="{len(grid[n]) - 1}" step="1" '
            f'value="{start[n]}" aria-valuetext="{html.escape(values_text[n][start[n]])}" style="flex:1;max-width:22em">'
            f'<output style="min-width:4em;font-variant-numeric:tabular-nums">{html.escape(values_text[n][start[n]])}</output>'
            f"</label>"
        )
    data = {"names": names, "labels": plain, "values": values_text, "alt": alt.rstrip(". "), "frames": payload}
    data_json = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    script = (
        "(function(){var root=document.getElementById('" + uid + "');if(!root)return;"
        "var d=JSON.parse(root.querySelector('script[type=\"application/json\"]').textContent);"
        "var img=root.querySelector('img');var inputs=root.querySelectorAll('input[type=range]');"
        "function update(){var key=[],parts=[];"
        "inputs.forEach(function(inp){var n=inp.getAttribute('data-param'),i=parseInt(inp.value,10),v=d.values[n][i];"
        "key.push(i);parts.push(d.labels[n]+' = '+v);inp.setAttribute('aria-valuetext',v);inp.nextElementSibling.textContent=v;});"
        "var src=d.frames[key.join('-')];if(src){img.src=src;img.alt=d.alt+' ('+parts.join(', ')+').';}}"
        "inputs.forEach(function(inp){inp.addEventListener('input',update);});})();"
    )
    html_out = (
        f'<div class="symbreak-explorer" id="{uid}" data-dpi="{dpi_used:g}" data-colors="{colors_used}">'
        f'<div class="symbreak-explorer-controls">{"".join(controls)}</div>'
        f'<img src="{payload[start_key]}" alt="{html.escape(current_alt(start))}" '
        f'style="width:{width_px}px;max-width:100%;height:auto">'
        f'<script type="application/json">{data_json}</script>'
        f"<script>{script}</script>"
        f"</div>"
    )
    first = frames[start_key][2]  # a PNG of the first setting, for the PDF and other script-free formats
    return html_out, first


def live_widget(draw: Callable, grid: Mapping[str, Sequence], *, alt: str, labels=None, initial=None):
    """An ipywidgets box: one selection slider per parameter over its grid values, calling ``draw``.

    ``grid`` is validated as for :func:`static_html`: at most :data:`MAX_FRAMES` finite values per
    parameter (a longer grid is refused before it is listed).
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import display

    grid, start = _validate(draw, grid, alt, initial)
    labels = dict(labels or {})
    sliders = {
        n: widgets.SelectionSlider(
            options=[(_format_value(v), v) for v in values],
            value=values[start[n]],
            description=html.unescape(labels.get(n, n)),
            continuous_update=False,
        )
        for n, values in grid.items()
    }
    out = widgets.Output()

    def redraw(**params):
        with out:
            out.clear_output(wait=True)
            fig = draw(**params)
            display(fig)
            plt.close(fig)

    widgets.interactive_output(redraw, sliders)
    return widgets.VBox([*sliders.values(), out])


def show(
    draw: Callable,
    grid: Mapping[str, Sequence],
    *,
    alt: str,
    labels: Mapping[str, str] | None = None,
    initial: Mapping | None = None,
    mode: str | None = None,
    **static_options,
) -> None:
    """Display an explorer: live ipywidgets in a Jupyter-server kernel, precomputed HTML otherwise.

    ``mode`` (``"live"``/``"static"``) overrides :func:`explorer_mode`; ``static_options`` go to
    :func:`static_html` (``dpi``, ``colors``, ``max_bytes``). See :func:`static_html` for the
    other parameters and the errors raised.
    """
    from IPython.display import display

    mode = explorer_mode() if mode is None else mode
    if mode not in _MODES:
        raise ValueError(f"mode must be 'live' or 'static', got {mode!r}")
    if mode == "live":
        display(live_widget(draw, grid, alt=alt, labels=labels, initial=initial))
        return
    html_out, png = static_html(draw, grid, alt=alt, labels=labels, initial=initial, **static_options)
    bundle = {
        "text/html": html_out,
        "image/png": base64.b64encode(png).decode("ascii"),
        "text/plain": f"<explorer over {', '.join(grid)}: {alt}>",
    }
    display(bundle, raw=True)
