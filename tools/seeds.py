"""Re-execute the book's pages under other seeds and count on how many each claim holds.

Usage: ``python tools/seeds.py --seeds 5 [--quick] [--jobs N] [--output _build/html/seeds.json] [pattern ...]``
(``make seeds N=5`` runs it at full size). Every page of ``_toc.yml`` is executed (jupytext +
nbclient, in its own folder, as ``tests/test_book.py`` does) once for each of ``BOOK_SEED=1..N``
(:mod:`symbreak.rng`: every seed the pages and the library derive is moved, the code unchanged),
with ``SYMBREAK_CLAIMS_RAISE=0`` so that a claim that does not hold is recorded instead of stopping
the page. The claim records of seed ``n`` go to ``_build/seeds/seed-<n>/`` (the full records:
measured values, tolerances), and the summary to ``seeds.json``::

    {"seeds": [1, 2, ...],
     "claims": {"<claim id>": {"holds": <count>, "of": <count>}},
     "pages": {"<page>": {"finished": <count>, "of": <count>, "errors": ["seed n: <error>", ...]}}}

A claim counts in ``of`` on every seed on which its page reached it; a page that stops with an error
counts it as not finished and names the error. The summary is rewritten after every page, so an
interrupted run leaves what it had. Claims with no check (``record``) are not counted. ``--jobs N``
(default: the number of cores) runs that many pages side by side, each in its own process.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from toc import ROOT, toc_files  # noqa: E402  (the one walker of _toc.yml)

__all__ = ["execute_page", "page_claims", "summarise", "main"]


def _error_line(err: BaseException) -> str:
    """The last non-empty line of an execution error (``ClaimError: ...``, ``DivergenceError: ...``)."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", str(err))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    named = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b", ln)]
    return (named or lines or [type(err).__name__])[-1][:400]


def execute_page(page: str, seed: int, claims_dir: pathlib.Path, *, quick: bool, timeout: int = 3600) -> str | None:
    """Execute ``page`` (``_toc.yml`` name, e.g. ``"book/dln/entropy"``) under ``BOOK_SEED=seed``
    with its claim records in ``claims_dir`` and claims recorded rather than raised.

    Returns ``None`` when the page ran to the end, else the error's last line.
    """
    import jupytext
    import nbclient

    path = ROOT / (page + ".md")
    nb = jupytext.read(path)
    if not any(c.cell_type == "code" for c in nb.cells):
        return None
    env = {
        "BOOK_SEED": str(int(seed)),
        "BOOK_QUICK": "1" if quick else "0",
        "SYMBREAK_CLAIMS_RAISE": "0",
        "SYMBREAK_CLAIMS_DIR": str(claims_dir),
        "SYMBREAK_PROGRESS": "0",
        "MPLBACKEND": "Agg",
    }
    backup = {k: os.environ.get(k) for k in (*env, "SYMBREAK_FIGURES")}
    os.environ.update(env)
    os.environ.pop("SYMBREAK_FIGURES", None)
    try:
        client = nbclient.NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        )
        try:
            client.execute()
        except Exception as err:  # noqa: BLE001  (any cell error is the page's result, recorded)
            return _error_line(err)
        return None
    finally:
        for k, v in backup.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def page_claims(claims_dir: pathlib.Path, page: str, *, quick: bool) -> list[dict]:
    """The claim records ``page`` wrote into ``claims_dir`` (empty when it wrote none)."""
    path = pathlib.Path(claims_dir) / ("quick" if quick else "full") / (page.replace("/", "__") + ".json")
    if not path.is_file():
        return []
    return json.loads(path.read_text())["claims"]


def summarise(seeds: list[int], runs: dict) -> dict:
    """The ``seeds.json`` object from ``runs[(page, seed)] = (error or None, claim records)``."""
    claims: dict[str, dict[str, int]] = {}
    pages: dict[str, dict] = {}
    for (page, seed), (error, records) in runs.items():
        entry = pages.setdefault(page, {"finished": 0, "of": 0, "errors": []})
        entry["of"] += 1
        if error is None:
            entry["finished"] += 1
        else:
            entry["errors"].append(f"seed {seed}: {error}")
        for rec in records:
            if rec.get("holds") is None:
                continue
            c = claims.setdefault(rec["id"], {"holds": 0, "of": 0})
            c["of"] += 1
            c["holds"] += int(bool(rec["holds"]))
    return {"seeds": [int(s) for s in seeds], "claims": dict(sorted(claims.items())), "pages": pages}


def _run_one(page: str, seed: int, claims_dir: str, quick: bool, timeout: int):
    """One page under one seed, in a worker process: ``(error or None, claim records, seconds)``."""
    t = time.perf_counter()
    error = execute_page(page, seed, pathlib.Path(claims_dir), quick=quick, timeout=timeout)
    return error, page_claims(pathlib.Path(claims_dir), page, quick=quick), time.perf_counter() - t


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="run BOOK_SEED=1..N (default 5)")
    parser.add_argument("--seed-list", type=int, nargs="+", help="run exactly these BOOK_SEED values instead")
    parser.add_argument("--quick", action="store_true", help="quick mode (BOOK_QUICK=1) instead of full size")
    parser.add_argument("--output", default=str(ROOT / "_build" / "html" / "seeds.json"), help="the summary file")
    parser.add_argument("--records", default=str(ROOT / "_build" / "seeds"), help="folder for the claim records")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds one cell may run")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="pages run at once (default: cores)")
    parser.add_argument("patterns", nargs="*", help="only pages whose name contains one of these")
    args = parser.parse_args(argv)
    seeds = args.seed_list if args.seed_list else list(range(1, args.seeds + 1))
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if not seeds or any(s < 1 for s in seeds):
        parser.error("--seeds must be at least 1 and --seed-list must hold positive integers (0 is the default seed)")
    pages = [p for p in toc_files(ROOT) if not args.patterns or any(pat in p for pat in args.patterns)]
    out = pathlib.Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    runs: dict = {}
    todo = [(page, seed) for seed in seeds for page in pages]
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {}
        for page, seed in todo:
            records_dir = str(pathlib.Path(args.records) / f"seed-{seed}")
            futures[pool.submit(_run_one, page, seed, records_dir, args.quick, args.timeout)] = (page, seed)
        for fut in concurrent.futures.as_completed(futures):
            page, seed = futures[fut]
            error, records, seconds = fut.result()
            runs[(page, seed)] = (error, records)
            failed = [r["id"] for r in records if r.get("holds") is False]
            note = f"; does not hold: {', '.join(failed)}" if failed else ""
            print(
                f"BOOK_SEED={seed} {page}: {seconds:.0f} s, {len(records)} claims"
                f"{note}{'; ERROR ' + error if error else ''}",
                flush=True,
            )
            out.write_text(json.dumps(summarise(seeds, runs), indent=1) + "\n")
    summary = summarise(seeds, runs)
    bad = {k: v for k, v in summary["claims"].items() if v["holds"] < v["of"]}
    stopped = {k: v for k, v in summary["pages"].items() if v["finished"] < v["of"]}
    print(f"{out}: {len(summary['claims'])} claims over seeds {seeds}; {len(bad)} fail on some seed; ", end="")
    print(f"{len(stopped)} pages stop on some seed")
    for k, v in bad.items():
        print(f"  {k}: holds on {v['holds']} of {v['of']}")
    for k, v in stopped.items():
        print(f"  {k}: {'; '.join(v['errors'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
