"""Spectral energies E(σ): Schatten-p and quadratic energies, their gradients and Hessians.

Pages: ``book/dln/equilibrium.md``, ``book/dln/index.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..validation import (
    check_array,
    check_positive,
    finite_result,
)
from ._common import _check_p

__all__ = ["SpectralEnergy", "schatten_energy", "quadratic_energy"]

# ---------------------------------------------------------------------------------------------
# spectral energies
# ---------------------------------------------------------------------------------------------


def _check_energy_sigma(sigma) -> np.ndarray:
    sigma = check_array("sigma", sigma)
    if sigma.ndim < 1 or sigma.size == 0 or np.any(sigma < 0):
        raise ValueError("sigma must be a non-empty array of singular values in [0, inf), shape (..., d)")
    return sigma


@dataclass(frozen=True)
class SpectralEnergy:
    """A spectral energy ``E(σ) = g(Σ_i f(σ_i))`` (Section 1.2) with its first two derivatives.

    ``f``, ``df``, ``d2f`` act elementwise on arrays; ``g``, ``dg``, ``d2g`` on arrays of sums. The
    standing assumptions of Theorem 1.2 are ``g' > 0``, ``f`` strictly convex, ``E`` convex.
    """

    f: Callable
    df: Callable
    d2f: Callable
    g: Callable = staticmethod(lambda x: x)
    dg: Callable = staticmethod(lambda x: np.ones_like(x))
    d2g: Callable = staticmethod(lambda x: np.zeros_like(x))
    name: str = "spectral energy"

    def value(self, sigma):
        """``E(σ)`` for sigma of shape (..., d)."""
        sigma = _check_energy_sigma(sigma)
        return finite_result("SpectralEnergy.value", self.g(np.sum(self.f(sigma), axis=-1)))

    def gradient(self, sigma):
        """``∂E/∂σ_i = g'(Σf) f'(σ_i)``, shape (..., d)."""
        return finite_result("SpectralEnergy.gradient", self._gradient(_check_energy_sigma(sigma)))

    def hessian(self, sigma):
        """``∂²E/∂σ_i∂σ_j = g''(Σf) f'(σ_i) f'(σ_j) + g'(Σf) f''(σ_i) δ_ij``, shape (..., d, d)."""
        return finite_result("SpectralEnergy.hessian", self._hessian(_check_energy_sigma(sigma)))

    # unvalidated versions for the module's inner loops (the ODE right-hand sides)
    def _gradient(self, sigma):
        h = np.sum(self.f(sigma), axis=-1)
        return np.asarray(self.dg(h))[..., None] * self.df(sigma)

    def _hessian(self, sigma):
        h = np.sum(self.f(sigma), axis=-1)
        fp = self.df(sigma)
        out = np.asarray(self.d2g(h))[..., None, None] * fp[..., :, None] * fp[..., None, :]
        d = sigma.shape[-1]
        idx = np.arange(d)
        out[..., idx, idx] += np.asarray(self.dg(h))[..., None] * self.d2f(sigma)
        return out


def schatten_energy(p) -> SpectralEnergy:
    """The Schatten energy ``E_p(σ) = (1/p) Σ σ_i^p`` (1.22), ``p ≥ 1``."""
    p = _check_p(p)
    return SpectralEnergy(
        f=lambda s: s**p / p,
        df=lambda s: s ** (p - 1.0),
        d2f=lambda s: (p - 1.0) * s ** (p - 2.0),
        name=f"Schatten p={p:g}",
    )


def quadratic_energy(target=1.0) -> SpectralEnergy:
    """``E(σ) = ½ Σ (σ_i − τ)²``: the squared distance of ``X`` to ``τ`` times the orthogonal matrices.

    Its matrix gradient is ``X − τ·polar(X)``. Used to validate the chamber flow against trained
    networks at ``β = ∞`` (small singular values grow along sigmoids, as in DLN learning curves).
    """
    tau = check_positive("target", target)
    return SpectralEnergy(
        f=lambda s: 0.5 * (s - tau) ** 2,
        df=lambda s: s - tau,
        d2f=lambda s: np.ones_like(s),
        name=f"quadratic, target {tau:g}",
    )


def _resolve_energy(p, energy) -> SpectralEnergy:
    if (p is None) == (energy is None):
        raise ValueError("give exactly one of p (Schatten exponent) and energy (a SpectralEnergy)")
    if energy is not None:
        if not isinstance(energy, SpectralEnergy):
            raise ValueError(f"energy must be a SpectralEnergy, got {type(energy).__name__}")
        return energy
    return schatten_energy(p)
