"""Input checks for the public functions of :mod:`symbreak`.

Every public function validates its arguments here and raises :class:`ValueError` with a message
that names the parameter and its valid range, so bad input never turns into a silent NaN.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "check_positive",
    "check_nonnegative",
    "check_int",
    "check_choice",
    "check_array",
    "check_positive_array",
    "check_square",
    "check_symmetric_positive_definite",
    "check_invertible",
]


def _is_real_scalar(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_positive(name: str, value, *, allow_inf: bool = False) -> float:
    """Return ``float(value)`` if it is a finite (or, if allowed, infinite) real number ``> 0``."""
    if not _is_real_scalar(value) and not (isinstance(value, np.ndarray) and value.ndim == 0):
        raise ValueError(f"{name} must be a real number > 0, got {value!r}")
    v = float(value)
    if np.isnan(v) or v <= 0 or (np.isinf(v) and not allow_inf):
        rng = "(0, inf]" if allow_inf else "(0, inf)"
        raise ValueError(f"{name} must lie in {rng}, got {value!r}")
    return v


def check_nonnegative(name: str, value) -> float:
    """Return ``float(value)`` if it is a finite real number ``>= 0``."""
    if not _is_real_scalar(value) and not (isinstance(value, np.ndarray) and value.ndim == 0):
        raise ValueError(f"{name} must be a real number >= 0, got {value!r}")
    v = float(value)
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must lie in [0, inf), got {value!r}")
    return v


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``int(value)`` if it is an integer within ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        lo = "-inf" if minimum is None else str(minimum)
        hi = "inf" if maximum is None else str(maximum)
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {v}")
    return v


def check_choice(name: str, value, choices) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def check_array(name: str, value, *, ndim: int | None = None, shape=None, dtype=float) -> np.ndarray:
    """Convert to a finite array of ``dtype`` with the given number of dimensions / shape.

    ``shape`` may contain ``None`` for free axes.
    """
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of real numbers: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
            want = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers")
    return arr


def check_positive_array(name: str, value, *, ndim: int | None = 1) -> np.ndarray:
    """Convert to a finite float array whose entries are all ``> 0``."""
    arr = check_array(name, value, ndim=ndim)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.any(arr <= 0):
        raise ValueError(f"{name} must have all entries in (0, inf), got min {arr.min()!r}")
    return arr


def check_square(name: str, value, *, size: int | None = None) -> np.ndarray:
    """Convert to a finite square float matrix (of the given size, if any)."""
    arr = check_array(name, value, ndim=2)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {arr.shape}")
    if size is not None and arr.shape[0] != size:
        raise ValueError(f"{name} must be {size}x{size}, got shape {arr.shape}")
    return arr


def check_symmetric_positive_definite(name: str, value, *, size: int | None = None,
                                      rtol: float = 1e-10) -> np.ndarray:
    """Convert to a symmetric positive-definite matrix, or raise ``ValueError``.

    Symmetry is checked to relative tolerance ``rtol`` (and the matrix is then symmetrised);
    positive definiteness by a Cholesky factorisation.
    """
    arr = check_square(name, value, size=size)
    scale = max(np.abs(arr).max(), np.finfo(float).tiny)
    if np.abs(arr - arr.T).max() > rtol * scale:
        raise ValueError(f"{name} must be symmetric")
    arr = 0.5 * (arr + arr.T)
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name} must be positive definite (all eigenvalues > 0)") from None
    return arr


def check_invertible(name: str, value, *, size: int | None = None, cond_max: float = 1e12) -> np.ndarray:
    """Convert to a square matrix whose condition number is below ``cond_max``."""
    arr = check_square(name, value, size=size)
    cond = np.linalg.cond(arr)
    if not np.isfinite(cond) or cond > cond_max:
        raise ValueError(f"{name} must be invertible (condition number {cond:.3g} > {cond_max:.0e})")
    return arr
