"""The synthesis table: what each paper's model does with its symmetry, computed cell by cell.

The first page of *Beyond the theorems* compares the three papers in one table: symmetry group,
charge conserved by gradient flow, what SGD's (or Langevin) noise does to it, whether there is an
equilibrium, and what is selected. Each cell is computed on a model of that paper with the chapter
packages' own functions where they exist (``symbreak.platonic``, ``symbreak.autoencoder``,
``symbreak.dln``); this module adds the pieces they lack:

* :func:`generator_divergence` — the divergence of the generator of ``W_1 → e^{δA} W_1``,
  ``W_2 → W_2 e^{−δA}`` (the volume term of the one-step charge change, book Eq. bey-step);
* :func:`orbit_dimension` and :func:`hessian_null_dimension` — the dimension of the ``GL`` orbit
  through a point (from the group's generators) and of the null space of a Hessian computed
  separately (finite differences): at a global minimum the two agree when the orbit is the whole
  set of minima nearby;
* :func:`edln_one_step_charges` — the realised change of the Platonic paper's charges
  ``C_k = W_{k+1}ᵀW_{k+1} − W_kW_kᵀ`` (P-Eq. 16–17) in one SGD step on Gaussian minibatches;
* :func:`ae_one_step_charges` — the same for the autoencoder's ``Q = WᵀW − UUᵀ`` (Eq. 2, A.15);
* the square deep linear network of the DLN paper (all layers ``d×d``):
  :func:`dln_gradient_flow` on ``E = ½‖W_N⋯W_1 − Φ‖_F²``, :func:`dln_noise_walk` (isotropic
  parameter noise) and its exact second moment :func:`dln_noise_defect_theory`.

Pages: ``book/beyond/index.md``.
"""

from __future__ import annotations

import numpy as np

from ..rng import make_rng
from ..validation import (
    MAX_STEPS,
    check_allocation,
    check_array,
    check_int,
    check_positive,
    check_tolerance,
    finite_result,
    solve_ivp_bounded,
)

__all__ = [
    "generator_divergence",
    "orbit_dimension",
    "hessian_null_dimension",
    "edln_one_step_charges",
    "ae_one_step_charges",
    "projected_ratio",
    "balance_charges",
    "dln_gradient_flow",
    "dln_noise_walk",
    "dln_noise_defect_theory",
]


#: Bound on ``h n + m h`` in :func:`generator_divergence` (it differentiates entry by entry).
MAX_GENERATOR_ENTRIES = 10**4
#: Bound on the evaluations of the vector field in :func:`dln_gradient_flow` (the book's flow to
#: ``t = 2`` takes under 800): a horizon far beyond it is refused in under a second.
MAX_FLOW_EVALUATIONS = 5_000


def _matrices(name, ws, *, min_len=2, ndim=2):
    if not isinstance(ws, (list, tuple)) or len(ws) < min_len:
        raise ValueError(f"{name} must be a list of at least {min_len} matrices, got {type(ws).__name__}")
    out = [check_array(f"{name}[{i}]", w) for i, w in enumerate(ws)]
    for i, w in enumerate(out):
        if (w.ndim != ndim) if ndim else (w.ndim < 2):
            want = f"a {ndim}-d array" if ndim else "an array of matrices (..., rows, columns)"
            raise ValueError(f"{name}[{i}] must be {want}, got shape {w.shape}")
    return out


def _positive_int(name, value, minimum=1, maximum=None):
    return check_int(name, value, minimum=minimum, maximum=maximum)


def _positive(name, value):
    return check_positive(name, value)


def _shape_pair(name, shape):
    if not isinstance(shape, (tuple, list)) or len(shape) != 2:
        raise ValueError(f"{name} must be a pair (rows, columns) of integers >= 1, got {shape!r}")
    return tuple(_positive_int(name, s) for s in shape)


def generator_divergence(shape_1, shape_2, A) -> float:
    """Divergence of the symmetry generator ``v(W_1, W_2) = (A W_1, −W_2 A)``, computed numerically.

    The one-parameter group ``W_1 → e^{δA} W_1``, ``W_2 → W_2 e^{−δA}`` (``A`` a ``h×h`` matrix,
    ``W_1`` of shape ``(h, n)``, ``W_2`` of shape ``(m, h)``) leaves ``W_2 W_1`` unchanged. Its
    generator is a linear vector field; its divergence is the trace of that linear map, built
    here column by column by applying it to every coordinate direction. It equals
    ``(n − m) tr A`` and, for ``A = I``, the volume term ``dim θ_1 − dim θ_2`` of the book's
    Eq. (bey-step) with the roles of the layers as there (for the rescaling ``A = −1`` of the knob
    model, ``h = n = 1``, it is ``m − 1``; for square layers, ``0``).

    Parameters
    ----------
    shape_1, shape_2 : tuple of int
        ``(h, n)`` and ``(m, h)``.
    A : array_like, shape (h, h)

    Returns
    -------
    float
    """
    h, n = _shape_pair("shape_1", shape_1)
    m, h2 = _shape_pair("shape_2", shape_2)
    if h2 != h:
        raise ValueError(f"shape_2 must be (m, {h}) to compose with shape_1 = {tuple(shape_1)}, got {tuple(shape_2)}")
    if h * n + m * h > MAX_GENERATOR_ENTRIES:
        raise ValueError(
            f"shape_1 and shape_2 hold h n + m h = {h * n + m * h} entries, beyond MAX_GENERATOR_ENTRIES = "
            f"{MAX_GENERATOR_ENTRIES} (the divergence is taken entry by entry)"
        )
    A = check_array("A", A)
    if A.shape != (h, h):
        raise ValueError(f"A must be a finite {h}x{h} matrix, got shape {A.shape}")
    div = 0.0
    for idx in np.ndindex(h, n):  # d(A W_1)_{idx} / d(W_1)_{idx}
        e = np.zeros((h, n))
        e[idx] = 1.0
        div += (A @ e)[idx]
    for idx in np.ndindex(m, h):  # d(−W_2 A)_{idx} / d(W_2)_{idx}
        e = np.zeros((m, h))
        e[idx] = 1.0
        div += -(e @ A)[idx]
    return float(div)


#: Bound on the number of weights in :func:`orbit_dimension` (it builds one tangent per generator).
MAX_ORBIT_WEIGHTS = 10**4


def orbit_dimension(weights, *, rtol: float = 1e-10) -> int:
    """Dimension of the orbit of ``GL(d_1) × ⋯ × GL(d_{N−1})`` through ``weights``, from its generators.

    Hidden layer ``k`` (the output of ``W_k``, input of ``W_{k+1}``) carries the group
    ``W_k → e^{δA} W_k``, ``W_{k+1} → W_{k+1} e^{−δA}``; each elementary ``A = E_ab`` gives the
    tangent vector ``(…, E_ab W_k, −W_{k+1} E_ab, …)`` (layers flattened in order, each row-major,
    as :func:`symbreak.platonic.loss_hessian`). The orbit's dimension is the rank of these
    ``Σ_k d_k²`` vectors (singular values above ``rtol`` times the largest); it is below ``Σ_k d_k²``
    where the action has a stabiliser (a hidden layer wider than the rank it carries).

    Parameters
    ----------
    weights : list of numpy.ndarray
        Consecutive layers ``W_1 … W_N`` (``W_{k+1}`` takes ``W_k``'s output), at least two.
    rtol : float
        Relative threshold of the rank, in ``(0, 1)``.

    Returns
    -------
    int
    """
    ws = _matrices("weights", weights)
    for i in range(1, len(ws)):
        if ws[i].shape[1] != ws[i - 1].shape[0]:
            raise ValueError(f"weights[{i}] must take weights[{i - 1}]'s output: shapes {[w.shape for w in ws]}")
    rtol = check_tolerance("rtol", rtol)
    if rtol >= 1:
        raise ValueError(f"rtol must lie in (0, 1), got {rtol!r}")
    sizes = np.cumsum([0] + [w.size for w in ws])
    if sizes[-1] > MAX_ORBIT_WEIGHTS:
        raise ValueError(f"weights hold {sizes[-1]} entries, beyond MAX_ORBIT_WEIGHTS = {MAX_ORBIT_WEIGHTS}")
    rows = []
    for k in range(len(ws) - 1):
        h = ws[k].shape[0]
        for a, b in np.ndindex(h, h):
            t = np.zeros(sizes[-1])
            t[sizes[k] : sizes[k + 1]] = np.outer(np.eye(h)[a], ws[k][b]).ravel()  # E_ab W_k
            t[sizes[k + 1] : sizes[k + 2]] = -np.outer(ws[k + 1][:, a], np.eye(h)[b]).ravel()  # −W_{k+1} E_ab
            rows.append(t)
    with np.errstate(over="ignore", invalid="ignore"):
        sv = np.linalg.svd(finite_result("orbit_dimension", np.array(rows)), compute_uv=False)
    if sv[0] == 0:
        return 0
    return int((sv > rtol * sv[0]).sum())


def hessian_null_dimension(H, *, rtol: float = 1e-8) -> tuple:
    """Number of eigenvalues of a symmetric matrix ``H`` that vanish, and the gap above them.

    Counts the eigenvalues with ``|λ| ≤ rtol · max|λ|`` and returns that count with the ratio of the
    smallest remaining ``|λ|`` to the largest: the count is only meaningful when that ratio is far
    above ``rtol`` (the book reports it). ``H`` is symmetrised first.

    Returns
    -------
    (int, float)
    """
    h = check_array("H", H, ndim=2)
    if h.shape[0] != h.shape[1] or h.shape[0] == 0:
        raise ValueError(f"H must be a non-empty square matrix, got shape {h.shape}")
    if h.shape[0] > MAX_ORBIT_WEIGHTS:
        raise ValueError(f"H has {h.shape[0]} rows, beyond MAX_ORBIT_WEIGHTS = {MAX_ORBIT_WEIGHTS}")
    rtol = check_tolerance("rtol", rtol)
    if rtol >= 1:
        raise ValueError(f"rtol must lie in (0, 1), got {rtol!r}")
    with np.errstate(over="ignore", invalid="ignore"):
        ev = np.sort(np.abs(np.linalg.eigvalsh(finite_result("hessian_null_dimension", (h + h.T) / 2))))
    top = ev[-1]
    if top == 0:
        raise ValueError("H must not be zero")
    null = int((ev <= rtol * top).sum())
    gap = float(ev[null] / top) if null < ev.size else 0.0
    return null, gap


def projected_ratio(samples, expected) -> np.ndarray:
    """Each sample's projection on ``expected``, in units of ``expected``: ``⟨X, E⟩ / ⟨E, E⟩``.

    A matrix-valued mean is then compared with theory through one number whose mean is 1 when the
    theory holds (and 0 when the samples have no drift along ``E``), with a standard error over the
    samples. ``samples`` has one leading axis of draws; ``expected`` the shape of one draw.
    """
    x = check_array("samples", samples)
    e = check_array("expected", expected)
    if x.ndim < 1 or x.shape[0] == 0 or x.shape[1:] != e.shape:
        raise ValueError(f"samples must have shape (draws,) + {e.shape}, got {x.shape}")
    norm = float((e * e).sum())
    if norm <= 0:
        raise ValueError("expected must not be zero")
    with np.errstate(over="ignore", invalid="ignore"):
        return finite_result("projected_ratio", (x * e).reshape(x.shape[0], -1).sum(axis=1) / norm)


def edln_one_step_charges(net, task, weights, *, lr: float, batch_size: int, draws: int, seed=None) -> list:
    """Realised change of the charges ``C_k`` in one SGD step, for ``draws`` independent minibatches.

    The embedded deep linear network ``f(x) = M^O W_D ⋯ W_1 M^I Z x`` of the Platonic paper
    (P-Eq. 15) with the per-sample loss ``‖f(x) − y‖²``, ``x ~ N(0, Σx)``, ``y = V* x + ε``,
    ``ε ~ N(0, Σε)`` (so that the population loss is ``L`` of :mod:`symbreak.platonic`). From the
    same ``weights`` each draw takes one step ``W_i → W_i − η g_i`` with the mean gradient ``g`` of
    ``batch_size`` fresh samples, and returns ``C_k(after) − C_k(before)``: the measured quantity
    whose exact mean is :func:`symbreak.platonic.charge_drift`.

    Returns
    -------
    list of numpy.ndarray
        One array of shape ``(draws, d_k, d_k)`` per hidden layer ``k = 1 .. D−1``.
    """
    lr = _positive("lr", lr)
    batch_size = _positive_int("batch_size", batch_size)
    draws = _positive_int("draws", draws)
    ws = _matrices("weights", weights)
    if [w.shape for w in ws] != list(net.shapes):
        raise ValueError(f"weights must have the shapes {net.shapes}, got {[w.shape for w in ws]}")
    widest = max([task.n, task.m] + [w.shape[0] for w in ws])
    check_allocation("draws × batch_size × widest layer (the minibatches)", draws * batch_size * widest)
    check_allocation("draws × layer sizes (the stepped weights)", draws * sum(w.size for w in ws))
    rng = make_rng(seed)
    lx = np.linalg.cholesky(task.sigma_x)
    ev, vec = np.linalg.eigh(task.sigma_eps)
    le = (vec * np.sqrt(np.clip(ev, 0.0, None))) @ vec.T  # Σε may be singular (PSD)
    x = rng.standard_normal((draws, batch_size, task.n)) @ lx.T
    y = x @ task.v_star.T + rng.standard_normal((draws, batch_size, task.m)) @ le.T
    acts = [x @ net.input_map.T]
    for w in ws:
        acts.append(acts[-1] @ w.T)
    r = acts[-1] @ net.m_out.T - y
    delta = 2.0 * r @ net.m_out  # d ℓ / d (output of W_D)
    grads = [None] * len(ws)
    for i in range(len(ws) - 1, -1, -1):
        grads[i] = np.einsum("rbo,rbi->roi", delta, acts[i]) / batch_size
        delta = delta @ ws[i]
    new = [w - lr * g for w, g in zip(ws, grads)]
    out = []
    for k in range(len(ws) - 1):
        before = ws[k + 1].T @ ws[k + 1] - ws[k] @ ws[k].T
        after = np.swapaxes(new[k + 1], 1, 2) @ new[k + 1] - new[k] @ np.swapaxes(new[k], 1, 2)
        out.append(after - before)
    return finite_result("edln_one_step_charges", out)


def ae_one_step_charges(W, U, lambdas, *, eta: float, batch_size: int, draws: int, seed=None) -> np.ndarray:
    """Realised change of ``Q = WᵀW − UUᵀ`` in one SGD step of the linear autoencoder, per draw.

    Loss ``½‖WUx − x‖²``, ``x ~ N(0, diag λ)``; each draw takes one step (A.13–A.14) from the same
    ``(W, U)`` with the empirical covariance of ``batch_size`` fresh samples and returns
    ``Q(after) − Q(before)``, whose exact mean is
    :func:`symbreak.autoencoder.expected_charge_increment`.

    Returns
    -------
    numpy.ndarray, shape (draws, k, k)
    """
    eta = _positive("eta", eta)
    batch_size = _positive_int("batch_size", batch_size)
    draws = _positive_int("draws", draws)
    lam = check_array("lambdas", lambdas)
    if lam.ndim != 1 or lam.size == 0 or not np.all(lam > 0):
        raise ValueError("lambdas must be a non-empty 1-d array of positive variances")
    W, U = check_array("W", W), check_array("U", U)
    d = lam.size
    if W.ndim != 2 or U.shape != (W.shape[1], d) or W.shape[0] != d:
        raise ValueError(f"W must be (d, k) and U (k, d) with d = {d}, got {W.shape} and {U.shape}")
    check_allocation("draws × batch_size × d (the minibatches)", draws * batch_size * d)
    check_allocation("draws × d × d (the minibatch covariances)", draws * d * d)
    rng = make_rng(seed)
    x = rng.standard_normal((draws, batch_size, d)) * np.sqrt(lam)
    sig = np.swapaxes(x, 1, 2) @ x / batch_size
    M = W @ U - np.eye(d)
    ms = M @ sig
    gW, gU = ms @ U.T, W.T @ ms
    W1, U1 = W - eta * gW, U - eta * gU
    q0 = W.T @ W - U @ U.T
    with np.errstate(over="ignore", invalid="ignore"):
        return finite_result("ae_one_step_charges", np.swapaxes(W1, 1, 2) @ W1 - U1 @ np.swapaxes(U1, 1, 2) - q0)


def balance_charges(ws) -> list:
    """``C_k = W_{k+1}ᵀ W_{k+1} − W_k W_kᵀ`` for a list of layers (batched over leading axes);
    all zero on the balanced variety of the DLN paper."""
    ws = _matrices("ws", ws, ndim=None)
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            out = [
                np.swapaxes(ws[k + 1], -1, -2) @ ws[k + 1] - ws[k] @ np.swapaxes(ws[k], -1, -2)
                for k in range(len(ws) - 1)
            ]
    except ValueError:
        raise ValueError(
            f"ws must be consecutive layers (W_(k+1) takes W_k's output), got shapes {[w.shape for w in ws]}"
        ) from None
    return finite_result("balance_charges", out)


def _product(ws):
    out = ws[0]
    for w in ws[1:]:
        out = w @ out
    return out


def dln_gradient_flow(ws0, target, times, *, rtol: float = 1e-11, atol: float = 1e-12) -> list:
    """Gradient flow of ``E = ½‖W_N ⋯ W_1 − Φ‖_F²`` for a deep linear network, as an ODE.

    ``Ẇ_i = −(W_N⋯W_{i+1})ᵀ (W − Φ) (W_{i−1}⋯W_1)ᵀ`` (DOP853). The DLN paper's flows are on this
    energy's landscape (any spectral energy has the same Noether structure); the charges
    :func:`balance_charges` are conserved along it up to the solver's tolerance.

    Returns
    -------
    list of numpy.ndarray
        The layers at each time, each of shape ``(T, d_out, d_in)``.

    Raises
    ------
    ValueError
        For bad arguments (the message names them), and when the state leaves the float64 range or
        the horizon needs more than ``MAX_FLOW_EVALUATIONS`` (5,000) evaluations of the vector field.
    """
    ws0 = _matrices("ws0", ws0)
    for i in range(1, len(ws0)):
        if ws0[i].shape[1] != ws0[i - 1].shape[0]:
            raise ValueError(f"ws0[{i}] must take ws0[{i - 1}]'s output: shapes {[w.shape for w in ws0]}")
    target = check_array("target", target)
    if target.shape != (ws0[-1].shape[0], ws0[0].shape[1]):
        raise ValueError(f"target must have the shape of W_N ⋯ W_1, {(ws0[-1].shape[0], ws0[0].shape[1])}")
    times = check_array("times", times)
    rtol, atol = check_tolerance("rtol", rtol), check_tolerance("atol", atol)
    if times.ndim != 1 or times.size == 0 or np.any(times < 0) or np.any(np.diff(times) < 0):
        raise ValueError("times must be a non-empty, non-decreasing 1-d array of times >= 0")
    shapes = [w.shape for w in ws0]
    sizes = np.cumsum([0] + [w.size for w in ws0])

    def split(y):
        return [y[sizes[i] : sizes[i + 1]].reshape(shapes[i]) for i in range(len(shapes))]

    def rhs(_t, y):
        ws = split(y)
        err = _product(ws) - target
        grads = []
        for i in range(len(ws)):
            left = _product(ws[i + 1 :]) if i + 1 < len(ws) else np.eye(target.shape[0])
            right = _product(ws[:i]) if i > 0 else np.eye(target.shape[1])
            grads.append(-(left.T @ err @ right.T).ravel())
        return np.concatenate(grads)

    y0 = np.concatenate([w.ravel() for w in ws0])
    if times[-1] == 0:
        ys = np.tile(y0, (times.size, 1))
    else:  # bounded in work, refusing an overflowing state or a horizon below float64 resolution
        with np.errstate(over="ignore", invalid="ignore"):
            ys = solve_ivp_bounded(
                rhs,
                float(times[-1]),
                y0,
                times,
                method="DOP853",
                rtol=rtol,
                atol=atol,
                what="dln_gradient_flow",
                max_evaluations=MAX_FLOW_EVALUATIONS,
            )
    return [np.stack([split(ys[j])[i] for j in range(times.size)]) for i in range(len(shapes))]


def dln_noise_walk(ws0, *, sigma_p2: float, steps: int, replicas: int, record_every: int = 1, seed=None):
    """Isotropic parameter noise on a deep linear network: ``W_i → W_i + ξ_i``, ``ξ_i ~ N(0, σ_p² I)``.

    No loss gradient (the noise alone, as at a minimum of the loss, where the gradient vanishes).
    Returns the record steps and the charge changes ``C_k(t) − C_k(0)`` (:func:`balance_charges`)
    of every replica: shape ``(T, R, N−1, d, d)`` for square layers ``d×d``.
    """
    ws0 = _matrices("ws0", ws0)
    sigma_p2 = _positive("sigma_p2", sigma_p2)
    steps = _positive_int("steps", steps, maximum=MAX_STEPS)
    replicas = _positive_int("replicas", replicas)
    record_every = _positive_int("record_every", record_every)
    c0 = np.stack(balance_charges(ws0))
    n_rec = steps // record_every + 2
    check_allocation("replicas × layer sizes (the walking layers)", replicas * sum(w.size for w in ws0))
    check_allocation("records × replicas × charges (the recorded defects)", n_rec * replicas * c0.size)
    rng = make_rng(seed)
    ws = [np.broadcast_to(w, (replicas,) + w.shape).copy() for w in ws0]
    sd = np.sqrt(sigma_p2)
    rec_steps, recs = [0], [np.zeros((replicas,) + c0.shape)]
    for t in range(1, steps + 1):
        for w in ws:
            w += sd * rng.standard_normal(w.shape)
        if t % record_every == 0 or t == steps:
            rec_steps.append(t)
            recs.append(np.stack(balance_charges(ws), axis=1) - c0)
    return np.array(rec_steps), np.stack(recs)


def dln_noise_defect_theory(ws0, sigma_p2: float, t) -> np.ndarray:
    """Exact ``E‖C_k(t) − C_k(0)‖_F²`` under :func:`dln_noise_walk`, for square ``d×d`` layers.

    With equal layer dimensions ``E[ξᵀξ] = E[ξξᵀ] = σ_p² d I``: the mean change of every ``C_k`` is
    exactly zero (the volume term vanishes), so ``C_k`` is a martingale and its increments are
    orthogonal. One step adds ``2σ_p²(d+1)(‖W_{k+1}‖² + ‖W_k‖²) + 2σ_p⁴d²(d+1)`` in expectation
    (Isserlis; the Wishart variance of ``ξᵀξ``), and ``E‖W_i(s)‖² = ‖W_i(0)‖² + sσ_p²d²``; the sum
    over ``t`` steps is ``2σ_p²(d+1) t [‖W_{k+1}(0)‖² + ‖W_k(0)‖² + σ_p² d² t]``.

    Returns
    -------
    numpy.ndarray, shape (len(t), N−1)
    """
    ws0 = _matrices("ws0", ws0)
    d = ws0[0].shape[0]
    if any(w.shape != (d, d) for w in ws0):
        raise ValueError("ws0 must be square d×d layers of one size (the DLN paper's network)")
    s2 = _positive("sigma_p2", sigma_p2)
    t = np.atleast_1d(check_array("t", t))
    if t.ndim != 1 or np.any(t < 0):
        raise ValueError(f"t must be a number or 1-d array of step counts >= 0, got shape {t.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.array([(w * w).sum() for w in ws0])
        pair = norms[1:] + norms[:-1]
        out = 2.0 * s2 * (d + 1) * t[:, None] * (pair[None, :] + s2 * d * d * t[:, None])
    return finite_result("dln_noise_defect_theory", out)
