"""What survives in ReLU networks: per-neuron rescaling charges, their drift under SGD and gradient balance.

A one-hidden-layer ReLU network ``f(x) = W relu(U x + b) + c`` has, for every hidden unit ``j``, the
rescaling symmetry ``(u_j, b_j, w_j) → (a u_j, a b_j, w_j / a)``, ``a > 0`` (``u_jᵀ`` is row ``j`` of
``U``, ``w_j`` column ``j`` of ``W``). Its Noether charge

    Q_j = ‖u_j‖² + b_j² − ‖w_j‖²

is conserved by gradient flow. One SGD step with minibatch gradients changes it by exactly
``η² (‖g_{u_j}‖² + g_{b_j}² − ‖g_{w_j}‖²)`` (the page's proposition ``bey-relu-prop``), whose
conditional expectation over the minibatch and the label noise this module computes in closed form
(:func:`expected_gradient_norms`). Where ``Q_j`` is stationary the expectation vanishes: per-neuron
**gradient balance** ``E‖g_in,j‖² = E‖g_out,j‖²``, the analogue for ReLU units of the Platonic paper's
neuron-wise balance condition (P-Eq. 33).

Pages: ``book/beyond/relu.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    finite_result,
)
from ._common import DIVERGENCE_LIMIT

__all__ = [
    "whitened_inputs",
    "ReluNet",
    "init_relu_net",
    "replicate",
    "gradient_balanced",
    "norm_balanced",
    "unit_charges",
    "predict",
    "noether_defect",
    "expected_gradient_norms",
    "MLPRun",
    "train_relu_net",
    "generator_first_order",
    "generator_first_order_closed",
]


@dataclass
class ReluNet:
    """Weights of ``R`` one-hidden-layer ReLU networks ``f(x) = W relu(U x + b) + c``, stacked over replicas.

    Attributes
    ----------
    U : numpy.ndarray, shape (R, k, d)
        Input weights; row ``j`` is hidden unit ``j``'s incoming vector ``u_j``.
    b : numpy.ndarray, shape (R, k)
        Hidden biases.
    W : numpy.ndarray, shape (R, m, k)
        Output weights; column ``j`` is unit ``j``'s outgoing vector ``w_j``.
    c : numpy.ndarray, shape (R, m)
        Output biases (not part of any unit's symmetry).
    """

    U: np.ndarray
    b: np.ndarray
    W: np.ndarray
    c: np.ndarray

    def copy(self) -> ReluNet:
        """A deep copy."""
        return ReluNet(self.U.copy(), self.b.copy(), self.W.copy(), self.c.copy())


def whitened_inputs(X, p: int) -> np.ndarray:
    """The rows of ``X`` projected on their ``p`` leading principal components, whitened, scaled to ``E‖x‖² = 1``.

    Every input direction then has the same variance ``1/p``, so no direction of a unit's incoming
    weights is much flatter than the others.
    """
    X = check_array("X", X, ndim=2)
    p = check_int("p", p, minimum=1, maximum=X.shape[1])
    Xc = X - X.mean(axis=0)
    ev, V = np.linalg.eigh(Xc.T @ Xc / Xc.shape[0])
    ev, V = ev[::-1][:p], V[:, ::-1][:, :p]
    if ev[-1] <= 1e-12 * ev[0]:
        raise ValueError(f"p = {p} exceeds the rank of X's covariance: its {p}-th eigenvalue is {ev[-1]:.3g}")
    Z = Xc @ V / np.sqrt(ev)
    return finite_result("whitened_inputs", Z / np.sqrt(np.mean((Z**2).sum(axis=1))))


def _check_net(net) -> ReluNet:
    if not isinstance(net, ReluNet):
        raise TypeError(f"net must be a ReluNet, got {type(net).__name__}")
    U = check_array("net.U", net.U, ndim=3)
    R, k, _ = U.shape
    b = check_array("net.b", net.b, shape=(R, k))
    W = check_array("net.W", net.W, ndim=3)
    if W.shape[0] != R or W.shape[2] != k:
        raise ValueError(f"net.W must have shape ({R}, m, {k}) to follow net.U {U.shape}, got {W.shape}")
    c = check_array("net.c", net.c, shape=(R, W.shape[1]))
    return ReluNet(U, b, W, c)


def _check_data(net: ReluNet, X, Y):
    X = check_array("X", X, ndim=2)
    Y = check_array("Y", Y, ndim=2)
    if X.shape[0] != Y.shape[0] or X.shape[0] < 1:
        raise ValueError(f"X and Y must have the same number (>= 1) of rows, got {X.shape[0]} and {Y.shape[0]}")
    if X.shape[1] != net.U.shape[2]:
        raise ValueError(f"X has {X.shape[1]} features, the network expects {net.U.shape[2]}")
    if Y.shape[1] != net.W.shape[1]:
        raise ValueError(f"Y has {Y.shape[1]} columns, the network has {net.W.shape[1]} outputs")
    return X, Y


def init_relu_net(d: int, k: int, m: int, replicas: int, *, seed=None) -> ReluNet:
    """He-initialised networks: ``U`` entries ``N(0, 2/d)``, ``W`` entries ``N(0, 2/k)``, zero biases.

    Replica ``r`` draws from its own stream (:func:`symbreak.engine.replica_streams`), so its
    weights depend only on ``(seed, r)``.
    """
    d = check_int("d", d, minimum=1, maximum=MAX_DRAWS)
    k = check_int("k", k, minimum=1, maximum=MAX_DRAWS)
    m = check_int("m", m, minimum=1, maximum=MAX_DRAWS)
    replicas = check_int("replicas", replicas, minimum=1, maximum=MAX_DRAWS)
    check_allocation("replicas × weights", replicas * k * (d + m + 1))
    U, W = np.empty((replicas, k, d)), np.empty((replicas, m, k))
    for r, g in enumerate(replica_streams(seed, range(replicas))):
        U[r] = g.standard_normal((k, d)) * np.sqrt(2.0 / d)
        W[r] = g.standard_normal((m, k)) * np.sqrt(2.0 / k)
    return ReluNet(U, np.zeros((replicas, k)), W, np.zeros((replicas, m)))


def replicate(net: ReluNet, replicas: int, index: int = 0) -> ReluNet:
    """``replicas`` copies of replica ``index`` of ``net`` (one planted network for every replica)."""
    net = _check_net(net)
    replicas = check_int("replicas", replicas, minimum=1, maximum=MAX_DRAWS)
    index = check_int("index", index, minimum=0, maximum=net.U.shape[0] - 1)
    return ReluNet(*(np.repeat(a[index : index + 1], replicas, axis=0) for a in (net.U, net.b, net.W, net.c)))


def norm_balanced(net: ReluNet, ratio: float = 1.0) -> ReluNet:
    """Rescale every hidden unit along its symmetry so that ``‖u_j‖² + b_j² = ratio · ‖w_j‖²``.

    The network function is unchanged (``relu(a z) = a relu(z)`` for ``a > 0``); with ``ratio = 1``
    every charge is zero (norm balance, what gradient flow keeps).

    Raises
    ------
    ValueError
        If ``ratio`` is not positive, or a unit has an all-zero incoming or outgoing vector (it cannot
        be rescaled to a given ratio).
    """
    net = _check_net(net)
    ratio = check_positive("ratio", ratio)
    n_in = (net.U**2).sum(-1) + net.b**2
    n_out = (net.W**2).sum(-2)
    if np.any(n_in == 0) or np.any(n_out == 0):
        raise ValueError("every hidden unit needs non-zero incoming and outgoing weights to be rescaled")
    a = (ratio * n_out / n_in) ** 0.25  # ‖a u‖² = ratio ‖w/a‖²  ⇔  a⁴ = ratio n_out / n_in
    return ReluNet(net.U * a[..., None], net.b * a, net.W / a[:, None, :], net.c.copy())


def gradient_balanced(net: ReluNet, X, Y, *, label_noise: float, batch_size: int | None) -> ReluNet:
    """Move every unit along its rescaling orbit to the point of gradient balance ``E‖g_in‖² = E‖g_out‖²``.

    Under ``(u_j, b_j, w_j) → (a u_j, a b_j, w_j / a)`` the incoming gradient scales as ``1/a`` and the
    outgoing one as ``a`` (residuals and activity patterns are unchanged), so the ratio ``ρ_j`` of
    :func:`expected_gradient_norms` becomes ``ρ_j / a⁴``: the balanced point is ``a = ρ_j^{1/4}``, the
    zero of the drift of ``Q_j`` on its orbit (P-Eq. 33 for one unit). Units with no gradient
    (inactive on every sample) are left as they are.
    """
    net = _check_net(net)
    g_in, g_out = expected_gradient_norms(net, X, Y, label_noise=label_noise, batch_size=batch_size)
    live = (g_in > 0) & (g_out > 0)
    a = np.where(live, (np.where(live, g_in, 1.0) / np.where(live, g_out, 1.0)) ** 0.25, 1.0)
    return ReluNet(net.U * a[..., None], net.b * a, net.W / a[:, None, :], net.c.copy())


def unit_charges(net: ReluNet) -> np.ndarray:
    """``Q_j = ‖u_j‖² + b_j² − ‖w_j‖²`` of every hidden unit, shape (R, k)."""
    net = _check_net(net)
    return (net.U**2).sum(-1) + net.b**2 - (net.W**2).sum(-2)


def _forward(net: ReluNet, X):
    """Pre-activations ``Z`` (R, n, k), activities ``H`` and outputs ``F`` (R, n, m); ``X`` (n, d) or (R, n, d)."""
    Z = X @ np.swapaxes(net.U, 1, 2) + net.b[:, None, :]
    H = np.maximum(Z, 0.0)
    return Z, H, H @ np.swapaxes(net.W, 1, 2) + net.c[:, None, :]


def predict(net: ReluNet, X) -> np.ndarray:
    """The networks' outputs on the rows of ``X`` (n, d): shape (R, n, m)."""
    net = _check_net(net)
    X = check_array("X", X, ndim=2)
    if X.shape[1] != net.U.shape[2]:
        raise ValueError(f"X has {X.shape[1]} features, the network expects {net.U.shape[2]}")
    return finite_result("predict", _forward(net, X)[2])


def noether_defect(net: ReluNet, X, Y) -> np.ndarray:
    """Per-sample Noether identity of every unit's rescaling: the defect and its scale.

    For the per-sample loss ``ℓ = ½‖f(x) − y‖²``, invariance under the rescaling of unit ``j``
    gives ``⟨u_j, ∇_{u_j}ℓ⟩ + b_j ∂_{b_j}ℓ − ⟨w_j, ∇_{w_j}ℓ⟩ = 0`` (the page's proposition
    ``bey-relu-prop``, part 1), and so ``dQ_j/dt = 0`` along gradient flow.

    Returns
    -------
    defect, scale : numpy.ndarray, shape (R, n, k)
        The left-hand side for every sample and unit, and ``|⟨w_j, ∇_{w_j}ℓ⟩|`` (each of the two
        cancelling terms), against which the defect is small to rounding.
    """
    net = _check_net(net)
    X, Y = _check_data(net, X, Y)
    Z, H, F = _forward(net, X)
    Rs = F - Y  # (R, n, m)
    delta = (Rs @ net.W) * (Z > 0)  # (R, n, k): ∂ℓ/∂z_j
    g_u = delta[..., None] * X[None, :, None, :]  # (R, n, k, d): the per-sample gradients
    g_w = Rs[:, :, :, None] * H[:, :, None, :]  # (R, n, m, k)
    t_in = (g_u * net.U[:, None]).sum(-1) + delta * net.b[:, None, :]
    t_out = (g_w * net.W[:, None]).sum(-2)
    return finite_result("noether_defect", (t_in - t_out, np.abs(t_out)))


def expected_gradient_norms(net: ReluNet, X, Y, *, label_noise: float, batch_size: int | None):
    """Exact conditional expectation of the squared minibatch gradient norms of every unit.

    A minibatch holds ``B`` indices drawn uniformly with replacement from the ``n`` rows of
    ``(X, Y)``, each target with fresh noise ``ε ~ N(0, σ² I)``; the minibatch loss is
    ``(1/2B) Σ_b ‖f(x_{i_b}) − y_{i_b} − ε_b‖²``. With per-sample gradients ``G`` (mean ``μ`` over
    samples and noise, the full-batch gradient) ``E‖g‖² = (1 − 1/B)‖μ‖² + E‖G‖²/B``, and the
    noise enters per sample as ``E‖G_{u_j}‖² + E G_{b_j}² = ((w_jᵀr̄)² + σ²‖w_j‖²) 1[z_j > 0]
    (‖x‖² + 1)`` and ``E‖G_{w_j}‖² = (‖r̄‖² + mσ²) h_j²`` (``r̄ = f(x) − y``). So
    ``E[Q_j' − Q_j | θ] = η² (in_j − out_j)`` exactly (the page's proposition ``bey-relu-prop``).

    Parameters
    ----------
    net : ReluNet
    X, Y : array_like, shape (n, d), (n, m)
        The training set.
    label_noise : float
        ``σ ≥ 0``.
    batch_size : int or None
        ``B ≥ 1``; ``None`` is full-batch gradient descent on the noiseless targets (the norms of
        the full-batch gradient ``μ``).

    Returns
    -------
    g_in, g_out : numpy.ndarray, shape (R, k)
        ``E(‖g_{u_j}‖² + g_{b_j}²)`` and ``E‖g_{w_j}‖²``.
    """
    net = _check_net(net)
    X, Y = _check_data(net, X, Y)
    sigma2 = check_nonnegative("label_noise", label_noise) ** 2
    full = batch_size is None
    if not full:
        B = check_int("batch_size", batch_size, minimum=1)
    Z, H, F = _forward(net, X)
    n = X.shape[0]
    Rs = F - Y
    act = Z > 0
    back = (Rs @ net.W) * act  # (R, n, k)
    Xt = np.concatenate([X, np.ones((n, 1))], axis=1)  # the bias as an input fixed at 1
    mu_in = np.swapaxes(back, 1, 2) @ Xt / n  # (R, k, d + 1)
    mu_out = np.swapaxes(Rs, 1, 2) @ H / n  # (R, m, k)
    m_in = (mu_in**2).sum(-1)
    m_out = (mu_out**2).sum(-2)
    if full:
        return finite_result("expected_gradient_norms", (m_in, m_out))
    xx = (Xt**2).sum(-1)  # (n,)
    wn = (net.W**2).sum(-2)  # (R, k)
    s_in = ((back**2 + sigma2 * wn[:, None, :] * act) * xx[None, :, None]).mean(1)
    s_out = (((Rs**2).sum(-1) + Y.shape[1] * sigma2)[:, :, None] * H**2).mean(1)
    return finite_result("expected_gradient_norms", ((1 - 1 / B) * m_in + s_in / B, (1 - 1 / B) * m_out + s_out / B))


@dataclass
class MLPRun:
    """Record of :func:`train_relu_net`.

    Attributes
    ----------
    steps : numpy.ndarray, shape (T,)
        Recorded steps (``0`` and the last step included).
    tau : numpy.ndarray, shape (T,)
        Slow time ``t η²/B`` (``t η²/n`` for gradient descent, where ``B = n``).
    q : numpy.ndarray, shape (T, R, k)
        Per-unit charges at the recorded steps.
    loss : numpy.ndarray, shape (T, R)
        Training loss ``(1/2n) Σ ‖f(x_i) − y_i‖²`` on the noiseless targets.
    step_sum : numpy.ndarray, shape (T, R, k)
        ``η² Σ_{s<t} (‖g_in,j‖² − ‖g_out,j‖²)`` of the realised minibatch gradients, accumulated.
    expected_sum : numpy.ndarray, shape (T, R, k)
        ``η² Σ_{s<t} E[‖g_in,j‖² − ‖g_out,j‖² | θ_s]`` (:func:`expected_gradient_norms`),
        evaluated every ``expect_every``-th step and summed by the trapezoid rule over the steps
        between (an estimate of the sum whose error has mean zero up to the curvature of the
        drift between evaluations).
    g_in, g_out : numpy.ndarray, shape (T, R, k)
        The conditional expectations at the recorded steps.
    net : ReluNet
        The final weights.
    """

    steps: np.ndarray
    tau: np.ndarray
    q: np.ndarray
    loss: np.ndarray
    step_sum: np.ndarray
    expected_sum: np.ndarray
    g_in: np.ndarray
    g_out: np.ndarray
    net: ReluNet


def train_relu_net(
    net: ReluNet,
    X,
    Y,
    *,
    eta: float,
    batch_size: int | None,
    steps: int,
    label_noise: float = 0.0,
    record_every: int = 100,
    expect_every: int = 10,
    seed=None,
) -> MLPRun:
    """Train the networks by SGD (or gradient descent) on ``½‖f(x) − y − ε‖²``, recording the charges.

    Every step replica ``r`` draws ``B`` indices uniformly with replacement and fresh label noise
    ``ε ~ N(0, σ² I)`` from its own stream (:func:`symbreak.engine.replica_streams`), so its run
    depends only on ``(seed, r)``. ``batch_size=None`` is full-batch gradient descent on the
    noiseless targets. The update is plain ``θ ← θ − η g``: no weight decay, no momentum, which is
    what keeps the rescaling symmetry of every unit.

    Parameters
    ----------
    net : ReluNet
        Initial weights (not modified).
    X, Y : array_like, shape (n, d), (n, m)
    eta : float
        Learning rate ``> 0``.
    batch_size : int or None
    steps : int
    label_noise : float
        ``σ ≥ 0`` (ignored by gradient descent).
    record_every : int
        Steps between records; must be a multiple of ``expect_every``.
    expect_every : int
        Steps between evaluations of :func:`expected_gradient_norms` (a full pass over the data).
    seed : int, optional

    Raises
    ------
    ValueError
        On bad input, or when ``record_every`` is not a multiple of ``expect_every``.
    symbreak.engine.DivergenceError
        If a replica's weights blow up.
    """
    net = _check_net(net).copy()
    X, Y = _check_data(net, X, Y)
    eta = check_positive("eta", eta)
    n, m = Y.shape
    full = batch_size is None
    B = n if full else check_int("batch_size", batch_size, minimum=1, maximum=n)
    steps = check_int("steps", steps, minimum=1)
    sigma = 0.0 if full else check_nonnegative("label_noise", label_noise)
    record_every = check_int("record_every", record_every, minimum=1)
    expect_every = check_int("expect_every", expect_every, minimum=1)
    if record_every % expect_every:
        raise ValueError(f"record_every ({record_every}) must be a multiple of expect_every ({expect_every})")
    if steps % expect_every:
        raise ValueError(f"steps ({steps}) must be a multiple of expect_every ({expect_every})")
    R = net.U.shape[0]
    rec = record_steps(steps, record_every)
    streams = replica_streams(make_rng(seed).integers(0, 2**31), range(R))
    block = int(max(1, min(512, 2**20 // (R * B * (m + 1)))))
    q_rec, loss_rec, step_rec, exp_rec, gin_rec, gout_rec = [], [], [], [], [], []
    step_sum = np.zeros(net.b.shape)
    exp_sum = np.zeros(net.b.shape)
    j = 0
    prev = None
    for t in range(steps + 1):
        if t % expect_every == 0:
            g_in, g_out = expected_gradient_norms(net, X, Y, label_noise=sigma, batch_size=None if full else B)
            if prev is not None:  # trapezoid over the last expect_every steps
                exp_sum += eta**2 * expect_every * 0.5 * ((g_in - g_out) + prev)
            prev = g_in - g_out
            if t == rec[j]:
                q_rec.append(unit_charges(net))
                loss_rec.append(0.5 * ((_forward(net, X)[2] - Y) ** 2).sum(-1).mean(-1))
                step_rec.append(step_sum.copy())
                exp_rec.append(exp_sum.copy())
                gin_rec.append(g_in)
                gout_rec.append(g_out)
                j += 1
                mag = max(np.abs(net.U).max(), np.abs(net.W).max(), np.abs(net.b).max())
                if not np.isfinite(mag) or mag > DIVERGENCE_LIMIT:
                    raise DivergenceError(
                        t,
                        0,
                        {"eta": eta, "batch_size": B},
                        float(mag),
                        DIVERGENCE_LIMIT,
                        "gradient descent" if full else "SGD",
                    )
        if t == steps:
            break
        if full:
            Xb, Yb = X[None], Y[None]
        else:
            if t % block == 0:
                idx_blk = np.stack([g.integers(0, n, size=(block, B)) for g in streams], axis=1)
                eps_blk = np.stack([g.standard_normal((block, B, m)) for g in streams], axis=1)
            idx = idx_blk[t % block]
            Xb, Yb = X[idx], Y[idx] + sigma * eps_blk[t % block]
        Z = Xb @ np.swapaxes(net.U, 1, 2) + net.b[:, None, :]
        H = np.maximum(Z, 0.0)
        Rs = H @ np.swapaxes(net.W, 1, 2) + net.c[:, None, :] - Yb  # (R, B, m)
        back = (Rs @ net.W) * (Z > 0)
        gW = np.swapaxes(Rs, 1, 2) @ H / B
        gc = Rs.mean(1)
        gU = np.swapaxes(back, 1, 2) @ Xb / B
        gb = back.mean(1)
        step_sum += eta**2 * ((gU**2).sum(-1) + gb**2 - (gW**2).sum(-2))
        net.U -= eta * gU
        net.b -= eta * gb
        net.W -= eta * gW
        net.c -= eta * gc
    return MLPRun(
        steps=rec,
        tau=rec * eta**2 / B,
        q=np.stack(q_rec),
        loss=np.stack(loss_rec),
        step_sum=np.stack(step_rec),
        expected_sum=np.stack(exp_rec),
        g_in=np.stack(gin_rec),
        g_out=np.stack(gout_rec),
        net=net,
    )


def _check_generator_args(net, X, j: int, i: int, activation: str):
    """The validated arguments of :func:`generator_first_order` and its closed form."""
    net = _check_net(net)
    X = check_array("X", X, ndim=2)
    if X.shape[1] != net.U.shape[2]:
        raise ValueError(f"X has {X.shape[1]} features, the network expects {net.U.shape[2]}")
    k = net.U.shape[1]
    j = check_int("j", j, minimum=0, maximum=k - 1)
    i = check_int("i", i, minimum=0, maximum=k - 1)
    return net, X, j, i, check_choice("activation", activation, ("relu", "linear"))


def generator_first_order(net: ReluNet, X, j: int, i: int, *, activation: str = "relu", step: float = 1e-5):
    """Relative first-order change of the network function along the ``GL(k)`` generator ``E_{ji}``.

    The generator moves ``U → (I + s E_{ji}) U``, ``b → (I + s E_{ji}) b``, ``W → W (I − s E_{ji})``
    (row ``i`` of ``(U, b)`` added into row ``j``, column ``j`` of ``W`` taken out of column ``i``).
    With pre-activations ``z = Ux + b`` and activation ``φ`` the output changes at first order by
    ``∂f/∂s = w_j (φ'(z_j) z_i − φ(z_i))``: zero for every input when ``φ`` is linear (the whole
    ``GL(k)`` is a symmetry) and, for ReLU, when ``i = j`` (the rescaling: ``relu'(z) z = relu(z)``),
    but not for ``i ≠ j`` where units ``i`` and ``j`` are active on different inputs. The derivative
    is taken by central differences of the network function with ``s = ±step`` (independently of
    that formula); along a symmetry it is zero up to ``O(step²)`` and rounding.

    Returns
    -------
    numpy.ndarray, shape (R,)
        ``rms_x ‖∂f/∂s‖ / (‖w_j‖ rms_x |z_i|)`` per replica: the change relative to the size that
        moving unit ``i``'s pre-activation into unit ``j`` could produce (0 where ``w_j = 0`` or
        ``z_i = 0`` on every input).

    Raises
    ------
    ValueError
        If ``j`` or ``i`` is not a hidden unit (``0 ≤ j, i < k``), ``activation`` is unknown or
        ``step`` is not in ``(0, 0.1]``.
    """
    net, X, j, i, activation = _check_generator_args(net, X, j, i, activation)
    step = check_positive("step", step)
    if step > 0.1:
        raise ValueError(f"step must lie in (0, 0.1], got {step!r}")
    phi = (lambda z: np.maximum(z, 0.0)) if activation == "relu" else (lambda z: z)

    def output(s):
        U, b, W = net.U.copy(), net.b.copy(), net.W.copy()
        U[:, j] += s * net.U[:, i]
        b[:, j] += s * net.b[:, i]
        W[:, :, i] -= s * net.W[:, :, j]
        Z = X @ np.swapaxes(U, 1, 2) + b[:, None, :]
        return phi(Z) @ np.swapaxes(W, 1, 2) + net.c[:, None, :]

    dfds = (output(step) - output(-step)) / (2 * step)  # (R, n, m)
    zi = (X @ np.swapaxes(net.U, 1, 2) + net.b[:, None, :])[:, :, i]
    size = np.sqrt((net.W[:, :, j] ** 2).sum(-1) * (zi**2).mean(-1))
    rms = np.sqrt((dfds**2).sum(-1).mean(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return finite_result("generator_first_order", np.where(size > 0, rms / np.where(size > 0, size, 1.0), 0.0))


def generator_first_order_closed(net: ReluNet, X, j: int, i: int, *, activation: str = "relu") -> np.ndarray:
    """The closed form of :func:`generator_first_order`: ``∂f/∂s = w_j (φ'(z_j) z_i − φ(z_i))``.

    Part 5 of the book's proposition on ReLU charges: along ``U → (I + sE_{ji})U``,
    ``b → (I + sE_{ji})b``, ``W → W(I − sE_{ji})`` the output changes at first order by
    ``w_j (𝟙[z_j > 0] z_i − relu(z_i))`` for ReLU and by ``0`` for a linear activation. Returned in
    the units of :func:`generator_first_order` (which takes the derivative by central differences,
    independently of this formula), ``rms_x ‖∂f/∂s‖ / (‖w_j‖ rms_x |z_i|)`` per replica.

    Returns
    -------
    numpy.ndarray, shape (R,)

    Raises
    ------
    ValueError
        As :func:`generator_first_order`.
    """
    net, X, j, i, activation = _check_generator_args(net, X, j, i, activation)
    with np.errstate(over="ignore", invalid="ignore"):
        Z = X @ np.swapaxes(net.U, 1, 2) + net.b[:, None, :]
        zi, zj = Z[:, :, i], Z[:, :, j]
        change = (zj > 0) * zi - np.maximum(zi, 0.0) if activation == "relu" else np.zeros_like(zi)
        wn2 = (net.W[:, :, j] ** 2).sum(-1)
        size = np.sqrt(wn2 * (zi**2).mean(-1))
        rms = np.sqrt(wn2 * (change**2).mean(-1))
        return finite_result(
            "generator_first_order_closed", np.where(size > 0, rms / np.where(size > 0, size, 1.0), 0.0)
        )
