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
from ._common import DIVERGENCE_LIMIT, _mlp_gradients, _tensor, _torch

__all__ = [
    "kernel_alignment",
    "linear_cka",
    "mutual_knn",
    "init_mlp",
    "mlp_hidden",
    "mlp_sharpness",
    "PairRun",
    "train_mlp_pair",
    "GridRun",
    "train_pair_grid",
    "MEASURES",
    "cosine_mutual_knn_batch",
    "similarity_scores",
    "unit_imbalance",
    "unit_charges",
    "pair_sizes",
    "AlignmentStudy",
    "alignment_study",
]


# ---------------------------------------------------------------------------------------------
# representation similarity
# ---------------------------------------------------------------------------------------------
def _check_probe(probe, Xa, Xb):
    """The two views of the probe samples (``(Pa, Pb)``; ``None``: the training views themselves)."""
    if probe is None:
        return Xa, Xb
    if not isinstance(probe, (tuple, list)) or len(probe) != 2:
        raise ValueError("probe must be a pair (Pa, Pb) of the two views of the probe samples")
    pa = check_array("probe[0]", probe[0], ndim=2)
    pb = check_array("probe[1]", probe[1], ndim=2)
    if pa.shape[0] != pb.shape[0] or pa.shape[0] < 2 or pa.shape[1] != Xa.shape[1] or pb.shape[1] != Xb.shape[1]:
        raise ValueError(
            f"probe views must have the same number (>= 2) of rows and {Xa.shape[1]} and "
            f"{Xb.shape[1]} columns, got {pa.shape} and {pb.shape}"
        )
    return pa, pb


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


def mlp_sharpness(weights, X, Y, *, activation: str = "relu", tol: float = 1e-8, seed=None) -> np.ndarray:
    """Largest eigenvalue of the Hessian of the full-batch loss ``½ mean_i ‖f(x_i) − y_i‖²`` of every
    replica of a stacked MLP (the :func:`init_mlp` layout): the sharpness that full-batch gradient
    descent at rate ``η`` needs below ``2/η`` to be stable at that point.

    Lanczos iteration (``scipy.sparse.linalg.eigsh``, largest algebraic eigenvalue, so a negative
    eigenvalue of larger magnitude does not take its place) on Hessian–vector products by double
    back-propagation in double precision, one replica at a time.

    Parameters
    ----------
    weights : list of array_like, shape (R, out, in)
        The layers ``W_1, ..., W_D`` of ``R`` replicas.
    X : array_like, shape (n, input)
        The training inputs (``n ≥ 1``).
    Y : array_like, shape (n, output)
        The noiseless targets.
    activation : {"relu", "tanh"}
    tol : float
        Relative accuracy of the eigenvalue, ``0 < tol < 1``.
    seed : int, optional
        Seed of the Lanczos start vectors, one stream per replica
        (:func:`symbreak.engine.replica_streams`).

    Returns
    -------
    numpy.ndarray, shape (R,)
    """
    from scipy.sparse.linalg import ArpackError, LinearOperator, eigsh

    torch = _torch()
    check_choice("activation", activation, ("relu", "tanh"))
    tol = check_positive("tol", tol)
    if tol >= 1:
        raise ValueError(f"tol must be in (0, 1), got {tol}")
    X = check_array("X", X, ndim=2)
    Y = check_array("Y", Y, ndim=2)
    if X.shape[0] < 1 or X.shape[0] != Y.shape[0]:
        raise ValueError(f"X and Y must hold the same number (>= 1) of rows, got {X.shape[0]} and {Y.shape[0]}")
    mlp_hidden(weights, X[:1], activation)  # validates the stack and X's width
    ws = [check_array(f"weights[{i}]", w, ndim=3) for i, w in enumerate(weights)]
    if ws[-1].shape[1] != Y.shape[1]:
        raise ValueError(f"Y must have {ws[-1].shape[1]} columns (the network's outputs), got {Y.shape[1]}")
    phi = torch.relu if activation == "relu" else torch.tanh
    tx, ty = _tensor(X), _tensor(Y)
    shapes = [w.shape[1:] for w in ws]
    sizes = [int(np.prod(sh)) for sh in shapes]
    out = np.empty(ws[0].shape[0])
    for r, g in enumerate(replica_streams(seed, range(ws[0].shape[0]))):
        params = [_tensor(w[r], requires_grad=True) for w in ws]
        h = tx
        for w in params[:-1]:
            h = phi(h @ w.T)
        loss = 0.5 * ((h @ params[-1].T - ty) ** 2).sum(-1).mean()
        grads = torch.autograd.grad(loss, params, create_graph=True)

        def hvp(v, params=params, grads=grads):
            vs = torch.split(torch.from_numpy(np.asarray(v, dtype=float).ravel()), sizes)
            dot = sum((gr * vv.reshape(sh)).sum() for gr, vv, sh in zip(grads, vs, shapes))
            hv = torch.cat([x.reshape(-1) for x in torch.autograd.grad(dot, params, retain_graph=True)]).numpy()
            if not np.all(np.isfinite(hv)):
                raise ValueError(
                    "mlp_sharpness: the Hessian left the float64 range (weights, X or Y too extreme in scale)"
                )
            return hv

        dim = sum(sizes)
        op = LinearOperator((dim, dim), matvec=hvp, dtype=float)
        try:
            out[r] = eigsh(op, k=1, which="LA", tol=tol, v0=g.standard_normal(dim), return_eigenvectors=False)[0]
        except ArpackError as exc:  # e.g. a Hessian that vanishes to rounding
            raise ValueError(f"mlp_sharpness: the Lanczos iteration failed on replica {r} ({exc})") from None
    if not np.all(np.isfinite(out)):
        raise ValueError("mlp_sharpness: the Hessian left the float64 range (weights, X or Y too extreme in scale)")
    return out


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
    pa, pb = _check_probe(probe, Xa, Xb)
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


# ---------------------------------------------------------------------------------------------
# a grid of paired runs: settings × seeds in one batched run, with snapshots at matched loss
# ---------------------------------------------------------------------------------------------
@dataclass
class GridRun:
    """Record of :func:`train_pair_grid`: ``G`` settings × ``S`` seeds of pairs of networks.

    Attributes
    ----------
    steps : numpy.ndarray, shape (T,)
        Steps at which the hidden representations were recorded.
    hidden_a, hidden_b : numpy.ndarray, shape (T, G, S, n_probe, width)
        Last hidden layer of network A (B) on the probe samples.
    loss_steps : numpy.ndarray, shape (L,)
        Steps at which the noiseless full training loss was evaluated.
    loss_a, loss_b : numpy.ndarray, shape (L, G, S)
        That loss of network A (B).
    matched_step : numpy.ndarray of int, shape (K, G, S, 2) or None
        With ``match_loss``: the first loss check at which network A (column 0) or B (column 1)
        reached its ``k``-th target loss, ``-1`` where it never did.
    matched_loss : numpy.ndarray, shape (K, G, S, 2) or None
        Its loss at that check (NaN where never reached).
    matched_a, matched_b : numpy.ndarray, shape (K, G, S, n_probe, width) or None
        Its hidden representation at that check (NaN where never reached).
    initial_a, initial_b, final_a, final_b : list of numpy.ndarray, shape (G, S, out, in)
        Weights of every layer at the start and at the last step run.
    """

    steps: np.ndarray
    hidden_a: np.ndarray
    hidden_b: np.ndarray
    loss_steps: np.ndarray
    loss_a: np.ndarray
    loss_b: np.ndarray
    matched_step: np.ndarray | None = None
    matched_loss: np.ndarray | None = None
    matched_a: np.ndarray | None = None
    matched_b: np.ndarray | None = None
    initial_a: list | None = None
    initial_b: list | None = None
    final_a: list | None = None
    final_b: list | None = None


def _per_setting(name, value, g, *, positive=False):
    arr = np.atleast_1d(check_array(name, value, ndim=None))
    if arr.ndim != 1 or arr.size not in (1, g):
        raise ValueError(
            f"{name} must be a number or a 1-D array of {g} values (one per setting), got shape {arr.shape}"
        )
    if np.any(arr <= 0 if positive else arr < 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'}, got {arr}")
    return np.broadcast_to(arr, (g,)).astype(float)


def train_pair_grid(
    Xa,
    Xb,
    Y,
    sizes_a,
    sizes_b,
    *,
    eta,
    batch_size: int | None,
    steps: int,
    label_noise,
    weight_decay=0.0,
    seeds: int = 5,
    record_at=None,
    loss_every: int = 10,
    match_loss=None,
    probe=None,
    activation: str = "relu",
    until_matched: bool = False,
    seed=None,
) -> GridRun:
    """Train pairs of networks (A on view ``Xa``, B on view ``Xb``) for a grid of settings and seeds, batched.

    Setting ``g`` has learning rate ``eta[g]``, label noise ``label_noise[g]`` and weight decay
    ``weight_decay[g]``; seed ``s`` fixes the initialisation of both networks, the minibatch indices
    and the standard-normal draws of the label noise (scaled by ``label_noise[g]``). Every setting
    runs every seed, so runs that share a seed differ only in their setting: differences between
    settings are *paired* over seeds. Seed ``s`` draws from stream ``s`` of
    :func:`symbreak.engine.replica_streams`, so its runs do not depend on how many seeds run. The
    step is that of :func:`train_mlp_pair` (the initialisation is :func:`init_mlp`'s): square loss
    ``½‖f(x) − y − ε‖²`` averaged over the minibatch, label noise ``ε ~ N(0, σ² I)`` drawn afresh at
    every step and shared by the two networks, weight decay ``γ‖W‖²/2``; ``batch_size=None`` is
    full-batch gradient descent. The networks train in single precision (half the time of double;
    its rounding, ~1e-7 relative, is far below the differences between seeds) and are recorded in
    double.

    Parameters
    ----------
    Xa, Xb, Y, sizes_a, sizes_b, probe, activation
        As in :func:`train_mlp_pair`.
    eta, label_noise, weight_decay : float or array_like, shape (G,)
        Per setting (a number is the same for every setting); ``eta > 0``, the others ``>= 0``.
    batch_size : int or None
    steps : int
    seeds : int
        Seeds per setting (``S``).
    record_at : sequence of int, optional
        Steps at which the probe's hidden representations are recorded (default ``0`` and ``steps``).
    loss_every : int
        The noiseless full training loss is evaluated every ``loss_every`` steps (and at the end).
    match_loss : array_like, shape (K, G, S, 2), optional
        ``K`` sets of target losses of network A and B of every run: at the first loss check where
        a network's loss is at or below a target, its hidden representation is kept (``matched_*``,
        one per target set).
    until_matched : bool
        With ``match_loss``: stop at the first loss check at which every network has reached every
        target (the records then end there); ``steps`` is the most it runs.
    seed : int, optional

    Returns
    -------
    GridRun

    Raises
    ------
    symbreak.engine.DivergenceError
        If a network's weights blow up.
    """
    torch = _torch()
    check_choice("activation", activation, ("relu", "tanh"))
    Xa = check_array("Xa", Xa, ndim=2)
    Xb = check_array("Xb", Xb, ndim=2)
    Y = check_array("Y", Y, ndim=2)
    n, m = Y.shape
    if Xa.shape[0] != n or Xb.shape[0] != n:
        raise ValueError(f"Xa, Xb and Y must have the same number of rows, got {Xa.shape[0]}, {Xb.shape[0]}, {n}")
    sizes = {}
    for name, sz, X in (("sizes_a", sizes_a, Xa), ("sizes_b", sizes_b, Xb)):
        if isinstance(sz, (str, bytes)) or not hasattr(sz, "__len__"):
            raise TypeError(f"{name} must be a sequence of layer widths, got {type(sz).__name__}")
        if len(sz) < 3 or sz[0] != X.shape[1] or sz[-1] != m:
            raise ValueError(
                f"{name} must run from the view's {X.shape[1]} features to {m} outputs "
                f"through at least one hidden layer, got {list(sz)}"
            )
        sizes[name] = list(sz)
    sizes_g = [np.atleast_1d(np.asarray(v)).size for v in (eta, label_noise, weight_decay)]
    g_count = max(sizes_g)
    if len({c for c in sizes_g if c > 1}) > 1:
        raise ValueError(
            "eta, label_noise and weight_decay must each be a number or hold one value per setting (the same "
            f"number of settings), got {sizes_g[0]}, {sizes_g[1]} and {sizes_g[2]} values"
        )
    eta_g = _per_setting("eta", eta, g_count, positive=True)
    noise_g = _per_setting("label_noise", label_noise, g_count)
    wd_g = _per_setting("weight_decay", weight_decay, g_count)
    full = batch_size is None
    b = n if full else check_int("batch_size", batch_size, minimum=1, maximum=n)
    steps = check_int("steps", steps, minimum=1)
    s_count = check_int("seeds", seeds, minimum=1, maximum=MAX_DRAWS)
    loss_every = check_int("loss_every", loss_every, minimum=1, maximum=steps)
    if not isinstance(until_matched, (bool, np.bool_)) or (until_matched and match_loss is None):
        raise ValueError(f"until_matched must be a bool, and True only with match_loss, got {until_matched!r}")
    if record_at is None:
        record_at = [0, steps]
    rec = np.unique(check_array("record_at", record_at, ndim=1).astype(int))
    if rec.size == 0 or rec[0] < 0 or rec[-1] > steps or not np.array_equal(rec, np.unique(np.asarray(record_at))):
        raise ValueError(f"record_at must be integer steps in [0, {steps}], got {record_at!r}")
    pa, pb = _check_probe(probe, Xa, Xb)
    R = g_count * s_count
    targets = None
    if match_loss is not None:
        targets = check_array("match_loss", match_loss, finite=False)
        if targets.ndim != 4 or targets.shape[1:] != (g_count, s_count, 2) or np.any(np.isnan(targets)):
            raise ValueError(
                f"match_loss must be (K, {g_count}, {s_count}, 2) target losses without NaN, got shape {targets.shape}"
            )
        targets = targets.reshape(-1, R, 2)
    check_allocation(
        "records × runs × probe × widths", rec.size * R * pa.shape[0] * (sizes["sizes_a"][-2] + sizes["sizes_b"][-2])
    )

    seeds3 = make_rng(seed).integers(0, 2**31, size=3)
    tile = np.tile(np.arange(s_count), g_count)  # replica r = g·S + s runs seed s

    def f32(a):
        return torch.from_numpy(np.array(a, dtype=np.float32, order="C"))

    init_a = [w[tile] for w in init_mlp(sizes["sizes_a"], s_count, seed=int(seeds3[0]))]
    init_b = [w[tile] for w in init_mlp(sizes["sizes_b"], s_count, seed=int(seeds3[1]))]
    wa = [f32(w) for w in init_a]
    wb = [f32(w) for w in init_b]
    tile_t = torch.from_numpy(tile)
    streams = replica_streams(int(seeds3[2]), range(s_count))
    block = int(min(256, max(1, 2**21 // (s_count * b * m))))
    ta, tb, ty = f32(Xa), f32(Xb), f32(Y)
    eta_r = f32(np.repeat(eta_g, s_count)).reshape(R, 1, 1)
    noise_r = f32(np.repeat(noise_g, s_count)).reshape(R, 1, 1)
    wd_r = f32(np.repeat(wd_g, s_count)).reshape(R, 1, 1)
    any_wd = bool(np.any(wd_g > 0))
    phi = torch.relu if activation == "relu" else torch.tanh
    xa_full, xb_full = ta.expand(R, *ta.shape), tb.expand(R, *tb.shape)
    ty_full = ty.expand(R, *ty.shape)

    def forward(ws, x):
        h = x
        for w in ws[:-1]:
            h = phi(h @ w.transpose(1, 2))
        return h @ ws[-1].transpose(1, 2)

    def hidden(ws, x):
        return mlp_hidden([w.detach().numpy().astype(float) for w in ws], x, activation)

    loss_steps = np.unique(np.append(np.arange(0, steps + 1, loss_every), steps))
    rec_a, rec_b, la, lb = [], [], [], []
    shape_a = (R, pa.shape[0], sizes["sizes_a"][-2])
    shape_b = (R, pb.shape[0], sizes["sizes_b"][-2])
    if targets is not None:
        k_count = targets.shape[0]
        m_step = np.full((k_count, R, 2), -1)
        m_loss = np.full((k_count, R, 2), np.nan)
        m_a, m_b = np.full((k_count,) + shape_a, np.nan), np.full((k_count,) + shape_b, np.nan)
    for t in range(steps + 1):
        if t in rec:
            rec_a.append(hidden(wa, pa))
            rec_b.append(hidden(wb, pb))
        if t == loss_steps[len(la)]:
            with torch.no_grad():
                cur_a = (0.5 * ((forward(wa, xa_full) - ty_full) ** 2).sum(-1).mean(-1)).numpy().astype(float)
                cur_b = (0.5 * ((forward(wb, xb_full) - ty_full) ** 2).sum(-1).mean(-1)).numpy().astype(float)
            la.append(cur_a)
            lb.append(cur_b)
            if not (np.all(np.isfinite(cur_a)) and np.all(np.isfinite(cur_b))):
                mag = np.inf
            else:
                mag = max(
                    float(max(w.detach().abs().max() for w in wa)), float(max(w.detach().abs().max() for w in wb))
                )
            if not np.isfinite(mag) or mag > DIVERGENCE_LIMIT:
                raise DivergenceError(
                    t,
                    0,
                    {"eta": eta_g.tolist(), "batch_size": b},
                    mag,
                    DIVERGENCE_LIMIT,
                    "gradient descent" if full else "SGD",
                )
            if targets is not None:
                for col, cur, ws, x, store in ((0, cur_a, wa, pa, m_a), (1, cur_b, wb, pb, m_b)):
                    new = (m_step[:, :, col] < 0) & (cur <= targets[:, :, col])  # (K, R)
                    if np.any(new):
                        h = hidden(ws, x)
                        for k in range(k_count):
                            store[k, new[k]] = h[new[k]]
                        m_step[new, col] = t
                        m_loss[:, :, col] = np.where(new, cur, m_loss[:, :, col])
                if until_matched and np.all(m_step >= 0):
                    break
        if t == steps:
            break
        if t % block == 0:
            if not full:
                idx_blk = np.stack([g.integers(0, n, size=(block, b)) for g in streams], axis=1)[:, tile]
                idx_blk = torch.from_numpy(idx_blk)
            noise_blk = torch.from_numpy(
                np.stack([g.standard_normal((block, b, m), dtype=np.float32) for g in streams], axis=1)
            )
        noise = noise_r * noise_blk[t % block][tile_t]
        if full:
            xa, xb, target = xa_full, xb_full, ty_full + noise
        else:
            idx = idx_blk[t % block]
            xa, xb, target = ta[idx], tb[idx], ty[idx] + noise
        grads = _mlp_gradients(wa, xa, target, activation) + _mlp_gradients(wb, xb, target, activation)
        for w, g in zip(wa + wb, grads):
            if any_wd:
                g = g + wd_r * w
            w -= eta_r * g

    def grid(x, lead=()):
        x = np.stack(x) if isinstance(x, list) else x
        return x.reshape(lead + (g_count, s_count) + x.shape[len(lead) + 1 :])

    k_lead = () if targets is None else (targets.shape[0],)

    out = GridRun(
        steps=rec[: len(rec_a)],
        hidden_a=grid(rec_a, (len(rec_a),)),
        hidden_b=grid(rec_b, (len(rec_b),)),
        loss_steps=loss_steps[: len(la)],
        loss_a=grid(la, (len(la),)),
        loss_b=grid(lb, (len(lb),)),
        initial_a=[grid(w) for w in init_a],
        initial_b=[grid(w) for w in init_b],
        final_a=[grid(w.detach().numpy().astype(float)) for w in wa],
        final_b=[grid(w.detach().numpy().astype(float)) for w in wb],
    )
    if targets is not None:
        out.matched_step, out.matched_loss = grid(m_step, k_lead), grid(m_loss, k_lead)
        out.matched_a, out.matched_b = grid(m_a, k_lead), grid(m_b, k_lead)
    return out


def cosine_mutual_knn_batch(H1, H2, k: int = 10) -> np.ndarray:
    """Mutual k-NN with the cosine distance (Huh et al. 2024) of every pair of representations.

    The batched form of :func:`symbreak.beyond.verdicts.cosine_mutual_knn`: each sample's
    representation is scaled to unit length (a zero row stays zero), its ``k`` nearest neighbours
    (itself excluded) are those at the smallest Euclidean distance, ``2 − 2 cos`` between unit
    vectors, so the largest cosine similarities; and the score is the mean over
    samples of the fraction of neighbours the two representations share.

    Parameters
    ----------
    H1, H2 : array_like, shape (..., n_samples, features_1), (..., n_samples, features_2)
        Leading axes broadcast.
    k : int
        ``1 <= k <= n_samples - 1``.

    Returns
    -------
    numpy.ndarray
        The broadcast leading shape; ``≈ k/n`` for unrelated representations, 1 for the same
        neighbourhoods.
    """
    H1, H2 = _pair(H1, H2)
    n = H1.shape[-2]
    if n < 2:
        raise ValueError(f"H1 and H2 must hold at least 2 samples, got {n}")
    k = check_int("k", k, minimum=1, maximum=n - 1)
    lead = np.broadcast_shapes(H1.shape[:-2], H2.shape[:-2])
    H1 = np.broadcast_to(H1, lead + H1.shape[-2:]).reshape((-1,) + H1.shape[-2:])
    H2 = np.broadcast_to(H2, lead + H2.shape[-2:]).reshape((-1,) + H2.shape[-2:])

    torch = _torch()

    def neighbours(h):
        norm = np.linalg.norm(h, axis=-1, keepdims=True)
        u = torch.from_numpy(h / np.where(norm > 0, norm, 1.0))
        sq = (u**2).sum(-1)
        # squared distance of the unit vectors, 2 − 2 cos (a zero row is at distance 1 from all)
        d = sq[:, :, None] + sq[:, None, :] - 2 * u @ u.transpose(1, 2)
        d[:, torch.arange(n), torch.arange(n)] = torch.inf
        return torch.topk(d, k, dim=-1, largest=False, sorted=False).indices.numpy()  # (P, n, k)

    out = np.empty(H1.shape[0])
    chunk = max(1, 2**22 // (n * n))  # about 32 MiB of similarities at a time
    for start in range(0, H1.shape[0], chunk):
        a, b = neighbours(H1[start : start + chunk]), neighbours(H2[start : start + chunk])
        member = np.zeros((a.shape[0], n, n), dtype=bool)
        np.put_along_axis(member, a, True, axis=-1)
        hits = np.take_along_axis(member, b, axis=-1).sum(-1)  # (P, n)
        out[start : start + chunk] = hits.mean(-1) / k
    return out.reshape(lead)


#: The three similarity measures of :func:`similarity_scores`, in order.
MEASURES = ("kernel alignment", "linear CKA", "mutual 10-NN")


def similarity_scores(H1, H2, k: int = 10) -> dict:
    """The three similarity measures of two representations of the same samples.

    Returns ``{"kernel alignment": ..., "linear CKA": ..., "mutual k-NN": ...}`` (the last with
    ``k`` neighbours and the cosine distance, its key naming the number: ``"mutual 10-NN"`` for the
    default), each an array of the broadcast leading shape of ``H1`` and ``H2`` (see
    :func:`kernel_alignment`, :func:`linear_cka`, :func:`cosine_mutual_knn_batch`).
    """
    H1, H2 = _pair(H1, H2)
    return {
        MEASURES[0]: np.asarray(kernel_alignment(H1, H2)),
        MEASURES[1]: np.asarray(linear_cka(H1, H2)),
        f"mutual {int(k)}-NN": cosine_mutual_knn_batch(H1, H2, k),
    }


def _layers(weights):
    if isinstance(weights, (str, bytes, np.ndarray)) or not hasattr(weights, "__len__") or len(weights) < 2:
        raise ValueError("weights must be a list of at least two stacked layers (..., out, in)")
    ws = [check_array(f"weights[{i}]", w) for i, w in enumerate(weights)]
    for i in range(1, len(ws)):
        if ws[i].ndim < 2 or ws[i].shape[:-2] != ws[0].shape[:-2] or ws[i].shape[-1] != ws[i - 1].shape[-2]:
            raise ValueError(
                f"weights[{i}] {ws[i].shape} must follow weights[{i - 1}] {ws[i - 1].shape} "
                "(same leading axes, input width = the previous output width)"
            )
    return ws


def unit_charges(weights) -> np.ndarray:
    """Charge ``q_j = ‖w_in‖² − ‖w_out‖²`` of every hidden unit (row ``j`` of ``W_i``, column ``j`` of
    ``W_{i+1}``), the hidden layers one after the other: shape ``(..., hidden units)``.

    A ReLU unit's rescaling symmetry makes ``⟨w_in, ∇_{w_in}L⟩ = ⟨w_out, ∇_{w_out}L⟩`` for any loss of the
    network's output (label noise included), so a gradient step with weight decay ``γ`` maps
    ``q → (1 − ηγ)² q + η²(‖∇_{w_in}L‖² − ‖∇_{w_out}L‖²)``: at first order in ``η`` gradient descent
    conserves every charge and weight decay shrinks it by ``(1 − ηγ)²`` per step.
    """
    ws = _layers(weights)
    return np.concatenate([(a**2).sum(-1) - (b**2).sum(-2) for a, b in zip(ws[:-1], ws[1:])], axis=-1)


def unit_imbalance(weights) -> np.ndarray:
    """Relative norm imbalance of the hidden units of stacked MLP weights.

    A ReLU unit ``j`` of hidden layer ``i`` keeps the rescaling symmetry ``w_in → c w_in``,
    ``w_out → w_out / c``; its charge ``q_j = ‖w_in‖² − ‖w_out‖²`` (row ``j`` of ``W_i``, column ``j``
    of ``W_{i+1}``) is what weight decay drives to 0 (norm balance: at a stationary point of
    ``L + γ‖θ‖²/2`` the rescaling direction gives ``γ q_j = 0``; the Platonic paper's footnote to its
    Eq. 33). Returned: ``Σ_j |q_j| / Σ_j (‖w_in‖² + ‖w_out‖²)`` over every hidden unit of the network,
    in ``[0, 1]``, 0 for a norm-balanced network.

    Parameters
    ----------
    weights : list of array_like, shape (..., out, in)
        The layers ``W_1, ..., W_D`` (leading axes: replicas, settings, seeds).

    Returns
    -------
    numpy.ndarray
        The leading shape of the weights.
    """
    ws = _layers(weights)
    num = den = 0.0
    for w_in, w_out in zip(ws[:-1], ws[1:]):
        a, b = (w_in**2).sum(-1), (w_out**2).sum(-2)
        num = num + np.abs(a - b).sum(-1)
        den = den + (a + b).sum(-1)
    if np.any(den == 0):
        raise ValueError("a network has all hidden-unit weights zero: its imbalance is undefined")
    return num / den


# ---------------------------------------------------------------------------------------------
# the page's study: SGD with label noise against its controls, over widths, learning rates, seeds
# ---------------------------------------------------------------------------------------------
def pair_sizes(width: int, d_a: int, d_b: int, m: int) -> tuple[list, list]:
    """Layer sizes of the page's two networks at width ``w``: A ``[d_a, w, w, m]`` (two hidden
    layers), B ``[d_b, 3w/2, 3w/4, 5w/4, m]`` (three; ``[40, 48, 24, 40, 10]`` at ``w = 32``)."""
    w = check_int("width", width, minimum=4, maximum=4096)
    return [d_a, w, w, m], [d_b, (3 * w) // 2, (3 * w) // 4, (5 * w) // 4, m]


@dataclass
class AlignmentStudy:
    """What :func:`alignment_study` measured. Every array has a last axis of ``S`` seeds.

    Attributes
    ----------
    widths, etas : tuple
        The widths and the SGD learning rates.
    main_width : int
        The width at which every learning rate, gradient descent at matched steps and weight decay run.
    steps, sweep_steps : int
        SGD's steps (all widths); gradient descent's most steps at the other widths.
    record_steps : numpy.ndarray
        Steps of the similarity records at the main width.
    scores : dict
        ``scores[(method, width, eta)][measure]`` → (S,) similarity of the last hidden layers of A
        and B on the probe samples, for ``method`` in ``"SGD"`` (label noise, at the last step),
        ``"SGD without label noise"`` (same steps and minibatches), ``"GD at matched loss"`` (each
        network at the first check where its loss reached the SGD run's), ``"GD at matched steps"``
        and ``"GD + weight decay"`` (main width only; ``eta`` is the SGD rate they are matched to).
    series : dict
        ``series[(method, eta)][measure]`` → (T, S) similarity at ``record_steps`` (main width).
    loss : dict
        ``loss[(method, width, eta)]`` → (S,): the larger of the two networks' noiseless training
        loss at the end (SGD: mean over the last eighth of its run).
    fit : dict
        ``fit[(method, width, eta)]`` → (S,): the larger of the two networks' final training loss
        (mean over the last eighth) over its initial value, for the runs of ``loss_change``.
    loss_ratio : dict
        ``loss_ratio[(width, eta)]`` → (S, 2): gradient descent's loss at its matched check over the
        SGD target, for A and B.
    matched_step : dict
        ``matched_step[(width, eta)]`` → (S, 2) that check's step.
    loss_change, cka_change : dict
        ``[(method, width, eta)]`` → (S,): over the last doubling of the run (``T/2 → T``), the
        relative change of the training loss ``(L̄(T/2) − L̄(T))/L̄(T)`` (``L̄(t)``: mean of the loss
        checks in ``(t − T/8, t]``, the larger of the two networks) and the change of linear CKA
        ``c(T) − c(T/2)``.
    imbalance : dict
        ``imbalance[method]`` → (S,): :func:`unit_imbalance` of network A at the end (main width,
        largest ``eta``), and ``imbalance["initial"]``.
    charges : dict
        ``charges[method]`` → (S, hidden units): :func:`unit_charges` of network A at the start
        (``"initial"``) and at the end of gradient descent (``"GD"``) and of gradient descent with weight
        decay (``"GD + weight decay"``), main width.
    sharpness : dict
        Main width: ``sharpness["initial"]`` → (S, 2), the largest Hessian eigenvalue
        (:func:`mlp_sharpness`) of the full-batch noiseless loss of network A (column 0) and B
        (column 1) at initialisation; ``sharpness[("SGD", eta)]`` for every SGD rate and
        ``sharpness[("GD", eta_gd)]`` the same at the end of the run.
    wd_decay : float
        ``(1 − ηγ)^{2T}``: the factor by which gradient descent with weight decay ``γ`` shrinks every
        unit's charge at first order in ``η`` (the part of the change that is ``O(η²)`` per step aside).
    """

    widths: tuple
    etas: tuple
    main_width: int
    steps: int
    sweep_steps: int
    record_steps: np.ndarray
    scores: dict
    series: dict
    loss: dict
    fit: dict
    loss_ratio: dict
    matched_step: dict
    loss_change: dict
    cka_change: dict
    imbalance: dict
    charges: dict
    sharpness: dict
    wd_decay: float


def _window_mean(loss_steps, loss, t, span):
    """Mean of the loss checks in ``(t − span, t]`` (axis 0), at least the check at ``t``."""
    sel = (loss_steps > t - span) & (loss_steps <= t)
    if not np.any(sel):
        sel = loss_steps == loss_steps[np.searchsorted(loss_steps, t, side="right") - 1]
    return loss[sel].mean(axis=0)


def alignment_study(
    Xa,
    Xb,
    Y,
    probe,
    *,
    widths=(16, 32, 64),
    main_width: int = 32,
    etas=(0.02, 0.04),
    steps: int = 4000,
    sweep_steps: int = 3000,
    seeds: int = 6,
    batch_size: int = 8,
    label_noise: float = 1.0,
    weight_decay: float = 1e-2,
    loss_every: int = 50,
    gd_loss_every: int = 10,
    k: int = 10,
    seed=None,
) -> AlignmentStudy:
    """SGD with label noise against its controls, paired over seeds, for the alignment page.

    At every width in ``widths`` and every SGD learning rate (all of ``etas`` at ``main_width``,
    the largest elsewhere): SGD with minibatch ``batch_size`` and label noise ``label_noise``, and
    SGD without label noise (same seeds: same initialisation, minibatches), ``steps`` steps each;
    then full-batch gradient descent at the largest rate, each network snapshotted at the first
    loss check where its noiseless training loss reaches that of the SGD run with the same seed
    (the SGD loss averaged over the last eighth of its run): the comparison at matched training loss.
    At the main width gradient descent also runs ``steps`` steps (matched steps; the run at the
    smaller rate ``η`` is compared with gradient descent's record at the same ``ηt``, the same
    point of the gradient flow), and so does gradient descent with weight decay ``weight_decay``;
    where that run has not reached SGD's loss by then, the same runs continue until it has.
    Elsewhere gradient descent stops once every network is matched (at most ``sweep_steps`` steps).

    Raises
    ------
    RuntimeError
        If gradient descent does not reach an SGD run's loss within ``sweep_steps`` (or ``steps``).

    Parameters
    ----------
    Xa, Xb : array_like, shape (n, d_A), (n, d_B)
        The two views of the training samples.
    Y : array_like, shape (n, m)
        Noiseless targets.
    probe : pair of array_like
        The two views of the held-out samples on which the representations are compared.
    widths : sequence of int
        Network widths (:func:`pair_sizes`); must contain ``main_width``.
    etas : sequence of float
        SGD's learning rates, increasing; gradient descent runs at the largest.
    steps, sweep_steps, seeds, batch_size, label_noise, weight_decay, loss_every, gd_loss_every, k, seed
        As in :func:`train_pair_grid` and :func:`similarity_scores`.

    Returns
    -------
    AlignmentStudy
    """
    Y = check_array("Y", Y, ndim=2)
    Xa, Xb = check_array("Xa", Xa, ndim=2), check_array("Xb", Xb, ndim=2)
    widths = tuple(check_int(f"widths[{i}]", w, minimum=4, maximum=4096) for i, w in enumerate(widths))
    main_width = check_int("main_width", main_width, minimum=4)
    if main_width not in widths:
        raise ValueError(f"main_width must be one of widths {widths}, got {main_width}")
    etas = tuple(check_positive(f"etas[{i}]", e) for i, e in enumerate(etas))
    if not etas or any(b <= a for a, b in zip(etas, etas[1:])):
        raise ValueError(f"etas must be a non-empty increasing sequence of learning rates, got {etas}")
    steps = check_int("steps", steps, minimum=16)
    sweep_steps = check_int("sweep_steps", sweep_steps, minimum=1)
    seeds = check_int("seeds", seeds, minimum=2, maximum=MAX_DRAWS)
    weight_decay = check_positive("weight_decay", weight_decay)
    eta_gd = etas[-1]
    rec = np.unique(np.linspace(0, steps, 9).round().astype(int))
    span = steps / 8
    seeds4 = make_rng(seed).integers(0, 2**31, size=len(widths))
    out = dict(
        scores={},
        series={},
        loss={},
        fit={},
        loss_ratio={},
        matched_step={},
        loss_change={},
        cka_change={},
        imbalance={},
        charges={},
        sharpness={},
    )

    def final_loss(run, gi):
        return np.maximum(
            _window_mean(run.loss_steps, run.loss_a[:, gi], run.loss_steps[-1], span),
            _window_mean(run.loss_steps, run.loss_b[:, gi], run.loss_steps[-1], span),
        )

    def convergence(key, run, gi, cka_t):
        lmax = np.maximum(run.loss_a[:, gi], run.loss_b[:, gi])
        late, mid = (
            _window_mean(run.loss_steps, lmax, steps, span),
            _window_mean(run.loss_steps, lmax, steps // 2, span),
        )
        out["loss_change"][key] = (mid - late) / late
        out["fit"][key] = np.maximum(
            _window_mean(run.loss_steps, run.loss_a[:, gi], steps, span) / run.loss_a[0, gi],
            _window_mean(run.loss_steps, run.loss_b[:, gi], steps, span) / run.loss_b[0, gi],
        )
        i_half = int(np.argmin(np.abs(run.steps - steps // 2)))
        out["cka_change"][key] = cka_t[-1] - cka_t[i_half]

    for w, wseed in zip(widths, seeds4):
        sa, sb = pair_sizes(w, Xa.shape[1], Xb.shape[1], Y.shape[1])
        e_w = etas if w == main_width else (eta_gd,)
        g_e = len(e_w)
        # seed s starts every method of this width from the same networks (the same seed for every grid)
        data = (Xa, Xb, Y, sa, sb)
        common = dict(seeds=seeds, probe=probe, seed=int(wseed))
        rec_sgd = rec if w == main_width else [steps // 2, steps]
        noise_g = [label_noise] * g_e + [0.0] * g_e
        sgd = train_pair_grid(
            *data, eta=list(e_w) * 2, batch_size=batch_size, steps=steps, label_noise=noise_g, record_at=rec_sgd,
            loss_every=loss_every, **common
        )  # fmt: skip
        sc = similarity_scores(sgd.hidden_a, sgd.hidden_b, k)  # (T, G, S)
        targets = np.stack(  # (K = g_e, S, 2)
            [np.stack([_window_mean(sgd.loss_steps, x[:, i], steps, span) for x in (sgd.loss_a, sgd.loss_b)], -1)
             for i in range(g_e)]
        )  # fmt: skip
        for i, e in enumerate(e_w):
            for gi, method in ((i, "SGD"), (g_e + i, "SGD without label noise")):
                key = (method, w, e)
                out["scores"][key] = {mm: v[-1, gi] for mm, v in sc.items()}
                out["loss"][key] = final_loss(sgd, gi)
                convergence(key, sgd, gi, sc[MEASURES[1]][:, gi])
                if w == main_width:
                    out["series"][(method, e)] = {mm: v[:, gi] for mm, v in sc.items()}
        main = w == main_width
        gd_settings = 2 if main else 1
        gd = train_pair_grid(
            *data, eta=eta_gd, batch_size=None, steps=steps if main else sweep_steps, label_noise=label_noise,
            weight_decay=[0.0, weight_decay][:gd_settings], record_at=rec if main else [0], loss_every=gd_loss_every,
            match_loss=np.repeat(targets[:, None], gd_settings, axis=1), until_matched=not main, **common
        )  # fmt: skip
        matched = gd
        if main and np.any(gd.matched_step[:, 0] < 0) and sweep_steps > steps:
            # gradient descent had not reached SGD's loss within the matched steps: the same runs (same seeds,
            # same draws) continued, gradient descent alone, until it does (at most sweep_steps)
            matched = train_pair_grid(
                *data, eta=eta_gd, batch_size=None, steps=sweep_steps, label_noise=label_noise, record_at=[0],
                loss_every=gd_loss_every, match_loss=targets[:, None], until_matched=True, **common
            )  # fmt: skip
        gd_m = matched
        for i, e in enumerate(e_w):
            if np.any(gd_m.matched_step[i, 0] < 0):
                raise RuntimeError(
                    f"gradient descent at width {w} did not reach the loss of SGD at eta={e} within "
                    f"{gd_m.loss_steps[-1]} steps: raise sweep_steps"
                )
        ms = similarity_scores(gd_m.matched_a[:, 0], gd_m.matched_b[:, 0], k)  # (K, S)
        for i, e in enumerate(e_w):
            out["scores"][("GD at matched loss", w, e)] = {mm: v[i] for mm, v in ms.items()}
            out["loss_ratio"][(w, e)] = gd_m.matched_loss[i, 0] / targets[i]
            out["matched_step"][(w, e)] = gd_m.matched_step[i, 0]
        if main:
            gsc = similarity_scores(gd.hidden_a, gd.hidden_b, k)  # (T, 2, S)
            for e in etas:
                # the same point of the gradient flow as `steps` steps at rate e: step steps·e/eta_gd
                i_t = int(np.argmin(np.abs(gd.steps - steps * e / eta_gd)))
                out["scores"][("GD at matched steps", w, e)] = {mm: v[i_t, 0] for mm, v in gsc.items()}
            out["scores"][("GD + weight decay", w, eta_gd)] = {mm: v[-1, 1] for mm, v in gsc.items()}
            out["series"][("GD", eta_gd)] = {mm: v[:, 0] for mm, v in gsc.items()}
            out["series"][("GD + weight decay", eta_gd)] = {mm: v[:, 1] for mm, v in gsc.items()}
            for gi, method in ((0, "GD at matched steps"), (1, "GD + weight decay")):
                key = (method, w, eta_gd)
                out["loss"][key] = final_loss(gd, gi)
                convergence(key, gd, gi, gsc[MEASURES[1]][:, gi])
            i_sgd = len(etas) - 1
            out["imbalance"]["initial"] = unit_imbalance([x[i_sgd] for x in sgd.initial_a])
            out["imbalance"]["SGD"] = unit_imbalance([x[i_sgd] for x in sgd.final_a])
            out["imbalance"]["SGD without label noise"] = unit_imbalance([x[2 * i_sgd + 1] for x in sgd.final_a])
            out["imbalance"]["GD"] = unit_imbalance([x[0] for x in gd.final_a])
            out["imbalance"]["GD + weight decay"] = unit_imbalance([x[1] for x in gd.final_a])
            out["charges"]["initial"] = unit_charges([x[0] for x in gd.initial_a])
            out["charges"]["GD"] = unit_charges([x[0] for x in gd.final_a])
            out["charges"]["GD + weight decay"] = unit_charges([x[1] for x in gd.final_a])

            def sharp(wa_, wb_, sd):
                return np.stack([mlp_sharpness(wa_, Xa, Y, seed=sd), mlp_sharpness(wb_, Xb, Y, seed=sd + 1)], axis=-1)

            out["sharpness"]["initial"] = sharp([x[0] for x in sgd.initial_a], [x[0] for x in sgd.initial_b], 1)
            for i, e in enumerate(etas):
                out["sharpness"][("SGD", e)] = sharp([x[i] for x in sgd.final_a], [x[i] for x in sgd.final_b], 3)
            out["sharpness"][("GD", eta_gd)] = sharp([x[0] for x in gd.final_a], [x[0] for x in gd.final_b], 5)
    return AlignmentStudy(
        widths=widths,
        etas=etas,
        main_width=main_width,
        steps=steps,
        sweep_steps=sweep_steps,
        record_steps=rec,
        wd_decay=float((1 - eta_gd * weight_decay) ** (2 * steps)),
        **out,
    )
