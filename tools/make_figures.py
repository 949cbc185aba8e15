"""Execute every page of the book at full size and collect the figures it saves.

Usage: ``python tools/make_figures.py --output figures [--quick] [pattern ...]``
(``make figures`` runs it). Each page is read with jupytext and executed with nbclient in its own
folder; pages save their figures through ``symbreak.plotting.save_figure``, which writes into the
folder named by ``SYMBREAK_FIGURES``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import jupytext
import nbclient

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from toc import ROOT, toc_pages  # noqa: E402  (the one walker of _toc.yml)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="figures", help="folder for the PNG files")
    parser.add_argument("--quick", action="store_true", help="quick mode (BOOK_QUICK=1)")
    parser.add_argument("patterns", nargs="*", help="only pages whose path contains one of these")
    args = parser.parse_args()
    out = pathlib.Path(args.output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ["SYMBREAK_FIGURES"] = str(out)
    os.environ["BOOK_QUICK"] = "1" if args.quick else "0"
    os.environ.setdefault("MPLBACKEND", "Agg")
    for page in toc_pages():
        if args.patterns and not any(p in str(page) for p in args.patterns):
            continue
        nb = jupytext.read(page)
        if not any(c.cell_type == "code" for c in nb.cells):
            continue
        t = time.perf_counter()
        nbclient.NotebookClient(
            nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(page.parent)}}
        ).execute()
        print(f"{page.relative_to(ROOT)}: {time.perf_counter() - t:.1f} s")
    print(f"figures written to {out}: {len(list(out.glob('*.png')))} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
