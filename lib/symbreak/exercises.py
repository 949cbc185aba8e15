"""Self-checking exercises: ``check("<exercise id>", answer)`` says whether an answer is right.

Some exercises of the book ask the reader to change a parameter or a model in a page's code,
predict the outcome, then measure it. This module checks the number (or array) the reader arrives
at, within the relative tolerance the exercise states, without printing the expected value::

    >>> from symbreak import exercises
    >>> exercises.check("dln-ex-sigma-star-p", 1.0)       # doctest: +SKIP
    ✗ dln-ex-sigma-star-p: not within 1% of the expected value — look again at your computation.
    False

The expected answers are not typed in: each is computed, when asked for, by the library's own
functions (the chapter modules), so an answer that agrees with them agrees with the theory the page
derives. :data:`REGISTRY` lists every exercise with its page and tolerance; :func:`registry` gives
the same as a list of plain records.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Exercise", "REGISTRY", "registry", "check"]


@dataclass(frozen=True)
class Exercise:
    """One self-checking exercise.

    Parameters
    ----------
    id : str
        The exercise's label on its page (what ``check`` takes).
    page : str
        The page it is on (``"book/dln/equilibrium"``).
    tolerance : float
        Relative tolerance: an answer ``a`` is right when ``|a − e| ≤ tolerance · |e|`` for the
        expected value ``e`` (entry by entry for an array).
    shape : tuple of int
        ``()`` for a number, else the shape of the expected array.
    answer : str
        What the answer is, in words (never its value).
    expected : callable
        Computes the expected answer with the library's functions.
    """

    id: str
    page: str
    tolerance: float
    shape: tuple
    answer: str
    expected: Callable[[], object]


# ----------------------------------------------------------------------------------------------
# The expected answers, computed by the chapter modules (imported only when asked for)
# ----------------------------------------------------------------------------------------------


def _platonic_noise_shape() -> float:
    from symbreak import platonic as pl

    task, _, _ = pl.example_pair()
    u = np.linalg.svd(task.v_star)[0][:, 0]  # the output direction V* amplifies most
    se_u = task.sigma_eps + np.trace(task.sigma_eps) * np.outer(u, u)
    k_u = pl.platonic_kernel(task.v_star, task.sigma_x, se_u)
    return 1.0 - float(pl.kernel_alignment(k_u, task.platonic_kernel()))


def _platonic_deeper() -> float:
    from symbreak import platonic as pl

    task, net_a, _ = pl.example_pair()
    net_a4 = pl.EDLN((5, 6, 6), net_a.m_in, net_a.m_out, net_a.view, name="A4")
    return pl.minimal_entropy(net_a4, task)


def _ae_ceiling_eta() -> float:
    from symbreak import autoencoder as ae

    return ae.eos_ceiling(0.015, ae.geometric_spectrum(20)[0])


def _ae_spectrum() -> np.ndarray:
    """``[s*, τ₁*]`` for ``λ₁ = 6``, by a route other than the page's formulas: ``s*`` is the scale at
    which the full Hessian on the PCA manifold (``S = sI``) reaches ``2/η``, not C.81; ``τ₁*`` is when
    the forward Lambert-W solution (Eq. 6) reaches it, not the inverted C.49."""
    from scipy.optimize import brentq

    from symbreak import autoencoder as ae

    lam6 = ae.geometric_spectrum(20, first=6.0)
    k = 10
    s_star = brentq(
        lambda s: 0.02 * ae.pca_hessian_eigenvalues(lam6, k, np.full(k, s)).max() - 2.0, 1.0, 1e3, xtol=1e-12
    )
    c1 = lam6[0] * lam6[k:].sum()
    tau1 = brentq(lambda t: ae.lambert_scale(1.0, c1, t) - s_star, 0.0, 1e3, xtol=1e-12)
    return np.array([s_star, tau1])


def _ae_batch_steps() -> float:
    """SGD steps at ``η = 0.02``, ``B = 64`` until ``s₁`` reaches 2, from the forward Lambert-W solution
    (Eq. 6) by root finding, not the inverted C.49 the exercise names."""
    from scipy.optimize import brentq

    from symbreak import autoencoder as ae

    lam = ae.geometric_spectrum(20)
    c1 = lam[0] * lam[10:].sum()
    tau = brentq(lambda t: ae.lambert_scale(1.0, c1, t) - 2.0, 0.0, 10.0, xtol=1e-14)
    return tau * 64 / 0.02**2


def _dln_sigma_star_p() -> float:
    from symbreak import dln

    return dln.schatten_sigma_star(4.0, 3, 4, 0.25)


def _dln_deeper_rates() -> np.ndarray:
    from symbreak import dln

    return np.array(dln.relaxation_rates(2.0, 8, 4, 1.0))


#: Every self-checking exercise of the book, by id: an :class:`Exercise` each.
#:
#: :meta hide-value:
REGISTRY: dict[str, Exercise] = {
    ex.id: ex
    for ex in (
        Exercise(
            "platonic-ex-noise-shape",
            "book/platonic/proof",
            0.02,
            (),
            "1 − A(K⋆ with extra label noise tr Σε along the top left singular vector of V*, K⋆)",
            _platonic_noise_shape,
        ),
        Exercise(
            "platonic-ex-deeper",
            "book/platonic/proof",
            0.01,
            (),
            "the smallest entropic term S over the global minima of network A with one more hidden layer",
            _platonic_deeper,
        ),
        Exercise(
            "ae-ex-ceiling-eta",
            "book/autoencoder/stability",
            0.002,
            (),
            "the common saturation scale s* at η = 0.015 for the geometric spectrum",
            _ae_ceiling_eta,
        ),
        Exercise(
            "ae-ex-spectrum",
            "book/autoencoder/stability",
            0.002,
            (2,),
            "[s*, τ₁*] for the spectrum with top variance 6 at η = 0.02",
            _ae_spectrum,
        ),
        Exercise(
            "ae-ex-batch-steps",
            "book/autoencoder/lambert",
            0.02,
            (),
            "the number of SGD steps (η = 0.02, B = 64) until s₁ reaches 2 by P-Eq. 6",
            _ae_batch_steps,
        ),
        Exercise(
            "dln-ex-sigma-star-p",
            "book/dln/equilibrium",
            0.01,
            (),
            "σ⋆ for p = 4, N = 3, d = 4, β = 1/4",
            _dln_sigma_star_p,
        ),
        Exercise(
            "dln-ex-deeper-rates",
            "book/dln/equilibrium",
            0.01,
            (2,),
            "[ρ₁, ρ⊥] for p = 2, N = 8, d = 4, β = 1",
            _dln_deeper_rates,
        ),
    )
}


def registry() -> list[dict]:
    """Every self-checking exercise as ``{"id", "page", "tolerance", "shape", "answer"}``, in the
    book's order (never the expected value)."""
    return [
        {"id": ex.id, "page": ex.page, "tolerance": ex.tolerance, "shape": ex.shape, "answer": ex.answer}
        for ex in REGISTRY.values()
    ]


def _exercise(exercise_id) -> Exercise:
    if not isinstance(exercise_id, str) or exercise_id not in REGISTRY:
        raise ValueError(f"exercise_id must be one of {', '.join(REGISTRY)}; got {exercise_id!r}")
    return REGISTRY[exercise_id]


def _answer_array(ex: Exercise, answer) -> np.ndarray:
    """The answer as a float array of the exercise's shape, or a ``ValueError`` saying what is wrong."""
    what = "a real number" if ex.shape == () else f"an array of shape {ex.shape}"
    if answer is None or isinstance(answer, (str, bytes, bool, np.bool_, dict, set)):
        raise ValueError(f"answer for {ex.id} must be {what}, got {type(answer).__name__}")
    if isinstance(answer, numbers.Number) and not isinstance(answer, numbers.Real):
        raise ValueError(f"answer for {ex.id} must be {what}, got the complex number {answer!r}")
    try:
        arr = np.asarray(answer)
    except (ValueError, TypeError) as err:  # ragged nested lists
        raise ValueError(f"answer for {ex.id} must be {what}: {err}") from err
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"answer for {ex.id} must be {what}, got an array of dtype {arr.dtype}")
    arr = arr.astype(float)
    if ex.shape == () and arr.size == 1:
        arr = arr.reshape(())
    if arr.shape != ex.shape:
        raise ValueError(f"answer for {ex.id} must be {what}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"answer for {ex.id} must be finite, got {answer!r}")
    return arr


def check(exercise_id: str, answer, *, quiet: bool = False) -> bool:
    """Whether ``answer`` solves the exercise ``exercise_id`` within its stated tolerance.

    Prints one line saying right or not (unless ``quiet``), never the expected value.

    Parameters
    ----------
    exercise_id : str
        An id of :data:`REGISTRY` (the exercise's label on its page, e.g. ``"ae-ex-ceiling-eta"``).
    answer : float or array_like
        A real number, or an array of the shape the exercise asks for.
    quiet : bool
        Print nothing; only return the verdict.

    Returns
    -------
    bool
        ``True`` when every entry is within the exercise's relative tolerance of the expected one.

    Raises
    ------
    ValueError
        For an unknown ``exercise_id`` (the message lists the valid ones), or an ``answer`` that is
        not a finite real number or array of the expected shape.
    """
    ex = _exercise(exercise_id)
    arr = _answer_array(ex, answer)
    expected = np.asarray(ex.expected(), dtype=float).reshape(ex.shape)
    ok = bool(np.all(np.abs(arr - expected) <= ex.tolerance * np.abs(expected)))
    if not quiet:
        pct = f"{100 * ex.tolerance:g}%"
        if ok:
            print(f"✓ {ex.id}: right (within {pct} of the expected value).")
        else:
            wrong = (
                ""
                if ex.shape == ()
                else f" ({int(np.sum(np.abs(arr - expected) > ex.tolerance * np.abs(expected)))} of {arr.size} entries)"
            )
            print(f"✗ {ex.id}: not within {pct} of the expected value{wrong} — look again at your computation.")
    return ok
