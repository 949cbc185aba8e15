"""Progress bars for long loops: visible when a person is watching, silent in builds and tests.

A bar is shown when standard error is a terminal, or in a notebook kernel started by a Jupyter
server (JupyterLab, Notebook, Binder: they set ``JPY_SESSION_NAME``). Book builds and the test suite
run kernels through nbclient, which sets neither, so no bar ends up in the built pages.
``SYMBREAK_PROGRESS=1`` / ``=0`` forces bars on / off.

Contents
--------
:func:`progress_enabled`
    Whether bars are drawn in this process.
:func:`progress`
    Wrap an iterable (or a count) in a bar.
:class:`ProgressCounter`
    A thread-safe bar that worker threads advance (what :func:`symbreak.engine.run_ensemble` uses).
"""

from __future__ import annotations

import os
import sys
import threading

__all__ = ["PROGRESS_ENV_VAR", "progress_enabled", "progress", "ProgressCounter"]

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


def _tqdm():
    if "ipykernel" in sys.modules:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm


def progress(iterable=None, *, total=None, desc=None, leave=False):
    """Wrap an iterable in a tqdm bar when :func:`progress_enabled`, else return it unchanged.

    With ``iterable=None`` it iterates over ``range(total)``. In a notebook the widget bar of
    ``tqdm.auto`` is used; elsewhere the text bar.
    """
    if iterable is None:
        iterable = range(int(total or 0))
    if not progress_enabled():
        return iterable
    return _tqdm()(iterable, total=total, desc=desc, leave=leave)


class ProgressCounter:
    """A bar over ``total`` units (e.g. replica-steps) that several threads advance.

    Does nothing when :func:`progress_enabled` is false. Use as a context manager, so the bar is
    closed however the run ends.
    """

    def __init__(self, total: int, *, desc: str | None = None, leave: bool = False):
        self._lock = threading.Lock()
        self.count = 0
        self._bar = _tqdm()(total=int(total), desc=desc, leave=leave, unit_scale=True) if progress_enabled() else None

    @property
    def shown(self) -> bool:
        """Whether a bar is drawn."""
        return self._bar is not None

    def advance(self, n: int) -> None:
        """Add ``n`` units (thread-safe)."""
        with self._lock:
            self.count += int(n)
            if self._bar is not None:
                self._bar.update(int(n))

    def close(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
