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
paper's claims (with their evidence kind, resolving power and, for a simulation, ± its standard
error; a ``seeds`` column when ``seeds.json`` sits in the HTML output); with ``:results:`` as well
it renders the paper's numbered results with the status computed from their evidence
(:func:`symbreak.claims.result_status`); with ``:summary:`` it renders the counts of results per
paper and computed status, and of claims per evidence kind. The build also writes
``results.json`` (one row per numbered result) next to ``claims.json``, and warns (so the strict
build fails) on a ``proof`` label that the row's page does not define.

Glued numbers read as prose: in every text pasted by ``{glue:text}`` (and ``{glue}``), a number
written in E-notation becomes ``3.3 × 10⁻⁸`` (or a plain decimal, ``0.0097``, for exponents from
−4 to 4) and ``0.0e+00`` becomes ``0`` (:func:`readable_numbers`).

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
    option_spec = {"paper": directives.unchanged, "summary": directives.flag, "results": directives.flag}

    def run(self):
        paper = self.options.get("paper")
        if paper is not None and paper not in _claims.PAPERS:
            raise self.error(f"claims-report: paper must be one of {_claims.PAPERS}, got {paper!r}")
        node = claims_report_node()
        node["paper"] = paper
        node["summary"] = "summary" in self.options
        node["results"] = "results" in self.options
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
    labels = {}
    for item in inventory:
        page = item.get("page")
        if item.get("proof") and page in env.all_docs and page not in labels:
            try:
                labels[page] = _claims.proof_labels(pathlib.Path(env.doc2path(page)).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                labels[page] = {}
    results, result_problems = _claims.build_results(records, inventory, labels)
    problems += result_problems
    results.sort(
        key=lambda r: (_claims.PAPERS.index(r["paper"]) if r["paper"] in _claims.PAPERS else 99, _ref_key(r["ref"]))
    )
    env.symbreak_results = results
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
            ref = value.get("reference")
            return "" if ref is None else f"reference {_fmt(ref)}"
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
    table = nodes.table(classes=["claims-table", *([kind] if isinstance(kind, str) else kind)])
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
    "evidence",
    "power",
    "verdict",
    "where",
)
#: The column added when ``seeds.json`` (``make seeds``) sits in the HTML output.
SEEDS_COLUMN = "seeds"


def power_text(row) -> str:
    """A claim's resolving power as the report shows it: a percentage, "none" where no distortion of
    the reference value can fail the check, empty where the claim has no power (not a close claim,
    nor a bound against a reference value)."""
    power = _claims._as_float(row.get("power"))
    if power is None:
        return ""
    if math.isinf(power):
        return "none"
    return _claims._percent(power) if power >= 1e-4 else f"{100 * power:.0e}%"


def measured_text(row) -> str:
    """The measured value, with ``± se`` (and the number of standard errors the tolerance is)
    for a simulation that records its standard error."""
    text = _shown(row, "measured")
    se = row.get("se")
    if se is None and row.get("se_reason") and text:
        return f"{text} (no standard error: {row['se_reason']})"
    if se is None or not text:
        return text
    shown = f"{text} ± {_fmt_se(se)}"
    n = row.get("n_se")
    return shown + (f" (tolerance {n:g} se)" if isinstance(n, (int, float)) else "")


def _fmt_se(se) -> str:
    """A standard error as the report prints it: two significant digits ("0.62", not "0.6162")."""
    if isinstance(se, float):
        return f"{se:.2g}"
    if isinstance(se, list) and len(se) <= 6:
        return ", ".join(_fmt_se(v) for v in se)
    return _fmt(se)


def seeds_text(row, seeds) -> str:
    """``k of n`` seeds on which a claim held (``seeds.json``), empty where it was not rerun."""
    entry = (seeds or {}).get("claims", {}).get(row.get("id"))
    if not isinstance(entry, dict) or "holds" not in entry or "of" not in entry:
        return ""
    return f"{entry['holds']} of {entry['of']}"


def load_seeds(outdir) -> dict | None:
    """``seeds.json`` of the HTML output (``{"seeds": [...], "claims": {id: {"holds", "of"}}}``),
    ``None`` where it is absent or unreadable."""
    path = pathlib.Path(outdir) / "seeds.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        logger.warning(f"claims: {path} is not JSON; the report shows no seeds column", type="claims")
        return None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), dict):
        logger.warning(f"claims: {path} has no 'claims' object; the report shows no seeds column", type="claims")
        return None
    return data


def _resolve(app, doctree, fromdocname):
    env = app.env
    rows = getattr(env, "symbreak_claims_rows", [])
    for node in list(doctree.findall(claims_report_node)):
        if node["results"]:
            node.replace_self(_results_table(app, fromdocname, node["paper"]))
            continue
        if node["summary"]:
            counts: dict = {}
            for r in getattr(env, "symbreak_results", []):
                counts.setdefault(r["paper"], {}).setdefault(r["status"], 0)
                counts[r["paper"]][r["status"]] += 1
            body = []
            for paper in _claims.PAPERS:
                if paper not in counts:
                    continue
                by = counts[paper]
                body.append([paper] + [by.get(s, 0) for s in _claims.STATUSES] + [sum(by.values())])
            table = _table(["paper", *_claims.STATUSES, "results"], body, [3] + [2] * 7, kind="claims-summary")
            kinds = (*_claims.EVIDENCE, None)
            ev: dict = {}
            for r in rows:
                if r.get("kind") in ("record", "inventory"):
                    continue
                ev.setdefault(r["paper"], {}).setdefault(r.get("evidence"), 0)
                ev[r["paper"]][r.get("evidence")] += 1
            weak: dict = {}
            for r in rows:
                power = _claims._as_float(r.get("power"))
                if r.get("kind") == "close" and power is not None and power > _claims.POWER_LIMIT:
                    weak[r["paper"]] = weak.get(r["paper"], 0) + 1
            body = [
                [paper] + [ev[paper].get(k, 0) for k in kinds] + [weak.get(paper, 0)]
                for paper in _claims.PAPERS
                if paper in ev
            ]
            heads = ["paper", *_claims.EVIDENCE, "unlabelled", f"close claims with power > {_claims.POWER_LIMIT:.0%}"]
            evidence = _table(heads, body, [3] + [2] * 6, kind="claims-summary")
            node.replace_self([table, evidence])
            continue
        body, ids, classes = [], [], []
        anchors = getattr(env, "symbreak_claim_anchors", {})
        seeds = load_seeds(app.outdir) if app.builder.format == "html" else None
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
                    "claims-evidence-" + (r.get("evidence") or "none"),
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
                    measured_text(r),
                    _shown(r, "expected"),
                    error_text(r["tolerance"]),
                    r.get("evidence") or "",
                    power_text(r),
                    verdict,
                    *([seeds_text(r, seeds)] if seeds is not None else []),
                    where,
                ]
            )
        columns = list(REPORT_COLUMNS)
        widths = [8, 6, 6, 24, 8, 8, 9, 5, 4, 3, 10]
        if seeds is not None:
            columns.insert(-1, SEEDS_COLUMN)
            widths.insert(-1, 3)
        node.replace_self(
            _table(
                columns,
                body,
                widths,
                labels=app.builder.format == "html",
                row_ids=ids,
                row_classes=classes,
            )
        )


#: The columns of the table of numbered results (``{claims-report}`` with ``:results:``).
RESULTS_COLUMNS = ("result", "statement", "status", "evidence", "what it has", "claims", "where")


def _results_table(app, fromdocname, paper):
    """The numbered results of one paper with their computed status, the evidence behind them,
    what a row that falls short has (or why its power is coarser), and links to its claims."""
    env = app.env
    body, classes = [], []
    for r in getattr(env, "symbreak_results", []):
        if paper and r["paper"] != paper:
            continue
        has = r.get("shortfall") or r.get("has") or ""
        if r.get("power_reason"):
            has = (has + "; " if has else "") + "power coarser: " + r["power_reason"]
        if r["status"] != r.get("declared") and r.get("declared") not in (None, "stated"):
            has = f"declared {r['declared']}" + (f": {has}" if has else "")
        claims_cell = nodes.paragraph()
        for i, cid in enumerate(r.get("claims") or []):
            if i:
                claims_cell += nodes.Text(", ")
            claims_cell += nodes.reference(
                "", "", nodes.literal(text=cid), internal=True, refuri="#" + nodes.make_id("claim-" + cid)
            )
        where = nodes.paragraph()
        page = r.get("page")
        if page and page in env.all_docs:
            uri = app.builder.get_relative_uri(fromdocname, page)
            if r.get("proof"):
                uri += "#" + r["proof"]
            title = env.titles[page].astext() if page in env.titles else page
            where += nodes.reference("", title, internal=True, refuri=uri)
        classes.append(
            ["claims-status-" + _status_class(r["status"])]
            + ["claims-evidence-" + k for k in (r.get("evidence") or ["none"])]
            # a row whose checks are identities or constructions only (the filter can list these alone)
            + (
                ["claims-has-identity-only"]
                if r.get("evidence") and not set(r["evidence"]) & set(_claims.REPRODUCING)
                else []
            )
        )
        body.append(
            [
                _claims.paper_ref(r["ref"]),
                statement_node(r["statement"]),
                r["status"],
                ", ".join(r.get("evidence") or []),
                has,
                claims_cell,
                where,
            ]
        )
    return _table(
        list(RESULTS_COLUMNS),
        body,
        [6, 26, 6, 8, 12, 12, 8],
        kind=["claims-rows", "claims-results"],  # compact rows and the filter, like the claims' tables
        labels=app.builder.format == "html",
        row_classes=classes,
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
                "evidence",
                "power",
                "se",
                "n_se",
                "se_reason",
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
    results = [dict(r) for r in getattr(app.env, "symbreak_results", [])]
    for row in results:
        if row["page"]:
            row["page"] = row["page"] + ".html"
    (pathlib.Path(app.outdir) / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_E_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?)[eE]([+-]?\d+)(?![\w.])")


def _readable_number(match: re.Match) -> str:
    mantissa, exponent = match.group(1), int(match.group(2))
    if float(mantissa) == 0:
        return "0"
    digits = len(mantissa.replace(".", "").lstrip("0")) or 1
    if -4 <= exponent <= 4:
        plain = f"{float(mantissa) * 10.0**exponent:.{digits}g}"
        if "e" not in plain:
            return plain
    power = "10" + str(exponent).translate(_SUPERSCRIPT)
    return power if float(mantissa) == 1 else f"{mantissa} × {power}"


def readable_numbers(text: str) -> str:
    """``text`` with every number in E-notation written for a reader.

    >>> readable_numbers("within 3.3e-16; residual 9.7e-03, ≤ 0.0e+00, 1e+05 steps, 2.1e-12%")
    'within 3.3 × 10⁻¹⁶; residual 0.0097, ≤ 0, 10⁵ steps, 2.1 × 10⁻¹²%'
    """
    return _E_NUMBER.sub(_readable_number, text)


def _readable_glue(app, doctree) -> None:
    """Rewrite the numbers of glued text (``pasted-text`` nodes) with :func:`readable_numbers`."""
    for node in list(doctree.findall(nodes.inline)):
        if "pasted-text" not in node.get("classes", ()):
            continue
        old = node.astext()
        new = readable_numbers(old)
        if new != old:
            node.children = [nodes.Text(new)]


def setup(app):
    app.add_config_value("claims_inventories", ["book/*/results.yml"], "env")
    app.add_node(claims_report_node)
    app.add_directive("claims-report", ClaimsReport)
    app.connect("doctree-read", _anchor_claims)
    app.connect("doctree-read", _readable_glue)
    app.connect("env-purge-doc", _purge_anchors)
    app.connect("env-merge-info", _merge_anchors)
    app.connect("env-updated", _collect)
    app.connect("doctree-resolved", _resolve)
    app.connect("build-finished", _write_json)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
