"""One list of dependencies: pyproject.toml declares what the library imports; the requirement files
are derived from it; JupyterLab renders MyST. Fast (no install); the environments themselves are
built by ``tests/test_environment.py`` (``make envtest``)."""

from __future__ import annotations

import ast
import functools
import importlib.metadata as md
import pathlib
import re
import subprocess
import sys

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = pathlib.Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "symbreak"
sys.path.insert(0, str(ROOT / "tools"))
import requirements  # noqa: E402  (tools/requirements.py)

#: extras for working on the book rather than for the library's modules
DEVELOPMENT_EXTRAS = {"test", "lint"}


def _lines(path: pathlib.Path) -> list[str]:
    """The requirement and option lines of a requirements file (no comments, no blank lines)."""
    return [x.split("#")[0].strip() for x in path.read_text().splitlines() if x.split("#")[0].strip()]


def test_requirement_files_are_generated_from_pyproject():
    bad = [str(p.relative_to(ROOT)) for p in requirements.stale(ROOT)]
    assert not bad, f"{bad} disagree with pyproject.toml: edit pyproject.toml, then run python tools/requirements.py"


def test_requirement_files_hold_exactly_the_dependencies_of_pyproject():
    """Read without the generator: requirements.txt is the core plus every extra (but the optional
    ``bench``) plus ``-e .``; binder/requirements.txt the same but for the CPU index, torch's
    ``+cpu`` and ``-e .``."""
    project = requirements.project_table(ROOT)
    declared = list(project["dependencies"])
    assert set(requirements.NOT_LISTED) == {"bench"}, "only the benchmark's JAX stays out of the requirement files"
    for name, extra in project["optional-dependencies"].items():
        if name not in requirements.NOT_LISTED:
            declared += [r for r in extra if r not in declared]
    local = _lines(ROOT / "requirements.txt")
    binder = _lines(ROOT / "binder" / "requirements.txt")
    assert local[-1] == "-e .", "requirements.txt must end by installing the package in editable mode"
    assert sorted(local[:-1]) == sorted(declared)
    torch = [r for r in declared if canonicalize_name(Requirement(r).name) == "torch"]
    assert torch == ["torch==2.13.0"], f"torch must stay pinned to 2.13.0 (the CPU wheel on disk), got {torch}"
    expected_binder = [f"--extra-index-url {requirements.CPU_INDEX}"] + [
        "torch==2.13.0+cpu" if r in torch else r for r in declared
    ]
    assert sorted(binder) == sorted(expected_binder)
    for name in ("numba", "mpmath"):  # the two that Binder once lacked
        assert any(canonicalize_name(Requirement(r).name) == name for r in project["dependencies"]), name


def test_jupyter_book_stays_on_1x():
    reqs = [Requirement(r) for r in requirements.project_table(ROOT)["optional-dependencies"]["book"]]
    (jb,) = [r for r in reqs if r.name == "jupyter-book"]
    assert "1.0.4.post1" in jb.specifier and "2.0" not in jb.specifier, jb


def _docstring_extras(path: pathlib.Path) -> set[str]:
    """The extras a module names in its docstring (``symbreak[NAME]``), and those its subpackages'
    ``__init__`` name (the top package's docstring is an overview of every extra)."""
    if path == LIB / "__init__.py":
        return set()
    files = {path} | {d / "__init__.py" for d in path.parents if d != LIB and d.is_relative_to(LIB)}
    names: set[str] = set()
    for p in files:
        if p.is_file():
            names |= set(re.findall(r"symbreak\[([a-z]+)\]", ast.get_docstring(ast.parse(p.read_text())) or ""))
    return names


def _imports(tree: ast.Module):
    """``(module, at_import_time)`` for every absolute import of a module; imports inside a ``try``
    that catches ImportError are optional and left out."""
    optional: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            h.type is not None and "ImportError" in ast.unparse(h.type) for h in node.handlers
        ):
            optional |= {id(n) for sub in node.body for n in ast.walk(sub)}
    top_level = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, id(node) in top_level
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module, id(node) in top_level


@functools.cache
def _top_level_names(dist_name: str) -> frozenset[str]:
    """The top-level import names that an installed distribution provides (empty when it is not
    installed here). Cached: reading a distribution's file list (torch's is long) takes a tenth of
    a second, and the test below asks for each distribution once per module of the library."""
    try:
        dist = md.distribution(dist_name)
    except md.PackageNotFoundError:
        return frozenset()
    names = set((dist.read_text("top_level.txt") or "").split())
    for f in dist.files or []:
        head = f.parts[0]
        if (
            len(f.parts) > 1
            and not head.endswith((".dist-info", ".data", ".libs"))
            and head not in ("__pycache__", "..")
        ):
            names.add(head)
        elif len(f.parts) == 1 and head.endswith(".py"):
            names.add(head[:-3])
    return frozenset(names)


def test_every_import_of_the_library_is_declared():
    """Each third-party package that the library imports is declared in pyproject.toml by name
    (not only brought by another dependency), by the core or by an extra that the module's docstring
    (or its package's ``__init__``) names, whether it is imported at import time or inside a function. So
    ``pip install symbreak`` imports every module, and a dependency dropped from pyproject.toml
    (numba, mpmath, which the entropy chapter imports inside a function) fails here."""
    project = requirements.project_table(ROOT)
    extras = project["optional-dependencies"]

    def provided(reqs):
        return {
            top: canonicalize_name(Requirement(r).name) for r in reqs for top in _top_level_names(Requirement(r).name)
        }

    core = provided(project["dependencies"])
    library = provided(
        project["dependencies"] + [r for e, rs in extras.items() if e not in DEVELOPMENT_EXTRAS for r in rs]
    )
    problems = []
    files = sorted(LIB.rglob("*.py"))
    assert len(files) > 10
    for path in files:
        rel = path.relative_to(ROOT)
        named = _docstring_extras(path)
        if named - set(extras):
            problems.append(f"{rel} names extras that pyproject.toml lacks: {sorted(named - set(extras))}")
        at_import = provided(project["dependencies"] + [r for e in named & set(extras) for r in extras[e]])
        for module, top in _imports(ast.parse(path.read_text())):
            root = module.split(".")[0]
            if root in sys.stdlib_module_names or root == "symbreak":
                continue
            if root not in library:
                problems.append(f"{rel} imports {module}: no dependency of pyproject.toml's core or extras provides it")
            elif root not in at_import:
                problems.append(
                    f"{rel} imports {module} ({library[root]}); neither the core nor an extra that its docstring "
                    f"(or its package's) names ({sorted(named)}) declares it"
                )
    assert not problems, "\n".join(problems)
    assert {"numba", "mpmath", "numpy", "scipy"} <= set(core), sorted(core)


def test_jupyterlab_myst_is_enabled_in_this_environment():
    """JupyterLab renders MyST (theorems, exercises, references) when a page is opened as a notebook:
    the extension is installed, enabled and compatible with this JupyterLab (no "X")."""
    jupyter = pathlib.Path(sys.executable).parent / "jupyter"
    out = subprocess.run([str(jupyter), "labextension", "list"], capture_output=True, text=True, timeout=120)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
    lines = [x for x in text.splitlines() if "jupyterlab-myst" in x]
    assert lines, f"jupyterlab-myst is not among JupyterLab's extensions (pip install -r requirements.txt):\n{text}"
    assert all(re.search(r"\benabled\s+OK\b", x) for x in lines), (
        f"jupyterlab-myst is not enabled and compatible:\n{text}"
    )


def test_binder_installs_jupyterlab_myst():
    names = {
        canonicalize_name(Requirement(x).name)
        for x in _lines(ROOT / "binder" / "requirements.txt")
        if not x.startswith("-")
    }
    assert {"jupyterlab", "jupyterlab-myst", "jupytext"} <= names
