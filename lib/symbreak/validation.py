"""Input checks for the public functions of :mod:`symbreak`.

Every public function validates its arguments here and raises :class:`ValueError` with a message
that names the parameter and its valid range, so bad input never turns into a silent NaN.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "ValidationTypeError",
    "check_real",
    "check_tolerance",
    "check_positive",
    "check_nonnegative",
    "check_int",
    "MAX_STEPS",
    "MAX_DRAWS",
    "check_choice",
    "check_array",
    "check_positive_array",
    "check_square",
    "check_symmetric_positive_definite",
    "check_invertible",
    "solve_ivp_bounded",
    "MAX_ODE_EVALUATIONS",
    "finite_result",
    "check_allocation",
]


class ValidationTypeError(TypeError, ValueError):
    """An argument of the wrong type (complex, bool, string, a float where an integer is needed).

    A :class:`TypeError` as the developers' guide asks for wrong types, and also a
    :class:`ValueError`, so that callers that catch bad input as ``ValueError`` still catch it.
    """


#: Largest integer accepted (what NumPy can index and allocate with).
_INT64_MAX = 2**63 - 1
#: Bound on step counts of the simulations: a clear error instead of a run of years.
MAX_STEPS = 10**9
#: Bound on the number of stored draws / samples / replicas a function allocates at once.
MAX_DRAWS = 10**8

#: Largest float accepted as an integer (every integer up to it is exactly representable).
_MAX_EXACT_FLOAT_INT = 2.0**53


def _is_real_scalar(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _real_scalar(name: str, value, what: str) -> float:
    """``float(value)`` for a real scalar (Python or NumPy number, or a 0-d real array)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        if value.dtype.kind not in "iuf":
            raise ValidationTypeError(f"{name} must be {what}, got an array of dtype {value.dtype}")
        return float(value)
    if not _is_real_scalar(value):
        raise ValidationTypeError(f"{name} must be {what}, got {type(value).__name__} {value!r}")
    return float(value)


def check_real(name: str, value, *, allow_inf: bool = False) -> float:
    """Return ``float(value)`` if it is a finite (or, if allowed, infinite) real number.

    Complex numbers, booleans and strings raise :class:`ValidationTypeError`; NaN raises
    :class:`ValueError`.
    """
    v = _real_scalar(name, value, "a real number")
    if np.isnan(v) or (np.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return v


def check_positive(name: str, value, *, allow_inf: bool = False) -> float:
    """Return ``float(value)`` if it is a finite (or, if allowed, infinite) real number ``> 0``."""
    v = _real_scalar(name, value, "a real number > 0")
    if np.isnan(v) or v <= 0 or (np.isinf(v) and not allow_inf):
        rng = "(0, inf]" if allow_inf else "(0, inf)"
        raise ValueError(f"{name} must lie in {rng}, got {value!r}")
    return v


def check_nonnegative(name: str, value) -> float:
    """Return ``float(value)`` if it is a finite real number ``>= 0``."""
    v = _real_scalar(name, value, "a real number >= 0")
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must lie in [0, inf), got {value!r}")
    return v


def check_tolerance(name: str, value, *, maximum: float = 1.0) -> float:
    """A solver tolerance (``rtol``, ``atol``, ``gtol``, ...): a finite real number in ``(0, maximum]``.

    Checked before it reaches a solver: SciPy's LSODA, for one, keeps corrupted state after a
    complex or NaN tolerance and may crash the process on a later call.
    """
    v = check_positive(name, value)
    if v > maximum:
        raise ValueError(f"{name} must lie in (0, {maximum:g}], got {value!r}")
    return v


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``int(value)`` if it is an integer within ``[minimum, maximum]``.

    Python and NumPy integers are accepted; so is a float with an integral value up to ``2**53``
    (exactly representable), for convenience. Booleans, complex numbers, strings, non-integral
    floats and floats beyond ``2**53`` (``1e300`` is "integral" only by rounding) raise
    :class:`ValidationTypeError`.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        if (
            isinstance(value, (float, np.floating))
            and np.isfinite(value)
            and float(value).is_integer()
            and abs(float(value)) <= _MAX_EXACT_FLOAT_INT
        ):
            value = int(value)
        else:
            raise ValidationTypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    v = int(value)
    lo = -_INT64_MAX - 1 if minimum is None else minimum
    hi = _INT64_MAX if maximum is None else min(maximum, _INT64_MAX)
    if v < lo or v > hi:  # beyond int64 NumPy cannot take it (OverflowError): also a range error
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {v}")
    return v


def check_choice(name: str, value, choices) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def check_array(
    name: str, value, *, ndim: int | None = None, shape=None, dtype=float, finite: bool = True
) -> np.ndarray:
    """Convert to a finite array of ``dtype`` with the given number of dimensions / shape.

    ``shape`` may contain ``None`` for free axes; ``finite=False`` lets NaN and infinities through
    (for arrays whose non-finite entries are data, such as the magnitudes a divergence check reads). Complex, boolean, string and ragged (object)
    input raises :class:`ValidationTypeError` instead of being cast (a cast would drop an imaginary
    part or turn ``True`` into ``1.0`` silently).
    """
    if isinstance(value, (str, bytes)):
        raise ValidationTypeError(f"{name} must be an array of real numbers, got a string {value!r}")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValidationTypeError(f"{name} must be an array of real numbers: {exc}") from None
    kind = raw.dtype.kind
    if kind == "c":
        raise ValidationTypeError(f"{name} must be real, got a complex array (dtype {raw.dtype})")
    if kind == "b":
        raise ValidationTypeError(f"{name} must be an array of numbers, got a boolean array")
    if kind in "USVMm":
        raise ValidationTypeError(f"{name} must be an array of real numbers, got dtype {raw.dtype}")
    if kind == "O":
        items = raw.ravel()
        if not all(_is_real_scalar(x) for x in items):
            raise ValidationTypeError(
                f"{name} must be an array of real numbers (not ragged, not complex, not bool), got an object array"
            )
    try:
        arr = np.asarray(raw, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValidationTypeError(f"{name} must be an array of real numbers: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
            want = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
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


def check_symmetric_positive_definite(name: str, value, *, size: int | None = None, rtol: float = 1e-10) -> np.ndarray:
    """Convert to a symmetric positive-definite matrix, or raise ``ValueError``.

    Symmetry is checked to relative tolerance ``rtol`` (and the matrix is then symmetrised).
    Positive definiteness is checked on the eigenvalues (scale-free, no overflow for huge or tiny
    entries): the smallest must exceed ``10 n ε`` times the largest, so a matrix that is singular
    to working precision (a Cholesky factorisation may still succeed on its round-off) is rejected.
    """
    arr = check_square(name, value, size=size)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must not be empty")
    scale = np.abs(arr).max()
    if scale == 0:
        raise ValueError(f"{name} must be positive definite, got the zero matrix")
    unit = arr / scale  # entries in [-1, 1]: no overflow in what follows
    if np.abs(unit - unit.T).max() > rtol:
        raise ValueError(f"{name} must be symmetric")
    arr = 0.5 * (arr + arr.T)
    w = np.linalg.eigvalsh(0.5 * (unit + unit.T))
    floor = 10 * arr.shape[0] * np.finfo(float).eps * np.abs(w).max()
    if w[0] <= floor:
        kind = "singular to working precision" if w[0] > -floor else "indefinite"
        raise ValueError(
            f"{name} must be positive definite (all eigenvalues > 0); it is {kind} "
            f"(eigenvalue ratio min/max = {w[0] / np.abs(w).max():.3g})"
        )
    return arr


def check_invertible(name: str, value, *, size: int | None = None, cond_max: float = 1e12) -> np.ndarray:
    """Convert to a square matrix whose condition number is below ``cond_max``."""
    arr = check_square(name, value, size=size)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must not be empty")
    cond = np.linalg.cond(arr)
    if not np.isfinite(cond) or cond > cond_max:
        raise ValueError(f"{name} must be invertible (condition number {cond:.3g} > {cond_max:.0e})")
    return arr


#: Default work bound of :func:`solve_ivp_bounded`: evaluations of the vector field (the book's largest
#: integration, the autoencoder's gradient flow to t = 40, needs about 6 000).
MAX_ODE_EVALUATIONS = 100_000


def solve_ivp_bounded(
    fun,
    t_end: float,
    y0,
    t_eval,
    *,
    method: str = "DOP853",
    rtol: float,
    atol: float,
    jac=None,
    what: str = "the integration",
    max_evaluations: int = MAX_ODE_EVALUATIONS,
):
    """``scipy.integrate.solve_ivp(fun, (0, t_end), y0, t_eval=t_eval, ...)`` with a work bound.

    The same steps and the same dense-output evaluation at ``t_eval`` as ``solve_ivp`` (so the same
    numbers), driven here one step at a time so that nothing can run unbounded:

    * the arguments are validated first: ``fun`` callable, ``t_end`` finite and ``> 0``, ``y0`` a
      non-empty 1-D finite real array, ``t_eval`` a non-empty non-decreasing 1-D array in ``[0, t_end]``,
      the tolerances finite, real, in ``(0, 1]``, ``rtol ≥ 100 ε``;
    * the state is checked after every step: a non-finite state raises ``ValueError``;
    * a vector field that is not finite and real, or not of the shape of ``y0``, at the initial state
      raises ``ValueError``; an exception that ``fun`` raises propagates unchanged;
    * a step that does not advance the time (a horizon below the solver's resolution) or more than
      ``max_evaluations`` evaluations of ``fun`` (counted inside a step too) raise ``ValueError``
      naming ``what`` and the time reached, instead of running for hours;
    * a failed solver raises ``ValueError``. The solver object is discarded after any error, so
      no solver state is reused.

    Returns
    -------
    numpy.ndarray, shape (len(t_eval), len(y0))
    """
    from scipy import integrate

    rtol = check_tolerance("rtol", rtol)
    atol = check_tolerance("atol", atol)
    if rtol < 100 * np.finfo(float).eps:
        raise ValueError(f"rtol must be >= 100 machine epsilons ({100 * np.finfo(float).eps:.3g}), got {rtol!r}")
    method = check_choice("method", method, ("RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA"))
    max_evaluations = check_int("max_evaluations", max_evaluations, minimum=1)
    if not callable(fun):
        raise TypeError(f"fun must be a callable (t, y) -> dy/dt, got {type(fun).__name__}")
    t_end = check_positive("t_end", t_end)
    y0 = check_array("y0", y0, ndim=1)
    if y0.size == 0:
        raise ValueError("y0 must not be empty")
    t_eval = check_array("t_eval", t_eval, ndim=1)
    if t_eval.size == 0 or t_eval[0] < 0 or t_eval[-1] > t_end or np.any(np.diff(t_eval) < 0):
        raise ValueError(f"t_eval must be a non-empty, non-decreasing array of times in [0, t_end = {t_end:.6g}]")
    opts = {"rtol": rtol, "atol": atol}
    if jac is not None and method in ("Radau", "BDF", "LSODA"):
        opts["jac"] = jac
    field = _bounded_field(fun, what, t_end, max_evaluations, method, y0.shape)
    solver = getattr(integrate, method)(field, 0.0, y0, t_end, **opts)
    out = np.empty((t_eval.size, y0.size))
    i = 0
    while i < t_eval.size:
        t_before = solver.t
        message = solver.step()
        if solver.status == "failed":  # at finite, validated input: a problem too stiff or extreme to solve
            raise ValueError(
                f"{what}: the {method} solver failed at t = {solver.t:.6g} ({message}); the initial "
                "values or parameters are too extreme in scale for this integration"
            )
        if not np.all(np.isfinite(solver.y)):
            raise ValueError(
                f"{what}: the state left the float64 range at t = {solver.t:.6g} "
                f"(an initial value or a parameter too extreme for this horizon)"
            )
        if solver.status != "finished" and solver.t == t_before:
            raise ValueError(
                f"{what}: the solver cannot advance from t = {t_before:.6g} to t_end = {t_end:.6g} "
                "(the horizon is below the resolution of float64 time steps)"
            )
        if solver.nfev > max_evaluations:
            raise ValueError(
                f"{what}: reaching t_end = {t_end:.6g} needs more than {max_evaluations} evaluations "
                f"of the vector field (reached t = {solver.t:.6g}); shorten the horizon"
            )
        i_new = int(np.searchsorted(t_eval, solver.t, side="right"))
        if i_new > i:
            out[i:i_new] = solver.dense_output()(t_eval[i:i_new]).T
            i = i_new
        if solver.status == "finished" and i < t_eval.size:  # pragma: no cover - t_eval[-1] == t_end
            out[i:] = solver.dense_output()(t_eval[i:]).T
            break
    return out


def _bounded_field(fun, what, t_end, max_evaluations, method, shape):
    """``fun`` with its evaluations counted and its first value checked.

    A vector field that is not finite and real, of the state's ``shape``, at the initial state raises
    ``ValueError`` (with a NaN
    there SciPy's first step size is NaN and its step-size control retries forever inside one step);
    so does the ``max_evaluations + 1``-th evaluation, even inside one step (LSODA, in Fortran, is
    left to its own bound on the evaluations of one step: its callback does not raise).
    """
    calls = [0]

    def bounded(t, y):
        calls[0] += 1
        if calls[0] > max_evaluations and method != "LSODA":
            raise ValueError(
                f"{what}: reaching t_end = {t_end:.6g} needs more than {max_evaluations} evaluations "
                f"of the vector field (reached t = {t:.6g}); shorten the horizon"
            )
        f = fun(t, y)
        if calls[0] == 1:
            arr = np.asarray(f)
            if arr.shape != shape:
                raise ValueError(f"{what}: the vector field must return shape {shape}, got {arr.shape}")
            if arr.dtype.kind not in "iuf" or not np.all(np.isfinite(arr)):
                raise ValueError(f"{what}: the vector field is not finite and real at the initial state (t = {t:.6g})")
        return f

    return bounded


def finite_result(what: str, value):
    """Return ``value`` if every number in it is finite, else raise ``ValueError``.

    For closed forms whose inputs are all finite and valid but whose result overflows float64
    (``λ² s`` with ``λ = 1e200``): a clear error instead of a silent ``inf`` or ``NaN``.
    """
    parts = value if isinstance(value, (tuple, list)) else (value,)
    for part in parts:
        if isinstance(part, (tuple, list)):
            finite_result(what, part)
            continue
        arr = np.asarray(part)
        if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
            raise ValueError(f"{what}: the result overflows the float64 range (the inputs are too extreme in scale)")
    return value


def check_allocation(what: str, n_items, *, maximum: int = MAX_DRAWS, itemsize: int = 8) -> int:
    """Refuse an allocation of ``n_items`` numbers beyond ``maximum`` before it is made.

    ``n_items`` is a product of validated sizes (a Python int, so it cannot overflow); the error
    names ``what`` (the parameters that set the size), the bound and the memory it would take,
    instead of a ``MemoryError`` (or hours of swapping) later.
    """
    if isinstance(n_items, (bool, np.bool_)) or not isinstance(n_items, (numbers.Integral, np.integer)):
        raise ValidationTypeError(f"n_items must be an integer count, got {type(n_items).__name__} {n_items!r}")
    maximum = check_int("maximum", maximum, minimum=0)
    itemsize = check_int("itemsize", itemsize, minimum=1, maximum=2**20)
    n = int(n_items)
    if n < 0:
        raise ValueError(f"n_items must be >= 0, got {n}")
    if n > maximum:
        raise ValueError(
            f"{what} = {n:.3g} numbers exceeds the bound {maximum:.3g}: it would take "
            f"{n * itemsize / 2**30:.3g} GiB of memory; use smaller sizes"
        )
    return n
