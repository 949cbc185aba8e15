"""Matrices: the operator $A_{N,X}$, balanced factors, the matrix flow and gradient descent on the
factors.

Pages: ``book/dln/entropy.md``, ``book/dln/equilibrium.md``, ``book/dln/index.md``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate

from ..engine import Configuration, DivergenceError, record_steps, run_ensemble
from ..rng import make_rng
from ..validation import (
    MAX_STEPS,
    check_array,
    check_int,
    check_positive,
    finite_result,
)
from ._common import (
    _LITERAL_DEPTH,
    _LOOP_DEPTH,
    _check_beta,
    _check_depth,
    _check_factors,
    _check_sigma,
    _log_geometric,
)
from .energy import _resolve_energy
from .flow import _free_energy_grad
from .spectral_entropy import _entropy_grad_batched

__all__ = [
    "A_operator",
    "A_matrix",
    "A_eigenvalues",
    "factor_metric_operator",
    "balanced_factors",
    "end_to_end",
    "balance_defect",
    "spectral_gradient_matrix",
    "train_factors",
    "entropy_gradient_matrix",
    "matrix_velocity",
    "matrix_flow_jacobian",
    "matrix_flow",
    "completion_task",
    "completion_low_rank_ratios",
]

# ---------------------------------------------------------------------------------------------
# matrices: the operator A_{N,X}, balanced factors, gradient descent on the factors
# ---------------------------------------------------------------------------------------------


def _sym_power(m, power):
    """``M^power`` of a symmetric positive semi-definite matrix (``0^0 = 1``)."""
    w, q = np.linalg.eigh(0.5 * (m + m.T))
    w = np.clip(w, 0.0, None)
    with np.errstate(divide="ignore"):
        wp = np.where(w > 0, w**power, 1.0 if power == 0 else 0.0)
    return (q * wp) @ q.T


def A_operator(X, P, N) -> np.ndarray:
    """``A_{N,X}(P) = Σ_{p=1}^N (XXᵀ)^{(N−p)/N} P (XᵀX)^{(p−1)/N}`` (Section 2.2), evaluated literally
    with the fractional powers of ``XXᵀ`` and ``XᵀX`` (no singular value decomposition of ``X``).

    ``A_{N,X}`` is the inverse of the DLN metric ``g^N`` at ``X``; the gradient flow (1.1) is
    ``Ẋ = −A_{N,X}(∇E(X))``.
    """
    X = check_array("X", X, ndim=2)
    if X.shape[0] != X.shape[1]:
        raise ValueError(f"X must be square, got shape {X.shape}")
    P = check_array("P", P, shape=X.shape)
    N = _check_depth(N)
    if N > _LITERAL_DEPTH:
        raise ValueError(
            f"N must be <= {_LITERAL_DEPTH} for A_operator (it sums the N terms literally), got {N}; "
            "A_eigenvalues gives the operator's eigenvalues for any N"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        left = X @ X.T
        right = X.T @ X
    if not (np.all(np.isfinite(left)) and np.all(np.isfinite(right))):  # no eigh on non-finite input
        raise ValueError("X is too large in scale: X Xᵀ overflows float64")
    return sum(_sym_power(left, (N - k) / N) @ P @ _sym_power(right, (k - 1) / N) for k in range(1, N + 1))


def A_matrix(X, N) -> np.ndarray:
    """The ``d²×d²`` matrix of :func:`A_operator` on row-major ``vec(P)``."""
    X = check_array("X", X, ndim=2)
    if X.shape[0] != X.shape[1] or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty square matrix, got shape {X.shape}")
    N = _check_depth(N)
    d = X.shape[0]
    if N * d * d > 50 * _LITERAL_DEPTH:
        raise ValueError(
            f"A_matrix applies the N-term sum to d² = {d * d} basis matrices: N * d² must be <= "
            f"{50 * _LITERAL_DEPTH}, got N = {N}, d = {d} (A_eigenvalues gives the eigenvalues for any N)"
        )
    cols = []
    for k in range(d * d):
        e = np.zeros(d * d)
        e[k] = 1.0
        cols.append(A_operator(X, e.reshape(d, d), N).reshape(-1))
    return np.stack(cols, axis=1)


def A_eigenvalues(sigma, N) -> np.ndarray:
    """Lemma 2.1: ``A_{N,X} u_k v_lᵀ = a_kl u_k v_lᵀ`` with
    ``a_kl = (σ_k² − σ_l²)/(σ_k^{2/N} − σ_l^{2/N}) = Σ_{m=0}^{N−1} σ_k^{2(N−1−m)/N} σ_l^{2m/N}``
    (``a_kk = N σ_k^{2−2/N}``). Returns the ``d×d`` array ``a_kl`` (tie-safe polynomial form)."""
    return _a_kl(_check_sigma(sigma), _check_depth(N))


def _a_kl(sigma, N) -> np.ndarray:
    """The body of :func:`A_eigenvalues`, unvalidated (for the matrix flow's right-hand side)."""
    if N > _LOOP_DEPTH:  # a_kl = λ_max^{2(N−1)} Σ_m r^{2m} in closed form: no loop over the N layers
        ell = np.log(sigma)
        hi = np.maximum(ell[:, None], ell[None, :])
        with np.errstate(over="ignore"):
            out = np.exp(2.0 * (1.0 - 1.0 / N) * hi + _log_geometric(np.abs(ell[:, None] - ell[None, :]), N))
    else:
        lam2 = sigma ** (2.0 / N)
        with np.errstate(over="ignore"):
            out = sum(np.outer(lam2 ** (N - 1 - m), lam2**m) for m in range(N))
    if not np.all(np.isfinite(out)):
        raise ValueError("A_eigenvalues: a_kl ~ N sigma^(2-2/N) exceeds the float64 range (sigma too large)")
    return out


def end_to_end(Ws) -> np.ndarray:
    """``X = W_N ⋯ W_1`` for factors given in the order ``[W_1, …, W_N]``."""
    Ws = _check_factors(Ws)
    X = Ws[0]
    for W in Ws[1:]:
        X = W @ X
    return finite_result("end_to_end", X)


def factor_metric_operator(Ws, P) -> np.ndarray:
    """``Dφ Dφ*(P) = Σ_k (W_N⋯W_{k+1})(W_N⋯W_{k+1})ᵀ P (W_{k−1}⋯W_1)ᵀ(W_{k−1}⋯W_1)``.

    The end-to-end velocity produced by gradient flow on the factors is ``−DφDφ*(∇E(X))``; on the
    balanced manifold this operator equals ``A_{N,X}`` (the geometric origin of Lemma 2.1).
    """
    Ws = _check_factors(Ws)
    P = check_array("P", P, shape=Ws[0].shape)
    n = len(Ws)
    d = P.shape[0]
    out = np.zeros_like(P)
    for k in range(n):
        left = end_to_end(Ws[k + 1 :]) if k + 1 < n else np.eye(d)
        right = end_to_end(Ws[:k]) if k > 0 else np.eye(d)
        out += left @ left.T @ P @ right.T @ right
    return finite_result("factor_metric_operator", out)


def _haar_orthogonal(rng, d):
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))[None, :]


def balanced_factors(X, N, rng=None) -> list:
    """Balanced factors ``[W_1, …, W_N]`` with ``W_N ⋯ W_1 = X`` and ``W_{k+1}ᵀW_{k+1} = W_kW_kᵀ``.

    With ``X = UΣVᵀ``: ``W_1 = Q_1Σ^{1/N}Vᵀ``, ``W_k = Q_kΣ^{1/N}Q_{k−1}ᵀ``, ``W_N = UΣ^{1/N}Q_{N−1}ᵀ``
    where ``Q_k`` are Haar-random orthogonal matrices drawn from ``rng`` (identity if ``rng`` is None):
    the balanced fibre over ``X`` is exactly this orbit of ``O_d^{N−1}``.
    """
    X = check_array("X", X, ndim=2)
    if X.shape[0] != X.shape[1] or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty square matrix, got shape {X.shape}")
    N = _check_depth(N)
    if N > _LITERAL_DEPTH:
        raise ValueError(f"N must be <= {_LITERAL_DEPTH} for balanced_factors (it builds N matrices), got {N}")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (symbreak.rng.make_rng) or None, got {rng!r}")
    d = X.shape[0]
    U, s, Vt = np.linalg.svd(X)
    root = np.diag(s ** (1.0 / N))
    Qs = [np.eye(d) if rng is None else _haar_orthogonal(rng, d) for _ in range(N - 1)]
    if N == 1:
        return [X.copy()]
    Ws = [Qs[0] @ root @ Vt]
    for k in range(1, N - 1):
        Ws.append(Qs[k] @ root @ Qs[k - 1].T)
    Ws.append(U @ root @ Qs[-1].T)
    return Ws


def balance_defect(Ws) -> float:
    """``max_k ‖W_{k+1}ᵀW_{k+1} − W_kW_kᵀ‖_F`` (zero on the balanced manifold)."""
    Ws = _check_factors(Ws)
    if len(Ws) < 2:
        return 0.0
    return finite_result(
        "balance_defect",
        float(max(np.linalg.norm(Ws[k + 1].T @ Ws[k + 1] - Ws[k] @ Ws[k].T) for k in range(len(Ws) - 1))),
    )


def spectral_gradient_matrix(X, *, N, beta, p=None, energy=None) -> np.ndarray:
    """Euclidean gradient ``∇_X F_β = U diag(∂F_β/∂σ) Vᵀ`` of a spectral free energy at ``X``.

    Well defined also at repeated singular values (``∂F/∂σ_i`` is then the same for the tied ones,
    by the symmetry of ``F_β``), which is why a tie-safe entropy gradient is needed here.
    """
    X = check_array("X", X, ndim=2)
    if X.shape[0] != X.shape[1] or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty square matrix, got shape {X.shape}")
    N = _check_depth(N)
    beta = _check_beta(beta, allow_inf=True)
    energy = _resolve_energy(p, energy)
    U, s, Vt = np.linalg.svd(X)
    if np.any(s <= 0):
        raise ValueError("X must be invertible (all singular values > 0)")
    return finite_result("spectral_gradient_matrix", (U * _free_energy_grad(s, N, beta, energy)[None, :]) @ Vt)


class _FactorModel:
    """Gradient descent on the factors of ``F_β(W_N ⋯ W_1)``, one replica, for
    :func:`symbreak.engine.run_ensemble`."""

    def __init__(self, Ws, N, beta, energy, step):
        self.Ws, self.N, self.beta, self.energy, self.h = Ws, N, beta, energy, step
        self.eye = np.eye(Ws[0].shape[0])

    def _prefix(self):
        # prefix[k] = W_k ⋯ W_1 (prefix[0] = I)
        prefix = [self.eye]
        for W in self.Ws:
            prefix.append(W @ prefix[-1])
        return prefix

    def _svd(self, X, step):
        # never hand a non-finite matrix to the SVD (LAPACK can loop forever on it)
        if not np.all(np.isfinite(X)):
            raise DivergenceError(
                step,
                0,
                {"step": self.h, "N": self.N, "beta": self.beta},
                float(np.max(np.abs(np.nan_to_num(X, nan=np.inf)))),
                _FACTOR_LIMIT,
                "factor gradient descent",
            )
        return np.linalg.svd(X)

    def draw(self, m):
        return None

    def step(self, _noise, _t, n):
        prefix = self._prefix()
        U, s, Vt = self._svd(prefix[-1], n)
        if s.min() <= 0:
            raise DivergenceError(
                n,
                0,
                {"step": self.h, "N": self.N, "beta": self.beta},
                0.0,
                _FACTOR_LIMIT,
                "factor gradient descent (X became singular)",
            )
        G = (U * _free_energy_grad(s, self.N, self.beta, self.energy)[None, :]) @ Vt
        N, Ws = self.N, self.Ws
        suffix = [self.eye] * (N + 1)
        for k in range(N - 1, -1, -1):
            suffix[k] = suffix[k + 1] @ Ws[k]
        grads = [suffix[k + 1].T @ G @ prefix[k].T for k in range(N)]
        self.Ws = [W - self.h * gk for W, gk in zip(Ws, grads)]

    def magnitude(self):
        return np.array([max(float(np.max(np.abs(W))) for W in self.Ws)])

    def record(self, _mask):
        X = self._prefix()[-1]
        s = np.linalg.svd(X)[1] if np.all(np.isfinite(X)) else np.full(X.shape[0], np.nan)
        return (s[None], np.array([balance_defect(self.Ws)]))

    def final(self, _mask):
        return tuple(W[None] for W in self.Ws)

    def keep(self, _mask):  # pragma: no cover - a single replica finishes once
        raise AssertionError


_FACTOR_LIMIT = 1e12


def entropy_gradient_matrix(X, N) -> np.ndarray:
    """Euclidean gradient ``∇_X S_N = U diag(∂S_N/∂σ_i) Vᵀ`` of the entropy at an invertible ``X``
    (well defined at repeated singular values: the tie-safe gradient is equal on tied values)."""
    X = check_array("X", X, ndim=2)
    if X.shape[0] != X.shape[1]:
        raise ValueError(f"X must be square, got shape {X.shape}")
    N = _check_depth(N, minimum=2)
    U, s, Vt = np.linalg.svd(X)
    if not np.all(s > 0):
        raise ValueError("X must be invertible (all singular values > 0)")
    return (U * _entropy_grad_batched(s, N)[None, :]) @ Vt


def matrix_velocity(X, *, N, beta, grad_energy) -> np.ndarray:
    """The matrix flow (1.1)/(1.5): ``Ẋ = −A_{N,X}(∇E(X) − ∇S_N(X)/β)`` for any energy.

    ``A_{N,X}`` is applied in the singular basis of ``X`` by Lemma 2.1 (``A(u_kv_lᵀ) = a_kl u_kv_lᵀ``,
    :func:`A_eigenvalues`), which agrees with the literal :func:`A_operator` to rounding.

    Parameters
    ----------
    X : array_like, shape (d, d)
        Invertible end-to-end matrix.
    N : int
        Depth ``≥ 2``.
    beta : float
        Inverse temperature ``> 0`` or ``numpy.inf`` (no entropy: the plain DLN gradient flow).
    grad_energy : callable
        ``X ↦ ∇E(X)`` (Euclidean gradient, same shape as ``X``); spectral or not.
    """
    X, N, beta = _check_matrix_flow_args(X, N, beta, grad_energy)
    return _matrix_velocity(X, N, beta, grad_energy)


def _check_matrix_flow_args(X, N, beta, grad_energy, name: str = "X"):
    X = check_array(name, X, ndim=2)
    N = _check_depth(N, minimum=2)
    beta = _check_beta(beta, allow_inf=True)
    if not callable(grad_energy):
        raise TypeError("grad_energy must be a callable X -> grad E(X)")
    if X.shape[0] != X.shape[1]:
        raise ValueError(f"{name} must be square, got shape {X.shape}")
    return X, N, beta


def _matrix_velocity(X, N, beta, grad_energy) -> np.ndarray:
    """The body of :func:`matrix_velocity` for validated ``N``, ``beta``, ``grad_energy`` and a square
    float ``X`` (the ODE right-hand side: validated once per solve, not at every evaluation)."""
    if not np.all(np.isfinite(X)):  # never hand a non-finite matrix to the SVD (LAPACK can loop forever on it)
        raise ValueError("matrix_velocity: X must contain only finite numbers (the flow left the float64 range)")
    G = check_array("grad_energy(X)", grad_energy(X))
    if G.shape != X.shape:
        raise ValueError(f"grad_energy(X) must return an array of shape {X.shape}, got {G.shape}")
    U, s, Vt = np.linalg.svd(X)
    if not np.all(s > 0) or not np.all(np.isfinite(s)):
        raise ValueError("X must be invertible and finite (all singular values in (0, inf))")
    # A_{N,X} in the singular basis (Lemma 2.1): one SVD instead of N fractional matrix powers
    a = _a_kl(s, N)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow (β → 0, huge ∇E) is reported, not returned
        if not math.isinf(beta):
            G = G - (U * _entropy_grad_batched(s, N)[None, :]) @ Vt / beta
        return finite_result("matrix_velocity", -U @ (a * (U.T @ G @ Vt.T)) @ Vt)


def matrix_flow_jacobian(X, *, N, beta, grad_energy, rel_step: float = 1e-4) -> np.ndarray:
    """Jacobian of :func:`matrix_velocity` at ``X`` (``d²×d²`` on row-major ``vec``), by
    Richardson-extrapolated central differences (:func:`numerical_jacobian`)."""
    X, N, beta = _check_matrix_flow_args(X, N, beta, grad_energy)
    shape = X.shape
    h = check_positive("rel_step", rel_step) * float(np.abs(X).max())
    fun = lambda v: _matrix_velocity(v.reshape(shape), N, beta, grad_energy).ravel()  # noqa: E731
    x = X.ravel()
    cols = []
    for j in range(x.size):

        def central(step):
            e = np.zeros_like(x)
            e[j] = step
            return (fun(x + e) - fun(x - e)) / (2.0 * step)

        cols.append((4.0 * central(h / 2.0) - central(h)) / 3.0)
    return np.stack(cols, axis=1)


def matrix_flow(
    X0, t_eval, *, N, beta, grad_energy, rtol: float = 1e-9, atol: float = 1e-12, max_steps: int = 200_000
) -> np.ndarray:
    """Integrate :func:`matrix_velocity` from ``X0`` (``scipy.integrate.solve_ivp``, DOP853).

    Returns the matrices at ``t_eval`` (shape ``(T, d, d)``). Raises ``ValueError`` for bad input,
    when the integration fails or needs more than ``max_steps`` right-hand-side evaluations (no
    hang), and when ``grad_energy`` returns a non-finite or misshaped gradient.
    """
    X0, N, beta = _check_matrix_flow_args(X0, N, beta, grad_energy, name="X0")
    t_eval = check_array("t_eval", t_eval, ndim=1)
    if t_eval.size == 0 or np.any(t_eval < 0) or np.any(np.diff(t_eval) < 0) or not np.all(np.isfinite(t_eval)):
        raise ValueError("t_eval must be a non-empty, non-decreasing array of finite times >= 0")
    max_steps = check_int("max_steps", max_steps, minimum=1, maximum=10**8)
    shape = X0.shape
    calls = [0]

    def rhs(_t, v):
        calls[0] += 1
        if calls[0] > max_steps:
            raise ValueError(f"matrix_flow: more than max_steps={max_steps} evaluations; shorten the horizon")
        return _matrix_velocity(v.reshape(shape), N, beta, grad_energy).ravel()

    if t_eval[-1] == 0.0:
        return np.repeat(X0[None], t_eval.size, axis=0)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowing trial step is rejected, or reported below
        sol = integrate.solve_ivp(
            rhs, (0.0, float(t_eval[-1])), X0.ravel(), method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol
        )
    if not sol.success:
        raise ValueError(f"matrix_flow: integration failed ({sol.message})")
    return sol.y.T.reshape((t_eval.size,) + shape)


def train_factors(Ws, *, N, beta, step, steps, p=None, energy=None, record_every: int = 1) -> dict:
    """Gradient descent on the factors of ``F_β(W_N ⋯ W_1)``: ``W_k ← W_k − h ∇_{W_k} F_β``.

    ``∇_{W_k} F = (W_N⋯W_{k+1})ᵀ ∇_X F (W_{k−1}⋯W_1)ᵀ``. Started on the balanced manifold, small
    steps ``h`` follow the end-to-end flow ``Ẋ = −A_{N,X}(∇_X F)`` with time ``t = h × steps``; the
    singular values then follow the chamber flow of Lemma 2.5. The residual against the flow is
    ``O(h)``: the Euler discretisation error and the drift of balancedness (each step changes
    ``W_{k+1}ᵀW_{k+1} − W_kW_kᵀ`` by ``O(h²)``). Runs on :func:`symbreak.engine.run_ensemble`
    (one replica): Ctrl-C stops it, and a step too large for the landscape raises
    :class:`symbreak.engine.DivergenceError` instead of overflowing.

    Returns
    -------
    dict with ``times`` (``h × recorded steps``), ``sigma`` (recorded singular values, descending,
    shape (T, d)), ``balance`` (balance defect at the recorded steps), ``Ws`` (final factors) and
    ``X`` (final end-to-end matrix).

    Raises
    ------
    symbreak.engine.DivergenceError
        If the factors overflow (a weight above 1e12 or non-finite) or ``X`` becomes singular; the
        message names the step count and ``h``, ``N``, ``β``.
    """
    Ws = [W.copy() for W in _check_factors(Ws)]
    N = _check_depth(N)
    if len(Ws) != N:
        raise ValueError(f"Ws must hold N={N} factors, got {len(Ws)}")
    beta = _check_beta(beta, allow_inf=True)
    step = check_positive("step", step)
    steps = check_int("steps", steps, minimum=0, maximum=MAX_STEPS)
    record_every = check_int("record_every", record_every, minimum=1)
    energy = _resolve_energy(p, energy)
    grid = record_steps(steps, record_every) if steps else np.zeros(1, dtype=np.int64)
    model = _FactorModel(Ws, N, beta, energy, step)
    run = run_ensemble(
        lambda _reps, _streams: model,
        [Configuration(1, grid, {"step": step, "N": N, "beta": beta})],
        seed=0,
        record_names=("sigma", "balance"),
        final_names=tuple(f"W{k}" for k in range(N)),
        n_chunks=1,
        check_every=1,
        divergence_limit=_FACTOR_LIMIT,
        method="factor gradient descent",
        desc="factor gradient descent",
    )[0]
    Ws = [run.final[f"W{k}"][0] for k in range(N)]
    return {"times": grid * step, "sigma": run.sigma[0], "balance": run.balance[0], "Ws": Ws, "X": end_to_end(Ws)}


# ---------------------------------------------------------------------------------------------
# the matrix-completion example (Sec. 8.2 of the paper, as the book sets it up)
# ---------------------------------------------------------------------------------------------


def completion_task(seed, *, d: int = 4, n_missing: int = 6):
    """A draw of the book's matrix-completion example (the paper's Sec. 8.2 setting).

    The target is a rank-one ``d×d`` matrix ``a bᵀ`` with standard normal factors; ``n_missing``
    entries, chosen uniformly, are unobserved; the start direction ``Q0`` is the orthogonal factor of
    a standard normal matrix. The energy is ``E(X) = ½‖M ⊙ (X − a bᵀ)‖²_F`` with the 0/1 mask ``M``.

    Parameters
    ----------
    seed : int or tuple of int
        Seed of the draw (:func:`symbreak.rng.make_rng`; ``BOOK_SEED`` shifts it).
    d : int
        Size of the matrix, at least 2.
    n_missing : int
        Number of unobserved entries, from 0 to ``d² − 1``.

    Returns
    -------
    target, mask, Q0 : ndarray
        The rank-one target, the 0/1 mask of observed entries, and the orthogonal start direction.
    """
    d = check_int("d", d, minimum=2, maximum=64)
    n_missing = check_int("n_missing", n_missing, minimum=0, maximum=d * d - 1)
    rng = make_rng(seed)
    target = rng.standard_normal((d, 1)) @ rng.standard_normal((1, d))
    mask = np.ones(d * d)
    mask[rng.permutation(d * d)[:n_missing]] = 0.0
    mask = mask.reshape(d, d)
    Q0 = np.linalg.qr(rng.standard_normal((d, d)))[0]
    return target, mask, Q0


def completion_low_rank_ratios(
    target, mask, Q0, alphas, *, N, t_end: float, rtol: float = 1e-8, atol: float = 1e-12, max_steps: int = 200_000
):
    """``σ₂/σ₁`` of the β = ∞ matrix flow (1.1) of the completion energy at ``t_end``, from ``α Q0``
    for each ``α`` in ``alphas`` (the low-rank implicit bias: small when ``α`` is small and the flow
    has converged).

    Parameters
    ----------
    target, mask, Q0 : array_like
        A task of :func:`completion_task` (``d×d`` each; ``mask`` of 0s and 1s).
    alphas : sequence of float
        Initial scales, each positive.
    N : int
        Depth of the network, at least 1.
    t_end : float
        Time at which the ratio is read, positive.
    rtol, atol : float
        Tolerances of :func:`matrix_flow`.
    max_steps : int
        Most right-hand-side evaluations of each flow, 1 to 10⁸ (:func:`matrix_flow`'s ``max_steps``):
        a horizon that needs more raises ``ValueError`` instead of running on.

    Returns
    -------
    ndarray
        ``σ₂/σ₁`` at ``t_end`` for each ``α``.
    """
    target = check_array("target", target, ndim=2)
    mask = check_array("mask", mask, ndim=2)
    Q0 = check_array("Q0", Q0, ndim=2)
    if not (target.shape == mask.shape == Q0.shape and target.shape[0] == target.shape[1]):
        raise ValueError(
            f"target, mask and Q0 must be square of one shape, got {target.shape}, {mask.shape}, {Q0.shape}"
        )
    if not np.all((mask == 0.0) | (mask == 1.0)):
        raise ValueError("mask must hold only 0s and 1s")
    alphas = check_array("alphas", alphas, ndim=1)
    if alphas.size == 0 or np.any(alphas <= 0):
        raise ValueError("alphas must be a non-empty sequence of positive scales")
    t_end = check_positive("t_end", t_end)

    def grad(X):
        return mask * (X - target)

    out = []
    for alpha in alphas:
        path = matrix_flow(
            alpha * Q0,
            np.array([0.0, t_end]),
            N=N,
            beta=np.inf,
            grad_energy=grad,
            rtol=rtol,
            atol=atol,
            max_steps=max_steps,
        )
        sv = np.linalg.svd(path[-1], compute_uv=False)
        out.append(sv[1] / sv[0])
    return np.array(out)
