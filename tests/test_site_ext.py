"""_ext/symbreak_site.py: inline formulas keep the punctuation after them on their line."""

import sys
from pathlib import Path

from docutils import nodes
from docutils.core import publish_doctree

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))
import symbreak_site  # noqa: E402


def _wrapped(rst: str) -> list[str]:
    doctree = publish_doctree(rst, settings_overrides={"report_level": 5})
    symbreak_site._keep_punctuation_with_math(None, doctree, "page")
    return [w.astext() for w in doctree.findall(nodes.inline) if "math-nowrap" in w["classes"]], doctree.astext()


def test_punctuation_after_inline_math_is_wrapped_with_it():
    wrapped, text = _wrapped("The scale :math:`s_a`, the rate :math:`c_a`. Then :math:`x` (and :math:`y`); done")
    assert wrapped == ["s_a,", "c_a.", "y);"]
    assert text == "The scale s_a, the rate c_a. Then x (and y); done"  # nothing lost or moved


def test_math_without_punctuation_is_left_alone():
    wrapped, text = _wrapped("A formula :math:`x` and another :math:`y`\n\n:math:`z`")
    assert wrapped == []
    assert text == "A formula x and another y\n\nz"
