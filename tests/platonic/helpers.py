"""Helpers shared by the tests of ``symbreak.platonic`` (moved from the old test files)."""

import numpy as np
import scipy.optimize

from symbreak import platonic as pl


def _orbit_minimum(net, task, w0, layers):
    """Minimise the exact S over the symmetry orbit (16) of ``w0`` by BFGS over the matrices
    ``T_k`` (one per hidden layer in ``layers``), with the exact gradient: for
    ``W_i' = T_i^{-1} W_i T_{i-1}``, ``∂S/∂T_k = T_k^{-ᵀ} (W_{k+1}'ᵀ ∇_{W_{k+1}'}S − ∇_{W_k'}S W_k'ᵀ)``."""
    k = net.widths[0]

    def transform(v):
        w = w0
        for j, layer in enumerate(layers):
            w = pl.symmetry_transform(w, layer, v[j * k * k : (j + 1) * k * k].reshape(k, k))
        return w

    def fun(v):
        w = transform(v)
        g = pl.entropy_gradient(net, task, w)
        grad = []
        for j, layer in enumerate(layers):
            t = v[j * k * k : (j + 1) * k * k].reshape(k, k)
            inner = w[layer].T @ g[layer] - g[layer - 1] @ w[layer - 1].T
            grad.append(np.linalg.solve(t.T, inner).ravel())
        return pl.entropy_term(net, task, w), np.concatenate(grad)

    x0 = np.concatenate([np.eye(k).ravel()] * len(layers))
    res = scipy.optimize.minimize(fun, x0, jac=True, method="BFGS", options=dict(gtol=1e-10, maxiter=10_000))
    return transform(res.x), res


def _all_pairs(task, ka, kb):
    m = pl.joint_alignment(ka, kb, reference=task.platonic_kernel())
    off = ~np.eye(m.shape[-1], dtype=bool)
    return m[:, off]
