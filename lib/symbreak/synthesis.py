"""The knob model of the part *Beyond the theorems*, at its old import path.

The code lives in :mod:`symbreak.beyond.synthesis`; this module re-exports its names so that
``from symbreak import synthesis`` keeps working.
"""

from __future__ import annotations

from .beyond.synthesis import (
    KnobModel,
    KnobRun,
    balance_charge,
    balance_scale,
    charge,
    eos_ceiling,
    expected_charge_step,
    hessian_lambda_max,
    lambert_scale,
    on_manifold_point,
    relaxation_rate,
    simulate,
    slow_drift,
    slow_scale,
    window_means,
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
