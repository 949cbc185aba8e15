"""Tests of ``symbreak.platonic.metrics`` (moved from test_platonic.py)."""

import numpy as np
import pytest

from symbreak import platonic as pl


def test_cka_equals_weighted_alignment_and_knn_bounds():
    task, net_a, net_b = pl.example_pair()
    x, _, _ = pl.sample_data(task, 0, 20_000)
    wa, wb = pl.init_weights(net_a, 1), pl.init_weights(net_b, 2)
    ha, hb = pl.representations(net_a, wa, x)[0], pl.representations(net_b, wb, x)[1]
    ka, kb = pl.hidden_kernels(net_a, wa)[0], pl.hidden_kernels(net_b, wb)[1]
    assert pl.linear_cka(ha, hb) == pytest.approx(pl.kernel_alignment(ka, kb, metric=task.sigma_x), abs=0.01)
    assert pl.gram_alignment(ha, hb) == pytest.approx(pl.kernel_alignment(ka, kb, metric=task.sigma_x), abs=0.01)
    rot = pl.random_orthogonal(pl.make_rng(3), ha.shape[1])
    assert pl.mutual_knn(ha[:500], 2.5 * ha[:500] @ rot, 10) == pytest.approx(1.0)
    assert pl.linear_cka(ha, 3.0 * ha @ rot) == pytest.approx(1.0)
    unrelated = pl.make_rng(4).standard_normal((500, 3))
    assert pl.mutual_knn(ha[:500], unrelated, 10) < 0.1
    with pytest.raises(ValueError, match="h2"):
        pl.linear_cka(ha, hb[:10])
    with pytest.raises(ValueError, match="k"):
        pl.mutual_knn(ha[:20], hb[:20], 0)
    with pytest.raises(ValueError, match="h1"):
        pl.gram_alignment(np.zeros((5, 2)), hb[:5])
