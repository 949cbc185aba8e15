"""The claims ledger: checks that can fail, records that round-trip, a report that catches gaps."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from symbreak import claims


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMBREAK_CLAIMS_DIR", str(tmp_path))
    monkeypatch.delenv("BOOK_QUICK", raising=False)
    return claims.Ledger("book/demo/page", "autoencoder", glue=False)


def test_close_holds_and_fails(ledger):
    assert ledger.close("d-a", "Eq. 6", "equal", 1.0, 1.0 + 1e-9, rtol=1e-6).holds
    with pytest.raises(claims.ClaimError, match="d-b"):
        ledger.close("d-b", "Eq. 6", "ten percent off", 1.1, 1.0, rtol=0.05)


def test_close_rejects_nan_and_needs_a_tolerance(ledger):
    with pytest.raises(claims.ClaimError):
        ledger.close("d-c", "Eq. 6", "nan never holds", np.nan, 1.0, rtol=1.0)
    with pytest.raises(ValueError, match="rtol"):
        ledger.close("d-d", "Eq. 6", "no tolerance", 1.0, 1.0)


def test_quick_tolerance_is_used_in_quick_mode(ledger, monkeypatch):
    monkeypatch.setenv("BOOK_QUICK", "1")
    assert ledger.close("d-e", "Eq. 6", "loose in quick mode", 1.04, 1.0, rtol=0.01, quick_rtol=0.05).holds
    monkeypatch.setenv("BOOK_QUICK", "0")
    with pytest.raises(claims.ClaimError):
        ledger.close("d-f", "Eq. 6", "tight at full size", 1.04, 1.0, rtol=0.01, quick_rtol=0.05)


def test_bound_sign_order_true(ledger):
    assert ledger.bound("d-g", "Thm 7", "below 2", 1.9, upper=2.0).holds
    with pytest.raises(claims.ClaimError):
        ledger.bound("d-h", "Thm 7", "above 2", 1.9, lower=2.0)
    assert ledger.sign("d-i", "Eq. 5", "positive", [1e-3, 2.0]).holds
    with pytest.raises(claims.ClaimError):
        ledger.sign("d-j", "Eq. 5", "negative", 0.0, positive=False)
    assert ledger.order("d-k", "Fig. 1", "increasing", [1, 2, 3]).holds
    with pytest.raises(claims.ClaimError):
        ledger.order("d-l", "Fig. 1", "increasing", [1, 3, 2])
    assert ledger.true("d-m", "Thm 1", "exact", True).holds
    with pytest.raises(TypeError):
        ledger.true("d-n", "Thm 1", "not a bool", 1)


def test_bad_input(ledger):
    with pytest.raises(ValueError, match="id"):
        ledger.close("Bad Id", "Eq. 1", "x", 1.0, 1.0, rtol=1)
    ledger.record("d-o", "Lemma 2", "derived in the text")
    with pytest.raises(ValueError, match="twice"):
        ledger.record("d-o", "Lemma 2", "again")
    with pytest.raises(ValueError, match="status"):
        ledger.record("d-p", "Lemma 2", "x", status="reproduced")
    with pytest.raises(ValueError, match="paper"):
        claims.Ledger("book/x", "nonsense", glue=False)
    with pytest.raises(TypeError):
        ledger.close("d-q", "Eq. 1", "x", "1.0", 1.0, rtol=1)


def test_records_round_trip_and_report(ledger, tmp_path):
    ledger.close("d-r", "Eq. 6", "equal", 2.0, 2.0, rtol=1e-3)
    ledger.record("d-s", "Lemma 3", "derived", status="derived")
    data = json.loads(ledger.path.read_text())
    assert [c["id"] for c in data["claims"]] == ["d-r", "d-s"]
    records = claims.load_records(tmp_path / "full")
    inventory = [
        {"paper": "autoencoder", "ref": "Eq. 6", "statement": "s", "status": "reproduced"},
        {"paper": "autoencoder", "ref": "Eq. 9", "statement": "t", "status": "stated"},
        {"paper": "autoencoder", "ref": "Eq. 10", "statement": "u", "status": "reproduced"},
    ]
    rows, problems = claims.build_report(records, inventory)
    assert [r["ref"] for r in rows] == ["Eq. 6", "Lemma 3", "Eq. 9", "Eq. 10"]
    assert len(problems) == 1 and "Eq. 10" in problems[0]
    assert claims.validate_report(rows[:3]) == []
    assert claims.validate_report([{"id": "x"}])


def test_reopening_a_page_clears_its_records(ledger, monkeypatch):
    ledger.close("d-t", "Eq. 6", "equal", 2.0, 2.0, rtol=1e-3)
    again = claims.Ledger("book/demo/page", "autoencoder", glue=False)
    assert json.loads(again.path.read_text())["claims"] == []


def test_diff_reports():
    a = [{"id": "x", "statement": "s", "status": "reproduced", "holds": True, "measured": 1.0, "expected": 1.0}]
    b = [
        dict(a[0], measured=1.1),
        {"id": "y", "statement": "t", "status": "stated", "holds": None, "measured": None, "expected": None},
    ]
    out = claims.diff_reports(a, b)
    assert any(line.startswith("+ y") for line in out)
    assert any("measured 1.0 -> 1.1" in line for line in out)


def test_a_claim_shows_as_one_short_line(ledger):
    """A cell that ends with a claim call shows the claim's repr: one line, not its arrays."""
    big = np.arange(1.0, 301.0)
    text = repr(ledger.close("d-repr", "Eq. 6", "three hundred values", big, big, rtol=1e-9))
    assert "\n" not in text and len(text) < 200
    assert text.startswith("Checked on this page (P-Eq. 6): holds; ") and text.endswith(" [report row d-repr]")
    # three hundred values are cut after a whole number, never inside one
    body = text.split("; ", 1)[1].rsplit(" [", 1)[0]
    assert body.endswith(" …") and re.fullmatch(r"measured (\d+, )*\d+ …", body), body


@pytest.mark.parametrize(
    ("ref", "shown"),
    [
        ("Eq. C.53", "P-Eq. C.53"),
        ("Eqs. 21–22", "P-Eqs. 21–22"),
        ("Eq. A.19–A.21", "P-Eqs. A.19–A.21"),
        ("Theorem 1 (finite data)", "P-Theorem 1 (finite data)"),
        ("Fig. 1F (κ against η and B)", "P-Fig. 1F (κ against η and B)"),
        ("Sec. 4.3 (S_∞)", "P-Sec. 4.3 (S_∞)"),
        ("Lemma 4.3", "P-Lemma 4.3"),
        ("App. C.2", "P-App. C.2"),
        ("Footnote 12", "P-Footnote 12"),
        ("Abstract: progressive sharpening", "P-Abstract: progressive sharpening"),
        ("Book: corollary of Theorem 1.3", "Book: corollary of P-Theorem 1.3"),
        ("Book: depth limit (Sec. 1.2)", "Book: depth limit (P-Sec. 1.2)"),
        ("Book: finite-η correction", "Book: finite-η correction"),
        ("P-Eq. 6", "P-Eq. 6"),
    ],
)
def test_paper_ref_prefixes_the_papers_numbers(ref, shown):
    assert claims.paper_ref(ref) == shown


def test_a_true_claim_can_show_what_it_compares(ledger):
    """``true`` with ``measured`` and ``expected`` records both (a count against the theorem's
    count), not the bare condition against True; ``expected`` alone is refused."""
    c = ledger.true("d-count", "Eq. 6", "four zero modes", 4 == 4, measured=4, expected=4, fmt="{:d}")
    assert c.holds and (c.measured, c.expected) == (4, 4)
    assert ledger.claims[-1]["expected"] == 4
    plain = ledger.true("d-plain", "Eq. 6", "a property", True)
    assert plain.expected is True
    with pytest.raises(ValueError, match="expected needs measured"):
        ledger.true("d-bad", "Eq. 6", "a property", True, expected=3)


@pytest.mark.parametrize("bad", [None, 3, b"Eq. 6", ["Eq. 6"]])
def test_paper_ref_rejects_what_is_not_a_string(bad):
    with pytest.raises(ValueError, match="ref must be a string"):
        claims.paper_ref(bad)


# ------------------------------------------------------------------------------------------------
# what the ledger cannot compare is refused with a clear error (issue 28)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "measured, expected, kw, err, match",
    [
        (np.inf, np.inf, {}, ValueError, "expected must be finite"),  # both sides overflowed
        (1e308 * 10, 1e308 * 10, {}, ValueError, "expected must be finite"),
        (1.0, 1.5, {"rtol": True}, TypeError, "rtol"),
        (1.0, 1.5, {"rtol": 0.0, "atol": True}, TypeError, "atol"),
        (1.0, 1.5, {"rtol": "0.1"}, TypeError, "rtol"),
        (2**60 + 1, 2**60, {"atol": 0.5}, ValueError, "2\\*\\*53"),
        (np.int64(2**62 + 1), np.int64(2**62), {"atol": 0.5}, ValueError, "2\\*\\*53"),
        (10**30, 10**30, {}, ValueError, "int64"),
        (1.0 + 0j, 1.0, {}, TypeError, "measured"),
        ("1.0", 1.0, {}, TypeError, "measured"),
    ],
)
def test_close_refuses_what_it_cannot_compare(ledger, measured, expected, kw, err, match):
    kw.setdefault("rtol", 1e-9)
    with pytest.raises(err, match=match):
        ledger.close("d-x", "Eq. 6", "s", measured, expected, **kw)
    assert not ledger.claims  # nothing was recorded


def test_close_compares_huge_finite_values_without_overflow(ledger):
    """|m − e| = 3.4e308 overflows float64; in scaled units the comparison is exact."""
    with pytest.raises(claims.ClaimError, match="d-y"):
        ledger.close("d-y", "Eq. 6", "opposite signs", 1.7e308, -1.7e308, rtol=0.5)
    assert ledger.close("d-z", "Eq. 6", "huge and equal", 1.7e308, 1.7e308 * (1 + 1e-15), rtol=1e-12).holds
    assert ledger.close("d-t", "Eq. 6", "tiny and equal", 5e-324, 5e-324, rtol=1e-12).holds


@pytest.mark.parametrize("kw", [{"lower": True}, {"upper": "1"}, {"lower": float("nan")}, {"lower": 0, "strict": 1}])
def test_bound_refuses_bad_limits(ledger, kw):
    with pytest.raises((TypeError, ValueError), match="lower|upper|strict"):
        ledger.bound("d-w", "Eq. 6", "s", 0.5, **kw)


@pytest.mark.parametrize(
    "records, match",
    [
        ([{"paper": "autoencoder", "ref": "Eq. 6", "page": "p"}], r"records\[0\] lacks \['id'\]"),
        (["not a record"], r"records\[0\] must be a claim record"),
    ],
)
def test_build_report_names_a_malformed_record(records, match):
    with pytest.raises((TypeError, ValueError), match=match):
        claims.build_report(records, [])


def test_build_report_names_a_malformed_inventory_row():
    with pytest.raises(ValueError, match=r"inventory\[0\] lacks"):
        claims.build_report([], [{"paper": "autoencoder", "ref": "Eq. 6"}])
