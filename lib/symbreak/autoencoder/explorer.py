"""The autoencoder explorer: one slider setting's simulation and theory, precomputed for the static
site.

Pages: ``book/autoencoder/sharpness-relu.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..rng import make_rng
from ..validation import (
    MAX_STEPS,
    check_int,
)
from .glk import gl_flow
from .scale import geometric_spectrum, growth_rates, lambert_scale, lambert_time

__all__ = ["EXPLORER_BOX", "explorer_run", "explorer_runs"]


#: The explorer's slider box: each parameter's (low, high).
#:
#: :meta hide-value:
EXPLORER_BOX = {
    "eta": (0.002, 0.04),
    "batch_size": (16, 512),
    "k": (1, 19),
    "gap": (1.0, 4.0),
    "noncommuting": (0.0, 1.0),
}


def _explorer_check(name, value, *, integer=False):
    lo, hi = EXPLORER_BOX[name]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not np.isfinite(value) or (integer and int(value) != value):
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{name} must be {kind} in [{lo}, {hi}], got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {value!r}")
    return int(value) if integer else float(value)


def explorer_run(
    eta: float = 0.02,
    batch_size: int = 128,
    k: int = 10,
    gap: float = 1.0,
    noncommuting: float = 0.0,
    *,
    max_steps: int = 60_000,
    n_records: int = 60,
    seeds: int = 2,
    seed: int = 1,
) -> dict:
    """Everything the chapter's explorer draws for one setting of its sliders (:data:`EXPLORER_BOX`).

    Linear autoencoder, ``d = 20``, the geometric spectrum of App. F with the out-of-subspace
    eigenvalues ``λ_{j>k}`` divided by ``gap`` (``gap = 1``: the paper's spectrum), exact Wishart
    minibatches, ``seeds`` replicas from ``S(0) = (1 − ν) I + ν R diag(2.5 … 0.5) Rᵀ`` with a fixed
    random rotation ``R`` and ``ν = noncommuting`` (``ν = 0``: the paper's balanced start, commuting
    with ``C``). The run length is set in slow time: SGD runs to ``1.3`` times the slow time at which
    the top scale would reach the ceiling (C.81, ``κ = 2``), or to ``max_steps`` steps if that comes
    first (``truncated``). The theory is Eq. 6 per mode (``ν = 0``) or the diagonal of ``S`` under the
    GL(k) flow (:func:`gl_flow`, ``ν > 0``), capped at the ceiling. Seed ``s`` of the run draws from
    the stream ``(seed, s)``, so the result is the same as the matching entry of :func:`explorer_runs`.

    Returns
    -------
    dict
        ``tau`` (R,), ``scales`` (R, k) the seed mean of ``diag(WᵀW)``, ``scales_se`` (R, k) its
        standard error over the seeds (``None`` with one seed), ``tau_theory`` (M,),
        ``theory`` (M, k), ``ceiling`` (float), ``steps`` (int), ``truncated`` (bool), ``diverged``
        (``None`` or the divergence message: then ``tau`` and ``scales`` are empty), ``lambdas``, ``k``,
        ``eta``, ``batch_size``.

    Raises
    ------
    ValueError
        If a slider value lies outside :data:`EXPLORER_BOX` (the message names it and its range), or
        ``max_steps``, ``n_records`` or ``seeds`` is not a positive integer.
    """
    setting = dict(eta=eta, batch_size=batch_size, k=k, gap=gap, noncommuting=noncommuting)
    return explorer_runs([setting], max_steps=max_steps, n_records=n_records, seeds=seeds, seed=seed)[0]


def _explorer_setting(setting) -> dict:
    """Validate one explorer setting (a mapping of slider values) and fill in the defaults."""
    if not isinstance(setting, Mapping):
        raise TypeError(f"each setting must be a mapping of slider values, got {type(setting).__name__}")
    unknown = set(setting) - set(EXPLORER_BOX)
    if unknown:
        raise ValueError(f"unknown explorer parameter(s) {sorted(unknown)}; the sliders are {list(EXPLORER_BOX)}")
    full = dict(eta=0.02, batch_size=128, k=10, gap=1.0, noncommuting=0.0)
    full.update(setting)
    return {
        "eta": _explorer_check("eta", full["eta"]),
        "batch_size": _explorer_check("batch_size", full["batch_size"], integer=True),
        "k": _explorer_check("k", full["k"], integer=True),
        "gap": _explorer_check("gap", full["gap"]),
        "noncommuting": _explorer_check("noncommuting", full["noncommuting"]),
    }


def _explorer_theory(s, max_steps, n_records) -> tuple[dict, tuple, np.ndarray]:
    """The theory side of one explorer setting, its initial point and its record grid."""
    eta, b, k, gap, nu = s["eta"], s["batch_size"], s["k"], s["gap"], s["noncommuting"]
    d = 20
    lam = geometric_spectrum(d)
    lam[k:] /= gap
    c = growth_rates(lam, k)
    ceiling = eos_ceiling(eta, lam[0])
    rot = np.linalg.qr(make_rng(7).standard_normal((k, k)))[0]
    S0 = (1 - nu) * np.eye(k) + nu * (rot * np.geomspace(2.5, 0.5, k)) @ rot.T
    s0_top = max(float(np.linalg.eigvalsh(S0)[-1]), 1.0)
    tau_goal = 1.3 * lambert_time(max(ceiling, s0_top * 1.01), min(s0_top, ceiling / 1.01), c[0])
    steps = int(min(max(1, round(tau_goal * b / eta**2)), max_steps))
    truncated = steps < round(tau_goal * b / eta**2)
    tau_end = steps * eta**2 / b
    tau_th = np.linspace(0.0, tau_end, 120)
    init = pca_point(S0, d)
    if nu == 0.0:
        theory = lambert_scale(1.0, c[None, :], tau_th[:, None])
    else:
        A_t = gl_flow(lam, k, init[0][:k], tau_th, rtol=1e-6, atol=1e-8)
        theory = np.einsum("tji,tji->ti", A_t, A_t)
    out = {
        "tau_theory": tau_th,
        "theory": np.minimum(theory, ceiling),
        "ceiling": ceiling,
        "steps": steps,
        "truncated": truncated,
        "diverged": None,
        "lambdas": lam,
        "k": k,
        "eta": eta,
        "batch_size": b,
    }
    record_at = np.unique(np.round(np.linspace(0, steps, min(n_records, steps) + 1)).astype(np.int64))
    return out, init, record_at


def explorer_runs(
    settings,
    *,
    max_steps: int = 60_000,
    n_records: int = 60,
    seeds: int = 2,
    seed: int = 1,
) -> list[dict]:
    """:func:`explorer_run` for many slider settings at once (the site's precomputed explorer grid).

    Settings that share ``k`` and ``gap`` (hence the data spectrum) run as one ensemble on the batched
    engine, which is several times faster than one run per setting with a handful of replicas. Every
    setting's seed ``s`` draws from the stream ``(seed, s)`` whatever its position in the list (common
    random numbers across settings), so each entry equals ``explorer_run(**setting, ...)`` with the
    same keyword arguments. If the batched run diverges, its settings are re-run one by one and only
    the diverging ones carry the message.

    Parameters
    ----------
    settings : sequence of mapping
        Slider values (keys among :data:`EXPLORER_BOX`; missing keys take :func:`explorer_run`'s
        defaults).
    max_steps, n_records, seeds, seed
        As in :func:`explorer_run`.

    Returns
    -------
    list of dict
        One :func:`explorer_run` result per setting, in order.

    Raises
    ------
    TypeError
        If a setting is not a mapping or a value not a number.
    ValueError
        If ``settings`` is empty, a key is not a slider, a value lies outside :data:`EXPLORER_BOX`,
        or ``max_steps``, ``n_records`` or ``seeds`` is not a positive integer.
    """
    from ..engine import DivergenceError

    if isinstance(settings, Mapping) or not isinstance(settings, Sequence):
        raise TypeError(f"settings must be a sequence of mappings, got {type(settings).__name__}")
    if len(settings) == 0:
        raise ValueError("settings must hold at least one setting")
    checked = [_explorer_setting(s) for s in settings]
    max_steps = check_int("max_steps", max_steps, minimum=1, maximum=MAX_STEPS)
    n_records = check_int("n_records", n_records, minimum=2, maximum=10**6)
    seeds = check_int("seeds", seeds, minimum=1, maximum=10**4)
    seed = check_int("seed", seed, minimum=0)
    prepared = [_explorer_theory(s, max_steps, n_records) for s in checked]
    groups: dict = {}
    for i, s in enumerate(checked):
        groups.setdefault((s["k"], s["gap"]), []).append(i)
    outs = [p[0] for p in prepared]
    for (k, _gap), idx in groups.items():
        lam = outs[idx[0]]["lambdas"]
        try:
            runs = _run(
                lam,
                k,
                np.array([checked[i]["eta"] for i in idx]),
                np.array([checked[i]["batch_size"] for i in idx], dtype=np.int64),
                [prepared[i][2] for i in idx],
                seeds=seeds,
                init=[prepared[i][1] for i in idx],
                init_std=0.01,
                activation="linear",
                sampler="wishart",
                dtype=np.float64,
                seed=seed,
                record_weights=False,
                shared_streams=True,
            )
        except DivergenceError as err:
            if len(idx) == 1:
                k_ = outs[idx[0]]["k"]
                outs[idx[0]].update(tau=np.zeros(0), scales=np.zeros((0, k_)), scales_se=None, diverged=str(err))
                continue
            for i in idx:  # find the diverging settings: one run each
                outs[i] = explorer_runs([checked[i]], max_steps=max_steps, n_records=n_records, seeds=seeds, seed=seed)[
                    0
                ]
            continue
        for i, res in zip(idx, runs):
            se = res.scales.std(0, ddof=1) / np.sqrt(seeds) if seeds > 1 else None
            outs[i].update(tau=res.tau, scales=res.scales.mean(0), scales_se=se)
    return outs


# names from later modules of this package, imported last so that the import cycle resolves
from .hessian import pca_point  # noqa: E402
from .sgd import _run  # noqa: E402
from .stability import eos_ceiling  # noqa: E402
