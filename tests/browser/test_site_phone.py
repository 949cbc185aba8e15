"""The built site in headless Chromium at 400 px (a phone held upright): every page of the table of
contents and the indexes, read once by the session's phone visits (the ``phone_report`` fixture,
which also takes the screenshots), and the check that a shrunk figure's text is caught.

``make browser`` runs this after ``make book``; it is excluded from ``make test`` (marker ``browser``).
Every test that reads the phone visits lives in this module (see ``conftest.py``).
"""

from __future__ import annotations

import pytest
from browser_site import INDEX_PAGES, INSPECT_JS, SCREENSHOTS, toc_pages, visit

pytestmark = pytest.mark.browser

PAGES = toc_pages()

#: Smallest text, in CSS px, that a figure may show on a 400 px phone: 8 pt (a CSS pt is 96/72 px).
MIN_FIGURE_TEXT_PX = 8 * 96 / 72


@pytest.mark.parametrize("name", PAGES + INDEX_PAGES)
def test_page_does_not_scroll_sideways_at_400px(phone_report, name):
    """On a phone the page body never scrolls horizontally (long API signatures, inline code, the
    general index's two columns of long entries)."""
    assert phone_report[name]["sideways"] is None, f"{name} at 400 px: {phone_report[name]['sideways']}"


@pytest.mark.parametrize("name", PAGES)
def test_inline_formulas_that_fit_their_line_do_not_scroll_at_400px(phone_report, name):
    """The same at 400 px (a phone held upright)."""
    assert phone_report[name]["needlessScroll"] == [], f"{name} at 400 px: {phone_report[name]['needlessScroll'][:5]}"


@pytest.mark.parametrize("name", PAGES)
def test_nothing_is_cut_off_at_400px(phone_report, name):
    """The same at 400 px (a phone held upright)."""
    assert phone_report[name]["clipped"] == [], f"{name} at 400 px: {phone_report[name]['clipped']}"


@pytest.mark.parametrize("name", PAGES + INDEX_PAGES)
def test_wide_boxes_scroll_with_a_cue_at_400px(phone_report, name):
    """Tables, formulas (inline and display) and API signatures wider than a phone's column scroll
    inside their own box, with a visible cue at the edges that have more."""
    r = phone_report[name]
    assert r["uncued"] == [], f"{name} at 400 px: {r['uncued']}"
    assert r["overflow"] == [], f"{name} at 400 px: {r['overflow']}"


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


def test_screenshots_at_400px(phone_report):
    """A phone-width screenshot of every page, for CI's artifacts (``_build/screenshots/``; taken
    in the phone visits)."""
    written = [SCREENSHOTS / (name.replace("/", "--") + ".png") for name in PAGES]
    assert all(p.is_file() and p.stat().st_size > 5_000 for p in written)
    print(f"{len(written)} screenshots in {SCREENSHOTS}")
