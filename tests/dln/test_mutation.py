"""Mutation tests for the DLN chapter: a 10% distortion of a theory function a page compares with
must make that page fail on a claim in quick mode (``make mutation``; slow)."""

from __future__ import annotations

import pytest
from mutate import page_fails_with_distortion

CASES = [
    ("book/dln/index.md", "symbreak.dln.A_eigenvalues"),
    ("book/dln/index.md", "symbreak.dln.singular_value_flow"),
    ("book/dln/entropy.md", "symbreak.dln.pair_kernels"),
    ("book/dln/entropy.md", "symbreak.dln.riemannian_entropy_hessian"),
    ("book/dln/entropy.md", "symbreak.dln.entropy_hessian"),
    ("book/dln/equilibrium.md", "symbreak.dln.schatten_sigma_star"),
    ("book/dln/equilibrium.md", "symbreak.dln.relaxation_rates"),
    ("book/dln/equilibrium.md", "symbreak.dln.schatten_scale"),
]


@pytest.mark.mutation
@pytest.mark.parametrize("page, target", CASES, ids=[f"{p.split('/')[-1]}:{t.split('.')[-1]}" for p, t in CASES])
def test_page_fails_when_a_theory_function_is_distorted(page, target):
    failed, message = page_fails_with_distortion(page, target, 1.1)
    assert failed, f"{page} still passes with {target} x 1.1: {message}"
