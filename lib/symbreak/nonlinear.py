"""The nonlinear networks of the part *Beyond the theorems*, at their old import path.

The code lives in :mod:`symbreak.beyond` (modules ``data``, ``autoencoders``, ``alignment``);
this module re-exports its names so that ``from symbreak import nonlinear`` keeps working.
"""

from __future__ import annotations

from .beyond._common import ACTIVATIONS
from .beyond.alignment import PairRun, init_mlp, kernel_alignment, linear_cka, mlp_hidden, mutual_knn, train_mlp_pair
from .beyond.autoencoders import (
    AERun,
    ae_drift_terms,
    ae_gradients,
    ae_sharpness,
    fit_lambert_rate,
    init_autoencoder,
    neuron_charges,
    train_autoencoder,
)
from .beyond.data import load_digits_data, pca_theory

__all__ = [
    "ACTIVATIONS",
    "load_digits_data",
    "pca_theory",
    "ae_gradients",
    "init_autoencoder",
    "neuron_charges",
    "AERun",
    "train_autoencoder",
    "ae_sharpness",
    "ae_drift_terms",
    "fit_lambert_rate",
    "kernel_alignment",
    "linear_cka",
    "mutual_knn",
    "init_mlp",
    "mlp_hidden",
    "PairRun",
    "train_mlp_pair",
]
