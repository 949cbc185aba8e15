"""Sample-level quantities: data draws, per-sample gradients (closed form and autograd), the Monte-
Carlo entropy term.

Pages: ``book/platonic/experiments.md``, ``book/platonic/index.md``.
"""

from __future__ import annotations

import numpy as np

from ..rng import make_rng
from ..validation import (
    MAX_DRAWS,
    check_array,
    check_int,
    finite_result,
)
from .minima import _stack
from .model import EDLN, Task, _check_net, _check_task

__all__ = ["sample_data", "per_sample_gradients", "entropy_term_mc", "autograd_sample_gradients"]

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
