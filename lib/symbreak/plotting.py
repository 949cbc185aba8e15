"""The book's house plotting style.

Conventions shared by every chapter:

* **theory is dashed, simulation is solid** (:func:`theory`, :func:`simulation`); a spread over
  seeds is a light band around the solid line;
* **one colour per mode or parameter**, the same across chapters: mode ``a`` of ``n`` is
  ``mode_color(a, n)`` (a perceptually uniform map), a parameter value among a sweep is
  ``param_colors(values)[value]``, and recurring roles (SGD, gradient descent, decoder, network A, ...)
  have fixed colours in :data:`ROLE_COLORS`.

The library's maths modules never import this one; notebooks do, in hidden-input cells.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "ROLE_COLORS",
    "use_style",
    "mode_color",
    "mode_colors",
    "param_colors",
    "theory",
    "simulation",
    "style_legend",
    "subplots",
    "label_panels",
    "FIGURES_ENV_VAR",
    "save_figure",
]

#: When this environment variable names a folder, :func:`save_figure` writes PNGs into it
#: (``make figures`` sets it).
FIGURES_ENV_VAR = "SYMBREAK_FIGURES"

#: Fixed colours for the roles that recur across chapters.
ROLE_COLORS = {
    "theory": "#222222",
    "sgd": "#1f77b4",
    "gd": "#7f7f7f",
    "entropic": "#2ca02c",
    "weight_decay": "#d62728",
    "no_noise": "#9467bd",
    "decoder": "#d95f02",
    "encoder": "#1b9e77",
    "contractive": "#d95f02",
    "expansive": "#7570b3",
    "A": "#1f77b4",
    "B": "#ff7f0e",
    "lambert": "#222222",
    "sqrt": "#e377c2",
}

_MODE_CMAP = "viridis"
_MODE_RANGE = (0.0, 0.9)  # skip viridis' pale yellow end, invisible on white

_RC = {
    "figure.dpi": 110,
    "savefig.dpi": 150,
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
    """Apply the house style to matplotlib's global settings (idempotent)."""
    import matplotlib as mpl

    mpl.rcParams.update(_RC)


def mode_colors(n: int) -> list:
    """``n`` colours for modes ``0 .. n-1``, ordered along the house colour map."""
    import matplotlib as mpl

    if int(n) < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    cmap = mpl.colormaps[_MODE_CMAP]
    lo, hi = _MODE_RANGE
    return [cmap(x) for x in np.linspace(lo, hi, int(n))] if n > 1 else [cmap(lo)]


def mode_color(index: int, n: int):
    """Colour of mode ``index`` (0-based) out of ``n``; the same everywhere in the book."""
    if not 0 <= int(index) < int(n):
        raise ValueError(f"index must lie in [0, {int(n) - 1}], got {index!r}")
    return mode_colors(n)[int(index)]


def param_colors(values: Sequence) -> dict:
    """Map each value of a parameter sweep to a colour, ordered by value."""
    ordered = sorted(set(values))
    return dict(zip(ordered, mode_colors(len(ordered))))


def theory(ax, x, y, *, color=None, label=None, **kwargs):
    """Draw a theory curve: dashed, drawn above the simulation."""
    kwargs.setdefault("linestyle", "--")
    kwargs.setdefault("linewidth", 1.5)
    kwargs.setdefault("zorder", 3)
    return ax.plot(x, y, color=ROLE_COLORS["theory"] if color is None else color, label=label, **kwargs)


def simulation(ax, x, y, *, color=None, label=None, band=None, **kwargs):
    """Draw a simulation curve: solid; ``band=(lo, hi)`` shades a spread (e.g. over seeds)."""
    kwargs.setdefault("linestyle", "-")
    kwargs.setdefault("alpha", 0.9)
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

    use_style()
    kwargs.setdefault("squeeze", False)
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), **kwargs)


def label_panels(axes, *, start: str = "A", **kwargs) -> None:
    """Put bold panel letters (A, B, ...) in the top-left corner of each axis, as in the papers."""
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

    folder = os.environ.get(FIGURES_ENV_VAR)
    if not folder:
        return None
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"name must use letters, digits, '.', '_' or '-', got {name!r}")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ".png")
    fig.savefig(path, dpi=150)
    return path
