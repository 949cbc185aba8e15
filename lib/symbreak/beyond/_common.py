"""Shared constants and the lazy torch import of the 'Beyond the theorems' part.

No page calls this module directly; it serves the package's other modules (and holds the
written-out backpropagation of the batched MLP pairs).
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


def _mlp_gradients(ws, x, target, activation):
    """The gradients in the weights ``ws`` (float32 tensors, shapes ``(R, out, in)``) of the
    minibatch loss ``0.5·((f(x) − y)²).sum(-1).mean(-1)`` summed over the ``R`` runs, ``x`` of shape
    ``(R, b, in)``: backpropagation written out, the operations that ``torch.autograd`` runs for
    that loss in the order it runs them (bit for bit its gradients; tested), without recording a
    graph at every step (the step of :func:`symbreak.beyond.alignment.train_pair_grid`)."""
    torch = _torch()
    phi = torch.relu if activation == "relu" else torch.tanh
    hs = [x]
    for w in ws[:-1]:
        hs.append(phi(hs[-1] @ w.transpose(1, 2)))
    # the loss's backward: sum → 0.5· → mean over the b rows (÷ b) → sum over outputs → square (2·)
    delta = (torch.tensor(0.5, dtype=x.dtype) / x.shape[1]) * (2.0 * (hs[-1] @ ws[-1].transpose(1, 2) - target))
    grads = [None] * len(ws)
    for i in range(len(ws) - 1, -1, -1):
        grads[i] = (hs[i].transpose(1, 2) @ delta).transpose(1, 2)  # the matmul's backward for h @ wᵀ
        if i:
            delta = delta @ ws[i]
            if activation == "relu":
                delta = torch.ops.aten.threshold_backward(delta, hs[i], 0.0)
            else:
                delta = torch.ops.aten.tanh_backward(delta, hs[i])
    return grads
