"""The reproduction-report extension: a small Sphinx project with records and an inventory."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from symbreak import claims, sphinxext

sphinx_app = pytest.importorskip("sphinx.application")


def _project(tmp_path: pathlib.Path, inventory: str) -> pathlib.Path:
    src = tmp_path / "src"
    (src / "book" / "demo").mkdir(parents=True)
    (src / "_toc.yml").write_text("root: index\n")
    (src / "conf.py").write_text("extensions = ['symbreak.sphinxext']\nproject = 'demo'\n")
    (src / "index.rst").write_text("Demo\n====\n\n.. toctree::\n\n   book/demo/page\n   report\n")
    (src / "book" / "demo" / "page.rst").write_text(
        "Page\n====\n\nText.\n\nSection\n-------\n\n.. container:: cell\n\n   ::\n\n"
        '      ledger.close("ae-demo-eq6", "Eq. 6", "the law holds", s, s_th, rtol=0.01)\n'
        '      ledger.bound(f"ae-demo-fam-{tag}", "Eq. 7", "a family", x, upper=1)\n'
    )
    (src / "report.rst").write_text(
        "Report\n======\n\n.. claims-report::\n   :summary:\n\n.. claims-report::\n   :paper: autoencoder\n"
    )
    (src / "book" / "demo" / "results.yml").write_text(inventory)
    return src


def _build(src: pathlib.Path, tmp_path: pathlib.Path, monkeypatch) -> tuple[list, str]:
    import io

    from sphinx.application import Sphinx

    warnings = io.StringIO()
    out = tmp_path / "out"
    app = Sphinx(
        str(src),
        str(src),
        str(out),
        str(tmp_path / "doctrees"),
        "html",
        status=io.StringIO(),
        warning=warnings,
        freshenv=True,
    )
    app.build()
    return json.loads((out / "claims.json").read_text()), warnings.getvalue()


def _report_html(tmp_path, monkeypatch, rows) -> str:
    """Build the demo project with the Lambert-law row and ``rows`` (``(ref, statement[, status])``,
    status "reproduced" by default) in its inventory; return the report page's HTML."""
    lines = [
        '- {paper: autoencoder, ref: "Eq. 6", statement: "Lambert law", status: derived+reproduced, page: book/demo/page}'
    ]
    for ref, statement, *status in rows:
        lines.append(
            f'- {{paper: autoencoder, ref: "{ref}", statement: "{statement}", '
            f"status: {status[0] if status else 'reproduced'}, page: book/demo/page}}"
        )
    _build(_project(tmp_path, "\n" + "\n".join(lines) + "\n"), tmp_path, monkeypatch)
    return (tmp_path / "out" / "report.html").read_text()


@pytest.fixture
def records(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMBREAK_CLAIMS_DIR", str(tmp_path / "claims"))
    monkeypatch.delenv("BOOK_QUICK", raising=False)
    led = claims.Ledger("book/demo/page", "autoencoder", glue=False)
    led.close("ae-demo-eq6", "Eq. 6", "the law holds", 1.001, 1.0, rtol=0.01, evidence="independent")
    return led


def test_report_joins_records_and_inventory(tmp_path, monkeypatch, records):
    src = _project(
        tmp_path,
        """
- {paper: autoencoder, ref: "Eq. 6", statement: "Lambert law", status: derived+reproduced, page: book/demo/page}
- {paper: autoencoder, ref: "Lemma B.3", statement: "a lemma", status: stated, page: book/demo/page}
""",
    )
    rows, warnings = _build(src, tmp_path, monkeypatch)
    assert "claims:" not in warnings, warnings
    by_ref = {r["ref"]: r for r in rows}
    assert by_ref["Eq. 6"]["holds"] is True and by_ref["Eq. 6"]["page"] == "book/demo/page.html"
    assert by_ref["Lemma B.3"]["holds"] is None and by_ref["Lemma B.3"]["status"] == "stated"
    assert claims.validate_report(rows) == []
    html = (tmp_path / "out" / "report.html").read_text()
    assert "the law holds" in html and "✓ holds" in html
    # a claim's row can be linked to: report.html#claim-<id>; the inventory-only row has no id
    assert re.search(r'<tr[^>]*id="claim-ae-demo-eq6"', html), "the claim's row has no id"
    assert html.count('id="claim-') == 1


def test_a_confirmed_deviation_reads_as_one(tmp_path, monkeypatch, records):
    records.bound(
        "ae-demo-dev",
        "Eq. D.19",
        "the printed formula misses",
        0.3,
        lower=0.1,
        status="deviates",
        evidence="independent",
    )
    src = _project(
        tmp_path,
        """
- {paper: autoencoder, ref: "Eq. 6", statement: "Lambert law", status: derived+reproduced, page: book/demo/page}
- {paper: autoencoder, ref: "Eq. D.19", statement: "a printed formula", status: deviates, page: book/demo/page}
""",
    )
    rows, warnings = _build(src, tmp_path, monkeypatch)
    html = (tmp_path / "out" / "report.html").read_text()
    assert "✓ deviation confirmed" in html and "✓ holds" in html


def test_a_condition_reads_in_words_not_as_true(tmp_path, monkeypatch, records):
    """A ``Ledger.true`` claim without a measured number shows "holds" against "holds", never
    Python's True; one with a count shows the count against the theorem's."""
    records.true("ae-demo-cond", "Eq. 7", "the map is symmetric", True, evidence="independent")
    records.true("ae-demo-count", "Eq. 8", "two zero modes", True, measured=2, expected=2, evidence="independent")
    html = _report_html(tmp_path, monkeypatch, [("Eq. 7", "symmetry"), ("Eq. 8", "zero modes")])
    row = re.search(r'<tr[^>]*id="claim-ae-demo-cond".*?</tr>', html, re.S).group(0)
    # each cell: its column label (for narrow screens), a line break, its value
    cells = [re.sub(r"<[^>]+>", "", c).strip().split("\n")[-1] for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[4:6] == ["holds", "holds"] and "True" not in cells, cells
    row = re.search(r'<tr[^>]*id="claim-ae-demo-count".*?</tr>', html, re.S).group(0)
    cells = [re.sub(r"<[^>]+>", "", c).strip().split("\n")[-1] for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[4:6] == ["2", "2"], cells


def test_unbacked_checked_row_is_a_warning(tmp_path, monkeypatch, records):
    src = _project(
        tmp_path,
        """
- {paper: autoencoder, ref: "Eq. 7", statement: "never computed", status: reproduced, page: book/demo/page}
- {paper: autoencoder, ref: "Eq. 8", statement: "on no page", status: stated, page: book/nowhere}
""",
    )
    _, warnings = _build(src, tmp_path, monkeypatch)
    assert "Eq. 7 is 'reproduced' but no computed claim backs it" in warnings
    assert "page 'book/nowhere' is not a page of the book" in warnings


def test_claims_tables_carry_column_labels_for_narrow_screens(tmp_path, monkeypatch, records):
    """Every cell of a claims table starts with its column's name (shown as a card on a phone by
    the site's CSS); the summary table has none and its own class."""
    import re

    src = _project(
        tmp_path,
        """
- {paper: autoencoder, ref: "Eq. 6", statement: "Lambert law", status: derived+reproduced, page: book/demo/page}
""",
    )
    _build(src, tmp_path, monkeypatch)
    html = (tmp_path / "out" / "report.html").read_text()
    tables = re.findall(r'<table class="([^"]*)">(.*?)</table>', html, re.S)
    kinds = {cls.split()[1]: body for cls, body in tables if "claims-table" in cls}
    assert set(kinds) == {"claims-summary", "claims-rows"}, [c for c, _ in tables]
    assert "claims-label" not in kinds["claims-summary"]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", kinds["claims-rows"].split("<tbody>")[1], re.S)
    assert rows
    for row in rows:
        labels = re.findall(r'<td><p class="claims-label">([^<]*)</p>', row)
        assert labels == list(sphinxext.REPORT_COLUMNS)
    assert len(sphinxext.REPORT_COLUMNS) == 11 and sphinxext.REPORT_COLUMNS[0] == "id"


def test_statements_typeset_their_inline_math(tmp_path, monkeypatch, records):
    """What a statement writes between ``$…$`` reaches the report as math for MathJax (and the
    report page loads MathJax even when the page's own text has no formula); the rest stays text,
    and claims.json keeps the statement as written."""
    import re

    records.close(
        "ae-demo-gauge",
        "Eq. 5",
        "the gauge $A = S^{1/2}$ is not one (in 5 $ units)",
        1.0,
        1.0,
        rtol=0.01,
        evidence="independent",
    )
    src = _project(
        tmp_path,
        r"""
- {paper: autoencoder, ref: "Eq. 9", statement: 'the flow $ds_i/dt = -N s_i^{2-2/N}\, \partial F/\partial s_i$ holds', status: stated, page: book/demo/page}
""",
    )
    rows, _ = _build(src, tmp_path, monkeypatch)
    html = (tmp_path / "out" / "report.html").read_text()
    assert r'the gauge <span class="math notranslate nohighlight">\(A = S^{1/2}\)</span> is not one' in html
    assert r"\(ds_i/dt = -N s_i^{2-2/N}\, \partial F/\partial s_i\)</span> holds" in html
    assert "(in 5 $ units)" in html  # a lone dollar stays text
    assert re.search(r'<script[^>]+src="[^"]*mathjax', html, re.I), "the report page does not load MathJax"
    assert {r["id"]: r["statement"] for r in rows}[
        "ae-demo-gauge"
    ] == "the gauge $A = S^{1/2}$ is not one (in 5 $ units)"
    assert "$" not in re.sub(r"<span class=\"math[^>]*>.*?</span>", "", html.split("<tbody>", 1)[1]).replace(
        "5 $ units", ""
    )


def test_report_rows_filter_by_status_and_link_to_the_cell(tmp_path, monkeypatch, records):
    """Each claim's row carries its status and verdict as classes (the site's status filter,
    _static/claims-report.js, reads them) and links to the cell of its page that records it: the
    cell gets an id from the claim's id, or from the literal start of an f-string id."""
    records.bound("ae-demo-fam-a", "Eq. 7", "a family", 0.5, upper=1.0, status="reproduced", evidence="independent")
    html = _report_html(tmp_path, monkeypatch, [("Eq. 7", "a family"), ("Lemma B.3", "a lemma", "stated")])
    page = (tmp_path / "out" / "book" / "demo" / "page.html").read_text()
    row = re.search(r'<tr class="([^"]*)" id="claim-ae-demo-eq6">(.*?)</tr>', html, re.S)
    assert row, "the claim's row has no classes"
    assert "claims-status-reproduced" in row.group(1) and "claims-holds-yes" in row.group(1)
    assert 'href="book/demo/page.html#claim-src-ae-demo-eq6"' in row.group(2)
    assert 'id="claim-src-ae-demo-eq6"' in page
    fam = re.search(r'<tr class="([^"]*)" id="claim-ae-demo-fam-a">(.*?)</tr>', html, re.S)
    assert "claims-status-reproduced" in fam.group(1)
    assert 'href="book/demo/page.html#claim-src-ae-demo-fam"' in fam.group(2)
    assert 'id="claim-src-ae-demo-fam"' in page
    assert re.search(r'<tr class="[^"]*claims-status-stated[^"]*claims-holds-none', html)


@pytest.mark.parametrize(
    ("tolerance", "text"),
    [
        # the relative tolerance decides: the relative error, as a percentage
        ({"rtol": 0.02, "atol": 0.0, "max_rel_err": 0.0031, "max_abs_err": 0.01}, "rel. err 0.31% (rtol 0.02)"),
        # every error within atol (exact zeros among the compared values): no relative error shown
        (
            {"rtol": 1e-9, "atol": 1e-9, "max_rel_err": 8.7, "max_abs_err": 2.1e-14},
            "abs. err 2.1e-14 (rtol 1e-09; atol 1e-09)",
        ),
        ({"rtol": 0.0, "atol": 0.02, "max_rel_err": 0.5, "max_abs_err": 0.005}, "abs. err 0.005 (atol 0.02)"),
        ({"rtol": 0.1, "atol": 0.0, "max_rel_err": float("inf"), "max_abs_err": 0.0}, "abs. err 0 (rtol 0.1)"),
        # a bound, a sign, an ordering: nothing
        ({"lower": None, "upper": 2.0, "strict": False}, ""),
        (None, ""),
    ],
)
def test_the_error_shown_is_the_one_that_decides(tolerance, text):
    from symbreak.sphinxext import error_text

    assert error_text(tolerance) == text


def _row_cells(html: str, claim_id: str) -> list[str]:
    row = re.search(rf'<tr[^>]*id="claim-{claim_id}".*?</tr>', html, re.S).group(0)
    return [re.sub(r"<[^>]+>", "", c).strip().split("\n")[-1] for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def test_report_shows_evidence_power_and_standard_error(tmp_path, monkeypatch, records):
    """Each claim's row names its evidence, its resolving power and, for a simulation, ± se; the
    row carries the evidence as a class the filter reads; claims.json carries the same fields."""
    records.close("ae-demo-sim", "Eq. 7", "a mean", 1.02, 1.0, atol=0.06, evidence="simulation", se=0.02, n_se=3)
    records.close("ae-demo-id", "Eq. 8", "an identity", 0.0, 0.0, atol=1e-12, evidence="identity")
    html = _report_html(tmp_path, monkeypatch, [("Eq. 7", "mean"), ("Eq. 8", "identity")])
    cols = list(sphinxext.REPORT_COLUMNS)
    sim = dict(zip(cols, _row_cells(html, "ae-demo-sim")))
    assert sim["measured"] == "1.02 ± 0.02 (tolerance 3 se)" and sim["evidence"] == "simulation"
    assert sim["power"] == "8%", sim  # up: (0.02 + 0.06)/1 ; down: 0.06 - 0.02 -> 8%
    ident = dict(zip(cols, _row_cells(html, "ae-demo-id")))
    assert ident["evidence"] == "identity" and ident["power"] == "none"
    assert re.search(
        r'<tr[^>]*class="[^"]*claims-evidence-simulation[^"]*"[^>]*id="claim-ae-demo-sim"', html
    ) or re.search(r'<tr[^>]*id="claim-ae-demo-sim"[^>]*class="[^"]*claims-evidence-simulation', html)
    rows = json.loads((tmp_path / "out" / "claims.json").read_text())
    by_id = {r["id"]: r for r in rows}
    assert by_id["ae-demo-sim"]["se"] == 0.02 and by_id["ae-demo-sim"]["evidence"] == "simulation"
    assert by_id["ae-demo-sim"]["power"] == pytest.approx(0.08) and by_id["ae-demo-id"]["power"] == "inf"
    assert "seeds" not in html.split("<thead>")[-1].split("</thead>")[0]


def test_report_shows_seeds_when_seeds_json_exists(tmp_path, monkeypatch, records):
    (tmp_path / "out").mkdir(parents=True, exist_ok=True)
    (tmp_path / "out" / "seeds.json").write_text(
        json.dumps({"seeds": [1, 2, 3], "claims": {"ae-demo-eq6": {"holds": 2, "of": 3}}})
    )
    html = _report_html(tmp_path, monkeypatch, [])
    cols = list(sphinxext.REPORT_COLUMNS)
    cols.insert(-1, sphinxext.SEEDS_COLUMN)
    cells = dict(zip(cols, _row_cells(html, "ae-demo-eq6")))
    assert cells["seeds"] == "2 of 3", cells


def test_results_json_and_a_missing_proof_label_fails_the_build(tmp_path, monkeypatch, records):
    """``results.json`` has one row per numbered result with its computed status; a ``proof`` label
    that the page does not define is a warning (the strict build fails)."""
    records.close("ae-demo-sim", "Eq. 7", "a mean", 1.02, 1.0, atol=0.06, evidence="simulation", se=0.02)
    records.bound("ae-demo-id", "Eq. 9", "an identity", 0.0, upper=1e-12, evidence="identity")
    src = _project(
        tmp_path,
        """
- {paper: autoencoder, ref: "Eq. 6", statement: "Lambert law", status: derived+reproduced, page: book/demo/page, proof: ae-demo-thm}
- {paper: autoencoder, ref: "Eq. 7", statement: "a mean", status: reproduced, page: book/demo/page}
- {paper: autoencoder, ref: "Eq. 8", statement: "cited", status: derived, page: book/demo/page, proof: ae-demo-gone}
- {paper: autoencoder, ref: "Eq. 9", statement: "an identity", status: reproduced, page: book/demo/page}
""",
    )
    page = src / "book" / "demo" / "page.rst"
    page.write_text(
        page.read_text() + "\n.. prf:theorem:: Law\n   :label: ae-demo-thm\n\n   Text.\n\n.. prf:proof::\n\n   Proof.\n"
    )
    (src / "conf.py").write_text("extensions = ['symbreak.sphinxext', 'sphinx_proof']\nproject = 'demo'\n")
    (src / "report.rst").write_text(
        (src / "report.rst").read_text() + "\n.. claims-report::\n   :paper: autoencoder\n   :results:\n"
    )
    _, warnings = _build(src, tmp_path, monkeypatch)
    assert "proof label 'ae-demo-gone' is not a prf: label of page 'book/demo/page'" in warnings
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    by_ref = {r["ref"]: r for r in results}
    assert set(by_ref) == {"Eq. 6", "Eq. 7", "Eq. 8", "Eq. 9"}
    for r in results:
        assert {"paper", "ref", "statement", "status", "claims", "evidence", "proof", "page"} <= set(r)
    # Eq. 6: a proof on the page and an independent check of power 1%: derived and reproduced
    assert by_ref["Eq. 6"]["status"] == "derived+reproduced" and by_ref["Eq. 6"]["page"] == "book/demo/page.html"
    assert by_ref["Eq. 7"]["status"] == "reproduced" and by_ref["Eq. 7"]["evidence"] == ["simulation"]
    assert by_ref["Eq. 8"]["status"] == "stated" and by_ref["Eq. 8"]["shortfall"] == "proof label not found"
    html = (tmp_path / "out" / "report.html").read_text()
    assert "claims-results" in html and "declared derived: proof label not found" in html
    # a row resting on identities only is computed as stated and carries the class the filter lists
    assert by_ref["Eq. 9"]["status"] == "stated" and by_ref["Eq. 9"]["shortfall"] == "identity only"
    assert html.count("claims-has-identity-only") == 1


def test_glued_numbers_read_as_prose():
    from symbreak.sphinxext import readable_numbers

    assert readable_numbers("within 3.3e-16 (computed: ≤ 0.0e+00)") == "within 3.3 × 10⁻¹⁶ (computed: ≤ 0)"
    assert readable_numbers("residual 9.7e-03; 4e-03–6e-03; 1e+05 steps") == "residual 0.0097; 0.004–0.006; 10⁵ steps"
    assert readable_numbers("2.1e-12% and 1.25e+10") == "2.1 × 10⁻¹²% and 1.25 × 10¹⁰"
    # text that is not a number in E-notation is left alone
    for text in ("pl-e10", "x2e5y", "e-08", "3.3", "version 1.2.3e4"):
        assert readable_numbers(text) == text


def test_glued_text_nodes_are_rewritten_and_other_text_is_not():
    from docutils import nodes

    from symbreak import sphinxext

    doc = nodes.paragraph()
    pasted = nodes.inline("within 3.3e-16", "within 3.3e-16", classes=["pasted-text"])
    plain = nodes.inline("code 3.3e-16", "code 3.3e-16")
    doc += [pasted, plain]
    sphinxext._readable_glue(None, doc)
    assert pasted.astext() == "within 3.3 × 10⁻¹⁶" and plain.astext() == "code 3.3e-16"
