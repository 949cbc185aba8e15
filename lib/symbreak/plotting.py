"""The book's house plotting style.

Conventions shared by every chapter:

* **theory is dashed, simulation is solid** (:func:`theory`, :func:`simulation`); a spread over
  seeds is a light band around the solid line;
* **one colour per mode or parameter**, the same across chapters: mode ``a`` of ``n`` is
  ``mode_color(a, n)`` (a perceptually uniform map), a parameter value among a sweep is
  ``param_colors(values)[value]``, and recurring roles (SGD, gradient descent, decoder, network A, ...)
  have fixed colours in :data:`ROLE_COLORS`, from the Okabe–Ito palette: the pairs that a figure
  sets against each other (:data:`CONTRASTING_ROLES`) stay distinct under the three kinds of
  colour blindness;
* **legible and crisp on the page**: figures are shown at 100 px per inch, as palette PNGs at
  200 dpi (the notebook's inline backend is switched to ``retina``), and :func:`legible` raises every text
  to at least :data:`MIN_FONT_PT` points *after* a figure wider than the page column
  (:data:`PAGE_WIDTH_IN`) is scaled down to it. :func:`use_style` installs this for every figure a
  notebook displays or glues.

The library's maths modules never import this one; notebooks do, in hidden-input cells.

Extra: ``symbreak[book]`` for the notebook's inline figures (IPython's formatter, which
:func:`use_style` installs only inside an IPython kernel); everything else needs only the core
dependencies.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .validation import check_array, check_int, check_positive

__all__ = [
    "ROLE_COLORS",
    "CONTRASTING_ROLES",
    "PAGE_WIDTH_IN",
    "MIN_FONT_PT",
    "use_style",
    "legible",
    "streamlines",
    "mode_color",
    "mode_colors",
    "param_colors",
    "theory",
    "simulation",
    "style_legend",
    "legend_overlap",
    "place_legends",
    "subplots",
    "panel_grid",
    "label_panels",
    "FIGURES_ENV_VAR",
    "save_figure",
    "LIVE_KERNEL_ENV_VAR",
    "show_live",
]

#: When this environment variable names a folder, :func:`save_figure` writes PNGs into it
#: (``make figures`` sets it).
FIGURES_ENV_VAR = "SYMBREAK_FIGURES"

#: Jupyter Server sets this variable in the environment of every kernel it starts for a notebook
#: session (JupyterLab, Binder); nbclient, which executes the pages for the book's build and for the
#: tests, does not. :func:`show_live` displays a figure only where it is set.
LIVE_KERNEL_ENV_VAR = "JPY_SESSION_NAME"

#: Fixed colours for the roles that recur across chapters (Okabe & Ito's colour-blind-safe palette;
#: grey for gradient descent, near-black for theory): ``theory``, ``sgd``, ``gd``, ``entropic``,
#: ``weight_decay``, ``no_noise``, ``decoder``, ``encoder``, ``contractive``, ``expansive``, ``A``, ``B``,
#: ``lambert``, ``sqrt``.
#:
#: :meta hide-value:
ROLE_COLORS = {
    "theory": "#222222",
    "sgd": "#0072B2",  # blue
    "gd": "#7f7f7f",  # grey
    "entropic": "#E69F00",  # orange
    "weight_decay": "#D55E00",  # vermillion
    "no_noise": "#56B4E9",  # sky blue
    "decoder": "#D55E00",
    "encoder": "#009E73",  # bluish green
    "contractive": "#D55E00",
    "expansive": "#0072B2",
    "A": "#0072B2",
    "B": "#E69F00",  # orange
    "lambert": "#222222",
    "sqrt": "#CC79A7",  # reddish purple
}

#: Roles that figures draw against each other: each pair must stay distinguishable for readers
#: with protanopia, deuteranopia or tritanopia (tested in ``tests/test_support.py``). A list of
#: pairs of keys of :data:`ROLE_COLORS`, such as ``("sgd", "gd")``.
#:
#: :meta hide-value:
CONTRASTING_ROLES = [
    ("sgd", "gd"),
    ("sgd", "entropic"),
    ("entropic", "weight_decay"),
    ("entropic", "no_noise"),
    ("weight_decay", "no_noise"),
    ("sgd", "weight_decay"),
    ("sgd", "no_noise"),
    ("gd", "entropic"),
    ("gd", "weight_decay"),
    ("gd", "no_noise"),
    ("decoder", "encoder"),
    ("contractive", "expansive"),
    ("A", "B"),
    ("lambert", "sqrt"),
]

#: Width of the page's text column in inches at the 100 px per inch figures are shown at
#: (sphinx-book-theme's article column is about 750 px wide on a desktop screen).
PAGE_WIDTH_IN = 7.5

#: Smallest text size, in points, that a figure may show once it is scaled to the page width.
MIN_FONT_PT = 8.0

_MODE_CMAP = "viridis"
_MODE_RANGE = (0.0, 0.9)  # skip viridis' pale yellow end, invisible on white

_RC = {
    # 100 px per inch on the page; the inline backend doubles it (retina): 200 dpi PNGs
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "figure.figsize": (6.4, 4.0),
    "figure.constrained_layout.use": True,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "lines.linewidth": 1.6,
    "image.cmap": "viridis",
}


def use_style() -> None:
    """Apply the house style to matplotlib's global settings (idempotent).

    In an IPython kernel with the inline backend it also makes every displayed or glued figure a
    200 dpi PNG shown at 100 px per inch, with :func:`legible` applied first; in any IPython kernel
    it keeps the first ``glue`` from building a grammar that no page uses (jsonschema's parser of
    the ``iri`` string formats: about a second of CPU per notebook).
    """
    import matplotlib as mpl

    mpl.rcParams.update(_RC)
    _install_inline_formatter()


def legible(fig, *, page_width_in: float = PAGE_WIDTH_IN, min_pt: float = MIN_FONT_PT):
    """Raise every text of ``fig`` to at least ``min_pt`` points after scaling to the page width.

    A figure wider than ``page_width_in`` is shown scaled down by ``page_width_in / width``, and
    its text with it; texts (titles, labels, tick labels, legends, annotations) smaller than
    ``min_pt`` divided by that factor are enlarged to it. Returns ``fig``.

    Raises
    ------
    ValueError
        If ``page_width_in`` or ``min_pt`` is not a positive number.
    """
    from matplotlib.text import Text

    for name, value in (("page_width_in", page_width_in), ("min_pt", min_pt)):
        if check_positive(name, value) > 1000:  # a type size or page width of kilometres: a slip
            raise ValueError(f"{name} must lie in (0, 1000], got {value!r}")
    width = float(fig.get_size_inches()[0])
    need = float(min_pt) / min(1.0, float(page_width_in) / width)
    for ax in fig.axes:
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = axis.get_ticklabels(which="both")
            size = min((t.get_fontsize() for t in labels), default=None)
            if size is None:
                size = axis.get_major_ticks()[0].label1.get_fontsize() if axis.get_major_ticks() else need
            if size < need:
                ax.tick_params(axis=which, which="both", labelsize=need)
    for text in fig.findobj(Text):
        if text.get_text() and text.get_fontsize() < need:
            text.set_fontsize(need)
    return fig


def _data_points(ax, renderer):
    """Display coordinates of what ``ax`` plots: its lines, densified so that a segment crossing a
    box counts even when its vertices lie outside it, and the points of its markers, error bars and
    scatter plots. Images and shaded bands are not counted."""
    from matplotlib.collections import LineCollection, PathCollection

    pts = []
    for line in ax.get_lines():
        if not line.get_visible():
            continue
        xy = line.get_transform().transform(np.column_stack(line.get_data(orig=False)).astype(float))
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        if len(xy) == 0:
            continue
        if line.get_linestyle() not in ("None", "", " ") and len(xy) > 1:
            gaps = np.linalg.norm(np.diff(xy, axis=0), axis=1)  # px between consecutive vertices
            steps = np.maximum(1, np.ceil(gaps / 2.0)).astype(int)
            t = np.concatenate([np.arange(k) / k for k in steps])
            start = np.repeat(xy[:-1], steps, axis=0)
            end = np.repeat(xy[1:], steps, axis=0)
            xy = np.vstack([start + (end - start) * t[:, None], xy[-1:]])
        pts.append(xy)
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        if isinstance(coll, PathCollection) and len(coll.get_offsets()):
            pts.append(coll.get_offset_transform().transform(np.asarray(coll.get_offsets(), float)))
        elif isinstance(coll, LineCollection):
            for seg in coll.get_segments():
                pts.append(coll.get_transform().transform(np.asarray(seg, float)))
    if not pts:
        return np.empty((0, 2))
    xy = np.vstack(pts)
    box = ax.get_window_extent(renderer)  # only what is inside the axes is drawn
    inside = (xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)
    return xy[inside]


def legend_overlap(legend, renderer=None) -> int:
    """How many of its axes' plotted points (lines densified to 2 px, markers) a legend covers."""
    fig = legend.figure
    if renderer is None:
        renderer = _drawn_renderer(fig)
    return _covered(legend, renderer, _data_points(legend.axes, renderer))


def _covered(legend, renderer, xy) -> int:
    """How many of the display points ``xy`` the legend's box covers."""
    box = legend.get_window_extent(renderer)
    return int(np.sum((xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)))


def _drawn_renderer(fig):
    """Draw ``fig`` and return its renderer; a figure closed in pyplot (whose canvas is the bare
    base class, as for an explorer frame updated in place) gets an Agg canvas first."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _laid_out_renderer(fig):
    """Lay ``fig`` out as a draw would (layout engine, ticks, legend offsets) without rasterizing
    it, and return the renderer whose measures that layout used: the Agg canvas's, at ``fig.dpi``,
    so text extents are those of a real draw. About a third of the cost of a draw."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    with renderer._draw_disabled():
        fig.draw(renderer)
    return renderer


def place_legends(fig):
    """Move every axes legend that covers plotted data to where it covers none.

    The house rule for legends: never over the data. A legend that covers any point of its axes'
    lines or markers (:func:`legend_overlap`) is tried in each corner and edge of the axes, in
    matplotlib's order, and kept at the first place where it covers nothing; if there is none, it
    goes outside, centred below the axes and their tick and axis labels (constrained layout makes
    room), so that the panels of a strip keep their widths. Returns ``fig``.

    A figure with no visible axes legend is returned untouched, nothing measured. Otherwise a
    figure with a layout engine is only laid out to measure (any later render lays it out again,
    so its pixels are not reused); a figure without one is drawn on its canvas, whose pixels then
    show the figure as placed (the explorer encodes its frames from them).
    """
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    if not any(ax.get_legend() is not None and ax.get_legend().get_visible() for ax in fig.axes):
        return fig  # no legend to place: nothing to measure (a layout pass saved, a third of a draw)
    engine = fig.get_layout_engine()
    measure_only = engine is not None and not isinstance(engine, PlaceHolderLayoutEngine)
    measure = _laid_out_renderer if measure_only else _drawn_renderer
    renderer = measure(fig)
    below = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not legend.get_visible():
            continue
        xy = _data_points(ax, renderer)  # moving the legend moves no data: one densification per axes
        if _covered(legend, renderer, xy) == 0:
            continue
        for loc in (2, 1, 3, 4, 9, 8, 6, 7, 10):  # upper left, upper right, lower left, lower right, ...
            legend.set_loc(loc)
            if _covered(legend, renderer, xy) == 0:
                break
        else:
            below.append((ax, legend, legend.get_window_extent(renderer).height / fig.dpi))
            legend.set_loc("upper center")
    if below:
        # the figure grows by the tallest legend moved below, so that the panels keep their height
        width, height = fig.get_size_inches()
        fig.set_size_inches(width, height + max(h for _, _, h in below) + 0.1)
        anchors = None
        for _ in range(4):  # the layout moves the axes as it makes room: settle the offsets
            renderer = measure(fig)
            settled = []
            for ax, legend, _ in below:
                box = ax.get_window_extent(renderer)
                labels = ax.get_tightbbox(renderer, bbox_extra_artists=[]).y0  # below ticks and labels
                settled.append((labels - box.y0) / box.height - 0.02)
                legend.set_bbox_to_anchor((0.5, settled[-1]), transform=ax.transAxes)
            if settled == anchors:  # the layout measured with these offsets gives them again: settled
                break
            anchors = settled
    if fig.stale and not measure_only:  # a legend moved: the canvas shows the figure as it now is
        fig.canvas.draw()
    return fig


def _house_png(fig):
    """The inline backend's PNG of ``fig``: legible, 200 dpi, shown at 100 px per inch.

    The PNG is reduced to a 256-colour palette (no dithering): about a third of the bytes of the
    full-colour image, so that pages of 200 dpi figures stay well under 3 MB. It is written at zlib
    level 8: the same pixels as level 9 (``optimize=True``), about 3% more bytes, 40% of its encoding
    time (the book's DLN figures: 578 kB against 560 kB, 0.41 s against 0.98 s).
    """
    import base64
    import io

    from IPython.core.pylabtools import retina_figure
    from PIL import Image

    out = retina_figure(place_legends(legible(fig)), base64=False)
    if out is None:  # an empty figure
        return None
    data, meta = out
    img = Image.open(io.BytesIO(data)).convert("RGB")
    buf = io.BytesIO()
    img.quantize(colors=256, dither=Image.Dither.NONE).save(buf, format="PNG", compress_level=8)
    small = buf.getvalue()
    return base64.b64encode(small if len(small) < len(data) else data).decode("ascii"), meta


def _skip_iri_grammar() -> None:
    """Keep the kernel's first ``glue`` from compiling a grammar that no page uses.

    ``myst_nb.glue`` imports ``nbformat``, whose schema validator imports ``jsonschema``; when the
    optional ``rfc3987_syntax`` is installed (a ``jsonschema[format-nongpl]`` extra of the Jupyter
    server), ``jsonschema`` builds its Earley parser for the ``iri`` string formats at import: 1.2 s
    of CPU in every notebook on an idle machine (2.5 s under load), for a format check that glue,
    nbformat and the pages never make.
    Marking the module absent before ``jsonschema`` is first imported leaves those two formats
    unchecked in this kernel (``jsonschema`` skips a format it has no checker for) and changes
    nothing else. A kernel that has imported ``jsonschema`` already is left alone.
    """
    import sys

    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)


def _install_inline_formatter() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    _skip_iri_grammar()  # in any kernel, whatever the backend (the tests run the pages under Agg)
    import importlib

    import matplotlib as mpl
    from matplotlib.figure import Figure

    backend = str(mpl.rcParams["backend"])
    if "inline" not in backend:
        return  # a script or another backend: figures are saved, not displayed by IPython
    if backend.startswith("module://"):
        # Importing the inline backend configures IPython's figure formatters; do it now, so that
        # the house formatter below is not replaced when the first figure is created.
        importlib.import_module(backend[len("module://") :])
    formatters = shell.display_formatter.formatters
    formatters["image/png"].for_type(Figure, _house_png)
    # one picture per figure: no SVG/PDF/JPEG copies next to the PNG
    for mime in ("image/svg+xml", "application/pdf", "image/jpeg"):
        formatters[mime].pop(Figure, None)


#: Most panels of one figure (:func:`subplots`, :func:`panel_grid`): each is a set of matplotlib
#: artists, and thousands take minutes to lay out.
MAX_PANELS = 400

#: Most colours :func:`mode_colors` makes (a figure distinguishes far fewer; a list of 10**7 RGBA
#: tuples would take seconds and gigabytes).
MAX_COLORS = 100_000


def mode_colors(n: int) -> list:
    """``n`` colours for modes ``0 .. n-1``, ordered along the house colour map (``1 <= n <= MAX_COLORS``)."""
    import matplotlib as mpl

    n = check_int("n", n, minimum=1, maximum=MAX_COLORS)
    cmap = mpl.colormaps[_MODE_CMAP]
    lo, hi = _MODE_RANGE
    return [cmap(x) for x in np.linspace(lo, hi, n)] if n > 1 else [cmap(lo)]


def mode_color(index: int, n: int):
    """Colour of mode ``index`` (0-based) out of ``n``; the same everywhere in the book."""
    n = check_int("n", n, minimum=1, maximum=MAX_COLORS)
    index = check_int("index", index, minimum=0, maximum=n - 1)
    return mode_colors(n)[index]


def param_colors(values: Sequence) -> dict:
    """Map each value of a parameter sweep to a colour, ordered by value (at most ``MAX_COLORS`` values)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"values must be a sequence of parameter values, got {type(values).__name__} {values!r}")
    try:
        ordered = sorted(set(np.asarray(values).ravel().tolist() if isinstance(values, np.ndarray) else values))
    except TypeError as exc:
        raise TypeError(f"values must be hashable and mutually orderable (numbers, or strings): {exc}") from None
    if not ordered:
        raise ValueError("values must hold at least one value")
    return dict(zip(ordered, mode_colors(len(ordered))))


def _real_data(name, value, *, ndim=None):
    """Refuse what is not real numbers (strings, complex, booleans) with ``name`` in the message; the
    value itself (a masked array keeps its mask) is what is drawn. NaN are gaps in a curve: allowed."""
    return check_array(name, np.ma.getdata(value), ndim=ndim, finite=False)


def theory(ax, x, y, *, color=None, label=None, **kwargs):
    """Draw a theory curve: dashed, drawn above the simulation."""
    _real_data("x", x), _real_data("y", y)
    kwargs.setdefault("linestyle", "--")
    kwargs.setdefault("linewidth", 1.5)
    kwargs.setdefault("zorder", 3)
    return ax.plot(x, y, color=ROLE_COLORS["theory"] if color is None else color, label=label, **kwargs)


def simulation(ax, x, y, *, color=None, label=None, band=None, **kwargs):
    """Draw a simulation curve: solid; ``band=(lo, hi)`` shades a spread (e.g. over seeds)."""
    kwargs.setdefault("linestyle", "-")
    kwargs.setdefault("alpha", 0.9)
    _real_data("x", x), _real_data("y", y)
    if band is not None:
        if isinstance(band, (str, bytes)) or not isinstance(band, (tuple, list)) or len(band) != 2:
            raise ValueError(f"band must be a pair (lo, hi) of arrays, got {band!r:.80}")
        _real_data("band[0]", band[0]), _real_data("band[1]", band[1])
    lines = ax.plot(x, y, color=color, label=label, **kwargs)
    if band is not None:
        lo, hi = band
        ax.fill_between(x, lo, hi, color=lines[0].get_color(), alpha=0.2, linewidth=0)
    return lines


def style_legend(ax, *, loc="best", extra=None, **kwargs):
    """Legend with two extra entries explaining the line styles (solid: simulation, dashed: theory)."""
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels()
    proxies = [
        Line2D([], [], color="0.3", linestyle="-", label="simulation"),
        Line2D([], [], color="0.3", linestyle="--", label="theory"),
    ]
    handles = handles + proxies + list(extra or [])
    labels = labels + [h.get_label() for h in proxies] + [h.get_label() for h in (extra or [])]
    return ax.legend(handles, labels, loc=loc, **kwargs)


def subplots(nrows: int = 1, ncols: int = 1, *, width: float = 3.4, height: float = 2.8, **kwargs):
    """``plt.subplots`` sized per panel (inches), with the house style applied."""
    import matplotlib.pyplot as plt

    nrows = check_int("nrows", nrows, minimum=1, maximum=MAX_PANELS)
    ncols = check_int("ncols", ncols, minimum=1, maximum=MAX_PANELS)
    if nrows * ncols > MAX_PANELS:
        raise ValueError(f"nrows × ncols = {nrows * ncols} panels exceeds MAX_PANELS = {MAX_PANELS}")
    width, height = check_positive("width", width), check_positive("height", height)
    use_style()
    kwargs.setdefault("squeeze", False)
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), **kwargs)


def streamlines(ax, x, y, u, v, *, color="0.55", linewidth=0.5, arrow_length=0.03, density=0.8, **kwargs):
    """``ax.streamplot`` with its arrowheads drawn as one polygon collection.

    Matplotlib draws each streamline's arrow as a ``FancyArrowPatch`` whose path is recomputed in
    display coordinates at every render, most of the cost of rendering a portrait; here every
    streamline gets one filled triangle at the middle of its length (where streamplot puts its
    arrow), pointing along the flow, all in a single ``PolyCollection``. ``arrow_length`` is the
    head's length as a fraction of the x-axis span (its width is half of it, in the same data units,
    so the heads keep their shape on axes with equal aspect). Returns ``(lines, heads)``.
    """
    from matplotlib.collections import PolyCollection

    xs, ys = _real_data("x", x, ndim=1), _real_data("y", y, ndim=1)
    for name, arr in (("x", xs), ("y", ys)):
        if arr.size < 2 or not np.all(np.isfinite(arr)) or np.any(np.diff(arr) <= 0):
            raise ValueError(f"{name} must be a finite, increasing 1-d grid of at least 2 points")
    for name, arr in (("u", u), ("v", v)):
        if _real_data(name, arr).shape != (ys.size, xs.size):
            raise ValueError(f"{name} must have shape (len(y), len(x)) = {(ys.size, xs.size)}, got {np.shape(arr)}")
    check_positive("arrow_length", arrow_length)
    for d in np.atleast_1d(_real_data("density", density)):
        check_positive("density", d)
    lines = ax.streamplot(xs, ys, u, v, color=color, linewidth=linewidth, density=density, num_arrows=0, **kwargs).lines
    segments = lines.get_segments()  # two-point pieces, streamline after streamline
    heads = []
    start = 0
    for k in range(1, len(segments) + 1):
        if k < len(segments) and np.array_equal(segments[k][0], segments[k - 1][1]):
            continue
        pts = np.array([seg[0] for seg in segments[start:k]] + [segments[k - 1][1]])
        arc = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(pts, axis=0).T))])
        start = k
        if arc[-1] <= 0:
            continue
        i = min(int(np.searchsorted(arc, 0.5 * arc[-1])), len(pts) - 2)
        direction = pts[i + 1] - pts[i]
        norm = np.hypot(*direction)
        if norm == 0:
            continue
        span = abs(float(np.ptp(np.asarray(x, dtype=float))))
        along = direction / norm * arrow_length * span
        across = np.array([-along[1], along[0]]) * 0.5
        tip = 0.5 * (pts[i] + pts[i + 1]) + 0.5 * along
        heads.append([tip, tip - along + 0.5 * across, tip - along - 0.5 * across])
    collection = PolyCollection(heads, facecolors=color, edgecolors="none", zorder=lines.get_zorder())
    ax.add_collection(collection, autolim=False)
    return lines, collection


def panel_grid(n: int, *, width: float = 2.5, height: float = 2.4, max_width: float = PAGE_WIDTH_IN, **kwargs):
    """``n`` panels of ``width`` × ``height`` inches in as few rows as fit the page column.

    A strip of many panels wider than the column is scaled down on the page, and :func:`legible`
    then enlarges its text until titles overlap; this puts at most ``max_width // width`` panels in
    a row (at least one) and removes the unused cells of the last row. Returns ``(fig, axes)`` with
    ``axes`` the flat list of the ``n`` panels, in reading order.

    Raises
    ------
    ValueError
        If ``n`` is not a positive integer or ``width``, ``height``, ``max_width`` is not positive.
    """
    n = check_int("n", n, minimum=1, maximum=MAX_PANELS)
    for name, value in (("width", width), ("height", height), ("max_width", max_width)):
        check_positive(name, value)  # not a bool, a string or complex; finite and > 0
    ncols = int(max(1, min(n, max_width // width)))
    nrows = -(-int(n) // ncols)
    fig, axes = subplots(nrows, ncols, width=width, height=height, **kwargs)
    flat = list(np.ravel(axes))
    for ax in flat[n:]:
        ax.remove()
    return fig, flat[:n]


def label_panels(axes, *, start: str = "A", **kwargs) -> None:
    """Put bold panel letters (A, B, ...) in the top-left corner of each axis, as in the papers."""
    if not isinstance(start, str) or len(start) != 1 or not start.isalpha():
        raise ValueError(f"start must be one letter (the first panel's label), got {start!r}")
    kwargs.setdefault("fontweight", "bold")
    kwargs.setdefault("fontsize", 11)
    for i, ax in enumerate(np.ravel(axes)):
        ax.text(-0.12, 1.04, chr(ord(start) + i), transform=ax.transAxes, va="bottom", ha="right", **kwargs)


def save_figure(fig, name: str):
    """Write ``fig`` as ``<name>.png`` into the folder named by ``SYMBREAK_FIGURES``, if set.

    Chapters call this on every paper figure they reproduce, so that ``make figures`` collects
    them; without the variable it does nothing. Returns the path written, or ``None``.
    """
    import os
    import re

    if not isinstance(name, str):
        raise TypeError(f"name must be a string (the file name without .png), got {type(name).__name__}")
    folder = os.environ.get(FIGURES_ENV_VAR)
    if not folder:
        return None
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"name must use letters, digits, '.', '_' or '-', got {name!r}")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ".png")
    fig.savefig(path, dpi=200)
    return path


def show_live(fig) -> None:
    """Display ``fig`` when the page runs as a notebook in JupyterLab; do nothing in the book's build.

    A page's figure cell glues its figure for the site (``glue(name, fig, display=False)``) and
    closes it, and the JupyterLab MyST extension does not render glued figures, so in JupyterLab the
    cell would show nothing. Called before the glue, this displays the figure there. It acts only in
    a kernel that Jupyter Server started for a notebook (:data:`LIVE_KERNEL_ENV_VAR` set), never in
    the kernels nbclient starts to build or test the book, so the built pages are unchanged.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure the cell made.
    """
    import os

    if not os.environ.get(LIVE_KERNEL_ENV_VAR):
        return
    from IPython.display import display

    display(fig)
