"""The edge of stability (P-App. C.5): the common ceiling (P-Eq. C.81), the fitted κ, and the book's reduced
map for the gains (its Kesten-type stability thresholds).

Pages: ``book/autoencoder/sharpness-relu.md``, ``book/autoencoder/stability.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..engine import (
    _compiled,
    check_divergence,
)
from ..validation import (
    MAX_STEPS,
    check_allocation,
    check_array,
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
    check_positive_array,
    finite_result,
)
from ._common import DIVERGENCE_LIMIT, _spectrum, _undercomplete_k
from .scale import _broadcast_positive, _check_gap, _pair_lyapunov, growth_rates, lambert_time

__all__ = [
    "eos_ceiling",
    "fit_kappa",
    "gain_noise_variance",
    "gain_stability_thresholds",
    "ReducedEdgeResult",
    "eos_reduced_map",
    "plateau_kappa",
    "eos_reduced_kappa",
]


def eos_ceiling(eta, lambda1: float, kappa: float = 2.0):
    """Common saturation scale at the edge of stability (C.81).

    With the threshold ``η μ = κ`` on the dangerous modes ``μ^∥_1a = λ_1(1/s_1 + s_a)``, all scales
    saturate at ``s* = (κ̃ + sqrt(κ̃² − 4))/2``, ``κ̃ = κ/(η λ_1)``, the larger root of
    ``s + 1/s = κ̃``.

    Raises
    ------
    ValueError
        If ``κ̃ < 2`` (no positive scale is stable: ``λ_1(s + 1/s) ≥ 2λ_1``), or if ``eta``,
        ``lambda1`` or ``kappa`` is not positive.
    """
    eta = _broadcast_positive("eta", eta)
    lambda1 = check_positive("lambda1", lambda1)
    kappa = check_positive("kappa", kappa)
    log_kt = math.log(kappa) - np.log(eta) - math.log(lambda1)  # no underflow of eta * lambda1
    if np.any(log_kt >= math.log(np.finfo(float).max)):
        raise ValueError(
            f"kappa/(eta*lambda1) exceeds the float64 range (eta = {np.min(eta):.3g}, "
            f"lambda1 = {lambda1:.3g}): the ceiling s* ~ kappa/(eta*lambda1) is not representable"
        )
    with np.errstate(over="ignore", divide="ignore"):
        prod = eta * lambda1
        kt = np.where(prod > 0, kappa / np.where(prod > 0, prod, 1.0), kappa / eta / lambda1)
    if np.any(kt < 2.0):
        raise ValueError(
            f"kappa_tilde = kappa/(eta*lambda1) must be >= 2 for a ceiling to exist, got "
            f"{np.min(kt):.4g} (eta too large: eta must be <= kappa/(2*lambda1) = {kappa / (2 * lambda1):.4g})"
        )
    s = 0.5 * kt * (1.0 + np.sqrt((1.0 - 2.0 / kt) * (1.0 + 2.0 / kt)))  # kt² would overflow
    return float(s) if np.ndim(s) == 0 else s


def fit_kappa(etas, saturation, lambda1: float):
    """Fit the stability threshold ``κ`` to measured saturation scales (Fig. 1F, C.81).

    At the ceiling ``s* + 1/s* = κ/(η λ_1)``, so ``y = s* + 1/s*`` is proportional to
    ``x = 1/(η λ_1)`` with slope ``κ``. Least squares through the origin gives ``κ``; its standard
    error comes from the scatter of the points around the line (``n − 1`` degrees of freedom).

    Parameters
    ----------
    etas : array_like, shape (n,)
        Learning rates.
    saturation : array_like, shape (n,)
        Measured saturation scales (one per learning rate, e.g. averaged over seeds).
    lambda1 : float
        Largest eigenvalue of ``Σ``.

    Returns
    -------
    kappa, kappa_se : float
    """
    etas = check_positive_array("etas", etas)
    sat = check_positive_array("saturation", saturation)
    if sat.shape != etas.shape or etas.size < 2:
        raise ValueError("etas and saturation must have the same length, at least 2")
    lambda1 = check_positive("lambda1", lambda1)
    x = 1.0 / (etas * lambda1)
    y = sat + 1.0 / sat
    kappa = float(np.sum(x * y) / np.sum(x * x))
    resid = y - kappa * x
    se = float(np.sqrt(np.sum(resid**2) / (x.size - 1) / np.sum(x * x)))
    return finite_result("fit_kappa", (kappa, se))


# --------------------------------------------------------------------------------------------
# a reduced map for the edge of stability (the book's, not in the paper)
# --------------------------------------------------------------------------------------------
def gain_noise_variance(lambdas, k: int, s, eta: float, batch_size: int):
    """Per-step variance of the additive minibatch noise on the top gain ``e = (WU)_11 − 1``.

    *The book's derivation, not in the paper.* Near the PCA point ``S = diag(s)`` with ``e = 0`` the
    minibatch gradients move ``e`` by ``−η Σ_{j>k} Σ̂_j1 √s_1 [U_1j (s_1 + 1/s_1) − W_j1]`` to first
    order in the out-of-subspace fluctuations ``(W_j1, U_1j)``. These are independent of the current
    minibatch, with the stationary covariance ``Ξ_1j/B`` of :func:`drift_correction`'s linear
    processes (order ``η/B``, C.18), and ``Var Σ̂_j1 = λ_jλ_1/B``, so

    ``σ_e² = (η² s_1 λ_1/B²) Σ_{j>k} λ_j [m² Ξ_uu − 2m Ξ_wu + Ξ_ww]``, ``m = s_1 + 1/s_1``,

    of order ``η³/B²``: second order in the noise, unlike the multiplicative noise ``Σ̂_11`` on the
    gain's curvature (see :func:`eos_reduced_map`).

    Parameters
    ----------
    s : float or array_like
        Scale ``s_1`` of the top mode (one value or an array of values).

    Returns
    -------
    float or numpy.ndarray
        ``σ_e²``, with the shape of ``s``.
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    eta = check_positive("eta", eta)
    b = check_int("batch_size", batch_size, minimum=1)
    _check_gap(lam, k)
    s_arr = check_positive_array("s", np.atleast_1d(check_array("s", s)), ndim=None).reshape(-1)
    out = _gain_noise_b1(lam, k, s_arr, eta) / b**2
    out = finite_result("gain_noise_variance", out)
    return float(out[0]) if np.ndim(s) == 0 else out.reshape(np.shape(s))


def _gain_noise_b1(lam, k, s, eta):
    """``B² σ_e²`` of :func:`gain_noise_variance` for an array of top scales ``s`` (vectorised)."""
    l1, lj = lam[0], lam[k:]
    _, xi = _pair_lyapunov(np.full(s.size, l1), s, lj, eta)  # the pairs (W_j1, U_1j) at every s
    s_ = s[:, None]
    m = s_ + 1.0 / s_
    return eta**2 * s * l1 * np.sum(lj * (m * m * xi[..., 1, 1] - 2.0 * m * xi[..., 0, 1] + xi[..., 0, 0]), axis=1)


def gain_stability_thresholds(batch_size: int) -> tuple[float, float]:
    """The two stability thresholds of the gain map ``e ← (1 − x Z) e``, ``Z = χ²_B/B`` (Gaussian data).

    *The book's, not in the paper.* The gain of the top mode has the minibatch curvature
    ``μ̂ = Σ̂_11 (s_1 + 1/s_1) = μ Z`` with ``E Z = 1``, ``Var Z = 2/B``. With ``x = ημ``:

    - mean-square stability, ``E(1 − xZ)² < 1``, holds for ``x < 2B/(B + 2)``;
    - almost-sure stability, ``E log|1 − xZ| < 0``, holds up to the root ``x_as > 2`` of
      ``E log|1 − xZ| = 0`` (``x_as = 2 + 4/B + O(B⁻²)``).

    Between the two, ``e`` is approximately a Kesten process (its kicks are martingale differences
    with slowly varying variance): a typical trajectory decays but ``E e²`` grows, so the gain moves
    in rare bursts. ``batch_size`` runs from 1 to ``10⁵``.

    Returns
    -------
    x_ms, x_as : float
    """
    from scipy import integrate, optimize, special, stats

    b = check_int("batch_size", batch_size, minimum=1, maximum=10**5)  # beyond, x_as = 2 + 4/B to 1e-9
    x_ms = 2.0 * b / (b + 2.0)
    shape, scale = b / 2.0, 2.0 / b
    z = stats.gamma(shape, scale=scale)
    lo, hi = z.ppf(1e-15), z.isf(1e-15)
    log_norm = special.gammaln(shape)

    def pdf(t):
        # z.pdf(t) with scipy's own operations, bit for bit, without its per-call argument checks
        # (the quadrature evaluates it some 10⁴ times)
        y = np.array([t]) / scale
        return (np.exp(special.xlogy(shape - 1.0, y) - y - log_norm) / scale)[0]

    def lyap(x):
        pts = [1.0 / x] if lo < 1.0 / x < hi else None
        val, _ = integrate.quad(
            lambda t: np.log(abs(1.0 - x * t)) * pdf(t), lo, hi, points=pts, limit=400, epsabs=1e-13, epsrel=1e-11
        )
        return val

    x_as = optimize.brentq(lyap, 2.0, 2.0 + 40.0 / b + 1.0, xtol=1e-13)
    return finite_result("gain_stability_thresholds", (float(x_ms), float(x_as)))


@dataclass
class ReducedEdgeResult:
    """One configuration of :func:`eos_reduced_map`: records on a grid of steps."""

    steps: np.ndarray  #: (R,) recorded step numbers
    tau: np.ndarray  #: (R,) slow time ``η² t/B``
    s: np.ndarray  #: (seeds, R) scale of the top mode, ``w²``
    e: np.ndarray  #: (seeds, R) gain error ``wu − 1``
    eta: float
    batch_size: int


def eos_reduced_map(
    lambdas,
    k: int,
    etas,
    batch_sizes,
    tau_max,
    *,
    seeds: int = 16,
    n_records: int = 200,
    s0: float = 1.0,
    multiplicative: bool = True,
    noise_scale: float = 1.0,
    seed=None,
) -> list[ReducedEdgeResult]:
    """A two-variable stochastic map for the top mode at the edge of stability.

    *The book's reduction, not in the paper.* The top mode is the scalar pair ``(w, u)`` with
    ``s_1 = w²`` and gain ``e = wu − 1``. Each step applies, in order,

    1. the minibatch gradient step of ``½ Σ̂_11 (wu − 1)²``: ``w ← w − ηΣ̂_11 e u``,
       ``u ← u − ηΣ̂_11 e w``, with the exact ``Σ̂_11 = λ_1 χ²_B/B`` of Gaussian data
       (``multiplicative=False`` replaces it by ``λ_1``). It carries the instability
       (``ημ = ηλ_1(s_1 + 1/s_1)``) and drains the charge, ``q ← q(1 − η²Σ̂_11²e²)`` (the book's
       charge-balance proposition);
    2. the on-manifold charge drift of Eq. 5, ``q = w² − u² ← q + η²c_1/(B s_1)``, applied at fixed
       ``wu``;
    3. the additive gain noise ``e ← e + ξ``, ``ξ ~ N(0, σ_e²(s_1))`` of
       :func:`gain_noise_variance` (times ``noise_scale``), applied at fixed ``q``.

    Steps 2 and 3 move ``(w, u)`` along ``(w, −u)`` and ``(u, w)``, the gradients of ``q/2`` and of
    ``wu``, which are orthogonal; they are applied to first order (the second-order errors, of order
    ``(η²c_1/B)²`` and ``σ_e²`` per step, are far below the drift). ``σ_e`` is refreshed every 64
    steps. The loop is compiled with numba.

    Below the edge the map follows Eq. 6; at the edge ``e`` becomes approximately a Kesten process
    (:func:`gain_stability_thresholds`) whose bursts hold ``s_1`` near the ceiling. Nothing is
    fitted to the SGD simulations.

    Parameters
    ----------
    etas, batch_sizes : array_like, shape (n,)
        One configuration per entry; each runs ``round(τ_max B/η²)`` steps and is recorded
        ``n_records + 1`` times, evenly in steps.
    tau_max : float or array_like, shape (n,)
        Slow-time horizon of each configuration.
    seeds : int
        Replicas per configuration. Replica ``r = c·seeds + i`` draws from the ``r``-th generator
        spawned from ``seed``: its trajectory does not depend on the other configurations.
    s0 : float
        Initial scale (``w = √s0``, ``u = 1/√s0``, ``e = 0``).

    Returns
    -------
    list of ReducedEdgeResult

    Raises
    ------
    ValueError
        If a learning rate has no ceiling (``ηλ_1 ≥ 1``), or an argument is out of range.
    symbreak.engine.DivergenceError
        If a replica's ``w`` or ``u`` leaves every bounded region (e.g. ``s0`` far above the ceiling).
    """
    from ..engine import DivergenceError  # noqa: F401  (raised through check_divergence)
    from ..rng import spawn_rngs

    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    _check_gap(lam, k)
    etas = check_positive_array("etas", etas, ndim=1)
    bsz = np.asarray(batch_sizes)
    if bsz.shape != etas.shape:
        raise ValueError("batch_sizes must have one entry per learning rate")
    bsz = np.array([check_int("batch_sizes", b, minimum=1, maximum=10**7) for b in bsz], dtype=np.int64)
    tau_max = np.broadcast_to(_broadcast_positive("tau_max", tau_max), etas.shape)
    seeds = check_int("seeds", seeds, minimum=1, maximum=10**5)
    n_records = check_int("n_records", n_records, minimum=1, maximum=10**6)
    s0 = check_positive("s0", s0)
    noise_scale = check_positive("noise_scale", noise_scale)
    ceil = eos_ceiling(etas, lam[0])  # ValueError if no ceiling exists
    totals = []
    for eta, b, tm in zip(etas, bsz, tau_max):
        steps_f = tm * b / eta**2
        if not steps_f <= MAX_STEPS:
            raise ValueError(f"tau_max * B / eta² = {steps_f:.3g} steps (eta = {eta:g}, B = {b}) exceeds {MAX_STEPS}")
        totals.append(max(1, int(round(steps_f))))
    if seeds * sum(totals) > _MAX_MAP_WORK:
        raise ValueError(
            f"seeds × steps = {seeds * sum(totals):.3g} replica-steps exceeds {_MAX_MAP_WORK:.0e}: "
            "use fewer seeds or a shorter tau_max"
        )
    check_allocation(
        "seeds × configurations × records × 2 (the recorded scales)", 2 * seeds * etas.size * (n_records + 1)
    )
    c1 = growth_rates(lam, k)[0]
    kernel = _edge_map_kernel()
    children = spawn_rngs(seed, etas.size * seeds)
    results = []
    for c, (eta, b, total) in enumerate(zip(etas, bsz, totals)):
        # σ_e² on a grid of s (it changes slowly with s_1: refreshed every 64 steps)
        # (up to twice the ceiling; beyond it the table's last value is used)
        grid = np.geomspace(min(s0, 1.0) / 2.0, 2.0 * float(np.atleast_1d(ceil)[c]), 120)
        table = noise_scale * _gain_noise_b1(lam, k, grid, float(eta)) / float(b) ** 2
        rec = np.unique(np.round(np.linspace(0, total, n_records + 1)).astype(np.int64))
        # two streams per replica (curvature, kicks): its numbers do not depend on the block sizes
        streams = [g.spawn(2) for g in children[c * seeds : (c + 1) * seeds]]
        w = np.full(seeds, math.sqrt(s0))
        u = 1.0 / w
        sig = np.zeros(seeds)
        half_drift = 0.5 * eta**2 * c1 / b
        out_s, out_e = np.empty((seeds, rec.size)), np.empty((seeds, rec.size))
        params = {"eta": float(eta), "batch_size": int(b)}
        b0 = nb = t = 0
        zb = xb = None
        for j, target in enumerate(rec):
            while t < target:
                if t >= b0 + nb:  # the next block of minibatch curvatures and kicks, per replica
                    # at most 2**22 draws per array (32 MiB): 4096 steps up to 1024 seeds, fewer steps beyond
                    b0, nb = t, min(4096, max(1, 2**22 // seeds), total - t)
                    if multiplicative:
                        zb = np.stack([g[0].standard_gamma(b / 2.0, nb) for g in streams], axis=1)
                        zb *= 2.0 * lam[0] * eta / b  # η Σ̂_11 = η λ_1 χ²_B/B
                    else:
                        zb = np.full((nb, seeds), lam[0] * eta)
                    xb = np.stack([g[1].standard_normal(nb) for g in streams], axis=1)
                m = min(int(target), b0 + nb) - t
                bad = kernel(w, u, sig, zb, xb, t - b0, m, t, grid, table, half_drift, DIVERGENCE_LIMIT)
                if bad >= 0:
                    check_divergence(
                        np.maximum(np.abs(w), np.abs(u)), step=t + bad // seeds, limit=DIVERGENCE_LIMIT, params=params
                    )
                t += m
            out_s[:, j] = w * w
            out_e[:, j] = w * u - 1.0
        results.append(
            ReducedEdgeResult(
                steps=rec, tau=rec * float(eta) ** 2 / float(b), s=out_s, e=out_e, eta=float(eta), batch_size=int(b)
            )
        )
    return results


#: Largest number of replica-steps one call of :func:`eos_reduced_map` may run (about 20 min).
_MAX_MAP_WORK = 10**11


def _edge_map_loop(w, u, sig, zb, xb, off, n, t0, grid, table, half_drift, limit):  # pragma: no cover - compiled
    """The inner loop of :func:`eos_reduced_map`: steps ``t0 … t0 + n − 1`` of every replica, in place;
    the first replica-step whose ``w`` or ``u`` leaves ``[−limit, limit]`` (``i·R + r``), else −1.
    Run compiled (:func:`_edge_map_kernel`)."""
    R = w.size
    for i in range(n):
        if (t0 + i) % 64 == 0:  # refresh σ_e(s_1) from the table
            for r in range(R):
                sig[r] = math.sqrt(np.interp(w[r] * w[r], grid, table))
        for r in range(R):
            ez = zb[off + i, r] * (w[r] * u[r] - 1.0)  # 1. minibatch gradient step on ½Σ̂_11(wu − 1)²
            w1 = w[r] - ez * u[r]
            u1 = u[r] - ez * w[r]
            inv = 1.0 / (w1 * w1 + u1 * u1)
            dq = half_drift / (w1 * w1)  # 2. charge drift at fixed wu
            xi = xb[off + i, r] * sig[r]  # 3. gain kick at fixed q
            w[r] = w1 + (dq * w1 + xi * u1) * inv
            u[r] = u1 + (xi * w1 - dq * u1) * inv
            if not (abs(w[r]) <= limit and abs(u[r]) <= limit):
                return i * R + r
    return -1


def _edge_map_kernel():
    """The compiled inner loop of :func:`eos_reduced_map` (numba, ``nogil``; compiled on first use and
    cached on disk next to this module, so a later process loads it instead of compiling it)."""
    return _compiled(_edge_map_loop)


def plateau_kappa(tau, s, tau_from: float, eta: float, lambda1: float, statistic: str = "median") -> np.ndarray:
    """Threshold ``κ = ηλ_1(m + 1/m)`` read off the plateau level ``m`` of the top scale, per seed.

    ``m`` is the median (``statistic="median"``), mean (``"mean"``) or maximum (``"max"``: the peaks)
    of ``s[i, τ ≥ tau_from]`` for each seed ``i`` (C.81 inverted).
    """
    tau = check_array("tau", tau, ndim=1)
    s = check_array("s", s, ndim=2)
    if s.shape[1] != tau.size:
        raise ValueError(f"s must have shape (seeds, {tau.size}) to match tau, got {s.shape}")
    statistic = check_choice("statistic", statistic, ("median", "mean", "max"))
    tau_from = check_nonnegative("tau_from", tau_from)
    eta = check_positive("eta", eta)
    lambda1 = check_positive("lambda1", lambda1)
    sel = tau >= tau_from
    if not np.any(sel):
        raise ValueError(f"tau_from = {tau_from:g} is past the last record (tau = {tau[-1]:g})")
    m = {"median": np.median, "mean": np.mean, "max": np.max}[statistic](s[:, sel], axis=1)
    if np.any(m <= 0):
        raise ValueError("s must be positive on the plateau")
    return finite_result("plateau_kappa", eta * lambda1 * (m + 1.0 / m))


def eos_reduced_kappa(
    eta: float,
    batch_size: int,
    *,
    lambdas,
    k: int,
    horizon: float = 2.0,
    plateau: float = 1.2,
    seeds: int = 16,
    n_records: int = 400,
    seed=None,
    **options,
) -> dict:
    """One point of a ``κ(η, B)`` diagram from :func:`eos_reduced_map` (a function for :func:`symbreak.sweep.sweep`).

    The map runs from ``s_1 = 1`` to ``horizon · τ_1*``, where ``τ_1*`` is the slow time at which
    Eq. 6 reaches the ``κ = 2`` ceiling (C.49, C.81), and the threshold is read off the plateau
    ``τ ≥ plateau · τ_1*`` with :func:`plateau_kappa`, exactly as for the SGD runs.

    Returns
    -------
    dict
        ``eta``, ``batch_size``, ``median``, ``mean``, ``max``: per-seed ``κ`` from the plateau's
        median, mean and maximum of ``s_1`` (arrays of shape ``(seeds,)``), ``s_median`` the
        plateau medians of ``s_1`` themselves, ``tau_from``.
        ``options`` are passed to :func:`eos_reduced_map` (``multiplicative``, ``noise_scale``).
    """
    lam = _spectrum(lambdas)
    k = _undercomplete_k(k, lam.size)
    horizon = check_positive("horizon", horizon)
    plateau = check_positive("plateau", plateau)
    if not plateau < horizon:
        raise ValueError(f"plateau ({plateau:g}) must be below horizon ({horizon:g})")
    eta = check_positive("eta", eta)
    t1 = float(lambert_time(eos_ceiling(eta, lam[0]), 1.0, growth_rates(lam, k)[0]))
    (res,) = eos_reduced_map(
        lam, k, [eta], [batch_size], horizon * t1, seeds=seeds, n_records=n_records, seed=seed, **options
    )
    sel = res.tau >= plateau * t1
    out = {
        "eta": eta,
        "batch_size": res.batch_size,
        "tau_from": plateau * t1,
        "s_median": np.median(res.s[:, sel], axis=1),
    }
    for stat in ("median", "mean", "max"):
        out[stat] = plateau_kappa(res.tau, res.s, plateau * t1, eta, lam[0], stat)
    return out
