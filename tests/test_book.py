"""The book as a whole: table of contents, no notebooks in git, every page executes in quick mode."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
sys.path.insert(0, str(ROOT / "tools"))
import toc  # noqa: E402  (tools/toc.py, the one walker of _toc.yml)


def toc_files() -> list[str]:
    """Every ``root``/``file`` entry of ``_toc.yml``, in order (the shared walker in ``tools/toc.py``)."""
    return toc.toc_files(ROOT)


def book_pages() -> list[pathlib.Path]:
    return sorted(p for p in BOOK.rglob("*.md") if ".ipynb_checkpoints" not in p.parts)


def test_every_toc_entry_exists():
    missing = [f for f in toc_files() if not (ROOT / (f + ".md")).is_file()]
    assert not missing, f"_toc.yml names pages that do not exist: {missing}"


def test_toc_has_no_duplicates():
    files = toc_files()
    assert len(files) == len(set(files))


def test_every_book_page_is_in_the_toc():
    listed = {f + ".md" for f in toc_files()}
    orphans = [str(p.relative_to(ROOT)) for p in book_pages() if str(p.relative_to(ROOT)) not in listed]
    assert not orphans, f"book pages missing from _toc.yml: {orphans}"


def test_no_notebook_files_are_tracked():
    out = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"tracked .ipynb files (pages must be MyST .md): {out.stdout.split()}"


def test_pages_are_myst_notebooks():
    """Every page carries the jupytext header that makes it a notebook with a Python kernel."""
    import jupytext

    for page in book_pages():
        nb = jupytext.read(page)
        assert nb.metadata.get("kernelspec", {}).get("name") == "python3", page
        assert nb.metadata.get("jupytext", {}).get("text_representation", {}).get("format_name") == "myst", page


def test_directive_fences_have_no_backticks_in_their_titles():
    """A backtick fence whose info string holds a backtick is not a fence (CommonMark): the directive
    becomes a paragraph and its label silently vanishes. Titles with roles take a colon fence."""
    import re

    bad = []
    for page in book_pages():
        for n, line in enumerate(page.read_text().splitlines(), 1):
            m = re.match(r"^(`{3,})\{[^}]+\}(.*)$", line)
            if m and "`" in m.group(2):
                bad.append(f"{page.relative_to(ROOT)}:{n}")
    assert not bad, f"directive titles with backticks inside a backtick fence (use :::{{...}}): {bad}"


def test_every_fence_is_closed_before_the_next_directive_opens():
    """A backtick fence left open swallows what follows until the next bare fence: a heading, prose
    and a theorem end up inside a figure caption. Inside an open fence, a directive opener of the same
    length means the previous block was never closed."""
    import re

    bad = []
    for page in book_pages():
        open_len = open_line = None
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if open_len is None:
                m = re.match(r"^(`{3,})", line)
                if m:
                    open_len, open_line = len(m.group(1)), n
            elif (c := re.match(r"^(`{3,})\s*$", line)) and len(c.group(1)) >= open_len:
                open_len = None
            elif (m := re.match(r"^(`{3,})\{[^}]+\}", line)) and len(m.group(1)) == open_len:
                bad.append(f"{page.relative_to(ROOT)}:{n} (block opened at line {open_line} is not closed)")
        if open_len is not None:
            bad.append(f"{page.relative_to(ROOT)}:{open_line} (never closed)")
    assert not bad, f"unclosed fences: {bad}"


def pages_with_code() -> list[pathlib.Path]:
    """The pages with at least one code cell (the others have nothing for a kernel to run)."""
    return [p for p in book_pages() if re.search(r"^`{3,}\{code-cell\}", p.read_text(), re.M)]


def test_pages_without_code_cells_are_prose_only():
    """The pages left out of the execution test hold no code cell in any form jupytext reads."""
    import jupytext

    prose = sorted(set(book_pages()) - set(pages_with_code()))
    assert prose, "every page has code: the filter below is dead"
    for page in prose:
        assert not [c for c in jupytext.read(page).cells if c.cell_type == "code"], page


@pytest.mark.book
@pytest.mark.parametrize("page", pages_with_code(), ids=lambda p: str(p.relative_to(BOOK)))
def test_page_executes_in_quick_mode(page, monkeypatch, tmp_path):
    """Execute the page top to bottom in quick mode; any cell error fails the test. (A page without
    code cells starts no kernel: :func:`test_pages_without_code_cells_are_prose_only`.)"""
    import jupytext
    import nbclient

    monkeypatch.setenv("BOOK_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("SYMBREAK_PROGRESS", "0")
    monkeypatch.delenv("SYMBREAK_FIGURES", raising=False)
    nb = jupytext.read(page)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(page.parent)}}
    )
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors


def test_claims_inventories_are_well_formed():
    """Every row of every ``book/*/results.yml`` names a known paper and status and a real page."""
    from symbreak import claims

    paths = sorted(BOOK.glob("*/results.yml"))
    rows = claims.load_inventory(paths)
    pages = set(toc_files())
    bad = [
        r
        for r in rows
        if r["paper"] not in claims.PAPERS
        or r["status"] not in claims.STATUSES
        or (r.get("page") is not None and r["page"] not in pages)
    ]
    assert not bad, f"inventory rows with an unknown paper, status or page: {bad}"
    keys = [(r["paper"], r["ref"]) for r in rows]
    dupes = {k for k in keys if keys.count(k) > 1}
    assert not dupes, f"results listed twice in the inventories: {sorted(dupes)}"
