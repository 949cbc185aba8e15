"""Figure texts set subscripts as mathematics: no raw ``x_a`` in a label, title or legend entry.

Matplotlib prints an underscore outside ``$…$`` as it is (``S_min``, ``λ_max``), which reads as code;
inside ``$…$`` mathtext sets a subscript. This scans the figure code of the chapters whose figures
this covers (book/platonic, book/beyond) and the plotting module for string literals passed as a
label, title, axis label or text that have an underscore outside ``$…$`` and outside the braces of
an f-string's fields.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "book" / "platonic").glob("*.md")) + sorted((ROOT / "book" / "beyond").glob("*.md"))
FILES.append(ROOT / "lib" / "symbreak" / "plotting.py")

#: A string literal given as a figure text: label=..., set_title(...), set_xlabel(...), ax.text(x, y, ...).
CALL = re.compile(
    r"""(?:\blabel\s*=\s*|\.set_(?:title|xlabel|ylabel)\(\s*|\.(?:text|annotate|suptitle)\([^"'\n]*?)"""
    r"""(?P<prefix>[rRfF]{0,2})(?P<q>["'])(?P<body>(?:\\.|(?!(?P=q)).)*)(?P=q)"""
)


def raw_underscores(source: str) -> list[str]:
    """The figure texts in ``source`` with an underscore outside mathematics and f-string fields."""
    found = []
    for m in CALL.finditer(source):
        body = m.group("body")
        if "f" in m.group("prefix").lower():
            body = re.sub(r"\{\{|\}\}", "", body)
            body = re.sub(r"\{[^{}]*\}", "", body)
        body = re.sub(r"\$[^$]*\$", "", body)
        if "_" in body:
            found.append(m.group(0))
    return found


def test_the_scan_finds_raw_underscores():
    assert raw_underscores('ax.set_ylabel("λ_max of H")') == ['.set_ylabel("λ_max of H"']
    assert raw_underscores('plot(x, y, label="S / S_min")') == ['label="S / S_min"']
    assert raw_underscores('ax.text(0.5, 0.5, "a_b", ha="c")') == ['.text(0.5, 0.5, "a_b"']
    assert raw_underscores(r'ax.set_ylabel(r"$\lambda_{\max}$ of H")') == []
    assert raw_underscores('label=f"SGD {res_name}"') == []
    assert raw_underscores("label=name") == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_figure_texts_have_no_raw_underscores(path):
    assert raw_underscores(path.read_text()) == []
