"""Weights and global minima: initialisation, random and minimum-norm global minima, the Platonic
minimum, the minimal entropy, the symmetry orbit.

Pages: ``book/platonic/experiments.md``, ``book/platonic/index.md``, ``book/platonic/proof.md``.
"""

from __future__ import annotations

import numpy as np

from ..rng import make_rng
from ..validation import (
    check_array,
    check_int,
    check_invertible,
    check_positive,
    check_symmetric_positive_definite,
    finite_result,
)
from .linalg import sqrtm_psd
from .model import EDLN, Task, _check_net

__all__ = [
    "init_weights",
    "random_global_minimum",
    "platonic_minimum",
    "min_norm_minimum",
    "minimal_entropy",
    "symmetry_transform",
    "minimize_entropy_on_orbit",
]

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
    return finite_result("symmetry_transform", _symmetry_transform(w, k, T))


def _symmetry_transform(w: list, k: int, T) -> list:
    """The body of :func:`symmetry_transform` (unvalidated): ``W_k → W_k T``, ``W_{k−1} → T⁻¹ W_{k−1}``
    in a new list (the arrays it does not touch are the input's)."""
    w = list(w)
    w[k] = w[k] @ T
    w[k - 1] = np.linalg.solve(T, w[k - 1])
    return w


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
        # symmetry_transform's operations, without its validation at every evaluation of BFGS (a
        # third of the search's time): a singular T_k fails np.linalg.solve, a non-finite point below;
        # a nearly singular trial T_k gives a huge S, which the line search rejects (the point
        # returned is checked as symmetry_transform checks it)
        w = w0
        for j, k in enumerate(layers):
            w = _symmetry_transform(w, k, v[offs[j] : offs[j + 1]].reshape(sizes[j], sizes[j]))
        return w

    def fun(v, w0):
        # entropy_term and entropy_gradient, without their validation at every evaluation
        w = transform(w0, v)
        w1 = [a[None] for a in w]
        s_val = float(_entropy_terms(net, task, w1).sum())
        g = [a[0] for a in _entropy_gradients(net, task, w1)]
        grad = []
        for j, k in enumerate(layers):
            t = v[offs[j] : offs[j + 1]].reshape(sizes[j], sizes[j])
            grad.append(np.linalg.solve(t.T, w[k].T @ g[k] - g[k - 1] @ w[k - 1].T).ravel())
        grad = np.concatenate(grad)
        if not (np.isfinite(s_val) and np.all(np.isfinite(grad))):
            raise ValueError("minimize_entropy_on_orbit: S or its gradient left the float64 range on the orbit")
        return s_val, grad

    w = [a[0] for a in ws]
    nit = 0
    for _ in range(restarts + 1):
        res = scipy.optimize.minimize(
            fun, x0, args=(w,), jac=True, method="BFGS", options=dict(gtol=gtol, maxiter=maxiter)
        )
        for j in range(len(layers)):  # the point reached: every T_k invertible, as symmetry_transform requires
            check_invertible("T", res.x[offs[j] : offs[j + 1]].reshape(sizes[j], sizes[j]))
        w = finite_result(
            "minimize_entropy_on_orbit", [a.copy() for a in transform(w, res.x)]
        )  # not views of the input
        nit += res.nit
    res.nit = nit
    return w, res


# names from later modules of this package, imported last so that the import cycle resolves
from .population import _entropy_gradients, _entropy_terms  # noqa: E402
