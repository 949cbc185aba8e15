"""The shared dense Hessian by automatic differentiation (symbreak._autodiff)."""

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from symbreak._autodiff import hessian  # noqa: E402


def _fun_and_exact(n, seed=0):
    """f(θ) = ½ θᵀAθ + Σ θᵢ⁴/4 + (bᵀθ)³/6, whose Hessian is A + diag(3θ²) + (bᵀθ) b bᵀ."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    A = A + A.T
    b = rng.normal(size=n)
    theta = rng.normal(size=n)
    At, bt = torch.tensor(A), torch.tensor(b)

    def f(p):
        return 0.5 * p @ At @ p + (p**4).sum() / 4 + (bt @ p) ** 3 / 6

    exact = A + np.diag(3 * theta**2) + (b @ theta) * np.outer(b, b)
    return f, torch.tensor(theta), exact


@pytest.mark.parametrize("chunk", [1, 3, 7, 32, 100])
def test_hessian_is_the_closed_form_for_every_chunk(chunk):
    f, theta, exact = _fun_and_exact(7)
    h = hessian(f, theta, chunk=chunk)
    assert h.shape == (7, 7) and h.dtype == np.float64
    np.testing.assert_allclose(h, exact, rtol=1e-12, atol=1e-12)


def test_hessian_leaves_its_argument_alone():
    f, theta, _ = _fun_and_exact(4)
    before = theta.clone()
    hessian(f, theta)
    assert not theta.requires_grad and torch.equal(theta, before)


def test_hessian_does_not_import_dynamo():
    """The reason it exists beside torch.func: no second of importing torch._dynamo."""
    code = (
        "import sys, torch\n"
        "from symbreak._autodiff import hessian\n"
        "hessian(lambda p: (p ** 3).sum(), torch.ones(5, dtype=torch.float64))\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"
