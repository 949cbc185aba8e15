"""The environments that users get, built as they would build them (``make envtest``, slow).

One fresh virtual environment is built as Binder (repo2docker) builds its image: from a copy of the
repository's files, ``pip install -r binder/requirements.txt`` (PyTorch's CPU index is dropped when it
cannot be reached; the pinned ``torch==X+cpu`` wheel then comes from the package registry as set up
on the machine), then ``binder/postBuild``, which installs the package non-editable (``pip install
.``). In it:

* the package is the installed copy, not the source tree, and every module of ``symbreak`` imports
  (walked with :func:`pkgutil.walk_packages`, so new modules and subpackages are found), and every
  module that any of them imports, at the top or inside a function, is installed;
* postBuild's ``pip install .`` installs nothing but the package, and every requirement of the core
  and of the extras the library's modules need is met: ``binder/requirements.txt`` holds all of
  ``pyproject.toml``'s dependencies;
* one page of each chapter, converted by jupytext, executes top to bottom in quick mode;
* the normal suite's dependency checks (``tests/test_requirements.py``) pass there, among them that
  JupyterLab's MyST extension (``jupyterlab-myst``) is installed, enabled and compatible.

Because ``binder/requirements.txt`` and ``requirements.txt`` are generated from ``pyproject.toml``
(``tests/test_requirements.py`` checks that they agree), this venv is the core dependencies plus the
extras: a package that the library imports, missing from ``pyproject.toml`` and brought by no other
dependency (numba), makes these tests fail. One that another dependency happens to bring (mpmath
comes with torch, through sympy) is caught by ``tests/test_requirements.py``, which wants every
import declared by name.

Marked ``envtest``, left out of the default ``pytest`` run; ``make envtest`` (and CI) runs it.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import urllib.parse

import pytest

pytestmark = pytest.mark.envtest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import requirements  # noqa: E402  (tools/requirements.py: pyproject.toml's dependencies)

#: one page of each chapter; for the part 'Beyond the theorems' its index (the synthesis page)
PAGES = ["book/platonic/index.md", "book/autoencoder/index.md", "book/dln/index.md", "book/beyond/index.md"]
#: the extras that the library's modules need (``test`` and ``lint`` are for working on the book)
LIBRARY_EXTRAS = ("torch", "beyond", "distributed", "book")
#: where the build times go (make envtest prints them)
TIMES = ROOT / "_build" / "envtest" / "times.json"


def _reachable(url: str, timeout: float = 3.0) -> bool:
    host = urllib.parse.urlparse(url).hostname
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def _run(cmd, *, env, cwd, timeout=900, check=True) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise AssertionError(
            f"{cmd} exited {out.returncode}\n--- stdout\n{out.stdout[-6000:]}\n--- stderr\n{out.stderr[-6000:]}"
        )
    return out


def _record_time(name: str, seconds: float) -> None:
    TIMES.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(TIMES.read_text()) if TIMES.is_file() else {}
    data[name] = round(seconds, 1)
    TIMES.write_text(json.dumps(data, indent=1))


class BinderEnv:
    """A repository copy, its venv and the environment its commands run with."""

    def __init__(self, base: pathlib.Path):
        self.repo = base / "repo"
        self.venv = base / "venv"
        self.home = base / "home"
        self.bin = self.venv / "bin"
        self.python = self.bin / "python"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER", "PYTEST"))}
        env.update(
            HOME=str(self.home),
            VIRTUAL_ENV=str(self.venv),
            PATH=f"{self.bin}{os.pathsep}{env.get('PATH', '')}",
            PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(pathlib.Path.home() / ".cache" / "pip")),
            MPLBACKEND="Agg",
            SYMBREAK_PROGRESS="0",
            PYTHONDONTWRITEBYTECODE="1",
        )
        env.pop("SYMBREAK_FIGURES", None)
        self.env = env

    def run(self, cmd, cwd=None, **kw):
        return _run(cmd, env=self.env, cwd=cwd or self.repo, **kw)


@pytest.fixture(scope="module")
def binder_env():
    """Build the Binder environment once for this module (as repo2docker does), in
    ``_build/envtest/`` (git ignores it; ``make clean`` removes it). A previous run's is removed first;
    this one is left in place: deleting a venv of about 3 GB took 163 s on a busy two-core machine,
    and CI starts from a fresh clone."""
    base = TIMES.parent
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    return _build_binder_env(base)


def _build_binder_env(base: pathlib.Path) -> BinderEnv:
    be = BinderEnv(base)
    be.home.mkdir()
    # the repository as Binder sees it: the tracked files and the new ones git does not ignore
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for rel in filter(None, files.split("\0")):
        src = ROOT / rel
        if src.is_file():
            dst = be.repo / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    reqs = be.repo / "binder" / "requirements.txt"
    if not _reachable(requirements.CPU_INDEX):
        # no route to PyTorch's index here: the same pinned CPU wheel from the registry as set up
        lines = reqs.read_text().splitlines()
        reqs = be.home / "binder-requirements.txt"
        reqs.write_text("\n".join(x for x in lines if not x.startswith("--extra-index-url")) + "\n")
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(be.venv)], check=True)
    # --no-compile: no .pyc files written for the ~200 packages (the imports and kernels below compile
    # what they import as they go); the installed files are the same
    be.run([str(be.python), "-m", "pip", "install", "--quiet", "--no-compile", "-r", str(reqs)])
    _record_time("pip install -r binder/requirements.txt", time.monotonic() - t0)
    t0 = time.monotonic()
    be.postbuild = be.run(["bash", "binder/postBuild"])
    _record_time("binder/postBuild", time.monotonic() - t0)
    return be


def test_postbuild_installs_the_package_not_editable(binder_env):
    out = binder_env.run([str(binder_env.python), "-m", "pip", "show", "--files", "symbreak"])
    assert "Editable project location" not in out.stdout, out.stdout
    loc = binder_env.run(
        [str(binder_env.python), "-c", "import symbreak, pathlib; print(pathlib.Path(symbreak.__file__).resolve())"],
        cwd=binder_env.home,
    ).stdout.strip()
    assert pathlib.Path(loc).is_relative_to(binder_env.venv.resolve()), f"symbreak imported from {loc}, not the venv"
    # the settings that make JupyterLab open the MyST pages as notebooks
    cfg = json.loads((binder_env.home / ".jupyter/labconfig/default_setting_overrides.json").read_text())
    viewers = cfg["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers == {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
    # postBuild compiled the numba kernels of the book's pages (float64) into the installed package's
    # disk cache, so a reader's first simulation loads them: the autoencoder's lane step, the Platonic
    # step; not the float32 ones, which no page uses
    assert "numba kernels compiled or loaded from the cache" in binder_env.postbuild.stdout, binder_env.postbuild
    cache = pathlib.Path(loc).parent / "__pycache__"
    for kernel in ("_ae_lanes._linear_sgd_lanes", "_pl_lanes._edln_sgd_lanes"):
        index = list(cache.glob(f"{kernel}-*.nbi"))
        assert len(index) == 1 and list(cache.glob(f"{kernel}-*.nbc")), sorted(cache.iterdir())
        signatures = index[0].read_bytes()
        assert b"float64" in signatures and b"float32" not in signatures, (kernel, signatures[:400])


_IMPORT_EVERY_MODULE = textwrap.dedent(
    """
    import ast, importlib, importlib.util, json, pathlib, pkgutil, sys
    import symbreak

    def wanted(tree):
        # absolute imports, at the top or inside functions; those inside a try that catches
        # ImportError are optional
        optional = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Try) and any(
                h.type is not None and "ImportError" in ast.unparse(h.type) for h in node.handlers
            ):
                for sub in node.body:
                    optional.update(id(n) for n in ast.walk(sub))
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            if isinstance(node, ast.Import):
                yield from (a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                yield node.module

    modules, missing, failed = [], {}, {}
    def walk_error(name):
        failed[name] = "raised while walk_packages imported it: " + repr(sys.exc_info()[1])

    for info in pkgutil.walk_packages(symbreak.__path__, "symbreak.", onerror=walk_error):
        name = info.name
        if name.endswith("__main__"):
            continue
        modules.append(name)
        try:
            mod = importlib.import_module(name)
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"
            continue
        tree = ast.parse(pathlib.Path(mod.__file__).read_text())
        for target in sorted(set(wanted(tree))):
            top = target.split(".")[0]
            if top in sys.stdlib_module_names or top == "symbreak":
                continue
            try:
                found = importlib.util.find_spec(target) is not None
            except ModuleNotFoundError:
                found = False
            if not found:
                missing.setdefault(name, []).append(target)
    print(json.dumps({"file": symbreak.__file__, "modules": modules, "failed": failed, "missing": missing}))
    """
)


def test_every_module_of_the_installed_package_imports(binder_env):
    """Every module of the installed (not the source) ``symbreak`` imports, and everything any of
    them imports, at the top or inside a function, is installed."""
    out = binder_env.run([str(binder_env.python), "-c", _IMPORT_EVERY_MODULE], cwd=binder_env.home)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert pathlib.Path(res["file"]).resolve().is_relative_to(binder_env.venv.resolve())
    # the walk found the package's modules (the chapter modules and the shared ones, at least)
    names = set(res["modules"])
    for expected in ("symbreak.engine", "symbreak.claims", "symbreak._sfc64", "symbreak.sphinxext"):
        assert expected in names, f"walk_packages did not find {expected}: {sorted(names)}"
    assert not res["failed"], f"modules that do not import in the Binder environment: {res['failed']}"
    assert not res["missing"], f"modules imported by the library but not installed: {res['missing']}"


_CHECK_REQUIREMENTS = textwrap.dedent(
    """
    import importlib.metadata as md, json, sys
    from packaging.requirements import Requirement
    extras = sys.argv[1].split(",")
    problems = []
    for text in md.requires("symbreak"):
        req = Requirement(text)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in extras):
            continue  # a requirement of an extra the library does not need (test, lint)
        try:
            version = md.version(req.name)
        except md.PackageNotFoundError:
            problems.append(f"{text}: not installed")
            continue
        if not req.specifier.contains(version, prereleases=True):
            problems.append(f"{text}: {version} is installed")
    print(json.dumps(problems))
    """
)


def test_requirements_cover_the_package_and_its_extras(binder_env):
    """``binder/requirements.txt`` installed everything the package needs: postBuild's ``pip install .``
    installed the package and nothing else, and every requirement of the core and of the extras the
    library's modules need (``[torch,beyond,distributed,book]``) is installed at a version it allows."""
    installed = [x for x in binder_env.postbuild.stdout.splitlines() if x.startswith("Successfully installed")]
    assert len(installed) == 1 and len(installed[0].split()) == 3 and installed[0].split()[2].startswith("symbreak-"), (
        f"postBuild installed more than the package (binder/requirements.txt lacks it): {installed}"
    )
    out = binder_env.run(
        [str(binder_env.python), "-c", _CHECK_REQUIREMENTS, ",".join(LIBRARY_EXTRAS)], cwd=binder_env.home
    )
    problems = json.loads(out.stdout.strip().splitlines()[-1])
    assert not problems, f"requirements of symbreak that the Binder environment does not meet: {problems}"
    binder_env.run([str(binder_env.python), "-m", "pip", "check"])


_EXECUTE = textwrap.dedent(
    """
    import sys, jupytext, nbclient
    page = sys.argv[1]
    nb = jupytext.read(page)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": "."}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    if errors:
        sys.exit("\\n".join(f"{e['ename']}: {e['evalue']}" for e in errors))
    print(f"{page}: {sum(c.cell_type == 'code' for c in nb.cells)} code cells executed")
    """
)


@pytest.mark.parametrize("page", PAGES)
def test_page_runs_in_the_binder_environment(binder_env, page):
    """The page, converted by jupytext, executes top to bottom in quick mode in the Binder venv."""
    path = binder_env.repo / page
    env = dict(binder_env.env, BOOK_QUICK="1")
    t0 = time.monotonic()
    _run([str(binder_env.python), "-c", _EXECUTE, path.name], env=env, cwd=path.parent, timeout=900)
    _record_time(page, time.monotonic() - t0)


def test_dependency_checks_pass_in_the_binder_environment(binder_env):
    """The normal suite's dependency checks (``tests/test_requirements.py``) pass in an environment
    installed from the requirement files alone, as ``make test`` builds it from a fresh clone: the
    files agree with pyproject.toml, every import is declared, and JupyterLab's MyST extension
    (``jupyterlab-myst``, which renders theorems, exercises and references when a page is opened as a
    notebook) is installed, enabled and compatible with Binder's JupyterLab."""
    binder_env.run(
        [
            str(binder_env.python),
            "-m",
            "pytest",
            "-n",
            "0",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_requirements.py",
        ]
    )
