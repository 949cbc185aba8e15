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


def _ref_key(ref: str):
    """Sort 'Eq. 2' before 'Eq. 10' and group by kind of result."""
    import re

    parts = re.split(r"(\d+)", ref)
    return [int(p) if p.isdigit() else p.lower() for p in parts]


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
        return ", ".join(f"{k} {_fmt(v)}" for k, v in value.items())
    return str(value)


def _table(headers, body_rows, widths, *, kind="claims-rows", labels=False, row_ids=None):
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
        for header, cell in zip(headers, cells):
            entry = nodes.entry()
            if labels:
                entry += nodes.paragraph(text=header, classes=["claims-label"])
            entry += cell if isinstance(cell, nodes.Node) else nodes.paragraph(text=str(cell))
            row += entry
        body += row
    return table


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
        body, ids = [], []
        for r in rows:
            if node["paper"] and r["paper"] != node["paper"]:
                continue
            ids.append(nodes.make_id("claim-" + r["id"]) if r.get("id") and r.get("kind") != "inventory" else None)
            verdict = {True: "✓ holds", False: "✗ fails", None: "—"}[r["holds"]]
            if r["holds"] and r.get("status") == "deviates":
                verdict = "✓ deviation confirmed"  # the check asserts that the paper's statement fails
            where = nodes.paragraph()
            page = r.get("page")
            if page and page in env.all_docs:
                uri = app.builder.get_relative_uri(fromdocname, page)
                title = env.titles[page].astext() if page in env.titles else page
                where += nodes.reference("", title, internal=True, refuri=uri)
            measured = _fmt(r["measured"])
            expected = _fmt(r["expected"])
            tol = _fmt(r["tolerance"])
            statement = r["statement"] + (
                f" ({r['detail']})" if r.get("kind") == "inventory" and r.get("detail") else ""
            )
            body.append([r["ref"], r["status"], statement_node(statement), measured, expected, tol, verdict, where])
        node.replace_self(
            _table(
                ["result", "status", "statement", "measured", "compared with", "tolerance", "verdict", "where"],
                body,
                [6, 6, 30, 8, 8, 8, 5, 10],
                labels=app.builder.format == "html",
                row_ids=ids,
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
    app.connect("env-updated", _collect)
    app.connect("doctree-resolved", _resolve)
    app.connect("build-finished", _write_json)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
