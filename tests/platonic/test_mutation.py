"""Mutation tests of the Platonic chapter: a 10% distortion of a theory function that a page
compares with must make that page fail on a claim in quick mode (see ``tests/mutate.py``).

Run separately from ``make test`` (marker ``mutation``): each case executes one page.
"""

from __future__ import annotations

import pytest
from mutate import page_fails_with_distortion

CASES = [
    ("book/platonic/index.md", "symbreak.platonic.entropy_term"),  # Eq. 14 closed form vs Monte Carlo
    ("book/platonic/index.md", "symbreak.platonic.charge_drift"),  # SGD charge drift vs exact drift
    ("book/platonic/index.md", "symbreak.platonic.minimal_entropy"),  # S at the Platonic minimum vs S_min
    ("book/platonic/proof.md", "symbreak.platonic.platonic_kernel"),  # K* vs the orbit minimiser
    ("book/platonic/proof.md", "symbreak.platonic.minimal_entropy"),  # S_min vs the orbit minimum
    ("book/platonic/proof.md", "symbreak.platonic.gradient_moments"),  # Eq. 36 minimiser vs the formula
    ("book/platonic/experiments.md", "symbreak.platonic.platonic_kernel"),  # K* vs the trained kernels
    ("book/platonic/experiments.md", "symbreak.platonic.loss_hessian"),  # S = 2σ² tr ∇²L
]


@pytest.mark.mutation
@pytest.mark.parametrize("page,target", CASES, ids=[f"{p.split('/')[-1]}:{t.split('.')[-1]}" for p, t in CASES])
def test_page_fails_when_theory_is_distorted(page, target):
    failed, message = page_fails_with_distortion(page, target, 1.1)
    assert failed, f"{page} still passes with {target} distorted by 10%: {message}"
