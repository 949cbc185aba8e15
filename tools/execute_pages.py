"""Execute the book's pages side by side and fill Jupyter Book's execution cache with them.

``jupyter-book build`` (``execute_notebooks: cache``) runs every page whose code changed, one page
after another. ``make book`` first runs this script, which executes those same pages concurrently
(one kernel per core) and stores each executed notebook in the same cache
(``_build/.jupyter_cache``, jupyter-cache) under the same hash that myst-nb looks up; the build that
follows then finds every page in the cache and executes nothing. The pages are read with myst-nb's
own reader and executed in their own folder, as myst-nb would; the strict build, the claims records
(written by each page into ``_build/claims/``) and the report are unchanged.

A page that fails is not cached: the build then runs it again and fails on it with myst-nb's usual
report. ``python tools/execute_pages.py [--jobs N]`` prints each page's time and the total.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import pathlib
import sys
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from toc import toc_pages  # noqa: E402


def _config():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    ex = cfg.get("execute", {})
    cache = ex.get("cache") or str(ROOT / "_build" / ".jupyter_cache")
    return cache, int(ex.get("timeout", 30)), ex.get("execute_notebooks", "auto")


def _read(path: pathlib.Path):
    """The notebook myst-nb builds from a MyST page (its own reader), or None for a plain page."""
    from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook

    text = path.read_text(encoding="utf8")
    if not is_myst_markdown_notebook(text):
        return None
    return read_myst_markdown_notebook(text, add_source_map=True, path=str(path))


def _execute(path: str, timeout: int):
    """Run one page in its folder (a worker process); the executed notebook, seconds, error text."""
    from jupyter_cache.executors.utils import single_nb_execution

    nb = _read(pathlib.Path(path))
    result = single_nb_execution(
        nb, cwd=str(pathlib.Path(path).parent), timeout=timeout, allow_errors=False, meta_override=True
    )
    return result.nb, result.time, (result.exc_string if result.err is not None else None)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="pages run at once (default: cores)")
    parser.add_argument("--cache", help="the jupyter-cache folder (default: _config.yml's, else _build/.jupyter_cache)")
    parser.add_argument(
        "--only", nargs="*", help="only these pages (paths relative to the root, e.g. book/dln/index.md)"
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if os.environ.get("BOOK_SEED", "").strip() not in ("", "0"):
        # the execution cache is keyed by the pages' code, not by the seed: a build under another seed
        # would mix its pages with the default seed's (make seeds runs the pages outside the cache)
        print(
            "execute_pages: BOOK_SEED is set; the book's execution cache holds the default seed only. "
            "Use `make seeds` for other seeds, or unset BOOK_SEED.",
            file=sys.stderr,
        )
        return 2
    cache_path, timeout, mode = _config()
    if mode != "cache":
        print(f"execute_pages: execute_notebooks is {mode!r}, not 'cache': nothing to do")
        return 0

    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(args.cache or cache_path)
    only = {str((ROOT / p).resolve()) for p in args.only} if args.only else None
    todo, previous = [], {}
    for path in toc_pages(ROOT):
        if only is not None and str(path.resolve()) not in only:
            continue
        nb = _read(path)
        if nb is None:
            continue
        try:
            cache.match_cache_notebook(nb)
            continue  # already executed with this code
        except KeyError:
            pass
        # the last run time of this page (any earlier version), to start the longest first
        for rec in cache.list_cache_records():
            if rec.uri == str(path):
                previous[path] = max(previous.get(path, 0.0), float(rec.data.get("execution_seconds") or 0.0))
        todo.append(path)
    if not todo:
        print("execute_pages: every page is in the cache")
        return 0
    todo.sort(key=lambda p: (-previous.get(p, float("inf")), str(p)))
    print(f"execute_pages: {len(todo)} page(s) to execute, {args.jobs} at a time", flush=True)
    t0 = time.perf_counter()
    failed = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(_execute, str(p), timeout): p for p in todo}
        for fut in concurrent.futures.as_completed(futures):
            path = futures[fut]
            rel = path.relative_to(ROOT)
            try:
                nb, seconds, error = fut.result()
            except Exception as exc:  # the worker itself failed (not the page)
                nb, seconds, error = None, 0.0, f"{type(exc).__name__}: {exc}"
            if error is None:
                cache.cache_notebook_bundle(
                    CacheBundleIn(nb, str(path), data={"execution_seconds": seconds}),
                    check_validity=False,
                    overwrite=True,
                )
                print(f"  {rel}: {seconds:.1f} s", flush=True)
            else:
                failed.append(rel)
                print(f"  {rel}: FAILED after {seconds:.1f} s (the build runs it again and reports it)", flush=True)
                print("    " + error.strip().splitlines()[-1][:300], flush=True)
    print(
        f"execute_pages: {len(todo) - len(failed)} page(s) cached in {time.perf_counter() - t0:.1f} s wall", flush=True
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
