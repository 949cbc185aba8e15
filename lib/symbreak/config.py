"""The quick-mode switch: one place that decides how large every simulation in the book is.

Setting ``BOOK_QUICK=1`` in the environment (the test suite does; ``BOOK_QUICK=1 make book`` does
for a fast preview) shrinks every simulation through :func:`sized`. The code path is the same in
both modes; only the sizes change, so the quick run exercises exactly what the full run does.
"""

from __future__ import annotations

import math
import os

__all__ = ["QUICK_ENV_VAR", "quick_mode", "sized", "mode_name"]

#: Name of the environment variable that turns quick mode on.
QUICK_ENV_VAR = "BOOK_QUICK"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def quick_mode() -> bool:
    """Return ``True`` when ``BOOK_QUICK`` asks for quick mode.

    Read at every call (not cached), so a notebook or test can switch modes by setting the
    variable. Accepted values: ``1/true/yes/on`` and ``0/false/no/off`` (case-insensitive, empty or
    unset means full size).

    Raises
    ------
    ValueError
        If ``BOOK_QUICK`` holds anything else.
    """
    raw = os.environ.get(QUICK_ENV_VAR, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ValueError(
        f"{QUICK_ENV_VAR}={raw!r} is not understood: use one of "
        f"{sorted(_TRUE)} for quick mode or {sorted(_FALSE - {''})} (or unset) for full size"
    )


def sized(full, quick):
    """Pick the full-size or the quick-mode value of a simulation parameter.

    Every simulation size in the book (steps, seeds, grid points, sample counts) is written as
    ``sized(full, quick)``, so that ``BOOK_QUICK=1`` shrinks the whole book through this one
    function.

    Parameters
    ----------
    full : object
        Value used for the full reproduction at the papers' scale.
    quick : object
        Value used in quick mode (tests, previews). For numbers it must not exceed ``full``.

    Returns
    -------
    object
        ``quick`` in quick mode, ``full`` otherwise.

    Raises
    ------
    ValueError
        If a value is a non-finite float, or both values are numbers and ``quick > full``.
    """
    for name, value in (("full", full), ("quick", quick)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if isinstance(full, (int, float)) and isinstance(quick, (int, float)) and quick > full:
        raise ValueError(f"quick={quick!r} must not exceed full={full!r}")
    return quick if quick_mode() else full


def mode_name() -> str:
    """``"quick"`` or ``"full"``: for captions that state which sizes a figure used."""
    return "quick" if quick_mode() else "full"
