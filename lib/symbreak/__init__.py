"""symbreak: the library behind the executable book on SGD and the symmetries of loss landscapes.

One module per chapter holds that chapter's mathematics and simulations; what chapters share lives
in the modules below, which never import a chapter module:

``symbreak.config``
    The quick-mode switch (``BOOK_QUICK=1``) through which every simulation size is chosen.
``symbreak.rng``
    Seeded random generators (NumPy and PyTorch); every random draw in the book goes through them.
``symbreak.engine``
    The shared simulation engine: exact Wishart minibatch covariances, batched ensembles,
    divergence detection, the two-core thread pool.
``symbreak.progress``
    Progress bars that show in a terminal or a live notebook and stay quiet in builds.
``symbreak.plotting``
    The house plotting style: theory dashed, simulation solid, one colour per mode or parameter.
``symbreak.validation``
    Checks at the public boundary that raise ``ValueError`` naming the parameter.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
