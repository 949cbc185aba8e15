"""A figure's legend names every curve it draws: each style of line drawn on a panel with a legend
(colour and dash) has a legend entry of that style.

The check runs a figure's hidden plotting cell from its page's source with small stand-in data (the
cell only draws what the page computed), so it needs no simulation and no build.
"""

from __future__ import annotations

import pathlib
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from symbreak import plotting  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


def _style(line) -> tuple:
    return (mcolors.to_hex(line.get_color()), line.get_linestyle())


def unnamed_curves(ax) -> list[tuple]:
    """The styles of the curves drawn on ``ax`` that its legend has no entry for."""
    legend = ax.get_legend()
    named = {_style(h) for h in (legend.legend_handles if legend else []) if hasattr(h, "get_linestyle")}
    drawn = {_style(line) for line in ax.get_lines() if len(line.get_xdata()) > 1 and line.get_visible()}
    return sorted(drawn - named)


def figure_cell(page: str, glue_name: str) -> str:
    """The source of the code cell of ``page`` that glues ``glue_name``, options blanked."""
    for m in CELL.finditer((ROOT / page).read_text(encoding="utf-8")):
        if f'glue("{glue_name}"' in m.group(1):
            return "\n".join("" if ln.startswith(":") else ln for ln in m.group(1).splitlines())
    raise LookupError(f"{page}: no cell glues {glue_name}")


def test_the_check_finds_an_unnamed_curve():
    fig, ax = plt.subplots()
    for c in ("C0", "C1"):
        ax.plot([0, 1], [0, 1], color=c, label="one" if c == "C0" else None)
    ax.legend()
    assert unnamed_curves(ax) == [(mcolors.to_hex("C1"), "-")]
    ax.lines[1].set_label("two")
    ax.legend()
    assert unnamed_curves(ax) == []
    plt.close(fig)


def test_dln_gd_vs_chamber_flow_names_every_singular_value(monkeypatch):
    """Panel A draws one solid curve per singular value and the dashed chamber flow over each: the
    legend names all of them (it named σ₁ alone)."""
    monkeypatch.setattr(plotting, "save_figure", lambda *a, **k: None)
    d, t = 5, np.linspace(0.01, 1.0, 40)
    sigma = np.exp(np.outer(t, np.linspace(0.5, 2.0, d))) * np.linspace(0.01, 1.0, d)
    res = {"times": t, "sigma": sigma}
    steps_h = (4e-3, 2e-3, 1e-3)
    env = {
        "np": np,
        "plt": plt,
        "plotting": plotting,
        "glue": lambda *a, **k: None,
        "d": d,
        "res": res,
        "flow": sigma * 1.01,
        "runs": {h: (res, sigma * (1 + h)) for h in steps_h},
        "steps_h": steps_h,
    }
    exec(figure_cell("book/dln/index.md", "fig-dln-gd-vs-chamber-flow"), env)
    axes = env["axes"]
    try:
        panel_a = axes[0, 0]
        assert len({_style(line) for line in panel_a.get_lines()}) == d + 1
        assert unnamed_curves(panel_a) == []
        assert unnamed_curves(axes[0, 1]) == []
    finally:
        plt.close("all")
