"""tools/celltimes.py: the per-cell times the teaching guide plans lectures with."""

from __future__ import annotations

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import celltimes  # noqa: E402  (tools/celltimes.py)

PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
# A page

```{code-cell} ipython3
import os
import time
```

## Slow

```{code-cell} ipython3
# a comment first
time.sleep(0.3)
quick = os.environ["BOOK_QUICK"]
```

```{code-cell} ipython3
:tags: [hide-input]

assert quick == "1"
```
"""


def test_times_each_cell_with_its_section_and_kind(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(PAGE)
    res = celltimes.time_cells(page)
    cells = res["cells"]
    assert [c["index"] for c in cells] == [0, 1, 2]
    assert [c["teaching"] for c in cells] == [True, True, False]
    assert [c["heading"] for c in cells] == ["A page", "Slow", "Slow"]
    assert cells[1]["first"] == "time.sleep(0.3)"
    assert cells[1]["wall"] >= 0.3 > cells[1]["cpu"]  # sleeping takes time, not CPU
    assert all(c["wall"] < 0.3 for c in (cells[0], cells[2]))
    assert res["quick"] and res["wall"] >= sum(c["wall"] for c in cells)


def test_a_failing_cell_raises(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(PAGE.replace('assert quick == "1"', "raise RuntimeError('boom')"))
    with pytest.raises(Exception, match="boom"):
        celltimes.time_cells(page)


def test_a_missing_page_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="path"):
        celltimes.time_cells(tmp_path / "nope.md")
