"""The knob model: the Noether charge of a rescaling symmetry under noisy training (balance point, no balance
point, volume term).

The mathematics and the simulations of the synthesis page of the part *Beyond the theorems*. The
model is the smallest one that shows all three outcomes of the book's chapters: a scalar input
``x ~ N(0, λ)``, one hidden unit ``h = u x`` and an ``m``-dimensional output ``f(x) = w h``,
trained on targets ``y = v x + ε`` with the per-sample loss ``ℓ = ½‖w u x − y‖²``. The rescaling
``(w, u) ↦ (a w, u / a)`` leaves every loss unchanged, so the **charge**

    Q = ‖w‖² − u²                                                           (S1)

is conserved by gradient flow. One step ``w' = w − η g_w + ξ_w``, ``u' = u − η g_u + ξ_u`` with
minibatch gradients ``g`` and optional parameter noise ``ξ`` changes it by

    Q' − Q = η² (‖g_w‖² − g_u²) + (‖ξ_w‖² − ξ_u²) + cross terms linear in ξ        (S2)

(exactly: the first-order terms cancel by the Noether identity ``wᵀg_w = u g_u``). Averaged over
the minibatch and the noise, on the manifold of minima ``w u = v`` (write ``s = ‖w‖²``, so
``u² = ‖v‖²/s``):

    E[Q' − Q] = (η²/B) λ (‖v‖²/s · tr Σ_ε − s · v̂ᵀ Σ_ε v̂) + σ_p² (m − 1)         (S3)

where ``Σ_ε`` is the label-noise covariance and ``σ_p²`` the variance of the parameter noise per
coordinate. The *knob* is where the noise enters:

* label noise with a component along the signal direction ``v̂`` (angle ``θ < π/2`` between the
  noise and ``v̂``): the drift has a zero, the **balance point** ``s⋆ = ‖v‖ / cos θ`` (S4), and
  ``Q`` relaxes to it (the Platonic chapter's entropic selection);
* label noise orthogonal to ``v̂`` (``θ = π/2``): the drift is positive everywhere, ``s`` grows
  along the Lambert-W law (S5) of the autoencoder chapter until the edge of stability stops it;
* parameter (thermal) noise only: the loss-independent drift ``σ_p² (m − 1) = (σ_p²/2) ΔQ`` is half
  the noise variance times the Laplacian of ``Q``; ``ΔQ`` is twice the divergence of the symmetry's
  generator, the rate at which the symmetry flow changes the volume of the orbit (the DLN chapter's
  entropy is, up to a constant, the log-volume of an orbit).

Contents
--------
:class:`KnobModel`
    The model's parameters (``λ, v, Σ_ε`` from the noise angle ``θ``).
:func:`charge`, :func:`expected_charge_step`, :func:`slow_drift`, :func:`balance_scale`,
:func:`relaxation_rate`, :func:`lambert_scale`, :func:`slow_scale`, :func:`eos_ceiling`,
:func:`hessian_lambda_max`
    Theory (S1)–(S7).
:func:`simulate`
    Vectorised ensembles of SGD / Langevin runs with exact minibatch statistics.

Pages: ``book/beyond/autoencoders.md``, ``book/beyond/index.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine import check_divergence, record_steps, replica_streams
from ..lambert import lambert_w_scale
from ..validation import (
    check_allocation,
    check_array,
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
    finite_result,
    solve_ivp_bounded,
)

__all__ = [
    "KnobModel",
    "charge",
    "expected_charge_step",
    "slow_drift",
    "balance_scale",
    "balance_charge",
    "relaxation_rate",
    "lambert_scale",
    "slow_scale",
    "hessian_lambda_max",
    "eos_ceiling",
    "on_manifold_point",
    "KnobRun",
    "simulate",
    "window_means",
]

#: A replica whose largest parameter exceeds this (or is not finite) has diverged.
DIVERGENCE_LIMIT = 1e6


@dataclass(frozen=True)
class KnobModel:
    """The knob model: ``x ~ N(0, λ)``, ``y = v x + ε``, ``f(x) = w u x`` with ``w ∈ R^m``.

    Parameters
    ----------
    lam : float
        Input variance ``λ > 0``.
    sigma2 : float
        Total label-noise variance ``tr Σ_ε ≥ 0``.
    theta : float
        Angle in ``[0, π/2]`` between the label noise and the signal direction ``v̂ = e_1``:
        ``Σ_ε = σ² (cos²θ e_1e_1ᵀ + sin²θ e_2e_2ᵀ)``.
    v_norm : float
        ``‖v‖ > 0``; ``v = ‖v‖ e_1``.
    m : int
        Output dimension, ``2 ≤ m ≤ 4096``.
    """

    lam: float = 1.0
    sigma2: float = 1.0
    theta: float = 0.0
    v_norm: float = 1.0
    m: int = 2

    def __post_init__(self):
        check_positive("lam", self.lam)
        check_nonnegative("sigma2", self.sigma2)
        check_positive("v_norm", self.v_norm)
        check_int("m", self.m, minimum=2, maximum=4096)  # Σ_ε is m × m: at most 128 MiB
        t = check_nonnegative("theta", self.theta)
        if t > np.pi / 2 + 1e-12:
            raise ValueError(f"theta must lie in [0, pi/2], got {self.theta!r}")

    @property
    def v(self) -> np.ndarray:
        """The target map ``v = ‖v‖ e_1``."""
        out = np.zeros(self.m)
        out[0] = self.v_norm
        return out

    @property
    def sigma_eps(self) -> np.ndarray:
        """Label-noise covariance ``Σ_ε``."""
        out = np.zeros((self.m, self.m))
        out[0, 0] = self.sigma2 * np.cos(self.theta) ** 2
        out[1, 1] = self.sigma2 * np.sin(self.theta) ** 2
        return out

    @property
    def sigma_par(self) -> float:
        """Label-noise variance along the signal, ``v̂ᵀ Σ_ε v̂``."""
        return float(self.sigma2 * np.cos(self.theta) ** 2)


def _check_model(model) -> KnobModel:
    if not isinstance(model, KnobModel):
        raise TypeError(f"model must be a KnobModel, got {type(model).__name__}")
    return model


def _wu(model: KnobModel, w, u):
    w = check_array("w", w)
    u = check_array("u", u)
    if w.shape[-1:] != (model.m,):
        raise ValueError(f"w must have a last axis of length m = {model.m}, got shape {w.shape}")
    if u.shape != w.shape[:-1]:
        raise ValueError(f"u must have shape {w.shape[:-1]} (w without its last axis), got {u.shape}")
    return w, u


def charge(w, u) -> np.ndarray:
    """The Noether charge ``Q = ‖w‖² − u²`` (S1), over leading batch axes."""
    w = check_array("w", w)
    u = check_array("u", u)
    if w.ndim < 1 or u.shape != w.shape[:-1]:
        raise ValueError(f"u must have the shape of w without its last axis, got w {w.shape}, u {u.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        return finite_result("charge", np.sum(w * w, axis=-1) - u * u)


def expected_charge_step(model: KnobModel, w, u, *, eta: float, batch_size: int, sigma_p2: float = 0.0):
    """Exact expected one-step change ``E[Q' − Q]`` at any point ``(w, u)`` (S2, averaged).

    With ``z = a S_xx − S_εx`` (``a = w u − v``, ``S_xx = Σ x_b²/B``, ``S_εx = Σ ε_b x_b / B``) the
    minibatch gradients are ``g_w = u z`` and ``g_u = wᵀz``, and
    ``M = E[z zᵀ] = λ²(1 + 2/B) a aᵀ + λ Σ_ε / B``. Hence
    ``E[Q' − Q] = η² (u² tr M − wᵀ M w) + σ_p² (m − 1)``.

    Parameters
    ----------
    model : KnobModel
    w : array_like, shape (..., m)
    u : array_like, shape (...)
    eta : float
        Learning rate ``η > 0``.
    batch_size : int
        ``B ≥ 1``.
    sigma_p2 : float
        Variance of the parameter noise per coordinate and step, ``≥ 0``.
    """
    model = _check_model(model)
    w, u = _wu(model, w, u)
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1)
    sigma_p2 = check_nonnegative("sigma_p2", sigma_p2)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below, not warned
        a = w * u[..., None] - model.v
        k2 = model.lam**2 * (1.0 + 2.0 / b)
        se = model.sigma_eps * (model.lam / b)
        tr_m = k2 * np.sum(a * a, axis=-1) + np.trace(se)
        wmw = k2 * np.sum(w * a, axis=-1) ** 2 + np.einsum("...i,ij,...j->...", w, se, w)
        out = np.float64(eta) ** 2 * (u * u * tr_m - wmw) + sigma_p2 * (model.m - 1)
    return finite_result("expected_charge_step", out)


def slow_drift(model: KnobModel, s):
    """Drift of the charge on the slow time ``τ = t η²/B`` on the manifold of minima (S3).

    ``dQ/dτ = λ (‖v‖²/s · tr Σ_ε − s · v̂ᵀΣ_ε v̂)`` at decoder scale ``s = ‖w‖² > 0``.
    """
    model = _check_model(model)
    s = check_array("s", s)
    if np.any(s <= 0):
        raise ValueError("s must contain only finite numbers > 0")
    with np.errstate(over="ignore", invalid="ignore"):
        out = model.lam * (model.v_norm**2 / s * model.sigma2 - s * model.sigma_par)
    finite_result("slow_drift", out)
    return float(out) if out.ndim == 0 else out


def balance_scale(model: KnobModel) -> float:
    """The zero of the drift (S4): ``s⋆ = ‖v‖ sqrt(tr Σ_ε / v̂ᵀΣ_ε v̂) = ‖v‖ / cos θ``.

    Returns ``inf`` when the noise has no component along the signal (``θ = π/2``): no balance point.

    Raises
    ------
    ValueError
        If there is no label noise (``σ² = 0``): then every point of the manifold is a zero.
    """
    model = _check_model(model)
    if model.sigma2 == 0:
        raise ValueError("sigma2 must be > 0 for a balance point: without label noise the drift vanishes identically")
    if model.sigma_par <= 1e-15 * model.sigma2:
        return float("inf")
    return float(model.v_norm * np.sqrt(model.sigma2 / model.sigma_par))


def balance_charge(model: KnobModel) -> float:
    """Charge at the balance point, ``Q⋆ = s⋆ − ‖v‖²/s⋆`` (``inf`` when there is none)."""
    s = balance_scale(model)
    return float("inf") if np.isinf(s) else float(s - model.v_norm**2 / s)


def relaxation_rate(model: KnobModel) -> float:
    """Rate ``r`` of the approach ``Q − Q⋆ ∝ e^{−rτ}`` to the balance point on the slow time (S6).

    Linearising ``ds/dτ = λ s (‖v‖² tr Σ_ε − s² v̂ᵀΣ_εv̂) / (s² + ‖v‖²)`` at ``s⋆`` gives
    ``r = 2 λ v̂ᵀΣ_εv̂ · s⋆² / (s⋆² + ‖v‖²) = 2 λ σ² cos²θ / (1 + cos²θ)``; it vanishes as ``θ → π/2``.
    """
    s = balance_scale(model)
    if np.isinf(s):
        return 0.0
    return float(2.0 * model.lam * model.sigma_par * s * s / (s * s + model.v_norm**2))


def lambert_scale(s0, c, tau, v_norm: float = 1.0):
    """Scale under the drift with no balance point (S5), the autoencoder chapter's Lambert-W law.

    With ``θ = π/2``, ``dQ/dτ = c ‖v‖²/s`` and ``Q = s − ‖v‖²/s`` give
    ``s²/2 + ‖v‖² log s = s0²/2 + ‖v‖² log s0 + c ‖v‖² τ``, i.e. with ``ρ = s/‖v‖``
    ``ρ² = W[ρ0² exp(ρ0² + 2cτ)]`` (principal Lambert W, evaluated as the Wright omega function
    of the log of its argument).

    Parameters
    ----------
    s0 : array_like
        Initial scale ``> 0``.
    c : array_like
        Rate ``c = λ tr Σ_ε ≥ 0``.
    tau : array_like
        Slow time ``≥ 0``.
    v_norm : float
        ``‖v‖ > 0``.
    """
    vn = check_positive("v_norm", v_norm)
    s0, c, tau = check_array("s0", s0), check_array("c", c), check_array("tau", tau)
    for name, arr, zero_ok in (("s0", s0, False), ("c", c, True), ("tau", tau, True)):
        if np.any(arr < 0) or (not zero_ok and np.any(arr == 0)):
            raise ValueError(f"{name} must contain only finite numbers {'>= 0' if zero_ok else '> 0'}")
    try:
        np.broadcast_shapes(s0.shape, c.shape, tau.shape)
    except ValueError:
        raise ValueError(f"s0 {s0.shape}, c {c.shape} and tau {tau.shape} must broadcast together") from None
    rho0 = s0 / vn
    if np.any(rho0 == 0) or not np.all(np.isfinite(rho0)):
        raise ValueError("s0 / v_norm must lie in the float64 range (s0 and v_norm too far apart in scale)")
    # ρ = s/‖v‖ follows the autoencoder chapter's law (the same evaluation, valid at every scale)
    with np.errstate(over="ignore"):
        s = vn * np.asarray(lambert_w_scale(rho0, c, tau))
    finite_result("lambert_scale", s)
    return float(s) if s.ndim == 0 else s


def slow_scale(model: KnobModel, s0: float, taus) -> np.ndarray:
    """Scale ``s(τ)`` on the manifold of minima under the slow drift (S3), for any ``θ``.

    Integrates ``ds/dτ = (dQ/dτ) / (dQ/ds)`` with ``dQ/ds = 1 + ‖v‖²/s²`` (``solve_ivp``, rtol 1e-10).
    For ``θ = π/2`` it equals :func:`lambert_scale` with ``c = λσ²``.
    """
    model = _check_model(model)
    s0 = check_positive("s0", s0)
    taus = check_array("taus", taus, ndim=1)
    if taus.size == 0 or np.any(np.diff(taus) < 0) or taus[0] < 0:
        raise ValueError("taus must be a non-empty, non-decreasing array of slow times >= 0")
    vn2 = model.v_norm**2

    def rhs(_t, y):
        s = y[0]
        return [slow_drift(model, s) / (1.0 + vn2 / (s * s))]

    if taus[-1] == 0:
        return np.full(taus.size, s0)
    # bounded in work and refusing a horizon below float64 resolution (solve_ivp hung at taus ~ 1e-300)
    return solve_ivp_bounded(
        rhs, float(taus[-1]), [s0], taus, method="LSODA", rtol=1e-10, atol=1e-12, what="slow_scale"
    )[:, 0]


def hessian_lambda_max(model: KnobModel, s):
    """Largest Hessian eigenvalue of the population loss on the manifold, ``λ (s + ‖v‖²/s)`` (S7).

    At ``w u = v`` the Hessian is the Gauss–Newton matrix ``λ JᵀJ`` with ``J = [u I_m, w]``, whose
    non-zero eigenvalues are those of ``J Jᵀ = u² I + w wᵀ``: ``u² + ‖w‖²`` and ``u²``.
    """
    model = _check_model(model)
    s = check_array("s", s)
    if np.any(s <= 0):
        raise ValueError("s must contain only finite numbers > 0")
    with np.errstate(over="ignore"):
        out = model.lam * (s + model.v_norm**2 / s)
    finite_result("hessian_lambda_max", out)
    return float(out) if out.ndim == 0 else out


def eos_ceiling(model: KnobModel, eta: float, kappa: float = 2.0) -> float:
    """Scale at which ``η λ_max = κ`` (edge of stability): the larger root of ``s + ‖v‖²/s = κ/(ηλ)``.

    Raises
    ------
    ValueError
        If ``κ/(ηλ) < 2‖v‖`` (no scale on the manifold is stable).
    """
    model = _check_model(model)
    eta = check_positive("eta", eta)
    kappa = check_positive("kappa", kappa)
    kt = kappa / (eta * model.lam)
    if not np.isfinite(kt):
        raise ValueError(
            f"kappa / (eta lam) = {kappa:g} / ({eta:g} * {model.lam:g}) exceeds the float64 range: eta too small "
            "or kappa too large"
        )
    if kt < 2 * model.v_norm:
        raise ValueError(
            f"eta must be <= kappa / (2 lam |v|) = {kappa / (2 * model.lam * model.v_norm):.4g} "
            f"for a stable scale to exist, got {eta}"
        )
    with np.errstate(over="ignore"):  # (kt² − 4‖v‖²)^½ = kt (1 − (2‖v‖/kt)²)^½ without overflow
        root = (
            kt * np.sqrt(1.0 - (2.0 * model.v_norm / kt) ** 2) if kt > 1e150 else np.sqrt(kt * kt - 4 * model.v_norm**2)
        )
    return finite_result("eos_ceiling", float(0.5 * (kt + root)))


def on_manifold_point(model: KnobModel, s: float, replicas: int = 1):
    """The minimum ``w = sqrt(s) v̂``, ``u = ‖v‖/sqrt(s)`` with decoder scale ``s = ‖w‖²``, stacked."""
    model = _check_model(model)
    s = check_positive("s", s)
    replicas = check_int("replicas", replicas, minimum=1)
    check_allocation("replicas × m", replicas * (model.m + 1))
    w = np.zeros((replicas, model.m))
    w[:, 0] = np.sqrt(s)
    u = np.full(replicas, model.v_norm / np.sqrt(s))
    return w, u


@dataclass
class KnobRun:
    """Recorded ensemble: ``steps`` (T,), ``tau`` (T,) = steps η²/B, ``w`` (T, R, m), ``u`` (T, R),
    and the realised per-step charge change averaged over the run, ``mean_dq`` (R,); with
    ``divergence="stop"``, ``diverged_at`` (R,) is the step at which each replica left the bounded
    region (``-1`` for one that did not), and a stopped replica's later records are NaN."""

    steps: np.ndarray
    tau: np.ndarray
    w: np.ndarray
    u: np.ndarray
    mean_dq: np.ndarray
    mean_dq_expected: np.ndarray
    diverged_at: np.ndarray | None = None

    @property
    def diverged(self) -> np.ndarray:
        """Which replicas diverged (R,) (all False for a run that raises on divergence)."""
        if self.diverged_at is None:
            return np.zeros(self.u.shape[1], dtype=bool)
        return self.diverged_at >= 0

    @property
    def q(self) -> np.ndarray:
        """Charge ``Q`` (T, R)."""
        return charge(self.w, self.u)

    @property
    def s(self) -> np.ndarray:
        """Decoder scale ``s = ‖w‖²`` (T, R)."""
        return np.sum(self.w**2, axis=-1)


def simulate(
    model: KnobModel,
    w0,
    u0,
    *,
    eta: float,
    batch_size: int,
    steps: int,
    sigma_p2: float = 0.0,
    record_every: int = 1,
    seed=None,
    divergence: str = "raise",
) -> KnobRun:
    """SGD (and optionally Langevin parameter noise) on the knob model, as one vectorised ensemble.

    Every step draws the minibatch's sufficient statistics exactly: ``B S_xx / λ ~ χ²_B`` and, given
    ``S_xx``, ``S_εx ~ N(0, Σ_ε S_xx / B)``; the update is ``w ← w − η u z + ξ_w``,
    ``u ← u − η wᵀz + ξ_u`` with ``z = (w u − v) S_xx − S_εx`` and ``ξ ~ N(0, σ_p² I)``.
    Along the way it accumulates the realised charge change per step and the exact expectation
    :func:`expected_charge_step` at the pre-step point, so the page can compare the two.

    Parameters
    ----------
    model : KnobModel
    w0 : array_like, shape (R, m)
    u0 : array_like, shape (R,)
    eta : float
        Learning rate ``> 0``.
    batch_size : int
        ``B ≥ 1``.
    steps : int
        Number of steps ``≥ 1``.
    sigma_p2 : float
        Parameter-noise variance per coordinate and step (``2ηT`` for Langevin at temperature ``T``).
    record_every : int
        Record the state every so many steps (and at the last step).
    seed : int, optional
        Seed of the run: replica ``r`` draws from its own stream
        (:func:`symbreak.engine.replica_streams`), so its numbers depend only on ``(seed, r)``,
        not on how many replicas run.
    divergence : {"raise", "stop"}
        What a replica whose parameters leave the bounded region (``|w|, |u| > 10⁶``) does: raise
        :class:`~symbreak.engine.DivergenceError` (the default), or stop there while the others go
        on, its step recorded in ``KnobRun.diverged_at`` (to count how many replicas diverge within
        a horizon).

    Raises
    ------
    symbreak.engine.DivergenceError
        If a replica's parameters leave every bounded region and ``divergence="raise"``.
    """
    model = _check_model(model)
    w = check_array("w0", w0, ndim=2).copy()
    if w.shape[1] != model.m:
        raise ValueError(f"w0 must have shape (R, {model.m}), got {w.shape}")
    u = check_array("u0", u0, shape=(w.shape[0],)).copy()
    eta = check_positive("eta", eta)
    if eta > 1e150:  # eta² (the slow time, the expected step) would overflow float64
        raise ValueError(f"eta must lie in (0, 1e150], got {eta!r}")
    b = check_int("batch_size", batch_size, minimum=1)
    steps = check_int("steps", steps, minimum=1)
    sigma_p2 = check_nonnegative("sigma_p2", sigma_p2)
    stop = check_choice("divergence", divergence, ("raise", "stop")) == "stop"
    rec = record_steps(steps, record_every)
    check_allocation("records × replicas × (m + 1) (the recorded parameters)", rec.size * w.shape[0] * (model.m + 1))
    # one stream per replica (engine.replica_streams): replica r's numbers depend only on (seed, r)
    rng = replica_streams(seed, range(w.shape[0]))
    v = model.v
    noise_sd = np.sqrt(np.diag(model.sigma_eps))
    sp = np.sqrt(sigma_p2)
    block = 256
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging replica is reported below, not warned
        return _loop(model, w, u, v, eta, b, steps, sigma_p2, sp, rec, rng, noise_sd, block, stop)


def _loop(model, w, u, v, eta, b, steps, sigma_p2, sp, rec, rng, noise_sd, block, stop):
    r, m = w.shape
    diverged_at = np.full(r, -1) if stop else None
    ws, us = np.empty((rec.size, r, m)), np.empty((rec.size, r))
    sum_dq, sum_dq_exp = np.zeros(r), np.zeros(r)
    k2 = model.lam**2 * (1.0 + 2.0 / b)
    se_diag = np.diag(model.sigma_eps) * (model.lam / b)
    tr_se = float(se_diag.sum())
    j = 0
    for t in range(steps + 1):
        if t == rec[j]:
            ws[j], us[j] = w, u
            j += 1
        if t == steps:
            break
        q_before = np.sum(w * w, axis=1) - u * u
        a = w * u[:, None] - v
        wa = np.sum(w * a, axis=1)
        # expected_charge_step without re-validating the state every step
        sum_dq_exp += eta**2 * (
            u * u * (k2 * np.sum(a * a, axis=1) + tr_se) - k2 * wa * wa - np.sum(w * w * se_diag, axis=1)
        ) + sigma_p2 * (m - 1)
        if t % block == 0:  # draw the minibatch statistics of `block` steps at once, replica by replica
            n_blk = min(block, steps - t)
            sxx_blk = model.lam * np.stack([g.chisquare(b, size=n_blk) for g in rng], axis=1) / b
            sex_blk = np.stack([g.standard_normal((n_blk, m)) for g in rng], axis=1)
            sex_blk *= noise_sd * np.sqrt(sxx_blk / b)[:, :, None]
            par_blk = sp * np.stack([g.standard_normal((n_blk, m + 1)) for g in rng], axis=1) if sp > 0 else None
        sxx, sex = sxx_blk[t % block], sex_blk[t % block]
        z = a * sxx[:, None] - sex
        gw = u[:, None] * z
        gu = np.sum(w * z, axis=1)
        w -= eta * gw
        u -= eta * gu
        if sp > 0:
            w += par_blk[t % block, :, :m]
            u += par_blk[t % block, :, m]
        sum_dq += np.sum(w * w, axis=1) - u * u - q_before
        mag = np.maximum(np.max(np.abs(w), axis=1), np.abs(u))
        if not (mag.max() <= DIVERGENCE_LIMIT):  # also catches NaN (and a stopped replica's NaN)
            if not stop:
                check_divergence(mag, step=t + 1, limit=DIVERGENCE_LIMIT, params={"eta": eta, "batch_size": b})
            new = ~(mag <= DIVERGENCE_LIMIT) & (diverged_at < 0)
            diverged_at[new] = t + 1
            w[new], u[new] = np.nan, np.nan  # a stopped replica stays NaN; the others go on
    return KnobRun(
        steps=rec,
        tau=rec * eta**2 / b,
        w=ws,
        u=us,
        mean_dq=sum_dq / steps,
        mean_dq_expected=sum_dq_exp / steps,
        diverged_at=diverged_at,
    )


def window_means(values, n_windows: int) -> np.ndarray:
    """Means of ``values`` over ``n_windows`` consecutive, nearly equal windows of its first axis.

    Used to compare a noisy ensemble trajectory with theory on a coarse grid: averaging each window
    of records removes most of the sampling noise without hiding a systematic deviation.

    Raises
    ------
    ValueError
        If ``n_windows`` is not an integer in ``[1, len(values)]``.
    """
    arr = check_array("values", values)
    if arr.ndim < 1:
        raise ValueError("values must have at least one axis")
    n = check_int("n_windows", n_windows, minimum=1, maximum=arr.shape[0])
    return np.stack([c.mean(axis=0) for c in np.array_split(arr, n, axis=0)])
