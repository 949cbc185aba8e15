"""The API reference page builds without a warning (strict, nitpicky), as in the book's strict build.

A docstring that breaks numpydoc's layout or names an ambiguous target fails here in seconds rather
than at the end of the full book build."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONF = """
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon", "symbreak.apidoc"]
nitpicky = True
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
exclude_patterns = ["_build"]
"""


def test_api_page_builds_without_warnings(tmp_path):
    shutil.copy(ROOT / "book" / "api.md", tmp_path / "index.md")
    (tmp_path / "conf.py").write_text(CONF)
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-n", "-W", "--keep-going", "-q", ".", "_build/html"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
