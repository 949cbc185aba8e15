"""The autoencoder's SGD simulations on the shared engine: exact Wishart minibatches, compiled linear
steps, sample-level models, and the grid runner.

Pages: ``book/autoencoder/index.md``, ``book/autoencoder/lambert.md``,
``book/autoencoder/sharpness-relu.md``, ``book/autoencoder/stability.md``, ``book/how-to-use.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..engine import (
    Configuration,
    TorchWishartBlockSampler,
    WishartBlockSampler,
    _aligned_zeros,
    _bartlett_kernel,
    _compiled,
    fill_normals,
    record_steps,
    replica_streams,
    run_ensemble,
)
from ..validation import (
    MAX_STEPS,
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_positive_array,
)
from ._common import _dtype, _spectrum
from .hessian import pca_point
from .relu import population_loss
from .scale import _broadcast_positive

__all__ = ["SGDResult", "simulate_sgd", "simulate_sgd_grid"]


# --------------------------------------------------------------------------------------------
# the SGD engine
# --------------------------------------------------------------------------------------------
@dataclass
class SGDResult:
    """Recorded SGD trajectories of one configuration ``(η, B)``, several seeds.

    Arrays are indexed ``[seed, record]`` (and then matrix indices).
    """

    steps: np.ndarray  #: (R,) SGD steps at which the state was recorded
    tau: np.ndarray  #: (R,) slow time ``steps · η²/B``
    S: np.ndarray  #: (seeds, R, k, k) ``WᵀW``
    Q: np.ndarray  #: (seeds, R, k, k) ``WᵀW − UUᵀ``
    loss: np.ndarray  #: (seeds, R) population loss
    eta: float
    batch_size: int
    lambdas: np.ndarray
    k: int
    activation: str = "linear"
    sampler: str = "wishart"
    W: np.ndarray | None = field(default=None, repr=False)  #: (seeds, R, d, k) if recorded
    U: np.ndarray | None = field(default=None, repr=False)  #: (seeds, R, k, d) if recorded

    def select_seeds(self, index) -> SGDResult:
        """The same run restricted to some of its seeds (``index``: a slice, or integer indices along the
        seed axis), the records unchanged. Seed ``s`` of a run draws from its own stream ``(seed, s)``, so
        the first ``n`` seeds of a run are the run of ``n`` seeds with the same arguments, bit for bit:
        one run can serve a page's claims on two seeds and a statistic over more.

        Raises
        ------
        ValueError
            If ``index`` selects no seed.
        """
        n = self.S.shape[0]
        try:
            pick = np.arange(n)[index]
        except IndexError as err:
            raise ValueError(
                f"index must select seeds among the {n} of the run (a slice or indices), got {index!r}: {err}"
            ) from None
        if np.ndim(pick) != 1 or pick.size == 0:
            raise ValueError(
                f"index must select at least one of the {self.S.shape[0]} seeds (a slice or indices), got {index!r}"
            )
        sub = lambda a: None if a is None else a[pick]  # noqa: E731
        return replace(self, S=self.S[pick], Q=self.Q[pick], loss=self.loss[pick], W=sub(self.W), U=sub(self.U))

    @property
    def scales(self) -> np.ndarray:
        """``s_a = (WᵀW)_aa``, shape (seeds, R, k)."""
        return np.diagonal(self.S, axis1=-2, axis2=-1)

    @property
    def q(self) -> np.ndarray:
        """Scalar charge ``q = tr Q = ‖W‖_F² − ‖U‖_F²``, shape (seeds, R)."""
        return np.trace(self.Q, axis1=-2, axis2=-1)

    @property
    def neuron_charges(self) -> np.ndarray:
        """Per-neuron charges ``q_i = ‖w_i‖² − ‖u_i‖²`` (E.13), shape (seeds, R, k)."""
        return np.diagonal(self.Q, axis1=-2, axis2=-1)

    @property
    def decoder_norm(self) -> np.ndarray:
        """``‖W‖_F``, shape (seeds, R)."""
        return np.sqrt(np.trace(self.S, axis1=-2, axis2=-1))

    @property
    def encoder_norm(self) -> np.ndarray:
        """``‖U‖_F``, shape (seeds, R)."""
        return np.sqrt(np.clip(np.trace(self.S - self.Q, axis1=-2, axis2=-1), 0.0, None))


_BLOCK = 64  # at most this many SGD steps have their minibatches drawn in one go
_BLOCK_DRAWS = 1024  # ... and at most about this many minibatches (steps × replicas) per block
#: Steps between two divergence checks (one call of the compiled step each): a check every 8 steps cost
#: ~25% of a run with one or two replicas left in a chunk. The trajectories do not depend on it (tested).
_CHECK_EVERY = _BLOCK


class _LinearStepper:
    """In-place SGD steps for a stack of linear autoencoders, state ``V = [U; Wᵀ]`` (R, 2k, d).

    The learning rate is folded into the minibatch covariance (the update is linear in ``Σ̂``):
    with ``P = (WU − I)(ηΣ̂) = W(U ηΣ̂) − ηΣ̂``, ``η∇_U L̂ = WᵀP`` and ``η∇_W L̂ᵀ = U Pᵀ``. Six NumPy
    calls and ``4kd²`` multiply-adds per step; for the small stacks of the book the call overhead
    matters as much as the arithmetic.
    """

    def __init__(self, V: np.ndarray, k: int):
        self.V = V
        r, _, d = V.shape
        self.k, self.d = k, d
        self.G = np.empty_like(V)
        self.Y = np.empty((r, k, d), V.dtype)
        self.P = np.empty((r, d, d), V.dtype)

    def step(self, sig: np.ndarray) -> None:
        V, G, Y, P, k = self.V, self.G, self.Y, self.P, self.k
        U, Wt = V[:, :k], V[:, k:]
        np.matmul(U, sig, out=Y)
        np.matmul(Wt.transpose(0, 2, 1), Y, out=P)
        P -= sig
        np.matmul(Wt, P, out=G[:, :k])
        np.matmul(U, P.transpose(0, 2, 1), out=G[:, k:])
        V -= G


def _linear_sgd_block(S, t0, t1, V, k, Y, P, G):  # pragma: no cover - run compiled
    """Steps ``t0 … t1 − 1`` of a block for every replica of the stack ``V = [U; Wᵀ]`` (R, 2k, d),
    compiled (numba, ``nogil``): the update of :meth:`_LinearStepper.step` with the same BLAS
    products (``np.dot`` calls ``gemm``) in the same order, so the numbers are bit for bit those of
    the NumPy path; one call replaces about ten NumPy calls per step, which is what the small
    ensembles of the book pay for. ``S`` (R, t1 − t0, d, d) holds the steps' ``ηΣ̂`` (built by
    :func:`symbreak.engine._bartlett_kernel`); ``P`` (d, d), ``Y`` (k, d) and ``G`` (2k, d) are
    scratch."""
    d = V.shape[2]
    for r in range(V.shape[0]):
        U = V[r, :k]
        Wt = V[r, k:]
        for t in range(t0, t1):
            Sr = S[r, t - t0]
            np.dot(U, Sr, Y)
            np.dot(Wt.T, Y, P)
            for i in range(d):
                for j in range(d):
                    P[i, j] -= Sr[i, j]
            np.dot(Wt, P, G[:k])
            np.dot(U, P.T, G[k:])
            for a in range(2 * k):
                for j in range(d):
                    V[r, a, j] -= G[a, j]


class _FusedLinearStepper:
    """:class:`_LinearStepper` in compiled blocks: each block's ``ηΣ̂`` from the variates by the
    engine's compiled Bartlett kernel, then the steps by :func:`_linear_sgd_block`."""

    #: replicas whose block of ηΣ̂ is built and used at a time (it then stays in the core's cache)
    GROUP = 16

    def __init__(self, V: np.ndarray, k: int):
        self.V = V
        d, dt = V.shape[2], V.dtype
        self.k = k
        self.S = np.empty((min(self.GROUP, V.shape[0]), 0, d, d), dt)
        self.scratch = (np.empty((k, d), dt), np.empty((d, d), dt), np.empty((2 * k, d), dt))
        self.bartlett = _bartlett_kernel()
        self.kernel = _compiled(_linear_sgd_block)

    def steps(self, variates, t0: int, t1: int) -> None:
        z, g, mz, mg = variates
        n, d = self.S.shape[0], self.V.shape[2]
        if self.S.shape[1] < t1 - t0:
            self.S = np.empty((n, t1 - t0, d, d), self.V.dtype)
        for a in range(0, self.V.shape[0], n):
            b = min(a + n, self.V.shape[0])
            self.bartlett(z[a:b], g[a:b], mz[a:b], mg[a:b], np.arange(b - a), t0, t1, self.S)
            self.kernel(self.S, t0, t1, self.V[a:b], self.k, *self.scratch)


class _LaneLinearStepper:
    """The linear autoencoder's steps with the minibatch drawn inside the compiled step, replicas in
    SIMD lanes (:func:`symbreak._ae_lanes._linear_sgd_lanes`): no block of variates,
    no ``Σ̂``; for replica streams on NumPy's SFC64
    (:meth:`symbreak.engine.WishartBlockSampler.lane_arguments`)."""

    def __init__(self, V: np.ndarray, k: int):
        self.V = V
        from .._ae_lanes import _LANES, _ROWS, _linear_sgd_lanes  # (imports numba)

        d, dt = V.shape[2], V.dtype
        n = _LANES[dt.name]
        self.k = k
        rows = _ROWS[dt.name]
        kp = -(-k // rows) * rows  # k rows padded to whole SIMD vectors (the one-replica path)
        e = lambda size: _aligned_zeros(size, dt)  # noqa: E731
        self.scratch = (e(d * (d + 1) * n), e(k * d * n), e(k * d * n), e(2 * k * d * n), e(2 * k * d * n),
                        e(k * k * n), e(k * k * n), e(d * (d + 1) // 2), np.zeros(2 * d), e(d),
                        e(d * kp), e(d * kp), e(2 * d * kp), e(2 * d * kp), e(k * kp), e(k * kp))  # fmt: skip
        self.kernel = _compiled(_linear_sgd_lanes)

    def steps(self, args, n_steps: int) -> None:
        f32 = self.V.dtype == np.float32
        self.kernel(*args, self.V, self.k, n_steps, f32, *self.scratch)


def _samples_sgd_block(X, t0, t1, W, U, relu, H, A, R, back, gW, gU):  # pragma: no cover - run compiled
    """Steps ``t0 … t1 − 1`` of :meth:`_SamplesModel.step` for every replica, compiled (numba,
    ``nogil``): the same BLAS products (``np.dot`` calls ``gemm``) and element-wise operations in
    the same order, so bit for bit the NumPy path's numbers, in one call instead of about ten NumPy
    calls per step. ``X`` (R, m, d, B) holds the scaled data points; ``H``, ``A``, ``back`` (k, B),
    ``R`` (d, B), ``gW`` (d, k), ``gU`` (k, d) are scratch."""
    k, b = H.shape
    d = R.shape[0]
    for r in range(W.shape[0]):
        Wr = W[r]
        Ur = U[r]
        for t in range(t0, t1):
            x = X[r, t]
            np.dot(Ur, x, H)
            if relu:
                for a in range(k):
                    for j in range(b):
                        h = H[a, j]
                        A[a, j] = h if (h >= 0.0 or h != h) else 0.0  # np.maximum(h, 0.0), NaN kept
                np.dot(Wr, A, R)
            else:
                np.dot(Wr, H, R)
            for i in range(d):
                for j in range(b):
                    R[i, j] -= x[i, j]
            np.dot(Wr.T, R, back)
            if relu:
                for a in range(k):
                    for j in range(b):
                        if not H[a, j] > 0.0:
                            back[a, j] = 0.0 * back[a, j]
                np.dot(R, A.T, gW)
            else:
                np.dot(R, H.T, gW)
            np.dot(back, x.T, gU)
            for i in range(d):
                for a in range(k):
                    Wr[i, a] -= gW[i, a]
            for a in range(k):
                for i in range(d):
                    Ur[a, i] -= gU[a, i]


def _record_linear(V, k, lam, want_weights):
    V = V.astype(np.float64)
    U, Wt = V[:, :k], V[:, k:]
    S = Wt @ Wt.transpose(0, 2, 1)
    Q = S - U @ U.transpose(0, 2, 1)
    M = Wt.transpose(0, 2, 1) @ U - np.eye(V.shape[2])
    loss = 0.5 * np.einsum("rij,j->r", M * M, lam)
    return S, Q, loss, (Wt.transpose(0, 2, 1).copy(), U.copy()) if want_weights else None


def _record_samples(W, U, k, lam, activation, want_weights):
    W = W.astype(np.float64)
    U = U.astype(np.float64)
    S = W.transpose(0, 2, 1) @ W
    Q = S - U @ U.transpose(0, 2, 1)
    loss = population_loss(W, U, lam, activation)
    return S, Q, loss, (W.copy(), U.copy()) if want_weights else None


#: From this many replicas on, _LinearModel builds each step's Σ̂ when the step reads it.
_STEPWISE_MIN_REPLICAS = 24
#: Below this many replicas in a chunk, _LinearModel takes its steps in compiled blocks (where every
#: replica draws by the Bartlett decomposition); from it on, the batched NumPy products. No limit: on
#: two threads the compiled step, which holds no lock, is faster at the benchmark's 2 × 64 replicas
#: (float64: 490k against 464k replica-steps/s, means of five and three runs on the same machine),
#: although one thread alone runs the batched NumPy path faster (3.3 against 3.7 µs per replica-step).
_FUSED_MAX_REPLICAS = 2**31 - 1
#: Whether _LinearModel's compiled steps draw each minibatch inside the step, replicas in SIMD lanes
#: (_LaneLinearStepper), where the streams allow it; False: the block's variates first, then the
#: compiled step that is the NumPy path bit for bit (_FusedLinearStepper).
_LANE_STEPS = True


class _LinearModel:
    """The linear autoencoder's step for :func:`symbreak.engine.run_ensemble` (Wishart minibatches)."""

    def __init__(self, reps, streams, lam, k, etas, bsz, init, dtype, want_weights):
        d, n = lam.size, len(reps)
        V = np.empty((n, 2 * k, d), dtype=dtype)
        for j in range(n):
            W0, U0 = init[reps[j]](streams[j])
            V[j, :k] = U0
            V[j, k:] = W0.T
        self.k, self.lam, self.dtype, self.want_weights = k, lam, dtype, want_weights
        self.streams = list(streams)
        self.sampler = WishartBlockSampler(np.sqrt(lam), bsz[reps], scale=etas[reps], dtype=dtype, max_steps=_BLOCK)
        # the compiled step saves the ~10 NumPy calls per step that a small chunk pays (2 replicas: 13.7
        # against 33 µs per replica-step) and the lock those calls take; the numbers are the same
        self.fused = self.sampler.bartlett_only and n < _FUSED_MAX_REPLICAS
        # SFC64 streams (always, from replica_streams): the compiled step draws each minibatch itself,
        # replicas in SIMD lanes (_LaneLinearStepper; the same minibatches, the update to rounding)
        self.lanes = self.fused and _LANE_STEPS and self.sampler.lane_arguments(self.streams) is not None
        if self.lanes:
            self.stepper = _LaneLinearStepper(V, k)
        else:
            self.stepper = (_FusedLinearStepper if self.fused else _LinearStepper)(V, k)
        if self.fused:  # the runner calls steps(); the compiled step builds each Σ̂ itself
            self.steps = self._steps

    def draw(self, m):
        # the same minibatches on every path. Lanes: nothing is drawn ahead, the compiled step draws
        # each step's variates. Fused (every B >= d): the block's variates only, the compiled step does
        # the rest (bit for bit the NumPy path). Otherwise: with many replicas each step's Σ̂ is built
        # as it is used (cache-friendly); with few, per-step assembly costs more than it saves
        if self.lanes:
            return self.sampler.lane_arguments(self.streams)
        if self.fused:
            return self.sampler.variates(self.streams, m)
        if len(self.streams) >= _STEPWISE_MIN_REPLICAS:
            return self.sampler.draw_steps(self.streams, m)
        return self.sampler.draw(self.streams, m)

    def step(self, sig, t, _step):
        if self.fused:
            self._steps(sig, t, t + 1, _step)
        else:
            self.stepper.step(sig[t])

    def _steps(self, variates, t0, t1, _step):
        if self.lanes:
            self.stepper.steps(variates, t1 - t0)
        else:
            self.stepper.steps(variates, t0, t1)

    def magnitude(self):
        return np.abs(self.stepper.V).max(axis=(1, 2))

    def record(self, mask):
        S, Q, loss, wu = _record_linear(self.stepper.V[mask], self.k, self.lam, self.want_weights)
        return (S, Q, loss) + (wu if wu is not None else ())

    def final(self, mask):
        return ()

    def keep(self, mask):
        self.sampler.keep(mask)
        self.stepper = type(self.stepper)(np.ascontiguousarray(self.stepper.V[mask]), self.k)
        self.streams = [s for s, kp in zip(self.streams, mask) if kp]


class _TorchLinearModel:
    """:class:`_LinearModel` on a torch device (the GPU path): the same step with ``torch.bmm``,
    the minibatches drawn on the device (:class:`symbreak.engine.TorchWishartBlockSampler`)."""

    def __init__(self, reps, streams, lam, k, etas, bsz, init, dtype, want_weights, device):
        import torch

        d, n = lam.size, len(reps)
        V = np.empty((n, 2 * k, d), dtype=dtype)
        for j in range(n):
            W0, U0 = init[reps[j]](streams[j])
            V[j, :k] = U0
            V[j, k:] = W0.T
        self.torch, self.k, self.lam, self.want_weights = torch, k, lam, want_weights
        self.device = torch.device(device)
        self.V = torch.as_tensor(V, device=self.device)
        gen = torch.Generator(device=self.device)
        gen.manual_seed(int(streams[0].integers(2**63)))
        self.sampler = TorchWishartBlockSampler(
            np.sqrt(lam), bsz[reps], scale=etas[reps], dtype=dtype, device=self.device, generator=gen
        )

    def draw(self, m):
        return self.sampler.draw(m)

    def step(self, sig, t, _step):
        V, k = self.V, self.k
        U, Wt, s = V[:, :k], V[:, k:], sig[t]
        P = Wt.transpose(1, 2) @ (U @ s) - s
        V[:, :k] -= Wt @ P
        V[:, k:] -= U @ P.transpose(1, 2)

    def magnitude(self):
        return self.V.abs().amax(dim=(1, 2)).cpu().numpy()

    def record(self, mask):
        V = self.V[self.torch.as_tensor(mask, device=self.device)].cpu().numpy()
        S, Q, loss, wu = _record_linear(V, self.k, self.lam, self.want_weights)
        return (S, Q, loss) + (wu if wu is not None else ())

    def final(self, mask):
        return ()

    def keep(self, mask):
        self.V = self.V[self.torch.as_tensor(mask, device=self.device)].contiguous()
        self.sampler.keep(mask)


class _SamplesModel:
    """The autoencoder's step with the ``B`` data points drawn (any activation)."""

    def __init__(self, reps, streams, lam, k, etas, bsz, init, dtype, want_weights, activation):
        d, n = lam.size, len(reps)
        b = int(bsz[reps[0]])
        if np.any(bsz[reps] != b):
            raise ValueError("sampler='samples' needs one batch size for all configurations")
        self.W = np.empty((n, d, k), dtype=dtype)
        self.U = np.empty((n, k, d), dtype=dtype)
        for j in range(n):
            self.W[j], self.U[j] = init[reps[j]](streams[j])
        # φ is positively homogeneous, so η∇L̂(x) = ∇L̂(c x) with c = sqrt(η/B): fold the step into the data
        self.amp = (np.sqrt(etas[reps] / b)[:, None] * np.sqrt(lam)[None, :]).astype(dtype)[:, :, None]  # (n, d, 1)
        self.k, self.d, self.b, self.lam, self.dtype = k, d, b, lam, dtype
        self.want_weights, self.activation, self.relu = want_weights, activation, activation == "relu"
        self.streams = list(streams)
        self._buffers(n)
        self.kernel = _compiled(_samples_sgd_block)

    def steps(self, X, t0, t1, _step):
        """Steps ``t0 … t1 − 1`` at once, compiled (:func:`_samples_sgd_block`): the numbers of :meth:`step`."""
        self.kernel(X, t0, t1, self.W, self.U, self.relu, *self._scratch)

    def _buffers(self, m):
        k, d, b, dt = self.k, self.d, self.b, self.dtype
        self.H, self.A, self.R = np.empty((m, k, b), dt), np.empty((m, k, b), dt), np.empty((m, d, b), dt)
        self.gW, self.back, self.gU = np.empty((m, d, k), dt), np.empty((m, k, b), dt), np.empty((m, k, d), dt)
        self.mask = np.empty((m, k, b), dtype=bool)
        self._scratch = tuple(np.empty(shape, dt) for shape in ((k, b), (k, b), (d, b), (k, b), (d, k), (k, d)))

    def draw(self, m):
        X = np.empty((len(self.streams), m, self.d, self.b), dtype=self.dtype)
        fill_normals(self.streams, X)  # each replica's own stream, as standard_normal(out=X[j])
        X *= self.amp[:, None]
        return X

    def step(self, X, t, _step):
        W, U, H, A, R, gW, back, gU, mask = (
            self.W,
            self.U,
            self.H,
            self.A,
            self.R,
            self.gW,
            self.back,
            self.gU,
            self.mask,
        )
        x = X[:, t]
        np.matmul(U, x, out=H)
        if self.relu:
            np.maximum(H, 0.0, out=A)
            np.greater(H, 0.0, out=mask)
        act = A if self.relu else H
        np.matmul(W, act, out=R)
        R -= x
        np.matmul(W.transpose(0, 2, 1), R, out=back)
        if self.relu:
            back *= mask
        np.matmul(R, act.transpose(0, 2, 1), out=gW)
        np.matmul(back, x.transpose(0, 2, 1), out=gU)
        W -= gW
        U -= gU

    def magnitude(self):
        return np.maximum(np.abs(self.W).max(axis=(1, 2)), np.abs(self.U).max(axis=(1, 2)))

    def record(self, mask):
        S, Q, loss, wu = _record_samples(
            self.W[mask], self.U[mask], self.k, self.lam, self.activation, self.want_weights
        )
        return (S, Q, loss) + (wu if wu is not None else ())

    def final(self, mask):
        return ()

    def keep(self, mask):
        self.W, self.U = np.ascontiguousarray(self.W[mask]), np.ascontiguousarray(self.U[mask])
        self.amp = self.amp[mask]
        self.streams = [s for s, kp in zip(self.streams, mask) if kp]
        self._buffers(len(self.streams))


def _make_init(init, lam, k, init_std):
    d = lam.size
    if isinstance(init, str):
        init = check_choice("init", init, ("pca", "random"))
        if init == "pca":
            if k >= d:
                raise ValueError(f"init='pca' needs an undercomplete autoencoder, k < d = {d}; got k = {k}")
            W0, U0 = pca_point(np.ones(k), d)
            return lambda rng: (W0, U0)
        std = check_positive("init_std", init_std)
        return lambda rng: (std * rng.standard_normal((d, k)), std * rng.standard_normal((k, d)))
    try:
        W0, U0 = init
    except (TypeError, ValueError):
        raise ValueError("init must be 'pca', 'random' or a pair (W0, U0) of arrays") from None
    W0 = check_array("init W0", W0, shape=(d, k))
    U0 = check_array("init U0", U0, shape=(k, d))
    return lambda rng: (W0, U0)


def _run(
    lam,
    k,
    etas,
    bsz,
    rec_steps,
    *,
    seeds,
    init,
    init_std,
    activation,
    sampler,
    dtype,
    seed,
    record_weights,
    device=None,
    shared_streams=False,
):
    """Run every configuration × seed as one ensemble on :func:`symbreak.engine.run_ensemble`.

    ``shared_streams``: seed ``s`` of every configuration draws from the stream ``(seed, s)`` (common
    random numbers across configurations) instead of the engine's stream ``(seed, c·seeds + s)``.
    """
    if not isinstance(record_weights, (bool, np.bool_)):  # 'no' is truthy: it would record the weights
        raise TypeError(f"record_weights must be True or False, got {type(record_weights).__name__} {record_weights!r}")
    record_weights = bool(record_weights)
    n_conf = len(etas)
    if isinstance(init, list):
        if len(init) != n_conf:
            raise ValueError(f"init must have one entry per configuration ({n_conf}), got {len(init)}")
        fns = [_make_init(i, lam, k, init_std) for i in init]
    else:
        fns = [_make_init(init, lam, k, init_std)] * n_conf
    init_r = [fns[c] for c in range(n_conf) for _ in range(seeds)]
    etas_r, bsz_r = np.repeat(etas, seeds), np.repeat(bsz, seeds)
    confs = [
        Configuration(
            seeds, np.asarray(rec_steps[c], dtype=np.int64), {"eta": float(etas[c]), "batch_size": int(bsz[c])}
        )
        for c in range(n_conf)
    ]

    if device is not None:
        if sampler != "wishart":
            raise ValueError("device: the torch path runs the linear model with sampler='wishart' only")
        if np.any(bsz < lam.size):
            raise ValueError(f"device: the torch path needs batch_size >= d = {lam.size}")

    def factory(reps, streams):
        if shared_streams:
            streams = replica_streams(seed, [int(r) % seeds for r in reps])
        if device is not None:
            return _TorchLinearModel(reps, streams, lam, k, etas_r, bsz_r, init_r, dtype, record_weights, device)
        if sampler == "wishart":
            return _LinearModel(reps, streams, lam, k, etas_r, bsz_r, init_r, dtype, record_weights)
        return _SamplesModel(reps, streams, lam, k, etas_r, bsz_r, init_r, dtype, record_weights, activation)

    names = ("S", "Q", "loss") + (("W", "U") if record_weights else ())
    big = dict(n_chunks=1, block_draws=1 << 22) if device is not None else {}  # one device, large blocks
    runs = run_ensemble(
        factory,
        confs,
        seed=seed,
        record_names=names,
        block_steps=_BLOCK,
        block_draws=big.pop("block_draws", _BLOCK_DRAWS),
        check_every=_CHECK_EVERY,
        work=1.0 if sampler == "wishart" else 3.0,
        desc="autoencoder SGD",
        **big,
    )
    results = []
    for c, run in enumerate(runs):
        steps = run.steps
        results.append(
            SGDResult(
                steps=steps,
                tau=steps * float(etas[c]) ** 2 / float(bsz[c]),
                S=run.S,
                Q=run.Q,
                loss=run.loss,
                eta=float(etas[c]),
                batch_size=int(bsz[c]),
                lambdas=lam,
                k=k,
                activation=activation,
                sampler=sampler,
                W=run.records.get("W"),
                U=run.records.get("U"),
            )
        )
    return results


def _check_common(lambdas, k, activation, sampler, dtype, seeds):
    lam = _spectrum(lambdas)
    k = check_int("k", k, minimum=1)
    activation = check_choice("activation", activation, ("linear", "relu"))
    sampler = check_choice("sampler", sampler, ("wishart", "samples"))
    if activation == "relu" and sampler == "wishart":
        raise ValueError(
            "sampler='wishart' draws only the minibatch covariance, which suffices for the "
            "linear model alone; activation='relu' needs sampler='samples'"
        )
    return lam, k, activation, sampler, _dtype(dtype), check_int("seeds", seeds, minimum=1, maximum=10**6)


def simulate_sgd(
    lambdas,
    k: int,
    eta: float,
    batch_size: int,
    steps: int,
    *,
    seeds: int = 1,
    record_every: int = 1000,
    init="pca",
    activation: str = "linear",
    sampler: str = "wishart",
    dtype=np.float64,
    seed=None,
    init_std: float = 0.01,
    record_weights: bool = False,
    record_at=None,
    device=None,
) -> SGDResult:
    """Online minibatch SGD on a two-layer autoencoder ``x̂ = W φ(U x)``, ``x ~ N(0, diag λ)`` (App. F).

    Every step draws a fresh minibatch of ``B`` points and takes
    ``W ← W − η ∇_W L̂``, ``U ← U − η ∇_U L̂`` on ``L̂ = (1/2B) Σ_i ‖W φ(U x_i) − x_i‖²``.

    Parameters
    ----------
    lambdas : array_like, shape (d,)
        Covariance eigenvalues, positive and non-increasing (e.g. :func:`geometric_spectrum`).
    k : int
        Hidden width (``k < d`` contractive, ``k > d`` expansive).
    eta : float
        Learning rate ``> 0``.
    batch_size : int
        ``B ≥ 1``.
    steps : int
        Number of SGD steps.
    seeds : int
        Independent replicas (run as one batched ensemble on both cores).
    record_every : int
        Record every this many steps (and at the last step).
    init : {"pca", "random"} or (W0, U0)
        ``"pca"``: App. F's ``W0 = [I; 0]``, ``U0 = [I, 0]`` (``S0 = I``); ``"random"``: i.i.d.
        ``N(0, init_std²)`` entries (``init_std = 0.01`` in the paper); or explicit arrays.
    activation : {"linear", "relu"}
    sampler : {"wishart", "samples"}
        ``"wishart"`` draws the minibatch covariance ``Σ̂`` exactly (Bartlett decomposition): the
        linear update depends on the batch only through ``Σ̂``. ``"samples"`` draws the ``B``
        points and back-propagates through them (needed for ReLU).
    dtype : numpy.float64 or numpy.float32
        Precision of the state and the draws (records are float64).
    seed : int, optional
        Seed of the ensemble's random streams: replica ``r`` draws its initialisation and
        minibatches from its own stream ``(seed, r)`` (:func:`symbreak.engine.replica_streams`),
        so its trajectory does not depend on how many replicas run or on the number of cores.
    record_weights : bool
        Also keep ``W`` and ``U`` at every record.
    record_at : array_like of int, optional
        Explicit record steps (e.g. log-spaced), overriding ``record_every``; ``0`` and ``steps``
        are always included.
    device : str or torch.device, optional
        Run the ensemble on this torch device (e.g. ``"cuda"``) instead of NumPy on the CPU
        (linear model, ``sampler="wishart"``, ``B ≥ d``). Same law and results type; the random
        stream is one per ensemble there, so a replica's draws also depend on the ensemble.

    Returns
    -------
    SGDResult
        ``steps`` (R,), ``tau = steps η²/B``, ``S = WᵀW`` and ``Q = WᵀW − UUᵀ`` (seeds, R, k, k),
        ``loss`` (seeds, R) the population loss.

    Raises
    ------
    ValueError
        On bad input (naming the parameter), including ``activation="relu"`` with
        ``sampler="wishart"``.
    symbreak.engine.DivergenceError
        If a replica runs past its stability edge; the message names ``η``, ``B`` and the step.
    """
    lam, k, activation, sampler, dt, seeds = _check_common(lambdas, k, activation, sampler, dtype, seeds)
    eta = check_positive("eta", eta)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    steps = check_int("steps", steps, minimum=1, maximum=MAX_STEPS)
    if record_at is None:
        grid = record_steps(steps, record_every)
    else:
        at = np.asarray(record_at)
        if at.ndim != 1 or not np.issubdtype(at.dtype, np.integer) or np.any(at < 0) or np.any(at > steps):
            raise ValueError(f"record_at must be a 1-D array of integer steps in [0, {steps}]")
        grid = np.unique(np.concatenate([[0], at, [steps]]).astype(np.int64))
    return _run(
        lam,
        k,
        np.array([eta]),
        np.array([batch_size]),
        [grid],
        seeds=seeds,
        init=init,
        init_std=init_std,
        activation=activation,
        sampler=sampler,
        dtype=dt,
        seed=seed,
        record_weights=record_weights,
        device=device,
    )[0]


def simulate_sgd_grid(
    lambdas,
    k: int,
    etas,
    batch_sizes,
    tau_max,
    *,
    n_records: int = 200,
    seeds: int = 1,
    init="pca",
    activation: str = "linear",
    sampler: str = "wishart",
    dtype=np.float64,
    seed=None,
    init_std: float = 0.01,
    record_weights: bool = False,
) -> list[SGDResult]:
    """Several ``(η, B)`` configurations, each to its own slow-time horizon, as one ensemble.

    Configuration ``c`` runs ``round(τ_max,c B_c/η_c²)`` steps and is recorded ``n_records + 1``
    times, evenly in slow time. All configurations × seeds share the batched engine and both cores
    (work is balanced between the two threads); replicas that finish leave the ensemble.

    Parameters
    ----------
    etas, batch_sizes : array_like, shape (n,)
        One learning rate and batch size per configuration.
    tau_max : float or array_like, shape (n,)
        Slow-time horizon of each configuration.
    init : str, pair (W0, U0), or list of these
        As in :func:`simulate_sgd`; a list gives each configuration its own initialisation.

    Returns
    -------
    list of SGDResult
        One per configuration, in order. Other parameters as in :func:`simulate_sgd`.
    """
    lam, k, activation, sampler, dt, seeds = _check_common(lambdas, k, activation, sampler, dtype, seeds)
    etas = check_positive_array("etas", etas)
    bsz = np.asarray(batch_sizes)
    if bsz.shape != etas.shape:
        raise ValueError("batch_sizes must have one entry per learning rate")
    bsz = np.array([check_int("batch_sizes", b, minimum=1) for b in bsz], dtype=np.int64)
    tau_max = np.broadcast_to(_broadcast_positive("tau_max", tau_max), etas.shape)
    n_records = check_int("n_records", n_records, minimum=1, maximum=10**7)
    rec = []
    for eta, b, tm in zip(etas, bsz, tau_max):
        steps_f = tm * b / eta**2
        if not steps_f <= MAX_STEPS:
            raise ValueError(
                f"tau_max * B / eta² = {steps_f:.3g} SGD steps (eta = {eta:g}, B = {b}) exceeds "
                f"{MAX_STEPS}: shorten tau_max"
            )
        total = max(1, int(round(steps_f)))
        rec.append(np.unique(np.round(np.linspace(0, total, n_records + 1)).astype(np.int64)))
    return _run(
        lam,
        k,
        etas,
        bsz,
        rec,
        seeds=seeds,
        init=init,
        init_std=init_std,
        activation=activation,
        sampler=sampler,
        dtype=dt,
        seed=seed,
        record_weights=record_weights,
    )
