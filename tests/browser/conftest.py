"""Fixtures of the browser suite: the built site served on localhost, headless Chromium, and one
visit of every page whose findings the tests read.

Run with ``make browser`` (after ``make book``), or ``pytest -m browser tests/browser -n 2 --dist
loadfile`` (another distribution, such as the project's default ``--dist worksteal``, makes every
worker visit the whole site).
``BOOK_SITE`` names the built site (default ``_build/html``); ``CHROMIUM`` the browser binary
(default ``/usr/bin/chromium``, Debian's package). The suite never downloads a browser.
"""

from __future__ import annotations

import functools
import http.server
import os
import pathlib
import threading
import urllib.parse

import pytest
from browser_site import (
    CHROMIUM,
    CHROMIUM_ARGS,
    INDEX_PAGES,
    INSPECT_JS,
    OFFLINE_JS,
    SCREENSHOTS,
    SITE,
    toc_pages,
    visit,
)


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


def _local_only(outside: list):
    """A route handler that lets requests to the local server (and ``data:`` URLs) through and
    aborts every other, recording its URL in ``outside``."""

    def route(r):
        host = urllib.parse.urlsplit(r.request.url).hostname
        if host in {"127.0.0.1", "localhost"} or r.request.url.startswith("data:"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    return route


def _click_solutions(page) -> list[str]:
    """Click every exercise solution's title on a loaded page; what went wrong (a click that left
    the page, a solution that did not open)."""
    failures = []
    titles = page.locator(".solution > .admonition-title")
    for i in range(titles.count()):
        body = page.locator(".solution").nth(i).locator("> :not(.admonition-title)").first
        url = page.url
        titles.nth(i).scroll_into_view_if_needed()
        titles.nth(i).click()
        page.wait_for_timeout(150)
        if page.url != url:
            failures.append(f"solution {i + 1}: the click went to {page.url}")
            page.goto(url)
            page.wait_for_load_state("load")
        elif not body.is_visible():
            failures.append(f"solution {i + 1}: did not open")
    return failures


@pytest.fixture(scope="session")
def desktop_visits(browser, base_url) -> tuple[dict, list]:
    """Every page of the table of contents visited once at 1400 px, with every request to anything
    but the local server refused (the site must read offline): per page, what the page script
    found, the formulas typeset against those in the page, whether the first explorer's image
    loaded, and, after all that was read, what clicking each exercise solution did; and the errors
    (console, page, failed requests, HTTP) from the page's load until it was closed, the clicks
    included. Returns the pages and the URLs of the refused requests."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    outside: list = []
    context.route("**/*", _local_only(outside))
    pages = {}
    try:
        for name in toc_pages():
            page, events = visit(context, f"{base_url}/{name}.html")
            found = page.evaluate(INSPECT_JS)
            found.update(events)
            found["offline"] = page.evaluate(OFFLINE_JS)
            try:  # a browser error here fails test_solutions_open_in_place, not every desktop check
                found["solutionClicks"] = _click_solutions(page) if found["solutions"] else []
            except Exception as exc:  # noqa: BLE001 - reported by the test that reads it
                found["solutionClicks"] = [f"clicking the solutions raised {exc!r}"]
            pages[name] = found
            page.close()
    finally:
        context.close()
    return pages, outside


@pytest.fixture(scope="session")
def report(desktop_visits) -> dict:
    """What :func:`desktop_visits` found on each page, by page name: what the tests check."""
    return desktop_visits[0]


@pytest.fixture(scope="session")
def phone_report(browser, base_url):
    """Every page of the table of contents, and the general and module indexes, visited once at
    400 px (a phone held upright); after the page script has read a page of the table of contents,
    a screenshot of the whole page for CI's artifacts (``_build/screenshots/``)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 400, "height": 860}, device_scale_factor=1)
    pages = {}
    toc = toc_pages()
    try:
        for name in toc + INDEX_PAGES:
            page, _ = visit(context, f"{base_url}/{name}.html")
            pages[name] = page.evaluate(INSPECT_JS)
            if name in toc:
                path = SCREENSHOTS / (name.replace("/", "--") + ".png")
                try:  # a failed screenshot fails test_screenshots_at_400px (no file), not every phone check
                    page.screenshot(path=str(path), full_page=True)
                except Exception:  # noqa: BLE001
                    path.unlink(missing_ok=True)
            page.close()
    finally:
        context.close()
    return pages


#: The session fixtures that visit every page of the site, each about a minute on the reference
#: machine. ``make browser`` runs the test modules side by side (pytest-xdist, ``--dist loadfile``);
#: a fixture of session scope is set up in every worker that runs a test reading it, so all the
#: tests that read one visit live in one module, and each visit is made once.
_VISITS = ("desktop_visits", "phone_report")


#: Tests that read a visit also read from another module, with the message their setup fails with.
_MISPLACED: dict = {}


def pytest_collection_modifyitems(config, items):
    homes: dict = {}
    for item in items:
        for visit_ in _VISITS:
            if visit_ in getattr(item, "fixturenames", ()):
                homes.setdefault(visit_, set()).add(item.nodeid.split("::")[0])
    for visit_, modules in homes.items():
        if len(modules) > 1:
            message = (
                f"tests in {sorted(modules)} read the session fixture {visit_!r}: keep its readers in one module, "
                "or make browser (pytest-xdist --dist loadfile) visits the whole site once per worker"
            )
            for item in items:
                if visit_ in getattr(item, "fixturenames", ()):
                    _MISPLACED[item.nodeid] = message


def pytest_runtest_setup(item):
    """A test that reads a visit from a second module fails, before any visit, with the reason
    (raised at collection instead, the error would be lost inside an xdist worker's crash report)."""
    if item.nodeid in _MISPLACED:
        pytest.fail(_MISPLACED[item.nodeid], pytrace=False)
