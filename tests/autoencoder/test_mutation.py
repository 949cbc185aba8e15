"""A 10% error in a theory function the autoencoder pages compare with must fail a page in quick mode."""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from mutate import page_fails_with_distortion  # noqa: E402

# charge_noise_std is not listed: the page compares it with a standard deviation over 8 seeds in quick
# mode (16 at full size), whose own sampling error (~25%) cannot resolve a 10% distortion.
CASES = [
    ("book/autoencoder/index.md", "symbreak.autoencoder.lambert_scale"),
    ("book/autoencoder/index.md", "symbreak.autoencoder.growth_rates"),
    ("book/autoencoder/lambert.md", "symbreak.autoencoder.lambert_scale"),
    ("book/autoencoder/lambert.md", "symbreak.autoencoder.growth_rates"),
    ("book/autoencoder/lambert.md", "symbreak.autoencoder.corrected_scale"),
    ("book/autoencoder/lambert.md", "symbreak.autoencoder.gl_flow"),
    ("book/autoencoder/stability.md", "symbreak.autoencoder.eos_ceiling"),
    ("book/autoencoder/stability.md", "symbreak.autoencoder.hessian_lambda_max"),
    ("book/autoencoder/stability.md", "symbreak.autoencoder.pca_hessian_eigenvalues"),
    ("book/autoencoder/sharpness-relu.md", "symbreak.autoencoder.modified_batch_sharpness"),
    ("book/autoencoder/sharpness-relu.md", "symbreak.autoencoder.lambert_scale"),
]


@pytest.mark.mutation
@pytest.mark.parametrize("factor", [0.9, 1.1])
@pytest.mark.parametrize("page, target", CASES, ids=[f"{p.split('/')[-1]}:{t.split('.')[-1]}" for p, t in CASES])
def test_a_distorted_theory_fails_the_page(page, target, factor):
    failed, message = page_fails_with_distortion(page, target, factor)
    assert failed, f"{page} still passes with {target} × {factor}: {message}"
