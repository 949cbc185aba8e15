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

Tolerances may differ between full size and quick mode: pass ``quick_rtol`` / ``quick_atol``
(or a ``quick_*`` bound) and the ledger picks the one for the current mode
(:func:`symbreak.config.quick_mode`).

Records go to ``<book root>/_build/claims/<mode>/<page>.json`` (the book root is the nearest
folder above the working directory holding ``_toc.yml``), or to ``$SYMBREAK_CLAIMS_DIR`` when set.
Outside a book checkout nothing is written; the checks still run.
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
    "ClaimError",
    "Ledger",
    "records_dir",
    "load_records",
    "load_inventory",
    "build_report",
    "validate_report",
    "diff_reports",
]

#: Papers (chapters) a claim can belong to.
PAPERS = ("platonic", "autoencoder", "dln", "beyond")
#: What the book does with a result.
STATUSES = ("derived", "reproduced", "derived+reproduced", "stated", "missing", "deviates")
#: Statuses whose rows must be backed by at least one computed claim that holds.
CHECKED_STATUSES = ("reproduced", "derived+reproduced", "deviates")

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
    >>> led.close("ae-demo", "Eq. 6", "a number equals itself", 1.0, 1.0, rtol=1e-12).holds
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
        self, *, id, ref, statement, status, paper, kind, measured, expected, tolerance, holds, detail, fmt, glue_values
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
    ):
        """Claim ``|measured - expected| <= atol + rtol*|expected|`` (element-wise).

        Glues ``id`` (measured), ``id-expected`` and ``id-err`` (largest relative error, as a
        percentage string when ``expected`` is non-zero, else the absolute error).
        """
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
            glue_values={id: _fmt(measured, fmt), f"{id}-expected": _fmt(expected, fmt), f"{id}-err": err_text},
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
    ):
        """Claim ``lower <= measured <= upper`` (either side may be omitted; ``strict`` for < )."""
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
            tolerance={"lower": lower, "upper": upper, "strict": strict},
            holds=ok,
            detail=detail,
            fmt=fmt,
            glue_values={id: _fmt(measured, fmt)},
        )

    def sign(self, id, ref, statement, measured, *, positive=True, status="reproduced", paper=None, fmt="{:.4g}"):
        """Claim ``measured > 0`` (``positive=True``) or ``measured < 0``."""
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
        )

    def order(
        self, id, ref, statement, values, *, increasing=True, strict=True, status="reproduced", paper=None, fmt="{:.4g}"
    ):
        """Claim that ``values`` (a 1-D sequence) is increasing (or decreasing)."""
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
    ):
        """Claim a condition computed on the page (e.g. an exact property or a count).

        ``measured`` and ``expected`` are what the report shows (e.g. a count of zero modes and the
        count the theorem gives, ``"≥ 2"`` for a ratio); ``condition`` decides. Without them the
        report shows the condition itself against ``True``."""
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
    (one of :data:`STATUSES`), optional ``page`` (document name where the book treats it),
    optional ``claims`` (ids of computed claims that back it; by default every claim with the
    same ``paper`` and ``ref``) and optional ``note``.
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
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise TypeError(f"records[{i}] must be a claim record (a dict), got {type(rec).__name__}")
        lacking = [k for k in ("id", "paper", "ref", "page") if k not in rec]
        if lacking:
            raise ValueError(
                f"records[{i}] lacks {lacking} (a claim record as Ledger writes it): {_shorten(repr(rec))}"
            )
    for i, item in enumerate(inventory):
        if not isinstance(item, dict):
            raise TypeError(f"inventory[{i}] must be a row (a dict), got {type(item).__name__}")
        lacking = [k for k in ("paper", "ref", "statement", "status") if k not in item]
        if lacking:
            raise ValueError(f"inventory[{i}] lacks {lacking}: {_shorten(repr(item))}")
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
    return problems


def diff_reports(old: list[dict], new: list[dict]) -> list[str]:
    """What changed between two ``claims.json``: rows added, removed, or with another verdict or value."""
    a = {r["id"]: r for r in old}
    b = {r["id"]: r for r in new}
    out = [f"+ {i}: {b[i]['statement']}" for i in sorted(set(b) - set(a))]
    out += [f"- {i}: {a[i]['statement']}" for i in sorted(set(a) - set(b))]
    for i in sorted(set(a) & set(b)):
        for key in ("status", "holds", "measured", "expected"):
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
