"""The book cites its papers' results in one house style, stated once in the introduction ("How to
read this book"): a number that belongs to a paper carries the prefix ``P-`` — P-Eq. 6,
P-Eqs. 24–25, P-Eq. C.36, P-Theorem 1.9, P-Lemma 2.1, P-Fig. 1B, P-Sec. 8.3, P-App. C — so that it
never reads like the book's own "(17)", "Theorem 4" or "Fig. 14".

The check reads the sources, no build: the prose of every page, the text of its code cells (strings
and comments: legend labels, printed lines, claim statements) and the statements and notes of the
inventories. It leaves alone what must name the paper's result as the paper numbers it: the ``ref``
argument of a ledger call (the second positional one, or ``ref=``) and the ``ref`` of an inventory
row.
"""

from __future__ import annotations

import ast
import io
import pathlib
import re
import tokenize

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: The words that introduce a numbered result.
KW = (
    r"(?:Eqs?\.|Equations?|Theorems?|Lemmas?|Figs?\.|Figures?|Secs?\.|Sections?|Apps?\.|Appendix|"
    r"Appendices|Propositions?|Props?\.|Corollary|Corollaries|Cor\.|Definitions?|Def\.|Tables?|"
    r"Remarks?|Assumptions?)"
)
#: What follows such a word when it is numbered: "6", "1.9", "(3.9)", "C.36", "S1", "B" (appendix).
NUM = r"\s*\(?(?:[A-Z]?\.?\d|[A-F]\b)"
VARIANTS = {
    "P(3.9)-style equation number": re.compile(r"(?<![\w-])P\(\d"),
    "'... of the paper'": re.compile(r"(?<![\w-])(?:P-)?" + KW + NUM + r"[\w.–-]*\s+of the paper"),
    "'the paper's / its ...'": re.compile(r"(?:[Tt]he paper's|(?<![\w])its)\s+(?:P-)?" + KW + NUM),
    "bare paper number (write P-...)": re.compile(r"(?<![\w-])" + KW + NUM + r"(?![\w.–-]*\s+of \{cite)"),
    "bare appendix equation (write P-Eq. C.36)": re.compile(
        r"(?<![\w.\-–])(?<!Eq\. )(?<!Eqs\. )(?<!App\. )(?<!Sec\. )[A-F]\.\d+(?![\w.]\d|\w)"
    ),
}
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
LEDGER_METHODS = {"close", "bound", "sign", "order", "true", "record"}
#: Inline code, roles' targets and labels: ids such as ``ae-c36-noise`` are not citations.
CODE_SPANS = re.compile(r"`[^`]*`")
HOW_TO_READ = re.compile(r"^## How to read this book\n(.*?)(?=^## )", re.S | re.M)


def variants(text: str) -> list[str]:
    """The citations of ``text`` that are not in the house style, each with its kind."""
    text = CODE_SPANS.sub("``", text)
    return [f"{kind}: {m.group(0)!r}" for kind, pat in VARIANTS.items() for m in pat.finditer(text)]


def _prose_lines(md: pathlib.Path):
    """``(line number, text)`` of the page's Markdown outside code cells and directive options."""
    text = md.read_text(encoding="utf-8")
    if md.name == "intro.md":  # the convention is stated here, with examples of the book's own numbers
        text = HOW_TO_READ.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    in_code = False
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_code = line.startswith("```{code-cell")
            if not in_code:
                continue
        if in_code:
            continue
        if line.startswith((":label:", ":name:")) or re.match(r"^\(.*\)=$", line):
            continue  # a label, not text
        yield i, line


def _protected(tree: ast.AST) -> set[int]:
    """``id()`` of the string nodes that name a claim or the paper's own result: a ledger call's
    first two arguments and its ``ref=``."""
    keep = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in LEDGER_METHODS
            and "ledger" in ast.unparse(node.func.value).lower()
        ):
            for arg in node.args[:2] + [k.value for k in node.keywords if k.arg in ("ref", "claim_id")]:
                keep |= {id(n) for n in ast.walk(arg)}
        if isinstance(node, ast.keyword) and node.arg == "ref":
            keep |= {id(n) for n in ast.walk(node.value)}
    return keep


def _code_texts(md: pathlib.Path):
    """The strings and comments of the page's code cells, less the protected ones."""
    for m in CELL.finditer(md.read_text(encoding="utf-8")):
        lines = m.group(1).splitlines()
        if lines and lines[0].strip() == "---":
            end = lines.index("---", 1)
            lines = [""] * (end + 1) + lines[end + 1 :]
        lines = ["" if ln.startswith(":") or ln.lstrip().startswith(("%", "!")) else ln for ln in lines]
        src = "\n".join(lines)
        tree = ast.parse(src)
        keep = _protected(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in keep:
                yield node.value
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.string


def book_pages() -> list[pathlib.Path]:
    return sorted(ROOT.glob("book/**/*.md"))


def offending() -> list[str]:
    bad = []
    for md in book_pages():
        rel = md.relative_to(ROOT)
        bad += [f"{rel}:{i}: {v}" for i, line in _prose_lines(md) for v in variants(line)]
        bad += [f"{rel} (code): {v}" for text in _code_texts(md) for v in variants(text)]
    for path in sorted(ROOT.glob("book/*/results.yml")):
        for row in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            for key in ("statement", "note"):
                bad += [f"{path.relative_to(ROOT)} {row['ref']} {key}: {v}" for v in variants(row.get(key) or "")]
    return bad


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("P-Eq. 6, P-Eqs. 24–25 and P-Theorem 1.9", True),
        ("the Lambert-W law (P-Eq. 6, P-Eqs. C.39–C.52) and P-App. C", True),
        ("P-Fig. 1B and the book's {numref}`fig-ae-lambert`", True),
        ("Theorem {prf:ref}`ae-thm-psd` and the glue {glue:text}`ae-c36-noise`", True),
        ("Theorem 4.3 of {cite:t}`ziyin2024parameter`", True),
        ("a step of 1.5 and an eta of 0.02", True),
        ("P(7.11)", False),
        ("Eq. 6 of the paper", False),
        ("Theorem 1.3 of the paper", False),
        ("the paper's Theorem 1.9", False),
        ("the paper's P-Fig. 1", False),
        ("its Section 6.2", False),
        ("follows Eq. 6", False),
        ("(Figure 1)", False),
        ("the noise estimate (C.36)", False),
        ("the paper's App. F", False),
    ],
)
def test_the_check_tells_the_house_style(text, ok):
    assert (variants(text) == []) is ok, variants(text)


def test_the_convention_is_stated_once_in_the_introduction():
    intro = (ROOT / "book/intro.md").read_text(encoding="utf-8")
    section = HOW_TO_READ.search(intro)
    assert section, "book/intro.md has no '## How to read this book' section"
    assert "P-Eq. 6" in section.group(1) and "P-Theorem" in section.group(1)
    # and nowhere else: no chapter restates its own variant
    for md in book_pages():
        if md.name != "intro.md":
            assert "its equation numbers carry" not in md.read_text(encoding="utf-8"), md


def test_the_sources_are_read():
    """The walk reaches the code cells (a guard against a check that reads nothing)."""
    texts = [t for md in book_pages() for t in _code_texts(md)]
    assert len(texts) > 2000
    assert any("P-Eq. 6" in t for t in texts)


def test_every_paper_citation_carries_the_prefix():
    bad = offending()
    assert bad == [], f"{len(bad)} citations of a paper not in the house style (P-Eq. 6):\n" + "\n".join(bad)


def test_ledger_refs_keep_the_paper_s_own_numbering():
    """The ``ref`` of a claim names the paper's result as the paper numbers it ("Eq. 6"), without
    the prefix the prose uses: the inventories match claims to rows by it."""
    bad = []
    for md in book_pages():
        for m in CELL.finditer(md.read_text(encoding="utf-8")):
            src = "\n".join(
                "" if ln.startswith(":") or ln.lstrip().startswith(("%", "!")) else ln for ln in m.group(1).splitlines()
            )
            if src.lstrip().startswith("---"):
                continue
            for node in ast.walk(ast.parse(src)):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in LEDGER_METHODS
                    and "ledger" in ast.unparse(node.func.value).lower()
                    and len(node.args) > 1
                    and isinstance(node.args[1], ast.Constant)
                    and str(node.args[1].value).startswith("P-")
                ):
                    bad.append(f"{md.relative_to(ROOT)}: {node.args[1].value}")
    assert bad == []


#: A figure directive and its caption (up to the closing fence).
FIGURE = re.compile(r"^(`{3,}|:{3,})\{(?:glue:figure|figure)\}[^\n]*\n(.*?)^\1\s*$", re.S | re.M)
#: A panel letter set in bold or italics ("**A** The…", "*B*", "(**D**)"): the book writes "(A) The…".
PANEL_LETTER = re.compile(r"(?<![\w*])(\*{1,2})([A-F](?:\s*[–,-]\s*[A-F])?)\1(?![\w*])")


def captions() -> list[tuple[str, str]]:
    out = []
    for md in book_pages():
        for m in FIGURE.finditer(md.read_text(encoding="utf-8")):
            body = "\n".join(ln for ln in m.group(2).splitlines() if not ln.startswith(":"))
            out.append((str(md.relative_to(ROOT)), body))
    return out


@pytest.mark.parametrize(
    ("caption", "ok"),
    [
        ("**Title.** (A) The pair term. (B) Error; (A–C) depth, (E) p = 1", True),
        ("**Title.** **A** The pair term", False),
        ("uniformly (**D**) the spread", False),
        ("**A–C** depth", False),
        ("*B* the error", False),
    ],
)
def test_the_panel_letter_check(caption, ok):
    assert (PANEL_LETTER.search(caption) is None) is ok


def test_captions_write_panel_letters_in_parentheses():
    """Every caption of the book names its panels "(A) …", never "**A** …"."""
    found = captions()
    assert len(found) >= 30, "the caption scan found too few figures"
    bad = [f"{where}: {m.group(0)!r}" for where, body in found for m in PANEL_LETTER.finditer(body)]
    assert bad == [], "panel letters not in the book's style (A):\n" + "\n".join(bad)


#: A {prf:ref} prints the box's own label ("Theorem 4", "Proposition 3"): a word before it doubles it.
DOUBLED_LABEL = re.compile(
    r"(?:Theorem|Proposition|Lemma|Corollary|Definition|Remark|Exercise|Algorithm|Conjecture)s?\s+\{prf:ref\}"
)


def test_a_prf_ref_is_not_preceded_by_its_own_label():
    """``Theorem {prf:ref}`thm-x``` reads "Theorem Theorem 4" on the site."""
    bad = [
        f"{md.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
        for md in book_pages()
        for n, line in enumerate(md.read_text(encoding="utf-8").splitlines(), 1)
        if DOUBLED_LABEL.search(line)
    ]
    assert bad == [], "\n".join(bad)
    assert DOUBLED_LABEL.search("and Theorem {prf:ref}`ae-thm-psd` applies")


HIDDEN_TAGS = ("hide-input", "remove-input", "hide-cell", "remove-cell")
CELL_WITH_OPTIONS = re.compile(r"^```\{code-cell\}[^\n]*\n((?::[^\n]*\n)*)(.*?)^```", re.S | re.M)


def visible_ledger_calls(md: pathlib.Path) -> list[str]:
    """The ledger calls of ``md`` in code cells a reader sees without a click (no hide-input tag)."""
    out = []
    text = md.read_text(encoding="utf-8")
    for m in CELL_WITH_OPTIONS.finditer(text):
        options, lines = m.group(1), m.group(2).splitlines()
        if lines and lines[0].strip() == "---":  # options as a YAML block
            end = lines.index("---", 1)
            options += "\n".join(lines[: end + 1])
            lines = [""] * (end + 1) + lines[end + 1 :]
        if any(tag in options for tag in HIDDEN_TAGS):
            continue
        src = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)
        line0 = text.count("\n", 0, m.start(2)) + 1
        for node in ast.walk(ast.parse(src)):
            f = getattr(node, "func", None)
            if (
                isinstance(node, ast.Call)
                and isinstance(f, ast.Attribute)
                and isinstance(f.value, ast.Name)
                and f.value.id == "ledger"
                and (f.attr in LEDGER_METHODS or f.attr == "se")  # a standard error for a teaching cell: symbreak.stats
            ):
                name = md.relative_to(ROOT) if md.is_relative_to(ROOT) else md.name
                out.append(f"{name}:{line0 + node.lineno - 1}: ledger.{f.attr}")
    return out


CHAPTERS_WITH_CHECK_CELLS = ("platonic", "autoencoder", "dln", "beyond")


@pytest.mark.parametrize("chapter", CHAPTERS_WITH_CHECK_CELLS)
def test_checks_sit_behind_a_click(chapter):
    """The reading path: every ledger call of a chapter page sits in a check cell whose input is
    collapsed (hide-input); the reader sees the model, the experiment, the plot, and after each
    result the table of what was checked."""
    found = [c for md in sorted((ROOT / "book" / chapter).glob("*.md")) for c in visible_ledger_calls(md)]
    assert not found, "ledger calls in visible cells:\n" + "\n".join(found)


def test_the_check_cell_guard_sees_a_visible_call(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(
        "```{code-cell} ipython3\nx = 1\nledger.close('a', 'Eq. 1', 's', x, 1, rtol=0.1)\n```\n\n"
        "```{code-cell} ipython3\n:tags: [hide-input]\n\nledger.sign('b', 'Eq. 1', 's', 1.0)\n```\n"
    )
    found = visible_ledger_calls(page)
    assert len(found) == 1 and found[0].endswith("ledger.close")


def test_cells_computing_solution_numbers_open_collapsed_in_jupyterlab():
    """The cells that compute the numbers a solution quotes are removed from the site and, opened as a
    notebook, collapsed (``jupyter.source_hidden``), so running a page does not show the answers."""
    import jupytext

    found = 0
    for md in sorted((ROOT / "book").glob("*/*.md")):
        if "numbers quoted" not in md.read_text(encoding="utf-8"):
            continue
        for cell in jupytext.read(md).cells:
            if cell.cell_type == "code" and "numbers quoted" in cell.source:
                found += 1
                assert "remove-cell" in cell.metadata.get("tags", []), md
                assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, md
    assert found >= 7


#: The chapter pages whose check cells open collapsed in JupyterLab. The other chapter pages
#: (autoencoder/stability, autoencoder/sharpness-relu, beyond/alignment) are to be added here.
PAGES_WITH_COLLAPSED_CHECK_CELLS = (
    "platonic/index",
    "platonic/proof",
    "platonic/experiments",
    "autoencoder/index",
    "autoencoder/lambert",
    "autoencoder/stability",
    "autoencoder/sharpness-relu",
    "dln/index",
    "dln/entropy",
    "dln/equilibrium",
    "beyond/index",
    "beyond/autoencoders",
    "beyond/relu",
    "beyond/alignment",
)


def _calls_the_ledger(source: str) -> bool:
    src = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.splitlines())
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "ledger"
        and node.func.attr in LEDGER_METHODS
        for node in ast.walk(ast.parse(src))
    )


@pytest.mark.parametrize("page", PAGES_WITH_COLLAPSED_CHECK_CELLS)
def test_check_cells_open_collapsed_in_jupyterlab(page):
    """A check cell (hide-input on the site, with ledger calls) opened as a notebook shows its input
    collapsed (``jupyter.source_hidden``), as the site does behind a click."""
    import jupytext

    cells = [
        c
        for c in jupytext.read(ROOT / "book" / f"{page}.md").cells
        if c.cell_type == "code" and "hide-input" in c.metadata.get("tags", []) and _calls_the_ledger(c.source)
    ]
    assert cells, f"{page}: no check cells found"
    open_cells = [
        c.source.splitlines()[0] for c in cells if c.metadata.get("jupyter", {}).get("source_hidden") is not True
    ]
    assert open_cells == [], f"{page}: check cells without jupyter.source_hidden:\n" + "\n".join(open_cells)


def test_the_collapsed_check_cell_guard_lists_every_chapter_page():
    """The explicit page list above covers every chapter page."""
    pages = {str(md.relative_to(ROOT / "book").with_suffix("")) for md in (ROOT / "book").glob("*/*.md")}
    assert pages == set(PAGES_WITH_COLLAPSED_CHECK_CELLS)


@pytest.mark.parametrize("page", PAGES_WITH_COLLAPSED_CHECK_CELLS)
def test_glued_figures_are_also_shown_in_jupyterlab(page):
    """JupyterLab does not render glued figures: every figure a page glues is first passed to
    ``plotting.show_live``, which displays it in a notebook session's kernel and does nothing in the
    build."""
    lines = (ROOT / "book" / f"{page}.md").read_text(encoding="utf-8").splitlines()
    glued = [n for n, line in enumerate(lines) if re.match(r"\s*glue\(\"[^\"]+\", fig, display=False\)", line)]
    missing = [f"{page}.md:{n + 1}" for n in glued if "plotting.show_live(fig)" not in lines[n - 1]]
    assert missing == [], "figures glued without plotting.show_live:\n" + "\n".join(missing)
