"""Entropy of the deep linear network: free energy on singular values (Chen, Kotwal & Menon).

The deep linear network (DLN) ``X = W_N ⋯ W_1`` of ``d×d`` matrices, trained by gradient flow from
a balanced initialisation, moves its end-to-end matrix ``X`` by a Riemannian gradient flow for the
metric ``g^N`` whose inverse is the operator ``A_{N,X}`` (Lemma 2.1 of the paper). For a spectral
energy the flow acts on the singular values alone, in the chamber ``σ_1 ≥ … ≥ σ_d > 0``, with the
pushforward metric (2.9); adding the Boltzmann entropy ``S_N`` of the balanced fibre at inverse
temperature ``β`` gives the free energy ``F_β = E − S_N/β`` and the flow (1.10)::

    σ̇_i = −N σ_i^{2−2/N} ∂F_β/∂σ_i .

Everything in this module is evaluated without cancellation at and near coincident singular values.
The key is to write each pair term of the entropy in logarithmic variables ``ℓ_i = log σ_i``,
``δ = ℓ_i − ℓ_j``::

    log[(σ_i² − σ_j²)/(σ_i^{2/N} − σ_j^{2/N})] = (1 − 1/N)(ℓ_i + ℓ_j) + G_N(δ),
    G_N(δ) = log[sinh δ / sinh(δ/N)],

an even, real-analytic function with ``G_N(0) = log N``; its derivatives
``G_N'(δ) = c(δ) − c(δ/N)/N`` and ``G_N''(δ) = −e(δ) + e(δ/N)/N²`` use ``c(x) = coth x − 1/x`` and
``e(x) = csch² x − 1/x²``, whose ``1/x`` poles cancel exactly and which are evaluated by their Taylor
series near 0. The entropy itself is evaluated by the λ-polynomial form (3.4)–(3.5),
``λ = σ^{1/N}``, with the larger value factored out.

Contents
--------
Entropy (Sections 3–5): :func:`entropy`, :func:`entropy_gradient`, :func:`entropy_hessian`,
:func:`riemannian_entropy_hessian`, :func:`pair_kernels` (``p_N, q_N``),
:func:`log_form_derivatives`, :func:`naive_entropy`,
:func:`entropy_autograd` (PyTorch reference).

Energies and flows (Sections 2, 6): :class:`SpectralEnergy`, :func:`schatten_energy`,
:func:`quadratic_energy`, :func:`flow_vector_field`, :func:`flow_jacobian`,
:func:`singular_value_flow`, :func:`numerical_jacobian`.

Equilibria and rates (Theorems 1.2, 1.3): :func:`schatten_sigma_star`, :func:`sigma_star`,
:func:`relaxation_rates`, :func:`relaxation_rates_general`.

Exact solution (Theorem 1.7): :func:`scale_time_function`, :func:`schatten_scale`.

Matrices (Section 2): :func:`A_operator`, :func:`A_matrix`, :func:`A_eigenvalues`,
:func:`factor_metric_operator`, :func:`balanced_factors`, :func:`end_to_end`,
:func:`balance_defect`, :func:`spectral_gradient_matrix`, :func:`train_factors`.

Large ``d`` (Section 8.3): :func:`equilibrium_spectrum`, :func:`quarter_circle_density`.

Extra: ``symbreak[torch]`` for the autograd reference of the entropy; the rest (mpmath included)
needs only the core dependencies.
"""

from __future__ import annotations

# private names that tests and benchmarks reach for, kept at the old path
from ._special import _h  # noqa: F401
from .concavity import certify_concavity, concavity_discriminant, concavity_tail_start
from .energy import SpectralEnergy, quadratic_energy, schatten_energy
from .equilibrium import relaxation_rates, relaxation_rates_general, schatten_sigma_star, sigma_star
from .exact import (
    _R_near_one,  # noqa: F401
    scale_time_function,
    schatten_scale,
)
from .explorer import EXPLORER_BOX, explorer_view
from .flow import flow_jacobian, flow_vector_field, numerical_jacobian, singular_value_flow, singular_value_flows
from .large_d import equilibrium_spectrum, quarter_circle_density
from .matrix import (
    A_eigenvalues,
    A_matrix,
    A_operator,
    balance_defect,
    balanced_factors,
    completion_low_rank_ratios,
    completion_task,
    end_to_end,
    entropy_gradient_matrix,
    factor_metric_operator,
    matrix_flow,
    matrix_flow_jacobian,
    matrix_velocity,
    spectral_gradient_matrix,
    train_factors,
)
from .orbit import orbit_gram_logdet, pair_gram_determinant, tridiagonal_toeplitz_det
from .pairs import (
    factor_gradients,
    mean_field_free_energy,
    mean_field_pair_matrix,
    pair_force,
    pair_force_asymmetry,
    phi_pair,
    scale_ratio_velocity,
)
from .spectral_entropy import (
    _entropy_sinh_form,  # noqa: F401
    entropy,
    entropy_autograd,
    entropy_gradient,
    entropy_hessian,
    log_form_derivatives,
    naive_entropy,
    pair_kernels,
    riemannian_entropy_hessian,
)

__all__ = [
    "entropy",
    "entropy_gradient",
    "entropy_hessian",
    "riemannian_entropy_hessian",
    "pair_kernels",
    "log_form_derivatives",
    "naive_entropy",
    "entropy_autograd",
    "orbit_gram_logdet",
    "concavity_discriminant",
    "concavity_tail_start",
    "certify_concavity",
    "pair_gram_determinant",
    "tridiagonal_toeplitz_det",
    "SpectralEnergy",
    "schatten_energy",
    "quadratic_energy",
    "flow_vector_field",
    "flow_jacobian",
    "singular_value_flow",
    "singular_value_flows",
    "numerical_jacobian",
    "schatten_sigma_star",
    "sigma_star",
    "relaxation_rates",
    "relaxation_rates_general",
    "scale_time_function",
    "schatten_scale",
    "A_operator",
    "A_matrix",
    "A_eigenvalues",
    "factor_metric_operator",
    "balanced_factors",
    "end_to_end",
    "balance_defect",
    "spectral_gradient_matrix",
    "train_factors",
    "entropy_gradient_matrix",
    "matrix_velocity",
    "matrix_flow_jacobian",
    "matrix_flow",
    "completion_task",
    "completion_low_rank_ratios",
    "EXPLORER_BOX",
    "explorer_view",
    "equilibrium_spectrum",
    "quarter_circle_density",
    "pair_force",
    "pair_force_asymmetry",
    "phi_pair",
    "scale_ratio_velocity",
    "mean_field_pair_matrix",
    "mean_field_free_energy",
    "factor_gradients",
]
