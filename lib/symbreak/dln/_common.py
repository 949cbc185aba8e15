"""Input checks and depth limits of the deep-linear-network package (no mathematics of its own).

No page calls this module directly; it serves the package's other modules.
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import (
    check_array,
    check_int,
    check_positive,
    check_positive_array,
)

__all__ = []


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------


def _check_sigma(sigma, name: str = "sigma", *, min_d: int = 1) -> np.ndarray:
    arr = check_positive_array(name, sigma, ndim=1)
    if arr.size < min_d:
        raise ValueError(f"{name} must hold at least {min_d} singular values (d >= {min_d}), got d={arr.size}")
    return arr


def _check_depth(N, *, allow_inf: bool = False, minimum: int = 1):
    """Depth ``N``: an integer ``>= minimum`` (or ``numpy.inf`` where allowed)."""
    if allow_inf and isinstance(N, (float, np.floating)) and math.isinf(N) and N > 0:
        return math.inf
    try:
        return check_int("N", N, minimum=minimum, maximum=_MAX_DEPTH)
    except ValueError as exc:
        extra = " or numpy.inf" if allow_inf else ""
        raise type(exc)(f"N (the depth) must be an integer in [{minimum}, 2**53]{extra}, got {N!r}") from None


#: Largest finite depth accepted (every integer up to it is an exact float).
_MAX_DEPTH = 2**53
#: Above this depth, sums over the N layers are evaluated in closed form (geometric series).
_LOOP_DEPTH = 64
#: Largest depth for which A_operator / A_matrix / entropy_autograd sum the N terms literally.
_LITERAL_DEPTH = 10_000


def _log_geometric(delta_abs, N):
    """``log Σ_{m=0}^{N−1} e^{−2|δ|m/N} = log[(1 − e^{−2|δ|}) / (1 − e^{−2|δ|/N})]`` (``log N`` at ``δ = 0``),
    accurate for every ``N`` and ``δ`` (both ``expm1``): the work does not grow with ``N``."""
    delta_abs = np.asarray(delta_abs, dtype=float)
    x = -2.0 * delta_abs / N
    pos = delta_abs > 0
    safe = np.where(pos, delta_abs, 1.0)
    with np.errstate(divide="ignore"):
        val = np.log(-np.expm1(-2.0 * safe)) - np.log(-np.expm1(np.where(pos, x, -1.0)))
    return np.where(pos, val, math.log(N))


def _check_beta(beta, *, allow_inf: bool = False) -> float:
    return check_positive("beta", beta, allow_inf=allow_inf)


def _check_p(p) -> float:
    v = check_positive("p", p)
    if v < 1:
        raise ValueError(f"p (the Schatten exponent) must lie in [1, inf), got {p!r}")
    return v


def _check_d(d, *, minimum: int = 2) -> int:
    try:
        return check_int("d", d, minimum=minimum)
    except ValueError:
        raise ValueError(
            f"d must be an integer >= {minimum} (the formula needs pairs of singular values), got {d!r}"
        ) from None


def _check_factors(Ws, name: str = "Ws") -> list:
    """A non-empty list of finite real ``d×d`` matrices of one size (the factors ``[W_1, …, W_N]``)."""
    if isinstance(Ws, np.ndarray) and Ws.ndim == 3:
        Ws = list(Ws)
    if not isinstance(Ws, (list, tuple)) or len(Ws) == 0:
        raise ValueError(f"{name} must be a non-empty list of square matrices [W_1, ..., W_N]")
    out = [check_array(f"{name}[{k}]", W, ndim=2) for k, W in enumerate(Ws)]
    d = out[0].shape[0]
    for k, W in enumerate(out):
        if W.shape != (d, d) or d == 0:
            raise ValueError(f"{name}[{k}] must be a {d}x{d} matrix like {name}[0], got shape {W.shape}")
    return out


def _kappa(N) -> float:
    """``1 − 1/N`` (``1`` at ``N = inf``)."""
    return 1.0 if math.isinf(N) else 1.0 - 1.0 / N
