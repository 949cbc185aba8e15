"""Statistics over independent replicas or seeds, shared by every chapter.

:func:`standard_error`
    The standard error of a mean over independent replicas, ``std(ddof=1)/√n`` — the ``se=`` of a
    simulation claim, and the error bar of a figure.
"""

from __future__ import annotations

import numpy as np

__all__ = ["standard_error"]


def standard_error(values, axis: int = 0):
    """Standard error of the mean of ``values`` over independent replicas or seeds along ``axis``.

    Parameters
    ----------
    values : array_like
        Measurements, one per independent replica along ``axis``.
    axis : int
        The replica axis.

    Returns
    -------
    float or ndarray
        ``std(values, ddof=1) / sqrt(n)`` with ``n`` the number of replicas along ``axis``.

    Raises
    ------
    ValueError
        With fewer than two replicas along ``axis``.

    Examples
    --------
    >>> round(float(standard_error([1.0, 2.0, 3.0])), 6)
    0.57735
    """
    x = np.asarray(values, dtype=float)
    n = x.shape[axis] if x.ndim else 1
    if n < 2:
        raise ValueError(f"values must hold at least two replicas along axis {axis}, got {n}")
    return x.std(axis=axis, ddof=1) / np.sqrt(n)
