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
    errors, that number as ``n_se=``).

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

__all__ = [
    "PAPERS",
    "STATUSES",
    "EVIDENCE",
    "resolving_power",
    "bound_power",
    "ClaimError",
    "Ledger",
    "records_dir",
    "load_records",
    "load_inventory",
    "build_report",
    "build_results",
    "result_status",
    "proof_labels",
    "validate_report",
    "diff_reports",
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
    arr = np.asarray(value)
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number or array of real numbers, got {value!r}")
    return arr.astype(float)


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
    m, e = np.broadcast_arrays(np.asarray(measured, float), np.asarray(expected, float))
    m, e = m.ravel(), e.ravel()
    if m.size == 0:
        return math.inf
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
    m = np.asarray(measured, float).ravel()
    r = float(np.max(np.abs(np.asarray(reference, float))))
    if r == 0 or not math.isfinite(r):
        return math.inf
    slacks = []
    if upper is not None:
        slacks.append(float(np.min(upper - m)) / r)
    if lower is not None:
        slacks.append(float(np.min(m - lower)) / r)
    return max(0.0, max(slacks))


def _check_evidence(evidence, se, n_se):
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
        if self._dir is not None:
            self._dump()

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
        if holds is False:
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
    ):
        """Claim ``|measured - expected| <= atol + rtol*|expected|`` (element-wise).

        ``evidence`` is one of :data:`EVIDENCE`; ``se`` the standard error of ``measured`` (a
        simulation), ``n_se`` how many of them the tolerance is. The record carries ``power``
        (:func:`resolving_power`). Glues ``id`` (measured), ``id-expected``, ``id-err`` (largest
        relative error, as a percentage string when ``expected`` is non-zero, else the absolute
        error) and ``id-power`` (the power as a percentage).
        """
        _check_evidence(evidence, se, n_se)
        rtol, atol = self._pick(rtol, quick_rtol), self._pick(atol, quick_atol)
        for name, v in (("rtol", rtol), ("atol", atol)):
            if not (isinstance(v, numbers.Real) and math.isfinite(v) and v >= 0):
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
        finite = bool(np.all(np.isfinite(m)) and np.all(np.isfinite(e)))
        abs_err = np.abs(m - e)
        ok = finite and bool(np.all(abs_err <= atol + rtol * np.abs(e)))
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
    ):
        """Claim ``lower <= measured <= upper`` (either side may be omitted; ``strict`` for < ).

        ``reference`` is the theory value the limits come from: the record then carries its
        ``power`` (:func:`bound_power`). ``evidence``, ``se``, ``n_se`` as for :meth:`close`."""
        _check_evidence(evidence, se, n_se)
        lower, upper = self._pick(lower, quick_lower), self._pick(upper, quick_upper)
        if lower is None and upper is None:
            raise ValueError("bound() needs lower or upper")
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
    ):
        """Claim ``measured > 0`` (``positive=True``) or ``measured < 0``."""
        _check_evidence(evidence, se, n_se)
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
    ):
        """Claim that ``values`` (a 1-D sequence) is increasing (or decreasing)."""
        _check_evidence(evidence, se, n_se)
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
    ):
        """Claim a condition computed on the page (e.g. an exact property or a count).

        ``measured`` and ``expected`` are what the report shows (e.g. a count of zero modes and the
        count the theorem gives, ``"≥ 2"`` for a ratio); ``condition`` decides. Without them the
        report shows the condition itself against ``True``."""
        _check_evidence(evidence, se, n_se)
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
        ``axis``: ``std(ddof=1)/sqrt(n)`` (for the ``se=`` of a simulation claim).

        Raises
        ------
        ValueError
            With fewer than two replicas along ``axis``.

        Examples
        --------
        >>> round(float(Ledger.se([1.0, 2.0, 3.0])), 6)
        0.57735
        """
        x = np.asarray(values, dtype=float)
        n = x.shape[axis] if x.ndim else 1
        if n < 2:
            raise ValueError(f"values must hold at least two replicas along axis {axis}, got {n}")
        return x.std(axis=axis, ddof=1) / np.sqrt(n)

    @staticmethod
    def _pick(full, quick):
        return quick if (quick is not None and quick_mode()) else full

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


# ---------------------------------------------------------------------------------------------
# from records to the report
# ---------------------------------------------------------------------------------------------


def load_records(folder: pathlib.Path) -> list[dict]:
    """Every claim record in ``folder`` (one JSON file per page), in page then call order."""
    folder = pathlib.Path(folder)
    out: list[dict] = []
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        out.extend(data.get("claims", []))
    return out


def load_inventory(paths) -> list[dict]:
    """The numbered results of the papers, from YAML files (a list of rows each).

    Each row: ``paper``, ``ref`` (as the paper numbers it), ``statement``, ``status``
    (one of :data:`STATUSES`: what the book declares; the report computes the status from the
    evidence, :func:`result_status`), optional ``page`` (document name where the book treats it),
    optional ``claims`` (ids of computed claims that back it; by default every claim with the
    same ``paper`` and ``ref``), optional ``proof`` (the label of a ``prf:`` proof, or of a
    statement followed by its proof, on ``page``), optional ``power_reason`` (why a comparison
    coarser than 10% is all the paper's own accuracy allows) and optional ``note``.
    """
    import yaml

    rows: list[dict] = []
    for path in paths:
        data = yaml.safe_load(pathlib.Path(path).read_text()) or []
        if not isinstance(data, list):
            raise ValueError(f"{path}: the inventory must be a YAML list of rows")
        for row in data:
            missing = {"paper", "ref", "statement", "status"} - set(row)
            if missing:
                raise ValueError(f"{path}: row {row!r} lacks {sorted(missing)}")
            rows.append(dict(row, source=str(path)))
    return rows


def build_report(records: list[dict], inventory: list[dict]) -> tuple[list[dict], list[str]]:
    """Join computed claims with the inventory of numbered results.

    Returns ``(rows, problems)``. ``rows`` is what ``claims.json`` holds: every computed claim, and
    every inventory row that no claim backs (``holds`` ``None``). ``problems`` lists what makes the
    report untrustworthy: a failing claim, a checked inventory row with no claim behind it, an id
    used twice, an unknown status or paper.
    """
    problems: list[str] = []
    seen: dict[str, dict] = {}
    for rec in records:
        if rec["id"] in seen:
            problems.append(f"claim id {rec['id']} appears on {seen[rec['id']]['page']} and {rec['page']}")
        seen[rec["id"]] = rec
        if rec.get("status") not in STATUSES:
            problems.append(f"claim {rec['id']}: unknown status {rec.get('status')!r}")
        if rec.get("paper") not in PAPERS:
            problems.append(f"claim {rec['id']}: unknown paper {rec.get('paper')!r}")
        if rec.get("holds") is False:
            problems.append(f"claim {rec['id']} ({rec['ref']}) does not hold: {rec.get('detail')}")
    rows = [dict(r) for r in records]
    for item in inventory:
        if item["status"] not in STATUSES:
            problems.append(f"inventory {item['paper']} {item['ref']}: unknown status {item['status']!r}")
        if item["paper"] not in PAPERS:
            problems.append(f"inventory {item['ref']}: unknown paper {item['paper']!r}")
        ids = item.get("claims")
        if ids:
            backing = [seen[i] for i in ids if i in seen]
            for i in ids:
                if i not in seen:
                    problems.append(f"inventory {item['paper']} {item['ref']} names claim {i}, which no page recorded")
        else:
            backing = [r for r in records if r["paper"] == item["paper"] and r["ref"] == item["ref"]]
        if item["status"] in CHECKED_STATUSES and not any(r.get("holds") is not None for r in backing):
            problems.append(
                f"inventory {item['paper']} {item['ref']} is '{item['status']}' but no computed claim backs it"
            )
        if not backing:
            rows.append(
                {
                    "id": "inv-" + _slug(item["paper"] + "-" + item["ref"]),
                    "paper": item["paper"],
                    "ref": item["ref"],
                    "statement": item["statement"],
                    "status": item["status"],
                    "kind": "inventory",
                    "measured": None,
                    "expected": None,
                    "tolerance": None,
                    "holds": None,
                    "detail": item.get("note", ""),
                    "mode": None,
                    "page": item.get("page"),
                }
            )
    return rows, problems


#: Kinds of ``prf:`` directive (sphinx-proof) whose label a ``proof:`` of the inventory may name.
_PRF_START = re.compile(r"^\s*(?:[`:]{3,}\s*\{prf:([a-z]+)\}|\.\.\s+prf:([a-z]+)::)")
_PRF_LABEL = re.compile(r"^\s*:label:\s*(\S+)\s*$")


def proof_labels(text: str) -> dict[str, bool]:
    """``{label: has a proof}`` for every labelled ``prf:`` directive of a page's source (MyST or
    reST): a ``prf:proof`` has one; a theorem, lemma, proposition, ... has one when a ``prf:proof``
    follows it before the next labelled statement."""
    out: dict[str, bool] = {}
    lines = text.splitlines()
    last = None
    for i, line in enumerate(lines):
        m = _PRF_START.match(line)
        if not m:
            continue
        kind = m.group(1) or m.group(2)
        if kind == "proof" and last is not None:
            out[last] = True
        label = next((lm.group(1) for lm in map(_PRF_LABEL.match, lines[i + 1 : i + 8]) if lm), None)
        if label is None:
            continue
        out[label] = kind == "proof"
        last = None if kind == "proof" else label
    return out


def _evidence_text(backing: list[dict]) -> str:
    """What the claims behind a result have, in a few words ("identity only", "simulation, power 43%")."""
    held = [r for r in backing if r.get("holds") is True]
    if not held:
        return "no claim that holds" if backing else "no claim"
    kinds = sorted(
        {r.get("evidence") or "unlabelled" for r in held}, key=lambda k: (EVIDENCE + ("unlabelled",)).index(k)
    )
    text = " and ".join(kinds) + (" only" if not set(kinds) & set(REPRODUCING) else "")
    repro = [r for r in held if r.get("evidence") in REPRODUCING]
    with_se = [r for r in repro if r.get("evidence") != "simulation" or r.get("se") is not None]
    if repro and not with_se:
        text += "; simulation without se"
    powers = [_as_float(r.get("power")) for r in with_se]
    powers = [p for p in powers if p is not None]
    if powers and min(powers) > POWER_LIMIT:
        best = min(powers)
        text += "; power " + ("none" if math.isinf(best) else _percent(best))
    return text


def _percent(fraction: float) -> str:
    """A resolving power as a percentage, two significant digits, no exponent ("7.5%", "270%").

    >>> _percent(0.075), _percent(2.69), _percent(0.9996)
    ('7.5%', '269%', '100%')
    """
    pct = 100 * fraction
    return f"{pct:.2g}%" if pct < 99.5 else f"{pct:.0f}%"


def result_status(item: dict, backing: list[dict], *, proof_ok: bool = False) -> tuple[str, str]:
    """The status of a numbered result, computed from the evidence behind it.

    ``reproduced`` needs at least one ``independent`` or ``simulation`` claim that holds, that
    carries a standard error when it is a ``simulation``, and that, when it has a power (every
    ``close`` claim, a bound with a ``reference``), rejects a 10%-wrong theory
    (``power <= POWER_LIMIT``) unless the row states why the paper's own accuracy is coarser
    (``power_reason``); a ``close`` claim without a power never counts; ``derived`` needs the
    row's ``proof`` label on its page (``proof_ok``); ``derived+reproduced`` both. A row declared
    ``deviates`` is that when a claim asserting the deviation holds, one declared ``missing`` stays
    missing; every other row with neither is ``stated``.

    Returns ``(status, shortfall)``: ``shortfall`` says, where the computed status is weaker than
    the declared one, what the row has ("identity only", "independent; power 43%", "no proof").
    """
    declared = item.get("status")
    held = [r for r in backing if r.get("holds") is True]
    if declared == "missing" and not held:
        return "missing", ""
    if declared == "deviates":
        return ("deviates", "") if held else ("stated", _evidence_text(backing))
    reason = bool(str(item.get("power_reason") or "").strip())

    def reproduces(r):
        if r.get("evidence") not in REPRODUCING:
            return False
        if r.get("evidence") == "simulation" and r.get("se") is None:
            return False
        power = _as_float(r.get("power"))
        if power is None:
            return r.get("kind") != "close"
        return reason or power <= POWER_LIMIT

    repro = any(reproduces(r) for r in held)
    derived = bool(item.get("proof")) and proof_ok
    status = {(True, True): "derived+reproduced", (False, True): "reproduced", (True, False): "derived"}.get(
        (derived, repro), "stated"
    )
    short = []
    if declared in ("derived", "derived+reproduced") and not derived:
        short.append("no proof on the page" if not item.get("proof") else "proof label not found")
    if declared in ("reproduced", "derived+reproduced") and not repro:
        short.append(_evidence_text(backing))
    return status, "; ".join(short)


def build_results(records: list[dict], inventory: list[dict], labels: dict | None = None):
    """One row per numbered result of the papers (``results.json``), its status computed.

    ``labels`` maps a page's document name to :func:`proof_labels` of its source. Returns
    ``(rows, problems)``; a problem is a ``proof`` label that its page does not define, or that
    names a statement with no proof after it (the strict build fails on either).
    """
    labels = labels or {}
    by_id = {r["id"]: r for r in records}
    rows, problems = [], []
    for item in inventory:
        ids = item.get("claims")
        if ids:
            backing = [by_id[i] for i in ids if i in by_id]
        else:
            backing = [r for r in records if r["paper"] == item["paper"] and r["ref"] == item["ref"]]
        proof = item.get("proof")
        page = item.get("page")
        proof_ok = False
        if proof:
            found = labels.get(page, {})
            if proof not in found:
                problems.append(
                    f"inventory {item['paper']} {item['ref']}: proof label {proof!r} is not a prf: label of page {page!r}"
                )
            elif not found[proof]:
                problems.append(f"inventory {item['paper']} {item['ref']}: {proof!r} has no prf:proof after it")
            else:
                proof_ok = True
        status, shortfall = result_status(item, backing, proof_ok=proof_ok)
        kinds = sorted({r.get("evidence") for r in backing if r.get("evidence")}, key=EVIDENCE.index)
        rows.append(
            {
                "paper": item["paper"],
                "ref": item["ref"],
                "statement": item["statement"],
                "status": status,
                "declared": item["status"],
                "claims": [r["id"] for r in backing],
                "evidence": kinds,
                "has": _evidence_text(backing) if backing else "",
                "shortfall": shortfall,
                "power_reason": item.get("power_reason"),
                "proof": proof,
                "page": page,
                "note": item.get("note"),
            }
        )
    return rows, problems


def validate_report(rows: list[dict]) -> list[str]:
    """Schema check of ``claims.json`` rows; returns the problems found (empty when valid)."""
    problems = []
    required = ("id", "paper", "ref", "statement", "status", "measured", "expected", "tolerance", "holds", "page")
    ids = set()
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            problems.append(f"row {i} is not an object")
            continue
        lacking = [k for k in required if k not in row]
        if lacking:
            problems.append(f"row {i} ({row.get('id')}) lacks {lacking}")
            continue
        if row["id"] in ids:
            problems.append(f"id {row['id']} repeated")
        ids.add(row["id"])
        if row["paper"] not in PAPERS:
            problems.append(f"{row['id']}: paper {row['paper']!r} not in {PAPERS}")
        if row["status"] not in STATUSES:
            problems.append(f"{row['id']}: status {row['status']!r} not in {STATUSES}")
        if row["holds"] not in (True, False, None):
            problems.append(f"{row['id']}: holds must be true, false or null")
        if row["status"] in CHECKED_STATUSES and row.get("kind") != "inventory" and row["holds"] is not True:
            problems.append(f"{row['id']}: status {row['status']} but holds is {row['holds']}")
        if row["page"] is not None and not isinstance(row["page"], str):
            problems.append(f"{row['id']}: page must be a string or null")
        problems += _validate_evidence(row)
    return problems


def _as_float(value) -> float | None:
    """A number as stored in JSON (non-finite floats as their repr), else ``None``."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, numbers.Real):
        return float(value)
    if value in ("inf", "-inf", "nan"):
        return float(value)
    return None


def _validate_evidence(row: dict) -> list[str]:
    """The evidence fields of one ``claims.json`` row: ``evidence`` one of :data:`EVIDENCE` on every
    comparison (once :data:`REQUIRE_EVIDENCE`), ``power`` on every close claim and equal to its
    recomputation where the measured and expected values are stored in full, ``se`` only on a
    simulation."""
    out = []
    kind, ev = row.get("kind"), row.get("evidence")
    if kind in ("record", "inventory"):
        return out
    if ev is None:
        if REQUIRE_EVIDENCE:
            out.append(f"{row['id']}: no evidence kind (one of {EVIDENCE})")
    elif ev not in EVIDENCE:
        out.append(f"{row['id']}: evidence {ev!r} not in {EVIDENCE}")
    if row.get("se") is not None and ev != "simulation":
        out.append(f"{row['id']}: se on a claim whose evidence is {ev!r}, not a simulation")
    if kind == "close" and row.get("holds") is not None:
        power = _as_float(row.get("power"))
        tol = row.get("tolerance") or {}
        if power is None:
            out.append(f"{row['id']}: a close claim without its power")
        elif not isinstance(row.get("measured"), dict) and not isinstance(row.get("expected"), dict):
            try:
                m = np.asarray(row["measured"], float)
                e = np.asarray(row["expected"], float)
                again = resolving_power(m, e, rtol=tol.get("rtol") or 0.0, atol=tol.get("atol") or 0.0)
            except (TypeError, ValueError):
                again = None
            if again is not None and not (
                (math.isinf(again) and math.isinf(power)) or math.isclose(again, power, rel_tol=1e-6, abs_tol=1e-12)
            ):
                out.append(f"{row['id']}: power {power!r} but its numbers give {again!r}")
    return out


def diff_reports(old: list[dict], new: list[dict]) -> list[str]:
    """What changed between two ``claims.json``: rows added, removed, or with another verdict or value."""
    a = {r["id"]: r for r in old}
    b = {r["id"]: r for r in new}
    out = [f"+ {i}: {b[i]['statement']}" for i in sorted(set(b) - set(a))]
    out += [f"- {i}: {a[i]['statement']}" for i in sorted(set(a) - set(b))]
    for i in sorted(set(a) & set(b)):
        for key in ("status", "holds", "measured", "expected", "evidence", "power"):
            if a[i].get(key) != b[i].get(key):
                out.append(f"~ {i}: {key} {a[i].get(key)!r} -> {b[i].get(key)!r}")
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def main(argv=None) -> int:
    """``python -m symbreak.claims check FILE`` or ``diff OLD NEW``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m symbreak.claims")
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="validate a claims.json and require every checked row to hold")
    c.add_argument("file")
    d = sub.add_parser("diff", help="compare two claims.json files")
    d.add_argument("old")
    d.add_argument("new")
    args = parser.parse_args(argv)
    if args.cmd == "check":
        rows = json.loads(pathlib.Path(args.file).read_text())
        problems = validate_report(rows)
        for p in problems:
            print("problem:", p)
        counts: dict = {}
        for r in rows:
            counts.setdefault(r["paper"], {}).setdefault(r["status"], 0)
            counts[r["paper"]][r["status"]] += 1
        for paper, by in sorted(counts.items()):
            print(paper, ", ".join(f"{k}: {v}" for k, v in sorted(by.items())))
        by_evidence: dict = {}
        for r in rows:
            if r.get("kind") not in ("record", "inventory"):
                by_evidence[str(r.get("evidence"))] = by_evidence.get(str(r.get("evidence")), 0) + 1
        print("evidence", ", ".join(f"{k}: {v}" for k, v in sorted(by_evidence.items())))
        weak = [r["id"] for r in rows if r.get("kind") == "close" and (_as_float(r.get("power")) or 0) > POWER_LIMIT]
        print(f"close claims with power > {POWER_LIMIT:.0%}: {len(weak)}")
        no_se = [r["id"] for r in rows if r.get("evidence") == "simulation" and r.get("se") is None]
        print(f"simulation claims without a standard error: {len(no_se)}")
        print(
            f"{len(rows)} rows, {sum(r['holds'] is True for r in rows)} hold, "
            f"{sum(r['holds'] is False for r in rows)} fail, {len(problems)} problems"
        )
        return 1 if problems else 0
    old = json.loads(pathlib.Path(args.old).read_text())
    new = json.loads(pathlib.Path(args.new).read_text())
    lines = diff_reports(old, new)
    print("\n".join(lines) if lines else "no differences")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
