"""Shared limits and input checks of the autoencoder package (no mathematics of its own).

No page calls this module directly; it serves the package's other modules.
"""

from __future__ import annotations

import numpy as np

from ..validation import (
    check_array,
    check_int,
    check_positive_array,
)

__all__ = ["DIVERGENCE_LIMIT", "GL_DRIFT_RTOL", "GL_FLOW_MAX_TAU"]


#: Largest dimension or width accepted (matrices of this size already need gigabytes).
_MAX_DIM = 100_000

#: A replica whose largest weight exceeds this (or is not finite) has diverged.
DIVERGENCE_LIMIT = 1e6

#: Longest slow time :func:`gl_flow` integrates (about a second of work per decade beyond 1e8).
GL_FLOW_MAX_TAU = 1e10

#: The largest relative miss of the charge identity (Eq. 5) that :func:`gl_flow_drift` accepts: an
#: A for which float64 cannot resolve the drift better is refused. A well-conditioned A of the
#: book's scales misses it by 1e-15 to 1e-10. Checked against 80-digit arithmetic (k = 3): the
#: drifts accepted at condition numbers up to 1e4 and singular values up to 100 were within 1.4e-5
#: of the exact one; those refused, at condition numbers from 1e5 or singular values from 300, were
#: off by 7.5e-7 to 22 times their size. Tiny A is refused from singular values of about 1e-78, where
#: a product underflows and the drift would come out exactly 0.
GL_DRIFT_RTOL = 1e-7


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------
def _spectrum(lambdas) -> np.ndarray:
    """A 1-D array of positive eigenvalues of Σ sorted in non-increasing order."""
    lam = check_positive_array("lambdas", lambdas, ndim=1)
    if np.any(np.diff(lam) > 0):
        raise ValueError("lambdas must be sorted in non-increasing order (λ_1 ≥ λ_2 ≥ … ≥ λ_d)")
    return lam


def _undercomplete_k(k, d: int) -> int:
    """``k`` in ``[1, d − 1]``: the formulas of the paper are for undercomplete autoencoders."""
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool) and not 1 <= int(k) <= d - 1:
        raise ValueError(f"k must be an integer in [1, {d - 1}] (undercomplete, k < d = {d}) for this formula, got {k}")
    return check_int("k", k, minimum=1, maximum=d - 1)


def _scales(s, k: int) -> np.ndarray:
    s = check_positive_array("s", np.atleast_1d(check_array("s", s)), ndim=1)
    if s.size == 1 and k > 1:
        s = np.full(k, s[0])
    if s.size != k:
        raise ValueError(f"s must have k = {k} entries (or be a scalar), got {s.size}")
    return s


def _check_decoder_encoder(W, U, d: int, *, names=("W", "U")):
    """Validate a decoder ``W`` (d, k) and an encoder ``U`` (k, d) of matching width."""
    W = check_array(names[0], W, ndim=2)
    if W.shape[0] != d:
        raise ValueError(f"{names[0]} must have d = {d} rows, got shape {W.shape}")
    U = check_array(names[1], U, shape=(W.shape[1], d))
    return W, U


def _check_pair(W, U, names=("W", "U"), d: int | None = None):
    """A decoder stack ``W`` (..., d, k) and an encoder stack ``U`` (..., k, d) of matching shapes."""
    W = check_array(names[0], W)
    U = check_array(names[1], U)
    if W.ndim < 2 or U.ndim < 2 or W.shape[-1] != U.shape[-2] or W.shape[-2] != U.shape[-1] or W.size == 0:
        raise ValueError(
            f"{names[0]} must have shape (..., d, k) and {names[1]} shape (..., k, d), got {W.shape} and {U.shape}"
        )
    if d is not None and W.shape[-2] != d:
        raise ValueError(f"{names[0]} must have d = {d} rows (one per eigenvalue in lambdas), got shape {W.shape}")
    return W, U


def _check_sigma_hat(sigma_hat, d: int) -> np.ndarray:
    sh = check_array("sigma_hat", sigma_hat)
    if sh.ndim < 2 or sh.shape[-2:] != (d, d):
        raise ValueError(f"sigma_hat must have shape (..., {d}, {d}), got {sh.shape}")
    return sh


def _dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be numpy.float64 or numpy.float32, got {dt}")
    return dt
