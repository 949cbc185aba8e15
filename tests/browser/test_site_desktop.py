"""The built site in headless Chromium at 1400 px: every page of the table of contents, read once
by the session's desktop visits (the ``report`` fixture, with every request to anything but the
local server refused), and what those visits did (the solution clicks, the offline check), plus the
explorers moved by hand.

``make browser`` runs this after ``make book``; it is excluded from ``make test`` (marker ``browser``).
Every test that reads the desktop visits lives in this module (see ``conftest.py``).
"""

from __future__ import annotations

import pathlib
import re
import urllib.parse

import pytest
from browser_site import EXPLORER_PAGES, toc_pages, visit

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


@pytest.mark.parametrize("name", PAGES)
def test_formulas_paint_no_background(report, name):
    """No formula has a painted background: inside a tinted theorem or exercise box an opaque one
    showed as a white patch behind every inline formula."""
    covers = report[name]["mathCovers"]
    assert covers == [], f"{name}: {len(covers)} formulas with a background, e.g. {covers[:3]}"


@pytest.mark.parametrize("name", PAGES)
def test_inline_formulas_that_fit_their_line_do_not_scroll_at_1400px(report, name):
    """Only an inline formula wider than its line scrolls (and fades at its edge): MathJax's glyphs
    overhang their box by up to ~30 px, which once marked short formulas such as |x| < 1/2 as
    scrolling, their ends faded."""
    assert report[name]["needlessScroll"] == [], f"{name} at 1400 px: {report[name]['needlessScroll'][:5]}"


@pytest.mark.parametrize("name", PAGES)
def test_nothing_is_cut_off_at_1400px(report, name):
    """No content sticks out of a box that hides it: inline math, the previous/next links, tables."""
    assert report[name]["clipped"] == [], f"{name} at 1400 px: {report[name]['clipped']}"


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
