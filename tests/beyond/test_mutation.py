"""Mutation tests of the part "Beyond the theorems": a 10% error in a theory function fails its page."""

from __future__ import annotations

import pytest
from mutate import page_fails_with_distortion

CASES = [
    ("book/beyond/index.md", "symbreak.synthesis.slow_scale"),
    ("book/beyond/index.md", "symbreak.synthesis.lambert_scale"),
    ("book/beyond/autoencoders.md", "symbreak.synthesis.lambert_scale"),
    ("book/beyond/autoencoders.md", "symbreak.nonlinear.ae_drift_terms"),
    ("book/beyond/relu.md", "symbreak.beyond.relu.expected_gradient_norms"),
]


@pytest.mark.mutation
@pytest.mark.parametrize("page,target", CASES, ids=[f"{p.split('/')[-1]}:{t.split('.')[-1]}" for p, t in CASES])
@pytest.mark.parametrize("factor", [1.1, 0.9])
def test_page_fails_with_distorted_theory(page, target, factor):
    failed, message = page_fails_with_distortion(page, target, factor)
    assert failed, f"{page} did not notice {target} distorted by {factor}: {message}"
