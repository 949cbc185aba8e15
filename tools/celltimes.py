"""The time of every code cell of a page, for planning what to run in class.

Usage: ``python tools/celltimes.py [--full] [--all] book/<chapter>/<page>.md ...``

Each page is executed as ``tests/test_book.py`` executes it (jupytext + nbclient, a plain kernel, in
the page's folder), in quick mode (``BOOK_QUICK=1``) unless ``--full``, with its claim records
written to a temporary folder (the book's records are left alone). A hook in the kernel times every
cell: wall-clock seconds, and CPU seconds of the kernel process (every thread counted, so CPU can
exceed wall on several cores, and a busy machine stretches wall but not CPU). Printed per page: the
total, then one line per cell taking at least 0.2 s wall, and every teaching cell (a cell a reader
sees without a click): its index among the code cells, ``teach`` or ``check`` (collapsed or removed
on the site), wall and CPU seconds, its section heading and its first code line. ``--all`` prints
every cell.

A cell needs the cells above it: in JupyterLab, *Run All Above Selected Cell* first. The simulation
kernels compiled by numba are cached on disk after their first use, so the first page run after an
installation also pays their compilation.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

__all__ = ["time_cells", "main"]

HIDDEN_TAGS = ("hide-input", "remove-input", "hide-cell", "remove-cell")

# The timing hook, run as the first cell: the post hook of the cell that registers it finds no start.
_HOOK = """import time as _t, IPython as _ip
_celltimes = []
def _celltimes_pre(*_a):
    _celltimes.append([-_t.perf_counter(), -_t.process_time()])
def _celltimes_post(*_a):
    if _celltimes:
        _celltimes[-1][0] += _t.perf_counter()
        _celltimes[-1][1] += _t.process_time()
_ip.get_ipython().events.register("pre_run_cell", _celltimes_pre)
_ip.get_ipython().events.register("post_run_cell", _celltimes_post)"""
_REPORT = "import json as _j; print('CELLTIMES' + _j.dumps(_celltimes[:-1]))"


def time_cells(path, *, quick: bool = True, timeout: int = 1800) -> dict:
    """Execute the MyST page ``path`` and time each of its code cells.

    Returns ``{"page", "quick", "wall", "cells": [{"index", "teaching", "heading", "first", "wall",
    "cpu"}, ...]}``: ``wall`` of the page is the whole execution (kernel start included), a cell's
    ``teaching`` is whether it has none of the tags that hide a cell on the site, ``heading`` the
    last Markdown heading above it and ``first`` its first line that is not a comment.
    Raises the execution error of a cell that fails.
    """
    import jupytext
    import nbclient
    import nbformat

    path = pathlib.Path(path).resolve()
    if not path.is_file():
        raise ValueError(f"path must be an existing page, got {path}")
    nb = jupytext.read(path)
    nb.cells.insert(0, nbformat.v4.new_code_cell(_HOOK))
    nb.cells.append(nbformat.v4.new_code_cell(_REPORT))
    env = {
        "BOOK_QUICK": "1" if quick else "0",
        "SYMBREAK_PROGRESS": "0",
        "MPLBACKEND": "Agg",
    }
    backup = {k: os.environ.get(k) for k in (*env, "SYMBREAK_CLAIMS_DIR")}
    with tempfile.TemporaryDirectory() as records:
        os.environ.update(env, SYMBREAK_CLAIMS_DIR=records)
        try:
            start = time.perf_counter()
            client = nbclient.NotebookClient(
                nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
            )
            client.execute()
            wall = time.perf_counter() - start
        finally:
            for k, v in backup.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    times = json.loads(text[text.index("CELLTIMES") + len("CELLTIMES") :])
    cells, heading = [], ""
    for cell in nb.cells[1:-1]:
        if cell.cell_type == "markdown":
            heading = next(
                (ln.lstrip("#").strip() for ln in reversed(cell.source.splitlines()) if ln.startswith("#")), heading
            )
            continue
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        first = next((ln for ln in cell.source.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")
        w, c = times[len(cells)]
        cells.append(
            {
                "index": len(cells),
                "teaching": not any(t in tags for t in HIDDEN_TAGS),
                "heading": heading,
                "first": first.strip(),
                "wall": w,
                "cpu": c,
            }
        )
    return {"page": str(path), "quick": quick, "wall": wall, "cells": cells}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="+", help="MyST pages, e.g. book/dln/index.md")
    parser.add_argument("--full", action="store_true", help="full size instead of quick mode")
    parser.add_argument("--all", action="store_true", help="print every cell")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    results = []
    for page in args.pages:
        res = time_cells(page, quick=not args.full)
        results.append(res)
        cells = res["cells"]
        print(
            f"== {page}: {res['wall']:.1f} s wall in all (kernel start included), cells "
            f"{sum(c['wall'] for c in cells):.1f} s wall, {sum(c['cpu'] for c in cells):.1f} s CPU"
        )
        for c in cells:
            if args.all or c["teaching"] or c["wall"] >= 0.2:
                kind = "teach" if c["teaching"] else "check"
                print(
                    f"  {c['index']:3d} {kind}  {c['wall']:6.1f} s  {c['cpu']:6.1f} s CPU  "
                    f"[{c['heading'][:40]}] {c['first'][:60]}"
                )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
