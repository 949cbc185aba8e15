"""Scale drift in undercomplete linear autoencoders.

The mathematics and the simulations of the chapter on F. Pashakhanloo and J. A. Zavatone-Veth,
*Broken scale symmetries in undercomplete linear autoencoders* (arXiv:2610.03640). Equation
numbers (A.15, B.94, C.52, D.21, E.13, ...) refer to that paper.

A linear autoencoder ``f(x) = W U x`` with encoder ``U`` (``k×d``) and decoder ``W`` (``d×k``),
``k < d``, trained on zero-mean data with covariance ``Σ = diag(λ_1 ≥ … ≥ λ_d)``, has the
``GL(k)`` symmetry ``(W, U) ↦ (W A, A⁻¹ U)`` and the Noether charge ``Q = WᵀW − UUᵀ`` (Eq. 2).
On the PCA manifold ``(W, U) = (Pᵀ S^{1/2}, S^{-1/2} P)`` SGD makes ``Q`` grow in the positive
semi-definite cone (A.26); on the slow time ``τ = t η²/B`` the scales follow the Lambert-W law
(Eq. 6 / C.52) until the edge of stability stops them at a common ceiling (C.81).

Contents
--------
Spectra and rates
    :func:`geometric_spectrum`, :func:`growth_rates`, :func:`charge_drift_matrix`.
Effective dynamics (App. C)
    :func:`lambert_scale`, :func:`sqrt_scale`, :func:`lambert_time`, :func:`scale_flow`.
Finite-step corrections (the book's extension, not in the paper)
    :func:`drift_correction`, :func:`corrected_scale`, :func:`off_manifold_fluctuations`,
    :func:`expected_charge_increment`.
Hessian (App. B) and the edge of stability (App. C.5)
    :func:`pca_point`, :func:`pca_hessian_eigenvalues`, :func:`hessian_lambda_max`,
    :func:`hessian_trace`, :func:`trace_minimizing_scale`, :func:`overcomplete_point`,
    :func:`overcomplete_hessian_eigenvalues`, :func:`autograd_hessian`, :func:`eos_ceiling`,
    :func:`fit_kappa`, :func:`saturation_scale`.
Batch sharpness (App. D)
    :func:`modified_batch_sharpness`, :func:`batch_sharpness_monte_carlo`.
Charges, gradients and flows (App. A, E)
    :func:`noether_charge`, :func:`minibatch_gradients`, :func:`sgd_step`,
    :func:`charge_increment`, :func:`charge_increments_along_sgd`, :func:`gradient_flow`,
    :func:`population_loss`, :func:`sample_gradients`, :func:`neuron_balance_autograd`,
    :func:`residual_split`.
Simulation
    :func:`simulate_sgd`, :func:`simulate_sgd_grid`, :class:`SGDResult`. Linear networks use
    exact Wishart minibatch covariances (:class:`symbreak.engine.WishartBlockSampler`) with the
    learning rate folded into the draw; seeds and ``(η, B)`` grids run as one batched ensemble on
    two threads; divergence raises :class:`symbreak.engine.DivergenceError`.

Extra: ``symbreak[torch]`` for the PyTorch references (the autograd Hessian, the torch SGD path);
the rest needs only the core dependencies.
"""

from __future__ import annotations

from ._common import DIVERGENCE_LIMIT, GL_DRIFT_RTOL, GL_FLOW_MAX_TAU
from .charge import (
    charge_increment,
    charge_increments_along_sgd,
    expected_charge_increment,
    gradient_flow,
    gradient_flow_horizon,
    minibatch_gradients,
    noether_charge,
    saturation_scale,
    sgd_step,
)
from .explorer import EXPLORER_BOX, explorer_run, explorer_runs
from .glk import charge_noise_std, gl_flow, gl_flow_drift, polar_rotation, simulate_sgd_variants
from .hessian import (
    autograd_hessian,
    hessian_lambda_max,
    hessian_trace,
    overcomplete_hessian_eigenvalues,
    overcomplete_point,
    pca_hessian_eigenvalues,
    pca_point,
    trace_minimizing_scale,
)
from .relu import neuron_balance_autograd, population_loss, residual_split, sample_gradients

# private names (and one class) that tests and benchmarks reached for in the old module, kept there
from .scale import (  # noqa: F401
    _perp_lyapunov,
    _scale_flow_ode,
    charge_drift_matrix,
    corrected_scale,
    drift_correction,
    geometric_spectrum,
    growth_rates,
    lambert_scale,
    lambert_time,
    off_manifold_fluctuations,
    scale_flow,
    sqrt_scale,
)
from .sgd import (  # noqa: F401
    _FUSED_MAX_REPLICAS,
    SGDResult,
    _FusedLinearStepper,
    _LinearModel,
    _LinearStepper,
    _run,
    _SamplesModel,
    simulate_sgd,
    simulate_sgd_grid,
)
from .sharpness import BatchSharpness, batch_sharpness_monte_carlo, modified_batch_sharpness  # noqa: F401
from .stability import (
    ReducedEdgeResult,
    eos_ceiling,
    eos_reduced_kappa,
    eos_reduced_map,
    fit_kappa,
    gain_noise_variance,
    gain_stability_thresholds,
    plateau_kappa,
)

__all__ = [
    "geometric_spectrum",
    "growth_rates",
    "charge_drift_matrix",
    "lambert_scale",
    "sqrt_scale",
    "lambert_time",
    "scale_flow",
    "gl_flow_drift",
    "gl_flow",
    "polar_rotation",
    "charge_noise_std",
    "simulate_sgd_variants",
    "EXPLORER_BOX",
    "explorer_run",
    "explorer_runs",
    "drift_correction",
    "corrected_scale",
    "off_manifold_fluctuations",
    "pca_point",
    "pca_hessian_eigenvalues",
    "hessian_lambda_max",
    "hessian_trace",
    "trace_minimizing_scale",
    "overcomplete_point",
    "overcomplete_hessian_eigenvalues",
    "autograd_hessian",
    "eos_ceiling",
    "fit_kappa",
    "gain_noise_variance",
    "gain_stability_thresholds",
    "ReducedEdgeResult",
    "eos_reduced_map",
    "plateau_kappa",
    "eos_reduced_kappa",
    "modified_batch_sharpness",
    "batch_sharpness_monte_carlo",
    "noether_charge",
    "minibatch_gradients",
    "sgd_step",
    "charge_increment",
    "expected_charge_increment",
    "charge_increments_along_sgd",
    "saturation_scale",
    "gradient_flow",
    "gradient_flow_horizon",
    "population_loss",
    "sample_gradients",
    "neuron_balance_autograd",
    "residual_split",
    "SGDResult",
    "simulate_sgd",
    "simulate_sgd_grid",
    "DIVERGENCE_LIMIT",
    "GL_DRIFT_RTOL",
    "GL_FLOW_MAX_TAU",
]
