"""The Noether charge Q = WᵀW − UUᵀ (P-Eq. 2), minibatch gradients, one SGD step and its charge
increment (P-App. A, E), and the gradient flow.

Pages: ``book/autoencoder/index.md``, ``book/autoencoder/lambert.md``,
``book/autoencoder/stability.md``.
"""

from __future__ import annotations

import numpy as np

from ..engine import (
    check_divergence,
)
from ..rng import make_rng
from ..validation import (
    MAX_DRAWS,
    MAX_ODE_EVALUATIONS,
    check_array,
    check_int,
    check_positive,
    check_positive_array,
    check_tolerance,
    finite_result,
    solve_ivp_bounded,
)
from ._common import (
    DIVERGENCE_LIMIT,
    _check_decoder_encoder,
    _check_pair,
    _check_sigma_hat,
    _spectrum,
    _undercomplete_k,
)
from .hessian import pca_point

__all__ = [
    "noether_charge",
    "minibatch_gradients",
    "sgd_step",
    "charge_increment",
    "expected_charge_increment",
    "charge_increments_along_sgd",
    "saturation_scale",
    "gradient_flow",
    "gradient_flow_horizon",
]


# --------------------------------------------------------------------------------------------
# charges, gradients, flows (App. A, E)
# --------------------------------------------------------------------------------------------
def noether_charge(W, U) -> np.ndarray:
    """Noether charge of the ``GL(k)`` symmetry, ``Q = WᵀW − UUᵀ`` (Eq. 2). Batched over leading axes.

    Its diagonal entries are the per-neuron charges ``q_i = ‖w_i‖² − ‖u_i‖²`` (E.13) and its trace
    is the scalar charge ``q = ‖W‖_F² − ‖U‖_F²``.
    """
    W, U = _check_pair(W, U)
    return finite_result("noether_charge", np.swapaxes(W, -1, -2) @ W - U @ np.swapaxes(U, -1, -2))


def minibatch_gradients(W, U, sigma_hat):
    """Minibatch gradients ``∇_W L̂ = (WU − I)Σ̂Uᵀ``, ``∇_U L̂ = Wᵀ(WU − I)Σ̂`` (A.11–A.12)."""
    W, U = _check_pair(W, U)
    M = W @ U - np.eye(W.shape[-2])
    ms = M @ _check_sigma_hat(sigma_hat, W.shape[-2])
    return finite_result("minibatch_gradients", (ms @ np.swapaxes(U, -1, -2), np.swapaxes(W, -1, -2) @ ms))


def sgd_step(W, U, sigma_hat, eta: float):
    """One SGD step on the minibatch loss with covariance ``Σ̂`` (A.13–A.14)."""
    eta = check_positive("eta", eta)
    W, U = _check_pair(W, U)
    gW, gU = minibatch_gradients(W, U, sigma_hat)
    return finite_result("sgd_step", (W - eta * gW, U - eta * gU))


def charge_increment(W, U, sigma_hat, eta: float) -> np.ndarray:
    """``Q_{t+1} − Q_t = η²[(∇_W L̂)ᵀ(∇_W L̂) − (∇_U L̂)(∇_U L̂)ᵀ]`` (A.15 / Eq. 3).

    The order-``η`` terms cancel exactly because ``Wᵀ∇_W L̂ = (∇_U L̂)Uᵀ``; on the PCA manifold
    ``∇_U L̂ = 0`` and the increment is positive semi-definite (A.26).
    """
    eta = check_positive("eta", eta)
    W, U = _check_pair(W, U)
    gW, gU = minibatch_gradients(W, U, sigma_hat)
    return finite_result(
        "charge_increment", (eta * eta) * (np.swapaxes(gW, -1, -2) @ gW - gU @ np.swapaxes(gU, -1, -2))
    )


def expected_charge_increment(W, U, lambdas, eta: float, batch_size: int) -> np.ndarray:
    """Exact mean ``E[Q_{t+1} − Q_t | W, U]`` over a fresh Gaussian minibatch, at any point.

    With ``M = WU − I`` and the Wishart moment ``E[Σ̂ A Σ̂] = (1 + 1/B) Σ A Σ + tr(AΣ) Σ/B``
    (``A`` symmetric; Isserlis),

    ``E[ΔQ] = η² { U[(1 + 1/B) Σ MᵀM Σ + tr(MᵀMΣ) Σ/B] Uᵀ − WᵀM[(1 + 1/B) Σ² + tr(Σ) Σ/B] MᵀW }``.

    On the PCA manifold it reduces to ``(η²/B) S^{-1/2} C S^{-1/2}`` (C.32–C.33); off the manifold
    the population-gradient terms ``(1 + 1/B)(…)`` add the finite-``η`` corrections. Batched over
    leading axes of ``W`` and ``U``.
    """
    lam = check_positive_array("lambdas", lambdas, ndim=1)
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1)
    d = lam.size
    W, U = _check_pair(W, U, d=d)
    M = W @ U - np.eye(d)
    Mt = np.swapaxes(M, -1, -2)
    mtm = Mt @ M
    tr_ = np.einsum("...ii,i->...", mtm, lam)[..., None, None]
    first = (1 + 1 / b) * (lam[:, None] * mtm * lam[None, :]) + tr_ * np.diag(lam) / b
    wm = np.swapaxes(W, -1, -2) @ M
    second = (1 + 1 / b) * np.diag(lam**2) + lam.sum() * np.diag(lam) / b
    return finite_result(
        "expected_charge_increment",
        (eta * eta) * (U @ first @ np.swapaxes(U, -1, -2) - wm @ second @ np.swapaxes(wm, -1, -2)),
    )


def charge_increments_along_sgd(lambdas, k: int, eta: float, batch_size: int, steps: int, *, init="pca", seed=None):
    """Follow one SGD run step by step and record every charge increment ``ΔQ_t = Q_{t+1} − Q_t``.

    Float64, one replica, plain matrix algebra (:func:`sgd_step`), minibatch covariances drawn
    exactly. For each step returns the extreme eigenvalues of the measured ``ΔQ_t``, of the formula
    A.15 evaluated at the same state and batch, and of the PSD increment A.26 at the PCA point
    with the same ``S_t = W_tᵀW_t`` (same batch, rotated to the eigenbasis of ``S_t``).

    Returns
    -------
    dict of numpy.ndarray
        ``measured``, ``formula`` (steps, k, k) increments (measured and A.15); ``formula_error``
        (steps,) ``max|measured − A.15|``; ``min_eig``, ``max_eig`` (steps,) of the measured increment;
        ``manifold_min_eig`` (steps,) of A.26 at the projected PCA point; ``S`` (steps + 1, k, k).
    """
    from ..engine import wishart_covariance

    lam = _spectrum(lambdas)
    d = lam.size
    k = _undercomplete_k(k, d)
    eta = check_positive("eta", eta)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    steps = check_int("steps", steps, minimum=1, maximum=MAX_DRAWS // (k * k))  # stores steps k×k increments
    rng = make_rng(seed)
    W, U = _make_init(init, lam, k, 0.01)(rng)
    sig = wishart_covariance(rng, np.sqrt(lam), batch_size, steps)
    meas = np.empty((steps, k, k))
    form = np.empty((steps, k, k))
    man = np.empty(steps)
    S = [W.T @ W]
    for t in range(steps):
        q0 = noether_charge(W, U)
        form[t] = charge_increment(W, U, sig[t], eta)
        try:
            Wm, Um = pca_point(S[-1], d)  # the manifold point with the same scale matrix
        except ValueError:
            raise ValueError(
                f"charge_increments_along_sgd: at step {t} the scale matrix S = WᵀW is singular: SGD "
                f"at eta = {eta:g}, batch_size = {batch_size} has collapsed a mode (eta is past the "
                "stability edge)"
            ) from None
        man[t] = np.linalg.eigvalsh(charge_increment(Wm, Um, sig[t], eta)).min()
        with np.errstate(over="ignore", invalid="ignore"):
            W, U = sgd_step(W, U, sig[t], eta)
        check_divergence(
            np.array([max(np.abs(W).max(), np.abs(U).max())]),
            step=t + 1,
            limit=DIVERGENCE_LIMIT,
            params={"eta": eta, "batch_size": batch_size},
        )
        meas[t] = noether_charge(W, U) - q0
        S.append(W.T @ W)
    ev = np.linalg.eigvalsh(meas)
    return {
        "measured": meas,
        "formula": form,
        "formula_error": np.abs(meas - form).max(axis=(1, 2)),
        "min_eig": ev[:, 0],
        "max_eig": ev[:, -1],
        "manifold_min_eig": man,
        "S": np.array(S),
    }


def saturation_scale(result: "SGDResult", tau_from: float, tau_to: float | None = None, mode: int = 0) -> np.ndarray:
    """Time average of ``s_mode = (WᵀW)_mode,mode`` over ``τ ∈ [tau_from, tau_to]``, one value per seed."""
    if not isinstance(result, SGDResult):
        raise TypeError(f"result must be an SGDResult (from simulate_sgd), got {type(result).__name__}")
    tau_from = check_positive("tau_from", tau_from)
    if tau_to is not None:
        tau_to = check_positive("tau_to", tau_to, allow_inf=True)
    mode = check_int("mode", mode, minimum=0, maximum=result.k - 1)
    sel = (result.tau >= tau_from) & (result.tau <= (np.inf if tau_to is None else tau_to))
    if sel.sum() < 2:
        raise ValueError("tau_from/tau_to must select at least two records")
    return finite_result("saturation_scale", result.scales[:, sel, mode].mean(axis=1))


def gradient_flow_horizon(lambdas) -> float:
    """The longest horizon :func:`gradient_flow` accepts: ``MAX_ODE_EVALUATIONS / (2 λ_1)``.

    Near a critical point the explicit DOP853 is held by stability to steps ``h ≲ 6/ρ``, ``ρ`` the
    largest Hessian eigenvalue, and spends 12 evaluations a step, so ``t`` costs about ``2ρt``
    evaluations. ``ρ ≥ λ_1`` at the critical points the flow approaches: ``λ_1`` at ``W = U = 0``,
    ``≥ 2λ_1`` on the PCA manifold (:func:`hessian_lambda_max`; ``24`` for ``λ_1 = 12``, ``s = 1``). A horizon past this bound would exhaust
    the work bound of :func:`symbreak.validation.solve_ivp_bounded` after seconds of work; it is
    refused at once instead.
    """
    lam = _spectrum(lambdas)
    return MAX_ODE_EVALUATIONS / (2.0 * float(lam[0]))


def gradient_flow(W0, U0, lambdas, times, *, rtol: float = 1e-12, atol: float = 1e-12):
    """Integrate population gradient flow (A.6) ``Ẇ = −(WU − I)ΣUᵀ``, ``U̇ = −Wᵀ(WU − I)Σ``.

    Horizons up to :func:`gradient_flow_horizon` (``~4000`` for ``λ_1 = 12``); a longer one raises
    ``ValueError`` at once, before any integration.

    Returns
    -------
    W : numpy.ndarray, shape (n, d, k)
    U : numpy.ndarray, shape (n, k, d)
        At the requested ``times`` (non-decreasing, ``≥ 0``).
    """
    lam = _spectrum(lambdas)
    d = lam.size
    W0, U0 = _check_decoder_encoder(W0, U0, d, names=("W0", "U0"))
    rtol = check_tolerance("rtol", rtol)
    atol = check_tolerance("atol", atol)
    k = W0.shape[1]
    times = check_array("times", times, ndim=1)
    if times.size == 0 or np.any(times < 0) or np.any(np.diff(times) < 0):
        raise ValueError("times must be a non-empty, non-decreasing array >= 0")
    t_max = gradient_flow_horizon(lam)
    if times[-1] > t_max:
        raise ValueError(
            f"times must end at t <= {t_max:.6g} for lambda_1 = {lam[0]:.6g}, got {times[-1]:.6g}: near the "
            f"critical points the flow approaches, DOP853 needs about 2 lambda_1 t = {2.0 * lam[0] * times[-1]:.3g} "
            f"evaluations of the vector field, more than the work bound {MAX_ODE_EVALUATIONS} (the flow relaxes "
            "on times of order 1/lambda, far shorter)"
        )
    eye = np.eye(d)

    def rhs(_t, y):
        w = y[: d * k].reshape(d, k)
        u = y[d * k :].reshape(k, d)
        ms = (w @ u - eye) * lam[None, :]
        return np.concatenate([-(ms @ u.T).ravel(), -(w.T @ ms).ravel()])

    y = solve_ivp_bounded(
        rhs,
        float(times[-1]),
        np.concatenate([W0.ravel(), U0.ravel()]),
        times,
        method="DOP853",
        rtol=rtol,
        atol=atol,
        what="gradient_flow",
    )
    return y[:, : d * k].reshape(-1, d, k), y[:, d * k :].reshape(-1, k, d)


# names from later modules of this package, imported last so that the import cycle resolves
from .sgd import SGDResult, _make_init  # noqa: E402
