"""Nonlinear autoencoders on real data: gradients, training, per-neuron charges, sharpness and the
drift terms of the Lambert-W law.

Pages: ``book/beyond/autoencoders.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine import DivergenceError, record_steps, replica_streams
from ..rng import make_rng
from ..validation import check_allocation, check_array, check_choice, check_int, check_positive, finite_result
from ._common import ACTIVATIONS, DIVERGENCE_LIMIT, _tensor, _torch
from .synthesis import lambert_scale

__all__ = [
    "ae_gradients",
    "init_autoencoder",
    "neuron_charges",
    "AERun",
    "train_autoencoder",
    "ae_sharpness",
    "ae_drift_terms",
    "fit_lambert_rate",
]


# ---------------------------------------------------------------------------------------------
# autoencoders
# ---------------------------------------------------------------------------------------------
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
    X = check_array("X", X, ndim=2)
    n, d = X.shape
    if n == 0:
        raise ValueError("X must hold at least one sample (row)")
    W = check_array("W0", W0, ndim=3)
    U = check_array("U0", U0, ndim=3)
    if W.shape[1] != d or U.shape != (W.shape[0], W.shape[2], d):
        raise ValueError(f"W0 must be (R, {d}, k) and U0 (R, k, {d}), got {W.shape} and {U.shape}")
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
