"""The API reference page builds without a warning (strict, nitpicky), as in the book's strict build.

A docstring that breaks numpydoc's layout or names an ambiguous target fails here in seconds rather
than at the end of the full book build."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CONF = """
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon", "symbreak.apidoc"]
nitpicky = True
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
exclude_patterns = ["_build"]
"""


@pytest.fixture(scope="module")
def api_build(tmp_path_factory):
    """The API page built once, strictly (nitpicky, warnings as errors, ``--keep-going`` so that the
    HTML is written even when a warning fails the build): ``(process, HTML file)``."""
    tmp_path = tmp_path_factory.mktemp("api")
    shutil.copy(ROOT / "book" / "api.md", tmp_path / "index.md")
    (tmp_path / "conf.py").write_text(CONF)
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-n", "-W", "--keep-going", "-q", ".", "_build/html"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc, tmp_path / "_build" / "html" / "index.html"


def test_api_page_builds_without_warnings(api_build):
    proc, _ = api_build
    assert proc.returncode == 0, proc.stderr[-3000:]


def _constant_values(html: str) -> dict[str, str]:
    """The value each module constant prints on the API page (``NAME = value`` in its signature)."""
    import re
    from html import unescape

    values = {}
    for m in re.finditer(r'<dl class="py (?:data|attribute)">\s*<dt[^>]*id="([^"]+)"[^>]*>(.*?)</dt>', html, re.S):
        text = unescape(re.sub(r"<[^>]+>", "", m.group(2)))
        text = re.sub(r"\s+", " ", text).replace("¶", "").replace("#", "").strip()
        if "=" in text:
            values[m.group(1)] = text.split("=", 1)[1].strip()
    return values


def test_no_constant_prints_a_long_value(api_build):
    """A module constant shows its value only when it is short (a number, a name): dictionaries and
    lists such as plotting.ROLE_COLORS are described by their docstring (``:meta hide-value:``)."""
    proc, html = api_build
    assert html.is_file(), proc.stderr[-3000:]  # written whenever Sphinx ran to the end, warnings or not
    values = _constant_values(html.read_text())
    assert values, "expected module constants with values on the API page"
    long = {name: value[:60] + "..." for name, value in values.items() if len(value) > 80}
    assert long == {}, f"constants that print values longer than 80 characters: {long}"


def test_api_page_lists_every_chapter_module_as_the_packages_define_them():
    """The chapter part of the API page is generated from the packages (tools/api_chapters.py): a
    module or a public name added, moved or removed without regenerating the page fails here."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import api_chapters
    finally:
        sys.path.pop(0)
    page = (ROOT / "book" / "api.md").read_text()
    assert api_chapters.page_with_part(page) == page, "run: python tools/api_chapters.py --write"
