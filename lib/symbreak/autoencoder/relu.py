"""Sample-level gradients for linear and ReLU autoencoders: per-neuron balance, the residual split and
the population loss (the ReLU part of the sharpness page).

Pages: ``book/autoencoder/index.md``, ``book/autoencoder/sharpness-relu.md``.
"""

from __future__ import annotations

import numpy as np

from ..validation import (
    check_array,
    check_choice,
    check_positive_array,
    finite_result,
)
from ._common import _check_pair

__all__ = ["population_loss", "sample_gradients", "neuron_balance_autograd", "residual_split"]


def sample_gradients(W, U, X, activation: str = "relu"):
    """Minibatch gradients from data points, ``L̂ = (1/2B) Σ_i ‖W φ(U x_i) − x_i‖²``.

    ``∇_W L̂ = R φ(H)ᵀ/B`` and ``∇_U L̂ = [(WᵀR) ⊙ φ'(H)] Xᵀ/B`` with ``H = UX``, ``R = Wφ(H) − X``;
    ``X`` has shape (d, B). Batched over leading axes.
    """
    activation = check_choice("activation", activation, ("linear", "relu"))
    W, U = _check_pair(W, U)
    X = check_array("X", X)
    if X.ndim < 2 or X.shape[-2] != W.shape[-2] or X.shape[-1] == 0:
        raise ValueError(f"X must have shape (..., d, B) with d = {W.shape[-2]} and B >= 1, got {X.shape}")
    b = X.shape[-1]
    H = U @ X
    A = np.maximum(H, 0.0) if activation == "relu" else H
    R = W @ A - X
    back = np.swapaxes(W, -1, -2) @ R
    if activation == "relu":
        back = back * (H > 0)
    return finite_result("sample_gradients", (R @ np.swapaxes(A, -1, -2) / b, back @ np.swapaxes(X, -1, -2) / b))


def neuron_balance_autograd(W, U, x, activation: str = "relu") -> np.ndarray:
    """``⟨∇_{w_i} ℓ, w_i⟩ − ⟨∇_{u_i} ℓ, u_i⟩`` for one example, by autograd (zero by E.4 / E.14).

    ``ℓ = ½‖W φ(Ux) − x‖²``; ``w_i`` is the ``i``-th column of ``W``, ``u_iᵀ`` the ``i``-th row of ``U``.
    Returns one value per hidden unit.
    """
    import torch

    activation = check_choice("activation", activation, ("linear", "relu"))
    W, U = _check_pair(W, U)
    if W.ndim != 2 or U.ndim != 2:
        raise ValueError(f"W and U must be single matrices (d, k) and (k, d) here, got {W.shape} and {U.shape}")
    x = check_array("x", x, shape=(W.shape[0],))
    w = torch.tensor(W, requires_grad=True)
    u = torch.tensor(U, requires_grad=True)
    xt = torch.tensor(x)
    h = u @ xt
    out = w @ (torch.relu(h) if activation == "relu" else h)
    loss = 0.5 * torch.sum((out - xt) ** 2)
    gw, gu = torch.autograd.grad(loss, (w, u))
    return finite_result("neuron_balance_autograd", ((gw * w).sum(0) - (gu * u).sum(1)).detach().numpy())


def residual_split(W, U, X, activation: str = "relu"):
    """Mean squared residual tangent and normal to the decoder image (App. E.1).

    At an input ``x`` the network's output ``g(h(x)) = W φ(Ux)`` moves, for small changes of the
    hidden code ``z = φ(Ux)`` that the encoder can produce, within the span of the decoder columns
    ``w_i`` of the *active* units (all units for the linear network): that span is the tangent
    space of the decoder image at ``g(h(x))``. ``r_∥`` is the projection of the residual
    ``r = g(h(x)) − x`` onto it and ``r_⊥ = r − r_∥`` satisfies ``(∂g/∂z)ᵀ r_⊥ = 0`` on the active
    units, so the encoder gradient sees only ``r_∥``. Returns ``(E‖r_∥‖², E‖r_⊥‖²)`` over the
    columns of ``X`` (shape (d, n)).
    """
    activation = check_choice("activation", activation, ("linear", "relu"))
    W, U = _check_pair(W, U)
    if W.ndim != 2:
        raise ValueError(f"W and U must be single matrices (d, k) and (k, d) here, got {W.shape}")
    X = check_array("X", X, ndim=2)
    if X.shape[0] != W.shape[0] or X.shape[1] == 0:
        raise ValueError(f"X must have shape ({W.shape[0]}, n) with n >= 1, got {X.shape}")
    H = U @ X
    R = W @ (np.maximum(H, 0.0) if activation == "relu" else H) - X
    if activation == "linear":
        par = W @ np.linalg.lstsq(W, R, rcond=None)[0]
    else:
        # the projector onto the span of the active units' columns, W_A W_A⁺, once per activation
        # pattern (inputs share patterns: about 500 patterns among 20,000 inputs at k = 10)
        active = H.T > 0
        _, first, which = np.unique(np.packbits(active, axis=1), axis=0, return_index=True, return_inverse=True)
        Wa = W[None, :, :] * active[first][:, None, :]  # (patterns, d, k): columns of the active units
        P = Wa @ np.linalg.pinv(Wa)
        par = np.einsum("nij,jn->in", P[which.ravel()], R)
    return finite_result(
        "residual_split", (float(np.mean(np.sum(par**2, axis=0))), float(np.mean(np.sum((R - par) ** 2, axis=0))))
    )


def _relu_second_moments(U, lam):
    """``E[h hᵀ]`` for ``h = relu(U x)``, ``x ~ N(0, diag λ)`` (arc-cosine kernel of degree 1)."""
    C = (U * lam) @ np.swapaxes(U, -1, -2)
    sd = np.sqrt(np.clip(np.diagonal(C, axis1=-2, axis2=-1), 0.0, None))
    outer = sd[..., :, None] * sd[..., None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(outer > 0, C / np.where(outer > 0, outer, 1.0), 0.0)
    rho = np.clip(rho, -1.0, 1.0)
    theta = np.arccos(rho)
    return outer / (2.0 * np.pi) * (np.sin(theta) + (np.pi - theta) * rho)


def population_loss(W, U, lambdas, activation: str = "linear"):
    """Population reconstruction loss ``½ E‖W φ(Ux) − x‖²`` for ``x ~ N(0, diag λ)``.

    Linear: ``½ tr[(WU − I)Σ(WU − I)ᵀ]`` (A.5). ReLU: exact, from the arc-cosine kernel
    ``E[relu(z_i) relu(z_j)] = σ_iσ_j (sin θ_ij + (π − θ_ij) cos θ_ij)/(2π)`` and
    ``E[relu(u_i·x) x] = Σu_i/2``. Batched over leading axes of ``W`` (``(..., d, k)``) and ``U``.
    """
    lam = check_positive_array("lambdas", lambdas, ndim=1)
    activation = check_choice("activation", activation, ("linear", "relu"))
    d = lam.size
    W, U = _check_pair(W, U, d=d)
    if activation == "linear":
        M = W @ U - np.eye(d)
        return finite_result("population_loss", 0.5 * np.sum(M * M * lam, axis=(-2, -1)))
    m2 = _relu_second_moments(U, lam)
    wtw = np.swapaxes(W, -1, -2) @ W
    cross = 0.5 * np.sum(np.diagonal(W @ U, axis1=-2, axis2=-1) * lam, axis=-1)
    return finite_result("population_loss", 0.5 * (np.sum(m2 * wtw, axis=(-2, -1)) - 2.0 * cross + lam.sum()))
