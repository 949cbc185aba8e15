"""Representations on samples, sample-level SGD with activations, and the alignment explorer.

Pages: ``book/platonic/experiments.md``.
"""

from __future__ import annotations

import numpy as np

from ..engine import (
    DivergenceError,
    check_divergence,
    record_steps,
)
from ..rng import make_rng
from ..validation import (
    MAX_DRAWS,
    MAX_STEPS,
    check_array,
    check_int,
    check_positive,
)
from .kernel import kernel_alignment
from .linalg import _t, sqrtm_psd
from .minima import _stack, init_weights
from .model import EDLN, Task, _check_net, example_pair
from .population import _forward

__all__ = ["representations", "train_sgd_samples", "explore_alignment"]


def representations(net: EDLN, weights, x, *, activation=None, scale: float = 1.0) -> list:
    """Hidden representations ``h^2 .. h^D`` of ``N`` latent samples ``x`` (shape ``(N, n)``) for one
    network: a list of ``(N, d_k)`` arrays. With ``activation`` (``"tanh"`` or ``"relu"``) the
    input module is nonlinear, ``h^1 = φ(s M^I Z x)/s`` (see :func:`train_sgd_samples`)."""
    if not isinstance(net, EDLN):
        raise TypeError(f"net must be an EDLN, got {type(net).__name__}")
    ws, sq = _stack(net, weights)
    if not sq:
        raise ValueError("weights must be unstacked (one network) for representations")
    x = check_array("x", x, ndim=2, shape=(None, net.n))
    phi, _ = _activation(activation)
    scale = check_positive("scale", scale)
    h = phi(scale * x @ net.input_map.T) / scale
    out = []
    with np.errstate(over="ignore", invalid="ignore"):
        for w in ws[:-1]:
            h = h @ w[0].T
            out.append(h)
    if not all(np.all(np.isfinite(o)) for o in out):
        raise ValueError("the representations overflow float64: the weights or x are too large")
    return out


def _activation(name):
    if name is None:
        return (lambda z: z), (lambda z: np.ones_like(z))
    if name == "tanh":
        return np.tanh, (lambda z: 1.0 - np.tanh(z) ** 2)
    if name == "relu":
        # shifted ReLU φ(z) = relu(z + 1) − 1: linear near 0 (slope 1), so that small inputs see
        # the linear module, and bent for z < −1
        return (lambda z: np.maximum(z, -1.0)), (lambda z: (z > -1.0).astype(float))
    raise ValueError(f"activation must be None, 'tanh' or 'relu', got {name!r}")


def train_sgd_samples(
    net: EDLN,
    task: Task,
    weights,
    *,
    lr,
    batch_size: int,
    steps: int,
    seed=None,
    activation=None,
    scale: float = 1.0,
    data=None,
    lr_warmup: int = 0,
    n_records: int = 20,
    divergence_limit: float = 1e6,
) -> TrainResult:
    """SGD on explicit samples, for the cases the exact Wishart trick of :func:`train_sgd` does not
    cover: a nonlinear module around the linear block, a finite dataset, widths below ``rank V*``.

    The network is ``f(x) = M^O φ(s W_D ⋯ W_1 h¹)/s`` with ``h¹ = φ(s M^I Z x)/s``: with
    ``activation=None`` the EDLN itself; with ``"tanh"`` or ``"relu"`` (a ReLU shifted to be linear
    near 0) a nonlinear module on each side whose strength is ``scale`` (``s → 0`` recovers the
    linear network; the paper's footnote 12 reads ``M^I`` as such a linearisation). Each step
    draws ``B`` fresh samples ``(x, ε)`` — or, with ``data=(x, y)``, ``B`` rows of that fixed
    dataset — and takes a step on the minibatch loss. Widths below ``rank V*`` are allowed.

    Returns
    -------
    TrainResult
        ``kernels`` are the latent kernels ``P_kᵀP_k`` of the linear block (meaningful as the
        latent kernels only when ``activation is None``); ``loss`` the mean minibatch loss since
        the previous record (NaN at the first record, before any step); ``entropy`` NaN (no closed
        form here).
    """
    _check_net(net)
    if not isinstance(task, Task):
        raise ValueError(f"task must be a Task, got {type(task).__name__}")
    if task.n != net.n or task.m != net.m:
        raise ValueError(f"task (n={task.n}, m={task.m}) and network (n={net.n}, m={net.m}) must match")
    ws, _ = _stack(net, weights)
    ws = [w.copy() for w in ws]
    r = ws[0].shape[0]
    lr = _per_replica("lr", lr, r)
    batch_size = check_int("batch_size", batch_size, minimum=1, maximum=MAX_DRAWS // (r * max(net.n, net.m)))
    steps = check_int("steps", steps, minimum=1, maximum=MAX_STEPS)
    n_records = check_int("n_records", n_records, minimum=1, maximum=steps)
    lr_warmup = check_int("lr_warmup", lr_warmup, minimum=0)
    scale = check_positive("scale", scale)
    phi, dphi = _activation(activation)
    if data is not None:
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise ValueError("data must be a pair (x, y) of arrays")
        dx = check_array("data[0]", data[0], ndim=2, shape=(None, net.n))
        dy = check_array("data[1]", data[1], ndim=2, shape=(dx.shape[0], net.m))
        if dx.shape[0] < batch_size:
            raise ValueError(f"data must hold at least batch_size = {batch_size} samples, got {dx.shape[0]}")
    rng = make_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    lx = np.linalg.cholesky(task.sigma_x)
    le = sqrtm_psd(task.sigma_eps)
    mi, mo = net.input_map, net.m_out
    grid = np.unique(np.linspace(0, steps, n_records + 1).astype(int))
    recs, losses, acc, cnt = [], [], 0.0, 0
    rec = 0
    for t in range(steps + 1):
        if t == grid[rec]:
            with np.errstate(over="ignore", invalid="ignore"):
                p, _ = _forward(net, ws)
                recs.append(np.stack([_t(p[k]) @ p[k] for k in range(1, net.depth)], axis=1))
            losses.append(acc / cnt if cnt else np.full(r, np.nan))
            acc, cnt = 0.0, 0
            check_divergence(
                np.max([np.abs(a).max(axis=(1, 2)) for a in ws], axis=0),
                step=t,
                limit=divergence_limit,
                params=lambda i: dict(lr=float(lr[i]), batch_size=batch_size),
            )
            rec += 1
            if t == steps:
                break
        if data is None:
            x = rng.standard_normal((r, batch_size, net.n)) @ lx.T
            y = x @ task.v_star.T + rng.standard_normal((r, batch_size, net.m)) @ le.T
        else:
            idx = rng.integers(0, dx.shape[0], size=(r, batch_size))
            x, y = dx[idx], dy[idx]
        eta = lr * min((t + 1) / lr_warmup, 1.0) if lr_warmup else lr
        with np.errstate(over="ignore", invalid="ignore"):
            z0 = scale * x @ mi.T
            h = [phi(z0) / scale]
            for w in ws:
                h.append(h[-1] @ _t(w))
            zo = scale * h[-1]
            out = (phi(zo) / scale) @ mo.T
            res = out - y
            acc = acc + (res**2).sum(-1).mean(-1)
            cnt += 1
            g = (2.0 / batch_size) * (res @ mo) * dphi(zo)
            for i in range(net.depth - 1, -1, -1):
                gw = _t(g) @ h[i]
                if i > 0:
                    g = g @ ws[i]
                ws[i] = ws[i] - eta[:, None, None] * gw
    ks = np.stack(recs)
    loss = np.stack(losses)
    return TrainResult(
        grid,
        ks,
        loss,
        np.full(loss.shape, np.nan),
        ws,
        params=dict(
            method="sgd-samples",
            lr=lr,
            batch_size=batch_size,
            steps=steps,
            activation=activation,
            scale=scale,
            finite_data=data is not None,
        ),
    )


def explore_alignment(
    eta,
    noise: float,
    *,
    steps: int = 5000,
    batch_size: int = 4,
    seeds: int = 3,
    seed: int = 70,
    example_seed: int = 2026,
):
    """The explorer of the chapter: train network A of :func:`example_pair` by SGD at learning rate
    ``eta`` and label-noise level ``noise`` (mean variance per output) and report its alignment
    with ``K⋆`` (Σx-weighted, mean over hidden layers).

    Never raises inside its box ``eta ∈ [1e-3, 3e-2]``, ``noise ∈ [1e-2, 2]``: the learning rate
    warms up over a tenth of the run, and a run that still diverges is reported (``diverged``
    true, with a message) instead of raised.

    Parameters
    ----------
    eta : float or 1-D array
        Learning rate(s); several are run as one batched ensemble.
    noise : float
        Label-noise level; the example task has 0.5.
    steps, batch_size, seeds : int
        Run length (≥ 100), batch size (≥ 1), seeds per learning rate (≥ 1).

    Returns
    -------
    dict
        ``eta`` (array), ``steps`` (record steps), ``alignment`` (records × len(eta) × seeds; NaN for
        a diverged learning rate), ``final`` (per ``eta``: mean over seeds of the alignment of the
        kernels averaged over the last quarter; NaN if diverged), ``final_seeds`` (the same per
        ``eta`` and seed, ``len(eta) × seeds``: for a standard error over the seeds), ``diverged``
        (bool per ``eta``), ``message`` (str, empty when nothing diverged).
    """
    etas = np.atleast_1d(np.asarray(eta, dtype=float))
    if etas.ndim != 1 or etas.size == 0:
        raise ValueError(f"eta must be a number or a 1-D array of numbers, got {eta!r}")
    for e in etas:
        check_positive("eta", e)
        if not 1e-3 - 1e-12 <= e <= 3e-2 + 1e-12:
            raise ValueError(f"eta must lie in [0.001, 0.03], got {e!r}")
    noise = check_positive("noise", noise)
    if not 1e-2 - 1e-12 <= noise <= 2.0 + 1e-12:
        raise ValueError(f"noise must lie in [0.01, 2], got {noise!r}")
    steps = check_int("steps", steps, minimum=100)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    seeds = check_int("seeds", seeds, minimum=1)
    task, net_a, _ = example_pair(example_seed)
    k_star = task.platonic_kernel()
    t = task.with_noise(task.sigma_eps * (noise / 0.5))  # the example task has noise 0.5
    w0 = init_weights(net_a, (7, 0), replicas=seeds)
    grid = record_steps(steps, max(steps // 100, 1))

    def run(lrs):
        ws = [np.concatenate([a] * lrs.size) for a in w0]
        res = train_sgd(
            net_a,
            t,
            ws,
            lr=np.repeat(lrs, seeds),
            batch_size=batch_size,
            steps=steps,
            seed=(seed, int(1e4 * noise)),
            lr_warmup=max(steps // 10, 1),
            record_every=max(steps // 100, 1),
        )
        al = kernel_alignment(res.kernels, k_star, metric=task.sigma_x).mean(-1)
        fin = kernel_alignment(res.window_kernels(0.25), k_star, metric=task.sigma_x).mean(-1)
        return al.reshape(al.shape[0], lrs.size, seeds), fin.reshape(lrs.size, seeds)

    try:
        al, fin = run(etas)
        diverged = np.zeros(etas.size, dtype=bool)
        messages = []
    except DivergenceError:  # isolate the learning rates that diverge
        al = np.full((grid.size, etas.size, seeds), np.nan)
        fin = np.full((etas.size, seeds), np.nan)
        diverged = np.zeros(etas.size, dtype=bool)
        messages = []
        for j, e in enumerate(etas):
            try:
                a_j, f_j = run(etas[j : j + 1])
                al[:, j], fin[j] = a_j[:, 0], f_j[0]
            except DivergenceError as err:
                diverged[j] = True
                messages.append(f"SGD diverged at η = {e:g}, noise = {noise:g}: {err}")
    return dict(
        eta=etas,
        steps=grid,
        alignment=al,
        final=fin.mean(1),
        final_seeds=fin,
        diverged=diverged,
        message="\n".join(messages),
    )


# names from later modules of this package, imported last so that the import cycle resolves
from .training import TrainResult, _per_replica, train_sgd  # noqa: E402
