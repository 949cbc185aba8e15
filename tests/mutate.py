"""Mutation testing of the book's pages: distort one theory function, run a page, expect it to fail.

A page compares simulations with theory functions of :mod:`symbreak`. If such a function were
wrong by 10%, the page's claims (``symbreak.claims``) must fail in quick mode, otherwise the page
test could not notice a broken theory. :func:`page_fails_with_distortion` runs a page in quick mode
in a fresh kernel whose first cell wraps the function so that every result is multiplied by
``factor`` (array results element-wise; tuples and lists entry-wise), and reports whether a claim
failed.
"""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]

_PATCH = """
import functools as _ft, importlib as _il, numpy as _np
_mod = _il.import_module({module!r})
_orig = getattr(_mod, {name!r})
def _scale(v, f={factor!r}):
    if isinstance(v, (tuple, list)):
        return type(v)(_scale(x, f) for x in v)
    if isinstance(v, (int, float, _np.ndarray, _np.floating)):
        return v * f
    raise TypeError("mutate: cannot scale a " + type(v).__name__)
@_ft.wraps(_orig)
def _distorted(*a, **k):
    return _scale(_orig(*a, **k))
import sys as _sys
# the function may be re-exported (a chapter package re-exports its modules' names, the old module
# paths re-export the packages'): distort every reference to it, so that internal callers see it too
for _m in list(_sys.modules.values()):
    if getattr(_m, "__name__", "").startswith("symbreak") and getattr(_m, {name!r}, None) is _orig:
        setattr(_m, {name!r}, _distorted)
"""


def page_fails_with_distortion(page: str, target: str, factor: float = 1.1, timeout: int = 600) -> tuple[bool, str]:
    """Run ``page`` (path relative to the repository root) in quick mode with ``target``
    (``"symbreak.module.function"``) distorted by ``factor``.

    Returns ``(failed_on_a_claim, message)``: ``True`` when execution stopped with a
    ``ClaimError``. Any other error is raised, so a distortion that merely crashes the page (a
    type error, say) is not counted as detected.
    """
    import os

    import jupytext
    import nbclient
    import nbformat

    module, name = target.rsplit(".", 1)
    path = ROOT / page
    nb = jupytext.read(path)
    nb.cells.insert(0, nbformat.v4.new_code_cell(_PATCH.format(module=module, name=name, factor=factor)))
    env_backup = {
        k: os.environ.get(k) for k in ("BOOK_QUICK", "MPLBACKEND", "SYMBREAK_PROGRESS", "SYMBREAK_CLAIMS_DIR")
    }
    os.environ.update(BOOK_QUICK="1", MPLBACKEND="Agg", SYMBREAK_PROGRESS="0")
    import tempfile

    os.environ["SYMBREAK_CLAIMS_DIR"] = tempfile.mkdtemp(prefix="mutate-")
    try:
        client = nbclient.NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        )
        try:
            client.execute()
        except nbclient.exceptions.CellExecutionError as err:
            if "ClaimError" in str(err):
                return True, str(err).splitlines()[-1]
            raise
        return False, "the page ran to the end with the distorted function"
    finally:
        for k, v in env_backup.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
