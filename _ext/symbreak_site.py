"""Sphinx extension for the book's site: an offline-complete HTML build and author-year references.

* **MathJax from the site itself.** ``make vendor`` installs the ``mathjax`` npm package and copies
  the parts the pages need into ``_vendor/_static/mathjax`` (with MathJax's licence); the HTML build
  copies ``_vendor`` into the site (``html_extra_path``) and ``mathjax_path`` points at it. A build
  without it stops with an error that says what to run, instead of shipping a site that needs a CDN.
* **No source maps.** The themes ship ``*.js.map`` / ``*.css.map`` files (3 MB) that no reader
  needs; they are deleted from the built site, and the comments that point at them are removed.
* **No script twice.** Jupyter Book 1.x adds sphinx-thebe's inline snippet twice; the second
  ``const`` declaration is a JavaScript error on every page, so repeated scripts are dropped.
* **Bibliography labels that match the citations.** The text cites author–year ("Kunin et al.,
  2021"); the ``symbreak`` pybtex style labels the bibliography the same way, prints an edition
  once ("2nd edition", "Reprint of the 1980 edition") and keeps DOIs, arXiv eprints and URLs.
* **Punctuation stays with its formula.** A browser may break a line between an inline formula
  (an atomic box once MathJax has set it) and the full stop or comma after it, which then starts
  the next line on its own. Inline math followed by punctuation is wrapped, with that punctuation,
  in ``<span class="math-nowrap">`` (``white-space: nowrap`` in ``_static/site.css``).
"""

from __future__ import annotations

import re
from pathlib import Path

from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.template import field, join, optional
from sphinx.errors import ExtensionError

#: Where ``make vendor`` puts MathJax, relative to the book's root (the Sphinx source folder).
VENDOR_DIR = "_vendor"
MATHJAX_ENTRY = "mathjax/tex-mml-chtml.js"

_SOURCE_MAP_COMMENT = re.compile(rb"\n?[ \t]*(//[#@] sourceMappingURL=[^\s*]+|/\*[#@] sourceMappingURL=[^*]+\*/)[ \t]*")


def _last_names(entry) -> list[str]:
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = []
    for person in persons:
        last = " ".join(str(Text.from_latex(p)) for p in person.prelast_names + person.last_names)
        names.append(last.replace("{", "").replace("}", ""))
    return names


def author_year_label(entry) -> str:
    """``Kato, 1995``; ``Chen and Menon, 2025``; ``Kunin et al., 2021`` (as the text cites them)."""
    names = _last_names(entry)
    if not names:
        who = entry.fields.get("key", entry.key)
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    year = entry.fields.get("year", "n.d.")
    return f"{who}, {year}"


class AuthorYearLabelStyle(BaseLabelStyle):
    """Author–year labels; two works with the same label get ``2021a``, ``2021b``."""

    def format_labels(self, sorted_entries):
        labels = [author_year_label(e) for e in sorted_entries]
        counts: dict[str, int] = {}
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
        seen: dict[str, int] = {}
        for label in labels:
            if counts[label] == 1:
                yield label
            else:
                seen[label] = seen.get(label, 0) + 1
                yield label + chr(ord("a") + seen[label] - 1)


def _edition(text: str) -> str:
    text = text.strip()
    if "edition" in text.lower():
        return text
    if text.isdigit():
        n = int(text)
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"{n}{suffix} edition"
    return f"{text} edition"


class SymbreakStyle(PlainStyle):
    """pybtex's ``plain`` with author–year labels and an edition printed once."""

    default_label_style = "symbreak-authoryear"

    def format_edition(self, e):
        raw = e.fields.get("edition")
        if not raw:
            return optional[field("edition")]  # renders nothing
        return join[_edition(str(raw))]


def _check_vendor(app) -> None:
    if app.builder.format != "html":
        return
    entry = Path(app.confdir, VENDOR_DIR, "_static", MATHJAX_ENTRY)
    if not entry.is_file():
        raise ExtensionError(
            f"MathJax is not vendored: {entry} is missing. Run `make vendor` (installs the mathjax npm "
            "package into _vendor/) before building the site; the site serves MathJax itself so that "
            "it reads offline."
        )


def _strip_source_maps(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir, "_static")
    if not static.is_dir():
        return
    for path in list(static.rglob("*.map")):
        path.unlink()
    for path in list(static.rglob("*.js")) + list(static.rglob("*.css")):
        data = path.read_bytes()
        if b"sourceMappingURL" in data:
            path.write_bytes(_SOURCE_MAP_COMMENT.sub(b"", data))


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """Drop repeated inline scripts: Jupyter Book 1.x registers sphinx-thebe's and togglebutton's
    snippets twice, and the second ``const THEBE_JS_URL`` throws a SyntaxError on every page."""
    files = context.get("script_files")
    if not files:
        return
    seen, unique = set(), []
    for js in files:
        # an inline snippet is registered once with filename None and once with "": the same script
        name = getattr(js, "filename", str(js)) or ""
        key = (name, tuple(sorted(getattr(js, "attributes", {}).items())))
        if key in seen:
            continue
        seen.add(key)
        unique.append(js)
    files[:] = unique


#: Punctuation that must not start a line after an inline formula.
_TRAILING_PUNCT = re.compile(r"^[.,;:!?)\]}’”…]+")


def _keep_punctuation_with_math(app, doctree, docname) -> None:
    """Wrap every inline formula followed by punctuation, and that punctuation, in a no-wrap span."""
    from docutils import nodes

    if app is not None and app.builder.format != "html":
        return  # LaTeX keeps a formula and its punctuation together by itself
    for math in list(doctree.findall(nodes.math)):
        parent = math.parent
        if parent is None or isinstance(parent, nodes.inline) and "math-nowrap" in parent["classes"]:
            continue
        index = parent.index(math)
        if index + 1 >= len(parent.children) or not isinstance(parent[index + 1], nodes.Text):
            continue
        text = parent[index + 1]
        punct = _TRAILING_PUNCT.match(str(text))
        if not punct:
            continue
        rest = str(text)[punct.end() :]
        wrapper = nodes.inline("", "", classes=["math-nowrap"])
        parent[index] = wrapper  # by position: Text nodes compare equal by value
        wrapper += math
        wrapper += nodes.Text(punct.group(0))
        if rest:
            parent[index + 1] = nodes.Text(rest)
        else:
            del parent[index + 1]


def setup(app):
    register_plugin("pybtex.style.labels", "symbreak-authoryear", AuthorYearLabelStyle)
    register_plugin("pybtex.style.formatting", "symbreak", SymbreakStyle)
    app.connect("builder-inited", _check_vendor)
    app.connect("build-finished", _strip_source_maps)
    app.connect("html-page-context", _dedupe_scripts, priority=100)
    app.connect("doctree-resolved", _keep_punctuation_with_math)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
