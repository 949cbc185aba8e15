"""The built site in headless Chromium: what a reader sees, page by page.

``make browser`` runs this after ``make book``; it is excluded from ``make test`` (marker ``browser``).
"""

from __future__ import annotations

import pathlib
import re
import urllib.parse

import pytest
from browser_site import EXPLORER_PAGES, INDEX_PAGES, INSPECT_JS, MATHJAX_READY_JS, SCREENSHOTS, toc_pages, visit

pytestmark = pytest.mark.browser

PAGES = toc_pages()

#: Alt text that is only a file name or path (what a figure gets when nobody wrote one).
PATH_ALT = re.compile(r"(^|/)[\w.-]+\.(png|jpe?g|svg|gif)$|^_build/|^\.\./|^/", re.I)


@pytest.mark.parametrize("name", PAGES)
def test_page_loads_without_errors(report, name):
    r = report[name]
    assert r["pageerror"] == [], f"{name}: JavaScript exceptions {r['pageerror']}"
    assert r["console"] == [], f"{name}: console errors {r['console']}"
    assert r["http"] == [], f"{name}: HTTP errors {r['http']}"
    assert r["failed"] == [], f"{name}: failed requests {r['failed']}"


@pytest.mark.parametrize("name", PAGES)
def test_math_typesets_with_no_tex_left(report, name):
    r = report[name]
    assert r["mathErrors"] == [], f"{name}: MathJax errors {r['mathErrors']}"
    assert r["tex"] == [], f"{name}: raw TeX left in the page: {r['tex'][:8]}"
    if r["displayMath"]:
        assert r["mathScript"] and r["typeset"] >= r["displayMath"], f"{name}: display math not typeset"


@pytest.mark.parametrize("name", PAGES)
def test_wide_equations_scroll_with_a_cue(report, name):
    assert report[name]["overflow"] == [], f"{name} at 1400 px: {report[name]['overflow']}"


@pytest.mark.parametrize("name", PAGES)
def test_display_equations_fit_at_1400px(report, name):
    """On a desktop no display equation needs to scroll: a wide one is split into lines (aligned).
    The column at 1920 px is no narrower than at 1400 px (test_the_column_is_widest_on_a_desktop),
    so this holds there too; on a phone wide equations scroll with a cue."""
    wide = report[name]["wideMath"]
    assert wide == [], f"{name} at 1400 px: {len(wide)} display equations wider than the column {wide}"


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


@pytest.mark.parametrize("name", PAGES)
def test_formulas_paint_no_background(report, name):
    """No formula has a painted background: inside a tinted theorem or exercise box an opaque one
    showed as a white patch behind every inline formula."""
    covers = report[name]["mathCovers"]
    assert covers == [], f"{name}: {len(covers)} formulas with a background, e.g. {covers[:3]}"


@pytest.mark.parametrize("name", PAGES)
def test_inline_formulas_that_fit_their_line_do_not_scroll(report, phone_report, name):
    """Only an inline formula wider than its line scrolls (and fades at its edge): MathJax's glyphs
    overhang their box by up to ~30 px, which once marked short formulas such as |x| < 1/2 as
    scrolling, their ends faded."""
    for width, r in ((1400, report[name]), (400, phone_report[name])):
        assert r["needlessScroll"] == [], f"{name} at {width} px: {r['needlessScroll'][:5]}"


@pytest.mark.parametrize("name", PAGES + INDEX_PAGES)
def test_page_does_not_scroll_sideways_at_400px(phone_report, name):
    """On a phone the page body never scrolls horizontally (long API signatures, inline code, the
    general index's two columns of long entries)."""
    assert phone_report[name]["sideways"] is None, f"{name} at 400 px: {phone_report[name]['sideways']}"


@pytest.mark.parametrize("name", PAGES)
def test_nothing_is_cut_off(report, phone_report, name):
    """No content sticks out of a box that hides it: inline math, the previous/next links, tables,
    at 400 px and at 1400 px."""
    assert phone_report[name]["clipped"] == [], f"{name} at 400 px: {phone_report[name]['clipped']}"
    assert report[name]["clipped"] == [], f"{name} at 1400 px: {report[name]['clipped']}"


@pytest.mark.parametrize("name", PAGES + INDEX_PAGES)
def test_wide_boxes_scroll_with_a_cue_at_400px(phone_report, name):
    """Tables, formulas (inline and display) and API signatures wider than a phone's column scroll
    inside their own box, with a visible cue at the edges that have more."""
    r = phone_report[name]
    assert r["uncued"] == [], f"{name} at 400 px: {r['uncued']}"
    assert r["overflow"] == [], f"{name} at 400 px: {r['overflow']}"


#: Smallest text, in CSS px, that a figure may show on a 400 px phone: 8 pt (a CSS pt is 96/72 px).
MIN_FIGURE_TEXT_PX = 8 * 96 / 72


def figure_text_px(image: dict) -> float | None:
    """On-screen size, in CSS px, of the smallest text of a figure image as the browser shows it.

    The book's figures (symbreak.plotting's inline PNGs and symbreak.explorer's frames) declare
    their width at 100 CSS px per figure inch, so the image's dpi is its natural width over its
    width in inches; ``plotting.legible`` keeps every text at least ``MIN_FONT_PT`` points, scaled
    up by the figure's width over the page width when the figure is wider than ``PAGE_WIDTH_IN``.
    The text is that many points at the image's dpi, times the scale at which it is shown.
    ``None`` when the image has no declared width (not a figure of the house style).
    """
    from symbreak import plotting

    if not image["declared"] or not image["natural"]:
        return None
    width_in = image["declared"] / 100.0
    dpi = image["natural"] / width_in
    text_pt = plotting.MIN_FONT_PT / min(1.0, plotting.PAGE_WIDTH_IN / width_in)
    return text_pt / 72.0 * dpi * image["shown"] / image["natural"]


@pytest.mark.parametrize("name", PAGES)
def test_figure_text_is_legible_at_400px(phone_report, name):
    """On a phone every figure shows its smallest text at 8 pt (10.67 CSS px) or more: a wide figure
    keeps a legible width and scrolls sideways in its own box (with a cue) instead of shrinking to
    the column."""
    small = []
    for image in phone_report[name]["images"]:
        if image["logo"] or image["shown"] == 0:  # the logo; a figure inside a folded block
            continue
        px = figure_text_px(image)
        if px is None:
            small.append((image["src"][:60], "no declared width: text size unknown"))
        elif px < MIN_FIGURE_TEXT_PX - 1e-6:
            small.append((image["src"][:60], f"text {px:.1f} px ({image['shown']:.0f} px wide)"))
    assert small == [], f"{name} at 400 px: figures with text under 8 pt ({MIN_FIGURE_TEXT_PX:.2f} px) {small}"


def test_the_figure_text_check_catches_a_shrunk_figure(browser, base_url):
    """Scaled into the phone's column (what the theme does without the book's script and styles),
    the multi-panel figures of the Platonic chapter show text under 8 pt and the check says so; so
    does the figures' former minimum width (text at 8.5 px)."""
    context = browser.new_context(viewport={"width": 400, "height": 860})
    try:
        page, _ = visit(context, f"{base_url}/book/platonic/experiments.html")
        images = [i for i in page.evaluate(INSPECT_JS)["images"] if not i["logo"] and i["shown"]]
        assert images and all(figure_text_px(i) >= MIN_FIGURE_TEXT_PX - 1e-6 for i in images)
        page.evaluate(  # the minimum widths of the former target, text at 8.5 px
            "() => document.querySelectorAll('.bd-article img[data-legible]').forEach(i => i.style.minWidth ="
            " Math.ceil(8.5 / (8 / 72 * 100) * Math.min(parseFloat(i.style.width), 750)) + 'px')"
        )
        former = [figure_text_px(i) for i in page.evaluate(INSPECT_JS)["images"] if not i["logo"] and i["shown"]]
        assert sum(px < MIN_FIGURE_TEXT_PX for px in former) >= 3, former
        page.add_style_tag(content=".bd-article img { min-width: 0 !important; }")
        shrunk = [figure_text_px(i) for i in page.evaluate(INSPECT_JS)["images"] if not i["logo"] and i["shown"]]
        assert sum(px < MIN_FIGURE_TEXT_PX for px in shrunk) >= 3, shrunk
        page.close()
    finally:
        context.close()


@pytest.mark.parametrize("name", PAGES)
def test_punctuation_stays_with_inline_math_at_400px(phone_report, name):
    """At 400 px no full stop or comma after an inline formula starts a line on its own."""
    assert phone_report[name]["orphanPunct"] == [], f"{name} at 400 px: {phone_report[name]['orphanPunct']}"


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


@pytest.mark.parametrize("name", PAGES)
def test_images_load(report, name):
    broken = [i["src"] for i in report[name]["images"] if not i["ok"]]
    assert broken == [], f"{name}: images that did not load {broken}"


@pytest.mark.parametrize("name", PAGES)
def test_images_have_meaningful_alt_text(report, name):
    bad = [
        (i["src"][:60], i["alt"])
        for i in report[name]["images"]
        if not i["logo"] and (not (i["alt"] or "").strip() or PATH_ALT.search((i["alt"] or "").strip()))
    ]
    assert bad == [], f"{name}: images whose alt text is empty or a file path {bad}"


def _ids(path: pathlib.Path, cache={}) -> set[str]:  # noqa: B006 - a per-run cache of parsed pages
    if path not in cache:
        cache[path] = set(re.findall(r'\bid="([^"]+)"', path.read_text(errors="replace")))
    return cache[path]


@pytest.mark.parametrize("name", PAGES)
def test_internal_links_resolve(report, site, name):
    here = site / (name + ".html")
    broken = []
    for href in set(report[name]["links"]):
        parts = urllib.parse.urlsplit(href)
        if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
            continue  # external: not part of the offline site
        target = here if not parts.path else (here.parent / urllib.parse.unquote(parts.path)).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file() or site not in target.parents and target != site:
            broken.append(href)
            continue
        frag = urllib.parse.unquote(parts.fragment)
        if frag and target.suffix == ".html" and frag not in _ids(target):
            broken.append(href)
    assert sorted(broken) == [], f"{name}: internal links that lead nowhere {sorted(broken)}"


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


def test_solutions_open_in_place(report):
    """Clicking an exercise solution's title opens it where it is (the clicks are made in the
    desktop visits, after the page script has read the page)."""
    pages = [name for name in PAGES if report[name]["solutions"]]
    assert pages, "no page with exercise solutions found"
    failures = [f"{name} {f}" for name in pages for f in report[name]["solutionClicks"]]
    assert failures == []


def test_every_explorer_moves(browser, base_url, report):
    with_explorer = {name for name in PAGES if report[name]["explorers"]}
    assert EXPLORER_PAGES <= with_explorer, (
        f"pages without a working explorer: {sorted(EXPLORER_PAGES - with_explorer)}"
    )
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        for name in sorted(with_explorer):
            page, _ = visit(context, f"{base_url}/{name}.html")
            explorers = page.locator(".symbreak-explorer")
            for e in range(explorers.count()):
                ex = explorers.nth(e)
                img = ex.locator("img")
                sliders = ex.locator("input[type=range]")
                assert sliders.count() >= 1, f"{name}: explorer {e + 1} has no slider"
                for s in range(sliders.count()):
                    slider = sliders.nth(s)
                    if slider.get_attribute("max") == "0":
                        continue
                    before = (
                        img.get_attribute("src"),
                        img.get_attribute("alt"),
                        slider.evaluate("e => e.nextElementSibling.textContent"),
                    )
                    slider.scroll_into_view_if_needed()
                    slider.focus()
                    page.keyboard.press("End" if slider.input_value() == "0" else "Home")
                    after = (
                        img.get_attribute("src"),
                        img.get_attribute("alt"),
                        slider.evaluate("e => e.nextElementSibling.textContent"),
                    )
                    assert after[0] != before[0], (
                        f"{name}: slider {s + 1} of explorer {e + 1} does not change the figure"
                    )
                    assert after[1] != before[1] and after[2] != before[2], (
                        f"{name}: alt text / value label not updated"
                    )
                    assert img.evaluate("i => i.complete && i.naturalWidth > 0"), f"{name}: new frame did not load"
            page.close()
    finally:
        context.close()


def test_screenshots_at_400px(phone_report):
    """A phone-width screenshot of every page, for CI's artifacts (``_build/screenshots/``; taken
    in the phone visits)."""
    written = [SCREENSHOTS / (name.replace("/", "--") + ".png") for name in PAGES]
    assert all(p.is_file() and p.stat().st_size > 5_000 for p in written)
    print(f"{len(written)} screenshots in {SCREENSHOTS}")


def test_site_reads_with_the_network_blocked(desktop_visits):
    """The desktop visits refuse every request to anything but the local server: no page asked for
    one, and math still typeset everywhere, the explorers' images loaded, nothing failed."""
    report, outside = desktop_visits
    problems = []
    for name in PAGES:
        r, off = report[name], report[name]["offline"]
        if off["math"] and off["typeset"] < off["math"]:
            problems.append(f"{name}: {off['typeset']} of {off['math']} formulas typeset offline")
        if r["console"] or r["pageerror"]:
            problems.append(f"{name}: errors offline {r['console'] + r['pageerror']}")
        if r["explorers"] and not off["explorerImage"]:
            problems.append(f"{name}: explorer image missing offline")
    assert outside == [], f"the site asked other servers for {sorted(set(outside))[:10]}"
    assert problems == []
