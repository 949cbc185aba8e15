"""Execute the book's pages side by side and fill Jupyter Book's execution cache with them.

``jupyter-book build`` (``execute_notebooks: cache``) runs every page whose code changed, one page
after another. ``make book`` first runs this script, which executes those same pages concurrently
(one kernel per core) and stores each executed notebook in the same cache
(``_build/.jupyter_cache``, jupyter-cache) under the same hash that myst-nb looks up; the build that
follows then finds every page in the cache and executes nothing. The pages are read with myst-nb's
own reader and executed in their own folder, as myst-nb would; the strict build, the claims records
(written by each page into ``_build/claims/``) and the report are unchanged.

Scheduling. Pages start longest first, by the time of their last run in the cache or, in a clean
clone, by ``tools/page_seconds.json`` (each page's time in a full ``make book``; a page missing from
it starts first). Pages estimated at ``--heavy`` seconds or more are *heavy*: at most ``jobs // 2`` of
them (at least one) run at a time, so the heaviest pages, whose simulations use every core, never
share the machine with each other, only with lighter pages. Each kernel's OpenBLAS pool gets
``cores // jobs`` threads: NumPy's linear algebra on small matrices, in pages run side by side, is
otherwise slowed many times over by BLAS threads that spin for cores the other page is using.
``--write-estimates`` stores this run's times in ``tools/page_seconds.json``.

A page that fails is not cached: the build then runs it again and fails on it with myst-nb's usual
report. ``python tools/execute_pages.py [--jobs N]`` prints each page's time and the total.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import sys
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from toc import toc_pages  # noqa: E402

#: Each page's seconds in a full ``make book`` (relative paths), for the order of a clean clone.
ESTIMATES = ROOT / "tools" / "page_seconds.json"
#: Pages estimated at this many seconds or more are heavy (see the module's docstring).
HEAVY_SECONDS = 40.0
#: The thread pools of the kernel's libraries that ``--jobs`` divides (NumPy's and SciPy's OpenBLAS).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS",)


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


def _cores() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def kernel_environment(jobs: int, cores: int, environ=None) -> dict:
    """The variables to set for a page's kernel when ``jobs`` pages share ``cores`` cores: each BLAS
    pool at ``cores // jobs`` threads (at least one); a variable the user has set is left alone."""
    if jobs < 1 or cores < 1:
        raise ValueError(f"jobs and cores must be at least 1, got {jobs} and {cores}")
    environ = os.environ if environ is None else environ
    threads = str(max(1, cores // jobs))
    return {name: threads for name in BLAS_THREAD_VARIABLES if not environ.get(name)}


def load_estimates(path: pathlib.Path = ESTIMATES) -> dict:
    """``{relative page path: seconds}`` from ``path`` (empty if there is none)."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and v >= 0 for k, v in data.items()
    ):
        raise ValueError(f"{path}: expected an object of page paths to seconds (numbers >= 0)")
    return {k: float(v) for k, v in data.items()}


def order_pages(pages, seconds: dict) -> list:
    """Longest first; pages without an estimate before all others (they might be the longest), then
    by name."""
    return sorted(pages, key=lambda p: (-seconds.get(p, float("inf")), str(p)))


def next_page(pending: list, running: list, heavy: set, jobs: int):
    """The first of ``pending`` (in order) that may start beside ``running``: not a heavy page while
    ``max(1, jobs // 2)`` heavy pages run; ``None`` if none may start now."""
    busy = sum(p in heavy for p in running)
    for p in pending:
        if p not in heavy or busy < max(1, jobs // 2):
            return p
    return None


def _execute(path: str, timeout: int, env: dict | None = None):
    """Run one page in its folder (a worker process); the executed notebook, seconds, error text."""
    from jupyter_cache.executors.utils import single_nb_execution

    os.environ.update(env or {})  # this worker's kernels inherit it

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
    parser.add_argument(
        "--heavy", type=float, default=HEAVY_SECONDS, help=f"seconds of a heavy page (default {HEAVY_SECONDS:g})"
    )
    parser.add_argument(
        "--write-estimates", action="store_true", help=f"store this run's page times in {ESTIMATES.relative_to(ROOT)}"
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if not args.heavy > 0:
        parser.error(f"--heavy must be a positive number of seconds, got {args.heavy}")
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

    cache = get_cache(args.cache or cache_path)
    only = {str((ROOT / p).resolve()) for p in args.only} if args.only else None
    todo, previous = [], {}
    estimates = {ROOT / k: v for k, v in load_estimates().items()}
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
    seconds = {p: previous.get(p) or estimates.get(p) for p in todo}
    seconds = {p: v for p, v in seconds.items() if v is not None}
    pending = order_pages(todo, seconds)
    heavy = {p for p, v in seconds.items() if v >= args.heavy}
    env = kernel_environment(args.jobs, _cores())
    # the kernels compiled once into numba's disk cache, so that pages started together on an empty
    # cache do not each compile them (a second or two when they are cached already); only those the
    # pages use (every page runs in float64)
    from symbreak.precompile import BOOK_GROUPS, precompile

    try:
        secs = precompile(min(2, args.jobs), groups=BOOK_GROUPS)
        print(f"execute_pages: numba kernels ({', '.join(BOOK_GROUPS)}) compiled or loaded in {secs:.1f} s", flush=True)
    except RuntimeError as exc:  # the pages then compile what they use; a broken kernel fails its page
        print(f"execute_pages: precompiling the numba kernels failed: {exc}", flush=True)
    print(
        f"execute_pages: {len(todo)} page(s) to execute, {args.jobs} at a time, longest first, at most "
        f"{max(1, args.jobs // 2)} of the {len(heavy)} heavy one(s) at a time"
        + "".join(f"; {k}={v}" for k, v in env.items()),
        flush=True,
    )
    t0 = time.perf_counter()
    failed, times = [], {}
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {}
        while pending or futures:
            while len(futures) < args.jobs:
                page = next_page(pending, list(futures.values()), heavy, args.jobs)
                if page is None:
                    break
                pending.remove(page)
                futures[pool.submit(_execute, str(page), timeout, env)] = page
            done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                path = futures.pop(fut)
                rel = path.relative_to(ROOT)
                try:
                    nb, seconds_, error = fut.result()
                except Exception as exc:  # the worker itself failed (not the page)
                    nb, seconds_, error = None, 0.0, f"{type(exc).__name__}: {exc}"
                _store(cache, path, rel, nb, seconds_, error, failed, times)
    print(
        f"execute_pages: {len(todo) - len(failed)} page(s) cached in {time.perf_counter() - t0:.1f} s wall", flush=True
    )
    if args.write_estimates and times:
        merged = {**load_estimates(), **{str(p.relative_to(ROOT)): round(t, 1) for p, t in times.items()}}
        ESTIMATES.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")
        print(f"execute_pages: page times written to {ESTIMATES.relative_to(ROOT)}")
    return 0


def _store(cache, path, rel, nb, seconds, error, failed, times):
    """Cache one executed page (or report its failure) and print its time."""
    from jupyter_cache.base import CacheBundleIn

    if error is None:
        cache.cache_notebook_bundle(
            CacheBundleIn(nb, str(path), data={"execution_seconds": seconds}),
            check_validity=False,
            overwrite=True,
        )
        times[path] = seconds
        print(f"  {rel}: {seconds:.1f} s", flush=True)
    else:
        failed.append(rel)
        print(f"  {rel}: FAILED after {seconds:.1f} s (the build runs it again and reports it)", flush=True)
        print("    " + error.strip().splitlines()[-1][:300], flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
