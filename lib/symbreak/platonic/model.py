"""The data model (Task: Σx, Σε) and the embedded deep linear networks (EDLN) of the chapter, with the
paper's example pair.

Pages: ``book/platonic/experiments.md``, ``book/platonic/index.md``, ``book/platonic/proof.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..rng import make_rng
from ..validation import (
    check_array,
    check_int,
    check_invertible,
    check_nonnegative,
    check_positive,
    check_symmetric_positive_definite,
)
from .kernel import platonic_kernel
from .linalg import _sym, random_invertible, random_orthogonal, random_spd, sqrtm_psd

__all__ = ["Task", "random_task", "EDLN", "random_edln", "example_pair"]

# ----------------------------------------------------------------------------------------------
# The data model and the networks
# ----------------------------------------------------------------------------------------------


def _check_psd(name: str, value, size: int) -> np.ndarray:
    arr = check_array(name, value, ndim=2)
    if arr.shape != (size, size):
        raise ValueError(f"{name} must be {size}x{size}, got shape {arr.shape}")
    scale = max(np.abs(arr).max(), np.finfo(float).tiny)
    if np.abs(arr - arr.T).max() > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric")
    arr = _sym(arr)
    if np.linalg.eigvalsh(arr)[0] < -1e-10 * scale:
        raise ValueError(f"{name} must be positive semi-definite (all eigenvalues >= 0)")
    return arr


def _check_net(net) -> None:
    if not isinstance(net, EDLN):
        raise TypeError(f"net must be an EDLN (see random_edln), got {type(net).__name__}")


def _check_task(task) -> None:
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task (see random_task), got {type(task).__name__}")


@dataclass(frozen=True)
class Task:
    """The data model: ``x ~ N(0, Σx)`` in ``R^n``, ``y = V* x + ε`` with ``ε ~ N(0, Σε)``.

    Parameters
    ----------
    v_star : array_like, shape (m, n)
        Target map ``V*`` (not zero).
    sigma_x : array_like, shape (n, n)
        Latent covariance, symmetric positive definite.
    sigma_eps : array_like, shape (m, m)
        Label-noise covariance, symmetric positive *semi*-definite: ``0`` is allowed here to
        show what happens without label noise (then :meth:`platonic_kernel` is undefined).

    Raises
    ------
    ValueError
        Naming the parameter, for wrong shapes, a zero ``V*``, a ``Σx`` that is not symmetric
        positive definite or a ``Σε`` that is not symmetric positive semi-definite.
    """

    v_star: np.ndarray
    sigma_x: np.ndarray
    sigma_eps: np.ndarray

    def __post_init__(self):
        v = check_array("v_star", self.v_star, ndim=2)
        if not np.any(v):
            raise ValueError("v_star must not be the zero matrix")
        m, n = v.shape
        sx = check_symmetric_positive_definite("sigma_x", self.sigma_x, size=n)
        se = _check_psd("sigma_eps", self.sigma_eps, m)
        # the task's own read-only copies: the caller's arrays can change, the task cannot (its rank
        # V* is computed once here, and check_task reads it at every call of the chapter's functions)
        for name, a in (("v_star", v), ("sigma_x", sx), ("sigma_eps", se)):
            a = np.array(a, dtype=float, copy=True)
            a.flags.writeable = False
            object.__setattr__(self, name, a)
        object.__setattr__(self, "_rank", int(np.linalg.matrix_rank(self.v_star)))

    @property
    def n(self) -> int:
        """Latent dimension."""
        return self.v_star.shape[1]

    @property
    def m(self) -> int:
        """Label dimension."""
        return self.v_star.shape[0]

    @property
    def rank(self) -> int:
        """``rank V*``: the smallest width a network needs to reach a global minimum."""
        return self._rank

    @property
    def noise_free(self) -> bool:
        """Whether ``Σε = 0`` (no label noise)."""
        return not np.any(self.sigma_eps)

    def platonic_kernel(self) -> np.ndarray:
        """:func:`platonic_kernel` of this task (needs ``Σε`` positive definite)."""
        return platonic_kernel(self.v_star, self.sigma_x, self.sigma_eps)

    def with_noise(self, sigma_eps) -> "Task":
        """The same task with another label-noise covariance."""
        return Task(self.v_star, self.sigma_x, sigma_eps)

    def data_factor(self) -> np.ndarray:
        """A factor ``L`` with ``L Lᵀ = diag(Σx, Σε)``, the joint covariance of ``(x, ε)``."""
        n, m = self.n, self.m
        f = np.zeros((n + m, n + m))
        f[:n, :n] = np.linalg.cholesky(self.sigma_x)
        f[n:, n:] = sqrtm_psd(self.sigma_eps)
        return f


def random_task(
    seed=None,
    *,
    n: int = 4,
    m: int = 4,
    rank: int | None = None,
    noise: float = 0.5,
    cond_v: float = 3.0,
    cond_x: float = 3.0,
    cond_eps: float = 2.0,
) -> Task:
    """A random :class:`Task` with controlled conditioning.

    ``V* = O₁ diag(s) O₂ᵀ`` (m×n, rank ``rank``) with Haar-random orthonormal columns ``O₁, O₂``
    and singular values ``s`` log-uniform in ``[cond_v^{-1/2}, cond_v^{1/2}]`` (both ends
    attained); ``Σx`` with eigenvalues log-uniform with condition number ``cond_x``, scaled to
    trace ``n``; ``Σε = noise · Σ₀`` with ``Σ₀`` random of condition number ``cond_eps`` and trace
    ``m`` (so ``noise`` is the mean label-noise variance per output; ``noise = 0`` removes it).
    """
    rng = seed if isinstance(seed, np.random.Generator) else make_rng(seed)
    n = check_int("n", n, minimum=1)
    m = check_int("m", m, minimum=1)
    rank = min(n, m) if rank is None else check_int("rank", rank, minimum=1, maximum=min(n, m))
    noise = check_nonnegative("noise", noise)
    cond_v = check_positive("cond_v", cond_v)
    if cond_v < 1:
        raise ValueError(f"cond_v must lie in [1, inf), got {cond_v!r}")
    u = rng.uniform(-0.5, 0.5, size=rank)
    if rank >= 2:
        u[0], u[1] = -0.5, 0.5
    o1 = random_orthogonal(rng, m)[:, :rank]
    o2 = random_orthogonal(rng, n)[:, :rank]
    v = (o1 * cond_v**u) @ o2.T
    sx = random_spd(rng, n, cond_x)
    sx *= n / np.trace(sx)
    se = random_spd(rng, m, cond_eps)
    se *= noise * m / np.trace(se)
    return Task(v, sx, se)


@dataclass(frozen=True)
class EDLN:
    """An embedded deep linear network ``f(x) = M^O W_D ⋯ W_1 M^I Z x`` (paper Eq. 15).

    Parameters
    ----------
    widths : sequence of int
        Hidden widths ``d_1 .. d_{D-1}`` (the depth is ``D = len(widths) + 1 ≥ 2``).
    m_in : array_like, shape (n, n)
        Fixed invertible input embedding ``M^I`` (the module's upstream part).
    m_out : array_like, shape (m, m)
        Fixed invertible output embedding ``M^O`` (the module's downstream part).
    view : array_like, shape (n, n)
        Fixed invertible view ``Z``: the network's input is ``Z x``.
    name : str
        A label for plots and tables.

    Raises
    ------
    ValueError
        Naming the parameter, if a matrix is singular (condition number above 1e12) or has the
        wrong shape, or a width is not a positive integer.
    """

    widths: tuple
    m_in: np.ndarray
    m_out: np.ndarray
    view: np.ndarray
    name: str = "net"

    def __post_init__(self):
        if isinstance(self.widths, (int, np.integer)) or len(self.widths) < 1:
            raise ValueError("widths must be a non-empty sequence of hidden widths (depth >= 2)")
        widths = tuple(check_int(f"widths[{i}]", w, minimum=1) for i, w in enumerate(self.widths))
        m_in = check_invertible("m_in", self.m_in)
        n = m_in.shape[0]
        view = check_invertible("view", self.view, size=n)
        m_out = check_invertible("m_out", self.m_out)
        object.__setattr__(self, "widths", widths)
        object.__setattr__(self, "m_in", m_in)
        object.__setattr__(self, "m_out", m_out)
        object.__setattr__(self, "view", view)

    @property
    def depth(self) -> int:
        """Number ``D`` of trainable layers."""
        return len(self.widths) + 1

    @property
    def n(self) -> int:
        return self.m_in.shape[0]

    @property
    def m(self) -> int:
        return self.m_out.shape[0]

    @property
    def shapes(self) -> list[tuple[int, int]]:
        """Shapes ``(d_out, d_in)`` of ``W_1 .. W_D``."""
        dims = (self.n,) + self.widths + (self.m,)
        return [(dims[i + 1], dims[i]) for i in range(self.depth)]

    @cached_property
    def input_map(self) -> np.ndarray:
        """``M^I Z``: the fixed map from the latent ``x`` to the input of ``W_1`` (computed once:
        the training loops read it at every step; read-only, like the matrices it is made of)."""
        out = self.m_in @ self.view
        out.flags.writeable = False
        return out

    def hidden_labels(self) -> list[str]:
        """Labels ``name:h2 .. name:hD`` of the hidden layers (outputs of ``W_1 .. W_{D-1}``)."""
        return [f"{self.name}:h{k}" for k in range(2, self.depth + 1)]

    def check_task(self, task: Task) -> None:
        """Raise ``ValueError`` unless the network fits the task: ``n``, ``m`` match and every
        width is at least ``rank V*`` (Theorem 1's condition; otherwise no global minimum)."""
        if not isinstance(task, Task):
            raise ValueError(f"task must be a Task, got {type(task).__name__}")
        if task.n != self.n:
            raise ValueError(
                f"m_in and view must be {task.n}x{task.n} for this task (n = {task.n}), got {self.n}x{self.n}"
            )
        if task.m != self.m:
            raise ValueError(f"m_out must be {task.m}x{task.m} for this task (m = {task.m}), got {self.m}x{self.m}")
        r = task.rank
        if min(self.widths) < r:
            raise ValueError(f"widths must all be >= rank V* = {r}, got {self.widths}")


def random_edln(seed, n: int, m: int, widths, *, cond: float = 3.0, name: str = "net") -> EDLN:
    """An :class:`EDLN` with random invertible ``M^I``, ``M^O`` and ``Z``, each with condition
    number exactly ``cond`` (see :func:`random_invertible`)."""
    rng = make_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    return EDLN(
        tuple(widths),
        random_invertible(rng, n, cond),
        random_invertible(rng, m, cond),
        random_invertible(rng, n, cond),
        name=name,
    )


def example_pair(seed: int = 2026, *, noise: float = 0.5, cond: float = 3.0):
    """The chapter's running example: one task and two different EDLNs trained on two views.

    * task: ``n = 4`` latent dimensions, ``m = 5`` outputs, ``V*`` of rank 4 with singular values
      in ``[3^{-1/2}, 3^{1/2}]``, ``Σx`` with condition number 3 and trace 4, ``Σε`` with
      condition number 2 and trace ``5 · noise`` (:func:`random_task`);
    * network A: depth 3, hidden widths (5, 6); network B: depth 5, hidden widths (6, 4, 7, 5);
      each with its own random ``M^I``, ``M^O`` and view ``Z``, all of condition number ``cond``
      (:func:`random_edln`).

    Returns
    -------
    (Task, EDLN, EDLN)
    """
    seed = check_int("seed", seed, minimum=0)
    task = random_task((seed, 0), n=4, m=5, noise=noise)
    net_a = random_edln((seed, 1), 4, 5, (5, 6), cond=cond, name="A")
    net_b = random_edln((seed, 2), 4, 5, (6, 4, 7, 5), cond=cond, name="B")
    return task, net_a, net_b
