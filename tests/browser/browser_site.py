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
  // TeX that MathJax did not typeset: in the title and in every text node outside code and math.
  // Claim statements (the report's table) and docstrings (the API page) write formulas as plain
  // Unicode text by design (they are read in terminals and in claims.json too), with brace groups
  // such as σ_i^{2/N}; there only TeX commands and dollar delimiters count as leaked TeX.
  const texPattern = /\\[A-Za-z]{2,}|\\[()\[\]{}|]|\$\$|\$[^$\s][^$]*\$|\^\{|_\{/;
  const texCommands = /\\[A-Za-z]{2,}|\\[()\[\]{}|]|\$\$|\$[^$\s][^$]*\$/;
  const plainMath = 'table.claims-table, dl.py';
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
  // Display equations: either they fit, or they scroll horizontally with a visible cue.
  document.querySelectorAll('div.math').forEach((div, i) => {
    const box = div.getBoundingClientRect();
    if (box.width === 0) return;  // inside a folded block
    const mjx = div.querySelector('mjx-container');
    if (!mjx) { out.overflow.push({i, id: div.id, problem: 'not typeset'}); return; }
    const m = mjx.getBoundingClientRect();
    const style = getComputedStyle(mjx);
    const clippedByDiv = m.right > box.right + 1 || m.left < box.left - 1 ||
                         (div.scrollWidth > div.clientWidth + 1 && getComputedStyle(div).overflowX === 'hidden');
    const scrolls = mjx.scrollWidth > mjx.clientWidth + 1;
    const cue = /gradient/.test(style.backgroundImage) && ['auto', 'scroll'].includes(style.overflowX);
    if (clippedByDiv) out.overflow.push({i, id: div.id, problem: 'cut off by its container',
                                         width: Math.round(m.width), container: Math.round(box.width)});
    else if (scrolls && !cue) out.overflow.push({i, id: div.id, problem: 'overflows without a scroll cue',
                                                 scrollWidth: mjx.scrollWidth, clientWidth: mjx.clientWidth});
  });
  document.querySelectorAll('img').forEach(img => out.images.push({
    src: img.getAttribute('src').slice(0, 120), ok: img.complete && img.naturalWidth > 0,
    alt: img.getAttribute('alt'), inExplorer: !!img.closest('.symbreak-explorer'),
    logo: !!img.closest('.navbar-brand, .sidebar-brand, .logo')}));
  document.querySelectorAll('a[href]').forEach(a => out.links.push(a.getAttribute('href')));
  return out;
}
"""

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
