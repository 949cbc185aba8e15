"""Spectra, growth rates and the effective scale dynamics on the PCA manifold: the Lambert-W law
(P-Eq. 6, also P-Eq. C.52), its square-root limit, the finite-step corrections and the matrix scale flow (P-App. C).

Pages: ``book/autoencoder/index.md``, ``book/autoencoder/lambert.md``,
``book/autoencoder/sharpness-relu.md``, ``book/autoencoder/stability.md``, ``book/how-to-use.md``.
"""

from __future__ import annotations

import math

import numpy as np

from ..lambert import lambert_w_scale
from ..validation import (
    MAX_ODE_EVALUATIONS,
    check_array,
    check_int,
    check_positive,
    check_symmetric_positive_definite,
    check_tolerance,
    finite_result,
    solve_ivp_bounded,
)
from ._common import _MAX_DIM, _scales, _spectrum, _undercomplete_k

__all__ = [
    "geometric_spectrum",
    "growth_rates",
    "charge_drift_matrix",
    "lambert_scale",
    "sqrt_scale",
    "lambert_time",
    "scale_flow",
    "drift_correction",
    "corrected_scale",
    "off_manifold_fluctuations",
]


# --------------------------------------------------------------------------------------------
# spectra and rates
# --------------------------------------------------------------------------------------------
def geometric_spectrum(d: int, first: float = 12.0, last: float = 0.18) -> np.ndarray:
    """Geometrically spaced covariance eigenvalues of App. F.

    ``λ_i = first · (last/first)^((i−1)/(d−1))``, ``i = 1 … d``; ``first = 12``, ``last = 0.18`` in
    every experiment of the paper.

    Raises
    ------
    ValueError
        If ``d < 2``, a value is not positive, or ``last > first`` (the spectrum must be sorted).
    """
    d = check_int("d", d, minimum=2, maximum=_MAX_DIM)
    first = check_positive("first", first)
    last = check_positive("last", last)
    if last > first:
        raise ValueError(f"last must not exceed first (a non-increasing spectrum), got first={first}, last={last}")
    return first * (last / first) ** (np.arange(d) / (d - 1))


def growth_rates(lambdas, k: int) -> np.ndarray:
    """Growth rates ``c_a = λ_a Σ_{j>k} λ_j``, ``a = 1 … k`` (C.54, Gaussian data).

    They are the diagonal of ``C = E[‖x_⊥‖² x_∥ x_∥ᵀ]`` in the eigenbasis of ``Σ``: for Gaussian data
    ``x_∥`` and ``x_⊥`` are independent, so ``C = (Σ_{j>k} λ_j) Λ_+``.
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    return finite_result("growth_rates", lam[:k] * lam[k:].sum())


def charge_drift_matrix(lambdas, k: int) -> np.ndarray:
    """The matrix ``C = E[‖x_⊥‖² x_∥ x_∥ᵀ]`` of Eq. 5 for Gaussian data, ``diag(c_1, …, c_k)``."""
    return np.diag(growth_rates(lambdas, k))


# --------------------------------------------------------------------------------------------
# effective dynamics (App. C)
# --------------------------------------------------------------------------------------------
def _broadcast_positive(name, value, *, allow_zero=False):
    arr = check_array(name, value)
    if allow_zero and np.any(arr < 0):
        raise ValueError(f"{name} must lie in [0, inf), got min {arr.min()!r}")
    if not allow_zero and np.any(arr <= 0):
        raise ValueError(f"{name} must lie in (0, inf), got min {arr.min()!r}")
    return arr


def lambert_scale(s0, c, tau):
    """Scale ``s(τ)`` under the effective flow: ``s = sqrt(W[s0² exp(s0² + 2cτ)])`` (Eq. 6 / C.52).

    ``W`` is the principal branch of the Lambert W function. The argument overflows for moderate
    ``cτ``, so the formula is evaluated in log space: ``W(e^z)`` with
    ``z = 2 log s0 + s0² + 2cτ`` is the Wright omega function ``ω(z)``, the solution of
    ``ω + log ω = z``; ``scipy.special.wrightomega`` is polished by one Newton step on that
    equation. Relative error below ``1e-12`` and finite for every ``τ`` in ``[0, 1e12]``.

    Parameters
    ----------
    s0 : array_like
        Initial scale ``s(0) > 0``.
    c : array_like
        Growth rate ``c ≥ 0`` (e.g. :func:`growth_rates`).
    tau : array_like
        Slow time ``τ = t η²/B ≥ 0``.

    Returns
    -------
    numpy.ndarray or float
        ``s(τ)``, broadcast over the three arguments. It solves the implicit equation (C.49)
        ``s²/2 + log s = s0²/2 + log s0 + cτ``.
    """
    s0 = _broadcast_positive("s0", s0)
    c = _broadcast_positive("c", c, allow_zero=True)
    tau = _broadcast_positive("tau", tau, allow_zero=True)
    return lambert_w_scale(s0, c, tau)


def sqrt_scale(s0, c, tau):
    """The alternative effective model of App. C.4: ``s(τ) = sqrt(s0² + 2cτ)`` (C.74).

    It comes from the dynamics of ``WᵀW`` alone (C.71) and agrees with :func:`lambert_scale` only
    at long times, ``s ~ sqrt(2cτ)`` (C.53).
    """
    s0 = _broadcast_positive("s0", s0)
    c = _broadcast_positive("c", c, allow_zero=True)
    tau = _broadcast_positive("tau", tau, allow_zero=True)
    with np.errstate(over="ignore"):
        s = np.hypot(s0, math.sqrt(2.0) * np.sqrt(c) * np.sqrt(tau))  # sqrt(s0² + 2cτ), no overflow of s0²
    return finite_result("sqrt_scale", float(s) if s.ndim == 0 else s)


def lambert_time(s, s0, c):
    """Slow time at which the Lambert-W flow started at ``s0`` reaches the scale ``s`` (from C.49).

    ``τ = (s² − s0² + 2 log(s/s0)) / (2c)``.
    """
    s = _broadcast_positive("s", s)
    s0 = _broadcast_positive("s0", s0)
    c = _broadcast_positive("c", c)
    with np.errstate(over="ignore", invalid="ignore"):
        tau = ((s - s0) * (s + s0) + 2.0 * np.log(s / s0)) / (2.0 * c)
    if not np.all(np.isfinite(tau)):
        raise ValueError(
            "lambert_time: tau = (s² − s0² + 2 log(s/s0))/(2c) exceeds the float64 range "
            "(s or s0 too large, or c too small)"
        )
    return float(tau) if np.ndim(tau) == 0 else tau


def drift_correction(lambdas, k: int, s, eta: float) -> np.ndarray:
    """Relative finite-``η`` excess ``ε_a`` of the mean charge drift on the PCA manifold.

    *Not in the paper: the book's first-order extension of the effective model (C.32–C.37).* SGD
    does not sit exactly on the manifold: the minibatch noise ``−X_⊥X_∥ᵀA^{-T}/B`` kicks the
    out-of-subspace coordinates ``(δW_⊥, δU_⊥)``, which relax with the Hessian blocks
    ``H_aj = [[λ_a/s_a, −λ_j], [−λ_j, λ_j s_a]]`` (B.91). For ``S = diag(s)`` each pair
    ``(a, j)``, ``a ≤ k < j``, is an independent linear process
    ``ξ ← (I − ηH_aj) ξ + η n``, ``n = (n_1, 0)``, ``Var n_1 = λ_aλ_j/(B s_a)``, whose stationary
    covariance ``Ξ_aj = (I − ηH)Ξ(I − ηH)ᵀ + η² Var n`` is of order ``η/B``. The population gradient
    ``H_aj ξ`` then adds ``η² Σ_j [(HΞH)_11 − (HΞH)_22]`` to ``E[ΔQ_aa]`` (the ``(1 + 1/B)`` terms
    of :func:`expected_charge_increment`), against the leading ``η² c_a/(B s_a)``; the ratio
    ``ε_a`` is independent of ``B`` and of order ``η λ``.

    Returns
    -------
    numpy.ndarray, shape (k,)
        ``ε_a``, so that ``d(s_a − 1/s_a)/dτ = (c_a/s_a)(1 + ε_a)``.
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    s = _scales(s, k)
    eta = check_positive("eta", eta)
    _check_gap(lam, k)
    H, xi = _perp_lyapunov(lam, k, s, eta)
    hxh = H @ xi @ H
    excess = eta**2 * np.sum(hxh[..., 0, 0] - hxh[..., 1, 1], axis=1)
    lead = eta**2 * growth_rates(lam, k) / s
    return finite_result("drift_correction", excess / lead)


def _perp_lyapunov(lam, k, s, eta):
    """Out-of-subspace Hessian blocks ``H_aj`` and stationary covariances ``Ξ_aj`` for ``B = 1``."""
    return _pair_lyapunov(lam[:k], s, lam[k:], eta)


def _pair_lyapunov(la, s, lm, eta):
    """Blocks ``H = [[λ_a/s_a, −λ_j], [−λ_j, λ_j s_a]]`` and the stationary covariances ``Ξ`` of
    ``ξ ← (I − ηH)ξ + η n``, ``Var n_1 = λ_aλ_j/s_a`` (``B = 1``), for every entry ``a`` of ``la``, ``s``
    (shape ``(n,)``) and every ``λ_j`` of ``lm``: arrays of shape ``(n, len(lm), 2, 2)``."""
    lp, lm = la[:, None], lm[None, :]
    sa = s[:, None]
    H = np.empty((la.size, lm.size, 2, 2))
    H[..., 0, 0] = lp / sa
    H[..., 0, 1] = H[..., 1, 0] = -lm
    H[..., 1, 1] = lm * sa
    mu_max = np.linalg.eigvalsh(H).max()
    if eta * mu_max >= 2.0:
        raise ValueError(
            f"eta = {eta:.4g} is past the stability edge of the out-of-subspace modes: "
            f"eta * mu_max = {eta * mu_max:.4g} >= 2 (eta must be < {2.0 / mu_max:.4g})"
        )
    A = np.eye(2) - eta * H
    kron = np.einsum("...ij,...kl->...ikjl", A, A).reshape(la.size, lm.size, 4, 4)
    rhs = np.zeros((la.size, lm.size, 4))
    rhs[..., 0] = eta**2 * (lp * lm / sa)
    xi = np.linalg.solve(np.eye(4) - kron, rhs[..., None])[..., 0].reshape(la.size, lm.size, 2, 2)
    return H, xi


def _check_gap(lam, k):
    """The out-of-subspace modes relax only if ``λ_k > λ_{k+1}`` (a gap at ``k``): at a tie the
    Hessian block ``H_aj`` has a zero eigenvalue and the fluctuations have no stationary state."""
    if not lam[k - 1] > lam[k] * (1.0 + 1e-12):
        raise ValueError(
            f"lambdas must have a gap at k = {k} (lambda_k > lambda_(k+1), got "
            f"{lam[k - 1]:.6g} and {lam[k]:.6g}): with tied eigenvalues across the gap the "
            "out-of-subspace modes do not relax and the finite-eta correction is undefined"
        )


def off_manifold_fluctuations(lambdas, k: int, s, eta: float, batch_size: int):
    """Stationary ``E‖W_⊥‖_F²`` and ``E‖U_⊥‖_F²`` of SGD around the PCA point ``S = diag(s)``.

    The linearised out-of-subspace dynamics of :func:`drift_correction` (the book's extension):
    both are of order ``η/B`` (C.18), so the iterate stays within ``O(sqrt(η/B))`` of the manifold.
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    s = _scales(s, k)
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1)
    _check_gap(lam, k)
    _, xi = _perp_lyapunov(lam, k, s, eta)
    return finite_result("off_manifold_fluctuations", (float(xi[..., 0, 0].sum() / b), float(xi[..., 1, 1].sum() / b)))


def corrected_scale(lambdas, k: int, eta: float, taus, s0=1.0, *, rtol: float = 1e-9) -> np.ndarray:
    """Scales under the effective flow with the finite-``η`` correction of :func:`drift_correction`.

    *The book's extension, not in the paper.* Integrates
    ``ds_a/dτ = (c_a/s_a)(1 + ε_a(s_a; η)) / (1 + 1/s_a²)`` (commuting case, Gaussian data);
    ``η → 0`` gives back :func:`lambert_scale`.

    Returns
    -------
    numpy.ndarray, shape (len(taus), k)
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    eta = check_positive("eta", eta)
    rtol = check_tolerance("rtol", rtol)
    _check_gap(lam, k)
    c = growth_rates(lam, k)
    s0 = _scales(s0, k)
    taus = check_array("taus", taus, ndim=1)
    if taus.size == 0 or np.any(taus < 0) or np.any(np.diff(taus) < 0):
        raise ValueError("taus must be a non-empty, non-decreasing array of slow times >= 0")

    def rhs(_t, s):
        return c / s * (1.0 + drift_correction(lam, k, s, eta)) / (1.0 + 1.0 / s**2)

    return solve_ivp_bounded(
        rhs, float(taus[-1]), s0, taus, method="DOP853", rtol=rtol, atol=1e-12, what="corrected_scale"
    )


def _commuting_scale_flow(S0, C_hat, ex, taus):
    """The closed form for commuting ``S(0)`` and ``C = 2^ex Ĉ``: in a common eigenbasis every mode
    follows :func:`lambert_scale` (Eq. 6). ``None`` when they do not commute (to round-off)."""
    s_max = np.linalg.eigvalsh(S0).max()
    # a generic combination of two commuting symmetric matrices has their common eigenvectors
    _, v = np.linalg.eigh(S0 / s_max + (1.0 / math.pi) * C_hat)
    s_d, c_d = v.T @ S0 @ v, v.T @ C_hat @ v
    off = ~np.eye(S0.shape[0], dtype=bool)
    if np.abs(s_d[off]).max(initial=0.0) > 1e-13 * s_max or np.abs(c_d[off]).max(initial=0.0) > 1e-13:
        return None
    c = np.ldexp(np.maximum(np.diag(c_d), 0.0), ex)
    s = lambert_scale(np.diag(s_d)[None, :], c[None, :], taus[:, None])
    return np.einsum("ij,tj,kj->tik", v, s, v)


def scale_flow(S0, C, taus, *, rtol: float = 1e-10, atol: float = 1e-12) -> np.ndarray:
    """Integrate the matrix effective dynamics (C.37) ``d/dτ (S − S⁻¹) = S^{-1/2} C S^{-1/2}``.

    Works for any symmetric positive-definite ``S(0)`` and ``C``, commuting or not, at any scale of
    ``S(0)``, ``C`` and ``τ`` in the float64 range. When ``S(0)`` and ``C`` commute (to round-off) the
    closed form is used: every mode of their common eigenbasis follows :func:`lambert_scale`
    (Eq. 6). Otherwise the integrated variable is ``L = log S``: in the
    eigenbasis ``S = V diag(e^{l}) Vᵀ``, with ``C̃ = Vᵀ C V``, the flow (C.37) reads

    ``(Vᵀ L̇ V)_ij = C̃_ij φ(l_i − l_j) / (1 + e^{l_i + l_j})``,  ``φ(δ) = (δ/2)/sinh(δ/2)``

    (the derivative of ``S − S⁻¹`` is ``Ṡ + S⁻¹ṠS⁻¹``, that of the matrix logarithm the divided
    difference ``(l_i − l_j)/(s_i − s_j)``); every factor is bounded, and ``L`` resolves scales of
    ``S`` from ``1e-308`` to ``1e308`` at once, where ``S − S⁻¹`` would not. For a single mode it is
    ``l̇ = c/(1 + e^{2l})``, i.e. (C.48). Further:

    * only the product ``Cτ`` enters (the flow is invariant under ``C → aC``, ``τ → τ/a``): with
      ``C = 2^e Ĉ`` (``max |Ĉ_ij| ∈ [1/2, 1)``, an exact rescaling) the time is ``T = 2^e τ``;
    * the solver's time is ``u = log(1 + T/T_f)``, with ``T_f = 1 + s_min² + 2 log⁺(1/s_min)``
      (``s_min`` the smallest eigenvalue of ``S(0)``) the time on which the fastest direction of ``S``
      changes (``d log s/dT ≤ 1``, and ``≈ 1/s²`` once ``s > 1``);
    * the state is ``M = L − ½ log(T_f + T) I``: the late growth ``S ~ (2TĈ)^{1/2}`` (C.53) is the
      fixed point ``M = ½ log(2T_f Ĉ)``, and ``(T_f + T)/(1 + e^{l_i + l_j}) = 1/((T_f + T)^{-1} + e^{m_i + m_j})``
      is evaluated without large logarithms, so ``Cτ`` may exceed the float64 range.

    Parameters
    ----------
    S0 : array_like, shape (k, k)
        Initial scale matrix, symmetric positive definite.
    C : array_like, shape (k, k)
        Drift matrix ``E[‖x_⊥‖² x_∥ x_∥ᵀ]``, symmetric positive semi-definite.
    taus : array_like, shape (n,)
        Non-decreasing slow times ``≥ 0`` at which to return ``S``.
    rtol, atol : float
        Tolerances of the integration (LSODA) of ``log S``: both bound relative errors of the scales
        (the relative tolerance is divided by the largest ``|log s|`` the flow reaches).

    Returns
    -------
    numpy.ndarray, shape (n, k, k)

    Raises
    ------
    ValueError
        On invalid input, or when ``S(τ)`` exceeds the float64 range.
    """
    S0 = check_symmetric_positive_definite("S0", S0)
    rtol = check_tolerance("rtol", rtol)
    atol = check_tolerance("atol", atol)
    k = S0.shape[0]
    C = check_array("C", C, shape=(k, k))
    taus = check_array("taus", taus, ndim=1)
    if taus.size == 0 or np.any(taus < 0) or np.any(np.diff(taus) < 0):
        raise ValueError("taus must be a non-empty, non-decreasing array of slow times >= 0")
    c_max = float(np.abs(C).max())
    _, ex = math.frexp(c_max)
    C_hat = np.ldexp(C, -ex)  # exact: C = 2^ex Ĉ with max |Ĉ_ij| in [1/2, 1)
    if np.abs(C_hat - C_hat.T).max() > 1e-10:
        raise ValueError("C must be symmetric")
    C_hat = 0.5 * (C_hat + C_hat.T)
    if c_max > 0 and np.linalg.eigvalsh(C_hat).min() < -1e-12:
        raise ValueError("C must be positive semi-definite")
    if c_max > 0:
        closed = _commuting_scale_flow(S0, C_hat, ex, taus)
        if closed is not None:
            return closed
    return _scale_flow_ode(S0, C_hat, ex if c_max > 0 else None, taus, rtol, atol)


def _scale_flow_ode(S0, C_hat, ex, taus, rtol, atol):
    """The integration of :func:`scale_flow` (validated input; ``ex is None`` for ``C = 0``)."""
    k = S0.shape[0]
    s0, v0 = np.linalg.eigh(S0)
    # log T_f, T_f = 1 + s_min² + 2 log⁺(1/s_min): the time on which the fastest direction changes
    # (log s grows at most linearly, at rate ≤ 1, until s reaches 1)
    log_tf = float(np.logaddexp(0.0, 2.0 * math.log(s0.min())))
    log_tf = float(np.logaddexp(log_tf, math.log(max(-2.0 * math.log(s0.min()), 1e-300))))
    with np.errstate(divide="ignore"):
        log_t = ex * math.log(2.0) + np.log(taus) if ex is not None else np.full(taus.size, -np.inf)
    u_eval = np.logaddexp(0.0, log_t - log_tf)  # u = log(1 + T/T_f); T itself may exceed float64
    if u_eval[-1] == 0.0:  # C = 0, τ = 0, or T/T_f below 1e-308: a relative change of S below T/T_f
        return np.broadcast_to(S0, (taus.size, k, k)).copy()

    def rhs(u, mflat):  # M = log S − ½ log(T_f + T) I: no cancellation of large logarithms
        mm = mflat.reshape(k, k)
        m, v = np.linalg.eigh(0.5 * (mm + mm.T))
        d = np.abs(m[:, None] - m[None, :])
        with np.errstate(over="ignore", invalid="ignore"):
            phi = np.where(d > 1e-8, d * np.exp(-0.5 * d) / -np.expm1(-np.maximum(d, 1e-300)), 1.0 - d * d / 24.0)
            # (T_f + T)/(1 + e^{l_i + l_j}) = 1/((T_f + T)^{-1} + e^{m_i + m_j})
            w = phi * np.exp(-np.logaddexp(-(log_tf + u), m[:, None] + m[None, :]))
            out = (v @ ((v.T @ C_hat @ v) * w) @ v.T - 0.5 * np.eye(k)).ravel()
        if not np.all(np.isfinite(out)):
            raise ValueError(
                "scale_flow: the growth rate of a small direction of S exceeds the float64 range "
                "(S0 and C too ill-conditioned for this horizon)"
            )
        return out

    m0 = (v0 * (np.log(s0) - 0.5 * log_tf)) @ v0.T
    # an error δ in log S is a relative error δ in S: the solver's relative tolerance is taken on the
    # largest |log s| the flow reaches (up to ~700), so that rtol stays a relative accuracy of S
    l_scale = 1.0 + max(float(np.abs(np.log(s0)).max()), 0.5 * max(float(log_t[-1]), 0.0))
    rtol_l = max(rtol / l_scale, 100 * np.finfo(float).eps)
    # one integration per output time, each continuing from the last (the solver's dense output is
    # less accurate than its steps over the long steps of the late, nearly linear growth of log S)
    ls = np.empty((taus.size, k * k))
    mflat, u_prev, used = m0.ravel(), 0.0, [0]

    def counted(t, y, u0):
        used[0] += 1
        return rhs(u0 + t, y)

    for i, u in enumerate(u_eval):
        if u > u_prev:
            if used[0] >= MAX_ODE_EVALUATIONS:
                raise ValueError(
                    f"scale_flow: reaching tau = {taus[i]:.6g} needs more than {MAX_ODE_EVALUATIONS} evaluations "
                    "of the vector field; shorten the horizon"
                )
            mflat = solve_ivp_bounded(
                lambda t, y, u0=u_prev: counted(t, y, u0),
                float(u - u_prev),
                mflat,
                [float(u - u_prev)],
                # LSODA: at late times M relaxes at rate ~1 in u and the explicit DOP853 is held to steps
                # of ~6 by stability; LSODA switches to BDF there (3-10x fewer evaluations). A span far
                # below the time scale (~1 in u) is left to DOP853 (LSODA cannot step through 1e-300).
                method="LSODA" if u - u_prev > 1e-3 else "DOP853",
                rtol=rtol_l,
                atol=atol,
                what="scale_flow",
                max_evaluations=MAX_ODE_EVALUATIONS - used[0],
            )[-1]
            u_prev = float(u)
        ls[i] = mflat
    out = np.empty((taus.size, k, k))
    for i, (u, mflat) in enumerate(zip(u_eval, ls)):
        mm = mflat.reshape(k, k)
        m, v = np.linalg.eigh(0.5 * (mm + mm.T))
        l = m + 0.5 * (log_tf + u)
        if l.max() > math.log(np.finfo(float).max):
            raise ValueError(
                f"scale_flow: S(tau) exceeds the float64 range at tau = {taus[i]:.6g} (S0, C or taus too large)"
            )
        out[i] = (v * np.exp(l)) @ v.T
    return out
