"""Sphinx settings for the book's API reference page (``book/api.md``).

Listed in ``_config.yml`` under ``sphinx.extra_extensions`` next to ``sphinx.ext.autodoc``,
``sphinx.ext.autosummary`` and ``sphinx.ext.napoleon``; it sets their options so that the page
builds under the strict build (``-W -n``): NumPy-style sections, no type hints in signatures,
signatures longer than 60 characters written one parameter per line (a phone shows them without
scrolling the page), and the informal type names of numpydoc (``array_like``, ``int, optional``,
...) shown as text rather than looked up as cross-references.

Extra: ``symbreak[book]`` (Sphinx, for the attribute comments of a package's constants).
"""

from __future__ import annotations

__all__ = ["setup"]

_SETTINGS = {
    "napoleon_google_docstring": False,
    "napoleon_numpy_docstring": True,
    "napoleon_preprocess_types": False,
    "napoleon_use_param": False,
    "napoleon_use_rtype": False,
    "napoleon_use_ivar": True,
    "autodoc_typehints": "none",
    "autodoc_member_order": "bysource",
    "autosummary_generate": False,
    # a signature longer than this puts one parameter per line (readable on a phone, no sideways page)
    "python_maximum_signature_line_length": 60,
    # the page's headings name the module; the full dotted path would hide the name on a phone
    "add_module_names": False,
}

# numpydoc's informal types and the NumPy/SciPy objects the docstrings name are plain text here
_EXTERNAL = r"(numpy|np|scipy|torch|concurrent|dask|distributed|matplotlib|tqdm)\..*"
_NITPICK_IGNORE = [("py:class", r".*")] + [(role, _EXTERNAL) for role in ("py:obj", "py:func", "py:meth", "py:mod")]


def _headings_to_rubrics(app, what, name, obj, options, lines):
    """Section headings inside module docstrings (``Contents`` / ``--------``) would become
    duplicate section targets on one page: render them as rubrics."""
    if what != "module":
        return
    i = 0
    while i + 1 < len(lines):
        title, under = lines[i].strip(), lines[i + 1].strip()
        if title and under and set(under) <= set("-=~^") and len(under) >= len(title):
            lines[i : i + 2] = [f".. rubric:: {title}", ""]
        i += 1
    # a definition-list term that wraps onto the next line (ending with a comma) is one term
    i = 0
    while i + 1 < len(lines):
        a, b = lines[i], lines[i + 1]
        if a.strip().endswith(",") and a[:1].strip() and b[:1].strip():
            lines[i : i + 2] = [a.rstrip() + " " + b.strip()]
            continue
        i += 1


def _package_data_doc(app, what, name, obj, options, lines):
    """A constant documented at a chapter package's path (``symbreak.autoencoder.EXPLORER_BOX``) is
    defined, with its ``#:`` comment, in one of the package's modules: take the comment from there
    (the package's ``__init__`` only re-exports it, and autodoc would otherwise show the docstring
    of the value's type, e.g. ``dict``'s). ``:meta`` fields are left out."""
    if what != "data":
        return
    import importlib
    import pkgutil

    from sphinx.pycode import ModuleAnalyzer

    package, _, attr = name.rpartition(".")
    try:
        pkg = importlib.import_module(package)
    except ImportError:
        return
    for info in pkgutil.iter_modules(getattr(pkg, "__path__", [])):
        docs = ModuleAnalyzer.for_module(f"{package}.{info.name}").find_attr_docs()
        found = docs.get(("", attr))
        if found:
            lines[:] = []
            lines.extend(line for line in found if not line.strip().startswith(":meta"))
            return


def _configure(app, config):
    for key, value in _SETTINGS.items():
        setattr(config, key, value)
    config.nitpick_ignore_regex = list(getattr(config, "nitpick_ignore_regex", []) or []) + _NITPICK_IGNORE


def setup(app):
    """Register the settings (a Sphinx extension entry point)."""
    for ext in ("sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon"):
        app.setup_extension(ext)
    app.connect("config-inited", _configure)
    app.connect("autodoc-process-docstring", _headings_to_rubrics)
    app.connect("autodoc-process-docstring", _package_data_doc)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
