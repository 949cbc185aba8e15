"""Helpers shared by the tests of ``symbreak.autoencoder`` (moved from the old test files)."""

from __future__ import annotations

import numpy as np

from symbreak import autoencoder as ae

LAM6 = ae.geometric_spectrum(6, 5.0, 0.3)


LAM = ae.geometric_spectrum(20)


K = 10


C1 = ae.growth_rates(LAM, K)[0]


C = ae.growth_rates(LAM, K)


def _charge_rate(A, dA):
    S = A.T @ A
    Si = np.linalg.inv(S)
    dS = dA.T @ A + A.T @ dA
    return dS + Si @ dS @ Si
