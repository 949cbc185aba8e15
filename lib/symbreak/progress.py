"""Progress bars for long loops: visible when a person is watching, silent in builds and tests.

A bar is shown when standard error is a terminal, or in a notebook kernel started by a Jupyter
server (JupyterLab, Notebook, Binder: they set ``JPY_SESSION_NAME``). Book builds and the test suite
run kernels through nbclient, which sets neither, so no bar ends up in the built pages.
``SYMBREAK_PROGRESS=1`` / ``=0`` forces bars on / off.
"""

from __future__ import annotations

import os
import sys

__all__ = ["PROGRESS_ENV_VAR", "progress_enabled", "progress"]

#: Environment variable that forces progress bars on (``1``) or off (``0``).
PROGRESS_ENV_VAR = "SYMBREAK_PROGRESS"


def progress_enabled() -> bool:
    """Whether :func:`progress` draws a bar in the current process."""
    forced = os.environ.get(PROGRESS_ENV_VAR, "").strip().lower()
    if forced in {"1", "true", "yes", "on"}:
        return True
    if forced in {"0", "false", "no", "off"}:
        return False
    if "JPY_SESSION_NAME" in os.environ:
        return True
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress(iterable=None, *, total=None, desc=None, leave=False):
    """Wrap an iterable in a tqdm bar when :func:`progress_enabled`, else return it unchanged.

    In a notebook the widget bar of ``tqdm.auto`` is used; elsewhere the text bar.
    """
    if not progress_enabled():
        return iterable if iterable is not None else range(total or 0)
    if "ipykernel" in sys.modules:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm(iterable, total=total, desc=desc, leave=leave)
