"""Verdicts no stronger than the data: confidence intervals over replicas, and cosine mutual k-NN.

Small helpers for the experiment pages of *Beyond the theorems*:

* :func:`mean_ci` and :func:`difference_ci` — Student-t 95% confidence intervals of a mean over
  independent replicas (seeds) and of a difference of two such means (Welch), so that every
  verdict sentence can state its interval and say "not decided at this size" when it contains 0;
* :func:`verdict` — that rule as text;
* :func:`jackknife_se` — the standard error of a statistic of several replica samples (a ratio of
  means, a largest error), from the replicas left out one at a time;
* :func:`cosine_mutual_knn` — mutual k-nearest neighbours with the cosine distance, as in Huh et
  al. (2024), by normalising each sample's representation before the Euclidean neighbour search of
  :func:`symbreak.beyond.mutual_knn` (on unit vectors ``‖a − b‖² = 2 − 2 cos(a, b)``, so
  the neighbours are the same).

Pages: ``book/beyond/alignment.md``, ``book/beyond/autoencoders.md``.
"""

from __future__ import annotations

import numpy as np

from ..validation import check_array, check_real, finite_result

__all__ = [
    "mean_ci",
    "difference_ci",
    "paired_difference_ci",
    "jackknife_se",
    "verdict",
    "cosine_mutual_knn",
    "noether_defect",
]


def _sample(name, values) -> np.ndarray:
    x = check_array(name, values, finite=False).ravel()
    if x.size < 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must hold at least 2 finite values (one per replica), got {x.size}")
    return x


def _level(level) -> float:
    level = check_real("level", level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    return level


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """Mean over replicas and its Student-t confidence interval: ``(mean, low, high)``."""
    x = _sample("values", values)
    level = _level(level)
    with np.errstate(over="ignore", invalid="ignore"):
        sd, m = x.std(ddof=1), float(x.mean())
    finite_result("mean_ci", (sd, m))
    from scipy import stats  # after the checks: its import takes seconds on a busy machine

    with np.errstate(over="ignore", invalid="ignore"):
        half = stats.t.ppf(0.5 + level / 2, x.size - 1) * sd / np.sqrt(x.size)
        return finite_result("mean_ci", (m, m - float(half), m + float(half)))


def difference_ci(a, b, level: float = 0.95) -> tuple[float, float, float]:
    """``mean(a) − mean(b)`` over independent replicas and its Welch–Satterthwaite t interval:
    ``(difference, low, high)``."""
    a, b = _sample("a", a), _sample("b", b)
    level = _level(level)
    from scipy import stats

    with np.errstate(over="ignore", invalid="ignore"):
        va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
        se = np.sqrt(va + vb)
        diff = float(a.mean() - b.mean())
    finite_result("difference_ci", (va, vb, diff))
    if se == 0:
        return diff, diff, diff
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = float(stats.t.ppf(0.5 + level / 2, dof) * se)
    return diff, diff - half, diff + half


def paired_difference_ci(a, b, level: float = 0.95) -> tuple[float, float, float]:
    """``mean(a − b)`` over seeds and its Student-t interval, for *paired* runs: ``(difference, low, high)``.

    ``a[s]`` and ``b[s]`` come from runs that share seed ``s`` (the same initialisation, data views
    and minibatches), so they are not independent and Welch's interval (:func:`difference_ci`)
    would count their shared variation twice; the interval is that of :func:`mean_ci` of the
    per-seed differences, with ``n − 1`` degrees of freedom.
    """
    a, b = _sample("a", a), _sample("b", b)
    if a.size != b.size:
        raise ValueError(f"a and b must hold one value per seed each (paired), got {a.size} and {b.size}")
    return mean_ci(a - b, level)


def jackknife_se(statistic, *samples) -> float:
    """Jackknife standard error of ``statistic(*samples)`` over the replicas of each sample.

    ``samples`` are arrays whose first axis runs over independent replicas (one sample per group of
    runs, e.g. two ensembles whose mean ratio is the statistic). Each replica of each sample is left
    out in turn; for independent samples the variances add,
    ``se² = Σ_samples (n−1)/n Σ_i (θ_(i) − θ̄_(·))²``. Exact for a mean (it gives ``std/√n``), and the
    usual first-order error of a smooth function of means (a ratio, a largest relative error).

    Examples
    --------
    >>> round(jackknife_se(np.mean, np.array([1.0, 2.0, 3.0])), 6)
    0.57735
    """
    if not callable(statistic):
        raise TypeError(f"statistic must be callable, got {type(statistic).__name__}")
    if not samples:
        raise ValueError("jackknife_se needs at least one sample")
    arrays = [np.asarray(x, dtype=float) for x in samples]
    for i, x in enumerate(arrays):
        if x.ndim < 1 or x.shape[0] < 2 or not np.all(np.isfinite(x)):
            raise ValueError(
                f"samples[{i}] must hold at least 2 finite replicas along its first axis, got shape {x.shape}"
            )
    var = 0.0
    for j, x in enumerate(arrays):
        n = x.shape[0]
        loo = np.array(
            [
                float(statistic(*[np.delete(y, i, axis=0) if k == j else y for k, y in enumerate(arrays)]))
                for i in range(n)
            ]
        )
        var += (n - 1) / n * float(np.sum((loo - loo.mean()) ** 2))
    return float(np.sqrt(var))


def verdict(low: float, high: float, *, above: str, below: str) -> str:
    """``above`` when the interval lies above 0, ``below`` when below, else "not decided at this size"."""
    low, high = check_real("low", low), check_real("high", high)
    for name, text in (("above", above), ("below", below)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a string (the verdict's words), got {type(text).__name__}")
    if low > high:
        raise ValueError(f"low and high must be finite with low <= high, got {low!r}, {high!r}")
    if low > 0:
        return above
    if high < 0:
        return below
    return "not decided at this size"


def cosine_mutual_knn(h1, h2, k: int = 10) -> float:
    """Mutual k-NN of two representations of the same samples with the cosine distance.

    Each row (sample) is scaled to unit length, then the neighbour sets are those of
    :func:`symbreak.beyond.mutual_knn`. A zero row (a sample on which every unit is off)
    stays zero.
    """
    from .alignment import mutual_knn

    h1, h2 = check_array("h1", h1), check_array("h2", h2)
    if h1.ndim != 2 or h2.ndim != 2 or h1.shape[0] != h2.shape[0]:
        raise ValueError(f"h1 and h2 must be 2-d with the same number of rows, got {h1.shape} and {h2.shape}")

    def unit(h):
        n = np.linalg.norm(h, axis=1, keepdims=True)
        return h / np.where(n > 0, n, 1.0)

    return mutual_knn(unit(h1), unit(h2), k)


def noether_defect(X, W, U, activation: str) -> np.ndarray:
    """Per-neuron Noether defect ``n_a = ⟨w_a, ∂L/∂w_a⟩ − ⟨u_a, ∂L/∂u_a⟩`` of the full-data loss.

    For the autoencoder ``L = ½ mean_b ‖W φ(U x_b) − x_b‖²`` it is
    ``n_a = mean_b[(Wᵀr_b)_a (φ(z_{a,b}) − z_{a,b} φ'(z_{a,b}))]`` with ``z = Ux``, ``r = Wφ(z) − x``:
    exactly zero for linear and ReLU units (``φ(z) = zφ'(z)``, the per-neuron rescaling symmetry),
    not for tanh. One SGD step changes the charge ``q_a = ‖w_a‖² − ‖u_a‖²`` by ``−2η n_a`` at first
    order in expectation, that is by ``−2B n_a/η`` per unit of the slow time ``τ = tη²/B``: the term
    the second-order drift (:func:`symbreak.beyond.ae_drift_terms`) leaves out.

    Parameters
    ----------
    X : array_like, shape (n, d)
        The data, one sample per row.
    W : array_like, shape (R, d, k)
    U : array_like, shape (R, k, d)
    activation : {"linear", "relu", "tanh"}

    Returns
    -------
    numpy.ndarray, shape (R, k)
    """
    X = check_array("X", X)
    W, U = check_array("W", W), check_array("U", U)
    if X.ndim != 2 or W.ndim != 3 or U.shape != (W.shape[0], W.shape[2], X.shape[1]) or W.shape[1] != X.shape[1]:
        raise ValueError(f"X must be (n, d), W (R, d, k) and U (R, k, d), got {X.shape}, {W.shape}, {U.shape}")
    if X.shape[0] == 0:
        raise ValueError("X must hold at least one sample (row)")
    if activation == "linear":
        return np.zeros((W.shape[0], W.shape[2]))
    if activation == "relu":
        phi, dphi = (lambda z: np.maximum(z, 0.0)), (lambda z: (z > 0).astype(float))
    elif activation == "tanh":
        phi, dphi = np.tanh, (lambda z: 1.0 - np.tanh(z) ** 2)
    else:
        raise ValueError(f"activation must be one of ('linear', 'relu', 'tanh'), got {activation!r}")
    with np.errstate(over="ignore", invalid="ignore"):
        z = U @ X.T  # (R, k, n)
        r = W @ phi(z) - X.T[None]  # (R, d, n)
        out = np.mean((np.swapaxes(W, 1, 2) @ r) * (phi(z) - z * dphi(z)), axis=-1)
    return finite_result("noether_defect", out)
