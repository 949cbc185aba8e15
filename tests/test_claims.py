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
    assert ledger.close("d-a", "Eq. 6", "equal", 1.0, 1.0 + 1e-9, rtol=1e-6, evidence="independent").holds
    with pytest.raises(claims.ClaimError, match="d-b"):
        ledger.close("d-b", "Eq. 6", "ten percent off", 1.1, 1.0, rtol=0.05, evidence="independent")


def test_close_rejects_nan_and_needs_a_tolerance(ledger):
    with pytest.raises(claims.ClaimError):
        ledger.close("d-c", "Eq. 6", "nan never holds", np.nan, 1.0, rtol=1.0, evidence="independent")
    with pytest.raises(ValueError, match="rtol"):
        ledger.close("d-d", "Eq. 6", "no tolerance", 1.0, 1.0, evidence="independent")


def test_quick_tolerance_is_used_in_quick_mode(ledger, monkeypatch):
    monkeypatch.setenv("BOOK_QUICK", "1")
    assert ledger.close(
        "d-e", "Eq. 6", "loose in quick mode", 1.04, 1.0, rtol=0.01, quick_rtol=0.05, evidence="independent"
    ).holds
    monkeypatch.setenv("BOOK_QUICK", "0")
    with pytest.raises(claims.ClaimError):
        ledger.close(
            "d-f", "Eq. 6", "tight at full size", 1.04, 1.0, rtol=0.01, quick_rtol=0.05, evidence="independent"
        )


def test_bound_sign_order_true(ledger):
    assert ledger.bound("d-g", "Thm 7", "below 2", 1.9, upper=2.0, evidence="independent").holds
    with pytest.raises(claims.ClaimError):
        ledger.bound("d-h", "Thm 7", "above 2", 1.9, lower=2.0, evidence="independent")
    assert ledger.sign("d-i", "Eq. 5", "positive", [1e-3, 2.0], evidence="independent").holds
    with pytest.raises(claims.ClaimError):
        ledger.sign("d-j", "Eq. 5", "negative", 0.0, positive=False, evidence="independent")
    assert ledger.order("d-k", "Fig. 1", "increasing", [1, 2, 3], evidence="independent").holds
    with pytest.raises(claims.ClaimError):
        ledger.order("d-l", "Fig. 1", "increasing", [1, 3, 2], evidence="independent")
    assert ledger.true("d-m", "Thm 1", "exact", True, evidence="independent").holds
    with pytest.raises(TypeError):
        ledger.true("d-n", "Thm 1", "not a bool", 1, evidence="independent")


def test_bad_input(ledger):
    with pytest.raises(ValueError, match="id"):
        ledger.close("Bad Id", "Eq. 1", "x", 1.0, 1.0, rtol=1, evidence="independent")
    ledger.record("d-o", "Lemma 2", "derived in the text")
    with pytest.raises(ValueError, match="twice"):
        ledger.record("d-o", "Lemma 2", "again")
    with pytest.raises(ValueError, match="status"):
        ledger.record("d-p", "Lemma 2", "x", status="reproduced")
    with pytest.raises(ValueError, match="paper"):
        claims.Ledger("book/x", "nonsense", glue=False)
    with pytest.raises(TypeError):
        ledger.close("d-q", "Eq. 1", "x", "1.0", 1.0, rtol=1, evidence="independent")


def test_records_round_trip_and_report(ledger, tmp_path):
    ledger.close("d-r", "Eq. 6", "equal", 2.0, 2.0, rtol=1e-3, evidence="independent")
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
    ledger.close("d-t", "Eq. 6", "equal", 2.0, 2.0, rtol=1e-3, evidence="independent")
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
    text = repr(ledger.close("d-repr", "Eq. 6", "three hundred values", big, big, rtol=1e-9, evidence="independent"))
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
    c = ledger.true(
        "d-count", "Eq. 6", "four zero modes", 4 == 4, measured=4, expected=4, fmt="{:d}", evidence="independent"
    )
    assert c.holds and (c.measured, c.expected) == (4, 4)
    assert ledger.claims[-1]["expected"] == 4
    plain = ledger.true("d-plain", "Eq. 6", "a property", True, evidence="independent")
    assert plain.expected is True
    with pytest.raises(ValueError, match="expected needs measured"):
        ledger.true("d-bad", "Eq. 6", "a property", True, expected=3, evidence="independent")


@pytest.mark.parametrize("bad", [None, 3, b"Eq. 6", ["Eq. 6"]])
def test_paper_ref_rejects_what_is_not_a_string(bad):
    with pytest.raises(ValueError, match="ref must be a string"):
        claims.paper_ref(bad)


# -- evidence, resolving power, standard errors (issue 23) ----------------------------------------


@pytest.mark.parametrize(
    ("measured", "expected", "rtol", "atol", "power"),
    [
        # scalar, rtol only, exact agreement: up e(1+δ) fails past δ = rtol/(1 - rtol), down past
        # rtol/(1 + rtol); the worse (larger) is the power
        (1.0, 1.0, 0.05, 0.0, 0.05 / 0.95),
        # atol only, measured 5% above: up fails past (0.05 + 0.1), down past 0.1 - 0.05
        (1.05, 1.0, 0.0, 0.1, 0.15),
        # a negative expected value: the same as its mirror image
        (-2.0, -2.0, 0.1, 0.0, 0.1 / 0.9),
        # measured 2% below expected: up fails once 0.95(1+δ) > 0.98, down once 1.05δ > 0.07;
        # down is worse
        (0.98, 1.0, 0.05, 0.0, 0.07 / 1.05),
        # array: the first element to fail decides each sign; element 2 (1% high) fails first
        # downwards at (0.02 - 0.01)/1.02, element 1 upwards at 0.02/0.98; the worse is 0.02/0.98
        ([1.0, 2.02], [1.0, 2.0], 0.02, 0.0, 0.02 / 0.98),
        # both tolerances: |1 - 1.01(1+δ)| <= 0.001 + 0.02 * 1.01(1+δ)
        (1.0, 1.01, 0.02, 0.001, max(1.001 / (0.98 * 1.01) - 1, 1 - 0.999 / (1.02 * 1.01))),
        # expected zero: no scaling moves it, the check cannot reject a distortion
        (0.01, 0.0, 0.0, 0.1, np.inf),
        # an array with a zero: only the non-zero element can fail
        ([0.0, 1.0], [0.0, 1.0], 0.0, 0.05, 0.05),
        # rtol >= 1: scaling up never fails
        (1.0, 1.0, 1.5, 0.0, np.inf),
    ],
)
def test_resolving_power_against_hand_computed_cases(measured, expected, rtol, atol, power):
    got = claims.resolving_power(measured, expected, rtol=rtol, atol=atol)
    assert got == pytest.approx(power, rel=1e-9)
    # and it is what it says: for the worse sign the distorted check holds just below it and
    # fails just past it
    m, e = np.asarray(measured, float), np.asarray(expected, float)

    def passes(d, s):
        ed = e * (1 + s * d)
        return bool(np.all(np.abs(m - ed) <= atol + rtol * np.abs(ed)))

    if np.isfinite(power):
        assert any(passes(power * (1 - 1e-6), s) and not passes(power * (1 + 1e-6), s) for s in (1, -1))


def test_both_tolerances_case_by_hand():
    # m = 1, e = 1.01, rtol 0.02, atol 0.001. Up (e' = 1.01(1+δ) > m): e' - 1 <= 0.001 + 0.02 e'
    # <=> 0.98 e' <= 1.001 <=> δ <= 1.001/(0.98*1.01) - 1. Down: for e' >= 1, it holds; below,
    # 1 - e' <= 0.001 + 0.02 e' <=> e' >= 0.999/1.02 <=> δ <= 1 - 0.999/(1.02*1.01).
    up, down = 1.001 / (0.98 * 1.01) - 1, 1 - 0.999 / (1.02 * 1.01)
    assert claims.resolving_power(1.0, 1.01, rtol=0.02, atol=0.001) == pytest.approx(max(up, down), rel=1e-12)


def test_close_records_power_and_evidence(ledger):
    ledger.close("d-pw", "Eq. 6", "five percent", 1.0, 1.0, rtol=0.05, evidence="independent")
    rec = ledger.claims[-1]
    assert rec["evidence"] == "independent" and rec["power"] == pytest.approx(0.05 / 0.95)
    ledger.close("d-pw0", "Eq. 6", "zero", 0.0, 0.0, atol=1e-9, evidence="identity")
    assert ledger.claims[-1]["power"] == "inf"
    # the JSON round-trip keeps them
    data = json.loads(ledger.path.read_text())["claims"]
    assert data[0]["power"] == pytest.approx(0.05 / 0.95) and data[1]["power"] == "inf"


@pytest.mark.parametrize("method", ["close", "bound", "sign", "order", "true"])
def test_evidence_must_be_one_of_four_kinds(ledger, method):
    args = {
        "close": ((1.0, 1.0), {"rtol": 0.1}),
        "bound": ((1.0,), {"upper": 2.0}),
        "sign": ((1.0,), {}),
        "order": (([1.0, 2.0],), {}),
        "true": ((True,), {}),
    }[method]
    with pytest.raises(ValueError, match="evidence"):
        getattr(ledger, method)("d-ev", "Eq. 6", "x", *args[0], evidence="proof", **args[1])
    for i, kind in enumerate(claims.EVIDENCE):
        getattr(ledger, method)(f"d-ev-{i}", "Eq. 6", "x", *args[0], evidence=kind, **args[1])
        assert ledger.claims[-1]["evidence"] == kind


@pytest.mark.parametrize("method", ["close", "bound", "sign", "order", "true"])
def test_evidence_is_required(ledger, method):
    args = {
        "close": ((1.0, 1.0), {"rtol": 0.1}),
        "bound": ((1.0,), {"upper": 2.0}),
        "sign": ((1.0,), {}),
        "order": (([1.0, 2.0],), {}),
        "true": ((True,), {}),
    }[method]
    assert claims.REQUIRE_EVIDENCE
    with pytest.raises(ValueError, match="evidence must be one of"):
        getattr(ledger, method)("d-req", "Eq. 6", "x", *args[0], **args[1])


def test_simulation_records_its_standard_error(ledger):
    ledger.close("d-se", "Eq. 6", "a mean", 1.02, 1.0, atol=0.06, evidence="simulation", se=0.02, n_se=3)
    rec = ledger.claims[-1]
    assert (rec["se"], rec["n_se"], rec["evidence"]) == (0.02, 3, "simulation")
    ledger.bound("d-se2", "Eq. 6", "means", [0.5, 0.6], upper=1.0, evidence="simulation", se=[0.01, 0.02])
    assert ledger.claims[-1]["se"] == [0.01, 0.02]
    with pytest.raises(ValueError, match="se"):
        ledger.sign("d-se3", "Eq. 6", "x", 1.0, evidence="identity", se=0.1)
    with pytest.raises(ValueError, match="se"):
        ledger.sign("d-se4", "Eq. 6", "x", 1.0, evidence="simulation", se=-0.1)
    with pytest.raises(ValueError, match="n_se"):
        ledger.sign("d-se5", "Eq. 6", "x", 1.0, evidence="simulation", n_se=3)


def test_a_simulation_without_sampling_error_says_why(ledger):
    ledger.true(
        "d-sr",
        "Eq. 6",
        "no run diverged",
        True,
        measured=0,
        expected=0,
        evidence="simulation",
        se_reason="a count over all 64 replicas",
    )
    rec = ledger.claims[-1]
    assert rec["se"] is None and rec["se_reason"] == "a count over all 64 replicas"
    assert claims.validate_report([dict(rec)]) == []
    assert claims.result_status({"status": "reproduced"}, [rec])[0] == "reproduced"
    assert claims.result_status({"status": "reproduced"}, [dict(rec, se_reason=None)])[0] != "reproduced"
    for bad in (
        {"evidence": "identity", "se_reason": "x"},
        {"evidence": "simulation", "se": 0.1, "se_reason": "x"},
        {"evidence": "simulation", "se_reason": " "},
    ):
        with pytest.raises(ValueError, match="se_reason"):
            ledger.sign("d-sr2", "Eq. 6", "x", 1.0, **bad)
    assert any("se_reason" in p for p in claims.validate_report([dict(rec, se=0.1)]))


def test_a_bound_against_a_theory_value_has_a_power(ledger):
    ledger.bound("d-bp", "Eq. 6", "below theory", 0.9, upper=1.0, reference=1.0, evidence="simulation", se=0.01)
    assert ledger.claims[-1]["power"] == pytest.approx(0.1)
    ledger.bound("d-bp2", "Eq. 6", "no reference", 0.9, upper=1.0, evidence="independent")
    assert ledger.claims[-1]["power"] is None
    assert claims.bound_power([0.95, 0.99], 2.0, lower=0.9, upper=1.0) == pytest.approx(0.025)
    assert claims.bound_power(0.5, 0.0, upper=1.0) == np.inf


def test_check_recomputes_power_and_validates_evidence(ledger):
    ledger.close("d-v1", "Eq. 6", "x", [1.0, 2.0], [1.0, 2.01], rtol=0.01, evidence="independent")
    ledger.sign("d-v2", "Eq. 6", "x", 1.0, evidence="simulation", se=0.1)
    rows = [dict(r) for r in ledger.claims]
    assert claims.validate_report(rows) == []
    bad = [dict(rows[0], power=0.5), dict(rows[1], id="d-v3", evidence="proof")]
    problems = claims.validate_report(bad)
    assert any("power 0.5 but its numbers give" in p for p in problems)
    assert any("evidence 'proof'" in p for p in problems)
    assert any("without its power" in p for p in claims.validate_report([dict(rows[0], power=None)]))


def _claim(evidence, holds=True, kind="close", power=0.05, se=0.01):
    return {
        "id": "x",
        "evidence": evidence,
        "holds": holds,
        "kind": kind,
        "power": power if kind == "close" else None,
        "se": se if evidence == "simulation" else None,
    }


@pytest.mark.parametrize(
    ("declared", "backing", "item", "proof_ok", "status", "shortfall"),
    [
        # a simulation close claim that rejects a 10%-wrong theory reproduces
        ("reproduced", [_claim("simulation")], {}, False, "reproduced", ""),
        # identities and constructions never do
        (
            "reproduced",
            [_claim("identity"), _claim("construction", kind="true")],
            {},
            False,
            "stated",
            "identity and construction only",
        ),
        # a close claim of power 43% does not, unless the row says why its power is coarser
        ("reproduced", [_claim("independent", power=0.43)], {}, False, "stated", "independent; power 43%"),
        (
            "reproduced",
            [_claim("independent", power=0.43)],
            {"power_reason": "the paper reads a plot"},
            False,
            "reproduced",
            "",
        ),
        # a bound, sign, order or condition from an independent computation has no power to check
        ("reproduced", [_claim("simulation", kind="sign")], {}, False, "reproduced", ""),
        # a bound against a reference value has a power, and the same limit applies to it
        (
            "reproduced",
            [dict(_claim("simulation", kind="bound"), power=2.7)],
            {},
            False,
            "stated",
            "simulation; power 270%",
        ),
        ("reproduced", [dict(_claim("independent", kind="bound"), power=0.05)], {}, False, "reproduced", ""),
        (
            "reproduced",
            [dict(_claim("simulation", kind="bound"), power=0.58)],
            {"power_reason": "the paper's law is asymptotic"},
            False,
            "reproduced",
            "",
        ),
        # a simulation without a standard error does not reproduce
        (
            "reproduced",
            [_claim("simulation", kind="sign", se=None)],
            {},
            False,
            "stated",
            "simulation; simulation without se",
        ),
        ("reproduced", [_claim("simulation", se=None)], {}, False, "stated", "simulation; simulation without se"),
        # a close claim without a power never counts
        ("reproduced", [_claim("independent", power=None)], {}, False, "stated", "independent"),
        # a claim that does not hold backs nothing
        ("reproduced", [_claim("simulation", holds=None, kind="record")], {}, False, "stated", "no claim that holds"),
        # derived needs a proof label that resolves
        ("derived", [], {"proof": "thm-x"}, True, "derived", ""),
        ("derived", [], {}, False, "stated", "no proof on the page"),
        ("derived+reproduced", [_claim("identity")], {"proof": "thm-x"}, True, "derived", "identity only"),
        ("derived+reproduced", [_claim("simulation")], {"proof": "thm-x"}, True, "derived+reproduced", ""),
        # a stated row with independent evidence is computed as reproduced
        ("stated", [_claim("independent", power=0.01)], {}, False, "reproduced", ""),
        ("deviates", [_claim("simulation", kind="bound")], {}, False, "deviates", ""),
        ("missing", [], {}, False, "missing", ""),
    ],
)
def test_result_status_is_computed_from_the_evidence(declared, backing, item, proof_ok, status, shortfall):
    got = claims.result_status(dict(item, status=declared), backing, proof_ok=proof_ok)
    assert got == (status, shortfall)


def test_proof_labels_need_a_proof():
    text = """
```{prf:theorem} A
:label: thm-a
```
```{prf:proof}
ok
```
```{prf:lemma} B
:label: lem-b
```
```{prf:theorem} C
:label: thm-c
```
:::{prf:proof}
:label: prf-c
:::
"""
    assert claims.proof_labels(text) == {"thm-a": True, "lem-b": False, "thm-c": True, "prf-c": True}


def test_build_results_flags_a_missing_proof_label():
    inv = [
        {"paper": "dln", "ref": "Eq. 1", "statement": "s", "status": "derived", "proof": "thm-a", "page": "p"},
        {"paper": "dln", "ref": "Eq. 2", "statement": "t", "status": "derived", "proof": "thm-gone", "page": "p"},
        {"paper": "dln", "ref": "Eq. 3", "statement": "u", "status": "derived", "proof": "lem-b", "page": "p"},
    ]
    rows, problems = claims.build_results([], inv, {"p": {"thm-a": True, "lem-b": False}})
    assert [r["status"] for r in rows] == ["derived", "stated", "stated"]
    assert len(problems) == 2 and "thm-gone" in problems[0] and "no prf:proof" in problems[1]


def test_check_cli_counts_evidence_and_weak_claims(ledger, tmp_path, capsys):
    ledger.close("d-cli1", "Eq. 6", "strong", 1.0, 1.0, rtol=0.01, evidence="independent")
    ledger.close("d-cli2", "Eq. 6", "weak", 1.0, 1.0, rtol=0.3, evidence="simulation", se=0.1)
    ledger.sign("d-cli3", "Eq. 6", "an identity", 1.0, evidence="identity")
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(ledger.claims))
    assert claims.main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "evidence identity: 1, independent: 1, simulation: 1" in out
    assert "close claims with power > 10%: 1" in out and "simulation claims without a standard error: 0" in out
    bad = [dict(ledger.claims[0], power=0.9)]
    path.write_text(json.dumps(bad))
    assert claims.main(["check", str(path)]) == 1


def test_record_only_mode_records_a_failing_claim_without_raising(ledger, monkeypatch, tmp_path):
    """``SYMBREAK_CLAIMS_RAISE=0`` (set only by ``tools/seeds.py``) records instead of raising."""
    monkeypatch.setenv("SYMBREAK_CLAIMS_RAISE", "0")
    assert ledger.close("d-r0", "Eq. 6", "ten percent off", 1.1, 1.0, rtol=0.05, evidence="identity").holds is False
    rec = json.loads(ledger.path.read_text())["claims"][-1]
    assert rec["id"] == "d-r0" and rec["holds"] is False
    monkeypatch.setenv("SYMBREAK_CLAIMS_RAISE", "1")
    with pytest.raises(claims.ClaimError):
        ledger.close("d-r1", "Eq. 6", "ten percent off", 1.1, 1.0, rtol=0.05, evidence="identity")
    monkeypatch.setenv("SYMBREAK_CLAIMS_RAISE", "no")
    with pytest.raises(ValueError, match="SYMBREAK_CLAIMS_RAISE"):
        ledger.close("d-r2", "Eq. 6", "ten percent off", 1.1, 1.0, rtol=0.05, evidence="identity")


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
        ledger.close("d-x", "Eq. 6", "s", measured, expected, **kw, evidence="identity")
    assert not ledger.claims  # nothing was recorded


def test_close_compares_huge_finite_values_without_overflow(ledger):
    """|m − e| = 3.4e308 overflows float64; in scaled units the comparison is exact."""
    with pytest.raises(claims.ClaimError, match="d-y"):
        ledger.close("d-y", "Eq. 6", "opposite signs", 1.7e308, -1.7e308, rtol=0.5, evidence="identity")
    assert ledger.close(
        "d-z", "Eq. 6", "huge and equal", 1.7e308, 1.7e308 * (1 + 1e-15), rtol=1e-12, evidence="identity"
    ).holds
    assert ledger.close("d-t", "Eq. 6", "tiny and equal", 5e-324, 5e-324, rtol=1e-12, evidence="identity").holds


@pytest.mark.parametrize("kw", [{"lower": True}, {"upper": "1"}, {"lower": float("nan")}, {"lower": 0, "strict": 1}])
def test_bound_refuses_bad_limits(ledger, kw):
    with pytest.raises((TypeError, ValueError), match="lower|upper|strict"):
        ledger.bound("d-w", "Eq. 6", "s", 0.5, **kw, evidence="identity")


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


def test_a_cell_shows_its_claims_as_a_table(ledger):
    ledger.close("d-t1", "Eq. 6", "a law", 1.001, 1.0, rtol=0.01, evidence="independent")
    ledger.bound("d-t2", "Lemma 2.3", "a bound", [0.5, 0.7, 0.8, 0.9], upper=1.0, evidence="simulation", se=0.01)
    table = ledger.table()
    rows = table.rows()
    assert [r["claim"] for r in rows] == ["d-t1", "d-t2"] and [r[""] for r in rows] == ["✓", "✓"]
    assert rows[0]["compared with"] == "1 (rtol 0.01)" and rows[1]["compared with"] == "≤ 1"
    assert rows[1]["measured"] == "0.5, 0.7, 0.8, … (4 values) ± 0.01" and rows[1]["result"] == "P-Lemma 2.3"
    html = table._repr_html_()
    assert 'href="../reproduction-report.html#claim-d-t1"' in html and "all hold" in html
    assert repr(table).startswith("Checked in this cell (2 claims):")
    # the next table holds only what came after
    assert ledger.table().rows() == []
    # a large array is shown by its size and range, never as a dict of full-precision floats
    ledger.close(
        "d-t4",
        "Eq. 6",
        "many values",
        np.linspace(1, 2, 500) + 1e-15,
        np.linspace(1, 2, 500),
        rtol=1e-9,
        evidence="independent",
    )
    assert ledger.table().rows()[0]["measured"] == "500 values in [1, 2]"
    assert "Checked in this cell: 1 claim, it holds" in claims.ClaimTable([ledger.claims[0]], "book/x/y")._repr_html_()


def test_in_a_kernel_every_cell_with_claims_ends_with_its_table(tmp_path):
    import nbclient
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(c)
        for c in (
            "from symbreak.claims import Ledger\nled = Ledger('book/dln/index', 'dln', write=False)",
            "led.close('d-k1', 'Eq. 6', 'a', 1.001, 1.0, rtol=0.01, evidence='independent')",
            "x = 1",
        )
    ]
    nbclient.NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = [o for o in nb.cells[1].outputs if "text/html" in o.get("data", {})]
    assert len(shown) == 1 and "claim-d-k1" in shown[0]["data"]["text/html"]
    # the claim call ending the cell adds no second line of its own, and a cell without claims shows nothing
    assert not [o for o in nb.cells[1].outputs if o["output_type"] in ("execute_result", "stream")]
    assert nb.cells[2].outputs == []
