"""Fixtures of the browser suite: the built site served on localhost, headless Chromium, and one
visit of every page whose findings the tests read.

Run with ``make browser`` (after ``make book``), or ``pytest -m browser tests/browser``.
``BOOK_SITE`` names the built site (default ``_build/html``); ``CHROMIUM`` the browser binary
(default ``/usr/bin/chromium``, Debian's package). The suite never downloads a browser.
"""

from __future__ import annotations

import functools
import http.server
import os
import pathlib
import threading

import pytest
from browser_site import CHROMIUM, CHROMIUM_ARGS, INDEX_PAGES, INSPECT_JS, SITE, toc_pages, visit


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D102 - keep the test output clean
        pass


@pytest.fixture(scope="session")
def site() -> pathlib.Path:
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE}: run `make book` first (or set BOOK_SITE)", pytrace=False)
    return SITE


@pytest.fixture(scope="session")
def base_url(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"no Chromium at {CHROMIUM}: apt-get install -y chromium chromium-driver (or set CHROMIUM)", pytrace=False
        )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def report(browser, base_url):
    """Every page of the table of contents visited once at 1400 px: what the tests check."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pages = {}
    try:
        for name in toc_pages():
            page, events = visit(context, f"{base_url}/{name}.html")
            found = page.evaluate(INSPECT_JS)
            found.update(events)
            pages[name] = found
            page.close()
    finally:
        context.close()
    return pages


@pytest.fixture(scope="session")
def phone_report(browser, base_url):
    """Every page of the table of contents, and the general and module indexes, visited once at
    400 px (a phone held upright)."""
    context = browser.new_context(viewport={"width": 400, "height": 860})
    pages = {}
    try:
        for name in toc_pages() + INDEX_PAGES:
            page, events = visit(context, f"{base_url}/{name}.html")
            pages[name] = page.evaluate(INSPECT_JS)
            page.close()
    finally:
        context.close()
    return pages
