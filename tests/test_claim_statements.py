"""Claim statements read as text with real math: the reproduction report shows every statement of
every page's ledger and of every ``book/*/results.yml`` row, and typesets only what sits between
``$…$``. Outside those delimiters a statement is plain Unicode text, so TeX-like notation there
(``S^{1/2}``, ``∇_{W_i}``, a backslash, ``sigma_star``, ``rho_perp(inf)``) would reach readers raw.

The check reads the sources (the ledger calls in the pages' code cells and the inventories), so it
needs no build.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: The ledger's methods whose third argument (or ``statement=``) is the statement.
METHODS = {"close", "bound", "sign", "order", "true", "record"}
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
#: Inline math, as the report splits it (``symbreak.sphinxext``).
MATH = re.compile(r"\$[^$]+\$")
#: Greek letters and math words spelled in ASCII (``sigma_star``, ``rho_perp(inf)``, ``beta0``).
ASCII_GREEK = re.compile(
    r"(?<![A-Za-z])(alpha|beta|gamma|delta|epsilon|eta|theta|kappa|lambda|mu|nu|xi|rho|sigma|tau|phi|"
    r"chi|psi|omega|star|perp|inf|sqrt)(?![A-Za-z])",
    re.I,
)
TEX = re.compile(r"_\{|\^\{|\\")


def leaked_tex(text: str) -> list[str]:
    """The TeX-like notation of ``text`` outside ``$…$``: brace groups ``_{``, ``^{``, ``^(``, a
    backslash, Greek letters or math words in ASCII. An unpaired ``$`` counts too."""
    plain = MATH.sub(" ", text)
    found = [m.group(0) for m in TEX.finditer(plain)] + [m.group(0) for m in ASCII_GREEK.finditer(plain)]
    if "$" in plain:
        found.append("unpaired $")
    return found


def _cell_sources(md: pathlib.Path):
    """The Python source of every code cell of a MyST notebook (options and magics blanked)."""
    for m in CELL.finditer(md.read_text(encoding="utf-8")):
        lines = m.group(1).splitlines()
        if lines and lines[0].strip() == "---":  # a YAML block of cell options
            end = lines.index("---", 1)
            lines = [""] * (end + 1) + lines[end + 1 :]
        lines = ["" if ln.startswith(":") or ln.lstrip().startswith(("%", "!")) else ln for ln in lines]
        yield "\n".join(lines)


def _literal_parts(node: ast.AST) -> list[str] | None:
    """The literal text of a statement expression: a string, the constant parts of an f-string,
    or a concatenation of those; ``None`` when it has no literal text (a variable)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal_parts(node.left), _literal_parts(node.right)
        return None if left is None and right is None else (left or []) + (right or [])
    return None


def page_statements() -> list[tuple[str, str]]:
    """``(where, statement)`` for every ledger call in the book's pages (the literal text of each)."""
    out = []
    for md in sorted(ROOT.glob("book/**/*.md")):
        for src in _cell_sources(md):
            for node in ast.walk(ast.parse(src)):
                if not (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in METHODS
                    and "ledger" in ast.unparse(node.func.value).lower()
                ):
                    continue
                arg = node.args[2] if len(node.args) > 2 else None
                arg = next((k.value for k in node.keywords if k.arg == "statement"), arg)
                parts = _literal_parts(arg) if arg is not None else None
                where = f"{md.relative_to(ROOT)}: {ast.unparse(node.args[0]) if node.args else '?'}"
                assert parts is not None, f"{where}: a statement with no literal text cannot be checked"
                out.append((where, "".join(parts)))
    return out


def inventory_statements() -> list[tuple[str, str]]:
    """``(where, text)`` for the statement and the note of every ``results.yml`` row."""
    out = []
    for path in sorted(ROOT.glob("book/*/results.yml")):
        for row in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            where = f"{path.relative_to(ROOT)}: {row['ref']}"
            out += [(where, row[key]) for key in ("statement", "note") if row.get(key)]
    return out


def page_claim_ids() -> tuple[set[str], set[str]]:
    """The ids of the pages' ledger calls: literal ids, and the literal prefixes of f-string ids."""
    ids, prefixes = set(), set()
    for md in sorted(ROOT.glob("book/**/*.md")):
        for src in _cell_sources(md):
            for node in ast.walk(ast.parse(src)):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in METHODS
                    and "ledger" in ast.unparse(node.func.value).lower()
                    and node.args
                ):
                    arg = node.args[0]
                    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute):  # f"...".replace(...)
                        arg = arg.func.value
                    if isinstance(arg, ast.Constant):
                        ids.add(arg.value)
                    elif isinstance(arg, ast.JoinedStr) and isinstance(arg.values[0], ast.Constant):
                        prefixes.add(arg.values[0].value)
    return ids, prefixes


def test_inventory_rows_name_claims_the_pages_record():
    """Every id a results.yml row lists is an id of a ledger call (a rewrite of the statements must
    leave the ids alone: ``ae-fig1f-kappa`` is not ``ae-fig1f-κ``)."""
    ids, prefixes = page_claim_ids()
    unknown = []
    for path in sorted(ROOT.glob("book/*/results.yml")):
        for row in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            for i in row.get("claims") or []:
                if i not in ids and not any(i.startswith(p) for p in prefixes):
                    unknown.append(f"{path.relative_to(ROOT)} {row['ref']}: {i}")
    assert len(ids) >= 200
    assert unknown == []


def test_the_sources_hold_the_book_s_statements():
    """The extraction finds the ledger calls (the book records some 300 claims from its pages)."""
    assert len(page_statements()) >= 250
    assert len(inventory_statements()) >= 100


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("the gauge A = S^{1/2} is not one", True),
        ("E‖∇_{W_i}ℓ‖²", True),
        ("rho_perp(d) with beta = beta0 d", True),
        ("sigma_star (1, 1)", True),
        ("s_star^2", True),
        (r"\lambda", True),
        ("costs $5", True),
        ("the gauge $A = S^{1/2}$ is not one", False),
        ("$\\rho_\\perp(d)$ with $\\beta = \\beta_0 d$", False),
        ("λ_max(H) = max_a λ_a(s_1 + 1/s_a), in the meta information", False),
    ],
)
def test_the_check_tells_tex_from_text(text, bad):
    assert bool(leaked_tex(text)) is bad, leaked_tex(text)


def test_statements_have_no_tex_outside_math():
    """Every statement of every page and every inventory row: formulas either in ``$…$`` (typeset
    by the report) or in readable Unicode."""
    bad = [
        f"{where}: {found} in {text!r}"
        for where, text in page_statements() + inventory_statements()
        if (found := leaked_tex(text))
    ]
    assert bad == [], f"{len(bad)} statements with TeX-like notation outside $…$:\n" + "\n".join(bad)
