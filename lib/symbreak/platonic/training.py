"""The Platonic trainers on the shared engine: gradient descent on L + γS and online SGD (compiled
steps), and their results.

Pages: ``book/platonic/experiments.md``, ``book/platonic/index.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..engine import (
    Configuration,
    WishartBlockSampler,
    _aligned_zeros,
    _compiled,
    n_workers,
    record_steps,
    run_ensemble,
)
from ..validation import (
    MAX_STEPS,
    check_int,
    check_positive,
    check_square,
)
from .kernel import kernel_alignment
from .linalg import _t, _tr
from .minima import _stack
from .model import EDLN, Task, _check_net
from .population import _entropy_and_loss_gradients, _layer_terms, _minibatch_gradient, _residual_parts, hidden_kernels

__all__ = ["TrainResult", "converge_entropic", "train_gd", "train_sgd"]

# ----------------------------------------------------------------------------------------------
# Trainers
# ----------------------------------------------------------------------------------------------


@dataclass
class TrainResult:
    """What a trainer records.

    Attributes
    ----------
    steps : numpy.ndarray, shape (T,)
        Recorded steps (``0`` is the initialisation).
    kernels : numpy.ndarray, shape (T, R, D-1, n, n)
        Hidden-layer kernels ``P_kᵀ P_k`` at the recorded steps.
    loss : numpy.ndarray, shape (T, R)
        Exact population loss ``L``.
    entropy : numpy.ndarray, shape (T, R)
        Exact entropic term ``S``.
    weights : list of numpy.ndarray
        Final weights, stacked ``(R, d_out, d_in)``.
    params : dict
        The hyper-parameters of the run.
    """

    steps: np.ndarray
    kernels: np.ndarray
    loss: np.ndarray
    entropy: np.ndarray
    weights: list
    params: dict = field(default_factory=dict)

    def window_kernels(self, fraction: float = 0.25) -> np.ndarray:
        """Kernels averaged over the records in the last ``fraction`` of the run (the
        initialisation excluded), shape ``(R, D-1, n, n)``. Averaging removes the O(η) fluctuations of SGD around its
        stationary state; ``fraction`` tiny gives the last recorded kernels."""
        fraction = check_positive("fraction", fraction)
        if fraction > 1:
            raise ValueError(f"fraction must lie in (0, 1], got {fraction!r}")
        start = self.steps[-1] * (1.0 - fraction)
        sel = (self.steps >= start) & (self.steps > 0)
        return self.kernels[sel].mean(0)

    def alignment_deficit(self, reference) -> np.ndarray:
        """``1 − alignment`` of the hidden-layer kernels with ``reference`` (e.g. ``K⋆``), averaged
        over hidden layers and replicas, at each record: shape ``(T,)``."""
        reference = check_square("reference", reference, size=self.kernels.shape[-1])
        return 1.0 - kernel_alignment(self.kernels, reference).mean(axis=(1, 2))

    def slow_time(self, rate: float, power: int = 1) -> np.ndarray:
        """The slow time at each record, ``τ_t = rate · Σ_{s<t} w_s^power``, where ``w_s`` is the
        learning-rate warm-up factor ``min((s+1)/lr_warmup, 1)`` of step ``s`` (1 without warm-up).

        ``power = 2`` with ``rate = η²/B`` is SGD's slow time (its charge drift scales as the
        squared learning rate); ``power = 1`` with ``rate = 4γ·lr`` is that of gradient descent on
        ``L + γS`` (its drift is linear in the learning rate)."""
        rate = check_positive("rate", rate)
        power = check_int("power", power, minimum=1, maximum=2)
        warm = int(self.params.get("lr_warmup", 0) or 0)
        t = np.arange(int(self.steps[-1]))
        factor = np.minimum((t + 1) / warm, 1.0) if warm else np.ones(t.size)
        return rate * np.concatenate([[0.0], np.cumsum(factor**power)])[self.steps]


def _per_replica(name, value, r, *, positive=True):
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = np.full(r, float(arr))
    if arr.shape != (r,):
        raise ValueError(
            f"{name} must be a number or an array of shape ({r},) (one per replica), got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or (positive and np.any(arr <= 0)):
        rng = "(0, inf)" if positive else "[0, inf)"
        raise ValueError(f"{name} must lie in {rng}")
    return arr


#: Online SGD of :class:`_PlatonicModel` in compiled blocks (False: the batched NumPy step, the reference).
_COMPILED_SGD = True
#: Whether the compiled SGD step draws each minibatch's normals itself from the replicas' SFC64
#: streams (False: the block's normals first, by :meth:`symbreak.engine.WishartBlockSampler.points`;
#: the same numbers either way).
_LANE_DRAWS = True


def _record(net, task, ws):
    p, q, a, omega = _residual_parts(net, task, ws)
    ks = np.stack([_t(p[k]) @ p[k] for k in range(1, net.depth)], axis=1)
    loss = _tr(omega)
    s = 0.0
    for i in range(net.depth):
        h, c, t, b, j = _layer_terms(task, p[i], q[i], a, omega)
        s = s + 4.0 * (b * t + 2.0 * _tr(c @ j))
    return ks, loss, s


def _common(net, task, weights, steps, record_every):
    net.check_task(task)
    ws, _ = _stack(net, weights)
    steps = check_int("steps", steps, minimum=1, maximum=MAX_STEPS)
    record_every = check_int("record_every", record_every, minimum=1)
    return [w.copy() for w in ws], steps, record_every


#: Steps between two divergence checks of a Platonic run (one call of the compiled step each; a
#: check every 8 steps cost ~20% of a two-replica run). The trajectories do not depend on it.
_CHECK_EVERY = 64

#: Full-batch gradient descent of :class:`_PlatonicModel` in compiled blocks (False: the batched NumPy
#: step of :func:`symbreak.platonic.population._entropy_and_loss_gradients`, the reference).
_COMPILED_GD = True
#: From this many replica-steps on (about 0.1 s of the compiled step), train_gd splits its replicas over
#: the cores by default.
_GD_THREADED_WORK = 20_000


def _edln_gd_block(
    t0, t1, step0, W, offs, dims, MI, MO, V, SX, SE, lr, wd, use_wd, warm, g0, dec, gw, use_s
):  # pragma: no cover
    """Steps ``t0 … t1 − 1`` of full-batch gradient descent on ``L + γ S + λ Σ‖W_i‖²`` for every
    replica of an EDLN, compiled (numba, ``nogil``): the update of :meth:`_PlatonicModel.step` with
    ``∇(L + γS)`` of :func:`symbreak.platonic.population._entropy_and_loss_gradients` (P-Eq. 14's
    ``S``, reverse mode by hand), operation for operation, each small product summed in the order of
    its inner index (BLAS may sum in another order): the numbers agree with the NumPy path to rounding.

    ``W`` (R, Σ d_i d_{i−1}) the replicas' weights, layer ``i`` row-major from ``offs[i]``;
    ``dims = (n, d_1, …, d_{D−1}, m)``; ``MI`` the input map ``M^I Z``, ``MO`` the output map, ``V``
    the target ``V*``, ``SX``, ``SE`` the covariances ``Σx``, ``Σε``; ``lr``, ``wd``, ``g0`` (γ),
    ``dec`` (γ's decay per step) one per replica; ``warm`` the learning-rate warm-up and ``gw`` the
    γ warm-up in steps (0: none), ``use_s`` whether any γ is non-zero, ``step0`` the global step of
    ``t0``.
    """
    depth = dims.size - 1
    n = dims[0]
    m = dims[depth]
    big = 0
    for i in range(depth + 1):
        big = max(big, dims[i])
    nw = W.shape[1]
    P = np.zeros((depth + 1, big, n))
    Q = np.zeros((depth, m, big))
    PB = np.zeros((depth, big, n))
    QB = np.zeros((depth, m, big))
    A = np.empty((m, n))
    ASX = np.empty((m, n))
    AB = np.empty((m, n))
    ASB = np.empty((m, n))
    OM = np.empty((m, m))
    PS = np.empty((big, n))
    Z = np.empty((big, n))
    X = np.empty((big, big))
    PTX = np.empty((n, big))
    Y = np.empty((big, n))
    OQ = np.empty((m, big))
    T = np.empty((big, n))
    G = np.empty(nw)
    for i in range(n):
        for j in range(n):
            P[0, i, j] = MI[i, j]
    for i in range(m):
        for j in range(m):
            Q[depth - 1, i, j] = MO[i, j]
    for r in range(W.shape[0]):
        Wr = W[r]
        for t in range(t0, t1):
            step = step0 + t - t0
            eta = lr[r] * ((step + 1) / warm) if (warm > 0 and step < warm) else lr[r]
            gamma = 0.0
            if use_s:
                ramp = min(max((step - gw) / gw, 0.0), 1.0) if gw > 0 else 1.0
                gamma = ramp * (g0[r] * dec[r] ** float(max(step - 2 * gw, 0)))
            # prefix maps P_l = W_l P_{l-1} (dims[l] × n), suffix maps Q_l = Q_{l+1} W_{l+1} (m × dims[l+1])
            for lay in range(depth):
                o, dout, din = offs[lay], dims[lay + 1], dims[lay]
                for i in range(dout):
                    for j in range(n):
                        s = 0.0
                        for k in range(din):
                            s += Wr[o + i * din + k] * P[lay, k, j]
                        P[lay + 1, i, j] = s
            for lay in range(depth - 2, -1, -1):
                o, dout, din = offs[lay + 1], dims[lay + 2], dims[lay + 1]
                for i in range(m):
                    for j in range(din):
                        s = 0.0
                        for k in range(dout):
                            s += Q[lay + 1, i, k] * Wr[o + k * din + j]
                        Q[lay, i, j] = s
            # A = M^O P_D − V*, A Σx, Ā = 2 A Σx
            for i in range(m):
                for j in range(n):
                    s = 0.0
                    for k in range(m):
                        s += MO[i, k] * P[depth, k, j]
                    A[i, j] = s - V[i, j]
            for i in range(m):
                for j in range(n):
                    s = 0.0
                    for k in range(n):
                        s += A[i, k] * SX[k, j]
                    ASX[i, j] = s
                    AB[i, j] = 2.0 * s
            if gamma != 0.0:
                # Ω = A Σx Aᵀ + Σε
                for i in range(m):
                    for j in range(m):
                        s = 0.0
                        for k in range(n):
                            s += ASX[i, k] * A[j, k]
                        OM[i, j] = s + SE[i, j]
                for i in range(m):
                    for j in range(n):
                        ASB[i, j] = 0.0
                for lay in range(depth):
                    di, do = dims[lay], dims[lay + 1]
                    tt = 0.0  # t = tr(K_i Σx) = Σ (P_i Σx) ∘ P_i
                    for i in range(di):
                        for j in range(n):
                            s = 0.0
                            for k in range(n):
                                s += P[lay, i, k] * SX[k, j]
                            PS[i, j] = s
                            tt += s * P[lay, i, j]
                    for i in range(do):  # Z = Q_iᵀ A Σx
                        for j in range(n):
                            s = 0.0
                            for k in range(m):
                                s += Q[lay, k, i] * ASX[k, j]
                            Z[i, j] = s
                    for i in range(di):  # X = P_i Zᵀ
                        for j in range(do):
                            s = 0.0
                            for k in range(n):
                                s += P[lay, i, k] * Z[j, k]
                            X[i, j] = s
                    for i in range(m):  # Ω Q_i
                        for j in range(do):
                            s = 0.0
                            for k in range(m):
                                s += OM[i, k] * Q[lay, k, j]
                            OQ[i, j] = s
                    if lay <= depth - 2:  # Q̄_i = 8 t Ω Q_i + 16 A Σx (P_iᵀ X)
                        for i in range(n):
                            for j in range(do):
                                s = 0.0
                                for k in range(di):
                                    s += P[lay, k, i] * X[k, j]
                                PTX[i, j] = s
                        for i in range(m):
                            for j in range(do):
                                s = 0.0
                                for k in range(n):
                                    s += ASX[i, k] * PTX[k, j]
                                QB[lay, i, j] = (8.0 * tt) * OQ[i, j] + 16.0 * s
                    if lay >= 1:  # P̄_i = 8 b P_i Σx + 16 X Z, b = tr(Γ_{i+1} Ω)
                        b = 0.0
                        for i in range(m):
                            for j in range(do):
                                b += Q[lay, i, j] * OQ[i, j]
                        for i in range(di):
                            for j in range(n):
                                s = 0.0
                                for k in range(do):
                                    s += X[i, k] * Z[k, j]
                                PB[lay, i, j] = (8.0 * b) * PS[i, j] + 16.0 * s
                    for i in range(do):  # Y = 8 t Z + 16 Xᵀ P_i Σx
                        for j in range(n):
                            s = 0.0
                            for k in range(di):
                                s += X[k, i] * PS[k, j]
                            Y[i, j] = (8.0 * tt) * Z[i, j] + 16.0 * s
                    for i in range(m):  # Ā_S += Q_i Y
                        for j in range(n):
                            s = 0.0
                            for k in range(do):
                                s += Q[lay, i, k] * Y[k, j]
                            ASB[i, j] = ASB[i, j] + s
                for lay in range(depth - 2, 0, -1):  # P[i] feeds P[i+1] = W_i P[i]
                    o, dout, din = offs[lay], dims[lay + 1], dims[lay]
                    for i in range(din):
                        for j in range(n):
                            s = 0.0
                            for k in range(dout):
                                s += Wr[o + k * din + i] * PB[lay + 1, k, j]
                            PB[lay, i, j] = PB[lay, i, j] + s
                for lay in range(1, depth - 1):  # Q[i] feeds Q[i-1] = Q[i] W_i
                    o, dout, din = offs[lay], dims[lay + 1], dims[lay]
                    for i in range(m):
                        for j in range(dout):
                            s = 0.0
                            for k in range(din):
                                s += QB[lay - 1, i, k] * Wr[o + j * din + k]
                            QB[lay, i, j] = QB[lay, i, j] + s
                for i in range(m):
                    for j in range(n):
                        AB[i, j] = AB[i, j] + gamma * ASB[i, j]
            # every layer's gradient (Q_iᵀ Ā) P_iᵀ + γ (P̄_{i+1} P_iᵀ + Q_iᵀ Q̄_{i−1}) from the old weights
            for lay in range(depth):
                o, dout, din = offs[lay], dims[lay + 1], dims[lay]
                for i in range(dout):
                    for j in range(n):
                        s = 0.0
                        for k in range(m):
                            s += Q[lay, k, i] * AB[k, j]
                        T[i, j] = s
                for i in range(dout):
                    for j in range(din):
                        s = 0.0
                        for k in range(n):
                            s += T[i, k] * P[lay, j, k]
                        if gamma != 0.0:
                            gi = 0.0
                            if lay + 1 <= depth - 1:
                                s2 = 0.0
                                for k in range(n):
                                    s2 += PB[lay + 1, i, k] * P[lay, j, k]
                                gi = gi + s2
                            if lay >= 1:
                                s2 = 0.0
                                for k in range(m):
                                    s2 += Q[lay, k, i] * QB[lay - 1, k, j]
                                gi = gi + s2
                            s = s + gamma * gi
                        x = o + i * din + j
                        if use_wd:
                            s = s + (2.0 * wd[r]) * Wr[x]
                        G[x] = s
            for x in range(nw):
                Wr[x] = Wr[x] - eta * G[x]


class _PlatonicModel:
    """A batch of EDLN replicas for :func:`symbreak.engine.run_ensemble`: online SGD (Wishart
    minibatch moments) or full-batch gradient descent on ``L + γ S + λ Σ‖W_i‖²``.

    Online SGD takes its steps in compiled blocks (:func:`symbreak._pl_lanes._edln_sgd_lanes`, one call per block of
    steps for the whole chunk, without the GIL) unless ``_COMPILED_SGD`` is false, and gradient
    descent likewise (:func:`_edln_gd_block`) unless ``_COMPILED_GD`` is false: then one batched
    NumPy step at a time (the reference the tests compare with)."""

    def __init__(
        self,
        reps,
        streams,
        net,
        task,
        ws,
        *,
        lr,
        wd,
        lr_warmup,
        sgd,
        batch_size=None,
        gamma=None,
        decay=None,
        gamma_warmup=0,
        dtype=np.float64,
    ):
        self.net, self.task, self.sgd = net, task, sgd
        self.dtype = np.dtype(dtype)
        self.w = [a[reps].copy() for a in ws]
        self.lr, self.wd, self.lr_warmup = lr[reps], wd[reps], lr_warmup
        self.lr3, self.wd3 = self.lr[:, None, None], self.wd[:, None, None]
        self.use_wd = bool(np.any(self.wd != 0))
        self.streams = list(streams)
        if sgd:
            self.sampler = WishartBlockSampler(
                task.data_factor(), np.full(len(reps), batch_size), dtype=self.dtype, max_steps=64
            )
            self.fused = _COMPILED_SGD or self.dtype != np.float64  # (float32: the compiled step only)
            if self.fused:
                self._fuse()
        else:
            self.g0, self.dec, self.gamma_warmup = gamma[reps], decay[reps], gamma_warmup
            self.use_s = bool(np.any(self.g0 != 0))
            self.fused = _COMPILED_GD and self.dtype == np.float64
            if self.fused:
                self._fuse_gd()

    def _fuse(self):
        """Move the weights into one flat array per replica (``self.w`` become views of it) and
        take the steps by :func:`symbreak._pl_lanes._edln_sgd_lanes`."""
        net, dt = self.net, self.dtype
        offs, dims = self._flatten()
        flat = self.flat
        big, n, m, depth = int(dims.max()), net.n, net.m, net.depth
        self.consts = (offs, dims, np.ascontiguousarray(net.input_map, dt), np.ascontiguousarray(net.m_out, dt),
                       np.ascontiguousarray(self.task.v_star, dt), np.ascontiguousarray(self.lr, dt),
                       np.ascontiguousarray(self.wd, dt), self.use_wd, int(self.lr_warmup))  # fmt: skip
        self.points = self.sampler.points_only  # B < n + m: the kernel forms the moments from the points
        from .._pl_lanes import _AHEAD, _LANES, _edln_sgd_lanes  # (imports numba)

        g, d, nb = _LANES[dt.name], n + m, int(self.sampler.batch_sizes[0]) if self.points else 1
        self._none4, self._none2, self._none1 = np.zeros((1, 1, 1, 1), dt), np.zeros((1, 1), dt), np.zeros(1, dt)
        e = lambda *shape: _aligned_zeros(shape, dt)  # noqa: E731
        self.scratch = (e(depth + 1, big, n, g), e(depth, m, big, g), e(m, n, g), e(m, n, g), e(big, n, g),
                        e(flat.shape[1], g), e(_AHEAD, d, n, g), e(_AHEAD, d, nb, g), e(d, nb, g), e(_AHEAD, g),
                        e(g), e(g))  # fmt: skip
        self._lnz, self._lnz0 = None, (np.zeros(2, np.int64), np.zeros(1, np.int64))
        # SFC64 streams (always, from replica_streams): the compiled step draws the normals itself
        self._noaddr = np.zeros(0, np.int64)
        self._zaddr = self._noaddr
        if self.points and _LANE_DRAWS:
            from .. import _sfc64

            addr = [_sfc64.state_address(g) for g in self.streams]
            if all(a is not None for a in addr):
                self._zaddr = np.array(addr, np.int64)
        self.kernel = _compiled(_edln_sgd_lanes)
        self.steps = self._steps

    def _flatten(self):
        """Move the weights into one flat array per replica (``self.w`` become views of it); return
        the layers' offsets and ``dims = (n, d_1, …, d_{D−1}, m)``."""
        net, r = self.net, len(self.w[0])
        shapes = net.shapes
        offs = np.concatenate([[0], np.cumsum([a * b for a, b in shapes])]).astype(np.int64)
        flat = np.empty((r, int(offs[-1])), self.dtype)
        for i, a in enumerate(self.w):
            flat[:, offs[i] : offs[i + 1]] = a.reshape(r, -1)
        self.flat = flat
        self.w = [flat[:, offs[i] : offs[i + 1]].reshape(r, *shapes[i]) for i in range(net.depth)]
        return offs[:-1].copy(), np.array((net.n,) + net.widths + (net.m,), dtype=np.int64)

    def _fuse_gd(self):
        """Take the gradient-descent steps by :func:`_edln_gd_block` (one call per block of steps)."""
        offs, dims = self._flatten()
        c = lambda a: np.ascontiguousarray(a, np.float64)  # noqa: E731
        net, task = self.net, self.task
        self.gd_consts = (offs, dims, c(net.input_map), c(net.m_out), c(task.v_star), c(task.sigma_x),
                          c(task.sigma_eps), c(self.lr), c(self.wd), self.use_wd, int(self.lr_warmup),
                          c(self.g0), c(self.dec), int(self.gamma_warmup), self.use_s)  # fmt: skip
        self.kernel = _compiled(_edln_gd_block)
        self.steps = self._gd_steps

    def _gd_steps(self, _noise, t0, t1, step):
        self.kernel(t0, t1, step, self.flat, *self.gd_consts)

    def _steps(self, noise, t0, t1, step):
        if self.points:  # the block's normals (or the streams' states), the factor and c_r / B
            x, lf, cs = noise
            s, zaddr = self._none4, self._zaddr
            if x is None:
                x = self._none4
            if self._lnz is None:  # the factor's nonzero entries, row by row (CSR)
                nz = np.asarray(lf) != 0
                self._lnz = (np.concatenate([[0], np.cumsum(nz.sum(axis=1))]).astype(np.int64),
                             np.nonzero(nz)[1].astype(np.int64))  # fmt: skip
            lnz = self._lnz
        else:  # (R, steps, d, d): the sampler's own layout
            s, (x, lf, cs) = noise.transpose(1, 0, 2, 3), (self._none4, self._none2, self._none1)
            lnz, zaddr = self._lnz0, self._noaddr
        self.kernel(s, x, zaddr, lf, *lnz, cs, self.points, t0, t1, self.flat, *self.consts, step, *self.scratch)

    def draw(self, m):
        if not self.sgd:
            return None
        if self.fused and self.points:
            if self._zaddr.size:  # the compiled step draws the normals from the streams
                return (None, *self.sampler._point_constants())
            return self.sampler.points(self.streams, m)
        return self.sampler.draw(self.streams, m)

    def step(self, noise, t, step):
        if self.lr_warmup and step < self.lr_warmup:
            self.lr3 = self.lr[:, None, None] * ((step + 1) / self.lr_warmup)
        w = self.w
        if self.sgd:
            grads = _minibatch_gradient(self.net, self.task, w, noise[t])
            for i in range(len(w)):
                g = grads[i]
                if self.use_wd:
                    g = g + 2.0 * self.wd3 * w[i]
                w[i] = w[i] - self.lr3 * g
        else:
            gw = self.gamma_warmup
            ramp = min(max((step - gw) / gw, 0.0), 1.0) if gw else 1.0
            g = self.g0 * self.dec ** max(step - 2 * gw, 0)
            grads = _entropy_and_loss_gradients(self.net, self.task, w, ramp * g if self.use_s else 0.0)
            for i in range(len(w)):
                g = grads[i]
                if self.use_wd:
                    g = g + 2.0 * self.wd3 * w[i]
                w[i] = w[i] - self.lr3 * g

    def magnitude(self):
        if hasattr(self, "flat"):  # the compiled steps: every weight of a replica in one row
            return np.abs(self.flat).max(axis=1)
        return np.max([np.abs(a).max(axis=(1, 2)) for a in self.w], axis=0)

    def record(self, mask):
        return _record(self.net, self.task, self.w if mask.all() else [a[mask] for a in self.w])

    def final(self, mask):
        return tuple(a[mask] for a in self.w)

    def keep(self, mask):
        raise AssertionError("the replicas of a Platonic run all finish together")  # pragma: no cover


def _train(net, task, ws, model_kw, params_of, *, steps, record_every, divergence_limit, n_chunks, seed, method):
    """Run a trainer on :func:`symbreak.engine.run_ensemble`; return a :class:`TrainResult`."""
    r = ws[0].shape[0]
    grid = record_steps(steps, record_every)
    limit = check_positive("divergence_limit", divergence_limit)
    n_chunks = check_int("n_chunks", n_chunks, minimum=1)
    # one configuration per run of consecutive replicas with the same hyper-parameters (typically
    # one for the whole ensemble: per-replica objects cost more than the step for 10⁵ replicas)
    confs = []
    for i in range(r):
        p = params_of(i)
        if confs and confs[-1][1] == p:
            confs[-1][0] += 1
        else:
            confs.append([1, p])
    confs = [Configuration(k, grid, p) for k, p in confs]
    runs = run_ensemble(
        lambda reps, streams: _PlatonicModel(reps, streams, net, task, ws, **model_kw),
        confs,
        seed=seed,
        record_names=("kernels", "loss", "entropy"),
        final_names=tuple(f"W{i}" for i in range(net.depth)),
        n_chunks=n_chunks,
        divergence_limit=limit,
        check_every=_CHECK_EVERY,
        method=method,
        desc=f"Platonic {method}",
    )
    kernels = np.concatenate([x.kernels for x in runs])  # [replica, record, ...]
    loss = np.concatenate([x.loss for x in runs])
    ent = np.concatenate([x.entropy for x in runs])
    weights = [np.concatenate([x.final[f"W{i}"] for x in runs]) for i in range(net.depth)]
    return TrainResult(grid, np.swapaxes(kernels, 0, 1), loss.T, ent.T, weights)


def train_gd(
    net: EDLN,
    task: Task,
    weights,
    *,
    lr,
    steps: int,
    gamma=0.0,
    weight_decay=0.0,
    gamma_warmup: int = 0,
    gamma_final=None,
    lr_warmup: int = 0,
    record_every: int = 100,
    divergence_limit: float = 1e6,
    n_chunks: int | None = None,
) -> TrainResult:
    """Full-batch gradient descent on ``L + γ S + λ Σ_i ‖W_i‖²`` with exact gradients.

    * ``gamma = 0, weight_decay = 0``: plain gradient descent (conserves the charges
      ``W_{k+1}ᵀW_{k+1} − W_k W_kᵀ`` up to O(lr²)),
    * ``gamma > 0``: the explicit entropic loss (the η → 0⁺ objective "Eq. 12"),
    * ``weight_decay = λ > 0``: weight decay, which balances norms instead of gradients.

    Parameters
    ----------
    net, task : EDLN, Task
    weights : list of arrays
        Initial weights, single ``(d_out, d_in)`` or stacked ``(R, d_out, d_in)`` (replicas).
    lr, gamma, weight_decay : float or array of shape (R,)
        Learning rate (> 0), entropic coefficient and weight-decay coefficient (>= 0), possibly
        one per replica.
    gamma_warmup : int
        If positive, the first ``gamma_warmup`` steps are plain gradient descent (``γ = 0``),
        which brings the network to the manifold of minima of ``L``; over the next
        ``gamma_warmup`` steps ``γ`` rises linearly to its value. ``S`` is quartic in the weights
        and large far from the minima: switched on from the start it can hold a slowly learned
        mode of the end-to-end map near zero for thousands of steps (a saddle of ``L + γS`` that
        plain GD escapes), and switched on at once at an unbalanced minimum it can be unstable.
        The warm-up does not change where the run ends.
    gamma_final : float or array of shape (R,), optional
        If given, after the warm-up and the ramp ``γ`` decays geometrically from ``gamma`` to
        ``gamma_final`` at the last step: an annealing path to the ``γ → 0⁺`` limit (the
        minimiser of ``L + γ S`` sits O(γ) away from the minima of ``L``, while the motion along
        the symmetry orbits slows down like ``γ``).
    lr_warmup : int
        If positive, the learning rate rises linearly over the first ``lr_warmup`` steps (see
        :func:`train_sgd`).
    steps, record_every : int
    divergence_limit : float
        A weight magnitude above it raises :class:`~symbreak.engine.DivergenceError`.
    n_chunks : int, optional
        Replicas are split into this many chunks, run concurrently on the thread pool of
        :func:`symbreak.engine.run_ensemble`. The steps are compiled (``_edln_gd_block``, one
        replica after another, without the GIL), so two chunks run on two cores. Default: one chunk
        per core (:func:`symbreak.engine.n_workers`, at most one per replica) from
        ``_GD_THREADED_WORK`` replica-steps on, else one. Results do not depend on ``n_chunks`` or
        on the number of cores (each replica's arithmetic is its own; tested).

    Returns
    -------
    TrainResult
    """
    _check_net(net)
    ws, steps, record_every = _common(net, task, weights, steps, record_every)
    r = ws[0].shape[0]
    lr = _per_replica("lr", lr, r)
    gamma = _per_replica("gamma", gamma, r, positive=False)
    wd = _per_replica("weight_decay", weight_decay, r, positive=False)
    gamma_warmup = check_int("gamma_warmup", gamma_warmup, minimum=0)
    if gamma_final is None:
        decay = np.ones(r)
    else:
        gf = _per_replica("gamma_final", gamma_final, r)
        if np.any(gamma <= 0):
            raise ValueError("gamma must be > 0 when gamma_final is given")
        decay = (gf / gamma) ** (1.0 / max(steps - 2 * gamma_warmup, 1))
    lr_warmup = check_int("lr_warmup", lr_warmup, minimum=0)
    if n_chunks is None:
        n_chunks = min(n_workers(), r) if r * steps >= _GD_THREADED_WORK else 1
    params = dict(
        method="gd",
        lr=lr,
        gamma=gamma,
        weight_decay=wd,
        steps=steps,
        gamma_warmup=gamma_warmup,
        gamma_final=gamma_final,
        lr_warmup=lr_warmup,
    )

    model_kw = dict(lr=lr, wd=wd, lr_warmup=lr_warmup, sgd=False, gamma=gamma, decay=decay, gamma_warmup=gamma_warmup)
    res = _train(
        net,
        task,
        ws,
        model_kw,
        lambda i: dict(lr=float(lr[i]), gamma=float(gamma[i]), weight_decay=float(wd[i])),
        steps=steps,
        record_every=record_every,
        divergence_limit=divergence_limit,
        n_chunks=n_chunks,
        seed=0,
        method="gradient descent",
    )
    res.params = params
    return res


def train_sgd(
    net: EDLN,
    task: Task,
    weights,
    *,
    lr,
    batch_size: int,
    steps: int,
    seed=None,
    weight_decay=0.0,
    lr_warmup: int = 0,
    record_every: int = 100,
    divergence_limit: float = 1e6,
    n_chunks: int = 1,
    dtype=np.float64,
) -> TrainResult:
    """Online SGD on ``ℓ = ‖f(x) − y‖²`` with fresh minibatches of ``B`` samples per step.

    The minibatch gradient is linear in the minibatch second moments of ``(x, ε)``: with
    ``Ŝ = (1/B) Σ_b (x_b, ε_b)(x_b, ε_b)ᵀ`` and ``A = U − V*``,

    .. math::

        \\nabla_{W_i} \\hat L = 2\\, Q_i^\\top \\big(A \\hat S_{xx} - \\hat S_{\\varepsilon x}\\big) P_i^\\top ,

    and ``B Ŝ`` is Wishart with covariance ``diag(Σx, Σε)``, so :func:`symbreak.engine.wishart_covariance`
    draws each step's minibatch *exactly* without any data points. Optional weight decay adds
    ``2 λ W_i``.

    Parameters
    ----------
    lr, weight_decay : float or array of shape (R,)
        Learning rate (> 0) and weight-decay coefficient (>= 0), possibly one per replica.
    batch_size : int
        ``B ≥ 1``, common to all replicas.
    seed :
        Seed of the minibatch streams: replica ``r`` draws from its own stream ``(seed, r)``
        (:func:`symbreak.engine.replica_streams`), so its trajectory does not depend on how many
        replicas run or how they are chunked.
    lr_warmup : int
        If positive, the learning rate rises linearly from ``lr / lr_warmup`` to ``lr`` over the
        first ``lr_warmup`` steps: far from the minima (random initialisation, large loss) the
        landscape is sharper than near them, and a deep network with ill-conditioned ``M`` can
        otherwise leave the stable region in the first few hundred steps.
    record_every, divergence_limit :
        As in :func:`train_gd`.
    n_chunks : int
        Replicas are split into this many chunks, run concurrently. The steps are compiled
        (each chunk's replicas in SIMD lanes, one call per block of up to 64 steps, without the
        GIL), so two chunks run on two cores (measured on two cores, network B, 20,000 steps: 64
        replicas 0.20 s against 0.40 s in one chunk, 16 replicas 0.07 s against 0.11 s). Results do
        not depend on ``n_chunks``, on the number of cores or on which replicas run together (tested).
    dtype : numpy.float64 or numpy.float32 (or their names)
        Precision of the weights, the minibatch draws and the step (the records are computed in
        float64 from the weights; ``TrainResult.weights`` are float32). float32 draws other random
        numbers than float64; on the same draws the two steps agree to float32 rounding (measured
        ~5e-6 relative after 1,920 steps, tested to 1e-4). It is faster: 19–25% more replica-steps
        per second in ``make benchmark`` (three runs on 4 December 2026).

    Returns
    -------
    TrainResult

    Raises
    ------
    ValueError
        Naming the parameter, for a non-positive ``lr``, a negative ``weight_decay``, ``batch_size``
        below 1, a ``dtype`` other than float64/float32, or weights that do not fit ``net``.
    DivergenceError
        When a replica's weights leave ``divergence_limit`` (past the stability edge).

    Notes
    -----
    The compiled step computes the update above operation for operation, but sums each small
    matrix product in a fixed order where BLAS may choose another: its trajectories agree with the
    batched NumPy step's to rounding (measured a few ``1e-15`` relative after 1,500 steps, tested to
    ``1e-12``).
    """
    _check_net(net)
    ws, steps, record_every = _common(net, task, weights, steps, record_every)
    r = ws[0].shape[0]
    lr = _per_replica("lr", lr, r)
    wd = _per_replica("weight_decay", weight_decay, r, positive=False)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    lr_warmup = check_int("lr_warmup", lr_warmup, minimum=0)
    try:
        dt = np.dtype(dtype) if isinstance(dtype, (type, np.dtype, str)) else None
    except TypeError:  # a string NumPy does not know
        dt = None
    if dt is None or dt not in (np.dtype(np.float64), np.dtype(np.float32)):  # (None == float64 for NumPy)
        raise ValueError(f"dtype must be numpy.float64 or numpy.float32, got {dtype!r}")
    params = dict(method="sgd", lr=lr, batch_size=batch_size, weight_decay=wd, steps=steps, lr_warmup=lr_warmup)
    if dt == np.float32:
        params["dtype"] = "float32"

    model_kw = dict(lr=lr, wd=wd, lr_warmup=lr_warmup, sgd=True, batch_size=batch_size, dtype=dt)
    res = _train(
        net,
        task,
        ws,
        model_kw,
        lambda i: dict(lr=float(lr[i]), batch_size=batch_size, weight_decay=float(wd[i])),
        steps=steps,
        record_every=record_every,
        divergence_limit=divergence_limit,
        n_chunks=n_chunks,
        seed=seed,
        method="SGD",
    )
    res.params = params
    return res


def converge_entropic(
    net: EDLN, task: Task, weights, *, gamma: float, lr: float, chunk: int, tol: float, max_chunks: int
) -> tuple:
    """Gradient descent on ``L + γS`` at fixed ``γ``, run in chunks until the kernels stop moving.

    P-Theorem 1 concerns the minimiser of ``L + γS`` (``S`` of P-Eq. 12) as ``γ → 0⁺``; gradient
    descent moves along the symmetry orbits at a rate proportional to ``γ``, so a fixed step count
    stops at a distance from the minimiser that depends on the initialisation. This runs
    :func:`train_gd` for ``chunk`` steps at a time until no entry of any normalised hidden kernel
    ``K/‖K‖`` of any replica changes by ``tol`` or more over a chunk, or ``max_chunks`` chunks have
    run (the caller checks the returned change against ``tol``).

    Parameters
    ----------
    net, task, weights :
        As in :func:`train_gd`.
    gamma : float
        Entropic coefficient ``γ`` (> 0).
    lr : float
        Learning rate (> 0).
    chunk : int
        Steps between two comparisons of the kernels (≥ 1).
    tol : float
        Largest change of a normalised kernel entry over a chunk at convergence (> 0).
    max_chunks : int
        Most chunks (≥ 2: the first change is measured after the second chunk).

    Returns
    -------
    weights : list of numpy.ndarray
        Final weights, stacked ``(R, d_out, d_in)``.
    kernels : numpy.ndarray, shape (R, D-1, n, n)
        Normalised hidden kernels at the end.
    steps : int
        Steps run.
    change : float
        Largest change of a normalised kernel entry over the last chunk (``< tol`` when converged).

    Examples
    --------
    >>> from symbreak import platonic as pl
    >>> task = pl.random_task(1, n=3, m=3, noise=0.5)
    >>> net = pl.random_edln(2, 3, 3, (3,))
    >>> w, k, steps, change = pl.converge_entropic(net, task, pl.init_weights(net, 3, replicas=2, scale=0.5), gamma=0.01,
    ...                                            lr=0.005, chunk=500, tol=1e-4, max_chunks=60)
    >>> bool(change < 1e-4)
    True
    """
    _check_net(net)
    gamma = check_positive("gamma", gamma)
    lr = check_positive("lr", lr)
    chunk = check_int("chunk", chunk, minimum=1)
    tol = check_positive("tol", tol)
    max_chunks = check_int("max_chunks", max_chunks, minimum=2)
    prev, change = None, np.inf
    for n_chunks in range(1, max_chunks + 1):
        weights = train_gd(net, task, weights, lr=lr, steps=chunk, gamma=gamma, record_every=chunk).weights
        k = hidden_kernels(net, weights, normalize=True)
        if prev is not None:
            change = float(np.abs(k - prev).max())
            if change < tol:
                break
        prev = k
    return weights, k, n_chunks * chunk, change
