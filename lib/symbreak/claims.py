"""The claims ledger: every quantitative statement of the book, computed, asserted and recorded.

A page opens one :class:`Ledger` and, wherever it computes something the prose states, records it
as a *claim*: which paper and which of its numbered results the claim concerns, a one-line
statement, the measured value, what it is compared with and within what tolerance. A claim that
does not hold raises :class:`ClaimError`, so the page (and the strict book build, and the page
test) fails the moment a result stops holding. Each claim is also glued (myst-nb ``glue``) so that
the prose quotes the computed number instead of a typed one, and written to a small JSON record
from which the reproduction report and ``claims.json`` are built.

Comparisons
-----------
:meth:`Ledger.close`
    ``|measured - expected| <= atol + rtol |expected|`` (element-wise for arrays).
:meth:`Ledger.bound`
    ``measured <= upper`` and/or ``measured >= lower``.
:meth:`Ledger.sign`
    ``measured > 0`` or ``measured < 0``.
:meth:`Ledger.order`
    a sequence strictly increasing or decreasing.
:meth:`Ledger.true`
    a boolean computed by the page (an exact property, a count, a set equality).
:meth:`Ledger.record`
    a row with no numeric check (``derived``, ``stated``, ``missing``): the result is derived in
    the text or only stated; ``holds`` is ``None``.

Evidence
--------
Every comparison names the kind of its evidence (``evidence=``, one of :data:`EVIDENCE`):

``identity``
    an exact relation checked numerically; both sides are computed from the same ingredients.
``construction``
    a property true by how the object was built (it guards the code, it reproduces nothing).
``independent``
    one quantity computed two independent ways (closed form against autograd, quadrature, an ODE
    solver, a minimiser, high precision).
``simulation``
    a stochastic simulation against theory; pass the standard error of the measured value over
    independent replicas or seeds as ``se=`` (and, where the tolerance is a number of standard
    errors, that number as ``n_se=``). A simulation claim whose measured value has no sampling
    error to state (a count over every replica, such as "none of the 64 runs diverged") says why in
    ``se_reason=`` instead; the report shows that sentence where the standard error would be.

Resolving power
---------------
For every :meth:`Ledger.close` claim the ledger records ``power``: the smallest relative
distortion δ of ``expected`` (``e -> e(1 ± δ)``, element-wise, the worse of the two signs) that the
check rejects (:func:`resolving_power`); ``inf`` where no scaling can fail it (``expected = 0``,
``rtol >= 1`` one way). A :meth:`Ledger.bound` with ``reference=`` (the theory value its limits come
from) records the same for a shift of its limits by ``δ·abs(reference)`` (:func:`bound_power`). A claim
whose ``power`` is at most 0.1 would reject a 10%-wrong theory.

Tolerances may differ between full size and quick mode: pass ``quick_rtol`` / ``quick_atol``
(or a ``quick_*`` bound) and the ledger picks the one for the current mode
(:func:`symbreak.config.quick_mode`).

Records go to ``<book root>/_build/claims/<mode>/<page>.json`` (the book root is the nearest
folder above the working directory holding ``_toc.yml``), or to ``$SYMBREAK_CLAIMS_DIR`` when set.
Outside a book checkout nothing is written; the checks still run.

Extra: ``symbreak[book]`` to glue the claims into a page (myst-nb's ``glue``, used only inside a
notebook kernel); the checks, the records and the report need only the core dependencies (PyYAML
reads the inventories).
"""

from __future__ import annotations

import json
import math
import numbers
import os
import pathlib
import re
from dataclasses import dataclass, field

import numpy as np

from .config import quick_mode
from .stats import standard_error

__all__ = [
    "PAPERS",
    "STATUSES",
    "EVIDENCE",
    "resolving_power",
    "bound_power",
    "ClaimError",
    "Ledger",
    "ClaimTable",
    "records_dir",
]

#: Papers (chapters) a claim can belong to.
PAPERS = ("platonic", "autoencoder", "dln", "beyond")
#: What the book does with a result.
STATUSES = ("derived", "reproduced", "derived+reproduced", "stated", "missing", "deviates")
#: Statuses whose rows must be backed by at least one computed claim that holds.
CHECKED_STATUSES = ("reproduced", "derived+reproduced", "deviates")
#: Kinds of evidence a comparison carries (see the module's docstring).
EVIDENCE = ("identity", "construction", "independent", "simulation")
#: Evidence that can reproduce a result (the others check the book's own algebra or code).
REPRODUCING = ("independent", "simulation")
#: A close claim reproduces a result only when it rejects a theory this far off (relative).
POWER_LIMIT = 0.10
#: Whether a comparison without ``evidence=`` is refused.
REQUIRE_EVIDENCE = True

_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")

#: A paper's own numbering in a ledger reference ("Eq. C.53", "Theorem 1.9", "Sec. 8.3", ...).
_PAPER_NUMBER = re.compile(r"(?<![\w-])(Eqs?\.|Theorems?|Lemmas?|Figs?\.|Secs?\.|App\.|Footnotes?|Abstract)(?=[\s:])")


#: A range of equations written with the singular ("P-Eq. A.11–A.12"): printed "P-Eqs. A.11–A.12".
_EQ_RANGE = re.compile(r"P-Eq\. (\S+–\S+)")


def paper_ref(ref: str) -> str:
    """A ledger reference as the book prints it: the paper's numbers with the prefix ``P-``.

    The ledger keeps the paper's own numbering (``"Eq. C.53"``, ``"Book: depth limit (Sec. 1.2)"``);
    the pages, the report and a claim's printed line write ``P-Eq. C.53``, ``Book: depth limit
    (P-Sec. 1.2)``, so that a paper's number is never mistaken for one of the book's.

    >>> paper_ref("Eq. A.11–A.12"), paper_ref("Book: corollary of Theorem 1.3"), paper_ref("Book: sharpness")
    ('P-Eqs. A.11–A.12', 'Book: corollary of P-Theorem 1.3', 'Book: sharpness')
    """
    if not isinstance(ref, str):
        raise ValueError(f"ref must be a string, got {type(ref).__name__}")
    return _EQ_RANGE.sub(r"P-Eqs. \1", _PAPER_NUMBER.sub(r"P-\1", ref))


_ENV_DIR = "SYMBREAK_CLAIMS_DIR"
# ``SYMBREAK_CLAIMS_RAISE=0``: record a claim that does not hold instead of raising (only
# ``tools/seeds.py`` sets it, to count on how many seeds each claim holds); unset or 1: raise.
_ENV_RAISE = "SYMBREAK_CLAIMS_RAISE"


def _raise_on_failure() -> bool:
    raw = os.environ.get(_ENV_RAISE, "").strip()
    if raw in ("", "1"):
        return True
    if raw == "0":
        return False
    raise ValueError(f"{_ENV_RAISE}={raw!r} is not understood: use 1 (or unset) to raise, 0 to record only")


class ClaimError(AssertionError):
    """A claim the book makes does not hold for the numbers just computed."""


# ---------------------------------------------------------------------------------------------
# where records go
# ---------------------------------------------------------------------------------------------


def _book_root(start: pathlib.Path | None = None) -> pathlib.Path | None:
    here = (start or pathlib.Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file():
            return folder
    return None


def records_dir(mode: str | None = None, *, root: pathlib.Path | None = None) -> pathlib.Path | None:
    """Folder that holds the claim records of one mode (``"full"`` or ``"quick"``).

    ``$SYMBREAK_CLAIMS_DIR/<mode>`` when the variable is set, else
    ``<book root>/_build/claims/<mode>``; ``None`` outside a book checkout.
    """
    mode = mode or ("quick" if quick_mode() else "full")
    if mode not in ("full", "quick"):
        raise ValueError(f"mode must be 'full' or 'quick', got {mode!r}")
    env = os.environ.get(_ENV_DIR, "").strip()
    if env:
        return pathlib.Path(env) / mode
    root = root or _book_root()
    if root is None:
        return None
    return root / "_build" / "claims" / mode


# ---------------------------------------------------------------------------------------------
# values to JSON
# ---------------------------------------------------------------------------------------------


def _jsonable(value):
    """Plain JSON value for a number, array, string or bool (non-finite floats become strings)."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        return v if math.isfinite(v) else repr(v)
    if isinstance(value, (list, tuple, np.ndarray)):
        arr = np.asarray(value)
        if arr.dtype.kind in "biuf" and arr.size <= 64:
            return [_jsonable(v) for v in arr.ravel().tolist()]
        if arr.dtype.kind in "biuf":
            return {"size": int(arr.size), "min": _jsonable(arr.min()), "max": _jsonable(arr.max())}
        return [str(v) for v in arr.ravel().tolist()]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def _real_array(name: str, value) -> np.ndarray:
    """``value`` as a float array; integers beyond ``2**53`` (not exactly a float) are refused."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real number or array of real numbers: {exc}") from None
    if (
        arr.dtype.kind == "O"
        and arr.size
        and all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in arr.ravel())
    ):
        raise ValueError(f"{name} holds an integer beyond the int64 range: it cannot be compared as a float64")
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number or array of real numbers, got {_shorten(repr(value))}")
    if arr.dtype.kind in "iu" and arr.size and np.max(np.abs(arr.astype(float))) > 2.0**53:
        raise ValueError(
            f"{name} holds an integer beyond 2**53 = {2**53}: float64 cannot represent it exactly, so the "
            "comparison would be decided by rounding; compare exactly with Ledger.true"
        )
    return arr.astype(float)


def _check_limit(name: str, value) -> float:
    """A tolerance or bound: a real number (not a bool, a string or complex)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    return float(value)


def _fmt(value, fmt: str) -> str:
    arr = np.asarray(value)
    if arr.ndim == 0:
        v = arr.item()
        if isinstance(v, (bool, np.bool_)):
            return str(bool(v))
        return fmt.format(v)
    return ", ".join(fmt.format(v) for v in arr.ravel())


# ---------------------------------------------------------------------------------------------
# resolving power
# ---------------------------------------------------------------------------------------------


def _first_failure(m: np.ndarray, e: np.ndarray, rtol: float, atol: float, s: int) -> np.ndarray:
    """Smallest δ >= 0 at which ``|m - e(1 + sδ)| <= atol + rtol |e(1 + sδ)|`` stops holding
    (element-wise; ``inf`` where it never does, e.g. ``e = 0``).

    The margin ``g(δ) = |m - e(1+sδ)| - atol - rtol|e||1+sδ|`` is piecewise linear in δ with kinks
    where ``e(1+sδ) = m`` and where ``1 + sδ = 0``; the first δ with ``g > 0`` lies on the first
    segment whose far end (or, on the last segment, whose slope) is positive.
    """
    nz = e != 0

    def g(d):
        ed = e * (1 + s * d)
        return np.abs(m - ed) - atol - rtol * np.abs(ed)

    with np.errstate(divide="ignore", invalid="ignore"):
        k1 = np.where(nz, s * (m - e) / np.where(nz, e, 1.0), np.inf)
    k1 = np.where(k1 > 0, k1, np.inf)
    k2 = np.full_like(k1, np.inf if s > 0 else 1.0)
    ends = np.sort(np.stack([k1, k2]), axis=0)
    out = np.where(g(np.zeros_like(m)) > 0, 0.0, np.inf)
    done = out == 0.0
    a = np.zeros_like(m)
    for b in ends:
        fin = np.isfinite(b) & ~done
        bb = np.where(fin, b, a)
        ga, gb = g(a), g(bb)
        hit = fin & (gb > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            root = a - ga * (bb - a) / (gb - ga)
        out = np.where(hit, root, out)
        done |= hit
        a = np.where(fin, bb, a)
    ga, slope = g(a), g(a + 1.0) - g(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        root = a - ga / slope
    out = np.where(~done & (slope > 0), root, out)
    return np.where(nz, out, np.inf)


def resolving_power(measured, expected, *, rtol: float = 0.0, atol: float = 0.0) -> float:
    """The smallest relative distortion of ``expected`` that ``close`` would reject.

    ``expected`` is scaled to ``e(1 + δ)`` and to ``e(1 - δ)`` (every element by the same factor);
    for each sign the check ``|m - e'| <= atol + rtol |e'|`` first fails, on some element, at a
    δ (the infimum of the failing δ); the power is the larger of the two (the worse sign). ``inf``
    where a sign can never fail the check (every ``expected`` zero, or ``rtol >= 1`` upwards). A
    claim with power 0.05 would reject a theory 5% off in either direction; power 0.43 lets a
    theory 40% off pass one way.

    Parameters
    ----------
    measured, expected : float or array_like
        As given to :meth:`Ledger.close` (broadcast together).
    rtol, atol : float
        The tolerance in effect.

    Returns
    -------
    float

    Examples
    --------
    >>> round(resolving_power(1.0, 1.0, rtol=0.05), 6)   # (0.05)/(1 - 0.05) upwards
    0.052632
    >>> resolving_power(0.0, 0.0, atol=1e-9)
    inf
    """
    m, e = _real_array("measured", measured), _real_array("expected", expected)
    for name, arr in (("measured", m), ("expected", e)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite: a non-finite value has no resolving power")
    rtol, atol = _check_limit("rtol", rtol), _check_limit("atol", atol)
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if not (math.isfinite(tol) and tol >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {tol!r}")
    try:
        m, e = np.broadcast_arrays(m, e)
    except ValueError:
        raise ValueError(f"measured {m.shape} and expected {e.shape} must broadcast together") from None
    m, e = m.ravel(), e.ravel()
    if m.size == 0:
        return math.inf
    # δ is a relative distortion, so scaling m, e and atol by one power of two leaves it exactly as it
    # is; values near the float limit are brought down first, so that m − e cannot overflow
    top = float(np.max(np.abs(np.concatenate([m, e])), initial=0.0))
    if math.isfinite(top) and top > 2.0**900:
        f = 2.0 ** -math.frexp(top)[1]
        m, e, atol = m * f, e * f, atol * f
    return float(max(np.min(_first_failure(m, e, float(rtol), float(atol), s)) for s in (1, -1)))


def bound_power(measured, reference, *, lower=None, upper=None) -> float:
    """Resolving power of a bound whose limits come from a theory value ``reference``.

    Each limit is moved towards the measured values by ``δ·abs(reference)`` (a theory ``δ`` off, in the
    direction that tightens the limit); the check fails, for a limit, once δ exceeds the smallest
    slack ``(upper - m)/|reference|`` or ``(m - lower)/|reference|``. A two-sided bound has the
    larger of its two (the worse sign); ``inf`` for ``reference = 0``.

    Examples
    --------
    >>> round(bound_power(0.9, 1.0, upper=1.0), 6)
    0.1
    >>> round(bound_power([0.95, 0.99], 1.0, lower=0.9, upper=1.0), 6)
    0.05
    """
    m = _real_array("measured", measured).ravel()
    ref = _real_array("reference", reference)
    if ref.size == 0:
        raise ValueError("reference must not be empty")
    limits = {}
    for name, value in (("lower", lower), ("upper", upper)):
        if value is not None:
            limits[name] = _real_array(name, value)
            if np.any(np.isnan(limits[name])):
                raise ValueError(f"{name} must not be NaN")
    if not limits:
        raise ValueError("bound_power needs lower or upper (or both)")
    lower, upper = limits.get("lower"), limits.get("upper")
    r = float(np.max(np.abs(ref)))
    if r == 0 or not math.isfinite(r):
        return math.inf
    slacks = []
    if upper is not None:
        slacks.append(float(np.min(upper - m)) / r)
    if lower is not None:
        slacks.append(float(np.min(m - lower)) / r)
    return max(0.0, max(slacks))


def _check_evidence(evidence, se, n_se, se_reason):
    if evidence is None:
        if REQUIRE_EVIDENCE:
            raise ValueError(f"evidence must be one of {EVIDENCE}, got None")
    elif evidence not in EVIDENCE:
        raise ValueError(f"evidence must be one of {EVIDENCE}, got {evidence!r}")
    if se is not None:
        arr = _real_array("se", se)
        if not (np.all(np.isfinite(arr)) and np.all(arr >= 0)):
            raise ValueError(f"se must be finite and >= 0, got {se!r}")
        if evidence != "simulation":
            raise ValueError(
                f"se is the standard error of a simulation: evidence must be 'simulation', got {evidence!r}"
            )
    if n_se is not None:
        if not (isinstance(n_se, numbers.Real) and math.isfinite(n_se) and n_se > 0):
            raise ValueError(f"n_se must be a number of standard errors > 0, got {n_se!r}")
        if se is None:
            raise ValueError("n_se (a tolerance in standard errors) needs se")
    if se_reason is not None:
        if not isinstance(se_reason, str) or not se_reason.strip():
            raise ValueError(f"se_reason must be a non-empty sentence, got {se_reason!r}")
        if evidence != "simulation":
            raise ValueError(
                f"se_reason says why a simulation has no standard error: evidence must be 'simulation', got {evidence!r}"
            )
        if se is not None:
            raise ValueError("se_reason is for a simulation claim without se: give one or the other")


# ---------------------------------------------------------------------------------------------
# the ledger a page opens
# ---------------------------------------------------------------------------------------------


@dataclass
class Ledger:
    """The claims of one page.

    Parameters
    ----------
    page : str
        The page's document name in the book, e.g. ``"book/autoencoder/lambert"`` (as in
        ``_toc.yml``). Opening a ledger empties that page's record file.
    paper : str
        Default paper of the page's claims, one of :data:`PAPERS`.
    glue : bool, optional
        Glue every claim's value for the prose (default: only inside an IPython kernel).
    write : bool, optional
        Write the JSON record (default: when inside a book checkout).

    Examples
    --------
    >>> led = Ledger("book/autoencoder/lambert", "autoencoder", glue=False, write=False)
    >>> led.close("ae-demo", "Eq. 6", "a number equals itself", 1.0, 1.0, rtol=1e-12, evidence="identity").holds
    True
    """

    page: str
    paper: str
    glue: bool | None = None
    write: bool | None = None
    claims: list = field(default_factory=list, repr=False)

    def __post_init__(self):
        if not isinstance(self.page, str) or not self.page.strip():
            raise ValueError(f"page must be the page's document name, got {self.page!r}")
        if self.paper not in PAPERS:
            raise ValueError(f"paper must be one of {PAPERS}, got {self.paper!r}")
        if self.glue is None:
            self.glue = _in_kernel()
        self._dir = records_dir() if self.write in (None, True) else None
        if self.write and self._dir is None:
            raise ValueError("write=True but no book root (_toc.yml) above the working directory")
        self._ids: set[str] = set()
        self._shown = 0
        if self._dir is not None:
            self._dump()
        if self.glue:
            _show_tables_after_cells(self)

    # -- paths ----------------------------------------------------------------------------
    @property
    def path(self) -> pathlib.Path | None:
        """Where this page's records are written (``None`` when not written)."""
        if self._dir is None:
            return None
        return self._dir / (self.page.replace("/", "__") + ".json")

    def _dump(self) -> None:
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"page": self.page, "claims": self.claims}, indent=1))
        tmp.replace(path)

    # -- the common path of every claim -----------------------------------------------------
    def _add(
        self,
        *,
        id,
        ref,
        statement,
        status,
        paper,
        kind,
        measured,
        expected,
        tolerance,
        holds,
        detail,
        fmt,
        glue_values,
        evidence=None,
        power=None,
        se=None,
        n_se=None,
        se_reason=None,
    ):
        if not isinstance(id, str) or not _ID.match(id):
            raise ValueError(f"id must be lower-case letters, digits and '-', got {id!r}")
        if id in self._ids:
            raise ValueError(f"claim id {id!r} is used twice on page {self.page}")
        if not isinstance(ref, str) or not ref.strip():
            raise ValueError(f"ref must name the paper's result (e.g. 'Eq. 6'), got {ref!r}")
        if not isinstance(statement, str) or not statement.strip():
            raise ValueError("statement must be a non-empty sentence")
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
        paper = paper or self.paper
        if paper not in PAPERS:
            raise ValueError(f"paper must be one of {PAPERS}, got {paper!r}")
        self._ids.add(id)
        rec = {
            "id": id,
            "paper": paper,
            "ref": ref,
            "statement": statement,
            "status": status,
            "kind": kind,
            "measured": _jsonable(measured),
            "expected": _jsonable(expected),
            "tolerance": _jsonable(tolerance),
            "holds": None if holds is None else bool(holds),
            "evidence": evidence,
            "power": None if power is None else _jsonable(float(power)),
            "se": _jsonable(se),
            "n_se": n_se,
            "se_reason": se_reason,
            "detail": detail,
            "mode": "quick" if quick_mode() else "full",
            "page": self.page,
        }
        self.claims.append(rec)
        if self._dir is not None:
            self._dump()
        if self.glue:
            _glue_all(id, glue_values)
        claim = Claim(
            **{k: rec[k] for k in ("id", "ref", "statement", "holds", "detail")}, measured=measured, expected=expected
        )
        if holds is False and _raise_on_failure():
            raise ClaimError(f"[{self.page}] claim {id} ({ref}) does not hold: {statement} — {detail}")
        return claim

    # -- comparisons ----------------------------------------------------------------------
    def close(
        self,
        id,
        ref,
        statement,
        measured,
        expected,
        *,
        rtol=0.0,
        atol=0.0,
        quick_rtol=None,
        quick_atol=None,
        status="reproduced",
        paper=None,
        fmt="{:.4g}",
        evidence=None,
        se=None,
        n_se=None,
        se_reason=None,
    ):
        """Claim ``|measured - expected| <= atol + rtol*|expected|`` (element-wise).

        ``evidence`` is one of :data:`EVIDENCE`; ``se`` the standard error of ``measured`` (a
        simulation), ``n_se`` how many of them the tolerance is, ``se_reason`` why a simulation has
        none (a count over all replicas). The record carries ``power``
        (:func:`resolving_power`). Glues ``id`` (measured), ``id-expected``, ``id-err`` (largest
        relative error, as a percentage string when ``expected`` is non-zero, else the absolute
        error) and ``id-power`` (the power as a percentage).
        """
        _check_evidence(evidence, se, n_se, se_reason)
        rtol, atol = self._pick(rtol, quick_rtol), self._pick(atol, quick_atol)
        for name, v in (("rtol", rtol), ("atol", atol)):
            if not (math.isfinite(_check_limit(name, v)) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if rtol == 0 and atol == 0:
            raise ValueError("close() needs rtol > 0 or atol > 0")
        m, e = _real_array("measured", measured), _real_array("expected", expected)
        try:
            m, e = np.broadcast_arrays(m, e)
        except ValueError as err:
            raise ValueError(f"measured {m.shape} and expected {e.shape} do not broadcast") from err
        if m.size == 0:
            raise ValueError("measured is empty")
        if not np.all(np.isfinite(e)):
            raise ValueError(
                f"expected must be finite to be compared, got {_fmt(expected, fmt)} (a theory value that overflowed "
                "float64: compare its logarithm, or in units that keep it finite)"
            )
        finite = bool(np.all(np.isfinite(m)))  # a non-finite measurement fails the claim
        # compared in units of a power of two near the largest magnitude (exact: the same verdict as
        # |m − e| ≤ atol + rtol·|e|), so that |m − e| and rtol·|e| cannot overflow
        big = float(max(np.max(np.abs(m[np.isfinite(m)]), initial=0.0), np.max(np.abs(e)), 1e-300))
        scale = math.ldexp(1.0, math.frexp(big)[1] - 1)  # in (big/2, big]: m/scale, e/scale in [-2, 2]
        with np.errstate(invalid="ignore", over="ignore"):
            abs_err = np.abs(m / scale - e / scale) * scale
            ok = finite and bool(np.all(np.abs(m / scale - e / scale) <= atol / scale + rtol * np.abs(e / scale)))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(e != 0, abs_err / np.abs(e), np.nan)
        max_abs = float(np.nanmax(abs_err)) if finite else float("nan")
        max_rel = float(np.nanmax(rel)) if finite and np.any(e != 0) else float("nan")
        err_text = f"{100 * max_rel:.2g}%" if math.isfinite(max_rel) else f"{max_abs:.2g}"
        power = resolving_power(m, e, rtol=rtol, atol=atol) if finite else math.nan
        power_text = f"{100 * power:.2g}%" if math.isfinite(power) else "none"
        detail = (
            f"measured {_fmt(measured, fmt)}, expected {_fmt(expected, fmt)}, "
            f"max abs err {max_abs:.3g}, max rel err {max_rel:.3g}; tolerance atol={atol:g}, rtol={rtol:g}"
        )
        return self._add(
            id=id,
            ref=ref,
            statement=statement,
            status=status,
            paper=paper,
            kind="close",
            measured=measured,
            expected=expected,
            tolerance={"rtol": rtol, "atol": atol, "max_rel_err": max_rel, "max_abs_err": max_abs},
            holds=ok,
            detail=detail,
            fmt=fmt,
            glue_values={
                id: _fmt(measured, fmt),
                f"{id}-expected": _fmt(expected, fmt),
                f"{id}-err": err_text,
                f"{id}-power": power_text,
            },
            evidence=evidence,
            power=power,
            se=se,
            n_se=n_se,
            se_reason=se_reason,
        )

    def bound(
        self,
        id,
        ref,
        statement,
        measured,
        *,
        lower=None,
        upper=None,
        quick_lower=None,
        quick_upper=None,
        strict=False,
        status="reproduced",
        paper=None,
        fmt="{:.4g}",
        evidence=None,
        reference=None,
        se=None,
        n_se=None,
        se_reason=None,
    ):
        """Claim ``lower <= measured <= upper`` (either side may be omitted; ``strict`` for < ).

        ``reference`` is the theory value the limits come from: the record then carries its
        ``power`` (:func:`bound_power`). ``evidence``, ``se``, ``n_se`` as for :meth:`close`."""
        _check_evidence(evidence, se, n_se, se_reason)
        lower, upper = self._pick(lower, quick_lower), self._pick(upper, quick_upper)
        if lower is None and upper is None:
            raise ValueError("bound() needs lower or upper")
        for name, v in (("lower", lower), ("upper", upper)):
            if v is not None and math.isnan(_check_limit(name, v)):
                raise ValueError(f"{name} must not be NaN")
        if not isinstance(strict, (bool, np.bool_)):
            raise TypeError(f"strict must be a bool, got {type(strict).__name__} {strict!r}")
        m = _real_array("measured", measured)
        ok = bool(np.all(np.isfinite(m)))
        if lower is not None:
            ok = ok and bool(np.all(m > lower) if strict else np.all(m >= lower))
        if upper is not None:
            ok = ok and bool(np.all(m < upper) if strict else np.all(m <= upper))
        lt = "<" if strict else "≤"
        expected = f"{'' if lower is None else f'{lower:g} {lt} '}value{'' if upper is None else f' {lt} {upper:g}'}"
        detail = f"measured {_fmt(measured, fmt)}; required {expected}"
        return self._add(
            id=id,
            ref=ref,
            statement=statement,
            status=status,
            paper=paper,
            kind="bound",
            measured=measured,
            expected=expected,
            tolerance={"lower": lower, "upper": upper, "strict": strict, "reference": _jsonable(reference)},
            holds=ok,
            detail=detail,
            fmt=fmt,
            glue_values={id: _fmt(measured, fmt)},
            evidence=evidence,
            power=None
            if reference is None
            else bound_power(m, _real_array("reference", reference), lower=lower, upper=upper),
            se=se,
            n_se=n_se,
            se_reason=se_reason,
        )

    def sign(
        self,
        id,
        ref,
        statement,
        measured,
        *,
        positive=True,
        status="reproduced",
        paper=None,
        fmt="{:.4g}",
        evidence=None,
        se=None,
        n_se=None,
        se_reason=None,
    ):
        """Claim ``measured > 0`` (``positive=True``) or ``measured < 0``."""
        _check_evidence(evidence, se, n_se, se_reason)
        m = _real_array("measured", measured)
        ok = bool(np.all(np.isfinite(m)) and (np.all(m > 0) if positive else np.all(m < 0)))
        expected = "> 0" if positive else "< 0"
        return self._add(
            id=id,
            ref=ref,
            statement=statement,
            status=status,
            paper=paper,
            kind="sign",
            measured=measured,
            expected=expected,
            tolerance=None,
            holds=ok,
            detail=f"measured {_fmt(measured, fmt)}; required {expected}",
            fmt=fmt,
            glue_values={id: _fmt(measured, fmt)},
            evidence=evidence,
            se=se,
            n_se=n_se,
            se_reason=se_reason,
        )

    def order(
        self,
        id,
        ref,
        statement,
        values,
        *,
        increasing=True,
        strict=True,
        status="reproduced",
        paper=None,
        fmt="{:.4g}",
        evidence=None,
        se=None,
        n_se=None,
        se_reason=None,
    ):
        """Claim that ``values`` (a 1-D sequence) is increasing (or decreasing)."""
        _check_evidence(evidence, se, n_se, se_reason)
        v = _real_array("values", values).ravel()
        if v.size < 2:
            raise ValueError("order() needs at least two values")
        d = np.diff(v) if increasing else -np.diff(v)
        ok = bool(np.all(np.isfinite(v)) and (np.all(d > 0) if strict else np.all(d >= 0)))
        expected = ("strictly " if strict else "") + ("increasing" if increasing else "decreasing")
        return self._add(
            id=id,
            ref=ref,
            statement=statement,
            status=status,
            paper=paper,
            kind="order",
            measured=values,
            expected=expected,
            tolerance=None,
            holds=ok,
            detail=f"values {_fmt(values, fmt)}; required {expected}",
            fmt=fmt,
            glue_values={id: _fmt(values, fmt)},
            evidence=evidence,
            se=se,
            n_se=n_se,
            se_reason=se_reason,
        )

    def true(
        self,
        id,
        ref,
        statement,
        condition,
        *,
        measured=None,
        expected=None,
        status="reproduced",
        paper=None,
        fmt="{:.4g}",
        evidence=None,
        se=None,
        n_se=None,
        se_reason=None,
    ):
        """Claim a condition computed on the page (e.g. an exact property or a count).

        ``measured`` and ``expected`` are what the report shows (e.g. a count of zero modes and the
        count the theorem gives, ``"≥ 2"`` for a ratio); ``condition`` decides. Without them the
        report shows the condition itself against ``True``."""
        _check_evidence(evidence, se, n_se, se_reason)
        if not isinstance(condition, (bool, np.bool_)):
            raise TypeError(f"condition must be a bool, got {type(condition).__name__}")
        if expected is not None and measured is None:
            raise ValueError("expected needs measured (what is compared with it)")
        shown = measured if measured is not None else bool(condition)
        return self._add(
            id=id,
            ref=ref,
            statement=statement,
            status=status,
            paper=paper,
            kind="true",
            measured=shown,
            expected=True if expected is None else expected,
            tolerance=None,
            holds=bool(condition),
            detail=("the condition holds" if condition else "the condition does not hold")
            + ("" if measured is None else f" (measured {_fmt(measured, fmt)})"),
            fmt=fmt,
            glue_values={id: _fmt(shown, fmt)},
            evidence=evidence,
            se=se,
            n_se=n_se,
            se_reason=se_reason,
        )

    def record(self, id, ref, statement, *, status="derived", paper=None, measured=None):
        """A row with no numeric check: derived in the text, stated only, or missing."""
        if status in CHECKED_STATUSES:
            raise ValueError(f"status {status!r} needs a numeric check: use close/bound/sign/order/true")
        return self._add(
            id=id,
            ref=ref,
            statement=statement,
            status=status,
            paper=paper,
            kind="record",
            measured=measured,
            expected=None,
            tolerance=None,
            holds=None,
            detail="no numeric check",
            fmt="{}",
            glue_values={},
        )

    # -- helpers ----------------------------------------------------------------------------
    @staticmethod
    def se(values, axis=0):
        """Standard error of the mean of ``values`` over independent replicas or seeds along
        ``axis`` (:func:`symbreak.stats.standard_error`, for the ``se=`` of a simulation claim).

        Raises
        ------
        ValueError
            With fewer than two replicas along ``axis``.

        Examples
        --------
        >>> round(float(Ledger.se([1.0, 2.0, 3.0])), 6)
        0.57735
        """
        return standard_error(values, axis=axis)

    @staticmethod
    def _pick(full, quick):
        return quick if (quick is not None and quick_mode()) else full

    def table(self, claims: list | None = None) -> ClaimTable:
        """The claims recorded since the last table (or ``claims``) as a :class:`ClaimTable`.

        In a page (an IPython kernel with glue on) every cell that records claims ends with this
        table by itself; call it to show one elsewhere."""
        if claims is None:
            claims, self._shown = self.claims[self._shown :], len(self.claims)
        return ClaimTable(list(claims), self.page)

    def summary(self) -> str:
        """One line per claim: id, holds, detail."""
        return "\n".join(f"{c['id']}: {'holds' if c['holds'] else c['holds']} — {c['detail']}" for c in self.claims)


@dataclass(frozen=True, repr=False)
class Claim:
    """What a claim call returns: the verdict and the numbers, for further use on the page."""

    id: str
    ref: str
    statement: str
    holds: bool | None
    detail: str
    measured: object = None
    expected: object = None

    def __repr__(self) -> str:
        """One short line for the reader (a page that ends a cell with a claim call shows this, not
        the arrays): what was checked, the verdict, the numbers, and the claim's row in the report."""
        verdict = {True: "holds", False: "FAILS", None: "recorded"}[self.holds]
        return (
            f"Checked on this page ({paper_ref(self.ref)}): {verdict}; {_shorten(self.detail)} [report row {self.id}]"
        )

    def _ipython_display_(self) -> None:
        """A cell that ends with a claim call shows nothing more when its ledger ends the cell with
        its table (:meth:`Ledger.table`); else the one line of :meth:`__repr__`."""
        if not _TABLES[0]:
            print(repr(self))


#: Where the reproduction report lives in the book (its rows have the anchors ``claim-<id>``).
REPORT_PAGE = "book/reproduction-report"


def _short_value(rec: dict, key: str) -> str:
    value = rec.get(key)
    if isinstance(value, bool):
        return "holds" if value else "does not hold"
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    if isinstance(value, dict) and {"size", "min", "max"} <= set(value):  # a large array's summary
        return f"{value['size']:,} values in [{value['min']:.3g}, {value['max']:.3g}]"
    if isinstance(value, list):
        flat = np.asarray(value, dtype=object).ravel()
        if flat.size and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in flat):
            head = ", ".join(f"{v:.3g}" for v in flat[:3])
            return head + (f", … ({flat.size} values)" if flat.size > 3 else "")
    return _shorten(str(value), 40) if value is not None else ""


def _compared_with(rec: dict) -> str:
    expected = _short_value(rec, "expected")
    tol = rec.get("tolerance") or {}
    if rec.get("kind") == "close":
        parts = [f"rtol {tol['rtol']:g}" for _ in [0] if tol.get("rtol")] + [
            f"atol {tol['atol']:g}" for _ in [0] if tol.get("atol")
        ]
        return f"{expected} ({', '.join(parts)})" if parts else expected
    if rec.get("kind") == "bound" and isinstance(tol, dict):
        lo, hi = tol.get("lower"), tol.get("upper")
        if lo is not None and hi is not None:
            return f"in [{lo:.4g}, {hi:.4g}]"
        if hi is not None:
            return f"≤ {hi:.4g}"
        if lo is not None:
            return f"≥ {lo:.4g}"
    return expected


@dataclass(frozen=True, repr=False)
class ClaimTable:
    """The claims one cell recorded, as the short table a check cell shows: claim (linked to its
    row of the reproduction report), result of the paper, measured (± its standard error),
    compared with, evidence, verdict."""

    claims: list
    page: str

    def rows(self) -> list[dict]:
        if not isinstance(self.claims, (list, tuple)):
            raise TypeError(f"claims must be a list of claim records (dicts), got {type(self.claims).__name__}")
        out = []
        for i, rec in enumerate(self.claims):
            if not isinstance(rec, dict) or "id" not in rec or "ref" not in rec:
                raise TypeError(f"claims[{i}] must be a claim record (a dict with 'id' and 'ref'), got {rec!r:.80}")
            measured = _short_value(rec, "measured")
            se = rec.get("se")
            if isinstance(se, (int, float)) and measured:
                measured += f" ± {se:.2g}"
            verdict = {True: "✓", False: "✗ fails", None: "recorded"}[rec.get("holds")]
            out.append(
                {
                    "claim": rec["id"],
                    "result": paper_ref(rec["ref"]),
                    "measured": measured,
                    "compared with": _compared_with(rec),
                    "evidence": rec.get("evidence") or "",
                    "": verdict,
                }
            )
        return out

    def _report_link(self, claim_id: str) -> str:
        import posixpath

        here = posixpath.dirname(self.page) or "."
        return posixpath.relpath(REPORT_PAGE, here) + f".html#claim-{claim_id}"

    def __repr__(self) -> str:
        rows = self.rows()
        if not rows:
            return "No claim was checked in this cell."
        head = f"Checked in this cell ({len(rows)} claim{'s' if len(rows) > 1 else ''}):"
        lines = [
            f"  {r[''] if r[''] != '✓' else '✓ holds'}  {r['claim']} ({r['result']}, {r['evidence']}): "
            f"measured {r['measured']}; compared with {r['compared with']}"
            for r in rows
        ]
        return "\n".join([head, *lines])

    def _repr_html_(self) -> str:
        import html

        rows = self.rows()
        if not rows:
            return ""
        cols = ["claim", "result", "measured", "compared with", "evidence", ""]
        body = []
        for r in rows:
            cells = [
                f'<a href="{html.escape(self._report_link(r["claim"]))}">{html.escape(r["claim"])}</a>',
                *(html.escape(str(r[c])) for c in cols[1:]),
            ]
            body.append("<tr>" + "".join(f'<td data-label="{c}">{v}</td>' for c, v in zip(cols, cells)) + "</tr>")
        n = len(rows)
        held = sum(r[""] == "✓" for r in rows)
        verdict = ("it holds" if n == 1 else "all hold") if held == n else f"{held} of {n} hold"
        caption = f"Checked in this cell: {n} claim{'s' if n > 1 else ''}, {verdict} (each links to its report row)"
        return (
            '<div class="claim-table"><table><caption>'
            + html.escape(caption)
            + "</caption><thead><tr>"
            + "".join(f"<th>{html.escape(c)}</th>" for c in cols)
            + "</tr></thead><tbody>"
            + "".join(body)
            + "</tbody></table></div>"
        )


def _show_tables_after_cells(ledger: Ledger) -> None:
    """In a kernel, end every cell that records claims of ``ledger`` with their table (one hook per
    kernel: a new ledger replaces the last one's)."""
    from IPython import get_ipython

    ip = get_ipython()
    if ip is None:  # pragma: no cover - glue is on only inside a kernel
        return
    old = getattr(ip, "_symbreak_table_hook", None)
    if old is not None:
        try:
            ip.events.unregister("post_run_cell", old)
        except ValueError:  # pragma: no cover - already gone
            pass

    def hook(result=None):
        if len(ledger.claims) > ledger._shown:
            from IPython.display import display

            display(ledger.table())

    ip.events.register("post_run_cell", hook)
    ip._symbreak_table_hook = hook
    _TABLES[0] = True


#: Whether a kernel's cells end with their claim tables (set by the first ledger opened in a kernel).
_TABLES = [False]


def _shorten(text: str, limit: int = 140) -> str:
    """``text`` cut to about ``limit`` characters at the end of a number or clause (", " or "; "),
    never inside one, with " …" where something was left out."""
    if len(text) <= limit:
        return text
    cut = max(text.rfind(", ", 0, limit), text.rfind("; ", 0, limit))
    return (text[:cut] if cut > 0 else text[:limit].rsplit(" ", 1)[0]) + " …"


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the book's requirements
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def _glue_all(id: str, values: dict) -> None:
    from myst_nb import glue

    for key, text in values.items():
        glue(key, text, display=False)


# The report's functions live in symbreak.report (which imports this module's constants); they
# are re-exported here on first use, so that ``symbreak.claims.build_report`` and
# ``python -m symbreak.claims`` keep working without an import cycle.
_REPORT_NAMES = frozenset(
    (
        "load_records",
        "load_inventory",
        "build_report",
        "build_results",
        "result_status",
        "proof_labels",
        "validate_report",
        "diff_reports",
        "main",
        "_as_float",
        "_validate_evidence",
        "_evidence_text",
        "_percent",
        "_slug",
        "_PRF_START",
        "_PRF_LABEL",
    )
)


def __getattr__(name: str):
    if name in _REPORT_NAMES:
        from . import report

        return getattr(report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":  # pragma: no cover
    from .report import main

    raise SystemExit(main())
