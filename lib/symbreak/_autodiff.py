"""The dense Hessian of a scalar function of a vector by automatic differentiation (PyTorch).

Shared by the chapters' independent checks of closed-form Hessians (the autoencoder chapter's
population loss, the Beyond part's digits autoencoders). Plain ``torch.autograd``: reverse mode over
reverse mode, the Hessian's rows a block at a time (one batched backward pass per block). It gives
the same numbers as ``torch.func.jacrev(torch.func.grad(f))`` without ``torch.func``, whose first
call imports ``torch._dynamo`` (about a second of CPU in every process that uses it); the blocks keep
the batched products in cache (two to three times faster than all rows at once on the Beyond part's
digits).

Extra: ``symbreak[torch]`` (PyTorch).
"""

from __future__ import annotations

import numpy as np

__all__ = ["hessian"]

#: Rows of the Hessian per batched backward pass.
CHUNK = 32


def hessian(fun, theta, *, chunk: int = CHUNK) -> np.ndarray:
    """``∂²f/∂θ∂θᵀ`` at ``theta`` (a 1-D float64 tensor), as a NumPy array (not symmetrised).

    ``fun`` maps a 1-D tensor to a scalar tensor, differentiably twice. Row ``i`` is the gradient of
    ``∂f/∂θ_i``; the rows are computed ``chunk`` at a time.
    """
    import torch

    p = theta.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(fun(p), p, create_graph=True)
    eye = torch.eye(p.numel(), dtype=p.dtype)
    rows = [
        torch.autograd.grad(grad, p, grad_outputs=eye[i : i + chunk], is_grads_batched=True, retain_graph=True)[0]
        for i in range(0, p.numel(), chunk)
    ]
    return torch.cat(rows).detach().numpy()
