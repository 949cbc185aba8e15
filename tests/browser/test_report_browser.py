"""The reproduction report in headless Chromium: a compact table on a desktop (one line per claim),
a status filter that works from the files alone (file://, no server, no network), and rows that
link to the cell or section of the page that computes each claim.
"""

from __future__ import annotations

import pathlib
import re
import urllib.parse

import pytest
from browser_site import MATHJAX_READY_JS

pytestmark = pytest.mark.browser

REPORT = "book/reproduction-report.html"


@pytest.fixture
def report_page(browser, site):
    """The report opened from the files themselves (file://), with every other request refused."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    outside = []

    def route(r):
        if r.request.url.startswith(("file://", "data:")):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((site / REPORT).as_uri(), wait_until="load")
    page.wait_for_function(MATHJAX_READY_JS)
    yield page, errors
    context.close()
    assert outside == [], f"the report asked for {outside[:5]}"


ROWS_JS = """() => [...document.querySelectorAll('table.claims-rows tbody tr')].map(tr => ({
  cls: tr.className, visible: tr.offsetParent !== null, h: tr.getBoundingClientRect().height}))"""


def test_the_status_filter_hides_the_other_statuses(report_page):
    page, errors = report_page
    rows = page.evaluate(ROWS_JS)
    assert len(rows) >= 300 and all(r["visible"] for r in rows)
    boxes = page.locator("fieldset.claims-filter input[type=checkbox][value^='claims-status-']")
    values = [boxes.nth(i).get_attribute("value") for i in range(boxes.count())]
    assert "claims-status-stated" in values and "claims-status-reproduced" in values, values
    for i, value in enumerate(values):  # keep only "stated"
        if value != "claims-status-stated":
            boxes.nth(i).uncheck()
    rows = page.evaluate(ROWS_JS)
    shown = [r for r in rows if r["visible"]]
    stated = [r for r in rows if "claims-status-stated" in r["cls"].split()]
    assert shown and len(shown) == len(stated) < len(rows)
    assert all("claims-status-stated" in r["cls"].split() for r in shown)
    count = page.locator("fieldset.claims-filter .claims-filter-count").inner_text()
    assert count.startswith(f"{len(stated)} of {len(rows)} rows"), count  # "(claims and results together)"
    boxes.nth(values.index("claims-status-reproduced")).check()
    rows = page.evaluate(ROWS_JS)
    assert all(
        r["visible"] == bool({"claims-status-stated", "claims-status-reproduced"} & set(r["cls"].split())) for r in rows
    )
    assert errors == []


def test_one_line_per_claim_on_a_desktop(report_page):
    """At 1400 px every row is one line of the table (the statement ends in an ellipsis until its
    row is clicked), and the page is a few screens long, not a hundred."""
    page, _ = report_page
    rows = page.evaluate(ROWS_JS)
    heights = sorted(r["h"] for r in rows)
    assert heights[int(0.95 * len(heights))] < 40, f"rows taller than one line: {heights[-10:]}"
    tall = page.evaluate("() => document.documentElement.scrollHeight")
    assert tall < 40 * len(rows) + 8000, f"the report is {tall} px long"
    row = page.locator("table.claims-rows tbody tr").nth(3)
    before = row.bounding_box()["height"]
    row.locator("td").nth(1).click()
    assert "claims-open" in row.get_attribute("class")
    assert row.bounding_box()["height"] >= before
    cut = row.evaluate(
        "tr => [...tr.querySelectorAll('td > p:last-child')].filter(p => p.scrollWidth > p.clientWidth + 1).length"
    )
    assert cut == 0, "an opened row still cuts its text"


def test_every_claim_links_to_where_it_is_computed(report_page, site):
    """Each claim's row links to its page, at the id of the cell that records it; every link
    resolves to a file of the site with that id."""
    page, _ = report_page
    links = page.evaluate(
        """() => [...document.querySelectorAll('table.claims-rows tbody tr[id^="claim-"]')].map(tr =>
             [tr.id, (tr.querySelector('td:last-child a') || {}).href || null])"""
    )
    assert len(links) >= 250
    missing = [i for i, href in links if href is None]
    assert missing == [], f"claims with no link to their page: {missing[:10]}"
    unanchored = [i for i, href in links if "#claim-src-" not in href]
    assert unanchored == [], f"claims linked to a page or section but not to their cell: {unanchored[:10]}"
    broken = []
    ids: dict = {}
    for claim, href in links:
        parts = urllib.parse.urlsplit(href)
        path = urllib.parse.unquote(parts.path)
        try:
            text = pathlib.Path(path).read_text(encoding="utf-8", errors="replace") if path not in ids else None
        except OSError:
            broken.append(f"{claim}: {href}")
            continue
        if text is not None:
            ids[path] = set(re.findall(r'\bid="([^"]+)"', text))
        if parts.fragment and urllib.parse.unquote(parts.fragment) not in ids[path]:
            broken.append(f"{claim}: {href}")
    assert broken == [], f"links that lead nowhere: {broken[:10]}"


@pytest.mark.parametrize("width", [960, 1400])
def test_the_table_fits_the_column_without_scrolling_sideways(browser, site, width):
    """From 960 px on, the one-line table takes the column's width and no more: every column is in
    view (each cell cut with an ellipsis until its row is opened), nothing to scroll sideways to."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto((site / REPORT).as_uri(), wait_until="load")
    page.wait_for_function(MATHJAX_READY_JS)
    fit = page.evaluate(
        """() => [...document.querySelectorAll('table.claims-rows')].map(t => ({
             table: t.scrollWidth, box: t.parentElement.clientWidth,
             page: document.documentElement.scrollWidth, view: document.documentElement.clientWidth}))"""
    )
    context.close()
    assert fit, "no claims table"
    assert all(f["table"] <= f["box"] + 1 and f["page"] <= f["view"] + 1 for f in fit), fit
