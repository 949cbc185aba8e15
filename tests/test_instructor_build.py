"""The instructor's build (``make book SOLUTIONS=hidden``): the book's configuration with
sphinx-exercise's ``hide_solutions`` on, into its own output folder, sharing ``make book``'s
execution cache. Checked without building the book: the configuration file, what Jupyter Book makes
of it, the Makefile's wiring, and that the option removes a solution from a small Sphinx build."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import instructor_config  # noqa: E402  (tools/instructor_config.py)


def test_the_config_is_the_book_s_with_solutions_hidden():
    book = yaml.safe_load((ROOT / "_config.yml").read_text())
    inst = instructor_config.instructor_config(ROOT)
    assert inst["sphinx"]["config"]["hide_solutions"] is True
    assert "hide_solutions" not in book["sphinx"]["config"]  # the reader's site shows them
    # local extensions by absolute path (Jupyter Book resolves them relative to the config file)
    for name, path in inst["sphinx"]["local_extensions"].items():
        assert pathlib.Path(path).is_absolute() and (pathlib.Path(path) / f"{name}.py").is_file()
    # the execution cache of `make book`, so that nothing runs again
    assert inst["execute"]["cache"] == str(ROOT / "_build" / ".jupyter_cache")
    # no way back to the sources (which hold the solutions): no launch, repository, issues or
    # download button, no copied sources
    assert "launch_buttons" not in inst
    for button in ("use_repository_button", "use_issues_button", "use_edit_page_button", "use_download_button"):
        assert inst["html"][button] is False, button
        assert inst["sphinx"]["config"]["html_theme_options"][button] is False, button
    assert "launch_buttons" not in inst["sphinx"]["config"]["html_theme_options"]
    assert inst["sphinx"]["config"]["html_copy_source"] is False
    assert inst["sphinx"]["config"]["html_show_sourcelink"] is False
    # everything else unchanged
    for key in set(book) - {"sphinx", "execute", "title", "launch_buttons", "html"}:
        assert inst[key] == book[key], key
    for key in set(book["html"]) - {"use_repository_button", "use_issues_button", "use_edit_page_button"}:
        assert inst["html"][key] == book["html"][key], key
    for key in set(book["sphinx"]) - {"config", "local_extensions"}:
        assert inst["sphinx"][key] == book["sphinx"][key], key
    changed = {"hide_solutions", "html_copy_source", "html_show_sourcelink", "html_theme_options"}
    assert {k: v for k, v in inst["sphinx"]["config"].items() if k not in changed} == book["sphinx"]["config"]
    assert {k: v for k, v in inst["execute"].items() if k != "cache"} == {
        k: v for k, v in book["execute"].items() if k != "cache"
    }


def test_jupyter_book_reads_it(tmp_path):
    """``jupyter-book config sphinx`` turns the written file into the Sphinx configuration the build
    would use: solutions hidden, the book's cache, the local extension loaded."""
    out = instructor_config.write_instructor_config(ROOT, tmp_path / "_config.yml")
    jb = pathlib.Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run(
        [str(jb), "config", "sphinx", str(ROOT), "--config", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    conf = (tmp_path / "conf.py").read_text()
    assert "hide_solutions = True" in conf
    assert f"nb_execution_cache_path = '{ROOT / '_build' / '.jupyter_cache'}'" in conf
    assert "'symbreak_site'" in conf and "'sphinx_exercise'" in conf
    assert "html_copy_source = False" in conf and "html_show_sourcelink = False" in conf
    theme = next(line for line in conf.splitlines() if line.startswith("html_theme_options = "))
    assert "'use_download_button': False" in theme and "'use_repository_button': False" in theme
    assert "launch_buttons" not in theme and "binderhub" not in conf


def test_the_makefile_builds_it_into_its_own_folder():
    def dry_run(*args):
        proc = subprocess.run(
            ["make", "-n", "book", f"VENV={pathlib.Path(sys.executable).parents[1]}", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return proc

    hidden = dry_run("SOLUTIONS=hidden")
    assert hidden.returncode == 0, hidden.stderr
    assert "tools/instructor_config.py" in hidden.stdout
    assert "--config _build/instructor/_config.yml --path-output _build/instructor" in hidden.stdout
    plain = dry_run()
    assert plain.returncode == 0 and "--config" not in plain.stdout and "instructor" not in plain.stdout
    wrong = dry_run("SOLUTIONS=none")
    assert wrong.returncode != 0 and "SOLUTIONS must be" in wrong.stderr


def test_hide_solutions_removes_the_solution(tmp_path):
    """sphinx-exercise's option as the instructor's build sets it: the exercise stays, its solution goes."""
    (tmp_path / "conf.py").write_text("extensions = ['sphinx_exercise']\n")
    (tmp_path / "index.rst").write_text(
        "Page\n====\n\n.. exercise::\n   :label: ex-one\n\n   EXERCISE-TEXT\n\n"
        ".. solution:: ex-one\n\n   SOLUTION-TEXT\n"
    )

    def build(*extra):
        out = tmp_path / ("_hidden" if extra else "_shown")
        proc = subprocess.run(
            [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", *extra, ".", str(out)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        return (out / "index.html").read_text()

    shown, hidden = build(), build("-D", "hide_solutions=1")
    assert "EXERCISE-TEXT" in shown and "SOLUTION-TEXT" in shown
    assert "EXERCISE-TEXT" in hidden and "SOLUTION-TEXT" not in hidden
