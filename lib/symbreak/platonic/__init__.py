"""Perfect Platonic representations in embedded deep linear networks (Ziyin & Chuang, 2025).

The setting (the paper's Sec. 2, as the book reconstructs it): latent data
``x ~ N(0, Σx)`` in ``R^n``, labels ``y = V* x + ε`` with label noise ``ε ~ N(0, Σε)`` in ``R^m``.
A network sees the *view* ``Z x`` and is an *embedded deep linear network* (EDLN)

    f(x) = M^O W_D ⋯ W_1 M^I Z x ,

with fixed invertible ``M^I`` (n×n), ``M^O`` (m×m), ``Z`` (n×n) and trainable ``W_1 .. W_D``.
With ``h_k = P_k x`` the input of ``W_k`` as a function of the latent ``x``,
``P_k = W_{k-1} ⋯ W_1 M^I Z``, the hidden layers ``k = 2 .. D`` carry the kernels
``K_k = P_kᵀ P_k`` (n×n): ``h_k(x1)ᵀ h_k(x2) = x1ᵀ K_k x2``. Theorem 1 of the paper states that at
the global minima of the SGD objective ``L + η S`` (η → 0⁺), with the *entropic term*
``S = Σ_i E‖∇_{W_i} ℓ‖²`` (Eq. 14), every hidden layer of every such network has the same kernel
up to scale, :func:`platonic_kernel`.

Everything here is exact for Gaussian data: the population loss, ``S``, the gradient second
moments and the gradient of ``S`` are closed forms in the second and fourth Gaussian moments (see
:func:`entropy_term`). Stochastic gradient descent uses the exact minibatch trick of
:mod:`symbreak.engine`: the minibatch gradient of ``‖f(x) − y‖²`` is linear in the minibatch
second-moment matrix of ``(x, ε)``, which is drawn from its Wishart law.

Conventions: weights are a list ``[W_1, ..., W_D]``; every array may carry a leading replica
axis (shape ``(R, d_out, d_in)``) and all functions work on such stacks. Layer indices in the
docstrings follow the paper (1-based); Python lists are 0-based.

Contents
--------
:func:`platonic_kernel`, :func:`kernel_alignment`, :func:`alignment_matrix`, :func:`joint_alignment`,
:func:`alignment_blocks`
    The closed-form kernel ``K⋆`` and the uncentered kernel alignment.
:class:`Task`, :class:`EDLN`, :func:`random_task`, :func:`random_edln`, :func:`random_invertible`,
:func:`random_spd`, :func:`random_orthogonal`
    The data model and the networks.
:func:`init_weights`, :func:`random_global_minimum`, :func:`platonic_minimum`, :func:`min_norm_minimum`,
:func:`minimal_entropy`, :func:`symmetry_transform`, :func:`minimize_entropy_on_orbit`
    Initialisations, global minima, the explicit Platonic minimum and its entropy, the symmetry
    (16) and a direct numerical minimisation of ``S`` along it.
:func:`end_to_end`, :func:`hidden_kernels`, :func:`population_loss`, :func:`entropy_term`,
:func:`gradient_moments`, :func:`gradient_balance`, :func:`loss_gradient`, :func:`entropy_gradient`,
:func:`sharpness`
    Exact population quantities.
:func:`noether_charges`, :func:`charge_drift`
    The conserved charges of gradient flow and their exact expected drift under SGD.
:func:`sample_data`, :func:`per_sample_gradients`, :func:`entropy_term_mc`, :func:`minibatch_gradient`
    Sample-level quantities (Eq. 14, a Monte Carlo estimate of ``S``, the minibatch gradient).
:func:`train_gd`, :func:`train_sgd`, :class:`TrainResult`
    Full-batch gradient descent on ``L + γ S + λ Σ‖W_i‖²`` and online SGD (batch ``B``, rate η,
    optional weight decay), batched over replicas on :func:`symbreak.engine.run_ensemble`
    (optionally split into chunks on its thread pool).
:func:`gradient_flow`, :func:`loss_hessian`, :func:`sharpness_and_trace`, :func:`hessian_trace_at_minimum`
    The continuous-time control (an ODE solver) and the curvature of ``L`` anywhere.
:func:`flow_to_minimum`, :func:`converge_entropic`
    Gradient flow and gradient descent on ``L + γS`` run to a stated convergence criterion
    (excess loss; kernels that stop moving) instead of a fixed horizon.
:func:`linear_cka`, :func:`gram_alignment`, :func:`mutual_knn`, :func:`representations`
    The sample-level alignment metrics of the representation-similarity literature.
:func:`train_sgd_samples`, :func:`explore_alignment`
    SGD on explicit samples (nonlinear modules, finite datasets, widths below ``rank V*``) and the
    chapter's explorer.

Extra: ``symbreak[torch]`` for the autograd references (per-sample gradients, sample-level
training); the rest needs only the core dependencies.
"""

from __future__ import annotations

from ..rng import make_rng  # noqa: F401  (the old module's namespace held it; pages and tests use pl.make_rng)
from .alignment import explore_alignment, representations, train_sgd_samples
from .curvature import flow_to_minimum, gradient_flow, hessian_trace_at_minimum, loss_hessian, sharpness_and_trace
from .kernel import alignment_matrix, joint_alignment, kernel_alignment, platonic_kernel
from .linalg import DivergenceError, random_invertible, random_orthogonal, random_spd, sqrtm_psd
from .metrics import gram_alignment, linear_cka, mutual_knn
from .minima import (
    init_weights,
    min_norm_minimum,
    minimal_entropy,
    minimize_entropy_on_orbit,
    platonic_minimum,
    random_global_minimum,
    symmetry_transform,
)
from .model import EDLN, Task, example_pair, random_edln, random_task
from .population import (
    alignment_blocks,
    charge_drift,
    end_to_end,
    entropy_gradient,
    entropy_term,
    gradient_balance,
    gradient_moments,
    hidden_kernels,
    loss_gradient,
    minibatch_gradient,
    noether_charges,
    population_loss,
    sharpness,
)
from .samples import autograd_sample_gradients, entropy_term_mc, per_sample_gradients, sample_data

# private names that tests and benchmarks reach for, kept at the old path
from .training import (  # noqa: F401
    _COMPILED_SGD,
    TrainResult,
    _PlatonicModel,
    converge_entropic,
    train_gd,
    train_sgd,
)

__all__ = [
    "platonic_kernel",
    "kernel_alignment",
    "alignment_matrix",
    "joint_alignment",
    "alignment_blocks",
    "noether_charges",
    "charge_drift",
    "sqrtm_psd",
    "random_orthogonal",
    "random_invertible",
    "random_spd",
    "Task",
    "random_task",
    "EDLN",
    "random_edln",
    "example_pair",
    "init_weights",
    "random_global_minimum",
    "platonic_minimum",
    "min_norm_minimum",
    "minimal_entropy",
    "symmetry_transform",
    "minimize_entropy_on_orbit",
    "end_to_end",
    "hidden_kernels",
    "population_loss",
    "entropy_term",
    "gradient_moments",
    "gradient_balance",
    "sharpness",
    "loss_gradient",
    "entropy_gradient",
    "minibatch_gradient",
    "sample_data",
    "per_sample_gradients",
    "entropy_term_mc",
    "autograd_sample_gradients",
    "TrainResult",
    "train_gd",
    "train_sgd",
    "gradient_flow",
    "flow_to_minimum",
    "converge_entropic",
    "loss_hessian",
    "sharpness_and_trace",
    "hessian_trace_at_minimum",
    "linear_cka",
    "gram_alignment",
    "mutual_knn",
    "representations",
    "train_sgd_samples",
    "explore_alignment",
    "DivergenceError",
]
