"""Per-neuron rescaling charges of a one-hidden-layer ReLU network (symbreak.beyond.relu)."""

from __future__ import annotations

import numpy as np
import pytest

from symbreak.beyond import relu as rl

D, K, M, N = 5, 4, 3, 40


@pytest.fixture
def problem():
    g = np.random.default_rng(0)
    net = rl.init_relu_net(D, K, M, 3, seed=1)
    net.b[:] = 0.3 * g.standard_normal(net.b.shape)
    net.c[:] = 0.1 * g.standard_normal(net.c.shape)
    X = g.standard_normal((N, D)) / np.sqrt(D)
    Y = g.standard_normal((N, M))
    return net, X, Y


def _loss(net, X, Y):
    return 0.5 * ((rl.predict(net, X) - Y) ** 2).sum(-1).mean(-1)


def _full_gradients(net, X, Y):
    """Full-batch gradients by central finite differences of the loss (independent of the module)."""
    out = []
    for name in ("U", "b", "W"):
        a = getattr(net, name)
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape[1:]):
            for sgn in (1, -1):
                p = net.copy()
                getattr(p, name)[(slice(None),) + idx] += sgn * 1e-6
                g[(slice(None),) + idx] += sgn * _loss(p, X, Y) / 2e-6
        out.append(g)
    return out


def test_noether_identity_holds_per_sample(problem):
    net, X, Y = problem
    defect, scale = rl.noether_defect(net, X, Y)
    assert defect.shape == (3, N, K)
    assert np.abs(defect).max() <= 1e-13 * scale.max()
    assert scale.max() > 0.1


def test_rescaling_leaves_the_function_and_norm_balance_zeroes_the_charges(problem):
    net, X, _ = problem
    bal = rl.norm_balanced(net)
    np.testing.assert_allclose(rl.predict(bal, X), rl.predict(net, X), atol=1e-12)
    np.testing.assert_allclose(rl.unit_charges(bal), 0.0, atol=1e-12)
    assert np.abs(rl.unit_charges(net)).max() > 0.1


def test_full_batch_expected_norms_are_the_gradient_norms(problem):
    net, X, Y = problem
    gU, gb, gW = _full_gradients(net, X, Y)
    g_in, g_out = rl.expected_gradient_norms(net, X, Y, label_noise=0.0, batch_size=None)
    np.testing.assert_allclose(g_in, (gU**2).sum(-1) + gb**2, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(g_out, (gW**2).sum(-2), rtol=1e-6, atol=1e-12)


def test_one_sgd_step_changes_the_charge_by_the_squared_gradient_norms(problem):
    net, X, Y = problem
    run = rl.train_relu_net(
        net, X, Y, eta=0.05, batch_size=4, steps=10, label_noise=0.5, record_every=1, expect_every=1, seed=3
    )
    dq = np.diff(run.q, axis=0)
    np.testing.assert_allclose(dq, np.diff(run.step_sum, axis=0), atol=1e-14)
    assert np.abs(dq).max() > 1e-6


def test_expected_step_matches_monte_carlo(problem):
    """E[Q' − Q | θ] from the closed form against the mean over many independent single steps."""
    net, X, Y = problem
    one = rl.replicate(net, 4000, index=0)
    eta, B, sigma = 0.1, 3, 0.7
    run = rl.train_relu_net(
        one, X, Y, eta=eta, batch_size=B, steps=1, label_noise=sigma, record_every=1, expect_every=1, seed=5
    )
    dq = run.q[1] - run.q[0]  # (4000, K), independent draws
    g_in, g_out = rl.expected_gradient_norms(net, X, Y, label_noise=sigma, batch_size=B)
    pred = eta**2 * (g_in - g_out)[0]
    se = dq.std(0, ddof=1) / np.sqrt(dq.shape[0])
    assert np.all(np.abs(dq.mean(0) - pred) <= 4 * se)
    # and a 10%-wrong prediction is rejected for the unit with the largest drift
    j = np.argmax(np.abs(pred) / se)
    assert abs(dq.mean(0)[j] - 1.1 * pred[j]) > 4 * se[j]


def test_gradient_balanced_point_has_ratio_one(problem):
    net, X, Y = problem
    bal = rl.gradient_balanced(net, X, Y, label_noise=0.5, batch_size=4)
    g_in, g_out = rl.expected_gradient_norms(bal, X, Y, label_noise=0.5, batch_size=4)
    live = g_out > 0
    np.testing.assert_allclose(g_in[live] / g_out[live], 1.0, rtol=1e-10)
    np.testing.assert_allclose(rl.predict(bal, X), rl.predict(net, X), atol=1e-12)


def test_gradient_descent_keeps_the_charges_in_the_flow_limit(problem):
    net, X, Y = problem
    dq = []
    for eta, steps in ((0.02, 200), (0.01, 400)):
        run = rl.train_relu_net(net, X, Y, eta=eta, batch_size=None, steps=steps, record_every=steps, seed=0)
        dq.append(np.abs(run.q[-1] - run.q[0]).sum())
    assert dq[1] / dq[0] == pytest.approx(0.5, rel=0.1)


def test_mixing_generator_is_not_a_symmetry_of_relu(problem):
    net, X, _ = problem
    assert np.all(rl.generator_first_order(net, X, 0, 1) > 0.05)
    assert np.all(rl.generator_first_order(net, X, 2, 2) < 1e-8)
    assert np.all(rl.generator_first_order(net, X, 0, 1, activation="linear") < 1e-8)


def test_mixing_generator_matches_its_closed_form(problem):
    net, X, _ = problem
    Z = X @ np.swapaxes(net.U, 1, 2) + net.b[:, None, :]
    j, i = 1, 3
    change = (Z[:, :, j] > 0) * Z[:, :, i] - np.maximum(Z[:, :, i], 0.0)
    rel = np.sqrt((net.W[:, :, j] ** 2).sum(-1) * (change**2).mean(-1)) / np.sqrt(
        (net.W[:, :, j] ** 2).sum(-1) * (Z[:, :, i] ** 2).mean(-1)
    )
    np.testing.assert_allclose(rl.generator_first_order(net, X, j, i), rel, rtol=1e-4)


def test_whitened_inputs_are_white():
    g = np.random.default_rng(1)
    X = g.standard_normal((500, 6)) @ g.standard_normal((6, 6))
    Z = rl.whitened_inputs(X, 4)
    C = Z.T @ Z / Z.shape[0]
    np.testing.assert_allclose(C, np.eye(4) / 4, atol=1e-12)


def test_runs_are_reproducible_and_replica_independent(problem):
    net, X, Y = problem
    kw = dict(eta=0.05, batch_size=4, steps=20, label_noise=0.3, record_every=10, seed=7)
    a = rl.train_relu_net(net, X, Y, **kw)
    b = rl.train_relu_net(net, X, Y, **kw)
    np.testing.assert_array_equal(a.q, b.q)
    first = rl.ReluNet(net.U[:1], net.b[:1], net.W[:1], net.c[:1])
    c = rl.train_relu_net(first, X, Y, **kw)
    np.testing.assert_allclose(c.q[:, 0], a.q[:, 0], atol=1e-13)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(eta=0.0), "eta"),
        (dict(batch_size=0), "batch_size"),
        (dict(label_noise=-1.0), "label_noise"),
        (dict(record_every=15, expect_every=10), "multiple of expect_every"),
        (dict(steps=25, expect_every=10, record_every=10), "steps"),
    ],
)
def test_train_rejects_bad_input(problem, kwargs, match):
    net, X, Y = problem
    kw = dict(eta=0.05, batch_size=4, steps=20, label_noise=0.3, record_every=10, expect_every=10)
    kw.update(kwargs)
    with pytest.raises(ValueError, match=match):
        rl.train_relu_net(net, X, Y, **kw)


def test_bad_shapes_and_units_are_value_errors(problem):
    net, X, Y = problem
    with pytest.raises(ValueError, match="features"):
        rl.predict(net, X[:, :2])
    with pytest.raises(ValueError, match="columns"):
        rl.expected_gradient_norms(net, X, Y[:, :2], label_noise=0.1, batch_size=2)
    with pytest.raises(ValueError, match="j"):
        rl.generator_first_order(net, X, K, 0)
    with pytest.raises(ValueError, match="step"):
        rl.generator_first_order(net, X, 0, 1, step=1.0)
    with pytest.raises(ValueError, match="p"):
        rl.whitened_inputs(X, D + 1)
    with pytest.raises(ValueError, match="ratio"):
        rl.norm_balanced(net, ratio=-1.0)
    with pytest.raises(TypeError, match="ReluNet"):
        rl.unit_charges((net.U, net.b))
