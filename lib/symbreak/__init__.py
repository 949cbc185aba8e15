"""symbreak: the library behind the executable book on SGD and the symmetries of loss landscapes.

One package per chapter holds that chapter's mathematics and simulations, in modules that follow
the chapter's pages (each module's docstring names the pages it serves); the package re-exports
every public name, so ``from symbreak import autoencoder as ae; ae.lambert_scale(...)`` works:

``symbreak.platonic``
    Perfect Platonic representations (Ziyin & Chuang).
``symbreak.autoencoder``
    Scale drift in undercomplete linear autoencoders (Pashakhanloo & Zavatone-Veth).
``symbreak.dln``
    The entropy of the deep linear network (Chen, Kotwal & Menon).
``symbreak.beyond``
    Beyond the theorems: the knob model (``symbreak.beyond.synthesis``, also ``symbreak.synthesis``)
    and nonlinear networks on real data (also ``symbreak.nonlinear``).

What chapters share lives in the modules below, which never import a chapter; chapters never import
each other:

``symbreak.config``
    The quick-mode switch (``BOOK_QUICK=1``) through which every simulation size is chosen.
``symbreak.rng``
    Seeded random generators (NumPy and PyTorch); every random draw in the book goes through them.
``symbreak.engine``
    The shared simulation engine: exact Wishart minibatch covariances, batched ensembles,
    divergence detection, the two-core thread pool.
``symbreak.wishart``
    The exact minibatch samplers the engine draws from (compiled Bartlett draws, per-replica
    streams), re-exported by ``symbreak.engine``.
``symbreak.progress``
    Progress bars that show in a terminal or a live notebook and stay quiet in builds.
``symbreak.plotting``
    The house plotting style: theory dashed, simulation solid, one colour per mode or parameter.
``symbreak.validation``
    Checks at the public boundary that raise ``ValueError`` naming the parameter.

Dependencies (``pyproject.toml``): ``pip install .`` installs the core (NumPy, SciPy, matplotlib,
tqdm, numba, mpmath, PyYAML, Pillow), enough to import every module but the book's Sphinx extension
``symbreak.sphinxext``; the optional parts are extras, and a module's docstring names the extra it
needs: ``symbreak[torch]`` (PyTorch references and the torch device path), ``symbreak[beyond]`` (the
part *Beyond the theorems*: PyTorch and scikit-learn), ``symbreak[distributed]`` (sweeps on a Dask
cluster) and ``symbreak[book]`` (the toolchain that builds and runs the book).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
