"""Beyond the theorems: the knob model that joins the three chapters, and nonlinear networks on real data.

The library behind the part *Beyond the theorems*:

``symbreak.beyond.synthesis``
    The knob model: the Noether charge of a rescaling symmetry under label noise,
    parameter noise and the edge of stability, in the smallest model that shows all three (the
    part's first page). Also importable as ``symbreak.synthesis``.
``symbreak.beyond.data``, ``symbreak.beyond.autoencoders``, ``symbreak.beyond.alignment``
    Nonlinear autoencoders and multilayer perceptrons on scikit-learn's 8×8 digits (shipped inside
    the package, nothing downloaded): what survives of the linear theories (the pages *Nonlinear
    autoencoders on digits* and *Do two ReLU networks align?*). Also importable as
    ``symbreak.nonlinear``.
``symbreak.beyond.table``
    The cells of the first page's synthesis table: the realised one-step charge changes of the
    Platonic and autoencoder models, the generator divergence (volume term), and the square deep
    linear network's gradient flow and isotropic-noise walk.
``symbreak.beyond.relu``
    One-hidden-layer ReLU networks with biases: the per-neuron rescaling charges, their exact
    one-step change and expected drift under SGD with label noise, gradient balance, and the
    unit-mixing generators a ReLU layer loses (the page *What survives in ReLU networks*).
``symbreak.beyond.verdicts``
    Confidence intervals over replicas for the part's verdicts, mutual k-NN with the cosine
    distance, and the Noether defect of a tanh autoencoder (the first-order charge drift).

Two names exist in both halves with different models behind them (``lambert_scale``,
``eos_ceiling``, ``hessian_lambda_max`` of the knob model, ``linear_cka`` and the other metrics of
the digits' networks); this package's namespace holds the digits' metrics and leaves the knob
model's functions to ``symbreak.beyond.synthesis``.

Extra: ``symbreak[beyond]`` (PyTorch and scikit-learn, whose 8×8 digits ship inside the package)
for the nonlinear networks; the knob model needs only the core dependencies.
"""

from __future__ import annotations

from . import relu, table, verdicts
from ._common import ACTIVATIONS
from .alignment import PairRun, init_mlp, kernel_alignment, linear_cka, mlp_hidden, mutual_knn, train_mlp_pair
from .autoencoders import (
    AERun,
    ae_drift_terms,
    ae_gradients,
    ae_sharpness,
    fit_lambert_rate,
    init_autoencoder,
    neuron_charges,
    train_autoencoder,
)
from .data import load_digits_data, pca_theory

__all__ = [
    "relu",
    "table",
    "verdicts",
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
