"""The slow flow on GL(k), rotation included (the book's extension of P-App. C): the GL(k) drift and
flow, the polar rotation, the charge noise and the SGD variants that test them.

Pages: ``book/autoencoder/lambert.md``, ``book/autoencoder/sharpness-relu.md``.
"""

from __future__ import annotations

import numpy as np

from ..validation import (
    MAX_DRAWS,
    MAX_STEPS,
    check_allocation,
    check_array,
    check_choice,
    check_int,
    check_invertible,
    check_positive,
    finite_result,
)
from ._common import DIVERGENCE_LIMIT, GL_DRIFT_RTOL, GL_FLOW_MAX_TAU, _spectrum, _undercomplete_k
from .scale import lambert_scale

__all__ = ["gl_flow_drift", "gl_flow", "polar_rotation", "charge_noise_std", "simulate_sgd_variants"]


# --------------------------------------------------------------------------------------------
# the slow flow on GL(k), rotation included (the book's extension of App. C)
# --------------------------------------------------------------------------------------------
def _gl_check(lambdas, k, A):
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    A = check_invertible("A", A, size=k)
    if lam[k - 1] <= lam[k]:
        raise ValueError(f"lambdas must have a spectral gap lambda_k > lambda_(k+1), got {lam[k - 1]!r} <= {lam[k]!r}")
    return lam, k, A


def _gl_drift(lam, k, A):
    # on inputs extreme in scale the products overflow or the eigenvalues are lost: a ValueError
    # (finite_result, or the charge identity below), never a NaN or a silently wrong drift
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # Every out-of-subspace block H_j (B.77) is symmetric, so its Lyapunov equation
        # H X + X H = Σ_j is solved by H's eigendecomposition H = V diag(h) Vᵀ:
        # X = V [(Vᵀ Σ_j V) / (h_a + h_b)] Vᵀ, all blocks j in one batched eigh.
        lp = lam[:k]
        lo = lam[k:]
        Ai = np.linalg.inv(A)
        M = (Ai * lp) @ Ai.T  # A⁻¹ Λ₊ A⁻ᵀ
        S = A.T @ A
        idx = np.arange(k)
        H = np.zeros((lo.size, 2 * k, 2 * k))
        H[:, :k, :k] = M
        H[:, k:, k:] = lo[:, None, None] * S
        H[:, idx, k + idx] = -lo[:, None]
        H[:, k + idx, idx] = -lo[:, None]
        h, V = np.linalg.eigh(H)
        V1, V2 = V[:, :k, :], V[:, k:, :]  # Σ_j = λ_j M on the decoder's rows only: Vᵀ Σ_j V = λ_j V₁ᵀ M V₁
        T = lo[:, None, None] * (V1.transpose(0, 2, 1) @ M @ V1) / (h[:, :, None] + h[:, None, :])
        eww = (V1 @ T @ V1.transpose(0, 2, 1)).sum(0)  # Σ_j X_j[:k, :k]
        euu = (lo[:, None, None] * (V2 @ T @ V2.transpose(0, 2, 1))).sum(0)  # Σ_j λ_j X_j[k:, k:]
        gw = A @ euu  # E ∇_{W∥} L, second order in ξ
        gu = eww @ Ai * lp  # E ∇_{U∥} L, second order in ξ
        # the orthogonal projection of (gw, gu) on the tangent directions (X, −A⁻¹XA⁻¹) solves
        # X + (AAᵀ)⁻¹ X (AᵀA)⁻¹ = R; with AAᵀ = Q diag(p) Qᵀ and AᵀA = P diag(s) Pᵀ it is diagonal in Qᵀ X P
        p, Q = np.linalg.eigh(A @ A.T)
        s, P = np.linalg.eigh(S)
        R = gw - Ai.T @ gu @ Ai.T
        Y = (Q.T @ R @ P) / (1.0 + 1.0 / np.outer(p, s))
        out = -(Q @ Y @ P.T)
        # the one exact relation the drift obeys, the charge's (Eq. 5): d(S − S⁻¹)/dτ = A⁻¹ C A⁻ᵀ with
        # S = AᵀA, C = (Σ_{j>k} λ_j) Λ₊. Far from the PCA point's usual scales (A ill-conditioned, or
        # large) float64 cannot resolve the blocks' small eigenvalues, and the drift is refused.
        finite_result("gl_flow_drift", out)
        Si = np.linalg.inv(S)
        dS = out.T @ A + A.T @ out
        want = (Ai * (lp * lo.sum())) @ Ai.T
        miss = np.abs(dS + Si @ dS @ Si - want).max() / np.abs(want).max()
        if not miss <= GL_DRIFT_RTOL:
            sv = np.linalg.svd(A, compute_uv=False)
            raise ValueError(
                f"gl_flow_drift: A is too ill-conditioned or extreme in scale for float64 (singular values "
                f"{sv[-1]:.3g} to {sv[0]:.3g}): the drift misses the charge identity of Eq. 5 by {miss:.2g} "
                f"of its size (at most {GL_DRIFT_RTOL:g} is accepted)"
            )
    return out


def gl_flow_drift(lambdas, k: int, A) -> np.ndarray:
    """Slow drift ``dA/dτ`` of the full ``GL(k)`` point ``(W, U) = (Pᵀ A, A⁻¹ P)``, Gaussian data.

    *The book's extension of App. C, not in the paper.* The paper writes ``A = S^{1/2}``; SGD's
    ``A = O S^{1/2}`` also carries a rotation ``O`` that leaves the charge ``Q = S − S⁻¹`` unchanged but
    changes its drift ``A⁻¹ C A⁻ᵀ`` (A.26). In the limit ``η → 0`` on ``τ = t η²/B`` the point moves as
    the gradient-flow projection ``Φ`` of SGD {Li, Wang and Arora's slow SDE}:
    ``dΦ/dτ = ½ ∂²Φ[Σ₁] = −∂Φ · E_Ξ[∇L]``, where ``Σ₁`` is the per-sample gradient covariance (on the
    manifold it lives in the decoder's out-of-subspace rows: ``λ_j A⁻¹Λ₊A⁻ᵀ`` for row ``j``),
    ``Ξ = L_H⁻¹(Σ₁)`` solves the Lyapunov equation ``HΞ + ΞH = Σ₁`` in each out-of-subspace block
    ``H_j = [[A⁻¹Λ₊A⁻ᵀ, −λ_j I], [−λ_j I, λ_j AᵀA]]`` (B.77), ``E_Ξ[∇L]`` is the second-order part of the
    population gradient, ``(A E[U_⊥Λ₋U_⊥ᵀ], E[W_⊥ᵀW_⊥] A⁻¹Λ₊)`` in the within-subspace blocks, and
    ``∂Φ`` is the orthogonal projection onto the tangent directions ``(X, −A⁻¹XA⁻¹)``.

    The charge it implies reproduces Eq. 5 exactly, ``d(AᵀA − (AᵀA)⁻¹)/dτ = A⁻¹CA⁻ᵀ`` (tested).

    Parameters
    ----------
    lambdas : array_like, shape (d,)
        Eigenvalues of the diagonal ``Σ``, non-increasing, with ``λ_k > λ_{k+1}``.
    k : int
        Hidden width, ``1 ≤ k < d``.
    A : array_like, shape (k, k)
        Invertible.

    Returns
    -------
    numpy.ndarray, shape (k, k)

    Raises
    ------
    ValueError
        If ``A`` is not an invertible ``k × k`` matrix, or the spectrum has no gap at ``k``; or if
        float64 cannot resolve the drift at ``A`` (an ``A`` ill-conditioned or extreme in scale: the
        drift misses the charge identity above by more than :data:`GL_DRIFT_RTOL` of its size).
    """
    lam, k, A = _gl_check(lambdas, k, A)
    return _gl_drift(lam, k, A)


def gl_flow(lambdas, k: int, A0, taus, *, rtol: float = 1e-8, atol: float = 1e-10) -> np.ndarray:
    """Integrate :func:`gl_flow_drift` from ``A(0) = A0``; returns ``A(τ)``, shape ``(len(taus), k, k)``.

    ``S = AᵀA`` and the rotation :func:`polar_rotation` ``O`` follow from it. Eq. 5 (with ``A = S^{1/2}``)
    is exact exactly when ``Oᵀ C O = C`` along the flow: when ``S(0)`` commutes with ``C`` (then ``A``
    stays symmetric) or when ``C ∝ I``.

    Raises
    ------
    ValueError
        On a bad ``A0`` (see :func:`gl_flow_drift`), or ``taus`` that are not non-decreasing, ``≥ 0``
        and ``≤`` :data:`GL_FLOW_MAX_TAU`.
    """
    from scipy.integrate import solve_ivp

    lam, k, A0 = _gl_check(lambdas, k, A0)
    taus = check_array("taus", taus, ndim=1)
    if taus.size == 0 or np.any(taus < 0) or np.any(np.diff(taus) < 0):
        raise ValueError("taus must be a non-empty, non-decreasing array of slow times >= 0")
    if taus[-1] > GL_FLOW_MAX_TAU:
        raise ValueError(
            f"taus reach {taus[-1]:.3g}, beyond the horizon {GL_FLOW_MAX_TAU:.0e} that gl_flow integrates "
            "(a few seconds of work; S then grows like (2τC)^(1/2), see sqrt_scale)"
        )
    if taus[-1] == 0.0:  # nothing to integrate
        return np.repeat(A0[None], taus.size, axis=0)
    sol = solve_ivp(
        lambda _t, a: _gl_drift(lam, k, a.reshape(k, k)).ravel(),
        (0.0, float(taus[-1])),
        A0.ravel(),
        t_eval=taus,
        method="DOP853",
        rtol=rtol,
        atol=atol,
    )
    if not sol.success:  # pragma: no cover
        raise RuntimeError(f"gl_flow: integration failed: {sol.message}")
    return sol.y.T.reshape(-1, k, k)


def polar_rotation(A) -> np.ndarray:
    """Orthogonal factor ``O`` of the polar decomposition ``A = O (AᵀA)^{1/2}`` (batched over leading axes)."""
    A = check_array("A", A)  # TypeError for complex, bool, strings (asarray(dtype=float) cast them)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A must be a finite square matrix (or a stack of them), got shape {A.shape}")
    u, _, vt = np.linalg.svd(A)
    return u @ vt


def charge_noise_std(lambdas, k: int, eta: float, batch_size: int, taus, s0: float = 1.0) -> np.ndarray:
    """Seed-to-seed standard deviation of the charge ``Q_11`` along the flow from ``S(0) = s0 I`` (C.36).

    *The book's quantitative form of C.36.* On the PCA manifold one step adds
    ``ΔQ_11 = (η²/(B² s_1)) ‖Σ_i x_{1i} x_{⊥i}‖²``; for Gaussian data its variance is
    ``η⁴ V_B/(B⁴ s_1²)`` with ``V_B = λ_1² [2B(B+2) Σ_{j>k} λ_j² + 2B (Σ_{j>k} λ_j)²]``. A deviation
    ``δQ_11`` relaxes at rate ``γ = c_1/(s_1² + 1)`` (``d(c_1/s_1)/dQ_11``), so on ``τ = tη²/B`` the
    variance obeys ``dV/dτ = −2γV + η² V_B/(B³ s_1²)``, with ``s_1(τ)`` from Eq. 6. It is ``O(η²/B)``.

    Returns
    -------
    numpy.ndarray, shape (len(taus),)
        ``sqrt(V(τ))``.

    Raises
    ------
    ValueError
        On non-positive ``eta``, ``batch_size < 1``, ``s0 <= 0`` or bad ``taus``.
    """
    from scipy.integrate import solve_ivp

    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1)
    s0 = check_positive("s0", s0)
    taus = check_array("taus", taus, ndim=1)
    if taus.size == 0 or np.any(taus < 0) or np.any(np.diff(taus) < 0):
        raise ValueError("taus must be a non-empty, non-decreasing array of slow times >= 0")
    c1 = lam[0] * lam[k:].sum()
    vb = lam[0] ** 2 * (2 * b * (b + 2) * np.sum(lam[k:] ** 2) + 2 * b * lam[k:].sum() ** 2)

    src = vb / float(b) ** 3  # V is proportional to η²: integrate at η = 1, scale the result by η

    def rhs(t, v):
        s1 = lambert_scale(s0, c1, t)
        return -2 * c1 / (s1 * s1 + 1) * v + src / (s1 * s1)

    if taus[-1] == 0.0:
        return np.zeros(taus.size)
    sol = solve_ivp(rhs, (0.0, float(taus[-1])), [0.0], t_eval=taus, rtol=1e-8, atol=1e-14 * src)
    with np.errstate(over="ignore"):
        out = eta * np.sqrt(np.maximum(sol.y[0], 0.0))
    return finite_result("charge_noise_std", out)


def simulate_sgd_variants(
    lambdas,
    k: int,
    eta: float,
    batch_size: int,
    steps: int,
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    data: str = "gaussian",
    seeds: int = 1,
    n_records: int = 50,
    seed=None,
) -> SGDResult:
    """SGD beyond the paper's assumptions: heavy-ball momentum, weight decay, non-Gaussian data.

    A small, separate simulator (explicit samples, PCA initialisation ``S(0) = I``, seeds batched)
    for the linear autoencoder: ``v ← β v + ∇L̂ + λ_wd θ``, ``θ ← θ − η v`` for ``θ = (W, U)``. With
    ``data="scale-mixture"`` every point is ``x = r g``, ``g ~ N(0, diag λ)`` and ``r² ∈ {1/2, 3/2}``
    with equal probability: the covariance is unchanged, ``x_∥`` and ``x_⊥`` stay uncorrelated but are
    no longer independent, and ``C = E[r⁴] (Σ_{j>k}λ_j) Λ₊ = 1.25 C_Gauss``.

    Replica ``r`` (of ``seeds``) draws its samples from its own stream
    (:func:`symbreak.engine.replica_streams`): its trajectory depends only on ``(seed, r)``, not on
    how many replicas run. Divergence is checked after every step (the step is the first one past
    the limit).

    Returns
    -------
    SGDResult
        With ``tau = steps η²/B`` (the plain-SGD slow time), ``S``, ``Q`` and ``loss``.

    Raises
    ------
    ValueError
        If ``momentum`` is not in ``[0, 1)``, ``weight_decay < 0``, ``data`` is not ``"gaussian"`` or
        ``"scale-mixture"``, or another argument is out of range.
    symbreak.engine.DivergenceError
        If a replica diverges.
    """
    from ..engine import DivergenceError, fill_normals, replica_streams

    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1, maximum=10**6)
    steps = check_int("steps", steps, minimum=1, maximum=MAX_STEPS)
    n = check_int("seeds", seeds, minimum=1, maximum=10**5)
    n_records = check_int("n_records", n_records, minimum=1, maximum=10**6)
    if steps * n * b > MAX_DRAWS:
        raise ValueError(
            f"steps × seeds × batch_size = {steps * n * b:.3g} samples exceeds {MAX_DRAWS:.3g}: "
            "shorten the run or use fewer seeds"
        )
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float, np.floating)) or not 0 <= momentum < 1:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    if (
        isinstance(weight_decay, bool)
        or not isinstance(weight_decay, (int, float, np.floating))
        or not (np.isfinite(weight_decay) and weight_decay >= 0)
    ):
        raise ValueError(f"weight_decay must be a finite number >= 0, got {weight_decay!r}")
    data = check_choice("data", data, ("gaussian", "scale-mixture"))
    d = lam.size
    check_allocation("seeds × d × batch_size (one step's samples)", n * d * b)
    check_allocation("records × seeds × k² × 2 (the recorded S and Q)", 2 * (min(n_records, steps) + 1) * n * k * k)
    # one stream per replica (engine.replica_streams): replica r's numbers depend only on (seed, r)
    streams = replica_streams(seed, range(n))
    X = np.empty((n, d, b))
    W = np.zeros((n, d, k))
    W[:, :k, :] = np.eye(k)
    U = np.swapaxes(W, 1, 2).copy()
    vW, vU = np.zeros_like(W), np.zeros_like(U)
    sq = np.sqrt(lam)[None, :, None]
    rec = np.unique(np.round(np.linspace(0, steps, n_records + 1)).astype(np.int64))
    S_rec, Q_rec, L_rec = [], [], []
    eye = np.eye(d)

    def record():
        S_rec.append(np.einsum("nji,njl->nil", W, W))
        Q_rec.append(S_rec[-1] - np.einsum("nij,nlj->nil", U, U))
        E = np.einsum("nij,njl->nil", W, U) - eye
        L_rec.append(0.5 * np.einsum("nij,j,nij->n", E, lam, E))

    record()
    for t in range(1, steps + 1):
        fill_normals(streams, X)  # X[r] = streams[r].standard_normal((d, b)), bit for bit
        X *= sq
        if data == "scale-mixture":
            X *= np.sqrt(np.where(np.stack([g.random((1, b)) for g in streams]) < 0.5, 0.5, 1.5))
        G = (W @ U - eye) @ (X @ np.swapaxes(X, 1, 2)) / b  # (WU − I) Σ̂
        gW = G @ np.swapaxes(U, 1, 2) + weight_decay * W
        gU = np.swapaxes(W, 1, 2) @ G + weight_decay * U
        vW = momentum * vW + gW
        vU = momentum * vU + gU
        W = W - eta * vW
        U = U - eta * vU
        if not (np.abs(W).max() < DIVERGENCE_LIMIT and np.abs(U).max() < DIVERGENCE_LIMIT):  # every step; NaN too
            with np.errstate(invalid="ignore"):
                mag = np.maximum(np.abs(W).reshape(n, -1).max(axis=1), np.abs(U).reshape(n, -1).max(axis=1))
            bad = int(np.argmax(~(np.isfinite(mag) & (mag < DIVERGENCE_LIMIT))))
            raise DivergenceError(
                t,
                bad,
                {"eta": eta, "batch_size": b, "momentum": momentum, "weight_decay": weight_decay},
                float(mag[bad]),
                DIVERGENCE_LIMIT,
            )
        if t in rec:
            record()
    return SGDResult(
        steps=rec,
        tau=rec * eta**2 / b,
        S=np.stack(S_rec, 1),
        Q=np.stack(Q_rec, 1),
        loss=np.stack(L_rec, 1),
        eta=eta,
        batch_size=b,
        lambdas=lam,
        k=k,
    )


# names from later modules of this package, imported last so that the import cycle resolves
from .sgd import SGDResult  # noqa: E402
