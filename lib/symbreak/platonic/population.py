"""Exact population quantities: forward pass, hidden kernels, the loss, the entropy term S (P-Eq. 14),
gradient moments, Noether charges and their SGD drift, gradient balance, sharpness, exact gradients.

Pages: ``book/platonic/experiments.md``, ``book/platonic/index.md``, ``book/platonic/proof.md``.
"""

from __future__ import annotations

import numpy as np

from ..rng import make_rng
from ..validation import (
    check_array,
    check_int,
    check_positive,
    finite_result,
)
from .linalg import _sym, _t, _tr
from .minima import _stack, _unstack
from .model import EDLN, Task, _check_net

__all__ = [
    "alignment_blocks",
    "noether_charges",
    "charge_drift",
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
]

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

        E\\|\\nabla_{W_i}\\ell\\|^2 = 4\\big[\\tr(\\Gamma_{i+1}\\Omega)\\tr(K_i\\Sigma_x)
        + 2\\tr(\\Gamma_{i+1} A\\Sigma_x K_i \\Sigma_x A^\\top)\\big],

    with ``Γ_{i+1} = Q_i Q_iᵀ``, ``K_i = P_iᵀ P_i``, ``Ω = E[r rᵀ] = A Σx Aᵀ + Σε``. At a global
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
    terms = _entropy_terms(net, task, ws)
    out = terms if per_layer else terms.sum(-1)
    if sq:
        return finite_result("entropy_term", out[0] if per_layer else float(out[0]))
    return finite_result("entropy_term", out)


def _entropy_terms(net, task, ws) -> np.ndarray:
    """The body of :func:`entropy_term` for validated stacked weights: the terms ``S_i``, shape (R, D)."""
    p, q, a, omega = _residual_parts(net, task, ws)
    terms = []
    for i in range(net.depth):
        h, c, t, b, j = _layer_terms(task, p[i], q[i], a, omega)
        terms.append(4.0 * (b * t + 2.0 * _tr(c @ j)))
    return np.stack(terms, axis=-1)


def gradient_moments(net: EDLN, task: Task, weights):
    """Second moments of the per-sample gradients, exact (the matrices of Eqs. 26–31).

    For each layer ``W_i`` returns ``(E[∇ ∇ᵀ], E[∇ᵀ ∇])`` with ``∇ = ∇_{W_i} ℓ``:

    * ``E[∇ ∇ᵀ] = 4 Q_iᵀ (tr(K_i Σx) Ω + 2 A Σx K_i Σx Aᵀ) Q_i`` (``d_out × d_out``; its diagonal
      holds the row norms ``E‖∇_{W_i^{j:}} ℓ‖²``),
    * ``E[∇ᵀ ∇] = 4 P_i (tr(Γ_{i+1} Ω) Σx + 2 Σx Aᵀ Γ_{i+1} A Σx) P_iᵀ`` (``d_in × d_in``; its diagonal holds
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
    the layer term ``S_i = 4[tr(Γ_{i+1}Ω) tr(K_iΣx) + 2‖X_i‖²]`` has the partial derivatives

    * ``∂S_i/∂Q_i = 8 tr(K_iΣx) Ω Q_i + 16 A Σx P_iᵀ X_i``,
    * ``∂S_i/∂P_i = 8 tr(Γ_{i+1}Ω) P_i Σx + 16 X_i Z_i``,
    * ``∂S_i/∂A = Q_i (8 tr(K_iΣx) Z_i + 16 X_iᵀ P_i Σx)``;

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
    return finite_result("entropy_gradient", _unstack(_entropy_gradients(net, task, ws), sq))


def _entropy_gradients(net, task, ws) -> list:
    """The body of :func:`entropy_gradient` for validated stacked weights: ``∇(L + S) − ∇L``."""
    g_s = _entropy_and_loss_gradients(net, task, ws, 1.0)
    g_l = _entropy_and_loss_gradients(net, task, ws, 0.0)
    return [a - b for a, b in zip(g_s, g_l)]
