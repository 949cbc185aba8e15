"""The Lambert-W scale law ``s = sqrt(W[s0² exp(s0² + 2cτ)])``, evaluated at every scale.

Shared by the autoencoder chapter (:func:`symbreak.autoencoder.lambert_scale`, Eq. 6 / C.52) and the
knob model of the part *Beyond the theorems* (:func:`symbreak.beyond.synthesis.lambert_scale`, in
units of ``‖v‖``), which validate their arguments and call :func:`lambert_w_scale`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import wrightomega

from .validation import check_array

__all__ = ["lambert_w_scale"]


def lambert_w_scale(s0, c, tau):
    """``s = sqrt(W[s0² exp(s0² + 2cτ)])``: the solution of ``s²/2 + log s = s0²/2 + log s0 + cτ``.

    ``W(e^z)`` with ``z = 2 log s0 + s0² + 2cτ`` is the Wright omega function ``ω(z)``, polished by one
    Newton step on ``ω + log ω = z``; past ``s0² > 1e16`` or ``cτ > 1e16`` (where ``s0²`` or ``cτ`` may
    overflow) ``s²`` is computed in log space. Relative error below ``1e-12``.

    Parameters
    ----------
    s0, c, tau : numpy.ndarray
        Finite real arrays, ``s0 > 0``, ``c ≥ 0``, ``τ ≥ 0``, that broadcast together.

    Returns
    -------
    numpy.ndarray or float

    Raises
    ------
    ValueError
        If ``s(τ)`` exceeds the float64 range, or an argument is not a finite real array in its range
        (the error names it), or the three do not broadcast together.
    """
    s0, c, tau = check_array("s0", s0), check_array("c", c), check_array("tau", tau)
    for name, arr, zero_ok in (("s0", s0, False), ("c", c, True), ("tau", tau, True)):
        if np.any(arr < 0) or (not zero_ok and np.any(arr == 0)):
            raise ValueError(f"{name} must contain only finite numbers {'>= 0' if zero_ok else '> 0'}")
    try:
        s0, c, tau = (np.array(a, dtype=float) for a in np.broadcast_arrays(s0, c, tau))
    except ValueError:
        raise ValueError(f"s0 {s0.shape}, c {c.shape} and tau {tau.shape} must broadcast together") from None
    with np.errstate(divide="ignore"):
        log_s2 = 2.0 * np.log(s0)
        log_ct = np.log(c) + np.log(tau)  # −inf where cτ = 0
    # s² ≥ max(s0², 2cτ) − 1500: past 1e16 the log in (C.49) is a relative 1e-13 correction, and
    # s0² or cτ may overflow; there s² is computed in log space (below)
    big = (log_s2 > math.log(1e16)) | (log_ct > math.log(1e16))
    s = np.empty_like(s0)
    with np.errstate(over="ignore"):
        z = np.asarray(log_s2 + s0 * s0 + 2.0 * c * tau, dtype=float)[~big]
    out = np.empty_like(z)
    tiny = z < -500.0  # W(x) = x (1 − x + …) with x = e^z < 1e-217: s = e^{z/2} to full precision
    out[tiny] = np.exp(0.5 * z[tiny])
    zz = z[~tiny]
    w = np.asarray(wrightomega(zz), dtype=float)
    w = w - (w + np.log(w) - zz) * w / (w + 1.0)  # Newton on w + log w = z
    out[~tiny] = np.sqrt(w)
    s[~big] = out
    if np.any(big):
        # s² − s0² + log(s²/s0²) = 2cτ: log s² = log(s0² + 2cτ) + log1p(−log(s²/s0²)/(s0² + 2cτ))
        l0, l1 = log_s2[big], math.log(2.0) + log_ct[big]  # log s0², log 2cτ
        la = np.logaddexp(l0, l1)
        corr = la - l0  # log(s²/s0²) at the first estimate; at most ~1500
        # s = s_ref · exp(½ log(s²/s_ref²)) with s_ref the larger of s0 and sqrt(2cτ): a small exponent,
        # so no digits are lost to exp of a large logarithm
        s0_ref = l0 >= l1
        rel = np.log1p(np.exp(-np.abs(l1 - l0))) + np.log1p(-corr * np.exp(-la))
        with np.errstate(over="ignore"):
            ref = np.where(s0_ref, s0[big], math.sqrt(2.0) * np.sqrt(c[big]) * np.sqrt(tau[big]))
            sb = ref * np.exp(0.5 * rel)
        if not np.all(np.isfinite(sb)):
            raise ValueError("lambert_scale: s(tau) exceeds the float64 range (s0 or c*tau too large)")
        s[big] = sb
    return float(s) if s.ndim == 0 else s
