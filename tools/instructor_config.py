"""The configuration of the instructor's build: the book with every exercise and no solution.

``make book SOLUTIONS=hidden`` builds the site from the book's own ``_config.yml`` with one change,
sphinx-exercise's ``hide_solutions: true``, which drops every ``solution`` directive from the output.
Jupyter Book 1.x reads one configuration file (``--config``) and resolves ``local_extensions``
relative to it, so this script writes a copy of ``_config.yml`` with that option set, the local
extension paths made absolute, and the execution cache pointed at the one ``make book`` fills
(``_build/.jupyter_cache``): the pages' code is the same, so nothing runs again after ``make book``.

Run as a script: ``python tools/instructor_config.py [--root DIR] [--output FILE]`` (default output
``_build/instructor/_config.yml``). It depends on PyYAML and Jupyter Book.

The hand-out must not lead to the solutions another way, so the configuration also drops what links
to the pages' sources: the download button (``.md``/``.ipynb`` with the solutions), the copied
sources under ``_sources`` and their links, the repository and issues buttons and the launch
(Binder) buttons.
"""

from __future__ import annotations

import argparse
import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]

__all__ = ["instructor_config", "write_instructor_config"]


def instructor_config(root: pathlib.Path | str = ROOT) -> dict:
    """The book's ``_config.yml`` under ``root`` with solutions hidden (see the module docstring)."""
    root = pathlib.Path(root).resolve()
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    sphinx = config.setdefault("sphinx", {})
    sphinx_config = sphinx.setdefault("config", {})
    sphinx_config["hide_solutions"] = True
    # no way back to the sources, which hold the solutions
    config.pop("launch_buttons", None)
    html = config.setdefault("html", {})
    for button in ("use_repository_button", "use_issues_button", "use_edit_page_button", "use_download_button"):
        html[button] = False
    sphinx_config["html_copy_source"] = False
    sphinx_config["html_show_sourcelink"] = False
    # Jupyter Book does not pass `use_download_button` to the theme: give the theme options it would
    # build from this configuration, with that button off
    from jupyter_book.config import yaml_to_sphinx

    theme = yaml_to_sphinx({key: value for key, value in config.items() if key != "sphinx"})[0]["html_theme_options"]
    sphinx_config["html_theme_options"] = {**theme, "use_download_button": False}
    local = sphinx.get("local_extensions") or {}
    sphinx["local_extensions"] = {name: str((root / path).resolve()) for name, path in local.items()}
    execute = config.setdefault("execute", {})
    if not execute.get("cache"):
        execute["cache"] = str(root / "_build" / ".jupyter_cache")
    config["title"] = f"{config.get('title', 'The book')} (exercises without solutions)"
    return config


def write_instructor_config(root: pathlib.Path | str = ROOT, output: pathlib.Path | str | None = None) -> pathlib.Path:
    """Write :func:`instructor_config` to ``output`` (default ``<root>/_build/instructor/_config.yml``)."""
    root = pathlib.Path(root).resolve()
    out = pathlib.Path(output) if output is not None else root / "_build" / "instructor" / "_config.yml"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = "# Written by tools/instructor_config.py from _config.yml: do not edit.\n"
    out.write_text(
        text + yaml.safe_dump(instructor_config(root), sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(ROOT), help="the book's root folder (holding _config.yml)")
    parser.add_argument("--output", default=None, help="where to write (default _build/instructor/_config.yml)")
    args = parser.parse_args(argv)
    print(write_instructor_config(args.root, args.output))


if __name__ == "__main__":
    main()
