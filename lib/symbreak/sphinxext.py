"""Sphinx extension: the reproduction report and ``claims.json``, built from the pages' own claims.

While the book builds, every page that opens a :class:`symbreak.claims.Ledger` writes its claims to
``_build/claims/<mode>/``. After all pages are read (and executed), this extension joins those
records with the inventories of the papers' numbered results (``book/*/results.yml``), reports
every problem as a Sphinx warning (so the strict build fails on a claim without backing), fills
each ``claims-report`` directive with tables, and writes ``claims.json`` at the root of the HTML
output.

Enable it in ``_config.yml`` under ``sphinx.extra_extensions`` as ``symbreak.sphinxext``.

Directive
---------
``{claims-report}`` with option ``:paper:`` (one of :data:`symbreak.claims.PAPERS`) renders that
paper's rows; with ``:summary:`` it renders the counts per paper and status.

Statements are text with inline math: what sits between ``$…$`` becomes a docutils ``math`` node
(typeset by MathJax on the site, by LaTeX in the PDF); the rest is plain Unicode text.

Extra: ``symbreak[book]`` (Sphinx and docutils, which this module imports, come with Jupyter Book).
"""

from __future__ import annotations

import json
import math
import pathlib
import re

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from sphinx.util import logging

from . import claims as _claims
from .config import quick_mode

logger = logging.getLogger(__name__)

_STATUS_ORDER = {s: i for i, s in enumerate(_claims.STATUSES)}


class claims_report_node(nodes.General, nodes.Element):
    """Placeholder replaced by tables once every page has been read."""


#: Inline math in a statement: ``$…$`` (no nesting, no escaped dollars).
_INLINE_MATH = re.compile(r"\$([^$]+)\$")


def statement_node(text: str) -> nodes.paragraph:
    """A statement as a paragraph: its ``$…$`` spans as ``math`` nodes, the rest as text."""
    para = nodes.paragraph()
    pos = 0
    for m in _INLINE_MATH.finditer(text):
        if m.start() > pos:
            para += nodes.Text(text[pos : m.start()])
        para += nodes.math(m.group(0), m.group(1))
        pos = m.end()
    if pos < len(text):
        para += nodes.Text(text[pos:])
    return para


class ClaimsReport(Directive):
    has_content = False
    option_spec = {"paper": directives.unchanged, "summary": directives.flag}

    def run(self):
        paper = self.options.get("paper")
        if paper is not None and paper not in _claims.PAPERS:
            raise self.error(f"claims-report: paper must be one of {_claims.PAPERS}, got {paper!r}")
        node = claims_report_node()
        node["paper"] = paper
        node["summary"] = "summary" in self.options
        # Sphinx's math domain decides at read time, from the doctree, whether a page loads MathJax;
        # the statements' formulas arrive only when the tables replace this node, so it carries one.
        node += nodes.math("", "")
        return [node]


def _collect(app, env):
    root = pathlib.Path(app.srcdir)
    mode = "quick" if quick_mode() else "full"
    folder = _claims.records_dir(mode, root=root)
    records = [r for r in _claims.load_records(folder) if r.get("page") in env.all_docs]
    paths = sorted(p for pattern in app.config.claims_inventories for p in root.glob(pattern))
    try:
        inventory = _claims.load_inventory(paths)
    except ValueError as err:
        logger.warning(f"claims inventory: {err}", type="claims")
        inventory = []
    rows, problems = _claims.build_report(records, inventory)
    for item in inventory:
        page = item.get("page")
        if page and page not in env.all_docs:
            problems.append(f"inventory {item['paper']} {item['ref']}: page {page!r} is not a page of the book")
    for row in rows:
        mode_of = row.get("mode")
        if mode_of not in (None, mode):
            problems.append(f"claim {row['id']} was recorded in {mode_of} mode in a {mode} build")
    problems += _claims.validate_report(rows)
    for p in problems:
        logger.warning(f"claims: {p}", type="claims")
    rows.sort(
        key=lambda r: (
            _claims.PAPERS.index(r["paper"]) if r["paper"] in _claims.PAPERS else 99,
            _ref_key(r["ref"]),
            r["id"],
        )
    )
    env.symbreak_claims_rows = rows
    env.symbreak_claims_mode = mode
    return []


#: A ledger call in a cell's source: its method and the literal start of its id (an f-string id
#: up to its first replacement field).
_LEDGER_CALL = re.compile(r"""ledger\.(?:close|bound|sign|order|true|record)\(\s*(f?)(["'])(.*?)\2""")


def _claim_keys(source: str) -> list[tuple[str, bool]]:
    """``(id or literal prefix, is_prefix)`` of every ledger call in a cell's source."""
    out = []
    for m in _LEDGER_CALL.finditer(source):
        text = m.group(3)
        if m.group(1):
            text, brace, _ = text.partition("{")
            if brace:
                out.append((text, True))
                continue
        out.append((text, False))
    return out


def _anchor_claims(app, doctree):
    """Give every code cell that records a claim an HTML id (``claim-src-<id>``), so that the
    report links each claim to the cell that computes it; remember them per page."""
    env = app.env
    anchors = {}
    for cell in doctree.findall(nodes.container):
        if "cell" not in cell.get("classes", []):
            continue
        code = next(iter(cell.findall(nodes.literal_block)), None)
        if code is None:
            continue
        for key, is_prefix in _claim_keys(code.astext()):
            if (key, is_prefix) in anchors:
                continue
            anchor = nodes.make_id("claim-src-" + key)
            if anchor in anchors.values():  # an f-string family named like a literal id elsewhere
                anchor += "-family"
            if anchor not in cell["ids"]:
                cell["ids"].append(anchor)
            anchors[(key, is_prefix)] = anchor
    # claims recorded in a removed cell (tag remove-cell) have no cell on the page: their section
    for key, anchor in _section_anchors(env, doctree).items():
        anchors.setdefault(key, anchor)
    if not hasattr(env, "symbreak_claim_anchors"):
        env.symbreak_claim_anchors = {}
    env.symbreak_claim_anchors[env.docname] = anchors


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


def _section_anchors(env, doctree) -> dict:
    """``{(id or prefix, is_prefix): section id}`` for the ledger calls of the page's source, each
    mapped to the section whose heading precedes it (matched by the heading's text)."""
    try:
        text = pathlib.Path(env.doc2path(env.docname)).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    sections = {}
    for sec in doctree.findall(nodes.section):
        if sec.children and isinstance(sec[0], nodes.title) and sec["ids"]:
            sections.setdefault(_plain(sec[0].astext()), sec["ids"][0])
    out, current = {}, None
    for line in text.splitlines():
        m = _HEADING.match(line)
        if m:
            current = sections.get(_plain(m.group(2)), current)
            continue
        if current:
            for key in _claim_keys(line):
                out.setdefault(key, current)
    return out


def _plain(title: str) -> str:
    """A heading's text without Markdown emphasis, code marks or spacing differences."""
    return re.sub(r"[*_`\s]+", " ", title).strip().lower()


def _purge_anchors(app, env, docname):
    getattr(env, "symbreak_claim_anchors", {}).pop(docname, None)


def _merge_anchors(app, env, docnames, other):
    if not hasattr(env, "symbreak_claim_anchors"):
        env.symbreak_claim_anchors = {}
    for doc in docnames:
        if doc in getattr(other, "symbreak_claim_anchors", {}):
            env.symbreak_claim_anchors[doc] = other.symbreak_claim_anchors[doc]


def claim_anchor(anchors: dict, claim_id: str) -> str | None:
    """The id of the cell that records ``claim_id`` on its page: the cell that names it literally,
    else the one whose f-string id has the longest literal prefix of it."""
    if (claim_id, False) in anchors:
        return anchors[(claim_id, False)]
    best = max(
        (key for key, is_prefix in anchors if is_prefix and key and claim_id.startswith(key)),
        key=len,
        default=None,
    )
    return anchors[(best, True)] if best is not None else None


def _ref_key(ref: str):
    """Sort 'Eq. 2' before 'Eq. 10' and group by kind of result."""
    import re

    parts = re.split(r"(\d+)", ref)
    return [int(p) if p.isdigit() else p.lower() for p in parts]


def _shown(row, key) -> str:
    """A report row's measured or expected value as the table shows it: a condition's truth value
    (a ``Ledger.true`` claim without a measured number) in words, anything else by :func:`_fmt`."""
    value = row.get(key)
    if row.get("kind") == "true" and isinstance(value, bool):
        return "holds" if value else "does not hold"
    return _fmt(value)


def _fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        if len(value) > 6:
            return f"{len(value)} values, {_fmt(min(value))} … {_fmt(max(value))}"
        return ", ".join(_fmt(v) for v in value)
    if isinstance(value, dict):
        if "max_rel_err" in value:
            rel, atol = value.get("rtol"), value.get("atol")
            got_rel, got_abs = value.get("max_rel_err"), value.get("max_abs_err")
            s = []
            if rel:
                s.append(f"rtol {rel:g}")
            if atol:
                s.append(f"atol {atol:g}")
            # the error on the scale of the tolerance that decides: relative for rtol, absolute for atol
            if rel and isinstance(got_rel, float) and math.isfinite(got_rel):
                s.append(f"rel. err {got_rel:.2g}")
            if atol and isinstance(got_abs, float):
                s.append(f"abs. err {got_abs:.2g}")
            return "; ".join(s)
        if "lower" in value or "upper" in value:
            return ""
        if {"size", "min", "max"} <= value.keys():  # a large array, recorded by its range
            return f"{value['size']} values, {_fmt(value['min'])} … {_fmt(value['max'])}"
        return ", ".join(f"{k} {_fmt(v)}" for k, v in value.items())
    return str(value)


def error_text(tolerance) -> str:
    """The error of a comparison on the scale that decides it, with the tolerance: the relative
    error where the relative tolerance decides (a non-zero reference value, an error above the
    absolute tolerance), the absolute error otherwise; empty for a bound, a sign, an ordering or a
    condition, which have no error to show."""
    if not isinstance(tolerance, dict) or "max_rel_err" not in tolerance:
        return ""
    rtol, atol = tolerance.get("rtol") or 0.0, tolerance.get("atol") or 0.0
    rel, err = tolerance.get("max_rel_err"), tolerance.get("max_abs_err")
    tol = "; ".join(t for t in (f"rtol {rtol:g}" if rtol else "", f"atol {atol:g}" if atol else "") if t)
    relative = (
        rtol > 0
        and isinstance(rel, float)
        and math.isfinite(rel)
        and not (atol and isinstance(err, float) and err <= atol)
    )
    if relative:
        shown = f"rel. err {100 * rel:.2g}%" if rel >= 1e-4 else f"rel. err {rel:.1e}"
    elif isinstance(err, float) and math.isfinite(err):
        shown = f"abs. err {err:.2g}"
    else:
        shown = ""
    return f"{shown} ({tol})" if shown and tol else shown or tol


def _status_class(text: str) -> str:
    return re.sub(r"[^a-z]+", "-", str(text).lower()).strip("-")


def _table(headers, body_rows, widths, *, kind="claims-rows", labels=False, row_ids=None, row_classes=None):
    """A docutils table of class ``claims-table`` and ``kind``; with ``labels`` every cell starts
    with its column's name in a ``claims-label`` paragraph, which the site's CSS shows only on
    narrow screens, where each row becomes a card (HTML only: the PDF keeps plain cells)."""
    table = nodes.table(classes=["claims-table", kind])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for h in headers:
        row += nodes.entry("", nodes.paragraph(text=h))
    head += row
    body = nodes.tbody()
    group += body
    for i, cells in enumerate(body_rows):
        row = nodes.row()
        if row_ids and row_ids[i]:  # a claim's row is addressable: reproduction-report.html#claim-<id>
            row["ids"].append(row_ids[i])
        if row_classes and row_classes[i]:  # the status filter (_static/claims-report.js) reads these
            row["classes"] += row_classes[i]
        for header, cell in zip(headers, cells):
            entry = nodes.entry()
            if labels:
                entry += nodes.paragraph(text=header, classes=["claims-label"])
            entry += cell if isinstance(cell, nodes.Node) else nodes.paragraph(text=str(cell))
            row += entry
        body += row
    return table


#: The columns of the reproduction report's table of claims, in order (each cell of a row carries
#: its column's name, shown as a label on a phone).
REPORT_COLUMNS = (
    "id",
    "result",
    "status",
    "statement",
    "measured",
    "compared with",
    "error (tolerance)",
    "verdict",
    "where",
)


def _resolve(app, doctree, fromdocname):
    env = app.env
    rows = getattr(env, "symbreak_claims_rows", [])
    for node in list(doctree.findall(claims_report_node)):
        if node["summary"]:
            counts: dict = {}
            for r in rows:
                counts.setdefault(r["paper"], {}).setdefault(r["status"], 0)
                counts[r["paper"]][r["status"]] += 1
            body = []
            for paper in _claims.PAPERS:
                if paper not in counts:
                    continue
                by = counts[paper]
                body.append([paper] + [by.get(s, 0) for s in _claims.STATUSES] + [sum(by.values())])
            node.replace_self(_table(["paper", *_claims.STATUSES, "rows"], body, [3] + [2] * 7, kind="claims-summary"))
            continue
        body, ids, classes = [], [], []
        anchors = getattr(env, "symbreak_claim_anchors", {})
        for r in rows:
            if node["paper"] and r["paper"] != node["paper"]:
                continue
            claim = r.get("id") if r.get("kind") != "inventory" else None
            ids.append(nodes.make_id("claim-" + claim) if claim else None)
            verdict = {True: "✓ holds", False: "✗ fails", None: "—"}[r["holds"]]
            if r["holds"] and r.get("status") == "deviates":
                verdict = "✓ deviation confirmed"  # the check asserts that the paper's statement fails
            classes.append(
                [
                    "claims-status-" + _status_class(r.get("status")),
                    "claims-holds-" + {True: "yes", False: "no", None: "none"}[r["holds"]],
                ]
            )
            where = nodes.paragraph()
            page = r.get("page")
            if page and page in env.all_docs:
                uri = app.builder.get_relative_uri(fromdocname, page)
                anchor = claim_anchor(anchors.get(page, {}), claim) if claim else None
                if anchor:
                    uri += "#" + anchor
                title = env.titles[page].astext() if page in env.titles else page
                where += nodes.reference("", title, internal=True, refuri=uri)
            statement = r["statement"] + (
                f" ({r['detail']})" if r.get("kind") == "inventory" and r.get("detail") else ""
            )
            body.append(
                [
                    nodes.paragraph("", "", nodes.literal(text=claim)) if claim else "",
                    _claims.paper_ref(r["ref"]),
                    r["status"],
                    statement_node(statement),
                    _shown(r, "measured"),
                    _shown(r, "expected"),
                    error_text(r["tolerance"]),
                    verdict,
                    where,
                ]
            )
        node.replace_self(
            _table(
                list(REPORT_COLUMNS),
                body,
                [8, 6, 6, 26, 8, 8, 9, 3, 10],
                labels=app.builder.format == "html",
                row_ids=ids,
                row_classes=classes,
            )
        )


def _write_json(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    rows = getattr(app.env, "symbreak_claims_rows", None)
    if rows is None:
        return
    out = pathlib.Path(app.outdir) / "claims.json"
    public = [
        {
            k: r.get(k)
            for k in (
                "id",
                "paper",
                "ref",
                "statement",
                "status",
                "kind",
                "measured",
                "expected",
                "tolerance",
                "holds",
                "detail",
                "mode",
                "page",
            )
        }
        for r in rows
    ]
    for row in public:
        if row["page"]:
            row["page"] = row["page"] + ".html"
    out.write_text(json.dumps(public, indent=1, ensure_ascii=False))


def setup(app):
    app.add_config_value("claims_inventories", ["book/*/results.yml"], "env")
    app.add_node(claims_report_node)
    app.add_directive("claims-report", ClaimsReport)
    app.connect("doctree-read", _anchor_claims)
    app.connect("env-purge-doc", _purge_anchors)
    app.connect("env-merge-info", _merge_anchors)
    app.connect("env-updated", _collect)
    app.connect("doctree-resolved", _resolve)
    app.connect("build-finished", _write_json)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
