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
:func:`linear_cka`, :func:`gram_alignment`, :func:`mutual_knn`, :func:`representations`
    The sample-level alignment metrics of the representation-similarity literature.
:func:`train_sgd_samples`, :func:`explore_alignment`
    SGD on explicit samples (nonlinear modules, finite datasets, widths below ``rank V*``) and the
    chapter's explorer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .engine import (
    Configuration,
    DivergenceError,
    WishartBlockSampler,
    _compiled,
    check_divergence,
    record_steps,
    run_ensemble,
)
from .rng import make_rng
from .validation import (
    MAX_DRAWS,
    MAX_STEPS,
    check_array,
    check_int,
    check_invertible,
    check_nonnegative,
    check_positive,
    check_square,
    check_symmetric_positive_definite,
    finite_result,
    solve_ivp_bounded,
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


# ----------------------------------------------------------------------------------------------
# Linear algebra helpers
# ----------------------------------------------------------------------------------------------


def _sym(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def _t(a: np.ndarray) -> np.ndarray:
    return a.swapaxes(-1, -2)  # the method: the training loops call this ~10⁶ times per page


def _tr(a: np.ndarray) -> np.ndarray:
    return np.trace(a, axis1=-2, axis2=-1)


def sqrtm_psd(a) -> np.ndarray:
    """Principal square root of a symmetric positive semi-definite matrix (by ``eigh``).

    Eigenvalues within round-off of zero (below ``10 n ε_mach`` times the largest) are set to
    zero, so that the root of a rank-deficient matrix keeps its rank (the square root would
    otherwise turn round-off of size 1e-17 into spurious eigenvalues of size 1e-9). Accepts a
    stack of matrices (shape ``(..., n, n)``).

    Raises
    ------
    ValueError
        If ``a`` is not a finite real square (stack of) matrix, is not symmetric, or has an
        eigenvalue below ``−10 n ε_mach`` times the largest (indefinite: no real root exists).
    """
    a = check_array("a", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or a.shape[-1] == 0:
        raise ValueError(f"a must be a square matrix (or a stack of them), got shape {a.shape}")
    scale = np.abs(a).max(axis=(-2, -1), keepdims=True)
    scale = np.where(scale > 0, scale, 1.0)
    unit = a / scale  # eigenvalues of a matrix with entries in [-1, 1]: no overflow or underflow
    if np.abs(unit - _t(unit)).max() > 1e-10:
        raise ValueError("a must be symmetric")
    w, v = np.linalg.eigh(_sym(unit))
    floor = 10 * a.shape[-1] * np.finfo(float).eps * np.abs(w).max(axis=-1, keepdims=True)
    if np.any(w < -floor):
        raise ValueError(
            f"a must be positive semi-definite (it has an eigenvalue {w.min():.3g} times its "
            "largest entry, below round-off): an indefinite matrix has no real square root"
        )
    w = np.where(w > floor, w, 0.0)
    return finite_result("sqrtm_psd", _sym((v * np.sqrt(w)[..., None, :]) @ _t(v)) * np.sqrt(scale))


def _check_generator(rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (symbreak.rng.make_rng), got {type(rng).__name__}")


def random_orthogonal(rng: np.random.Generator, n: int) -> np.ndarray:
    """A Haar-distributed orthogonal ``n×n`` matrix (QR of a Gaussian matrix, signs fixed)."""
    _check_generator(rng)
    n = check_int("n", n, minimum=1, maximum=10_000)
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))[None, :]


def random_invertible(rng: np.random.Generator, n: int, cond: float = 3.0) -> np.ndarray:
    """A random invertible ``n×n`` matrix ``O₁ diag(s) O₂`` with Haar orthogonal ``O₁, O₂`` and
    singular values ``s`` log-uniform in ``[cond^{-1/2}, cond^{1/2}]`` with both ends attained,
    so its condition number is exactly ``cond`` (for ``n ≥ 2``) and its determinant is of order 1.
    """
    _check_generator(rng)
    n = check_int("n", n, minimum=1, maximum=10_000)
    cond = check_positive("cond", cond)
    if cond < 1:
        raise ValueError(f"cond must lie in [1, inf), got {cond!r}")
    u = rng.uniform(-0.5, 0.5, size=n)
    if n >= 2:
        u[0], u[1] = -0.5, 0.5
    s = cond**u
    return random_orthogonal(rng, n) @ np.diag(s) @ random_orthogonal(rng, n)


def random_spd(rng: np.random.Generator, n: int, cond: float = 3.0, scale: float = 1.0) -> np.ndarray:
    """A random symmetric positive-definite ``n×n`` matrix ``scale · O diag(λ) Oᵀ`` with
    eigenvalues log-uniform in ``[cond^{-1/2}, cond^{1/2}]`` (both ends attained)."""
    _check_generator(rng)
    n = check_int("n", n, minimum=1, maximum=10_000)
    cond = check_positive("cond", cond)
    scale = check_positive("scale", scale)
    if cond < 1:
        raise ValueError(f"cond must lie in [1, inf), got {cond!r}")
    u = rng.uniform(-0.5, 0.5, size=n)
    if n >= 2:
        u[0], u[1] = -0.5, 0.5
    o = random_orthogonal(rng, n)
    return _sym(scale * (o * cond**u) @ o.T)


# ----------------------------------------------------------------------------------------------
# The Platonic kernel and the alignment score
# ----------------------------------------------------------------------------------------------


def platonic_kernel(V, sigma_x, sigma_eps) -> np.ndarray:
    """The Platonic kernel ``K⋆`` of the reconstructed proof of Theorem 1, unit Frobenius norm.

    .. math::

        K^\\star \\propto \\Sigma_x^{-1/2} \\big(\\Sigma_x^{1/2} V^\\top \\Sigma_\\varepsilon V
        \\Sigma_x^{1/2}\\big)^{1/2} \\Sigma_x^{-1/2} .

    At every minimiser of the entropic term ``S`` among the global minima of the loss (the
    gradient-balance conditions, paper Eqs. 31–33), every hidden layer ``h_k = P_k x`` of every
    EDLN has ``P_kᵀ P_k = √c_k K⋆`` for a layer-dependent constant ``c_k > 0``. ``K⋆`` depends
    on the data and the label noise only, not on ``Z``, ``M^I``, ``M^O``, the widths or the depth.

    Parameters
    ----------
    V : array_like, shape (m, n)
        The target map ``V*`` of ``y = V* x + ε`` (not zero).
    sigma_x : array_like, shape (n, n)
        Covariance of the latent data, symmetric positive definite.
    sigma_eps : array_like, shape (m, m)
        Covariance of the label noise, symmetric positive definite.

    Returns
    -------
    numpy.ndarray, shape (n, n)
        Symmetric positive semi-definite, ``‖K⋆‖_F = 1``; its rank is ``rank V*``.

    Raises
    ------
    ValueError
        If ``V`` is not a non-zero finite matrix, or a covariance is not symmetric positive
        definite or has the wrong size.
    """
    V = check_array("V", V, ndim=2)
    m, n = V.shape
    sx = check_symmetric_positive_definite("sigma_x", sigma_x, size=n)
    se = check_symmetric_positive_definite("sigma_eps", sigma_eps, size=m)
    if not np.any(V):
        raise ValueError("V must not be the zero matrix (the kernel would vanish)")
    # K⋆ has unit norm and is homogeneous in V, Σx and Σε: divide each by its largest entry first, so
    # that no scale in the float64 range overflows or underflows
    V, sx, se = (a / np.abs(a).max() for a in (V, sx, se))
    w, o = np.linalg.eigh(sx)
    sx_half = (o * np.sqrt(w)) @ o.T
    sx_ihalf = (o / np.sqrt(w)) @ o.T
    core = sqrtm_psd(sx_half @ V.T @ se @ V @ sx_half)
    k = _sym(sx_ihalf @ core @ sx_ihalf)
    return finite_result("platonic_kernel", k / np.linalg.norm(k))


def kernel_alignment(K1, K2, *, metric=None):
    """Uncentered kernel alignment ``⟨K1, K2⟩_F / (‖K1‖_F ‖K2‖_F)``.

    Equal to 1 exactly when ``K1 = c K2`` with ``c > 0`` (perfect alignment: the two
    representations agree up to a rotation and a scale), invariant to the scale of either
    kernel and to rotations ``h → O h`` of either representation (which leave ``K = Pᵀ P``
    unchanged), and in ``[0, 1]`` for positive semi-definite kernels.

    Parameters
    ----------
    K1, K2 : array_like, shape (..., n, n)
        Kernels (Gram matrices of the representations in latent coordinates); leading axes
        broadcast.
    metric : array_like, shape (n, n), optional
        If given (a covariance ``Σ``), the kernels are compared as ``Σ^{1/2} K Σ^{1/2}``: this is
        the alignment of the population Gram functions, ``E[k1 k2] / (E[k1²] E[k2²])^{1/2}``
        with ``k(x1, x2) = x1ᵀ K x2`` and independent ``x1, x2 ~ N(0, Σ)``.

    Returns
    -------
    float or numpy.ndarray
        The alignment, with the broadcast leading shape.

    Raises
    ------
    ValueError
        If the kernels are not square, their sizes differ, or one of them is zero.
    """
    K1 = check_array("K1", K1)
    K2 = check_array("K2", K2)
    for name, k in (("K1", K1), ("K2", K2)):
        if k.ndim < 2 or k.shape[-1] != k.shape[-2]:
            raise ValueError(f"{name} must be a square matrix (or a stack of them), got shape {k.shape}")
    if K1.shape[-1] != K2.shape[-1]:
        raise ValueError(f"K1 and K2 must have the same size, got {K1.shape[-1]} and {K2.shape[-1]}")
    # the alignment is scale-invariant: scale each kernel to unit largest entry first, so that
    # ‖K‖_F neither overflows (K = 1e160 I) nor underflows (K = 1e-170 I)
    m1 = np.abs(K1).max(axis=(-2, -1), keepdims=True)
    m2 = np.abs(K2).max(axis=(-2, -1), keepdims=True)
    if np.any(m1 == 0):
        raise ValueError("K1 must not be zero")
    if np.any(m2 == 0):
        raise ValueError("K2 must not be zero")
    K1, K2 = K1 / m1, K2 / m2
    if metric is not None:
        s = check_symmetric_positive_definite("metric", metric, size=K1.shape[-1])
        r = sqrtm_psd(s / np.abs(s).max())  # the metric's scale cancels too
        K1, K2 = r @ K1 @ r, r @ K2 @ r
    n1 = np.sqrt(np.einsum("...ij,...ij->...", K1, K1))
    n2 = np.sqrt(np.einsum("...ij,...ij->...", K2, K2))
    out = np.einsum("...ij,...ij->...", K1, K2) / (n1 * n2)
    return finite_result("kernel_alignment", float(out) if np.ndim(out) == 0 else out)


def alignment_matrix(kernels, *, metric=None) -> np.ndarray:
    """Pairwise :func:`kernel_alignment` of a list of ``n×n`` kernels: a symmetric matrix with ones
    on the diagonal (the heatmap of Theorem 1)."""
    if isinstance(kernels, (str, bytes)) or not hasattr(kernels, "__len__") or len(kernels) == 0:
        raise ValueError("kernels must be a non-empty sequence of n x n matrices")
    ks = [check_array(f"kernels[{i}]", k, ndim=2) for i, k in enumerate(kernels)]
    out = np.ones((len(ks), len(ks)))
    for i in range(len(ks)):
        for j in range(i + 1, len(ks)):
            out[i, j] = out[j, i] = kernel_alignment(ks[i], ks[j], metric=metric)
    return finite_result("alignment_matrix", out)


def joint_alignment(*kernel_stacks, reference=None, metric=None) -> np.ndarray:
    """Pairwise alignments of all hidden layers of several networks, replica by replica.

    Parameters
    ----------
    *kernel_stacks : array_like, shape (R, H_j, n, n) or (H_j, n, n)
        Hidden-layer kernels of each network (e.g. :func:`hidden_kernels`), same replicas.
    reference : array_like, shape (n, n), optional
        A kernel appended as the last row/column (e.g. ``K⋆``).

    Returns
    -------
    numpy.ndarray, shape (R, H, H) or (H, H)
        ``H = Σ_j H_j (+1)``: the alignment of every pair, ones on the diagonal.
    """
    if not kernel_stacks:
        raise ValueError("kernel_stacks must name at least one network's kernels")
    stacks = [check_array(f"kernel_stacks[{i}]", k) for i, k in enumerate(kernel_stacks)]
    squeeze = stacks[0].ndim == 3
    stacks = [k[None] if k.ndim == 3 else k for k in stacks]
    if any(k.ndim != 4 for k in stacks) or len({k.shape[0] for k in stacks}) != 1:
        raise ValueError("kernel_stacks must all have shape (R, H_j, n, n) with the same R")
    ks = np.concatenate(stacks, axis=1)
    if reference is not None:
        ref = check_array("reference", reference, ndim=2, shape=ks.shape[-2:])
        ks = np.concatenate([ks, np.broadcast_to(ref, (ks.shape[0], 1) + ref.shape)], axis=1)
    out = kernel_alignment(ks[:, :, None], ks[:, None, :], metric=metric)
    return finite_result("joint_alignment", out[0] if squeeze else out)


# ----------------------------------------------------------------------------------------------
# The data model and the networks
# ----------------------------------------------------------------------------------------------


def _check_psd(name: str, value, size: int) -> np.ndarray:
    arr = check_array(name, value, ndim=2)
    if arr.shape != (size, size):
        raise ValueError(f"{name} must be {size}x{size}, got shape {arr.shape}")
    scale = max(np.abs(arr).max(), np.finfo(float).tiny)
    if np.abs(arr - arr.T).max() > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric")
    arr = _sym(arr)
    if np.linalg.eigvalsh(arr)[0] < -1e-10 * scale:
        raise ValueError(f"{name} must be positive semi-definite (all eigenvalues >= 0)")
    return arr


def _check_net(net) -> None:
    if not isinstance(net, EDLN):
        raise TypeError(f"net must be an EDLN (see random_edln), got {type(net).__name__}")


def _check_task(task) -> None:
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task (see random_task), got {type(task).__name__}")


@dataclass(frozen=True)
class Task:
    """The data model: ``x ~ N(0, Σx)`` in ``R^n``, ``y = V* x + ε`` with ``ε ~ N(0, Σε)``.

    Parameters
    ----------
    v_star : array_like, shape (m, n)
        Target map ``V*`` (not zero).
    sigma_x : array_like, shape (n, n)
        Latent covariance, symmetric positive definite.
    sigma_eps : array_like, shape (m, m)
        Label-noise covariance, symmetric positive *semi*-definite: ``0`` is allowed here to
        show what happens without label noise (then :meth:`platonic_kernel` is undefined).

    Raises
    ------
    ValueError
        Naming the parameter, for wrong shapes, a zero ``V*``, a ``Σx`` that is not symmetric
        positive definite or a ``Σε`` that is not symmetric positive semi-definite.
    """

    v_star: np.ndarray
    sigma_x: np.ndarray
    sigma_eps: np.ndarray

    def __post_init__(self):
        v = check_array("v_star", self.v_star, ndim=2)
        if not np.any(v):
            raise ValueError("v_star must not be the zero matrix")
        m, n = v.shape
        sx = check_symmetric_positive_definite("sigma_x", self.sigma_x, size=n)
        se = _check_psd("sigma_eps", self.sigma_eps, m)
        object.__setattr__(self, "v_star", v)
        object.__setattr__(self, "sigma_x", sx)
        object.__setattr__(self, "sigma_eps", se)

    @property
    def n(self) -> int:
        """Latent dimension."""
        return self.v_star.shape[1]

    @property
    def m(self) -> int:
        """Label dimension."""
        return self.v_star.shape[0]

    @property
    def rank(self) -> int:
        """``rank V*``: the smallest width a network needs to reach a global minimum."""
        return int(np.linalg.matrix_rank(self.v_star))

    @property
    def noise_free(self) -> bool:
        """Whether ``Σε = 0`` (no label noise)."""
        return not np.any(self.sigma_eps)

    def platonic_kernel(self) -> np.ndarray:
        """:func:`platonic_kernel` of this task (needs ``Σε`` positive definite)."""
        return platonic_kernel(self.v_star, self.sigma_x, self.sigma_eps)

    def with_noise(self, sigma_eps) -> "Task":
        """The same task with another label-noise covariance."""
        return Task(self.v_star, self.sigma_x, sigma_eps)

    def data_factor(self) -> np.ndarray:
        """A factor ``L`` with ``L Lᵀ = diag(Σx, Σε)``, the joint covariance of ``(x, ε)``."""
        n, m = self.n, self.m
        f = np.zeros((n + m, n + m))
        f[:n, :n] = np.linalg.cholesky(self.sigma_x)
        f[n:, n:] = sqrtm_psd(self.sigma_eps)
        return f


def random_task(
    seed=None,
    *,
    n: int = 4,
    m: int = 4,
    rank: int | None = None,
    noise: float = 0.5,
    cond_v: float = 3.0,
    cond_x: float = 3.0,
    cond_eps: float = 2.0,
) -> Task:
    """A random :class:`Task` with controlled conditioning.

    ``V* = O₁ diag(s) O₂ᵀ`` (m×n, rank ``rank``) with Haar-random orthonormal columns ``O₁, O₂``
    and singular values ``s`` log-uniform in ``[cond_v^{-1/2}, cond_v^{1/2}]`` (both ends
    attained); ``Σx`` with eigenvalues log-uniform with condition number ``cond_x``, scaled to
    trace ``n``; ``Σε = noise · Σ₀`` with ``Σ₀`` random of condition number ``cond_eps`` and trace
    ``m`` (so ``noise`` is the mean label-noise variance per output; ``noise = 0`` removes it).
    """
    rng = seed if isinstance(seed, np.random.Generator) else make_rng(seed)
    n = check_int("n", n, minimum=1)
    m = check_int("m", m, minimum=1)
    rank = min(n, m) if rank is None else check_int("rank", rank, minimum=1, maximum=min(n, m))
    noise = check_nonnegative("noise", noise)
    cond_v = check_positive("cond_v", cond_v)
    if cond_v < 1:
        raise ValueError(f"cond_v must lie in [1, inf), got {cond_v!r}")
    u = rng.uniform(-0.5, 0.5, size=rank)
    if rank >= 2:
        u[0], u[1] = -0.5, 0.5
    o1 = random_orthogonal(rng, m)[:, :rank]
    o2 = random_orthogonal(rng, n)[:, :rank]
    v = (o1 * cond_v**u) @ o2.T
    sx = random_spd(rng, n, cond_x)
    sx *= n / np.trace(sx)
    se = random_spd(rng, m, cond_eps)
    se *= noise * m / np.trace(se)
    return Task(v, sx, se)


@dataclass(frozen=True)
class EDLN:
    """An embedded deep linear network ``f(x) = M^O W_D ⋯ W_1 M^I Z x`` (paper Eq. 15).

    Parameters
    ----------
    widths : sequence of int
        Hidden widths ``d_1 .. d_{D-1}`` (the depth is ``D = len(widths) + 1 ≥ 2``).
    m_in : array_like, shape (n, n)
        Fixed invertible input embedding ``M^I`` (the module's upstream part).
    m_out : array_like, shape (m, m)
        Fixed invertible output embedding ``M^O`` (the module's downstream part).
    view : array_like, shape (n, n)
        Fixed invertible view ``Z``: the network's input is ``Z x``.
    name : str
        A label for plots and tables.

    Raises
    ------
    ValueError
        Naming the parameter, if a matrix is singular (condition number above 1e12) or has the
        wrong shape, or a width is not a positive integer.
    """

    widths: tuple
    m_in: np.ndarray
    m_out: np.ndarray
    view: np.ndarray
    name: str = "net"

    def __post_init__(self):
        if isinstance(self.widths, (int, np.integer)) or len(self.widths) < 1:
            raise ValueError("widths must be a non-empty sequence of hidden widths (depth >= 2)")
        widths = tuple(check_int(f"widths[{i}]", w, minimum=1) for i, w in enumerate(self.widths))
        m_in = check_invertible("m_in", self.m_in)
        n = m_in.shape[0]
        view = check_invertible("view", self.view, size=n)
        m_out = check_invertible("m_out", self.m_out)
        object.__setattr__(self, "widths", widths)
        object.__setattr__(self, "m_in", m_in)
        object.__setattr__(self, "m_out", m_out)
        object.__setattr__(self, "view", view)

    @property
    def depth(self) -> int:
        """Number ``D`` of trainable layers."""
        return len(self.widths) + 1

    @property
    def n(self) -> int:
        return self.m_in.shape[0]

    @property
    def m(self) -> int:
        return self.m_out.shape[0]

    @property
    def shapes(self) -> list[tuple[int, int]]:
        """Shapes ``(d_out, d_in)`` of ``W_1 .. W_D``."""
        dims = (self.n,) + self.widths + (self.m,)
        return [(dims[i + 1], dims[i]) for i in range(self.depth)]

    @cached_property
    def input_map(self) -> np.ndarray:
        """``M^I Z``: the fixed map from the latent ``x`` to the input of ``W_1`` (computed once:
        the training loops read it at every step; read-only, like the matrices it is made of)."""
        out = self.m_in @ self.view
        out.flags.writeable = False
        return out

    def hidden_labels(self) -> list[str]:
        """Labels ``name:h2 .. name:hD`` of the hidden layers (outputs of ``W_1 .. W_{D-1}``)."""
        return [f"{self.name}:h{k}" for k in range(2, self.depth + 1)]

    def check_task(self, task: Task) -> None:
        """Raise ``ValueError`` unless the network fits the task: ``n``, ``m`` match and every
        width is at least ``rank V*`` (Theorem 1's condition; otherwise no global minimum)."""
        if not isinstance(task, Task):
            raise ValueError(f"task must be a Task, got {type(task).__name__}")
        if task.n != self.n:
            raise ValueError(
                f"m_in and view must be {task.n}x{task.n} for this task (n = {task.n}), got {self.n}x{self.n}"
            )
        if task.m != self.m:
            raise ValueError(f"m_out must be {task.m}x{task.m} for this task (m = {task.m}), got {self.m}x{self.m}")
        r = task.rank
        if min(self.widths) < r:
            raise ValueError(f"widths must all be >= rank V* = {r}, got {self.widths}")


def random_edln(seed, n: int, m: int, widths, *, cond: float = 3.0, name: str = "net") -> EDLN:
    """An :class:`EDLN` with random invertible ``M^I``, ``M^O`` and ``Z``, each with condition
    number exactly ``cond`` (see :func:`random_invertible`)."""
    rng = make_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    return EDLN(
        tuple(widths),
        random_invertible(rng, n, cond),
        random_invertible(rng, m, cond),
        random_invertible(rng, n, cond),
        name=name,
    )


def example_pair(seed: int = 2026, *, noise: float = 0.5, cond: float = 3.0):
    """The chapter's running example: one task and two different EDLNs trained on two views.

    * task: ``n = 4`` latent dimensions, ``m = 5`` outputs, ``V*`` of rank 4 with singular values
      in ``[3^{-1/2}, 3^{1/2}]``, ``Σx`` with condition number 3 and trace 4, ``Σε`` with
      condition number 2 and trace ``5 · noise`` (:func:`random_task`);
    * network A: depth 3, hidden widths (5, 6); network B: depth 5, hidden widths (6, 4, 7, 5);
      each with its own random ``M^I``, ``M^O`` and view ``Z``, all of condition number ``cond``
      (:func:`random_edln`).

    Returns
    -------
    (Task, EDLN, EDLN)
    """
    seed = check_int("seed", seed, minimum=0)
    task = random_task((seed, 0), n=4, m=5, noise=noise)
    net_a = random_edln((seed, 1), 4, 5, (5, 6), cond=cond, name="A")
    net_b = random_edln((seed, 2), 4, 5, (6, 4, 7, 5), cond=cond, name="B")
    return task, net_a, net_b


# ----------------------------------------------------------------------------------------------
# Weights
# ----------------------------------------------------------------------------------------------


def _stack(net: EDLN, weights, name: str = "weights"):
    """Validate ``weights`` for ``net``; return ``(list of (R, out, in) arrays, squeezed)``."""
    if not isinstance(weights, (list, tuple)) or len(weights) != net.depth:
        raise ValueError(f"{name} must be a list of {net.depth} matrices (one per layer of {net.name})")
    out, lead = [], None
    for i, (w, shp) in enumerate(zip(weights, net.shapes)):
        w = check_array(f"{name}[{i}]", w)
        if w.ndim not in (2, 3) or w.shape[-2:] != shp:
            raise ValueError(f"{name}[{i}] must have shape {shp} or (replicas, *{shp}), got {w.shape}")
        if lead is None:
            lead = w.ndim
        elif w.ndim != lead:
            raise ValueError(f"{name}: all layers must have the same number of replica axes")
        out.append(w if w.ndim == 3 else w[None])
    r = {w.shape[0] for w in out}
    if len(r) != 1:
        raise ValueError(f"{name}: all layers must have the same number of replicas, got {sorted(r)}")
    return out, lead == 2


def _unstack(x, squeeze):
    if isinstance(x, list):
        return [a[0] for a in x] if squeeze else x
    return x[0] if squeeze else x


def init_weights(net: EDLN, seed=None, *, replicas: int | None = None, scale: float = 1.0) -> list:
    """Gaussian initialisation ``W_i ~ N(0, scale²/d_in)`` entrywise.

    Returns a list of ``(d_out, d_in)`` arrays, or of ``(replicas, d_out, d_in)`` stacks.
    """
    _check_net(net)
    rng = make_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    scale = check_positive("scale", scale)
    r = 1 if replicas is None else check_int("replicas", replicas, minimum=1, maximum=10**6)
    ws = [rng.standard_normal((r, o, i)) * scale / np.sqrt(i) for (o, i) in net.shapes]
    return [w[0] for w in ws] if replicas is None else ws


def random_global_minimum(net: EDLN, task: Task, seed=None) -> list:
    """A random global minimum of the loss: ``W_1 .. W_{D-1}`` Gaussian and ``W_D`` chosen so that
    ``M^O W_D ⋯ W_1 M^I Z = V*`` (the minimum-norm solution; needs ``d_{D-1} ≥ n``, which makes
    ``W_{D-1} ⋯ W_1`` of full column rank almost surely). Not Platonic in general.
    """
    _check_net(net)
    net.check_task(task)
    if min(net.widths) < net.n:
        raise ValueError(f"widths must all be >= n = {net.n} for random_global_minimum, got {net.widths}")
    ws = init_weights(net, seed)
    p = net.input_map
    for w in ws[:-1]:
        p = w @ p
    target = np.linalg.solve(net.m_out, task.v_star)
    ws[-1] = target @ np.linalg.pinv(p)
    return ws


def _nuclear_core(task: Task):
    """``R⋆ = (Σx^{1/2} V*ᵀ Σε V* Σx^{1/2})^{1/2}`` and ``Σx^{±1/2}``."""
    w, o = np.linalg.eigh(task.sigma_x)
    sx_half = (o * np.sqrt(w)) @ o.T
    sx_ihalf = (o / np.sqrt(w)) @ o.T
    core = sqrtm_psd(sx_half @ task.v_star.T @ task.sigma_eps @ task.v_star @ sx_half)
    return core, sx_half, sx_ihalf


def minimal_entropy(net: EDLN, task: Task) -> float:
    r"""The smallest value of ``S`` on the global minima of ``L`` (derived in the chapter):

    .. math::

        S_{\min} &= 4D\,\Big(\rho^{2(D-1)}\,\tr(M^I Z \Sigma_x Z^\top M^{I\top})\,
        \tr(M^{O\top}\Sigma_\varepsilon M^O)\Big)^{1/D},\\
        \rho &= \big\|\Sigma_\varepsilon^{1/2} V^\ast \Sigma_x^{1/2}\big\|_* ,

    the nuclear norm. At the minimiser all ``D`` layer terms ``E‖∇_{W_i}ℓ‖²`` are equal.
    Needs ``Σε`` positive definite and every width ``≥ rank V*``.
    """
    _check_net(net)
    net.check_task(task)
    _check_platonic_case(net, task)
    core, _, _ = _nuclear_core(task)
    rho = np.trace(core)
    a1 = np.trace(net.input_map @ task.sigma_x @ net.input_map.T)
    bd = np.trace(net.m_out.T @ task.sigma_eps @ net.m_out)
    d = net.depth
    return float(4.0 * d * np.exp((2 * (d - 1) * np.log(rho) + np.log(a1) + np.log(bd)) / d))


def _check_platonic_case(net: EDLN, task: Task) -> None:
    if task.noise_free:
        raise ValueError("sigma_eps must be positive definite (label noise) for a Platonic minimum")
    check_symmetric_positive_definite("sigma_eps", task.sigma_eps)
    if min(net.widths) < task.rank:
        raise ValueError(f"widths must all be >= rank V* = {task.rank} here, got {net.widths}")


def platonic_minimum(net: EDLN, task: Task, seed=None) -> list:
    """An explicit global minimiser of ``S`` among the global minima of ``L`` (a Platonic minimum).

    Construction (derived in the chapter): with ``R⋆ = (Σx^{1/2} V*ᵀ Σε V* Σx^{1/2})^{1/2}``, take
    hidden maps ``P_k = s_k O_k R⋆^{1/2} Σx^{-1/2}`` (``k = 2 .. D``) with random orthonormal
    columns ``O_k`` (``d_{k-1} × n``), so ``P_kᵀ P_k = s_k² Σx^{-1/2} R⋆ Σx^{-1/2} ∝ K⋆``; set
    ``W_1 = P_2 (M^I Z)^{-1}``, ``W_k = P_{k+1} P_k^+`` and ``W_D = (M^O)^{-1} V* P_D^+``, and choose
    the scales ``s_k`` so that all ``D`` layer terms of ``S`` are equal (the scalar part of the
    balance, which makes ``S`` equal :func:`minimal_entropy`). For ``V*`` of rank ``r < n`` the
    ``O_k`` have ``r`` columns and ``R⋆^{1/2}`` is replaced by ``Λ^{1/2}Qᵀ`` (``R⋆ = QΛQᵀ`` on its
    range). Needs every width ``≥ rank V*`` and ``Σε`` positive definite.
    """
    _check_net(net)
    net.check_task(task)
    _check_platonic_case(net, task)
    rng = make_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    core, sx_half, sx_ihalf = _nuclear_core(task)
    rho = np.trace(core)
    d = net.depth
    a1 = np.trace(net.input_map @ task.sigma_x @ net.input_map.T)
    bd = np.trace(net.m_out.T @ task.sigma_eps @ net.m_out)
    c = np.array([rho * a1] + [rho**2] * (d - 2) + [rho * bd])
    g = np.exp(np.mean(np.log(c)))
    # terms: c_1/s_2^2, c_i s_i^2/s_{i+1}^2, c_D s_D^2, all equal to g  ->  log s^2 recursion
    u = [np.log(c[0] / g)]
    for i in range(1, d - 1):
        u.append(u[-1] + np.log(c[i] / g))
    s = np.sqrt(np.exp(np.array(u)))  # s_2 .. s_D
    lam, vec = np.linalg.eigh(core)  # R⋆ = Q Λ Qᵀ on its range (rank r = rank V*)
    r = task.rank
    lam, vec = lam[-r:], vec[:, -r:]
    base = (np.sqrt(lam)[:, None] * vec.T) @ sx_ihalf  # Λ^{1/2} Qᵀ Σx^{-1/2}  (r×n)
    ps = []
    for k, width in enumerate(net.widths):
        o = np.linalg.qr(rng.standard_normal((width, r)))[0]
        ps.append(s[k] * o @ base)
    ws = [ps[0] @ np.linalg.inv(net.input_map)]
    for k in range(1, d - 1):
        ws.append(ps[k] @ np.linalg.pinv(ps[k - 1]))
    ws.append(np.linalg.solve(net.m_out, task.v_star) @ np.linalg.pinv(ps[-1]))
    return ws


def min_norm_minimum(net: EDLN, task: Task, seed=None) -> list:
    """The global minimum of ``L`` with the smallest ``Σ_i ‖W_i‖²``: the ``λ → 0⁺`` limit of
    gradient descent with weight decay ``λ Σ_i ‖W_i‖²`` (norm balance instead of gradient balance).

    With ``X = (M^O)^{-1} V* (M^I Z)^{-1} = U Λ Qᵀ`` (thin SVD, rank ``r``), the balanced
    factorisation ``W_1 = O_1 Λ^{1/D} Qᵀ``, ``W_k = O_k Λ^{1/D} O_{k-1}ᵀ``, ``W_D = U Λ^{1/D} O_{D-1}ᵀ``
    (random ``O_k`` with orthonormal columns, ``d_k × r``) has all charges
    ``W_{k+1}ᵀW_{k+1} − W_kW_kᵀ`` zero and ``Σ_i ‖W_i‖² = D Σ_j λ_j^{2/D}``, the minimum over all
    factorisations of ``X``. Its hidden kernels are ``(M^IZ)ᵀ Q Λ^{2(k-1)/D} Qᵀ (M^IZ)`` for
    ``h^k``: layer-dependent, and dependent on ``M^I``, ``Z`` and ``M^O``.
    """
    _check_net(net)
    net.check_task(task)
    rng = make_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    x = np.linalg.solve(net.m_out, task.v_star) @ np.linalg.inv(net.input_map)
    u, lam, qt = np.linalg.svd(x, full_matrices=False)
    r = task.rank
    u, lam, qt = u[:, :r], lam[:r], qt[:r]
    root = np.diag(lam ** (1.0 / net.depth))
    os_ = [np.linalg.qr(rng.standard_normal((w, r)))[0] for w in net.widths]
    ws = [os_[0] @ root @ qt]
    for k in range(1, net.depth - 1):
        ws.append(os_[k] @ root @ os_[k - 1].T)
    ws.append(u @ root @ os_[-1].T)
    return ws


def symmetry_transform(weights, layer: int, T) -> list:
    """Apply the symmetry (16) at hidden layer ``layer``: ``W_{k+1} → W_{k+1} T``,
    ``W_k → T^{-1} W_k`` with ``k = layer`` (1-based). The hidden representation ``W_k ⋯`` becomes
    ``T^{-1} h`` and its kernel ``Pᵀ T^{-ᵀ} T^{-1} P`` (Eq. 18); the loss does not change.
    """
    if not isinstance(weights, (list, tuple)) or len(weights) < 2:
        raise ValueError("weights must be a list of at least 2 matrices")
    k = check_int("layer", layer, minimum=1, maximum=len(weights) - 1)
    T = check_invertible("T", T)
    w = [check_array(f"weights[{i}]", a).copy() for i, a in enumerate(weights)]
    if T.shape[0] != w[k - 1].shape[-2]:
        raise ValueError(
            f"T must be {w[k - 1].shape[-2]}x{w[k - 1].shape[-2]} (width of hidden layer {layer}), got {T.shape}"
        )
    w[k] = w[k] @ T
    w[k - 1] = np.linalg.solve(T, w[k - 1])
    return finite_result("symmetry_transform", w)


def minimize_entropy_on_orbit(
    net: EDLN, task: Task, weights, *, layers=None, gtol: float = 1e-10, maxiter: int = 20_000, restarts: int = 2
):
    """Minimise the exact ``S`` over the symmetry orbit (16) of ``weights`` by BFGS.

    A direct numerical check of the theory that uses neither :func:`platonic_kernel` nor the
    balance conditions: the unknowns are one invertible ``T_k`` per hidden layer ``k`` in
    ``layers`` (default: all), acting as ``W_i' = T_i^{-1} W_i T_{i-1}``; the loss ``L`` is the
    same on the whole orbit. The gradient is exact,
    ``∂S/∂T_k = T_k^{-ᵀ} (W_{k+1}'ᵀ ∇_{W_{k+1}'} S − ∇_{W_k'} S W_k'ᵀ)``. After the first run
    the search restarts ``restarts`` times from the point reached (with ``T_k = I`` there), which
    resets BFGS's curvature estimate and polishes the last digits.

    Returns
    -------
    (list, scipy.optimize.OptimizeResult)
        The minimising weights and the optimiser's report of the last run (``nit`` summed).
    """
    _check_net(net)
    import scipy.optimize

    net.check_task(task)
    ws, sq = _stack(net, weights)
    if not sq:
        raise ValueError("weights must be unstacked (one network) for minimize_entropy_on_orbit")
    layers = (
        list(range(1, net.depth))
        if layers is None
        else [check_int("layers", k, minimum=1, maximum=net.depth - 1) for k in layers]
    )
    gtol = check_positive("gtol", gtol)
    maxiter = check_int("maxiter", maxiter, minimum=1, maximum=10**6)
    restarts = check_int("restarts", restarts, minimum=0, maximum=100)
    sizes = [net.widths[k - 1] for k in layers]
    offs = np.concatenate([[0], np.cumsum([d * d for d in sizes])])
    x0 = np.concatenate([np.eye(d).ravel() for d in sizes])

    def transform(w0, v):
        w = w0
        for j, k in enumerate(layers):
            w = symmetry_transform(w, k, v[offs[j] : offs[j + 1]].reshape(sizes[j], sizes[j]))
        return w

    def fun(v, w0):
        w = transform(w0, v)
        g = entropy_gradient(net, task, w)
        grad = []
        for j, k in enumerate(layers):
            t = v[offs[j] : offs[j + 1]].reshape(sizes[j], sizes[j])
            grad.append(np.linalg.solve(t.T, w[k].T @ g[k] - g[k - 1] @ w[k - 1].T).ravel())
        return entropy_term(net, task, w), np.concatenate(grad)

    w = [a[0] for a in ws]
    nit = 0
    for _ in range(restarts + 1):
        res = scipy.optimize.minimize(
            fun, x0, args=(w,), jac=True, method="BFGS", options=dict(gtol=gtol, maxiter=maxiter)
        )
        w = transform(w, res.x)
        nit += res.nit
    res.nit = nit
    return w, res


# ----------------------------------------------------------------------------------------------
# Exact population quantities
# ----------------------------------------------------------------------------------------------


def _stacked_view(a: np.ndarray, r: int) -> np.ndarray:
    """``a`` repeated ``r`` times along a new first axis, as a read-only view: what
    ``numpy.broadcast_to(a, (r,) + a.shape)`` returns, at a tenth of its cost (the training loops
    call this twice per step)."""
    if not a.flags.c_contiguous:
        return np.broadcast_to(a, (r,) + a.shape)
    v = np.ndarray((r,) + a.shape, a.dtype, a, 0, (0,) + a.strides)
    v.flags.writeable = False
    return v


def _forward(net: EDLN, ws):
    """Prefix maps ``P[i]`` (input of layer i+1 as a function of latent x, ``P[D]`` the last
    layer's output) and suffix maps ``Q[i] = M^O W_D ⋯ W_{i+2}`` (what follows layer i+1)."""
    d = net.depth
    r = ws[0].shape[0]
    mi, mo = net.input_map, net.m_out
    # the fixed ends as stacks of R copies (read-only views); the products broadcast the same way
    p = [_stacked_view(mi, r)]
    p.append(ws[0] @ mi)
    for w in ws[1:]:
        p.append(w @ p[-1])
    q = [None] * d
    q[d - 1] = _stacked_view(mo, r)
    if d >= 2:
        q[d - 2] = mo @ ws[d - 1]
    for i in range(d - 3, -1, -1):
        q[i] = q[i + 1] @ ws[i + 1]
    return p, q


def end_to_end(net: EDLN, weights) -> np.ndarray:
    """The latent end-to-end map ``U = M^O W_D ⋯ W_1 M^I Z`` (m×n; stacked if the weights are)."""
    _check_net(net)
    ws, sq = _stack(net, weights)
    p, _ = _forward(net, ws)
    return finite_result("end_to_end", _unstack(net.m_out @ p[-1], sq))


def hidden_kernels(net: EDLN, weights, *, normalize: bool = False) -> np.ndarray:
    """Kernels ``K_k = P_kᵀ P_k`` of the hidden layers ``k = 2 .. D`` in latent coordinates.

    Returns an array of shape ``(D-1, n, n)`` (or ``(R, D-1, n, n)`` for stacked weights); with
    ``normalize=True`` each kernel is scaled to unit Frobenius norm.
    """
    _check_net(net)
    ws, sq = _stack(net, weights)
    p, _ = _forward(net, ws)
    ks = np.stack([_t(p[k]) @ p[k] for k in range(1, net.depth)], axis=1)
    if normalize:
        ks = ks / np.linalg.norm(ks, axis=(-2, -1), keepdims=True)
    return finite_result("hidden_kernels", _unstack(ks, sq))


def _residual_parts(net, task, ws):
    p, q = _forward(net, ws)
    a = net.m_out @ p[-1] - task.v_star
    omega = a @ task.sigma_x @ _t(a) + task.sigma_eps
    return p, q, a, omega


def population_loss(net: EDLN, task: Task, weights):
    """``L = E‖f(x) − y‖² = tr(A Σx Aᵀ) + tr Σε`` with ``A = U − V*`` (Eq. 15)."""
    _check_net(net)
    net.check_task(task)
    ws, sq = _stack(net, weights)
    _, _, a, omega = _residual_parts(net, task, ws)
    out = _tr(omega)
    return finite_result("population_loss", float(out[0]) if sq else out)


def _layer_terms(task, p_i, q_i, a, omega):
    sx = task.sigma_x
    h = _t(p_i) @ p_i  # H = Pᵀ P            (n×n)
    c = q_i @ _t(q_i)  # C = Q Qᵀ            (m×m)
    t = _tr(h @ sx)  # E‖h‖² = tr(H Σx)
    b = _tr(c @ omega)  # E‖Qᵀ r‖² = tr(C Ω)
    j = a @ sx @ h @ sx @ _t(a)  # J = A Σx H Σx Aᵀ
    return h, c, t, b, j


def entropy_term(net: EDLN, task: Task, weights, *, per_layer: bool = False):
    """The entropic term ``S = Σ_i E‖∇_{W_i} ℓ‖²`` (Eq. 14), exact for Gaussian data and noise.

    With the residual ``r = A x − ε`` (``A = U − V*``), ``∇_{W_i} ℓ = 2 Q_iᵀ r (P_i x)ᵀ`` is an
    outer product, so ``‖∇_{W_i} ℓ‖² = ‖2 Q_iᵀ r‖² ‖P_i x‖²`` (Eq. 14) and, by the Gaussian
    fourth moment ``E[xᵀF x · xᵀH x] = tr(FΣ) tr(HΣ) + 2 tr(FΣHΣ)`` and the independence of
    ``x`` and ``ε``,

    .. math::

        E\\|\\nabla_{W_i}\\ell\\|^2 = 4\\big[\\tr(C_i\\Omega)\\tr(H_i\\Sigma_x)
        + 2\\tr(C_i A\\Sigma_x H_i \\Sigma_x A^\\top)\\big],

    with ``C_i = Q_i Q_iᵀ``, ``H_i = P_iᵀ P_i``, ``Ω = E[r rᵀ] = A Σx Aᵀ + Σε``. At a global
    minimum (``A = 0``) this is ``4 tr(Q_iᵀ Σε Q_i) tr(P_i Σx P_iᵀ)``.

    Returns
    -------
    float or numpy.ndarray
        ``S`` (per replica for stacked weights); with ``per_layer=True`` the terms ``S_i`` along a
        last axis of length ``D``.
    """
    _check_net(net)
    net.check_task(task)
    ws, sq = _stack(net, weights)
    p, q, a, omega = _residual_parts(net, task, ws)
    terms = []
    for i in range(net.depth):
        h, c, t, b, j = _layer_terms(task, p[i], q[i], a, omega)
        terms.append(4.0 * (b * t + 2.0 * _tr(c @ j)))
    terms = np.stack(terms, axis=-1)
    out = terms if per_layer else terms.sum(-1)
    if sq:
        return finite_result("entropy_term", out[0] if per_layer else float(out[0]))
    return finite_result("entropy_term", out)


def gradient_moments(net: EDLN, task: Task, weights):
    """Second moments of the per-sample gradients, exact (the matrices of Eqs. 26–31).

    For each layer ``W_i`` returns ``(E[∇ ∇ᵀ], E[∇ᵀ ∇])`` with ``∇ = ∇_{W_i} ℓ``:

    * ``E[∇ ∇ᵀ] = 4 Q_iᵀ (tr(H_i Σx) Ω + 2 A Σx H_i Σx Aᵀ) Q_i`` (``d_out × d_out``; its diagonal
      holds the row norms ``E‖∇_{W_i^{j:}} ℓ‖²``),
    * ``E[∇ᵀ ∇] = 4 P_i (tr(C_i Ω) Σx + 2 Σx Aᵀ C_i A Σx) P_iᵀ`` (``d_in × d_in``; its diagonal holds
      the column norms ``E‖∇_{W_i^{:j}} ℓ‖²``).

    Both have trace ``E‖∇_{W_i} ℓ‖²``. Stationarity of ``S`` under ``W_{k+1} → W_{k+1} T``,
    ``W_k → T^{-1} W_k`` for every invertible ``T`` is the matrix balance
    ``E[∇_{W_k} ∇_{W_k}ᵀ] = E[∇_{W_{k+1}}ᵀ ∇_{W_{k+1}}]`` (reconstructed; its diagonal is Eq. 33).
    """
    _check_net(net)
    net.check_task(task)
    ws, sq = _stack(net, weights)
    p, q, a, omega = _residual_parts(net, task, ws)
    sx = task.sigma_x
    out = []
    for i in range(net.depth):
        h, c, t, b, j = _layer_terms(task, p[i], q[i], a, omega)
        left = 4.0 * _t(q[i]) @ (t[:, None, None] * omega + 2.0 * j) @ q[i]
        right = 4.0 * p[i] @ (b[:, None, None] * sx + 2.0 * sx @ _t(a) @ c @ a @ sx) @ _t(p[i])
        out.append((_unstack(_sym(left), sq), _unstack(_sym(right), sq)))
    return finite_result("gradient_moments", out)


def alignment_blocks(matrices, sizes, *, reference: bool = True) -> dict:
    """Summaries of :func:`joint_alignment` matrices by block of layer pairs.

    Parameters
    ----------
    matrices : array_like, shape (R, H, H) or (H, H)
        Joint alignment matrices of two networks' hidden layers (and a reference last).
    sizes : (int, int)
        Numbers of hidden layers of the two networks, in the order of the matrices.
    reference : bool
        Whether the last row/column is a reference kernel (``K⋆``).

    Returns
    -------
    dict of numpy.ndarray, each of shape (R,) (or scalars)
        ``"within A"``, ``"within B"``, ``"across"`` (every pair of one layer of each network),
        ``"vs K*"`` (every layer against the reference) and ``"all"``: the smallest alignment in
        each block, per replica; ``"mean"``: the mean over all off-diagonal pairs.
    """
    m = check_array("matrices", matrices)
    if not isinstance(reference, (bool, np.bool_)):
        raise TypeError(f"reference must be True or False, got {reference!r}")
    if not isinstance(sizes, (tuple, list)) or len(sizes) != 2:
        raise ValueError(f"sizes must be a pair (H_A, H_B) of hidden-layer counts, got {sizes!r}")
    squeeze = m.ndim == 2
    m = m[None] if squeeze else m
    h_a, h_b = (check_int("sizes[0]", sizes[0], minimum=1), check_int("sizes[1]", sizes[1], minimum=1))
    h = h_a + h_b + (1 if reference else 0)
    if m.ndim != 3 or m.shape[1:] != (h, h):
        raise ValueError(f"matrices must have shape (R, {h}, {h}) for sizes {tuple(sizes)}, got {m.shape}")
    ia, ib = np.arange(h_a), np.arange(h_a, h_a + h_b)

    def block_min(rows, cols, strict_upper=False):
        sub = m[:, rows][:, :, cols]
        if strict_upper:
            iu = np.triu_indices(len(rows), 1)
            if iu[0].size == 0:
                return np.full(m.shape[0], np.nan)
            return sub[:, iu[0], iu[1]].min(1)
        return sub.reshape(m.shape[0], -1).min(1)

    off = ~np.eye(h, dtype=bool)
    out = {
        "within A": block_min(ia, ia, True),
        "within B": block_min(ib, ib, True),
        "across": block_min(ia, ib),
        "all": m[:, off].min(1),
        "mean": m[:, off].mean(1),
    }
    if reference:
        out["vs K*"] = block_min(np.arange(h_a + h_b), np.array([h - 1]))
    return {k: (v[0] if squeeze else v) for k, v in out.items()}


def noether_charges(weights) -> list:
    """The charges ``C_k = W_{k+1}ᵀ W_{k+1} − W_k W_kᵀ`` of the symmetries (16), ``k = 1 .. D-1``.

    Gradient flow on ``L`` conserves them; one SGD step changes them by exactly
    ``η² (g_{k+1}ᵀ g_{k+1} − g_k g_kᵀ)`` with the minibatch gradients ``g`` (the first-order terms
    cancel by the symmetry), see :func:`charge_drift`.
    """
    if not isinstance(weights, (list, tuple)) or len(weights) < 2:
        raise ValueError("weights must be a list of at least 2 matrices")
    w = [check_array(f"weights[{i}]", a) for i, a in enumerate(weights)]
    return finite_result("noether_charges", [_t(w[k + 1]) @ w[k + 1] - w[k] @ _t(w[k]) for k in range(len(w) - 1)])


def charge_drift(net: EDLN, task: Task, weights, *, lr: float, batch_size: int) -> list:
    """Expected change of the charges :func:`noether_charges` in one SGD step, exact.

    ``E[ΔC_k] = η² (E[g_{k+1}ᵀ g_{k+1}] − E[g_k g_kᵀ])`` with the minibatch gradient
    ``g = (1/B) Σ_b ∇ℓ_b``, ``E[gᵀg] = (1 − 1/B) ∇Lᵀ∇L + (1/B) E[∇ℓᵀ∇ℓ]``. At a global minimum
    ``∇L = 0`` and this is ``(η²/B)`` times the gradient imbalance of Eq. (31): SGD moves each
    point of the symmetry orbit towards gradient balance. Gradient descent on ``L + γ S`` moves
    it at ``4ηγ`` times the same imbalance, hence ``γ = η / (4B)``.
    """
    _check_net(net)
    lr = check_positive("lr", lr)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    mom = gradient_moments(net, task, weights)
    gl = loss_gradient(net, task, weights)
    out = []
    for k in range(net.depth - 1):
        g_in, g_out = gl[k], gl[k + 1]
        right = (1 - 1 / batch_size) * _t(g_out) @ g_out + mom[k + 1][1] / batch_size
        left = (1 - 1 / batch_size) * g_in @ _t(g_in) + mom[k][0] / batch_size
        out.append((lr * lr) * (right - left))
    return finite_result("charge_drift", out)


def gradient_balance(net: EDLN, task: Task, weights) -> list:
    """Neuron-wise gradient-balance ratios (Eq. 33) of every hidden layer.

    For hidden layer ``k`` (output of ``W_k``, ``k = 1 .. D-1``) and each neuron ``j``, the ratio
    ``E‖∇_{W_k^{j:}} ℓ‖² / E‖∇_{W_{k+1}^{:j}} ℓ‖²`` of the expected squared gradient of the
    neuron's incoming weights (row ``j`` of ``W_k``) to that of its outgoing weights (column
    ``j`` of ``W_{k+1}``). All ratios are 1 at a minimiser of ``S`` on the symmetry orbit.

    Returns
    -------
    list of numpy.ndarray
        One array of shape ``(d_k,)`` (or ``(R, d_k)``) per hidden layer.
    """
    _check_net(net)
    mom = gradient_moments(net, task, weights)
    out = []
    for k in range(net.depth - 1):
        rows = np.diagonal(mom[k][0], axis1=-2, axis2=-1)
        cols = np.diagonal(mom[k + 1][1], axis1=-2, axis2=-1)
        out.append(rows / cols)
    return finite_result("gradient_balance", out)


def sharpness(net: EDLN, task: Task, weights, *, iters: int = 200, seed=0) -> float:
    """Largest eigenvalue of the Hessian of ``L`` at a global minimum (power iteration).

    At a global minimum (``A = 0``) the Hessian of ``L = tr(A Σx Aᵀ) + tr Σε`` is its
    Gauss–Newton part, ``v ↦ (Q_iᵀ 2 dU Σx P_iᵀ)_i`` with ``dU = Σ_i Q_i v_i P_i``. Gradient
    descent is stable there for ``lr < 2 / sharpness``; SGD needs a margin below that.
    """
    _check_net(net)
    net.check_task(task)
    ws, sq = _stack(net, weights)
    if not sq:
        raise ValueError("weights must be unstacked (one network) for sharpness")
    iters = check_int("iters", iters, minimum=1, maximum=1_000_000)
    p, q = _forward(net, ws)
    p = [a[0] for a in p]
    q = [a[0] for a in q]
    rng = make_rng(seed)
    v = [rng.standard_normal(w.shape[1:]) for w in ws]
    lam = 0.0
    for _ in range(iters):
        nrm = np.sqrt(sum((a**2).sum() for a in v))
        v = [a / nrm for a in v]
        du = sum(q[i] @ v[i] @ p[i] for i in range(net.depth))
        g = 2.0 * du @ task.sigma_x
        hv = [q[i].T @ g @ p[i].T for i in range(net.depth)]
        lam = sum((a * b).sum() for a, b in zip(v, hv))
        v = hv
    return finite_result("sharpness", float(lam))


def loss_gradient(net: EDLN, task: Task, weights) -> list:
    """Exact ``∇_{W_i} L = 2 Q_iᵀ A Σx P_iᵀ`` for every layer."""
    _check_net(net)
    net.check_task(task)
    ws, sq = _stack(net, weights)
    p, q, a, _ = _residual_parts(net, task, ws)
    g = 2.0 * a @ task.sigma_x
    return finite_result("loss_gradient", _unstack([_t(q[i]) @ g @ _t(p[i]) for i in range(net.depth)], sq))


def _entropy_and_loss_gradients(net, task, ws, gamma):
    """``∇(L + γ S)`` for stacked weights; ``gamma`` of shape (R,) or a scalar.

    Reverse mode by hand. With ``A Σx``, ``Z_i = Q_iᵀ A Σx`` and ``X_i = P_i Z_iᵀ = P_i Σx Aᵀ Q_i``,
    the layer term ``S_i = 4[tr(C_iΩ) tr(H_iΣx) + 2‖X_i‖²]`` has the partial derivatives

    * ``∂S_i/∂Q_i = 8 tr(H_iΣx) Ω Q_i + 16 A Σx P_iᵀ X_i``,
    * ``∂S_i/∂P_i = 8 tr(C_iΩ) P_i Σx + 16 X_i Z_i``,
    * ``∂S_i/∂A = Q_i (8 tr(H_iΣx) Z_i + 16 X_iᵀ P_i Σx)``;

    they are then pulled back along ``P_{i+1} = W_i P_i``, ``Q_{i-1} = Q_i W_i`` and
    ``U = Q_i W_i P_i`` (checked against automatic differentiation in the tests).
    """
    d = net.depth
    sx = task.sigma_x
    g = np.asarray(gamma, dtype=float)
    use_s = bool(np.any(g != 0))
    if not use_s:  # ∇L alone (plain gradient descent, gradient flow): no Ω, no entropic terms
        p, q = _forward(net, ws)
        abar = 2.0 * ((net.m_out @ p[-1] - task.v_star) @ sx)
        return [_t(q[i]) @ abar @ _t(p[i]) for i in range(d)]
    p, q, a, omega = _residual_parts(net, task, ws)
    asx = a @ sx
    abar = 2.0 * asx
    grads_s = [0.0] * d
    g3 = g.reshape(-1, 1, 1) if g.ndim else g
    pbar = [None] * d
    qbar = [None] * d
    abar_s = 0.0
    for i in range(d):
        ps = p[i] @ sx
        t = np.einsum("rij,rij->r", ps, p[i])[:, None, None]
        z = _t(q[i]) @ asx
        x = p[i] @ _t(z)
        oq = omega @ q[i]
        if i <= d - 2:  # Q[d-1] = M^O is fixed
            qbar[i] = (8.0 * t) * oq + 16.0 * (asx @ (_t(p[i]) @ x))
        if i >= 1:  # P[0] = M^I Z is fixed
            b = np.einsum("rij,rij->r", q[i], oq)[:, None, None]
            pbar[i] = (8.0 * b) * ps + 16.0 * (x @ z)
        abar_s = abar_s + q[i] @ ((8.0 * t) * z + 16.0 * (_t(x) @ ps))
    for i in range(d - 2, 0, -1):  # P[i] feeds P[i+1] = W_i P[i]
        pbar[i] = pbar[i] + _t(ws[i]) @ pbar[i + 1]
    for i in range(1, d - 1):  # Q[i] feeds Q[i-1] = Q[i] W_i
        qbar[i] = qbar[i] + qbar[i - 1] @ _t(ws[i])
    abar = abar + g3 * abar_s
    for i in range(d):
        gi = 0.0
        if i + 1 <= d - 1:
            gi = gi + pbar[i + 1] @ _t(p[i])
        if i >= 1:
            gi = gi + _t(q[i]) @ qbar[i - 1]
        grads_s[i] = g3 * gi
    return [_t(q[i]) @ abar @ _t(p[i]) + grads_s[i] for i in range(d)]


def minibatch_gradient(net: EDLN, task: Task, weights, s_hat) -> list:
    r"""Minibatch gradient of ``(1/B) Σ_b ‖f(x_b) − y_b‖²`` from the minibatch second moments.

    With ``u_b = (x_b, ε_b)`` and ``Ŝ = (1/B) Σ_b u_b u_bᵀ`` (size ``n + m``), the residual
    ``r_b = A x_b − ε_b`` gives ``(1/B) Σ_b r_b x_bᵀ = A Ŝ_xx − Ŝ_εx``, so

    .. math:: \nabla_{W_i}\hat L = 2\,Q_i^\top (A\hat S_{xx} - \hat S_{\varepsilon x})\,P_i^\top :

    the update depends on the minibatch only through ``Ŝ``, whose law is Wishart.

    Parameters
    ----------
    s_hat : array_like, shape (n+m, n+m) or (R, n+m, n+m)
        Minibatch second moments of ``(x, ε)`` (one per replica for stacked weights).
    """
    _check_net(net)
    net.check_task(task)
    ws, sq = _stack(net, weights)
    d = task.n + task.m
    s_hat = check_array("s_hat", s_hat)
    if s_hat.shape[-2:] != (d, d) or s_hat.ndim not in (2, 3):
        raise ValueError(f"s_hat must have shape ({d}, {d}) or (replicas, {d}, {d}), got {s_hat.shape}")
    return finite_result("minibatch_gradient", _unstack(_minibatch_gradient(net, task, ws, s_hat), sq))


def _minibatch_gradient(net, task, ws, s_hat):
    n = task.n
    p, q = _forward(net, ws)
    a = net.m_out @ p[-1] - task.v_star
    e = 2.0 * (a @ s_hat[..., :n, :n] - s_hat[..., n:, :n])
    return [_t(q[i]) @ e @ _t(p[i]) for i in range(net.depth)]


def entropy_gradient(net: EDLN, task: Task, weights) -> list:
    """Exact ``∇_{W_i} S`` of :func:`entropy_term` for every layer (hand-derived reverse mode,
    checked against automatic differentiation in the tests)."""
    _check_net(net)
    net.check_task(task)
    ws, sq = _stack(net, weights)
    g_s = _entropy_and_loss_gradients(net, task, ws, 1.0)
    g_l = _entropy_and_loss_gradients(net, task, ws, 0.0)
    return finite_result("entropy_gradient", _unstack([a - b for a, b in zip(g_s, g_l)], sq))


# ----------------------------------------------------------------------------------------------
# Sample-level quantities
# ----------------------------------------------------------------------------------------------


def sample_data(task: Task, seed, n_samples: int):
    """Draw ``n_samples`` latent points and label noises: returns ``(x, eps, y)`` with shapes
    ``(N, n)``, ``(N, m)``, ``(N, m)`` and ``y = x V*ᵀ + eps``."""
    _check_task(task)
    rng = make_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    n_samples = check_int("n_samples", n_samples, minimum=1, maximum=10**7)
    z = rng.standard_normal((n_samples, task.n + task.m)) @ task.data_factor().T
    x, eps = z[:, : task.n], z[:, task.n :]
    return x, eps, x @ task.v_star.T + eps


def per_sample_gradients(net: EDLN, weights, x, y):
    """Per-sample gradients of ``ℓ = ‖f(x) − y‖²`` for unstacked weights.

    Returns ``(grads, reps, rep_grads)``: ``grads[i]`` of shape ``(N, d_out, d_in)`` is
    ``∇_{W_i} ℓ``; ``reps[i] = h^i`` (input of ``W_i``, shape ``(N, d_in)``) and
    ``rep_grads[i] = ∇_{h^{i+1}} ℓ`` (gradient at the output of ``W_i``, shape ``(N, d_out)``),
    so that ``grads[i] = rep_grads[i] ⊗ reps[i]`` and Eq. 14 reads
    ``‖grads[i]‖² = ‖rep_grads[i]‖² ‖reps[i]‖²`` sample by sample.
    """
    _check_net(net)
    ws, sq = _stack(net, weights)
    if not sq:
        raise ValueError("weights must be unstacked (one network) for per_sample_gradients")
    x = check_array("x", x, ndim=2, shape=(None, net.n))
    y = check_array("y", y, ndim=2, shape=(x.shape[0], net.m))
    reps = [x @ net.input_map.T]
    for w in ws[:-1]:
        reps.append(reps[-1] @ w[0].T)
    out = (reps[-1] @ ws[-1][0].T) @ net.m_out.T
    g = 2.0 * (out - y) @ net.m_out  # ∇ at the output of W_D
    rep_grads = [None] * net.depth
    for i in range(net.depth - 1, -1, -1):
        rep_grads[i] = g
        g = g @ ws[i][0]
    grads = [rep_grads[i][:, :, None] * reps[i][:, None, :] for i in range(net.depth)]
    return finite_result("per_sample_gradients", (grads, reps, rep_grads))


def autograd_sample_gradients(net: EDLN, weights, x, y):
    """The per-sample quantities of :func:`per_sample_gradients`, computed independently by PyTorch
    autograd (one backward pass per sample, float64): a reference for Eq. 14 and for the
    closed-form gradients. Same return convention ``(grads, reps, rep_grads)``."""
    _check_net(net)
    import torch

    ws, sq = _stack(net, weights)
    if not sq:
        raise ValueError("weights must be unstacked (one network) for autograd_sample_gradients")
    x = check_array("x", x, ndim=2, shape=(None, net.n))
    y = check_array("y", y, ndim=2, shape=(x.shape[0], net.m))
    m_out = torch.tensor(net.m_out)
    grads = [np.empty((x.shape[0],) + w.shape[1:]) for w in ws]
    reps = [np.empty((x.shape[0], w.shape[2])) for w in ws]
    rep_grads = [np.empty((x.shape[0], w.shape[1])) for w in ws]
    for s in range(x.shape[0]):
        wt = [torch.tensor(w[0], requires_grad=True) for w in ws]
        h = [torch.tensor(net.input_map @ x[s])]
        for w in wt:
            h.append(w @ h[-1])
            h[-1].retain_grad()
        ((m_out @ h[-1] - torch.tensor(y[s])) ** 2).sum().backward()
        for i in range(net.depth):
            grads[i][s] = wt[i].grad.numpy()
            reps[i][s] = h[i].detach().numpy()
            rep_grads[i][s] = h[i + 1].grad.numpy()
    return finite_result("autograd_sample_gradients", (grads, reps, rep_grads))


def entropy_term_mc(net: EDLN, task: Task, weights, seed, n_samples: int, *, chunk: int = 100_000):
    """Monte Carlo estimate of ``S`` from ``n_samples`` fresh samples, with its standard error.

    Returns ``(estimate, standard_error)``; the exact value is :func:`entropy_term`.
    """
    _check_net(net)
    net.check_task(task)
    rng = make_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    n_samples = check_int("n_samples", n_samples, minimum=2, maximum=MAX_DRAWS)
    chunk = check_int("chunk", chunk, minimum=1, maximum=10**6)
    vals = []
    left = n_samples
    while left > 0:
        k = min(chunk, left)
        x, _, y = sample_data(task, rng, k)
        _, reps, rgs = per_sample_gradients(net, weights, x, y)
        vals.append(sum((rg**2).sum(1) * (h**2).sum(1) for rg, h in zip(rgs, reps)))
        left -= k
    v = np.concatenate(vals)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))


# ----------------------------------------------------------------------------------------------
# Controls, curvature, the field's metrics, sample-level training and the explorer
# ----------------------------------------------------------------------------------------------


def _flatten(ws):
    return np.concatenate([w.reshape(w.shape[0], -1) for w in ws], axis=1)


def _unflatten(flat, shapes):
    out, i = [], 0
    r = flat.shape[0]
    for o, n in shapes:
        out.append(flat[:, i : i + o * n].reshape(r, o, n))
        i += o * n
    return out


#: The longest horizon :func:`gradient_flow` accepts (``t = 1e10`` costs LSODA ~4000 evaluations of the
#: example pair's vector field; ``1e20`` exhausted the 100,000-evaluation work bound after ~15 s of CPU).
_FLOW_MAX_T = 1e10


def gradient_flow(
    net: EDLN, task: Task, weights, *, t_end: float, n_records: int = 50, rtol: float = 1e-7, atol: float = 1e-9
) -> TrainResult:
    """Gradient flow ``dW_i/dt = −∇_{W_i} L`` solved as an ODE (LSODA, adaptive and stiff-aware).

    The continuous-time control of the chapter: no learning rate, hence no edge of stability and
    no O(lr²) drift of the charges ``W_{k+1}ᵀW_{k+1} − W_kW_kᵀ`` (they are conserved up to the
    solver's tolerance). Replicas are integrated as one system.

    Parameters
    ----------
    net, task, weights :
        As in :func:`train_gd`.
    t_end : float
        Final time, in ``(0, 1e10]``; gradient descent with rate ``lr`` for ``t`` steps covers time
        ``lr·t``. (LSODA reaches ``t = 1e10`` in a few thousand evaluations; beyond ``1e12`` or so its
        steps stop growing and the work bound would be spent after seconds, so a longer horizon is
        refused at once.)
    n_records : int
        Number of equally spaced record times after ``0`` (≥ 1).
    rtol, atol : float
        Solver tolerances (> 0).

    Returns
    -------
    TrainResult
        ``steps`` holds the record *times* (floats), ``params['method'] == 'flow'``.
    """

    net.check_task(task)
    ws, _ = _stack(net, weights)
    t_end = check_positive("t_end", t_end)
    if t_end > _FLOW_MAX_T:
        raise ValueError(
            f"t_end must lie in (0, {_FLOW_MAX_T:g}], got {t_end!r}: beyond it "
            "LSODA's steps stop growing, so the horizon would exhaust the solver's work bound"
        )
    n_records = check_int("n_records", n_records, minimum=1)
    rtol = check_positive("rtol", rtol)
    atol = check_positive("atol", atol)
    shapes = net.shapes
    r = ws[0].shape[0]

    def rhs(_t, y):
        w = _unflatten(y.reshape(r, -1), shapes)
        with np.errstate(over="ignore", invalid="ignore"):
            g = _entropy_and_loss_gradients(net, task, w, 0.0)
        return -_flatten(g).ravel()

    times = np.linspace(0.0, t_end, n_records + 1)
    nfev = [0]

    def counted(t, y):
        nfev[0] += 1
        return rhs(t, y)

    # the same LSODA steps as scipy's solve_ivp, with a work bound and a check of every state
    ys = solve_ivp_bounded(
        counted, t_end, _flatten(ws).ravel(), times, method="LSODA", rtol=rtol, atol=atol, what="gradient_flow"
    ).T
    recs = [_record(net, task, _unflatten(ys[:, k].reshape(r, -1), shapes)) for k in range(times.size)]
    ks, ls, ss = zip(*recs)
    final = _unflatten(ys[:, -1].reshape(r, -1).copy(), shapes)
    return TrainResult(
        times,
        np.stack(ks),
        np.stack(ls),
        np.stack(ss),
        final,
        params=dict(method="flow", t_end=t_end, nfev=int(nfev[0]), rtol=rtol, atol=atol),
    )


def loss_hessian(net: EDLN, task: Task, weights, *, step: float = 1e-5) -> np.ndarray:
    """The full Hessian of the population loss ``L`` at ``weights`` (one network), by central
    differences of the exact gradient :func:`loss_gradient` (error ``O(step²)``), symmetrised.

    Valid anywhere (not only at global minima, unlike :func:`sharpness`). Parameters are ordered
    layer by layer, each ``W_i`` row-major.

    Returns
    -------
    numpy.ndarray, shape (p, p)
        ``p = Σ_i d_out d_in``.
    """
    _check_net(net)
    net.check_task(task)
    ws, sq = _stack(net, weights)
    if not sq:
        raise ValueError("weights must be unstacked (one network) for loss_hessian")
    step = check_positive("step", step)
    if step > 1e-2:
        raise ValueError(f"step must lie in (0, 0.01] (a central-difference step on the weights), got {step!r}")
    x0 = _flatten(ws)[0]
    p = x0.size
    probes = np.concatenate([x0 + step * np.eye(p), x0 - step * np.eye(p)])
    with np.errstate(over="ignore", invalid="ignore"):
        g = _flatten(_entropy_and_loss_gradients(net, task, _unflatten(probes, net.shapes), 0.0))
        h = (g[:p] - g[p:]) / (2 * step)
    return finite_result("loss_hessian", _sym(h))


def sharpness_and_trace(net: EDLN, task: Task, weights):
    """``(λ_max, tr H)`` of the Hessian of ``L`` (:func:`loss_hessian`) for each replica.

    Returns two arrays of shape ``(R,)`` for stacked weights, floats otherwise.
    """
    _check_net(net)
    ws, sq = _stack(net, weights)
    lam, tr = [], []
    for k in range(ws[0].shape[0]):
        h = loss_hessian(net, task, [w[k] for w in ws])
        lam.append(np.linalg.eigvalsh(h)[-1])
        tr.append(np.trace(h))
    lam, tr = np.array(lam), np.array(tr)
    return (float(lam[0]), float(tr[0])) if sq else (lam, tr)


def hessian_trace_at_minimum(net: EDLN, task: Task, weights):
    """``tr ∇²L`` at a global minimum from the Gauss–Newton form,
    ``2 Σ_i tr(Q_iᵀ Q_i) tr(P_i Σx P_iᵀ)`` (``Q_i = G_{i+1}``). With isotropic label noise
    ``Σε = σ² I`` the entropic term at a minimum is ``S = 4 Σ_i tr(Q_iᵀ Σε Q_i) tr(P_i Σx P_iᵀ)
    = 2 σ² tr ∇²L``: minimising ``S`` on the minima is minimising the Hessian trace."""
    _check_net(net)
    net.check_task(task)
    ws, sq = _stack(net, weights)
    with np.errstate(over="ignore", invalid="ignore"):
        p, q = _forward(net, ws)
        out = sum(2.0 * _tr(_t(q[i]) @ q[i]) * _tr(p[i] @ task.sigma_x @ _t(p[i])) for i in range(net.depth))
    return finite_result("hessian_trace_at_minimum", float(out[0]) if sq else out)


def linear_cka(h1, h2) -> float:
    """Linear centred kernel alignment (CKA) of two representations of the same ``N`` samples
    (Kornblith et al. 2019): ``‖H̃1ᵀH̃2‖_F² / (‖H̃1ᵀH̃1‖_F ‖H̃2ᵀH̃2‖_F)`` with column-centred ``H̃``.

    For zero-mean Gaussian latent data and linear representations ``h = P x`` it converges, as
    ``N → ∞``, to the Σx-weighted kernel alignment ``kernel_alignment(K1, K2, metric=Σx)``.
    """
    h1 = check_array("h1", h1, ndim=2)
    h2 = check_array("h2", h2, ndim=2, shape=(h1.shape[0], None))
    if h1.shape[0] < 2:
        raise ValueError("h1 and h2 must hold at least 2 samples")
    a = _unit_scale(h1 - h1.mean(0))  # CKA is invariant to the scale of each: no overflow or underflow
    b = _unit_scale(h2 - h2.mean(0))
    den = np.linalg.norm(a.T @ a) * np.linalg.norm(b.T @ b)
    if den == 0:
        raise ValueError("h1 and h2 must not be constant")
    return float(np.linalg.norm(a.T @ b) ** 2 / den)


def _unit_scale(h):
    """``h`` divided by its largest absolute entry (zero stays zero); scale-invariant measures use it."""
    m = np.max(np.abs(h)) if h.size else 0.0
    return h / m if m > 0 else h


def gram_alignment(h1, h2) -> float:
    """Uncentred alignment of the sample Gram matrices ``H1 H1ᵀ`` and ``H2 H2ᵀ`` (``N`` samples):
    the sample version of :func:`kernel_alignment` for representations that need not be linear
    in the latent data."""
    h1 = check_array("h1", h1, ndim=2)
    h2 = check_array("h2", h2, ndim=2, shape=(h1.shape[0], None))
    h1, h2 = _unit_scale(h1), _unit_scale(h2)  # invariant to the scale of each
    den = np.linalg.norm(h1.T @ h1) * np.linalg.norm(h2.T @ h2)
    if den == 0:
        raise ValueError("h1 and h2 must not be zero")
    return float(np.linalg.norm(h1.T @ h2) ** 2 / den)


def mutual_knn(h1, h2, k: int = 10) -> float:
    """Mutual k-nearest-neighbour alignment (Huh et al. 2024): for each sample, the fraction of its
    ``k`` nearest neighbours (Euclidean, itself excluded) in representation 1 that are also among
    its ``k`` nearest neighbours in representation 2, averaged over samples. 1 for representations
    equal up to a rotation and a scale; about ``k/N`` for unrelated ones."""
    h1 = check_array("h1", h1, ndim=2)
    h2 = check_array("h2", h2, ndim=2, shape=(h1.shape[0], None))
    n = h1.shape[0]
    k = check_int("k", k, minimum=1, maximum=max(n - 2, 1))

    def knn(h):
        sq = (h**2).sum(1)
        d = sq[:, None] + sq[None, :] - 2 * h @ h.T
        np.fill_diagonal(d, np.inf)
        return np.argpartition(d, k - 1, axis=1)[:, :k]

    a, b = knn(_unit_scale(h1)), knn(_unit_scale(h2))  # neighbours do not depend on the scale: no overflow
    hits = [np.intersect1d(a[i], b[i]).size for i in range(n)]
    return float(np.mean(hits) / k)


def representations(net: EDLN, weights, x, *, activation=None, scale: float = 1.0) -> list:
    """Hidden representations ``h^2 .. h^D`` of ``N`` latent samples ``x`` (shape ``(N, n)``) for one
    network: a list of ``(N, d_k)`` arrays. With ``activation`` (``"tanh"`` or ``"relu"``) the
    input module is nonlinear, ``h^1 = φ(s M^I Z x)/s`` (see :func:`train_sgd_samples`)."""
    if not isinstance(net, EDLN):
        raise TypeError(f"net must be an EDLN, got {type(net).__name__}")
    ws, sq = _stack(net, weights)
    if not sq:
        raise ValueError("weights must be unstacked (one network) for representations")
    x = check_array("x", x, ndim=2, shape=(None, net.n))
    phi, _ = _activation(activation)
    scale = check_positive("scale", scale)
    h = phi(scale * x @ net.input_map.T) / scale
    out = []
    with np.errstate(over="ignore", invalid="ignore"):
        for w in ws[:-1]:
            h = h @ w[0].T
            out.append(h)
    if not all(np.all(np.isfinite(o)) for o in out):
        raise ValueError("the representations overflow float64: the weights or x are too large")
    return out


def _activation(name):
    if name is None:
        return (lambda z: z), (lambda z: np.ones_like(z))
    if name == "tanh":
        return np.tanh, (lambda z: 1.0 - np.tanh(z) ** 2)
    if name == "relu":
        # shifted ReLU φ(z) = relu(z + 1) − 1: linear near 0 (slope 1), so that small inputs see
        # the linear module, and bent for z < −1
        return (lambda z: np.maximum(z, -1.0)), (lambda z: (z > -1.0).astype(float))
    raise ValueError(f"activation must be None, 'tanh' or 'relu', got {name!r}")


def train_sgd_samples(
    net: EDLN,
    task: Task,
    weights,
    *,
    lr,
    batch_size: int,
    steps: int,
    seed=None,
    activation=None,
    scale: float = 1.0,
    data=None,
    lr_warmup: int = 0,
    n_records: int = 20,
    divergence_limit: float = 1e6,
) -> TrainResult:
    """SGD on explicit samples, for the cases the exact Wishart trick of :func:`train_sgd` does not
    cover: a nonlinear module around the linear block, a finite dataset, widths below ``rank V*``.

    The network is ``f(x) = M^O φ(s W_D ⋯ W_1 h¹)/s`` with ``h¹ = φ(s M^I Z x)/s``: with
    ``activation=None`` the EDLN itself; with ``"tanh"`` or ``"relu"`` (a ReLU shifted to be linear
    near 0) a nonlinear module on each side whose strength is ``scale`` (``s → 0`` recovers the
    linear network; the paper's footnote 12 reads ``M^I`` as such a linearisation). Each step
    draws ``B`` fresh samples ``(x, ε)`` — or, with ``data=(x, y)``, ``B`` rows of that fixed
    dataset — and takes a step on the minibatch loss. Widths below ``rank V*`` are allowed.

    Returns
    -------
    TrainResult
        ``kernels`` are the latent kernels ``P_kᵀP_k`` of the linear block (meaningful as the
        latent kernels only when ``activation is None``); ``loss`` the mean minibatch loss since
        the previous record (NaN at the first record, before any step); ``entropy`` NaN (no closed
        form here).
    """
    _check_net(net)
    if not isinstance(task, Task):
        raise ValueError(f"task must be a Task, got {type(task).__name__}")
    if task.n != net.n or task.m != net.m:
        raise ValueError(f"task (n={task.n}, m={task.m}) and network (n={net.n}, m={net.m}) must match")
    ws, _ = _stack(net, weights)
    ws = [w.copy() for w in ws]
    r = ws[0].shape[0]
    lr = _per_replica("lr", lr, r)
    batch_size = check_int("batch_size", batch_size, minimum=1, maximum=MAX_DRAWS // (r * max(net.n, net.m)))
    steps = check_int("steps", steps, minimum=1, maximum=MAX_STEPS)
    n_records = check_int("n_records", n_records, minimum=1, maximum=steps)
    lr_warmup = check_int("lr_warmup", lr_warmup, minimum=0)
    scale = check_positive("scale", scale)
    phi, dphi = _activation(activation)
    if data is not None:
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise ValueError("data must be a pair (x, y) of arrays")
        dx = check_array("data[0]", data[0], ndim=2, shape=(None, net.n))
        dy = check_array("data[1]", data[1], ndim=2, shape=(dx.shape[0], net.m))
        if dx.shape[0] < batch_size:
            raise ValueError(f"data must hold at least batch_size = {batch_size} samples, got {dx.shape[0]}")
    rng = make_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    lx = np.linalg.cholesky(task.sigma_x)
    le = sqrtm_psd(task.sigma_eps)
    mi, mo = net.input_map, net.m_out
    grid = np.unique(np.linspace(0, steps, n_records + 1).astype(int))
    recs, losses, acc, cnt = [], [], 0.0, 0
    rec = 0
    for t in range(steps + 1):
        if t == grid[rec]:
            with np.errstate(over="ignore", invalid="ignore"):
                p, _ = _forward(net, ws)
                recs.append(np.stack([_t(p[k]) @ p[k] for k in range(1, net.depth)], axis=1))
            losses.append(acc / cnt if cnt else np.full(r, np.nan))
            acc, cnt = 0.0, 0
            check_divergence(
                np.max([np.abs(a).max(axis=(1, 2)) for a in ws], axis=0),
                step=t,
                limit=divergence_limit,
                params=lambda i: dict(lr=float(lr[i]), batch_size=batch_size),
            )
            rec += 1
            if t == steps:
                break
        if data is None:
            x = rng.standard_normal((r, batch_size, net.n)) @ lx.T
            y = x @ task.v_star.T + rng.standard_normal((r, batch_size, net.m)) @ le.T
        else:
            idx = rng.integers(0, dx.shape[0], size=(r, batch_size))
            x, y = dx[idx], dy[idx]
        eta = lr * min((t + 1) / lr_warmup, 1.0) if lr_warmup else lr
        with np.errstate(over="ignore", invalid="ignore"):
            z0 = scale * x @ mi.T
            h = [phi(z0) / scale]
            for w in ws:
                h.append(h[-1] @ _t(w))
            zo = scale * h[-1]
            out = (phi(zo) / scale) @ mo.T
            res = out - y
            acc = acc + (res**2).sum(-1).mean(-1)
            cnt += 1
            g = (2.0 / batch_size) * (res @ mo) * dphi(zo)
            for i in range(net.depth - 1, -1, -1):
                gw = _t(g) @ h[i]
                if i > 0:
                    g = g @ ws[i]
                ws[i] = ws[i] - eta[:, None, None] * gw
    ks = np.stack(recs)
    loss = np.stack(losses)
    return TrainResult(
        grid,
        ks,
        loss,
        np.full(loss.shape, np.nan),
        ws,
        params=dict(
            method="sgd-samples",
            lr=lr,
            batch_size=batch_size,
            steps=steps,
            activation=activation,
            scale=scale,
            finite_data=data is not None,
        ),
    )


def explore_alignment(
    eta,
    noise: float,
    *,
    steps: int = 5000,
    batch_size: int = 4,
    seeds: int = 3,
    seed: int = 70,
    example_seed: int = 2026,
):
    """The explorer of the chapter: train network A of :func:`example_pair` by SGD at learning rate
    ``eta`` and label-noise level ``noise`` (mean variance per output) and report its alignment
    with ``K⋆`` (Σx-weighted, mean over hidden layers).

    Never raises inside its box ``eta ∈ [1e-3, 3e-2]``, ``noise ∈ [1e-2, 2]``: the learning rate
    warms up over a tenth of the run, and a run that still diverges is reported (``diverged``
    true, with a message) instead of raised.

    Parameters
    ----------
    eta : float or 1-D array
        Learning rate(s); several are run as one batched ensemble.
    noise : float
        Label-noise level; the example task has 0.5.
    steps, batch_size, seeds : int
        Run length (≥ 100), batch size (≥ 1), seeds per learning rate (≥ 1).

    Returns
    -------
    dict
        ``eta`` (array), ``steps`` (record steps), ``alignment`` (records × len(eta) × seeds; NaN for
        a diverged learning rate), ``final`` (per ``eta``: mean over seeds of the alignment of the
        kernels averaged over the last quarter; NaN if diverged), ``diverged`` (bool per ``eta``),
        ``message`` (str, empty when nothing diverged).
    """
    etas = np.atleast_1d(np.asarray(eta, dtype=float))
    if etas.ndim != 1 or etas.size == 0:
        raise ValueError(f"eta must be a number or a 1-D array of numbers, got {eta!r}")
    for e in etas:
        check_positive("eta", e)
        if not 1e-3 - 1e-12 <= e <= 3e-2 + 1e-12:
            raise ValueError(f"eta must lie in [0.001, 0.03], got {e!r}")
    noise = check_positive("noise", noise)
    if not 1e-2 - 1e-12 <= noise <= 2.0 + 1e-12:
        raise ValueError(f"noise must lie in [0.01, 2], got {noise!r}")
    steps = check_int("steps", steps, minimum=100)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    seeds = check_int("seeds", seeds, minimum=1)
    task, net_a, _ = example_pair(example_seed)
    k_star = task.platonic_kernel()
    t = task.with_noise(task.sigma_eps * (noise / 0.5))  # the example task has noise 0.5
    w0 = init_weights(net_a, (7, 0), replicas=seeds)
    grid = record_steps(steps, max(steps // 100, 1))

    def run(lrs):
        ws = [np.concatenate([a] * lrs.size) for a in w0]
        res = train_sgd(
            net_a,
            t,
            ws,
            lr=np.repeat(lrs, seeds),
            batch_size=batch_size,
            steps=steps,
            seed=(seed, int(1e4 * noise)),
            lr_warmup=max(steps // 10, 1),
            record_every=max(steps // 100, 1),
        )
        al = kernel_alignment(res.kernels, k_star, metric=task.sigma_x).mean(-1)
        fin = kernel_alignment(res.window_kernels(0.25), k_star, metric=task.sigma_x).mean(-1)
        return al.reshape(al.shape[0], lrs.size, seeds), fin.reshape(lrs.size, seeds).mean(1)

    try:
        al, fin = run(etas)
        diverged = np.zeros(etas.size, dtype=bool)
        messages = []
    except DivergenceError:  # isolate the learning rates that diverge
        al = np.full((grid.size, etas.size, seeds), np.nan)
        fin = np.full(etas.size, np.nan)
        diverged = np.zeros(etas.size, dtype=bool)
        messages = []
        for j, e in enumerate(etas):
            try:
                a_j, f_j = run(etas[j : j + 1])
                al[:, j], fin[j] = a_j[:, 0], f_j[0]
            except DivergenceError as err:
                diverged[j] = True
                messages.append(f"SGD diverged at η = {e:g}, noise = {noise:g}: {err}")
    return dict(eta=etas, steps=grid, alignment=al, final=fin, diverged=diverged, message="\n".join(messages))


# ----------------------------------------------------------------------------------------------
# Trainers
# ----------------------------------------------------------------------------------------------


@dataclass
class TrainResult:
    """What a trainer records.

    Attributes
    ----------
    steps : numpy.ndarray, shape (T,)
        Recorded steps (``0`` is the initialisation).
    kernels : numpy.ndarray, shape (T, R, D-1, n, n)
        Hidden-layer kernels ``P_kᵀ P_k`` at the recorded steps.
    loss : numpy.ndarray, shape (T, R)
        Exact population loss ``L``.
    entropy : numpy.ndarray, shape (T, R)
        Exact entropic term ``S``.
    weights : list of numpy.ndarray
        Final weights, stacked ``(R, d_out, d_in)``.
    params : dict
        The hyper-parameters of the run.
    """

    steps: np.ndarray
    kernels: np.ndarray
    loss: np.ndarray
    entropy: np.ndarray
    weights: list
    params: dict = field(default_factory=dict)

    def window_kernels(self, fraction: float = 0.25) -> np.ndarray:
        """Kernels averaged over the records in the last ``fraction`` of the run (the
        initialisation excluded), shape ``(R, D-1, n, n)``. Averaging removes the O(η) fluctuations of SGD around its
        stationary state; ``fraction`` tiny gives the last recorded kernels."""
        fraction = check_positive("fraction", fraction)
        if fraction > 1:
            raise ValueError(f"fraction must lie in (0, 1], got {fraction!r}")
        start = self.steps[-1] * (1.0 - fraction)
        sel = (self.steps >= start) & (self.steps > 0)
        return self.kernels[sel].mean(0)

    def alignment_deficit(self, reference) -> np.ndarray:
        """``1 − alignment`` of the hidden-layer kernels with ``reference`` (e.g. ``K⋆``), averaged
        over hidden layers and replicas, at each record: shape ``(T,)``."""
        reference = check_square("reference", reference, size=self.kernels.shape[-1])
        return 1.0 - kernel_alignment(self.kernels, reference).mean(axis=(1, 2))

    def slow_time(self, rate: float, power: int = 1) -> np.ndarray:
        """The slow time at each record, ``τ_t = rate · Σ_{s<t} w_s^power``, where ``w_s`` is the
        learning-rate warm-up factor ``min((s+1)/lr_warmup, 1)`` of step ``s`` (1 without warm-up).

        ``power = 2`` with ``rate = η²/B`` is SGD's slow time (its charge drift scales as the
        squared learning rate); ``power = 1`` with ``rate = 4γ·lr`` is that of gradient descent on
        ``L + γS`` (its drift is linear in the learning rate)."""
        rate = check_positive("rate", rate)
        power = check_int("power", power, minimum=1, maximum=2)
        warm = int(self.params.get("lr_warmup", 0) or 0)
        t = np.arange(int(self.steps[-1]))
        factor = np.minimum((t + 1) / warm, 1.0) if warm else np.ones(t.size)
        return rate * np.concatenate([[0.0], np.cumsum(factor**power)])[self.steps]


def _per_replica(name, value, r, *, positive=True):
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = np.full(r, float(arr))
    if arr.shape != (r,):
        raise ValueError(
            f"{name} must be a number or an array of shape ({r},) (one per replica), got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or (positive and np.any(arr <= 0)):
        rng = "(0, inf)" if positive else "[0, inf)"
        raise ValueError(f"{name} must lie in {rng}")
    return arr


#: Online SGD of :class:`_PlatonicModel` in compiled blocks (False: the batched NumPy step, the reference).
_COMPILED_SGD = True
#: Replicas that :func:`_edln_sgd_block` steps together, one SIMD lane each.
_SGD_GROUP = 32


def _record(net, task, ws):
    p, q, a, omega = _residual_parts(net, task, ws)
    ks = np.stack([_t(p[k]) @ p[k] for k in range(1, net.depth)], axis=1)
    loss = _tr(omega)
    s = 0.0
    for i in range(net.depth):
        h, c, t, b, j = _layer_terms(task, p[i], q[i], a, omega)
        s = s + 4.0 * (b * t + 2.0 * _tr(c @ j))
    return ks, loss, s


def _common(net, task, weights, steps, record_every):
    net.check_task(task)
    ws, _ = _stack(net, weights)
    steps = check_int("steps", steps, minimum=1, maximum=MAX_STEPS)
    record_every = check_int("record_every", record_every, minimum=1)
    return [w.copy() for w in ws], steps, record_every


def _edln_sgd_block(
    S,
    X,
    L,
    cs,
    points,
    t0,
    t1,
    W,
    offs,
    dims,
    MI,
    MO,
    V,
    lr,
    wd,
    use_wd,
    warm,
    step0,
    P,
    Q,
    A,
    E,
    T,
    Wg,
    Sg,
    Xg,
    Zg,
    eta,
    c2,
    G,
):  # pragma: no cover
    """Steps ``t0 … t1 − 1`` of a block of online SGD for every replica of an EDLN, compiled (numba,
    ``nogil``): the update of :meth:`_PlatonicModel.step` (the gradient of :func:`minibatch_gradient`,
    ``∇_{W_i} L̂ = (Q_iᵀ E) P_iᵀ`` with ``E = 2 (A Ŝ_xx − Ŝ_εx)`` and ``A = M^O P_D − V*``, plus
    ``2 λ W_i``, times the step's learning rate).

    The replicas run in groups of ``g`` (the last axis of the scratch arrays), one SIMD lane each:
    every loop's innermost index is the replica, and each replica's arithmetic is the NumPy path's,
    operation for operation, except that every small product is summed in the order of its inner
    index (BLAS may sum in another order). So the numbers agree with the NumPy path to rounding and
    do not depend on how the replicas are grouped or chunked.

    The steps' minibatch moments are ``S[r, t]`` (R, steps, n + m, n + m), or, where ``points`` is
    true, formed here from the standard normals ``X[r, t]`` (R, steps, n + m, B) as
    ``cs[r] (L X)(L X)ᵀ`` (what :meth:`symbreak.engine.WishartBlockSampler.draw` returns for
    ``B < n + m``, up to the order of the sums; only the first ``n`` columns are formed). ``W`` (R, Σ d_i d_{i−1}) the
    replicas' weights, layer ``i`` row-major from ``offs[i]``; ``dims = (n, d_1, …, d_{D−1}, m)``;
    ``MI`` the input map ``M^I Z``, ``MO`` the output map, ``V`` the target ``V*``; ``lr``, ``wd``
    one per replica; ``warm`` the learning-rate warm-up in steps (0: none), ``step0`` the global step
    of ``t0``. Scratch: ``P`` (D + 1, max d, n, g), ``Q`` (D, m, max d, g), ``A``, ``E`` (m, n, g),
    ``T`` (max d, n, g), ``Wg`` (Σ d_i d_{i−1}, g), ``Sg`` (n + m, n, g), ``Xg``, ``Zg`` (n + m, B, g),
    ``eta``, ``c2``, ``G`` (g)."""
    depth = dims.size - 1
    n = dims[0]
    m = dims[depth]
    nw = W.shape[1]
    gs = P.shape[3]
    for i in range(n):
        for j in range(n):
            for q in range(gs):
                P[0, i, j, q] = MI[i, j]
    for i in range(m):
        for j in range(m):
            for q in range(gs):
                Q[depth - 1, i, j, q] = MO[i, j]
    for r0 in range(0, W.shape[0], gs):
        ng = min(gs, W.shape[0] - r0)
        # the group's weights, one lane per replica
        for q in range(ng):
            for x in range(nw):
                Wg[x, q] = W[r0 + q, x]
            c2[q] = 2.0 * wd[r0 + q]
        for t in range(t0, t1):
            step = step0 + t - t0
            for q in range(ng):
                lq = lr[r0 + q]
                eta[q] = lq * ((step + 1) / warm) if (warm > 0 and step < warm) else lq
            if points:
                # the moments from the B points Z = L X: Ŝ[:, :n] = c (Z Z[:n]ᵀ)
                d, nb = X.shape[2], X.shape[3]
                for q in range(ng):
                    for k in range(d):
                        for b in range(nb):
                            Xg[k, b, q] = X[r0 + q, t, k, b]
                for k in range(d):
                    for b in range(nb):
                        c = L[k, 0]
                        for q in range(ng):
                            Zg[k, b, q] = c * Xg[0, b, q]
                        for l in range(1, d):
                            c = L[k, l]
                            for q in range(ng):
                                Zg[k, b, q] += c * Xg[l, b, q]
                for k in range(d):
                    for j in range(n):
                        for q in range(ng):
                            Sg[k, j, q] = Zg[k, 0, q] * Zg[j, 0, q]
                        for b in range(1, nb):
                            for q in range(ng):
                                Sg[k, j, q] += Zg[k, b, q] * Zg[j, b, q]
                        for q in range(ng):
                            Sg[k, j, q] *= cs[r0 + q]
            else:
                for q in range(ng):
                    for k in range(n + m):
                        for j in range(n):
                            Sg[k, j, q] = S[r0 + q, t, k, j]
            # prefix maps P_l = W_l P_{l-1} (dims[l] × n)
            for lay in range(depth):
                o, dout, din = offs[lay], dims[lay + 1], dims[lay]
                for i in range(dout):
                    for j in range(n):
                        for q in range(ng):
                            P[lay + 1, i, j, q] = Wg[o + i * din, q] * P[lay, 0, j, q]
                        for k in range(1, din):
                            for q in range(ng):
                                P[lay + 1, i, j, q] += Wg[o + i * din + k, q] * P[lay, k, j, q]
            # suffix maps Q_l = Q_{l+1} W_{l+1} (m × dims[l+1])
            for lay in range(depth - 2, -1, -1):
                o, dout, din = offs[lay + 1], dims[lay + 2], dims[lay + 1]
                for i in range(m):
                    for j in range(din):
                        for q in range(ng):
                            Q[lay, i, j, q] = Q[lay + 1, i, 0, q] * Wg[o + j, q]
                        for k in range(1, dout):
                            for q in range(ng):
                                Q[lay, i, j, q] += Q[lay + 1, i, k, q] * Wg[o + k * din + j, q]
            # A = M^O P_D − V*, E = 2 (A Ŝ_xx − Ŝ_εx)
            for i in range(m):
                for j in range(n):
                    c = MO[i, 0]
                    for q in range(ng):
                        A[i, j, q] = c * P[depth, 0, j, q]
                    for k in range(1, m):
                        c = MO[i, k]
                        for q in range(ng):
                            A[i, j, q] += c * P[depth, k, j, q]
                    c = V[i, j]
                    for q in range(ng):
                        A[i, j, q] -= c
            for i in range(m):
                for j in range(n):
                    for q in range(ng):
                        E[i, j, q] = A[i, 0, q] * Sg[0, j, q]
                    for k in range(1, n):
                        for q in range(ng):
                            E[i, j, q] += A[i, k, q] * Sg[k, j, q]
                    for q in range(ng):
                        E[i, j, q] = 2.0 * (E[i, j, q] - Sg[n + i, j, q])
            # every layer's gradient G = (Q_lᵀ E) P_lᵀ from the old weights, then its update
            for lay in range(depth):
                o, dout, din = offs[lay], dims[lay + 1], dims[lay]
                for i in range(dout):
                    for j in range(n):
                        for q in range(ng):
                            T[i, j, q] = Q[lay, 0, i, q] * E[0, j, q]
                        for k in range(1, m):
                            for q in range(ng):
                                T[i, j, q] += Q[lay, k, i, q] * E[k, j, q]
                for i in range(dout):
                    for j in range(din):
                        x = o + i * din + j
                        for q in range(ng):
                            G[q] = T[i, 0, q] * P[lay, j, 0, q]
                        for k in range(1, n):
                            for q in range(ng):
                                G[q] += T[i, k, q] * P[lay, j, k, q]
                        if use_wd:
                            for q in range(ng):
                                G[q] = G[q] + c2[q] * Wg[x, q]
                        for q in range(ng):
                            Wg[x, q] = Wg[x, q] - eta[q] * G[q]
        for q in range(ng):
            for x in range(nw):
                W[r0 + q, x] = Wg[x, q]


class _PlatonicModel:
    """A batch of EDLN replicas for :func:`symbreak.engine.run_ensemble`: online SGD (Wishart
    minibatch moments) or full-batch gradient descent on ``L + γ S + λ Σ‖W_i‖²``.

    Online SGD takes its steps in compiled blocks (:func:`_edln_sgd_block`, one call per block of
    steps for the whole chunk, without the GIL) unless ``_COMPILED_SGD`` is false: then, as gradient
    descent always does, one batched NumPy step at a time (the reference the tests compare with)."""

    def __init__(
        self,
        reps,
        streams,
        net,
        task,
        ws,
        *,
        lr,
        wd,
        lr_warmup,
        sgd,
        batch_size=None,
        gamma=None,
        decay=None,
        gamma_warmup=0,
        dtype=np.float64,
    ):
        self.net, self.task, self.sgd = net, task, sgd
        self.dtype = np.dtype(dtype)
        self.w = [a[reps].copy() for a in ws]
        self.lr, self.wd, self.lr_warmup = lr[reps], wd[reps], lr_warmup
        self.lr3, self.wd3 = self.lr[:, None, None], self.wd[:, None, None]
        self.use_wd = bool(np.any(self.wd != 0))
        self.streams = list(streams)
        if sgd:
            self.sampler = WishartBlockSampler(
                task.data_factor(), np.full(len(reps), batch_size), dtype=self.dtype, max_steps=64
            )
            self.fused = _COMPILED_SGD or self.dtype != np.float64  # (float32: the compiled step only)
            if self.fused:
                self._fuse()
        else:
            self.g0, self.dec, self.gamma_warmup = gamma[reps], decay[reps], gamma_warmup
            self.use_s = bool(np.any(self.g0 != 0))

    def _fuse(self):
        """Move the weights into one flat array per replica (``self.w`` become views of it) and
        take the steps by :func:`_edln_sgd_block`."""
        net, r = self.net, len(self.w[0])
        shapes = net.shapes
        sizes = [a * b for a, b in shapes]
        offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        dt = self.dtype
        flat = np.empty((r, int(offs[-1])), dt)
        for i, (a, (dout, din)) in enumerate(zip(self.w, shapes)):
            flat[:, offs[i] : offs[i + 1]] = a.reshape(r, -1)
        self.flat = flat
        self.w = [flat[:, offs[i] : offs[i + 1]].reshape(r, *shapes[i]) for i in range(net.depth)]
        dims = np.array((net.n,) + net.widths + (net.m,), dtype=np.int64)
        big, n, m, depth = int(dims.max()), net.n, net.m, net.depth
        self.consts = (offs[:-1].copy(), dims, np.ascontiguousarray(net.input_map, dt), np.ascontiguousarray(net.m_out, dt),
                       np.ascontiguousarray(self.task.v_star, dt), np.ascontiguousarray(self.lr, dt),
                       np.ascontiguousarray(self.wd, dt), self.use_wd, int(self.lr_warmup))  # fmt: skip
        self.points = self.sampler.points_only  # B < n + m: the kernel forms the moments from the points
        g, d, nb = _SGD_GROUP, n + m, int(self.sampler.batch_sizes[0]) if self.points else 1
        self._none4, self._none2, self._none1 = np.zeros((1, 1, 1, 1), dt), np.zeros((1, 1), dt), np.zeros(1, dt)
        e = lambda *shape: np.zeros(shape, dt)  # noqa: E731
        self.scratch = (e(depth + 1, big, n, g), e(depth, m, big, g), e(m, n, g), e(m, n, g), e(big, n, g),
                        e(flat.shape[1], g), e(d, n, g), e(d, nb, g), e(d, nb, g), e(g), e(g), e(g))  # fmt: skip
        self.kernel = _compiled(_edln_sgd_block)
        self.steps = self._steps

    def _steps(self, noise, t0, t1, step):
        if self.points:  # the block's normals, the factor and c_r / B
            x, lf, cs = noise
            s = self._none4
        else:  # (R, steps, d, d): the sampler's own layout
            s, (x, lf, cs) = noise.transpose(1, 0, 2, 3), (self._none4, self._none2, self._none1)
        self.kernel(s, x, lf, cs, self.points, t0, t1, self.flat, *self.consts, step, *self.scratch)

    def draw(self, m):
        if not self.sgd:
            return None
        if self.fused and self.points:
            return self.sampler.points(self.streams, m)
        return self.sampler.draw(self.streams, m)

    def step(self, noise, t, step):
        if self.lr_warmup and step < self.lr_warmup:
            self.lr3 = self.lr[:, None, None] * ((step + 1) / self.lr_warmup)
        w = self.w
        if self.sgd:
            grads = _minibatch_gradient(self.net, self.task, w, noise[t])
            for i in range(len(w)):
                g = grads[i]
                if self.use_wd:
                    g = g + 2.0 * self.wd3 * w[i]
                w[i] = w[i] - self.lr3 * g
        else:
            gw = self.gamma_warmup
            ramp = min(max((step - gw) / gw, 0.0), 1.0) if gw else 1.0
            g = self.g0 * self.dec ** max(step - 2 * gw, 0)
            grads = _entropy_and_loss_gradients(self.net, self.task, w, ramp * g if self.use_s else 0.0)
            for i in range(len(w)):
                g = grads[i]
                if self.use_wd:
                    g = g + 2.0 * self.wd3 * w[i]
                w[i] = w[i] - self.lr3 * g

    def magnitude(self):
        return np.max([np.abs(a).max(axis=(1, 2)) for a in self.w], axis=0)

    def record(self, mask):
        return _record(self.net, self.task, self.w if mask.all() else [a[mask] for a in self.w])

    def final(self, mask):
        return tuple(a[mask] for a in self.w)

    def keep(self, mask):
        raise AssertionError("the replicas of a Platonic run all finish together")  # pragma: no cover


def _train(net, task, ws, model_kw, params_of, *, steps, record_every, divergence_limit, n_chunks, seed, method):
    """Run a trainer on :func:`symbreak.engine.run_ensemble`; return a :class:`TrainResult`."""
    r = ws[0].shape[0]
    grid = record_steps(steps, record_every)
    limit = check_positive("divergence_limit", divergence_limit)
    n_chunks = check_int("n_chunks", n_chunks, minimum=1)
    # one configuration per run of consecutive replicas with the same hyper-parameters (typically
    # one for the whole ensemble: per-replica objects cost more than the step for 10⁵ replicas)
    confs = []
    for i in range(r):
        p = params_of(i)
        if confs and confs[-1][1] == p:
            confs[-1][0] += 1
        else:
            confs.append([1, p])
    confs = [Configuration(k, grid, p) for k, p in confs]
    runs = run_ensemble(
        lambda reps, streams: _PlatonicModel(reps, streams, net, task, ws, **model_kw),
        confs,
        seed=seed,
        record_names=("kernels", "loss", "entropy"),
        final_names=tuple(f"W{i}" for i in range(net.depth)),
        n_chunks=n_chunks,
        divergence_limit=limit,
        method=method,
        desc=f"Platonic {method}",
    )
    kernels = np.concatenate([x.kernels for x in runs])  # [replica, record, ...]
    loss = np.concatenate([x.loss for x in runs])
    ent = np.concatenate([x.entropy for x in runs])
    weights = [np.concatenate([x.final[f"W{i}"] for x in runs]) for i in range(net.depth)]
    return TrainResult(grid, np.swapaxes(kernels, 0, 1), loss.T, ent.T, weights)


def train_gd(
    net: EDLN,
    task: Task,
    weights,
    *,
    lr,
    steps: int,
    gamma=0.0,
    weight_decay=0.0,
    gamma_warmup: int = 0,
    gamma_final=None,
    lr_warmup: int = 0,
    record_every: int = 100,
    divergence_limit: float = 1e6,
    n_chunks: int = 1,
) -> TrainResult:
    """Full-batch gradient descent on ``L + γ S + λ Σ_i ‖W_i‖²`` with exact gradients.

    * ``gamma = 0, weight_decay = 0``: plain gradient descent (conserves the charges
      ``W_{k+1}ᵀW_{k+1} − W_k W_kᵀ`` up to O(lr²)),
    * ``gamma > 0``: the explicit entropic loss (the η → 0⁺ objective "Eq. 12"),
    * ``weight_decay = λ > 0``: weight decay, which balances norms instead of gradients.

    Parameters
    ----------
    net, task : EDLN, Task
    weights : list of arrays
        Initial weights, single ``(d_out, d_in)`` or stacked ``(R, d_out, d_in)`` (replicas).
    lr, gamma, weight_decay : float or array of shape (R,)
        Learning rate (> 0), entropic coefficient and weight-decay coefficient (>= 0), possibly
        one per replica.
    gamma_warmup : int
        If positive, the first ``gamma_warmup`` steps are plain gradient descent (``γ = 0``),
        which brings the network to the manifold of minima of ``L``; over the next
        ``gamma_warmup`` steps ``γ`` rises linearly to its value. ``S`` is quartic in the weights
        and large far from the minima: switched on from the start it can hold a slowly learned
        mode of the end-to-end map near zero for thousands of steps (a saddle of ``L + γS`` that
        plain GD escapes), and switched on at once at an unbalanced minimum it can be unstable.
        The warm-up does not change where the run ends.
    gamma_final : float or array of shape (R,), optional
        If given, after the warm-up and the ramp ``γ`` decays geometrically from ``gamma`` to
        ``gamma_final`` at the last step: an annealing path to the ``γ → 0⁺`` limit (the
        minimiser of ``L + γ S`` sits O(γ) away from the minima of ``L``, while the motion along
        the symmetry orbits slows down like ``γ``).
    lr_warmup : int
        If positive, the learning rate rises linearly over the first ``lr_warmup`` steps (see
        :func:`train_sgd`).
    steps, record_every : int
    divergence_limit : float
        A weight magnitude above it raises :class:`~symbreak.engine.DivergenceError`.
    n_chunks : int
        Replicas are split into this many chunks, run concurrently on the thread pool of
        :func:`symbreak.engine.run_ensemble`. The default 1 is fastest for the chapter's small
        matrices (a few ×few: the time goes to Python-level overhead that holds the GIL); use 2
        for large ensembles. Results do not depend on ``n_chunks`` or on the number of cores.

    Returns
    -------
    TrainResult
    """
    _check_net(net)
    ws, steps, record_every = _common(net, task, weights, steps, record_every)
    r = ws[0].shape[0]
    lr = _per_replica("lr", lr, r)
    gamma = _per_replica("gamma", gamma, r, positive=False)
    wd = _per_replica("weight_decay", weight_decay, r, positive=False)
    gamma_warmup = check_int("gamma_warmup", gamma_warmup, minimum=0)
    if gamma_final is None:
        decay = np.ones(r)
    else:
        gf = _per_replica("gamma_final", gamma_final, r)
        if np.any(gamma <= 0):
            raise ValueError("gamma must be > 0 when gamma_final is given")
        decay = (gf / gamma) ** (1.0 / max(steps - 2 * gamma_warmup, 1))
    lr_warmup = check_int("lr_warmup", lr_warmup, minimum=0)
    params = dict(
        method="gd",
        lr=lr,
        gamma=gamma,
        weight_decay=wd,
        steps=steps,
        gamma_warmup=gamma_warmup,
        gamma_final=gamma_final,
        lr_warmup=lr_warmup,
    )

    model_kw = dict(lr=lr, wd=wd, lr_warmup=lr_warmup, sgd=False, gamma=gamma, decay=decay, gamma_warmup=gamma_warmup)
    res = _train(
        net,
        task,
        ws,
        model_kw,
        lambda i: dict(lr=float(lr[i]), gamma=float(gamma[i]), weight_decay=float(wd[i])),
        steps=steps,
        record_every=record_every,
        divergence_limit=divergence_limit,
        n_chunks=n_chunks,
        seed=0,
        method="gradient descent",
    )
    res.params = params
    return res


def train_sgd(
    net: EDLN,
    task: Task,
    weights,
    *,
    lr,
    batch_size: int,
    steps: int,
    seed=None,
    weight_decay=0.0,
    lr_warmup: int = 0,
    record_every: int = 100,
    divergence_limit: float = 1e6,
    n_chunks: int = 1,
    dtype=np.float64,
) -> TrainResult:
    """Online SGD on ``ℓ = ‖f(x) − y‖²`` with fresh minibatches of ``B`` samples per step.

    The minibatch gradient is linear in the minibatch second moments of ``(x, ε)``: with
    ``Ŝ = (1/B) Σ_b (x_b, ε_b)(x_b, ε_b)ᵀ`` and ``A = U − V*``,

    .. math::

        \\nabla_{W_i} \\hat L = 2\\, Q_i^\\top \\big(A \\hat S_{xx} - \\hat S_{\\varepsilon x}\\big) P_i^\\top ,

    and ``B Ŝ`` is Wishart with covariance ``diag(Σx, Σε)``, so :func:`symbreak.engine.wishart_covariance`
    draws each step's minibatch *exactly* without any data points. Optional weight decay adds
    ``2 λ W_i``.

    Parameters
    ----------
    lr, weight_decay : float or array of shape (R,)
        Learning rate (> 0) and weight-decay coefficient (>= 0), possibly one per replica.
    batch_size : int
        ``B ≥ 1``, common to all replicas.
    seed :
        Seed of the minibatch streams: replica ``r`` draws from its own stream ``(seed, r)``
        (:func:`symbreak.engine.replica_streams`), so its trajectory does not depend on how many
        replicas run or how they are chunked.
    lr_warmup : int
        If positive, the learning rate rises linearly from ``lr / lr_warmup`` to ``lr`` over the
        first ``lr_warmup`` steps: far from the minima (random initialisation, large loss) the
        landscape is sharper than near them, and a deep network with ill-conditioned ``M`` can
        otherwise leave the stable region in the first few hundred steps.
    record_every, divergence_limit :
        As in :func:`train_gd`.
    n_chunks : int
        Replicas are split into this many chunks, run concurrently. The steps are compiled
        (each chunk's replicas in SIMD lanes, one call per 8 steps, without
        the GIL), so two chunks run on two cores; that pays from about 64 replicas (on two cores,
        64 replicas of network B: 1.4–1.7 s against 2.2–2.4 s for 20,000 steps). Results do not
        depend on ``n_chunks``, on the number of cores or on which replicas run together (tested).
    dtype : numpy.float64 or numpy.float32 (or their names)
        Precision of the weights, the minibatch draws and the step (the records are computed in
        float64 from the weights; ``TrainResult.weights`` are float32). float32 draws other random
        numbers than float64; on the same draws the two steps agree to float32 rounding (measured
        ~5e-6 relative after 1,920 steps, tested to 1e-4). It is modestly faster (6–18% in
        ``make benchmark``).

    Returns
    -------
    TrainResult

    Raises
    ------
    ValueError
        Naming the parameter, for a non-positive ``lr``, a negative ``weight_decay``, ``batch_size``
        below 1, a ``dtype`` other than float64/float32, or weights that do not fit ``net``.
    DivergenceError
        When a replica's weights leave ``divergence_limit`` (past the stability edge).

    Notes
    -----
    The compiled step computes the update above operation for operation, but sums each small
    matrix product in a fixed order where BLAS may choose another: its trajectories agree with the
    batched NumPy step's to rounding (measured a few ``1e-15`` relative after 1,500 steps, tested to
    ``1e-12``).
    """
    _check_net(net)
    ws, steps, record_every = _common(net, task, weights, steps, record_every)
    r = ws[0].shape[0]
    lr = _per_replica("lr", lr, r)
    wd = _per_replica("weight_decay", weight_decay, r, positive=False)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    lr_warmup = check_int("lr_warmup", lr_warmup, minimum=0)
    try:
        dt = np.dtype(dtype) if isinstance(dtype, (type, np.dtype, str)) else None
    except TypeError:  # a string NumPy does not know
        dt = None
    if dt is None or dt not in (np.dtype(np.float64), np.dtype(np.float32)):  # (None == float64 for NumPy)
        raise ValueError(f"dtype must be numpy.float64 or numpy.float32, got {dtype!r}")
    params = dict(method="sgd", lr=lr, batch_size=batch_size, weight_decay=wd, steps=steps, lr_warmup=lr_warmup)
    if dt == np.float32:
        params["dtype"] = "float32"

    model_kw = dict(lr=lr, wd=wd, lr_warmup=lr_warmup, sgd=True, batch_size=batch_size, dtype=dt)
    res = _train(
        net,
        task,
        ws,
        model_kw,
        lambda i: dict(lr=float(lr[i]), batch_size=batch_size, weight_decay=float(wd[i])),
        steps=steps,
        record_every=record_every,
        divergence_limit=divergence_limit,
        n_chunks=n_chunks,
        seed=seed,
        method="SGD",
    )
    res.params = params
    return res
