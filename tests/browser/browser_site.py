"""What the browser suite needs besides its fixtures: where the site and the browser are, the
pages of the table of contents, and the script that inspects a loaded page."""

from __future__ import annotations

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import toc  # noqa: E402  (tools/toc.py, the one walker of _toc.yml)

SITE = pathlib.Path(os.environ.get("BOOK_SITE", ROOT / "_build" / "html")).resolve()
SCREENSHOTS = pathlib.Path(os.environ.get("BOOK_SCREENSHOTS", SITE.parent / "screenshots")).resolve()
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
#: Seconds a page may take to load and typeset (generous: CI machines are often busy).
TIMEOUT_S = float(os.environ.get("BROWSER_TIMEOUT_S", "120"))

#: The flags that let Chromium run headless in a container with a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

#: Pages Sphinx generates outside the table of contents that readers reach from the navigation.
INDEX_PAGES = ["genindex", "py-modindex"]

#: Pages whose explorer must move on the static site.
EXPLORER_PAGES = {"book/autoencoder/sharpness-relu", "book/dln/equilibrium", "book/platonic/experiments"}


def toc_pages() -> list[str]:
    """Every page of ``_toc.yml``, in reading order (docnames such as ``book/dln/entropy``)."""
    return toc.toc_files(ROOT)


# The script that inspects a loaded page. It returns plain data; the tests assert on it.
INSPECT_JS = r"""
() => {
  const out = {title: document.title, tex: [], mathErrors: [], overflow: [], images: [], links: [],
               explorers: document.querySelectorAll('.symbreak-explorer').length,
               solutions: document.querySelectorAll('.solution').length,
               displayMath: document.querySelectorAll('div.math').length,
               typeset: document.querySelectorAll('mjx-container').length,
               mathScript: !!document.querySelector('script[src*="mathjax"]')};
  // TeX that MathJax did not typeset: in the title and in every text node outside code and math,
  // the report's claims tables included (their statements typeset what they write between $…$;
  // brace groups such as S^{1/2} or W_{i+1} left in their text reach readers raw). Docstrings (the
  // API page) write formulas as plain Unicode text by design, with brace groups such as
  // σ_i^{2/N}; there only TeX commands and dollar delimiters count as leaked TeX.
  const texPattern = /\\[A-Za-z]{2,}|\\[()\[\]{}|]|\$\$|\$[^$\s][^$]*\$|\^\{|_\{/;
  const texCommands = /\\[A-Za-z]{2,}|\\[()\[\]{}|]|\$\$|\$[^$\s][^$]*\$/;
  const plainMath = 'dl.py';
  if (texPattern.test(document.title)) out.tex.push('title: ' + document.title);
  const skip = 'script,style,pre,code,kbd,samp,textarea,mjx-container,.highlight,.MathJax';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip)) continue;
    const text = n.textContent;
    const m = text.match(el.closest(plainMath) ? texCommands : texPattern);
    if (m) out.tex.push(text.trim().slice(Math.max(0, m.index - 40), m.index + 60));
  }
  document.querySelectorAll('mjx-merror, [data-mjx-error]').forEach(e =>
    out.mathErrors.push(e.getAttribute('data-mjx-error') || e.textContent));
  // Display equations: either they fit, or they scroll horizontally with a visible cue. wideMath
  // lists every one that does not fit (on a desktop each must: the tests allow scrolling on phones).
  out.wideMath = [];
  document.querySelectorAll('div.math').forEach((div, i) => {
    const box = div.getBoundingClientRect();
    if (box.width === 0) return;  // inside a folded block
    const mjx = div.querySelector('mjx-container');
    if (!mjx) { out.overflow.push({i, id: div.id, problem: 'not typeset'}); return; }
    const m = mjx.getBoundingClientRect();
    const style = getComputedStyle(mjx);
    const clippedByDiv = m.right > box.right + 1 || m.left < box.left - 1 ||
                         (div.scrollWidth > div.clientWidth + 1 && getComputedStyle(div).overflowX === 'hidden');
    const scrolls = mjx.scrollWidth > mjx.clientWidth + 4;  // MathJax's glyphs overhang by a few px
    const cue = /gradient/.test(style.backgroundImage + ' ' + (style.maskImage || '') + ' ' + (style.webkitMaskImage || ''))
                && ['auto', 'scroll'].includes(style.overflowX);
    if (scrolls) out.wideMath.push({i, id: div.id, scrollWidth: mjx.scrollWidth, clientWidth: mjx.clientWidth,
                                    before: (div.previousElementSibling ? div.previousElementSibling.textContent : '')
                                            .trim().replace(/\s+/g, ' ').slice(-60)});
    if (clippedByDiv) out.overflow.push({i, id: div.id, problem: 'cut off by its container',
                                         width: Math.round(m.width), container: Math.round(box.width)});
    else if (scrolls && !cue) out.overflow.push({i, id: div.id, problem: 'overflows without a scroll cue',
                                                 scrollWidth: mjx.scrollWidth, clientWidth: mjx.clientWidth});
  });
  // The page itself never scrolls sideways: whatever is wider than the column scrolls in its own box.
  const root = document.documentElement;
  out.sideways = root.scrollWidth > root.clientWidth + 1 ? {scrollWidth: root.scrollWidth, clientWidth: root.clientWidth,
    widest: [...document.querySelectorAll('.bd-main *')].filter(e => {
      const r = e.getBoundingClientRect();
      if (r.width === 0 || r.right <= root.clientWidth + 1) return false;
      for (let a = e.parentElement; a && a !== document.body; a = a.parentElement)
        if (getComputedStyle(a).overflowX !== 'visible') return false;
      return true;
    }).slice(0, 5).map(e => e.tagName.toLowerCase() + '.' + [...e.classList].join('.') + ': ' +
                        (e.textContent || '').trim().slice(0, 60))} : null;
  // Nothing visible is cut off: no element sticks out of an ancestor that hides its overflow
  // (inline math, the footer's links, a table cell...). MathJax's hidden speech copy and the
  // closed side drawers are not content.
  out.clipped = [];
  const seenClip = new Set();
  document.querySelectorAll('.bd-main *, footer *').forEach(e => {
    if (e.closest('mjx-assistive-mml, .bd-sidebar-primary, .bd-sidebar-secondary, script, style')) return;
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return;
    let a = e.parentElement;
    while (a && a !== document.body && getComputedStyle(a).overflowX === 'visible') a = a.parentElement;
    if (!a || a === document.body || !['hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return;
    // a cut that ends in an ellipsis is a visible cue, not a loss: the report's one-line rows, which
    // open to their full text when clicked (_static/claims-report.js)
    if (getComputedStyle(a).textOverflow === 'ellipsis' && a.closest('table.claims-rows')) return;
    const box = a.getBoundingClientRect();
    if (box.width === 0) return;
    if (r.right > box.right + 2 || r.left < box.left - 2) {
      const key = a.tagName + '.' + [...a.classList].join('.');
      if (seenClip.has(key + (a.textContent || '').slice(0, 40))) return;
      seenClip.add(key + (a.textContent || '').slice(0, 40));
      out.clipped.push(key.toLowerCase() + ' cuts off ' + e.tagName.toLowerCase() + ': ' +
                       (a.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 60));
    }
  });
  // Boxes wider than the column (tables, formulas, API signatures) scroll with a visible cue: a
  // gradient at the edges (background shadows or a fading mask).
  out.uncued = [];
  document.querySelectorAll('.bd-article table, span.math, div.math mjx-container, dl.py > dt.sig, div.figure-scroll').forEach(e => {
    const r = e.getBoundingClientRect();
    if (r.width === 0) return;
    let s = e;
    if (e.tagName === 'TABLE') {  // the table's scroll box
      s = e.parentElement;
      while (s && s !== document.body && !['auto', 'scroll'].includes(getComputedStyle(s).overflowX)) s = s.parentElement;
      if (!s || s === document.body) {
        if (r.right > e.parentElement.getBoundingClientRect().right + 2)
          out.uncued.push('table wider than the column outside a scroll box: ' + (e.textContent || '').trim().slice(0, 50));
        return;
      }
    }
    if (e.matches('span.math')) {
      // an inline formula is wider than its line when its typeset box is wider than the span that
      // the line allows; its glyphs' overhang beyond that box (up to ~30 px) shows and is no overflow
      const c = e.querySelector('mjx-container');
      if (!c || c.getBoundingClientRect().width <= e.clientWidth + 1) return;
    } else if (s.scrollWidth <= s.clientWidth + (e.matches('mjx-container') ? 4 : 1)) return;  // (glyph overhang)
    const st = getComputedStyle(s);
    const scrolls = ['auto', 'scroll'].includes(st.overflowX);
    const cue = /gradient/.test(st.backgroundImage + ' ' + (st.maskImage || '') + ' ' + (st.webkitMaskImage || ''));
    if (!scrolls || !cue) out.uncued.push(s.tagName.toLowerCase() + '.' + [...s.classList].join('.') +
      (scrolls ? ' scrolls without a cue: ' : ' overflows without scrolling: ') + (e.textContent || '').trim().slice(0, 50));
  });
  // An inline formula that fits its line is not marked to scroll: a scroll box fades its right end.
  out.needlessScroll = [];
  document.querySelectorAll('.bd-article span.math.math-scroll').forEach(m => {
    const c = m.querySelector('mjx-container');
    if (c && m.getBoundingClientRect().width && c.getBoundingClientRect().width <= m.clientWidth + 1)
      out.needlessScroll.push((m.textContent || '').trim().slice(0, 40));
  });
  // Formulas paint nothing behind themselves: an opaque cover (the old scroll-cue technique) showed
  // as a white patch inside the tinted theorem and exercise boxes.
  out.mathCovers = [];
  document.querySelectorAll('.bd-article span.math, .bd-article div.math mjx-container').forEach(m => {
    const st = getComputedStyle(m);
    if (st.backgroundImage !== 'none' || !/rgba\(0, 0, 0, 0\)|transparent/.test(st.backgroundColor))
      out.mathCovers.push((m.textContent || '').trim().slice(0, 40));
  });
  // Punctuation right after an inline formula stays on the formula's line (a full stop that starts
  // the next line on its own reads as a stray mark).
  out.orphanPunct = [];
  document.querySelectorAll('.bd-article span.math').forEach(m => {
    const box = m.getBoundingClientRect();
    const next = m.nextSibling;
    if (!box.width || !next || next.nodeType !== 3 || !/^[.,;:!?)\]]/.test(next.textContent)) return;
    const range = document.createRange();
    range.setStart(next, 0);
    range.setEnd(next, 1);
    const p = range.getBoundingClientRect();
    if (p.width && p.left < box.right - 2 && p.top >= box.bottom - 2)
      out.orphanPunct.push((m.textContent || '').trim().slice(0, 40) + ' | ' + next.textContent.slice(0, 20));
  });
  document.querySelectorAll('img').forEach(img => out.images.push({
    src: img.getAttribute('src').slice(0, 120), ok: img.complete && img.naturalWidth > 0,
    declared: parseFloat(img.style.width) || null, natural: img.naturalWidth,
    shown: img.getBoundingClientRect().width,
    alt: img.getAttribute('alt'), inExplorer: !!img.closest('.symbreak-explorer'),
    logo: !!img.closest('.navbar-brand, .sidebar-brand, .logo')}));
  document.querySelectorAll('a[href]').forEach(a => out.links.push(a.getAttribute('href')));
  return out;
}
"""

#: What the offline check reads on a page: its formulas, those MathJax typeset, and whether the
#: first explorer's image (if any) loaded.
OFFLINE_JS = """() => ({
  math: document.querySelectorAll('div.math, span.math').length,
  typeset: document.querySelectorAll('mjx-container').length,
  explorerImage: (i => i === null ? null : i.complete && i.naturalWidth > 0)(
    document.querySelector('.symbreak-explorer img')),
})"""

MATHJAX_READY_JS = """
() => !document.querySelector('script[src*="mathjax"]') ||
      (window.MathJax && MathJax.startup && MathJax.startup.promise
       && MathJax.startup.promise.then(() => true))
"""


def visit(context, url: str, *, timeout_ms: float = TIMEOUT_S * 1000) -> tuple[object, dict]:
    """Open ``url`` in a new tab, wait for MathJax, return the page and what went wrong on the way."""
    page = context.new_page()
    events = {"console": [], "pageerror": [], "failed": [], "http": []}
    page.on("console", lambda m: events["console"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: events["pageerror"].append(str(e)))
    page.on("requestfailed", lambda r: events["failed"].append(f"{r.url} ({r.failure})"))
    page.on("response", lambda r: events["http"].append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(url, wait_until="load", timeout=timeout_ms)
    page.wait_for_function(MATHJAX_READY_JS, timeout=timeout_ms)
    return page, events
