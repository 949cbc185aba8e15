"""The reproduction report: claims records and inventories joined into ``claims.json`` and ``results.json``.

:mod:`symbreak.claims` records every claim a page computes (one JSON file per page); this module
reads those records back, joins them with the chapters' inventories of numbered results
(``book/<chapter>/results.yml``), computes each result's status from its evidence
(:func:`result_status`: ``reproduced`` needs an ``independent`` or ``simulation`` claim that holds,
with enough resolving power and, for a simulation, a standard error; ``derived`` needs a proof on
the page), validates the report, compares two reports, and is the command line
``python -m symbreak.claims check FILE`` / ``diff OLD NEW``. :mod:`symbreak.claims` re-exports its
public names, so ``symbreak.claims.build_report`` keeps working.

Pages: ``book/reproduction-report.md`` (through ``symbreak.sphinxext``, which writes the report
at the end of the build).

Extra: none beyond the core dependencies (PyYAML reads the inventories).
"""

from __future__ import annotations

import json
import math
import numbers
import pathlib
import re

import numpy as np

from .claims import (
    CHECKED_STATUSES,
    EVIDENCE,
    PAPERS,
    POWER_LIMIT,
    REPRODUCING,
    REQUIRE_EVIDENCE,
    STATUSES,
    _shorten,
    resolving_power,
)

__all__ = [
    "load_records",
    "load_inventory",
    "build_report",
    "build_results",
    "result_status",
    "proof_labels",
    "validate_report",
    "diff_reports",
    "main",
]

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
    (one of :data:`~symbreak.claims.STATUSES`: what the book declares; the report computes the status from the
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
    for name, value in (("records", records), ("inventory", inventory)):
        if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple)):
            raise TypeError(f"{name} must be a list of dicts, got {type(value).__name__}")
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
    with_se = [r for r in repro if r.get("evidence") != "simulation" or _has_se(r)]
    if repro and not with_se:
        text += "; simulation without se"
    powers = [_as_float(r.get("power")) for r in with_se]
    powers = [p for p in powers if p is not None]
    if powers and min(powers) > POWER_LIMIT:
        best = min(powers)
        text += "; power " + ("none" if math.isinf(best) else _percent(best))
    return text


def _has_se(row: dict) -> bool:
    """A simulation row states its uncertainty: a standard error, or why it has none (``se_reason``)."""
    return row.get("se") is not None or bool(str(row.get("se_reason") or "").strip())


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
        if r.get("evidence") == "simulation" and not _has_se(r):
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
    """The evidence fields of one ``claims.json`` row: ``evidence`` one of :data:`~symbreak.claims.EVIDENCE` on every
    comparison (once :data:`~symbreak.claims.REQUIRE_EVIDENCE`), ``power`` on every close claim and equal to its
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
    if row.get("se_reason") is not None and (ev != "simulation" or row.get("se") is not None):
        out.append(f"{row['id']}: se_reason belongs to a simulation claim without se")
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
        reasons = sum(bool(r.get("se_reason")) for r in rows if r.get("evidence") == "simulation")
        print(f"simulation claims without a standard error: {len(no_se)} ({reasons} of them state why)")
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
