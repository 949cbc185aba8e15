"""Controls and curvature: gradient flow, the loss Hessian, sharpness and trace at minima.

Pages: ``book/platonic/experiments.md``.
"""

from __future__ import annotations

import numpy as np

from ..validation import (
    check_int,
    check_positive,
    finite_result,
    solve_ivp_bounded,
)
from .linalg import _sym, _t, _tr
from .minima import _stack
from .model import EDLN, Task, _check_net
from .population import _entropy_and_loss_gradients, _forward

__all__ = ["gradient_flow", "flow_to_minimum", "loss_hessian", "sharpness_and_trace", "hessian_trace_at_minimum"]

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


#: The complex step of :func:`_flow_jacobian`.
_CSTEP = 1e-30


def _flow_jacobian(net, task, y, r, shapes) -> np.ndarray:
    """The Jacobian of gradient flow's right-hand side ``−∇L`` at the flat state ``y`` of ``r``
    replicas: block-diagonal, each block ``−∇²L`` of one replica, by the complex step
    ``∂g_i/∂w_j = Im g_i(w + i h e_j)/h`` (``h`` = :data:`_CSTEP`; Squire & Trapp 1998). ``∇L`` is a
    polynomial in the weights, so there is no truncation error and no cancellation: the Hessian is
    exact to rounding, from one batched gradient of the ``p`` directions (every replica at once),
    where LSODA's own finite differences call the right-hand side once per parameter."""
    w = y.reshape(r, -1)
    p = w.shape[1]
    z = np.repeat(w[None].astype(complex), p, axis=0)  # (direction j, replica, parameter)
    z[np.arange(p), :, np.arange(p)] += 1j * _CSTEP
    g = _flatten(_entropy_and_loss_gradients(net, task, _unflatten(z.reshape(p * r, p), shapes), 0.0))
    blocks = -g.imag.reshape(p, r, p) / _CSTEP  # blocks[j, s, i] = −∂g_i/∂w_j of replica s
    jac = np.zeros((r * p, r * p))
    for s in range(r):
        jac[s * p : (s + 1) * p, s * p : (s + 1) * p] = blocks[:, s, :].T
    return jac


#: The longest horizon :func:`gradient_flow` accepts (``t = 1e10`` costs LSODA ~730 evaluations of the
#: example pair's vector field and ~40 Hessians for network A; ``1e20`` exhausted the 100,000-evaluation
#: work bound after ~24 s of CPU).
_FLOW_MAX_T = 1e10


def gradient_flow(
    net: EDLN, task: Task, weights, *, t_end: float, n_records: int = 50, rtol: float = 1e-7, atol: float = 1e-9
) -> TrainResult:
    """Gradient flow ``dW_i/dt = −∇_{W_i} L`` solved as an ODE (LSODA, adaptive and stiff-aware; its
    Jacobian, the Hessian ``−∇²L``, is exact to rounding: one batched complex-step gradient, where
    LSODA's own finite differences would evaluate the vector field once per parameter).

    The continuous-time control of the chapter: no learning rate, hence no edge of stability and
    no O(lr²) drift of the charges ``W_{k+1}ᵀW_{k+1} − W_kW_kᵀ`` (they are conserved up to the
    solver's tolerance). Replicas are integrated as one system.

    Parameters
    ----------
    net, task, weights :
        As in :func:`train_gd`.
    t_end : float
        Final time, in ``(0, 1e10]``; gradient descent with rate ``lr`` for ``t`` steps covers time
        ``lr·t``. (LSODA reaches ``t = 1e10`` in about a thousand evaluations; beyond ``1e12`` or so its
        steps stop growing and the work bound would be spent after seconds, so a longer horizon is
        refused at once.)
    n_records : int
        Number of equally spaced record times after ``0`` (≥ 1).
    rtol, atol : float
        Solver tolerances (> 0).

    Returns
    -------
    TrainResult
        ``steps`` holds the record *times* (floats), ``params['method'] == 'flow'``; ``params`` also
        holds the evaluations of the vector field ``nfev`` and of its Jacobian ``njev``.
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
    nfev, njev = [0], [0]

    def counted(t, y):
        nfev[0] += 1
        return rhs(t, y)

    def jac(_t, y):
        njev[0] += 1
        with np.errstate(over="ignore", invalid="ignore"):
            return _flow_jacobian(net, task, y, r, shapes)

    # the same LSODA steps as scipy's solve_ivp, with a work bound and a check of every state
    ys = solve_ivp_bounded(
        counted,
        t_end,
        _flatten(ws).ravel(),
        times,
        method="LSODA",
        rtol=rtol,
        atol=atol,
        what="gradient_flow",
        jac=jac,
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
        params=dict(method="flow", t_end=t_end, nfev=int(nfev[0]), njev=int(njev[0]), rtol=rtol, atol=atol),
    )


def flow_to_minimum(
    net: EDLN, task: Task, weights, *, t_end: float, tol: float = 1e-8, doublings: int = 3, n_records: int = 40
) -> TrainResult:
    """Gradient flow run to a stated convergence criterion instead of a fixed horizon.

    Each replica is integrated as its own LSODA system (:func:`gradient_flow`), so that one slow
    replica does not set the steps of all, to the horizon ``t_end·2^j`` with the smallest
    ``j ≤ doublings`` at which every replica's excess loss ``L − tr Σε`` (the minimal population
    loss of the chapter's EDLN, P-Eq. 4) is at most ``tol``. How long the flow takes to reach a
    global minimum depends on the initialisation and on the task, so a fixed horizon stops some
    draws early.

    Parameters
    ----------
    net, task, weights :
        As in :func:`gradient_flow` (``weights`` stacked ``(R, d_out, d_in)`` or single).
    t_end : float
        First horizon (> 0); doubled until the criterion holds.
    tol : float
        Largest excess loss ``L − tr Σε`` accepted at the end (> 0).
    doublings : int
        Most doublings of the horizon (0 to 30); the last horizon is returned whether or not the
        criterion holds (the caller checks ``loss[-1]``).
    n_records : int
        Records per replica (1 to 10⁶).

    Returns
    -------
    TrainResult
        The replicas' records side by side (``steps`` are the record times of the last horizon);
        ``params`` holds ``method='flow'``, the horizon reached ``t_end``, the number of
        doublings ``doublings`` and the totals ``nfev`` and ``njev``.

    Examples
    --------
    >>> from symbreak import platonic as pl
    >>> task = pl.random_task(1, n=3, m=3, noise=0.5)
    >>> net = pl.random_edln(2, 3, 3, (3,))
    >>> res = pl.flow_to_minimum(net, task, pl.init_weights(net, 3, replicas=2), t_end=20.0)
    >>> bool((res.loss[-1] - np.trace(task.sigma_eps)).max() <= 1e-8)
    True
    """
    _check_net(net)
    net.check_task(task)
    ws, sq = _stack(net, weights)
    t_end = check_positive("t_end", t_end)
    tol = check_positive("tol", tol)
    doublings = check_int("doublings", doublings, minimum=0, maximum=30)
    n_records = check_int("n_records", n_records, minimum=1, maximum=10**6)
    tr_eps = float(np.trace(task.sigma_eps))
    for j in range(doublings + 1):
        horizon = t_end * 2**j
        runs = [
            gradient_flow(net, task, [w[r : r + 1] for w in ws], t_end=horizon, n_records=n_records)
            for r in range(ws[0].shape[0])
        ]
        if max(run.loss[-1, 0] for run in runs) - tr_eps <= tol:
            break
    return TrainResult(
        runs[0].steps,
        *(np.concatenate([getattr(x, a) for x in runs], axis=1) for a in ("kernels", "loss", "entropy")),
        [np.concatenate([x.weights[k] for x in runs]) for k in range(net.depth)],
        params=dict(
            method="flow",
            t_end=horizon,
            doublings=j,
            nfev=sum(x.params["nfev"] for x in runs),
            njev=sum(x.params["njev"] for x in runs),
        ),
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


# names from later modules of this package, imported last so that the import cycle resolves
from .training import TrainResult, _record  # noqa: E402
