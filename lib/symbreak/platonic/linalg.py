"""Linear-algebra helpers of the Platonic chapter: PSD square roots and seeded random orthogonal,
invertible and SPD matrices.

Pages: ``book/platonic/experiments.md``, ``book/platonic/proof.md``.
"""

from __future__ import annotations

import numpy as np

from ..engine import (
    DivergenceError,
)
from ..validation import (
    check_array,
    check_int,
    check_positive,
    finite_result,
)

__all__ = ["sqrtm_psd", "random_orthogonal", "random_invertible", "random_spd", "DivergenceError"]


# ----------------------------------------------------------------------------------------------
# Linear algebra helpers
# ----------------------------------------------------------------------------------------------


def _sym(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def _t(a: np.ndarray) -> np.ndarray:
    return a.swapaxes(-1, -2)  # the method: the training loops call this ~10⁶ times per page


def _tr(a: np.ndarray) -> np.ndarray:
    return np.trace(a, axis1=-2, axis2=-1)


def sqrtm_psd(a) -> np.ndarray:
    """Principal square root of a symmetric positive semi-definite matrix (by ``eigh``).

    Eigenvalues within round-off of zero (below ``10 n ε_mach`` times the largest) are set to
    zero, so that the root of a rank-deficient matrix keeps its rank (the square root would
    otherwise turn round-off of size 1e-17 into spurious eigenvalues of size 1e-9). Accepts a
    stack of matrices (shape ``(..., n, n)``).

    Raises
    ------
    ValueError
        If ``a`` is not a finite real square (stack of) matrix, is not symmetric, or has an
        eigenvalue below ``−10 n ε_mach`` times the largest (indefinite: no real root exists).
    """
    a = check_array("a", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or a.shape[-1] == 0:
        raise ValueError(f"a must be a square matrix (or a stack of them), got shape {a.shape}")
    scale = np.abs(a).max(axis=(-2, -1), keepdims=True)
    scale = np.where(scale > 0, scale, 1.0)
    unit = a / scale  # eigenvalues of a matrix with entries in [-1, 1]: no overflow or underflow
    if np.abs(unit - _t(unit)).max() > 1e-10:
        raise ValueError("a must be symmetric")
    w, v = np.linalg.eigh(_sym(unit))
    floor = 10 * a.shape[-1] * np.finfo(float).eps * np.abs(w).max(axis=-1, keepdims=True)
    if np.any(w < -floor):
        raise ValueError(
            f"a must be positive semi-definite (it has an eigenvalue {w.min():.3g} times its "
            "largest entry, below round-off): an indefinite matrix has no real square root"
        )
    w = np.where(w > floor, w, 0.0)
    return finite_result("sqrtm_psd", _sym((v * np.sqrt(w)[..., None, :]) @ _t(v)) * np.sqrt(scale))


def _check_generator(rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (symbreak.rng.make_rng), got {type(rng).__name__}")


def random_orthogonal(rng: np.random.Generator, n: int) -> np.ndarray:
    """A Haar-distributed orthogonal ``n×n`` matrix (QR of a Gaussian matrix, signs fixed)."""
    _check_generator(rng)
    n = check_int("n", n, minimum=1, maximum=10_000)
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))[None, :]


def random_invertible(rng: np.random.Generator, n: int, cond: float = 3.0) -> np.ndarray:
    """A random invertible ``n×n`` matrix ``O₁ diag(s) O₂`` with Haar orthogonal ``O₁, O₂`` and
    singular values ``s`` log-uniform in ``[cond^{-1/2}, cond^{1/2}]`` with both ends attained,
    so its condition number is exactly ``cond`` (for ``n ≥ 2``) and its determinant is of order 1.
    """
    _check_generator(rng)
    n = check_int("n", n, minimum=1, maximum=10_000)
    cond = check_positive("cond", cond)
    if cond < 1:
        raise ValueError(f"cond must lie in [1, inf), got {cond!r}")
    u = rng.uniform(-0.5, 0.5, size=n)
    if n >= 2:
        u[0], u[1] = -0.5, 0.5
    s = cond**u
    return random_orthogonal(rng, n) @ np.diag(s) @ random_orthogonal(rng, n)


def random_spd(rng: np.random.Generator, n: int, cond: float = 3.0, scale: float = 1.0) -> np.ndarray:
    """A random symmetric positive-definite ``n×n`` matrix ``scale · O diag(λ) Oᵀ`` with
    eigenvalues log-uniform in ``[cond^{-1/2}, cond^{1/2}]`` (both ends attained)."""
    _check_generator(rng)
    n = check_int("n", n, minimum=1, maximum=10_000)
    cond = check_positive("cond", cond)
    scale = check_positive("scale", scale)
    if cond < 1:
        raise ValueError(f"cond must lie in [1, inf), got {cond!r}")
    u = rng.uniform(-0.5, 0.5, size=n)
    if n >= 2:
        u[0], u[1] = -0.5, 0.5
    o = random_orthogonal(rng, n)
    return _sym(scale * (o * cond**u) @ o.T)
