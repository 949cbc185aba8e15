"""Nonlinear networks on real data: what survives of the linear theories.

The library behind the pages *Nonlinear autoencoders on digits* and *Do two ReLU networks align?*
of the part *Beyond the theorems*. The data are scikit-learn's 8×8 handwritten digits, which ship
inside the package (nothing is downloaded). The networks are small torch models run on the CPU as
batched ensembles (a leading replica axis on every weight), with hand-written gradients where the
model is a two-layer autoencoder and autograd for the multilayer perceptrons.

Contents
--------
Data
    :func:`load_digits_data`, :func:`pca_theory`.
Autoencoders ``f(x) = W φ(U x)``
    :func:`ae_gradients`, :func:`init_autoencoder`, :func:`train_autoencoder` (:class:`AERun`),
    :func:`neuron_charges`, :func:`ae_sharpness`, :func:`fit_lambert_rate`.
Representation similarity
    :func:`kernel_alignment`, :func:`linear_cka`, :func:`mutual_knn`.
Multilayer perceptrons
    :func:`init_mlp`, :func:`mlp_hidden`, :func:`train_mlp_pair` (:class:`PairRun`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .engine import DivergenceError, record_steps
from .rng import make_rng, torch_generator
from .synthesis import lambert_scale
from .validation import check_array, check_choice, check_int, check_nonnegative, check_positive

__all__ = [
    "ACTIVATIONS",
    "load_digits_data",
    "pca_theory",
    "ae_gradients",
    "init_autoencoder",
    "neuron_charges",
    "AERun",
    "train_autoencoder",
    "ae_sharpness",
    "ae_drift_terms",
    "fit_lambert_rate",
    "kernel_alignment",
    "linear_cka",
    "mutual_knn",
    "init_mlp",
    "mlp_hidden",
    "PairRun",
    "train_mlp_pair",
]

#: Activations of the autoencoder's hidden layer.
ACTIVATIONS = ("linear", "relu", "tanh")
#: A replica whose largest weight exceeds this (or is not finite) has diverged.
DIVERGENCE_LIMIT = 1e4


def _torch():
    import torch

    return torch


def _tensor(a, requires_grad: bool = False):
    """A float64 torch tensor holding a copy of ``a`` (any memory layout, negative strides included)."""
    t = _torch().from_numpy(np.array(a, dtype=np.float64, order="C", copy=True))
    return t.requires_grad_(requires_grad)


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------
def load_digits_data(name: str = "digits"):
    """A data set shipped with scikit-learn, centred and scaled to ``E‖x‖² = 1``.

    Parameters
    ----------
    name : {"digits", "iris", "wine", "breast_cancer"}
        ``"digits"``: the 1797 8×8 handwritten digits (``d = 64``); the others are the small
        tabular sets scikit-learn also ships (for the exercises). Nothing is downloaded.

    Returns
    -------
    X : numpy.ndarray, shape (n, d)
        Centred data with mean squared norm 1 (so ``tr Σ = 1``).
    y : numpy.ndarray of int, shape (n,)
        Class labels.
    """
    from sklearn import datasets

    loaders = {
        "digits": datasets.load_digits,
        "iris": datasets.load_iris,
        "wine": datasets.load_wine,
        "breast_cancer": datasets.load_breast_cancer,
    }
    check_choice("name", name, tuple(loaders))
    bunch = loaders[name]()
    x = np.asarray(bunch.data, dtype=float)
    if name != "digits":  # tabular sets: standardise the features first (their units differ)
        x = (x - x.mean(0)) / x.std(0)
    x = x - x.mean(axis=0)
    x = x / np.sqrt(np.mean(np.sum(x * x, axis=1)))
    return x, np.asarray(bunch.target, dtype=int)


def pca_theory(X, k: int) -> dict:
    """The linear autoencoder theory fed by a data set's own moments.

    For a linear autoencoder at a PCA solution with ``k`` hidden units the charge
    ``Q = WᵀW − UUᵀ`` drifts at ``dQ/dτ = U C Uᵀ`` with ``C = E[‖x_⊥‖² x_∥ x_∥ᵀ]`` (the
    autoencoder chapter's Eq. 5, which holds for any data distribution); in the eigenbasis and
    with ``S = I`` its diagonal ``c_a = C_aa`` is the growth rate of mode ``a`` in the Lambert-W
    law. For Gaussian data ``c_a = λ_a Σ_{j>k} λ_j``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Centred data.
    k : int
        Hidden width, ``1 ≤ k < d``.

    Returns
    -------
    dict with ``lambdas`` (d,) eigenvalues of ``Σ`` (descending), ``basis`` (d, d) eigenvectors,
    ``C`` (k, k) in the eigenbasis, ``c_data`` (k,) its diagonal, ``c_gauss`` (k,), and
    ``offdiag`` = max |C_ab| (a ≠ b) / max C_aa.
    """
    X = check_array("X", X, ndim=2)
    n, d = X.shape
    if n < 2:
        raise ValueError(f"X must have at least 2 rows (samples), got {n}")
    k = check_int("k", k, minimum=1, maximum=d - 1)
    cov = X.T @ X / n
    lam, vec = np.linalg.eigh(cov)
    lam, vec = lam[::-1], vec[:, ::-1]
    z = X @ vec
    perp = np.sum(z[:, k:] ** 2, axis=1)
    c = (z[:, :k] * perp[:, None]).T @ z[:, :k] / n
    off = np.abs(c - np.diag(np.diag(c))).max() / np.abs(np.diag(c)).max() if k > 1 else 0.0
    return {
        "lambdas": lam,
        "basis": vec,
        "C": c,
        "c_data": np.diag(c).copy(),
        "c_gauss": lam[:k] * lam[k:].sum(),
        "offdiag": float(off),
    }


# ---------------------------------------------------------------------------------------------
# autoencoders
# ---------------------------------------------------------------------------------------------
def _act(name, p):
    torch = _torch()
    if name == "linear":
        return p, torch.ones_like(p)
    if name == "relu":
        return torch.relu(p), (p > 0).to(p.dtype)
    t = torch.tanh(p)
    return t, 1.0 - t * t


def ae_gradients(W, U, X, activation: str = "relu"):
    """Minibatch loss and gradients of ``L = ½ mean_b ‖W φ(U x_b) − x_b‖²`` for stacked replicas.

    Parameters
    ----------
    W : torch.Tensor, shape (R, d, k)
        Decoders.
    U : torch.Tensor, shape (R, k, d)
        Encoders.
    X : torch.Tensor, shape (R, d, B)
        One minibatch per replica (columns are samples).
    activation : {"linear", "relu", "tanh"}

    Returns
    -------
    loss : torch.Tensor, shape (R,)
    gW, gU : torch.Tensor
        ``g_W = r hᵀ/B``, ``g_U = ((Wᵀr) ⊙ φ'(Ux)) xᵀ/B`` with ``r = W h − x``, ``h = φ(U x)``.
    """
    check_choice("activation", activation, ACTIVATIONS)
    if W.ndim != 3 or U.ndim != 3 or X.ndim != 3:
        raise ValueError("W, U and X must be 3-D stacks (replica first)")
    if U.shape != (W.shape[0], W.shape[2], W.shape[1]) or X.shape[:2] != (W.shape[0], W.shape[1]):
        raise ValueError(f"shapes do not match: W {tuple(W.shape)}, U {tuple(U.shape)}, X {tuple(X.shape)}")
    b = X.shape[2]
    pre = U @ X
    h, dh = _act(activation, pre)
    r = W @ h - X
    loss = 0.5 * (r * r).sum(dim=(1, 2)) / b
    gW = r @ h.transpose(1, 2) / b
    delta = (W.transpose(1, 2) @ r) * dh
    gU = delta @ X.transpose(1, 2) / b
    return loss, gW, gU


def init_autoencoder(X, k: int, replicas: int, *, scale: float = 1.0, seed=None):
    """Balanced random initial weights: ``U`` with i.i.d. ``N(0, scale²/d)`` rows, ``W = Uᵀ``.

    Every neuron starts with zero charge ``q_a = ‖W_{:a}‖² − ‖U_{a:}‖² = 0``.

    Returns
    -------
    W : numpy.ndarray, shape (R, d, k)
    U : numpy.ndarray, shape (R, k, d)
    """
    X = check_array("X", X, ndim=2)
    d = X.shape[1]
    k = check_int("k", k, minimum=1, maximum=d - 1)
    replicas = check_int("replicas", replicas, minimum=1)
    scale = check_positive("scale", scale)
    U = make_rng(seed).standard_normal((replicas, k, d)) * scale / np.sqrt(d)
    return np.ascontiguousarray(U.transpose(0, 2, 1)), U


def neuron_charges(W, U) -> np.ndarray:
    """Per-neuron charges ``q_a = ‖W_{:a}‖² − ‖U_{a:}‖²`` (conserved by gradient flow for linear and
    ReLU units, whose positive homogeneity gives each neuron a rescaling symmetry), shape (..., k)."""
    W = np.asarray(W, dtype=float)
    U = np.asarray(U, dtype=float)
    if W.ndim < 2 or U.shape != W.shape[:-2] + (W.shape[-1], W.shape[-2]):
        raise ValueError(f"W (..., d, k) and U (..., k, d) must match, got {W.shape} and {U.shape}")
    return np.sum(W * W, axis=-2) - np.sum(U * U, axis=-1)


@dataclass
class AERun:
    """An autoencoder ensemble's record: ``steps`` (T,), ``tau`` (T,) = steps η²/B, ``W`` (T, R, d, k),
    ``U`` (T, R, k, d), full-data ``loss`` (T, R)."""

    steps: np.ndarray
    tau: np.ndarray
    W: np.ndarray
    U: np.ndarray
    loss: np.ndarray

    @property
    def q(self) -> np.ndarray:
        """Per-neuron charges (T, R, k)."""
        return neuron_charges(self.W, self.U)

    @property
    def decoder_scale(self) -> np.ndarray:
        """Per-neuron decoder scales ``‖W_{:a}‖²`` (T, R, k)."""
        return np.sum(self.W**2, axis=-2)


def train_autoencoder(
    X, W0, U0, *, activation: str, eta: float, batch_size: int | None, steps: int, record_every: int = 100, seed=None
) -> AERun:
    """SGD (or full-batch gradient descent, ``batch_size=None``) on ``½‖W φ(Ux) − x‖²`` for an ensemble.

    Each replica draws its own minibatch of ``B`` samples with replacement at every step (seeded
    torch generator); the loss over the whole data set is recorded with the weights.

    Raises
    ------
    symbreak.engine.DivergenceError
        If a replica's weights leave every bounded region.
    """
    torch = _torch()
    X = check_array("X", X, ndim=2)
    n, d = X.shape
    W = check_array("W0", W0, ndim=3)
    U = check_array("U0", U0, ndim=3)
    if W.shape[1] != d or U.shape != (W.shape[0], W.shape[2], d):
        raise ValueError(f"W0 must be (R, {d}, k) and U0 (R, k, {d}), got {W.shape} and {U.shape}")
    check_choice("activation", activation, ACTIVATIONS)
    eta = check_positive("eta", eta)
    full = batch_size is None
    b = n if full else check_int("batch_size", batch_size, minimum=1)
    steps = check_int("steps", steps, minimum=1)
    rec = record_steps(steps, record_every)
    r = W.shape[0]
    xt = _tensor(X)
    xall = xt.T.unsqueeze(0).expand(r, d, n)
    Wt, Ut = _tensor(W), _tensor(U)
    gen = torch_generator(seed)
    Ws, Us, losses = [], [], []
    j = 0
    with torch.no_grad():
        for t in range(steps + 1):
            if t == rec[j]:
                loss, _, _ = ae_gradients(Wt, Ut, xall, activation)
                Ws.append(Wt.numpy().copy())
                Us.append(Ut.numpy().copy())
                losses.append(loss.numpy().copy())
                j += 1
                mag = torch.maximum(Wt.abs().amax(dim=(1, 2)), Ut.abs().amax(dim=(1, 2))).numpy()
                if not np.all(np.isfinite(mag)) or mag.max() > DIVERGENCE_LIMIT:
                    bad = int(np.flatnonzero(~np.isfinite(mag) | (mag > DIVERGENCE_LIMIT))[0])
                    raise DivergenceError(
                        t,
                        bad,
                        {"eta": eta, "batch_size": b},
                        float(mag[bad]),
                        DIVERGENCE_LIMIT,
                        "SGD" if not full else "gradient descent",
                    )
            if t == steps:
                break
            if full:
                xb = xall
            else:
                idx = torch.randint(0, n, (r, b), generator=gen)
                xb = xt[idx].transpose(1, 2)
            _, gW, gU = ae_gradients(Wt, Ut, xb, activation)
            Wt -= eta * gW
            Ut -= eta * gU
    return AERun(steps=rec, tau=rec * eta**2 / b, W=np.stack(Ws), U=np.stack(Us), loss=np.stack(losses))


def ae_sharpness(X, W, U, activation: str, *, iters: int = 60, seed=None) -> np.ndarray:
    """Largest Hessian eigenvalue of the full-data loss ``½ mean ‖W φ(Ux) − x‖²`` for each replica.

    Power iteration on Hessian–vector products (double back-propagation); converges to the
    eigenvalue of largest magnitude, which at a minimum is the largest one.

    Parameters
    ----------
    X : array_like, shape (n, d)
    W : array_like, shape (R, d, k)
    U : array_like, shape (R, k, d)
    activation : {"linear", "relu", "tanh"}
    iters : int
        Power iterations (``≥ 1``).
    """
    torch = _torch()
    X = check_array("X", X, ndim=2)
    W = check_array("W", W, ndim=3)
    U = check_array("U", U, ndim=3)
    check_choice("activation", activation, ACTIVATIONS)
    iters = check_int("iters", iters, minimum=1)
    n, d = X.shape
    if W.shape[1] != d or U.shape != (W.shape[0], W.shape[2], d):
        raise ValueError(f"W must be (R, {d}, k) and U (R, k, {d}), got {W.shape} and {U.shape}")
    xt = _tensor(X).T.unsqueeze(0).expand(W.shape[0], d, n)
    Wt = _tensor(W, requires_grad=True)
    Ut = _tensor(U, requires_grad=True)
    act = {"linear": lambda p: p, "relu": torch.relu, "tanh": torch.tanh}[activation]
    loss = 0.5 * ((Wt @ act(Ut @ xt) - xt) ** 2).sum() / n  # sum over replicas: block-diagonal Hessian
    gW, gU = torch.autograd.grad(loss, (Wt, Ut), create_graph=True)
    gen = torch_generator(seed)
    vW = torch.randn(W.shape, generator=gen, dtype=torch.float64)
    vU = torch.randn(U.shape, generator=gen, dtype=torch.float64)
    lam = torch.zeros(W.shape[0], dtype=torch.float64)
    for _ in range(iters):
        norm = torch.sqrt((vW**2).sum(dim=(1, 2)) + (vU**2).sum(dim=(1, 2)))[:, None, None]
        vW, vU = vW / norm, vU / norm
        hW, hU = torch.autograd.grad((gW * vW).sum() + (gU * vU).sum(), (Wt, Ut), retain_graph=True)
        lam = (hW * vW).sum(dim=(1, 2)) + (hU * vU).sum(dim=(1, 2))
        vW, vU = hW.detach(), hU.detach()
    return lam.detach().numpy()


def ae_drift_terms(X, W, U, activation: str):
    """The two halves of the per-neuron charge drift, from the network's own per-sample gradients.

    For a per-sample gradient ``g_W = r hᵀ`` and ``g_U = δ xᵀ`` (``δ = (Wᵀr) ⊙ φ'(Ux)``), the squared
    norms of neuron ``a``'s columns are ``‖r‖² h_a²`` and ``δ_a² ‖x‖²``. At a critical point of the
    full-data loss the charge of neuron ``a`` therefore drifts on the slow time ``τ = tη²/B`` at

        dq_a/dτ = E‖r‖² h_a² − E δ_a² ‖x‖²        (decoder term − encoder term),

    the general form of the autoencoder chapter's Eq. 5 (whose encoder term vanishes at a linear
    PCA solution, where ``Wᵀr = 0``).

    Returns
    -------
    decoder, encoder : numpy.ndarray, shape (R, k)
        ``E‖r‖² h_a²`` and ``E δ_a² ‖x‖²`` over the rows of ``X``.
    """
    _torch()  # fails clearly when torch is missing
    X = check_array("X", X, ndim=2)
    W = check_array("W", W, ndim=3)
    U = check_array("U", U, ndim=3)
    check_choice("activation", activation, ACTIVATIONS)
    n, d = X.shape
    if W.shape[1] != d or U.shape != (W.shape[0], W.shape[2], d):
        raise ValueError(f"W must be (R, {d}, k) and U (R, k, {d}), got {W.shape} and {U.shape}")
    xt = _tensor(X).T.unsqueeze(0).expand(W.shape[0], d, n)
    Wt, Ut = _tensor(W), _tensor(U)  # copies: any memory layout
    h, dh = _act(activation, Ut @ xt)
    r = Wt @ h - xt
    delta = (Wt.transpose(1, 2) @ r) * dh
    r2 = (r * r).sum(dim=1, keepdim=True)
    x2 = (xt * xt).sum(dim=1, keepdim=True)
    return (r2 * h * h).mean(dim=2).numpy(), (delta * delta * x2).mean(dim=2).numpy()


def fit_lambert_rate(tau, s, s0: float) -> tuple[float, float]:
    """Least-squares rate ``c`` of the Lambert-W law ``s(τ) = lambert_scale(s0, c, τ)`` (one parameter).

    The law is linear in ``c`` in its implicit form ``s²/2 + log s − s0²/2 − log s0 = c τ``, so the
    fit is a regression of that left side on ``τ`` through the origin; the returned relative
    residual is ``max |s − s_fit| / s_fit``, the shape test.

    Returns
    -------
    c, max_rel_residual : float
    """
    tau = check_array("tau", tau, ndim=1)
    s = check_array("s", s, shape=tau.shape)
    s0 = check_positive("s0", s0)
    if np.any(s <= 0) or np.any(tau < 0) or not np.any(tau > 0):
        raise ValueError("s must be > 0 and tau >= 0 with at least one tau > 0")
    lhs = s * s / 2 + np.log(s) - s0 * s0 / 2 - np.log(s0)
    c = float(np.sum(lhs * tau) / np.sum(tau * tau))
    if c < 0:
        raise ValueError(f"the data do not grow (fitted rate {c:.3g} < 0): no Lambert-W growth to fit")
    fit = lambert_scale(s0, c, tau)
    return c, float(np.max(np.abs(s - fit) / fit))


# ---------------------------------------------------------------------------------------------
# representation similarity
# ---------------------------------------------------------------------------------------------
def _reps(name, H):
    H = check_array(name, H)
    if H.ndim < 2:
        raise ValueError(f"{name} must be (..., n_samples, features), got shape {H.shape}")
    return H


def kernel_alignment(H1, H2) -> np.ndarray:
    """Uncentred kernel alignment ``⟨K1, K2⟩_F / (‖K1‖_F ‖K2‖_F)`` of ``K = H Hᵀ`` over the samples.

    With samples drawn from the data, this is the empirical version of the Platonic chapter's
    Σx-weighted alignment: for linear representations ``h = P x`` it converges to the alignment of
    ``Σ^{1/2} PᵀP Σ^{1/2}`` matrices. Computed from the feature Gram matrices (``‖H1ᵀH2‖²_F``),
    never forming the ``n×n`` kernels. Leading axes broadcast.
    """
    H1, H2 = _reps("H1", H1), _reps("H2", H2)
    if H1.shape[-2] != H2.shape[-2]:
        raise ValueError(f"H1 and H2 must have the same number of samples, got {H1.shape[-2]} and {H2.shape[-2]}")
    t = np.swapaxes
    cross = np.sum((t(H1, -1, -2) @ H2) ** 2, axis=(-2, -1))
    n1 = np.sqrt(np.sum((t(H1, -1, -2) @ H1) ** 2, axis=(-2, -1)))
    n2 = np.sqrt(np.sum((t(H2, -1, -2) @ H2) ** 2, axis=(-2, -1)))
    if np.any(n1 == 0) or np.any(n2 == 0):
        raise ValueError("a representation is identically zero: its alignment is undefined")
    return cross / (n1 * n2)


def linear_cka(H1, H2) -> np.ndarray:
    """Linear centred kernel alignment (CKA, Kornblith et al. 2019): :func:`kernel_alignment` of the
    representations after removing their mean over the samples."""
    H1, H2 = _reps("H1", H1), _reps("H2", H2)
    return kernel_alignment(H1 - H1.mean(axis=-2, keepdims=True), H2 - H2.mean(axis=-2, keepdims=True))


def mutual_knn(H1, H2, k: int = 10) -> float:
    """Mutual k-nearest-neighbour alignment (Huh et al. 2024): the mean over samples of
    ``|N_k^1(i) ∩ N_k^2(i)| / k``, with neighbourhoods in Euclidean distance (self excluded).

    1 when the two representations have the same neighbourhoods, ``≈ k/n`` for unrelated ones.
    """
    H1, H2 = _reps("H1", H1), _reps("H2", H2)
    if H1.ndim != 2 or H2.ndim != 2 or H1.shape[0] != H2.shape[0]:
        raise ValueError("H1 and H2 must be 2-D (n_samples, features) with the same n_samples")
    n = H1.shape[0]
    k = check_int("k", k, minimum=1, maximum=n - 1)

    def neighbours(H):
        sq = np.sum(H * H, axis=1)
        dist = sq[:, None] + sq[None, :] - 2 * H @ H.T
        np.fill_diagonal(dist, np.inf)
        return np.argpartition(dist, k, axis=1)[:, :k]

    a, b = neighbours(H1), neighbours(H2)
    hits = [np.intersect1d(a[i], b[i], assume_unique=True).size for i in range(n)]
    return float(np.mean(hits) / k)


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
    """
    sizes = [check_int("sizes", s, minimum=1) for s in sizes]
    if len(sizes) < 3:
        raise ValueError(f"sizes must list input, at least one hidden width and output, got {sizes}")
    replicas = check_int("replicas", replicas, minimum=1)
    rng = make_rng(seed)
    return [rng.standard_normal((replicas, o, i)) * np.sqrt(2.0 / i) for i, o in zip(sizes[:-1], sizes[1:])]


def mlp_hidden(weights, X, activation: str = "relu") -> np.ndarray:
    """Last hidden layer's representation ``h_{D-1}`` of every replica on the rows of ``X`` (R, n, width).

    ``X`` is (n, input) or (R, n, input); ``activation`` is ``"relu"`` or ``"tanh"``.
    """
    check_choice("activation", activation, ("relu", "tanh"))
    phi = (lambda z: np.maximum(z, 0.0)) if activation == "relu" else np.tanh
    ws = [check_array(f"weights[{i}]", w, ndim=3) for i, w in enumerate(weights)]
    X = check_array("X", X)
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
    ``ε ~ N(0, label_noise² I)`` added to the targets (also shared). ``batch_size=None`` is
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
    gen = torch_generator(int(seeds[2]))
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
        if full:
            idx = torch.arange(n).expand(replicas, n)
        else:
            idx = torch.randint(0, n, (replicas, b), generator=gen)
        noise = label_noise * torch.randn((replicas, b, Y.shape[1]), generator=gen, dtype=torch.float64)
        target = ty[idx] + noise
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
