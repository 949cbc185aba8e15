"""Shared constants and the lazy torch import of the 'Beyond the theorems' part.

No page calls this module directly; it serves the package's other modules.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ACTIVATIONS"]


#: Activations of the autoencoder's hidden layer.
ACTIVATIONS = ("linear", "relu", "tanh")
#: A replica whose largest weight exceeds this (or is not finite) has diverged.
DIVERGENCE_LIMIT = 1e4


def _torch():
    import torch

    return torch


def _tensor(a, requires_grad: bool = False):
    """A float64 torch tensor holding a copy of ``a`` (any memory layout, negative strides included)."""
    t = _torch().from_numpy(np.array(a, dtype=np.float64, order="C", copy=True))
    return t.requires_grad_(requires_grad)
