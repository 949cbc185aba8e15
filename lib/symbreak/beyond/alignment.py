"""Representation similarity (kernel alignment, CKA, mutual kNN) and pairs of multilayer perceptrons
trained on the same task.

Pages: ``book/beyond/alignment.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import similarity
from ..engine import DivergenceError, record_steps, replica_streams
from ..rng import make_rng
from ..validation import (
    MAX_DRAWS,
    check_allocation,
    check_array,
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
)
from ._common import DIVERGENCE_LIMIT, _tensor, _torch

__all__ = ["kernel_alignment", "linear_cka", "mutual_knn", "init_mlp", "mlp_hidden", "PairRun", "train_mlp_pair"]


# ---------------------------------------------------------------------------------------------
# representation similarity
# ---------------------------------------------------------------------------------------------
def _reps(name, H):
    H = check_array(name, H)
    if H.ndim < 2:
        raise ValueError(f"{name} must be (..., n_samples, features), got shape {H.shape}")
    return H


def _pair(H1, H2):
    H1, H2 = _reps("H1", H1), _reps("H2", H2)
    if H1.shape[-2] != H2.shape[-2]:
        raise ValueError(f"H1 and H2 must have the same number of samples, got {H1.shape[-2]} and {H2.shape[-2]}")
    try:
        np.broadcast_shapes(H1.shape[:-2], H2.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading axes of H1 {H1.shape[:-2]} and H2 {H2.shape[:-2]} must broadcast together"
        ) from None
    return H1, H2


def kernel_alignment(H1, H2) -> np.ndarray:
    """Uncentred kernel alignment ``⟨K1, K2⟩_F / (‖K1‖_F ‖K2‖_F)`` of ``K = H Hᵀ`` over the samples.

    With samples drawn from the data, this is the empirical version of the Platonic chapter's
    Σx-weighted alignment: for linear representations ``h = P x`` it converges to the alignment of
    ``Σ^{1/2} PᵀP Σ^{1/2}`` matrices. Computed from the feature Gram matrices (``‖H1ᵀH2‖²_F``),
    never forming the ``n×n`` kernels. Leading axes broadcast. Invariant to a positive rescaling of
    either representation at any scale in the float64 range: the shared implementation
    :func:`symbreak.similarity.gram_alignment` (also the Platonic chapter's ``gram_alignment``).
    """
    H1, H2 = _pair(H1, H2)
    return similarity.gram_alignment(H1, H2, names=("H1", "H2"))


def linear_cka(H1, H2) -> np.ndarray:
    """Linear centred kernel alignment (CKA, Kornblith et al. 2019): :func:`kernel_alignment` of the
    representations after removing their mean over the samples (:func:`symbreak.similarity.linear_cka`,
    shared with the Platonic chapter; scale-invariant at any scale)."""
    H1, H2 = _pair(H1, H2)
    return similarity.linear_cka(H1, H2, names=("H1", "H2"))


def mutual_knn(H1, H2, k: int = 10) -> float:
    """Mutual k-nearest-neighbour alignment (Huh et al. 2024): the mean over samples of
    ``|N_k^1(i) ∩ N_k^2(i)| / k``, with neighbourhoods in Euclidean distance (self excluded).

    1 when the two representations have the same neighbourhoods, ``≈ k/n`` for unrelated ones.
    The shared implementation :func:`symbreak.similarity.mutual_knn` (scale-invariant at any scale).
    """
    H1, H2 = _reps("H1", H1), _reps("H2", H2)
    if H1.ndim != 2 or H2.ndim != 2 or H1.shape[0] != H2.shape[0]:
        raise ValueError(
            f"H1 and H2 must be 2-D (n_samples, features) with the same n_samples, got shapes {H1.shape} and {H2.shape}"
        )
    n = H1.shape[0]
    if n < 2:
        raise ValueError(f"H1 and H2 must hold at least 2 samples, got {n}")
    k = check_int("k", k, minimum=1, maximum=n - 1)
    return similarity.mutual_knn(H1, H2, k)


# ---------------------------------------------------------------------------------------------
# multilayer perceptrons
# ---------------------------------------------------------------------------------------------
def init_mlp(sizes, replicas: int, *, seed=None) -> list:
    """He-initialised ReLU MLP weights, stacked over replicas: ``W_i`` of shape (R, out, in).

    Parameters
    ----------
    sizes : sequence of int
        ``[input, hidden_1, ..., hidden_{D-1}, output]``, at least three entries (one hidden layer).
    replicas : int
    seed : int, optional
        Replica ``r`` draws its weights from its own stream (:func:`symbreak.engine.replica_streams`),
        so they depend only on ``(seed, r)``, not on how many replicas are drawn.
    """
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__len__"):
        raise TypeError(f"sizes must be a sequence of layer widths, got {type(sizes).__name__} {sizes!r}")
    sizes = [check_int(f"sizes[{i}]", s, minimum=1, maximum=MAX_DRAWS) for i, s in enumerate(sizes)]
    if len(sizes) < 3:
        raise ValueError(f"sizes must list input, at least one hidden width and output, got {sizes}")
    replicas = check_int("replicas", replicas, minimum=1, maximum=MAX_DRAWS)
    check_allocation("replicas × weights of the MLP", replicas * sum(i * o for i, o in zip(sizes[:-1], sizes[1:])))
    shapes = list(zip(sizes[1:], sizes[:-1]))
    weights = [np.empty((replicas, o, i)) for o, i in shapes]
    # one stream per replica (engine.replica_streams): replica r's weights depend only on (seed, r),
    # all its layers drawn in one call
    for r, g in enumerate(replica_streams(seed, range(replicas))):
        z = g.standard_normal(sum(o * i for o, i in shapes))
        start = 0
        for w, (o, i) in zip(weights, shapes):
            w[r] = z[start : start + o * i].reshape(o, i) * np.sqrt(2.0 / i)
            start += o * i
    return weights


def mlp_hidden(weights, X, activation: str = "relu") -> np.ndarray:
    """Last hidden layer's representation ``h_{D-1}`` of every replica on the rows of ``X`` (R, n, width).

    ``X`` is (n, input) or (R, n, input); ``activation`` is ``"relu"`` or ``"tanh"``.
    """
    check_choice("activation", activation, ("relu", "tanh"))
    phi = (lambda z: np.maximum(z, 0.0)) if activation == "relu" else np.tanh
    if isinstance(weights, (str, bytes, np.ndarray)) or not hasattr(weights, "__len__") or len(weights) < 2:
        raise ValueError(
            "weights must be a list of at least two (R, out, in) weight stacks (a hidden layer and the output), "
            f"got {type(weights).__name__} of length {len(weights) if hasattr(weights, '__len__') else 'none'}"
        )
    ws = [check_array(f"weights[{i}]", w, ndim=3) for i, w in enumerate(weights)]
    for i in range(1, len(ws)):
        if ws[i].shape[0] != ws[0].shape[0] or ws[i].shape[2] != ws[i - 1].shape[1]:
            raise ValueError(
                f"weights[{i}] must have shape ({ws[0].shape[0]}, out, {ws[i - 1].shape[1]}) to follow "
                f"weights[{i - 1}] {ws[i - 1].shape} (same replicas, input width = the previous output width), "
                f"got {ws[i].shape}"
            )
    X = check_array("X", X)
    if X.ndim not in (2, 3) or (X.ndim == 3 and X.shape[0] != ws[0].shape[0]):
        raise ValueError(f"X must be (n, input) or ({ws[0].shape[0]}, n, input), got shape {X.shape}")
    h = np.broadcast_to(X, (ws[0].shape[0],) + X.shape[-2:]) if X.ndim == 2 else X
    if h.shape[-1] != ws[0].shape[-1]:
        raise ValueError(f"X has {h.shape[-1]} features, the first layer expects {ws[0].shape[-1]}")
    for w in ws[:-1]:
        h = phi(h @ np.swapaxes(w, 1, 2))
    return h


@dataclass
class PairRun:
    """Record of two networks trained side by side: ``steps`` (T,), hidden representations on the
    probe set ``hidden_a`` (T, R, n, width_A), ``hidden_b`` (T, R, n, width_B), training ``loss_a``,
    ``loss_b`` (T, R) on the noiseless targets, and the final weights."""

    steps: np.ndarray
    hidden_a: np.ndarray
    hidden_b: np.ndarray
    loss_a: np.ndarray
    loss_b: np.ndarray
    weights_a: list
    weights_b: list


def train_mlp_pair(
    Xa,
    Xb,
    Y,
    sizes_a,
    sizes_b,
    *,
    eta: float,
    batch_size: int | None,
    steps: int,
    label_noise: float,
    weight_decay: float = 0.0,
    replicas: int = 1,
    probe=None,
    record_every: int = 100,
    activation: str = "relu",
    seed=None,
) -> PairRun:
    """Train network A on view ``Xa`` and network B on view ``Xb`` of the same samples, square loss.

    Each step draws one minibatch of sample indices per replica, shared by both networks (the two
    networks see the same data points through their own views) and fresh label noise
    ``ε ~ N(0, label_noise² I)`` added to the targets (also shared). Every replica has its own
    streams (initialisation, minibatches, noise: :func:`symbreak.engine.replica_streams`), so
    replica ``r``'s run depends only on ``(seed, r)``, not on how many replicas run. ``batch_size=None`` is
    full-batch gradient descent (the label noise is still drawn, averaged over the whole set).
    Weight decay adds ``weight_decay · ‖W‖²/2`` to the loss.

    Parameters
    ----------
    Xa, Xb : array_like, shape (n, d_A), (n, d_B)
        The two views of the training samples.
    Y : array_like, shape (n, m)
        Noiseless targets.
    sizes_a, sizes_b : sequence of int
        Layer sizes of the two MLPs (input sizes must match the views, output size ``m``).
    eta : float
        Learning rate.
    batch_size : int or None
    steps : int
    label_noise : float
        Standard deviation of the label noise (``≥ 0``).
    weight_decay : float
    replicas : int
        Independent pairs (different initialisations and minibatch streams).
    probe : tuple of two arrays, optional
        ``(Pa, Pb)``: the two views of held-out samples on which the hidden representations are
        recorded (default: the training samples).
    record_every : int
    activation : {"relu", "tanh"}
        Hidden-layer nonlinearity of both networks.
    seed : int, optional

    Raises
    ------
    symbreak.engine.DivergenceError
        If a network's weights blow up.
    """
    check_choice("activation", activation, ("relu", "tanh"))
    return _train_pair(
        Xa,
        Xb,
        Y,
        sizes_a,
        sizes_b,
        eta=eta,
        batch_size=batch_size,
        steps=steps,
        label_noise=label_noise,
        weight_decay=weight_decay,
        replicas=replicas,
        probe=probe,
        record_every=record_every,
        activation=activation,
        seed=seed,
    )


def _train_pair(
    Xa,
    Xb,
    Y,
    sizes_a,
    sizes_b,
    *,
    eta,
    batch_size,
    steps,
    label_noise,
    weight_decay,
    replicas,
    probe,
    record_every,
    activation,
    seed,
):
    torch = _torch()
    Xa = check_array("Xa", Xa, ndim=2)
    Xb = check_array("Xb", Xb, ndim=2)
    Y = check_array("Y", Y, ndim=2)
    n = Y.shape[0]
    if Xa.shape[0] != n or Xb.shape[0] != n:
        raise ValueError(f"Xa, Xb and Y must have the same number of rows, got {Xa.shape[0]}, {Xb.shape[0]}, {n}")
    eta = check_positive("eta", eta)
    full = batch_size is None
    b = n if full else check_int("batch_size", batch_size, minimum=1, maximum=n)
    steps = check_int("steps", steps, minimum=1)
    label_noise = check_nonnegative("label_noise", label_noise)
    weight_decay = check_nonnegative("weight_decay", weight_decay)
    replicas = check_int("replicas", replicas, minimum=1)
    for name, sizes, X in (("sizes_a", sizes_a, Xa), ("sizes_b", sizes_b, Xb)):
        if len(sizes) < 3 or sizes[0] != X.shape[1] or sizes[-1] != Y.shape[1]:
            raise ValueError(
                f"{name} must run from the view's {X.shape[1]} features to {Y.shape[1]} outputs "
                f"through at least one hidden layer, got {list(sizes)}"
            )
    if probe is None:
        pa, pb = Xa, Xb
    else:
        if not isinstance(probe, (tuple, list)) or len(probe) != 2:
            raise ValueError("probe must be a pair (Pa, Pb) of the two views of the probe samples")
        pa = check_array("probe[0]", probe[0], ndim=2)
        pb = check_array("probe[1]", probe[1], ndim=2)
        if pa.shape[0] != pb.shape[0] or pa.shape[0] < 2 or pa.shape[1] != Xa.shape[1] or pb.shape[1] != Xb.shape[1]:
            raise ValueError(
                f"probe views must have the same number (>= 2) of rows and {Xa.shape[1]} and "
                f"{Xb.shape[1]} columns, got {pa.shape} and {pb.shape}"
            )
    rec = record_steps(steps, record_every)
    seeds = make_rng(seed).integers(0, 2**31, size=3)
    wa = [_tensor(w, requires_grad=True) for w in init_mlp(sizes_a, replicas, seed=int(seeds[0]))]
    wb = [_tensor(w, requires_grad=True) for w in init_mlp(sizes_b, replicas, seed=int(seeds[1]))]
    # one stream per replica (engine.replica_streams) for its minibatch indices and label noise:
    # replica r's run depends only on (seed, r). Drawn for `block` steps at once, replica by replica
    # (block sized to keep the noise buffer near 16 MiB).
    streams = replica_streams(int(seeds[2]), range(replicas))
    m = Y.shape[1]
    block = int(min(256, max(1, 2**21 // (replicas * b * m))))
    ta, tb, ty = _tensor(Xa), _tensor(Xb), _tensor(Y)

    phi = torch.relu if activation == "relu" else torch.tanh

    def forward(ws, x):
        h = x
        for w in ws[:-1]:
            h = phi(h @ w.transpose(1, 2))
        return h @ ws[-1].transpose(1, 2)

    rec_a, rec_b, la, lb = [], [], [], []
    j = 0
    for t in range(steps + 1):
        if t == rec[j]:
            with torch.no_grad():
                fa, fb = forward(wa, ta.expand(replicas, *ta.shape)), forward(wb, tb.expand(replicas, *tb.shape))
                la.append((0.5 * ((fa - ty) ** 2).sum(-1).mean(-1)).numpy())
                lb.append((0.5 * ((fb - ty) ** 2).sum(-1).mean(-1)).numpy())
            rec_a.append(mlp_hidden([w.detach().numpy() for w in wa], pa, activation))
            rec_b.append(mlp_hidden([w.detach().numpy() for w in wb], pb, activation))
            j += 1
            mag = max(float(max(w.detach().abs().max() for w in wa)), float(max(w.detach().abs().max() for w in wb)))
            if not np.isfinite(mag) or mag > DIVERGENCE_LIMIT:
                raise DivergenceError(
                    t, 0, {"eta": eta, "batch_size": b}, mag, DIVERGENCE_LIMIT, "gradient descent" if full else "SGD"
                )
        if t == steps:
            break
        if t % block == 0:
            if not full:
                idx_blk = torch.from_numpy(np.stack([g.integers(0, n, size=(block, b)) for g in streams], axis=1))
            noise_blk = torch.from_numpy(np.stack([g.standard_normal((block, b, m)) for g in streams], axis=1))
        idx = torch.arange(n).expand(replicas, n) if full else idx_blk[t % block]
        target = ty[idx] + label_noise * noise_blk[t % block]
        loss = (
            0.5 * ((forward(wa, ta[idx]) - target) ** 2).sum(-1).mean(-1).sum()
            + 0.5 * ((forward(wb, tb[idx]) - target) ** 2).sum(-1).mean(-1).sum()
        )
        if weight_decay > 0:
            loss = loss + 0.5 * weight_decay * sum((w**2).sum() for w in wa + wb)
        grads = torch.autograd.grad(loss, wa + wb)
        with torch.no_grad():
            for w, g in zip(wa + wb, grads):
                w -= eta * g
    return PairRun(
        steps=rec,
        hidden_a=np.stack(rec_a),
        hidden_b=np.stack(rec_b),
        loss_a=np.stack(la),
        loss_b=np.stack(lb),
        weights_a=[w.detach().numpy() for w in wa],
        weights_b=[w.detach().numpy() for w in wb],
    )
