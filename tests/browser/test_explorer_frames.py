"""The explorers' frames on the built site: at least 200 dpi (as sharp as the book's figures),
and each explorer page, with its frames and figures, under 3 MB.
"""

from __future__ import annotations

import base64
import io
import re
import urllib.parse

import pytest
from browser_site import EXPLORER_PAGES

pytestmark = pytest.mark.browser

EXPLORER = re.compile(r'<div class="symbreak-explorer" id="[^"]+" data-dpi="([\d.]+)" data-colors="(\d+)">')


@pytest.mark.parametrize("name", sorted(EXPLORER_PAGES))
def test_explorer_frames_are_200_dpi_and_the_page_under_3_mb(site, name):
    from PIL import Image

    page = site / (name + ".html")
    html = page.read_text(errors="replace")
    found = EXPLORER.findall(html)
    assert found, f"{name}: no explorer with a recorded resolution"
    assert all(float(dpi) >= 200 for dpi, _ in found), f"{name}: frames at {found}"
    # the frames are what the attribute says: a frame's pixel width is its CSS width (100 px per
    # inch) times dpi/100
    width = int(
        re.search(r'class="symbreak-explorer".*?<img src="[^"]*" alt="[^"]*" style="width:(\d+)px', html, re.S)[1]
    )
    first = re.search(r'"frames":\{"[^"]+":"data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    if first:
        img = Image.open(io.BytesIO(base64.b64decode(first[1])))
        assert abs(img.size[0] - width * float(found[0][0]) / 100) <= 2, (img.size, width, found)
        assert img.mode == "P"
    images = {
        (page.parent / urllib.parse.unquote(src)).resolve()
        for src in re.findall(r'<img[^>]+src="([^"]+)"', html)
        if not src.startswith(("data:", "http"))
    }
    total = page.stat().st_size + sum(p.stat().st_size for p in images if p.is_file())
    print(f"{name}: {total / 1e6:.2f} MB with its figures; explorers {found}")
    assert total < 3_000_000, f"{name}: {total / 1e6:.2f} MB"
