"""The benchmark's batched baselines compute the same gradients as autograd (a fast baseline that
computed something else would be no baseline)."""

import pathlib
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_engine as be  # noqa: E402


def _ae_loss(W, U, x):
    return 0.5 * ((x @ U.transpose(1, 2) @ W.transpose(1, 2) - x) ** 2).sum(dim=2).mean(dim=1).sum()


def test_hand_written_and_wishart_gradients_equal_autograd():
    g = torch.Generator().manual_seed(3)
    W = torch.randn(4, 6, 3, dtype=torch.float64, generator=g, requires_grad=True)
    U = torch.randn(4, 3, 6, dtype=torch.float64, generator=g, requires_grad=True)
    x = torch.randn(4, 16, 6, dtype=torch.float64, generator=g)
    _ae_loss(W, U, x).backward()
    with torch.no_grad():
        gw, gu = be.ae_grads_manual(W, U, x)
        sw, su = be.ae_grads_wishart(W, U, x.transpose(1, 2) @ x / x.shape[1])
    for a, b in ((gw, W.grad), (gu, U.grad), (sw, W.grad), (su, U.grad)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def test_hand_written_backpropagation_equals_autograd():
    g = torch.Generator().manual_seed(4)
    ws = [
        torch.randn(3, o, i, dtype=torch.float64, generator=g, requires_grad=True) for o, i in ((5, 4), (6, 5), (5, 6))
    ]
    m_in, m_out = (
        torch.randn(4, 4, dtype=torch.float64, generator=g),
        torch.randn(5, 5, dtype=torch.float64, generator=g),
    )
    x, y = (
        torch.randn(3, 4, 4, dtype=torch.float64, generator=g),
        torch.randn(3, 4, 5, dtype=torch.float64, generator=g),
    )
    h = x @ m_in.T
    for w in ws:
        h = h @ w.transpose(1, 2)
    ((h @ m_out.T - y) ** 2).sum(dim=2).mean(dim=1).sum().backward()
    with torch.no_grad():
        grads = be.platonic_grads_manual(ws, m_in, m_out, x, y)
    for a, w in zip(grads, ws):
        np.testing.assert_allclose(a.numpy(), w.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_bartlett_draw_has_the_wishart_mean():
    """The Wishart baseline's Σ̂ (Bartlett: normals below the diagonal, chi-squares on it) has mean Σ."""
    rate = be.batched_autoencoder(5, np.float64, 1, 8, "wishart")
    assert rate > 0
    torch.manual_seed(0)
    d, n, r = 5, 12, 40000
    sd = torch.tensor([2.0, 1.0, 1.0, 0.5, 0.25], dtype=torch.float64)
    half_df = ((n - torch.arange(d, dtype=torch.float64)) / 2).expand(r, d).contiguous()
    scatter = be.bartlett_scatter(half_df, sd, torch.Generator().manual_seed(5)) / n
    np.testing.assert_allclose(scatter.mean(dim=0).numpy(), np.diag(sd.numpy() ** 2), atol=0.03)
    # and its spread: Var[Σ̂_ii] = 2 σ_i⁴ / n for a Wishart matrix
    np.testing.assert_allclose(scatter.diagonal(dim1=1, dim2=2).var(dim=0).numpy(), 2 * sd.numpy() ** 4 / n, rtol=0.05)
    with pytest.raises(ValueError, match="kind"):
        be.batched_autoencoder(1, np.float64, 1, 2, "fast")
