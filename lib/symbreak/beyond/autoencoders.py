"""Nonlinear autoencoders on real data: gradients, training, per-neuron charges, sharpness and the
drift terms of the Lambert-W law.

Pages: ``book/beyond/autoencoders.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._autodiff import hessian as _autograd_hessian
from ..engine import DivergenceError, record_steps, replica_streams
from ..rng import make_rng
from ..validation import (
    check_allocation,
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_real,
    finite_result,
)
from ._common import ACTIVATIONS, DIVERGENCE_LIMIT, _tensor, _torch
from .synthesis import lambert_scale

__all__ = [
    "ae_gradients",
    "init_autoencoder",
    "neuron_charges",
    "AERun",
    "train_autoencoder",
    "ae_sharpness",
    "dense_hessian_lambda_max",
    "ae_drift_terms",
    "fit_lambert_rate",
    "mean_square_edge",
    "EdgeRun",
    "edge_of_stability_runs",
    "edge_time",
    "edge_sweep",
    "clopper_pearson",
]


# ---------------------------------------------------------------------------------------------
# autoencoders
# ---------------------------------------------------------------------------------------------
def _check_data_and_weights(X, W0, U0):
    """The data ``X`` (n ≥ 1 rows of d features) and stacked decoders ``W0`` (R, d, k) and encoders
    ``U0`` (R, k, d), as float arrays, or a ``ValueError`` naming the one that does not fit."""
    X = check_array("X", X, ndim=2)
    n, d = X.shape
    if n == 0:
        raise ValueError("X must hold at least one sample (row)")
    W = check_array("W0", W0, ndim=3)
    U = check_array("U0", U0, ndim=3)
    if W.shape[1] != d or U.shape != (W.shape[0], W.shape[2], d):
        raise ValueError(f"W0 must be (R, {d}, k) and U0 (R, k, {d}), got {W.shape} and {U.shape}")
    return X, W, U


def _act(name, p):
    torch = _torch()
    if name == "linear":
        return p, torch.ones_like(p)
    if name == "relu":
        return torch.relu(p), (p > 0).to(p.dtype)
    t = torch.tanh(p)
    return t, 1.0 - t * t


def ae_gradients(W, U, X, activation: str = "relu"):
    """Minibatch loss and gradients of ``L = ½ mean_b ‖W φ(U x_b) − x_b‖²`` for stacked replicas.

    Parameters
    ----------
    W : torch.Tensor, shape (R, d, k)
        Decoders.
    U : torch.Tensor, shape (R, k, d)
        Encoders.
    X : torch.Tensor, shape (R, d, B)
        One minibatch per replica (columns are samples).
    activation : {"linear", "relu", "tanh"}

    Returns
    -------
    loss : torch.Tensor, shape (R,)
    gW, gU : torch.Tensor
        ``g_W = r hᵀ/B``, ``g_U = ((Wᵀr) ⊙ φ'(Ux)) xᵀ/B`` with ``r = W h − x``, ``h = φ(U x)``.
    """
    check_choice("activation", activation, ACTIVATIONS)
    torch = _torch()
    for name, t in (("W", W), ("U", U), ("X", X)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(
                f"{name} must be a torch.Tensor (float64; convert a NumPy array with torch.from_numpy), "
                f"got {type(t).__name__}"
            )
        if not t.is_floating_point() or t.dtype != W.dtype:
            raise TypeError(f"{name} must be a floating-point tensor of W's dtype {W.dtype}, got {t.dtype}")
    if W.ndim != 3 or U.ndim != 3 or X.ndim != 3:
        raise ValueError("W, U and X must be 3-D stacks (replica first)")
    if U.shape != (W.shape[0], W.shape[2], W.shape[1]) or X.shape[:2] != (W.shape[0], W.shape[1]):
        raise ValueError(f"shapes do not match: W {tuple(W.shape)}, U {tuple(U.shape)}, X {tuple(X.shape)}")
    b = X.shape[2]
    pre = U @ X
    h, dh = _act(activation, pre)
    r = W @ h - X
    loss = 0.5 * (r * r).sum(dim=(1, 2)) / b
    gW = r @ h.transpose(1, 2) / b
    delta = (W.transpose(1, 2) @ r) * dh
    gU = delta @ X.transpose(1, 2) / b
    return loss, gW, gU


def init_autoencoder(X, k: int, replicas: int, *, scale: float = 1.0, seed=None):
    """Balanced random initial weights: ``U`` with i.i.d. ``N(0, scale²/d)`` rows, ``W = Uᵀ``.

    Every neuron starts with zero charge ``q_a = ‖W_{:a}‖² − ‖U_{a:}‖² = 0``.

    Returns
    -------
    W : numpy.ndarray, shape (R, d, k)
    U : numpy.ndarray, shape (R, k, d)
    """
    X = check_array("X", X, ndim=2)
    d = X.shape[1]
    if d < 2:
        raise ValueError(f"X must have at least 2 features for an undercomplete autoencoder, got shape {X.shape}")
    k = check_int("k", k, minimum=1, maximum=d - 1)
    replicas = check_int("replicas", replicas, minimum=1)
    check_allocation("replicas × k × d (the encoders and decoders)", 2 * replicas * k * d)
    scale = check_positive("scale", scale)
    U = make_rng(seed).standard_normal((replicas, k, d)) * scale / np.sqrt(d)
    return np.ascontiguousarray(U.transpose(0, 2, 1)), U


def neuron_charges(W, U) -> np.ndarray:
    """Per-neuron charges ``q_a = ‖W_{:a}‖² − ‖U_{a:}‖²`` (conserved by gradient flow for linear and
    ReLU units, whose positive homogeneity gives each neuron a rescaling symmetry), shape (..., k)."""
    W = check_array("W", W)
    U = check_array("U", U)
    if W.ndim < 2 or U.shape != W.shape[:-2] + (W.shape[-1], W.shape[-2]):
        raise ValueError(f"W (..., d, k) and U (..., k, d) must match, got {W.shape} and {U.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        return finite_result("neuron_charges", np.sum(W * W, axis=-2) - np.sum(U * U, axis=-1))


@dataclass
class AERun:
    """An autoencoder ensemble's record: ``steps`` (T,), ``tau`` (T,) = steps η²/B, ``W`` (T, R, d, k),
    ``U`` (T, R, k, d), full-data ``loss`` (T, R)."""

    steps: np.ndarray
    tau: np.ndarray
    W: np.ndarray
    U: np.ndarray
    loss: np.ndarray

    @property
    def q(self) -> np.ndarray:
        """Per-neuron charges (T, R, k)."""
        return neuron_charges(self.W, self.U)

    @property
    def decoder_scale(self) -> np.ndarray:
        """Per-neuron decoder scales ``‖W_{:a}‖²`` (T, R, k)."""
        return np.sum(self.W**2, axis=-2)


def train_autoencoder(
    X, W0, U0, *, activation: str, eta: float, batch_size: int | None, steps: int, record_every: int = 100, seed=None
) -> AERun:
    """SGD (or full-batch gradient descent, ``batch_size=None``) on ``½‖W φ(Ux) − x‖²`` for an ensemble.

    Each replica draws its own minibatch of ``B`` samples with replacement at every step, from its
    own stream (:func:`symbreak.engine.replica_streams`): replica ``j``'s run depends only on
    ``(seed, j)``, not on how many replicas run. The loss over the whole data set is recorded with
    the weights; divergence is checked after every step.

    Raises
    ------
    symbreak.engine.DivergenceError
        If a replica's weights leave every bounded region.
    """
    torch = _torch()
    X, W, U = _check_data_and_weights(X, W0, U0)
    n, d = X.shape
    check_choice("activation", activation, ACTIVATIONS)
    eta = check_positive("eta", eta)
    full = batch_size is None
    b = n if full else check_int("batch_size", batch_size, minimum=1)
    steps = check_int("steps", steps, minimum=1)
    rec = record_steps(steps, record_every)
    r = W.shape[0]
    check_allocation("records × replicas × k × d (the recorded weights)", 2 * rec.size * W.size)
    check_allocation("replicas × batch_size × (d + k) (one step's minibatches)", r * b * (d + W.shape[2]))
    xt = _tensor(X)
    xall = xt.T.unsqueeze(0).expand(r, d, n)
    Wt, Ut = _tensor(W), _tensor(U)
    # one stream per replica (engine.replica_streams): replica j's minibatches depend only on (seed, j)
    streams = None if full else replica_streams(seed, range(r))
    block = 256
    method = "gradient descent" if full else "SGD"
    Ws, Us, losses = [], [], []
    j = 0
    with torch.no_grad():
        for t in range(steps + 1):
            if t == rec[j]:
                loss, _, _ = ae_gradients(Wt, Ut, xall, activation)
                Ws.append(Wt.numpy().copy())
                Us.append(Ut.numpy().copy())
                losses.append(loss.numpy().copy())
                j += 1
            if t == steps:
                break
            if full:
                xb = xall
            else:
                if t % block == 0:  # the sample indices of `block` steps at once, replica by replica
                    idx_blk = torch.from_numpy(np.stack([g.integers(0, n, size=(block, b)) for g in streams], axis=1))
                xb = xt[idx_blk[t % block]].transpose(1, 2)
            _, gW, gU = ae_gradients(Wt, Ut, xb, activation)
            Wt -= eta * gW
            Ut -= eta * gU
            # checked after every step, so the error names the first step past the limit
            mag = torch.maximum(Wt.abs().amax(dim=(1, 2)), Ut.abs().amax(dim=(1, 2)))
            if not bool(torch.all(mag <= DIVERGENCE_LIMIT)):  # also catches NaN
                mag = mag.numpy()
                bad = int(np.flatnonzero(~(mag <= DIVERGENCE_LIMIT))[0])
                raise DivergenceError(
                    t + 1, bad, {"eta": eta, "batch_size": b}, float(mag[bad]), DIVERGENCE_LIMIT, method
                )
    return AERun(steps=rec, tau=rec * eta**2 / b, W=np.stack(Ws), U=np.stack(Us), loss=np.stack(losses))


#: Most power iterations :func:`ae_sharpness` runs (each is a Hessian-vector product).
MAX_POWER_ITERATIONS = 10_000


def ae_sharpness(X, W, U, activation: str, *, iters: int = 60, seed=None) -> np.ndarray:
    """Largest Hessian eigenvalue of the full-data loss ``½ mean ‖W φ(Ux) − x‖²`` for each replica.

    Power iteration on Hessian–vector products (double back-propagation); converges to the
    eigenvalue of largest magnitude, which at a minimum is the largest one.

    Parameters
    ----------
    X : array_like, shape (n, d)
    W : array_like, shape (R, d, k)
    U : array_like, shape (R, k, d)
    activation : {"linear", "relu", "tanh"}
    iters : int
        Power iterations (1 to ``MAX_POWER_ITERATIONS`` = 10,000).
    seed : int, optional
        Seed of the random start vectors, one stream per replica
        (:func:`symbreak.engine.replica_streams`): replica ``r``'s value does not depend on the others.
    """
    torch = _torch()
    X = check_array("X", X, ndim=2)
    W = check_array("W", W, ndim=3)
    U = check_array("U", U, ndim=3)
    check_choice("activation", activation, ACTIVATIONS)
    iters = check_int("iters", iters, minimum=1, maximum=MAX_POWER_ITERATIONS)
    n, d = X.shape
    if n < 1:
        raise ValueError("X must hold at least one sample (row), got 0")
    if W.shape[1] != d or U.shape != (W.shape[0], W.shape[2], d):
        raise ValueError(f"W must be (R, {d}, k) and U (R, k, {d}), got {W.shape} and {U.shape}")
    xt = _tensor(X).T.unsqueeze(0).expand(W.shape[0], d, n)
    Wt = _tensor(W, requires_grad=True)
    Ut = _tensor(U, requires_grad=True)
    act = {"linear": lambda p: p, "relu": torch.relu, "tanh": torch.tanh}[activation]
    loss = 0.5 * ((Wt @ act(Ut @ xt) - xt) ** 2).sum() / n  # sum over replicas: block-diagonal Hessian
    gW, gU = torch.autograd.grad(loss, (Wt, Ut), create_graph=True)
    # the start vector of replica r from its own stream (engine.replica_streams): its eigenvalue
    # depends only on (seed, r) and its weights, not on the other replicas
    R, k = W.shape[0], W.shape[2]
    v0 = np.stack([g.standard_normal(2 * d * k) for g in replica_streams(seed, range(R))])
    vW = torch.from_numpy(np.ascontiguousarray(v0[:, : d * k].reshape(R, d, k)))
    vU = torch.from_numpy(np.ascontiguousarray(v0[:, d * k :].reshape(R, k, d)))
    lam = torch.zeros(W.shape[0], dtype=torch.float64)
    for _ in range(iters):
        norm = torch.sqrt((vW**2).sum(dim=(1, 2)) + (vU**2).sum(dim=(1, 2)))[:, None, None]
        vW, vU = vW / norm, vU / norm
        hW, hU = torch.autograd.grad((gW * vW).sum() + (gU * vU).sum(), (Wt, Ut), retain_graph=True)
        lam = (hW * vW).sum(dim=(1, 2)) + (hU * vU).sum(dim=(1, 2))
        vW, vU = hW.detach(), hU.detach()
    lam = lam.detach().numpy()
    if not np.all(np.isfinite(lam)):
        raise ValueError(
            "ae_sharpness: the power iteration left the float64 range (X, W or U too extreme in scale, "
            "or a Hessian that vanishes to rounding)"
        )
    return lam


#: Most weights per replica of :func:`dense_hessian_lambda_max` (it forms the full Hessian).
MAX_DENSE_WEIGHTS = 4096


def dense_hessian_lambda_max(X, W, U, activation: str) -> np.ndarray:
    """Largest eigenvalue of the full Hessian of ``½ mean ‖W φ(Ux) − x‖²``, formed densely, per replica.

    The Hessian of each replica's full-data loss is built by automatic differentiation (reverse
    mode over reverse mode, on the loss written out directly, with none of the closed-form
    Hessian–vector products of :func:`edge_of_stability_runs`; 32 columns per batched backward
    pass) and handed to a dense symmetric eigen-solver: an independent check of the Lanczos
    estimates. For ReLU the second derivative of the activation is taken as zero, as everywhere in
    this module.

    Parameters
    ----------
    X : array_like, shape (n, d)
    W : array_like, shape (R, d, k)
    U : array_like, shape (R, k, d)
    activation : {"linear", "relu", "tanh"}

    Returns
    -------
    numpy.ndarray, shape (R,)

    Raises
    ------
    ValueError
        For bad arguments (the message names them), more than ``MAX_DENSE_WEIGHTS`` (4,096) weights
        per replica, or a Hessian that leaves the float64 range.
    """
    torch = _torch()
    X, W, U = _check_data_and_weights(X, W, U)
    check_choice("activation", activation, ACTIVATIONS)
    n, d = X.shape
    k = W.shape[2]
    if 2 * d * k > MAX_DENSE_WEIGHTS:
        raise ValueError(
            f"W and U hold 2 d k = {2 * d * k} weights per replica, beyond MAX_DENSE_WEIGHTS = {MAX_DENSE_WEIGHTS}"
        )
    act = {"linear": lambda p: p, "relu": torch.relu, "tanh": torch.tanh}[activation]
    xt = _tensor(X)

    p_w = d * k

    def loss(p):  # p = [vec W; vec U], row-major
        w, u = p[:p_w].reshape(d, k), p[p_w:].reshape(k, d)
        return 0.5 * ((act(xt @ u.T) @ w.T - xt) ** 2).sum() / n

    out = []
    for r in range(W.shape[0]):
        full = _autograd_hessian(loss, torch.cat([_tensor(W[r]).reshape(-1), _tensor(U[r]).reshape(-1)]))
        if not np.all(np.isfinite(full)):
            raise ValueError("dense_hessian_lambda_max: the Hessian left the float64 range (X, W or U too extreme)")
        out.append(np.linalg.eigvalsh((full + full.T) / 2)[-1])
    return np.array(out)


def ae_drift_terms(X, W, U, activation: str):
    """The two halves of the per-neuron charge drift, from the network's own per-sample gradients.

    For a per-sample gradient ``g_W = r hᵀ`` and ``g_U = δ xᵀ`` (``δ = (Wᵀr) ⊙ φ'(Ux)``), the squared
    norms of neuron ``a``'s columns are ``‖r‖² h_a²`` and ``δ_a² ‖x‖²``. At a critical point of the
    full-data loss the charge of neuron ``a`` therefore drifts on the slow time ``τ = tη²/B`` at

        dq_a/dτ = E‖r‖² h_a² − E δ_a² ‖x‖²        (decoder term − encoder term),

    the general form of the autoencoder chapter's Eq. 5 (whose encoder term vanishes at a linear
    PCA solution, where ``Wᵀr = 0``).

    Returns
    -------
    decoder, encoder : numpy.ndarray, shape (R, k)
        ``E‖r‖² h_a²`` and ``E δ_a² ‖x‖²`` over the rows of ``X``.
    """
    _torch()  # fails clearly when torch is missing
    X = check_array("X", X, ndim=2)
    W = check_array("W", W, ndim=3)
    U = check_array("U", U, ndim=3)
    check_choice("activation", activation, ACTIVATIONS)
    n, d = X.shape
    if n == 0:
        raise ValueError("X must hold at least one sample (row)")
    if W.shape[1] != d or U.shape != (W.shape[0], W.shape[2], d):
        raise ValueError(f"W must be (R, {d}, k) and U (R, k, {d}), got {W.shape} and {U.shape}")
    xt = _tensor(X).T.unsqueeze(0).expand(W.shape[0], d, n)
    Wt, Ut = _tensor(W), _tensor(U)  # copies: any memory layout
    h, dh = _act(activation, Ut @ xt)
    r = Wt @ h - xt
    delta = (Wt.transpose(1, 2) @ r) * dh
    r2 = (r * r).sum(dim=1, keepdim=True)
    x2 = (xt * xt).sum(dim=1, keepdim=True)
    return finite_result("ae_drift_terms", ((r2 * h * h).mean(dim=2).numpy(), (delta * delta * x2).mean(dim=2).numpy()))


def fit_lambert_rate(tau, s, s0: float) -> tuple[float, float]:
    """Least-squares rate ``c`` of the Lambert-W law ``s(τ) = lambert_scale(s0, c, τ)`` (one parameter).

    The law is linear in ``c`` in its implicit form ``s²/2 + log s − s0²/2 − log s0 = c τ``, so the
    fit is a regression of that left side on ``τ`` through the origin; the returned relative
    residual is ``max |s − s_fit| / s_fit``, the shape test.

    Returns
    -------
    c, max_rel_residual : float
    """
    tau = check_array("tau", tau, ndim=1)
    s = check_array("s", s, shape=tau.shape)
    s0 = check_positive("s0", s0)
    if np.any(s <= 0) or np.any(tau < 0) or not np.any(tau > 0):
        raise ValueError("s must be > 0 and tau >= 0 with at least one tau > 0")
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        lhs = s * s / 2 + np.log(s) - s0 * s0 / 2 - np.log(s0)
        c = float(np.sum(lhs * tau) / np.sum(tau * tau))
    if not np.isfinite(c):
        raise ValueError(
            "tau, s and s0 are too extreme in scale for the fit: s², s0² or Σ τ² leaves the float64 range "
            f"(fitted rate {c})"
        )
    if c < 0:
        raise ValueError(f"the data do not grow (fitted rate {c:.3g} < 0): no Lambert-W growth to fit")
    fit = lambert_scale(s0, c, tau)
    return c, float(np.max(np.abs(s - fit) / fit))


# ---------------------------------------------------------------------------------------------
# the edge of stability as a measured curve
# ---------------------------------------------------------------------------------------------
def mean_square_edge(X, batch_size, *, direction=None) -> float | np.ndarray:
    """The data's own mean-square stability edge ``κ_ms(B) = 2B/(B − 1 + m₄)`` of the top gain mode.

    At a PCA point of a linear autoencoder the dangerous Hessian modes ``μ_1a = λ_1(s_a + 1/s_1)``
    (P-Eq. C.75) all see the data through the top principal component ``z_1 = p_1ᵀx``: their
    minibatch curvature is ``μ Z`` with ``Z = Σ̂_11/λ_1``, the minibatch mean of ``z_1²/λ_1``. One
    step multiplies a displacement along the mode by ``1 − ημZ``; with ``B`` samples drawn with
    replacement ``E Z = 1`` and ``Var Z = (m₄ − 1)/B``, where ``m₄ = E z_1⁴/λ_1²`` is the data's
    normalised fourth moment along ``p_1``. The mean square ``E(1 − ημZ)²`` stays below 1 for

        ημ < κ_ms = 2/E Z² = 2B/(B − 1 + m₄).

    For Gaussian data ``m₄ = 3`` and ``κ_ms = 2B/(B + 2)`` (the autoencoder chapter's
    ``gain_stability_thresholds``); this function reads ``m₄`` off the data instead, as
    :func:`symbreak.beyond.data.pca_theory` reads the drift rates ``C_aa`` off its second moments.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Centred data (the rows are the samples minibatches draw from, with replacement).
    batch_size : int or array_like of int
        Minibatch size(s) ``B ≥ 1``.
    direction : array_like, shape (d,), optional
        The data direction ``p`` (default: the top principal component). ``m₄`` is then
        ``E (pᵀx)⁴ / (E (pᵀx)²)²``.

    Returns
    -------
    float or numpy.ndarray
        ``κ_ms`` for each batch size (the shape of ``batch_size``).
    """
    X = check_array("X", X, ndim=2)
    n, d = X.shape
    if n < 2:
        raise ValueError(f"X must have at least 2 rows (samples), got {n}")
    bs = np.asarray(batch_size)
    if bs.ndim > 1 or bs.size == 0:
        raise ValueError(f"batch_size must be an integer or a 1-D array of integers, got shape {bs.shape}")
    b = np.array([check_int("batch_size", v, minimum=1) for v in np.atleast_1d(bs).tolist()], dtype=float)
    if direction is None:
        with np.errstate(over="ignore", invalid="ignore"):
            cov = X.T @ X / n
        finite_result("mean_square_edge (the covariance of X)", cov)
        p = np.linalg.eigh(cov)[1][:, -1]
    else:
        p = check_array("direction", direction, shape=(d,))
        if not np.linalg.norm(p) > 0:
            raise ValueError("direction must be a nonzero vector")
    z2 = (X @ p) ** 2
    m2 = z2.mean()
    if not m2 > 0:
        raise ValueError("the data have no variance along the direction (or X underflows float64)")
    m4 = float(np.mean(z2 * z2) / (m2 * m2))
    out = finite_result("mean_square_edge", 2.0 * b / (b - 1.0 + m4))
    return float(out[0]) if bs.ndim == 0 else out


def _act_all(masks, p):
    """φ, φ' and φ'' of pre-activations ``p`` (R, k, n); ``masks`` maps each activation to a boolean
    (R, 1, 1) tensor of the replicas that use it."""
    torch = _torch()
    out = None
    for name, sel in masks.items():
        if name == "linear":
            vals = (p, torch.ones_like(p), torch.zeros_like(p))
        elif name == "relu":
            vals = (torch.relu(p), (p > 0).to(p.dtype), torch.zeros_like(p))
        else:
            t = torch.tanh(p)
            vals = (t, 1.0 - t * t, -2.0 * t * (1.0 - t * t))
        out = vals if out is None else tuple(torch.where(sel, v, o) for v, o in zip(vals, out))
    return out


def _masks(kinds):
    """The boolean (R, 1, 1) replica masks of each activation in ``kinds``."""
    torch = _torch()
    return {name: torch.tensor([kk == name for kk in kinds])[:, None, None] for name in sorted(set(kinds))}


class _Curvature:
    """The full-data loss ``½ mean ‖W φ(Ux) − x‖²`` of a stack of replicas at fixed weights, with its
    exact Hessian–vector product (no double back-propagation) and per-sample curvatures.

    Everything is written with ``k × n`` hidden-layer arrays and ``k × k`` Gram matrices; the data
    enter only through products ``(R·k) × d × n`` with the one shared data matrix, so no
    ``d × n`` array is formed per replica.
    """

    def __init__(self, X, W, U, masks):
        # X: (n, d) shared; W (R, d, k), U (R, k, d)
        self.X, self.W, self.n = X, W, X.shape[0]
        self.XT = X.T
        self.h, self.dh, self.d2h = _act_all(masks, U @ self.XT)  # (R, k, n)
        self.wtw = W.transpose(1, 2) @ W
        self.wx = W.transpose(1, 2) @ self.XT  # Wᵀx, (R, k, n)
        self.wr = self.wtw @ self.h - self.wx  # Wᵀr
        self.gram = self.h @ self.h.transpose(1, 2)  # Σ_b h hᵀ, (R, k, k)

    def loss(self):
        """Full-data loss per replica."""
        quad = (self.wtw * self.gram).sum(dim=(1, 2)) - 2.0 * (self.wx * self.h).sum(dim=(1, 2))
        return 0.5 * (quad + (self.X * self.X).sum()) / self.n

    def _along(self, V, Y):
        pd = Y @ self.XT  # U̇x, (R, k, n)
        return pd, self.dh * pd, V.transpose(1, 2)

    def hvp(self, V, Y):
        """``H (V, Y)``: the Hessian applied to a decoder direction ``V`` and an encoder direction ``Y``."""
        pd, hd, vt = self._along(V, Y)
        # ṙ = V h + W ḣ and r = W h − x; H_W = (ṙ hᵀ + r ḣᵀ)/n
        hW = V @ self.gram + self.W @ (hd @ self.h.transpose(1, 2) + self.h @ hd.transpose(1, 2))
        hW = hW - (hd @ self.X).transpose(1, 2)
        # H_U = [φ' ⊙ (Vᵀr + Wᵀṙ) + φ'' ⊙ U̇x ⊙ Wᵀr] xᵀ/n
        vtr = (vt @ self.W) @ self.h - vt @ self.XT
        back = self.dh * (vtr + (self.W.transpose(1, 2) @ V) @ self.h + self.wtw @ hd) + self.d2h * pd * self.wr
        return hW / self.n, back @ self.X / self.n

    def per_sample(self, V, Y):
        """``vᵀ H_b v`` for every sample ``b`` (R, n): the second derivative of sample ``b``'s loss
        along ``v = (V, Y)``; their mean over ``b`` is the Rayleigh quotient ``vᵀHv``."""
        pd, hd, vt = self._along(V, Y)
        vtv, vtw = vt @ V, vt @ self.W
        # ‖ṙ_b‖² with ṙ = V h + W ḣ, from k × k Gram matrices
        rd2 = (self.h * (vtv @ self.h)).sum(1) + 2.0 * (self.h * (vtw @ hd)).sum(1) + (hd * (self.wtw @ hd)).sum(1)
        vtr = vtw @ self.h - vt @ self.XT
        # ℓ_b'' = ‖ṙ_b‖² + r_b·r̈_b with r̈ = 2V ḣ + W (φ'' U̇x²)
        return rd2 + 2.0 * (vtr * hd).sum(1) + (self.wr * self.d2h * pd * pd).sum(1)


#: Steps between two divergence checks of :func:`edge_of_stability_runs` (the weights of a
#: replica past its edge grow geometrically, so it is caught within a few steps of the limit).
CHECK_EVERY = 8
#: Most Lanczos steps per record in :func:`edge_of_stability_runs` (the Krylov basis is kept whole).
MAX_LANCZOS_STEPS = 500


def _lanczos(curv, vW, vU, m):
    """``m`` Lanczos steps from ``(vW, vU)`` for every replica at once (full re-orthogonalisation).

    Returns the largest Ritz value of each replica's tridiagonal matrix and its Ritz vector (the
    warm start of the next call). Lanczos converges to the top of a near-degenerate spectrum far
    faster than power iteration, whose Rayleigh quotient after ``m`` steps still misses the
    eigenvalue by a factor ``(λ_2/λ_1)^{2m}`` of the gap.
    """
    torch = _torch()
    r, d, k = vW.shape
    q = torch.cat([vW.reshape(r, -1), vU.reshape(r, -1)], dim=1)
    # a frozen (diverged) replica may carry a zero or non-finite vector: it is restarted at a fixed
    # vector, and its values are discarded by the caller
    q = torch.nan_to_num(q, nan=1.0, posinf=1.0, neginf=1.0)
    norm = q.norm(dim=1, keepdim=True)
    q = torch.where(norm > 0, q, torch.ones_like(q))
    q = q / q.norm(dim=1, keepdim=True)
    basis, alphas, betas = [q], [], []
    for j in range(m):
        hW, hU = curv.hvp(q[:, : d * k].reshape(r, d, k), q[:, d * k :].reshape(r, k, d))
        w = torch.cat([hW.reshape(r, -1), hU.reshape(r, -1)], dim=1)
        alphas.append((w * q).sum(dim=1))
        qs = torch.stack(basis, dim=1)  # (R, j + 1, P)
        for _ in range(2):  # full re-orthogonalisation, twice
            w = w - torch.einsum("rjp,rj->rp", qs, torch.einsum("rjp,rp->rj", qs, w))
        if j == m - 1:
            break
        beta = w.norm(dim=1)
        betas.append(beta)
        q = w / torch.where(beta > 0, beta, torch.ones_like(beta))[:, None]
        basis.append(q)
    n_ = len(alphas)
    T = torch.diag_embed(torch.stack(alphas, dim=1))
    if n_ > 1:
        off = torch.stack(betas[: n_ - 1], dim=1)
        T = T + torch.diag_embed(off, offset=1) + torch.diag_embed(off, offset=-1)
    bad = ~torch.isfinite(T).all(dim=2).all(dim=1)  # a frozen replica, or one whose Hessian overflows
    evals, evecs = torch.linalg.eigh(torch.where(bad[:, None, None], torch.zeros_like(T), T))
    evals = torch.where(bad[:, None], torch.full_like(evals, float("nan")), evals)
    top = evecs[:, :, -1]  # (R, n_)
    vec = torch.einsum("rjp,rj->rp", torch.stack(basis[:n_], dim=1), top)
    return evals[:, -1], vec[:, : d * k].reshape(r, d, k), vec[:, d * k :].reshape(r, k, d)


@dataclass
class EdgeRun:
    """A stack of autoencoder replicas run to the edge of stability (:func:`edge_of_stability_runs`).

    Replica ``r`` has learning rate ``eta[r]`` and activation ``activation[r]``; all share the
    batch size. Records sit on a logarithmic grid of steps; a replica's entries after it diverged
    are NaN.
    """

    steps: np.ndarray  #: (T,) recorded steps
    eta: np.ndarray  #: (R,) learning rate per replica
    activation: tuple  #: (R,) activation per replica
    batch_size: int
    sharpness: np.ndarray  #: (T, R) largest Hessian eigenvalue of the full-data loss
    loss: np.ndarray  #: (T, R) full-data loss
    top_scale: np.ndarray  #: (T, R) largest decoder scale ‖W_{:a}‖²
    diverged_at: np.ndarray  #: (R,) first step past the divergence limit, −1 if never
    edge_ratio: np.ndarray  #: (T, R) E h_b²/(E h_b)² of the per-sample curvatures along the top eigenvector
    W_end: np.ndarray | None = None  #: (R, d, k) decoder weights at the last step (zero for a diverged replica)
    U_end: np.ndarray | None = None  #: (R, k, d) encoder weights at the last step

    @property
    def tau(self) -> np.ndarray:
        """Slow time ``t η²/B`` (T, R)."""
        return self.steps[:, None] * self.eta[None, :] ** 2 / self.batch_size

    def late_mean(self, values, start: float = 0.5) -> np.ndarray:
        """Mean of ``values`` (T, R) over the records at steps ``≥ start × steps[-1]``, per replica (R,)."""
        values = check_array("values", values, shape=self.sharpness.shape, finite=False)
        start = check_real("start", start)
        if not 0.0 <= start <= 1.0:
            raise ValueError(f"start must lie in [0, 1] (a fraction of the run), got {start!r}")
        return values[self.steps >= start * self.steps[-1]].mean(axis=0)

    def late_rise(self, values) -> np.ndarray:
        """Mean of ``values`` (T, R) over the last quarter of the run minus its mean over the quarter
        before, per replica (R,): positive while the quantity still grows at the end."""
        values = check_array("values", values, shape=self.sharpness.shape, finite=False)
        end = self.steps[-1]
        last, before = self.steps >= 0.75 * end, (self.steps >= 0.5 * end) & (self.steps < 0.75 * end)
        if not (last.any() and before.any()):
            raise ValueError("late_rise needs records in both the third and the last quarter of the run (n_late >= 4)")
        return values[last].mean(axis=0) - values[before].mean(axis=0)

    def own_edge(self) -> np.ndarray:
        """The mean-square edge at the network's own point, ``2B/(B − 1 + m)`` with ``m`` =
        :attr:`edge_ratio` (T, R): the same rule as :func:`mean_square_edge`, with the per-sample
        curvatures along the measured top eigenvector in place of ``z_1²``."""
        return 2.0 * self.batch_size / (self.batch_size - 1.0 + self.edge_ratio)


def edge_of_stability_runs(
    X,
    W0,
    U0,
    *,
    activations,
    etas,
    batch_size: int,
    steps: int,
    n_records: int = 12,
    n_late: int = 10,
    lanczos_steps: int = 8,
    first_steps: int = 24,
    seed=None,
) -> EdgeRun:
    """SGD on a stack of autoencoders with their own learning rates and activations, recording the
    sharpness on a logarithmic grid and every divergence, to the last step.

    Each replica draws ``B`` samples with replacement per step from its own stream
    (:func:`symbreak.engine.replica_streams`), as in :func:`train_autoencoder`. At each record the
    largest Hessian eigenvalue of the full-data loss is estimated by the Lanczos method on exact
    Hessian–vector products, warm-started from the previous record's top Ritz vector
    (``first_steps`` steps at the first record, ``lanczos_steps`` after; near the edge the top of
    the spectrum is nearly degenerate, ``μ_1a ≈ μ_11`` for every ``a`` by P-Eq. C.81, where power
    iteration converges too slowly). Along that eigenvector ``v`` the
    per-sample curvatures ``h_b = vᵀH_b v`` give the ratio ``m = E h_b²/(E h_b)²`` of
    :meth:`EdgeRun.own_edge`. A replica whose largest weight passes the divergence limit (or is not
    finite) is recorded with its step (the weights are checked every ``CHECK_EVERY`` = 8 steps and
    before every record, so the step is the first check past the limit) and frozen at zero weights,
    so that the others run on to the last step: the count of diverged replicas covers the whole run.

    Parameters
    ----------
    X : array_like, shape (n, d)
    W0, U0 : array_like, shapes (R, d, k) and (R, k, d)
        Starting weights, one replica per row.
    activations : sequence of str, length R
        ``"linear"``, ``"relu"`` or ``"tanh"`` for each replica.
    etas : array_like, shape (R,)
        Learning rate of each replica.
    batch_size : int
    steps : int
    n_records : int
        Records on a geometric grid from step 1 to ``steps`` (plus step 0), 2 to 10,000.
    n_late : int
        Further records evenly spaced over the second half of the run (0 to 10,000), where a
        plateau is read off (:meth:`EdgeRun.late_mean`).
    lanczos_steps, first_steps : int
        Lanczos steps (Hessian–vector products) per record after the first, and at the first
        (1 to ``MAX_LANCZOS_STEPS`` = 500).
    seed : int, optional

    Returns
    -------
    EdgeRun
    """
    torch = _torch()
    X, W, U = _check_data_and_weights(X, W0, U0)
    n, d = X.shape
    r_ = W.shape[0]
    kinds = tuple(activations) if not isinstance(activations, str) else ()
    if len(kinds) != r_:
        raise ValueError(f"activations must name one activation per replica ({r_}), got {activations!r}")
    for a in kinds:
        check_choice("activations", a, ACTIVATIONS)
    eta = check_array("etas", etas, ndim=1)
    if eta.shape != (r_,) or not np.all(eta > 0):
        raise ValueError(f"etas must hold one positive learning rate per replica ({r_}), got shape {eta.shape}")
    b = check_int("batch_size", batch_size, minimum=1)
    steps = check_int("steps", steps, minimum=1)
    n_records = check_int("n_records", n_records, minimum=2, maximum=10_000)
    n_late = check_int("n_late", n_late, minimum=0, maximum=10_000)
    lanczos_steps = check_int("lanczos_steps", lanczos_steps, minimum=1, maximum=MAX_LANCZOS_STEPS)
    first_steps = check_int("first_steps", first_steps, minimum=1, maximum=MAX_LANCZOS_STEPS)
    check_allocation("replicas × k × n (the hidden activity of the full data)", 4 * r_ * W.shape[2] * n)
    check_allocation("replicas × batch_size × (d + k) (one step's minibatches)", r_ * b * (d + W.shape[2]))
    grid = np.concatenate([np.geomspace(1, steps, n_records), np.linspace(steps / 2, steps, n_late)])
    rec = np.unique(np.concatenate([[0], np.round(grid).astype(np.int64)]))
    xt = _tensor(X)
    Wt, Ut = _tensor(W), _tensor(U)
    et = torch.from_numpy(eta.copy())[:, None, None]
    streams = replica_streams(seed, range(r_))
    k = W.shape[2]
    # each replica's start vector comes first from its own stream, then its minibatches
    v0 = np.stack([g.standard_normal(2 * d * k) for g in streams])
    vW = torch.from_numpy(np.ascontiguousarray(v0[:, : d * k].reshape(r_, d, k)))
    vU = torch.from_numpy(np.ascontiguousarray(v0[:, d * k :].reshape(r_, k, d)))
    alive = torch.ones(r_, dtype=torch.bool)
    diverged = np.full(r_, -1, dtype=np.int64)
    out = {key: np.full((rec.size, r_), np.nan) for key in ("sharpness", "loss", "top_scale", "edge_ratio")}
    masks = _masks(kinds)
    fast = set(kinds) <= {"linear", "relu"}
    lin = masks.get("linear")
    et_b = et / b
    block = 256
    j = 0
    for t in range(steps + 1):
        if t == rec[j]:
            curv = _Curvature(xt, Wt, Ut, masks)
            lam, vW, vU = _lanczos(curv, vW, vU, first_steps if j == 0 else lanczos_steps)
            hb = curv.per_sample(vW, vU)
            ok = alive.numpy()
            if not np.all(np.isfinite(lam.numpy()[ok])):
                raise ValueError(
                    "edge_of_stability_runs: the Hessian's top eigenvalue left the float64 range "
                    f"at step {t} (X, W0 or U0 too extreme in scale)"
                )
            out["sharpness"][j, ok] = lam.numpy()[ok]
            out["loss"][j, ok] = curv.loss().numpy()[ok]
            out["top_scale"][j, ok] = (Wt * Wt).sum(dim=1).amax(dim=1).numpy()[ok]
            out["edge_ratio"][j, ok] = ((hb * hb).mean(dim=1) / hb.mean(dim=1) ** 2).numpy()[ok]
            j += 1
        if t == steps:
            break
        if t % block == 0:
            idx_blk = torch.from_numpy(np.stack([g.integers(0, n, size=(block, b)) for g in streams], axis=1))
        xbt = xt[idx_blk[t % block]]  # (R, B, d): the rows of each replica's minibatch
        xb = xbt.transpose(1, 2)
        p = Ut @ xb
        if fast:  # linear and ReLU units only: φ' ∈ {0, 1} and φ(p) = p φ'(p)
            dh = (p > 0).to(p.dtype)
            if lin is not None:
                dh = torch.where(lin, 1.0, dh)
            h = p * dh
        else:
            h, dh, _ = _act_all(masks, p)
        r = Wt @ h - xb
        gU = ((Wt.transpose(1, 2) @ r) * dh) @ xbt  # both gradients at the old weights (times B)
        Wt -= et_b * (r @ h.transpose(1, 2))
        Ut -= et_b * gU
        if (t + 1) % CHECK_EVERY == 0 or t + 1 == steps or t + 1 == rec[j]:
            mag = torch.maximum(Wt.abs().amax(dim=(1, 2)), Ut.abs().amax(dim=(1, 2)))
            bad = ~(mag <= DIVERGENCE_LIMIT) & alive  # also catches NaN
            if bool(bad.any()):
                diverged[bad.numpy()] = t + 1
                alive &= ~bad
                Wt[bad] = 0.0  # frozen: zero weights have zero gradients
                Ut[bad] = 0.0
    return EdgeRun(
        steps=rec,
        eta=eta.copy(),
        activation=kinds,
        batch_size=b,
        sharpness=out["sharpness"],
        loss=out["loss"],
        top_scale=out["top_scale"],
        diverged_at=diverged,
        edge_ratio=out["edge_ratio"],
        W_end=Wt.numpy().copy(),
        U_end=Ut.numpy().copy(),
    )


def clopper_pearson(count: int, total: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper–Pearson) confidence interval of a binomial proportion ``count/total``.

    For the fraction of replicas that diverge: with ``0`` of ``n`` the interval is
    ``[0, 1 − ((1 − level)/2)^{1/n}]``.

    Returns
    -------
    low, high : float
    """
    total = check_int("total", total, minimum=1)
    count = check_int("count", count, minimum=0, maximum=total)
    level = check_real("level", level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    from scipy import stats

    a = (1.0 - level) / 2.0
    low = 0.0 if count == 0 else float(stats.beta.ppf(a, count, total - count + 1))
    high = 1.0 if count == total else float(stats.beta.ppf(1.0 - a, count + 1, total - count))
    return low, high


def edge_time(c1: float, lambda1: float, eta: float, kappa: float) -> float:
    """Slow time ``τ*`` at which the Lambert-W law from ``s = 1`` reaches the ceiling of P-Eq. C.81.

    The ceiling ``s*`` solves ``ηλ_1(s* + 1/s*) = κ``; the law ``s²/2 + log s = ½ + c_1τ`` reaches it
    at ``τ* = (s*²/2 + log s* − ½)/c_1``.

    Raises
    ------
    ValueError
        If ``κ/(ηλ_1) < 2`` (no ceiling above the start: the run starts past the edge).
    """
    c1, lambda1 = check_positive("c1", c1), check_positive("lambda1", lambda1)
    eta, kappa = check_positive("eta", eta), check_positive("kappa", kappa)
    kt = kappa / (eta * lambda1)
    if not kt >= 2.0:
        raise ValueError(
            f"kappa / (eta lambda1) = {kt:.4g} < 2: no ceiling exists (eta must be <= kappa/(2 lambda1) "
            f"= {kappa / (2 * lambda1):.4g})"
        )
    s = 0.5 * (kt + np.sqrt((kt - 2.0) * (kt + 2.0)))
    return finite_result("edge_time", float((s * s / 2.0 + np.log(s) - 0.5) / c1))


def edge_sweep(
    X,
    k: int,
    starts: dict,
    *,
    etas,
    batch_sizes,
    horizon: float = 2.0,
    seed=None,
    **options,
) -> dict:
    """Runs of :func:`edge_of_stability_runs` over a grid of learning rates and batch sizes.

    For each ``(B, η)`` every network of ``starts`` (activation → ``(W0, U0)`` stacks) runs in one
    stack for ``horizon × τ*(η, B)`` in slow time, ``τ*`` being the time at which the linear
    network's Lambert-W law reaches the ceiling of P-Eq. C.81 with the data's own mean-square edge
    ``κ = κ_ms(B)`` (:func:`mean_square_edge`, :func:`edge_time`).

    Parameters
    ----------
    X : array_like, shape (n, d)
    k : int
        Hidden width (of the PCA theory giving ``λ_1`` and ``c_1 = C_11``).
    starts : dict
        ``{activation: (W0, U0)}``, each with shapes (R, d, k) and (R, k, d).
    etas, batch_sizes : sequence
    horizon : float
        Run length in units of ``τ*``.
    seed : int, optional
        Configuration ``(B, η)`` number ``i`` runs with seed ``(seed, i)``.
    options
        Passed to :func:`edge_of_stability_runs` (``n_records``, ``lanczos_steps``, ...).

    Returns
    -------
    dict
        ``{(B, η): (EdgeRun, τ*)}``; the replicas of the run are the start stacks in the order of
        ``starts``.
    """
    from .data import pca_theory

    X = check_array("X", X, ndim=2)
    th = pca_theory(X, k)
    horizon = check_positive("horizon", horizon)
    if not isinstance(starts, dict) or not starts:
        raise ValueError("starts must map at least one activation to its (W0, U0) stacks")
    kinds, Ws, Us = [], [], []
    for act, (w0, u0) in starts.items():
        check_choice("starts", act, ACTIVATIONS)
        w0 = check_array(f"starts[{act!r}] W0", w0, ndim=3)
        Ws.append(w0)
        Us.append(check_array(f"starts[{act!r}] U0", u0, ndim=3))
        kinds += [act] * w0.shape[0]
    W0, U0 = np.concatenate(Ws), np.concatenate(Us)
    seed0 = 0 if seed is None else check_int("seed", seed, minimum=0)
    out = {}
    for i, (b, eta) in enumerate((b, e) for b in batch_sizes for e in etas):
        b = check_int("batch_sizes", b, minimum=1)
        eta = check_positive("etas", eta)
        t_star = edge_time(th["c_data"][0], th["lambdas"][0], eta, mean_square_edge(X, b))
        steps = max(1, int(round(horizon * t_star * b / eta**2)))
        run = edge_of_stability_runs(
            X,
            W0,
            U0,
            activations=kinds,
            etas=np.full(len(kinds), eta),
            batch_size=b,
            steps=steps,
            seed=(seed0, i),
            **options,
        )
        out[(b, eta)] = (run, t_star)
    return out
