"""The built site in headless Chromium: the checks that open a page or two of their own (the layout
checks against the theme's defaults, the column and search field at desktop widths) and those that
read the built files.

``make browser`` runs this after ``make book``; it is excluded from ``make test`` (marker ``browser``).
The checks of every page are in ``test_site_desktop.py`` (1400 px) and ``test_site_phone.py``
(400 px), one module per visit of the whole site: ``make browser`` runs the modules side by side
(pytest-xdist, ``--dist loadfile``), and each visit is made by one worker.
"""

from __future__ import annotations

import re
import urllib.parse

import pytest
from browser_site import INSPECT_JS, MATHJAX_READY_JS, toc_pages, visit

pytestmark = pytest.mark.browser

PAGES = toc_pages()


def test_the_column_is_widest_on_a_desktop(browser, base_url):
    """The text column at 1920 px is at least as wide as at 1400 px, so an equation that fits at
    1400 px fits at 1920 px; and the wide-equation check reports an equation squeezed below its
    width."""
    widths = {}
    for w in (1400, 1920):
        context = browser.new_context(viewport={"width": w, "height": 1000})
        try:
            page, _ = visit(context, f"{base_url}/book/autoencoder/lambert.html")
            widths[w] = page.evaluate("() => document.querySelector('div.math').getBoundingClientRect().width")
            if w == 1400:
                assert page.evaluate(INSPECT_JS)["wideMath"] == []
                page.add_style_tag(content="div.math { max-width: 300px; }")
                assert page.evaluate(INSPECT_JS)["wideMath"] != []
            page.close()
        finally:
            context.close()
    assert widths[1920] >= widths[1400] > 600, widths


SEARCH_JS = """() => ({
  fields: [...document.querySelectorAll('.search-button-field, .search-button, .bd-search')]
    .filter(e => e.offsetParent !== null && e.getBoundingClientRect().height > 0).length,
  header: (() => { const h = document.querySelector('#pst-header');
                   return h ? h.getBoundingClientRect().height : 0; })(),
})"""


def test_one_search_field_and_no_blank_top_bar_on_a_desktop(browser, base_url):
    """At 960, 1400 and 1920 px the page shows one search field (the sidebar's), and no top bar
    that holds only a second one or nothing; and the check itself sees the theme's bar."""
    for w in (960, 1400, 1920):
        context = browser.new_context(viewport={"width": w, "height": 900})
        try:
            page, _ = visit(context, f"{base_url}/book/intro.html")
            got = page.evaluate(SEARCH_JS)
            assert got == {"fields": 1, "header": 0}, (w, got)
            if w == 1400:  # the theme's own layout: a 64 px bar with a second search field
                page.add_style_tag(content="@media (min-width: 960px) { #pst-header { display: flex !important; } }")
                got = page.evaluate(SEARCH_JS)
                assert got["fields"] == 2 and got["header"] > 0, got
            page.close()
        finally:
            context.close()


def test_the_layout_checks_catch_the_theme_defaults(browser, base_url):
    """Without the book's stylesheet (the theme's rules alone) the checks above report each defect
    they guard against at 400 px: the API page and the general index scroll sideways, inline math and the next-page link
    are cut off (the next-page link of the page before the first chapter), the report's claims
    tables scroll without a cue."""
    context = browser.new_context(viewport={"width": 400, "height": 860})
    disable = (
        "() => { document.querySelectorAll('link[href*=\"site.css\"]').forEach(l => l.disabled = true);"
        " document.querySelectorAll('.scroll-cue-left, .scroll-cue-right').forEach(e =>"
        " e.classList.remove('scroll-cue-left', 'scroll-cue-right')); }"
    )
    found = {}
    try:
        for name in ("book/api", "book/intro", "book/teaching", "book/reproduction-report", "genindex"):
            page, _ = visit(context, f"{base_url}/{name}.html")
            assert page.evaluate(INSPECT_JS)["sideways"] is None, f"{name}: already broken with the book's CSS"
            page.evaluate(disable)
            page.wait_for_timeout(100)
            found[name] = page.evaluate(INSPECT_JS)
            page.close()
    finally:
        context.close()
    assert found["book/api"]["sideways"] is not None
    assert found["genindex"]["sideways"] is not None
    assert any("span.math" in c for c in found["book/intro"]["clipped"]), found["book/intro"]["clipped"]
    assert any("right-next" in c for c in found["book/teaching"]["clipped"]), found["book/teaching"]["clipped"]
    assert any("claims" in u or "scrolls without a cue" in u for u in found["book/reproduction-report"]["uncued"])


def test_the_overflow_check_catches_a_cut_off_equation(browser, base_url):
    """At phone width the front page's display equations are wider than the column: with the
    book's CSS they scroll with a cue; with the theme's rules alone the check reports them."""
    context = browser.new_context(viewport={"width": 400, "height": 900})
    try:
        page, _ = visit(context, f"{base_url}/book/intro.html")
        assert page.evaluate(INSPECT_JS)["overflow"] == []
        wide = page.evaluate(
            "() => [...document.querySelectorAll('div.math mjx-container')]"
            ".filter(m => m.scrollWidth > m.clientWidth + 1).length"
        )
        assert wide >= 1, "expected a display equation wider than a 400 px column on the front page"
        page.add_style_tag(
            content="div.math mjx-container[display='true'] { min-width: auto !important; "
            "overflow: visible !important; background: none !important; }"
        )
        assert page.evaluate(INSPECT_JS)["overflow"] != []
        page.close()
    finally:
        context.close()


def test_the_tex_check_catches_leaked_tex(browser, base_url):
    """Brace groups such as S^{1/2} count as leaked TeX in prose and in the report's claims tables
    (whose statements typeset their $…$ formulas: nothing TeX-like is left in their text), a TeX
    command everywhere; the report's typeset statements themselves pass."""
    context = browser.new_context()
    try:
        page, _ = visit(context, f"{base_url}/book/reproduction-report.html")
        found = page.evaluate(INSPECT_JS)
        assert found["tex"] == [] and found["mathErrors"] == []
        assert page.evaluate("() => document.querySelectorAll('table.claims-table mjx-container').length") >= 10, (
            "expected the report's statements to typeset their formulas"
        )
        cell = "document.querySelector('table.claims-table td')"
        assert page.evaluate(
            f"() => {{ const t = {cell}; t.append(document.createTextNode(' A = S^{{1/2}} ')); return !!t; }}"
        )
        assert any("S^{1/2}" in t for t in page.evaluate(INSPECT_JS)["tex"])
        page.reload()
        page.wait_for_function(MATHJAX_READY_JS)
        page.evaluate(f"() => {cell}.append(document.createTextNode(' W_{{i+1}} '))")
        assert any("W_{i+1}" in t for t in page.evaluate(INSPECT_JS)["tex"])
        page.evaluate(rf"() => {cell}.append(document.createTextNode(' \\frac{{a}}{{b}} '))")
        assert any("frac" in t for t in page.evaluate(INSPECT_JS)["tex"])
        page.evaluate("() => document.querySelector('main p').append(document.createTextNode(' x^{2} '))")
        assert any("x^{2}" in t for t in page.evaluate(INSPECT_JS)["tex"])
        page.close()
    finally:
        context.close()


#: A printed NumPy array (``[0.665 0.594 0.685]``) and float noise (``0.30000000000000004``).
NUMPY_ARRAY = re.compile(r"\[\s*-?\d*\.?\d+(?:e[-+]?\d+)?(?:\s+-?\d*\.?\d+(?:e[-+]?\d+)?)+\s*\]")
FLOAT_NOISE = re.compile(r"\d\.\d*(?:0{6,}|9{6,})\d")
#: A Markdown table printed as text (an output rendered as CommonMark, which has no tables).
RAW_TABLE = re.compile(r"\|\s*:?(?:-{3,}|[—–][—–-]*):?\s*\|")  # typography turns --- into —
#: Pages whose printed outputs read as labelled numbers and small tables, never as raw arrays.
LABELLED_OUTPUT_PAGES = [name for name in PAGES if name.startswith("book/beyond/")]


def cell_output_text(html: str) -> list[str]:
    """The text of every cell output of a built page."""
    import html as html_lib

    outputs = re.findall(r'<div class="cell_output docutils container">(.*?)</div>\s*</div>\s*</div>', html, re.S)
    return [html_lib.unescape(re.sub(r"<[^>]+>", "", o)) for o in outputs]


def test_the_printed_array_check_catches_a_raw_array():
    page = '<div class="cell_output docutils container"><div><div><pre>final CKA [0.665 0.594 0.52 ]</pre></div></div></div>'
    assert NUMPY_ARRAY.search(cell_output_text(page)[0])
    assert FLOAT_NOISE.search("η = 0.30000000000000004") and not FLOAT_NOISE.search("η = 0.3")
    assert not NUMPY_ARRAY.search("per replica 0.665, 0.594, 0.520")
    assert RAW_TABLE.search("| mode a | scale |\n|---|---|\n| 1 | 1.9 |") and RAW_TABLE.search("|—|—|")


@pytest.mark.parametrize("name", LABELLED_OUTPUT_PAGES)
def test_printed_numbers_are_labelled_not_raw_arrays(site, name):
    """Every number these pages print has a label (or sits in a table), rounded: no bare NumPy
    array repr, no float noise, no Markdown table left as text."""
    bad = []
    for text in cell_output_text((site / (name + ".html")).read_text()):
        for pattern in (NUMPY_ARRAY, FLOAT_NOISE, RAW_TABLE):
            bad += [text[max(0, m.start() - 40) : m.end()].strip() for m in pattern.finditer(text)]
    assert bad == [], f"{name}: raw printed arrays or float noise {bad}"


def test_no_source_maps_and_a_favicon(site):
    maps = sorted(str(p.relative_to(site)) for p in site.rglob("*.map"))
    assert maps == [], f"source maps shipped: {maps[:5]}"
    html = (site / "book" / "intro.html").read_text()
    icon = re.search(r'<link rel="icon" href="([^"]+)"', html)
    assert icon and (site / "book" / icon.group(1)).resolve().is_file(), "favicon missing"
    assert (site / "_static" / "mathjax" / "LICENSE").is_file(), "MathJax shipped without its licence"


def test_page_sizes_under_3_mb(site):
    """A page with everything it shows (its HTML, its own figures): under 3 MB."""
    sizes = {}
    for name in PAGES:
        page = site / (name + ".html")
        html = page.read_text(errors="replace")
        images = {
            (page.parent / urllib.parse.unquote(src)).resolve()
            for src in re.findall(r'<img[^>]+src="([^"]+)"', html)
            if not src.startswith(("data:", "http"))
        }
        sizes[name] = page.stat().st_size + sum(p.stat().st_size for p in images if p.is_file())
    print("page sizes with their figures (kB):", {k: v // 1000 for k, v in sizes.items()})
    too_big = {k: v for k, v in sizes.items() if v > 3_000_000}
    assert too_big == {}, f"pages over 3 MB: {too_big}"
