"""The book's table of contents: every page named in ``_toc.yml``, in reading order.

The one walker of ``_toc.yml`` that the tests (``tests/test_book.py``), the figure builder
(``tools/make_figures.py``) and CI (``.ci/run``) share. It depends only on PyYAML, not on
``symbreak``. Run as a script it prints one page per line: ``python tools/toc.py [--root DIR]``.
"""

from __future__ import annotations

import argparse
import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]

__all__ = ["toc_files", "toc_pages"]


def toc_files(root: pathlib.Path | str = ROOT) -> list[str]:
    """Every ``root``/``file`` entry of ``_toc.yml`` (paths without the ``.md`` suffix), in order."""
    toc = yaml.safe_load((pathlib.Path(root) / "_toc.yml").read_text())
    names = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                names.append(node["file"])
            for key, value in node.items():
                if key != "root":
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk({k: v for k, v in toc.items() if k != "root"})
    return names


def toc_pages(root: pathlib.Path | str = ROOT) -> list[pathlib.Path]:
    """The page files (``.md``) of :func:`toc_files`."""
    return [pathlib.Path(root) / (name + ".md") for name in toc_files(root)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="print the pages of _toc.yml, one per line")
    parser.add_argument("--root", default=str(ROOT), help="the book's root folder")
    for name in toc_files(parser.parse_args().root):
        print(name)
