"""symbreak.exercises: the self-checking exercises accept the right answer, reject a 10%-wrong one,
never print the expected value, and reject bad input with a clear ValueError."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

from symbreak import exercises

ROOT = pathlib.Path(__file__).resolve().parents[1]
IDS = list(exercises.REGISTRY)


def _expected(exercise_id):
    ex = exercises.REGISTRY[exercise_id]
    return np.asarray(ex.expected(), dtype=float).reshape(ex.shape)


@pytest.mark.parametrize("exercise_id", IDS)
def test_the_right_answer_passes(exercise_id, capsys):
    e = _expected(exercise_id)
    assert exercises.check(exercise_id, e) is True
    out = capsys.readouterr().out
    assert out.startswith("✓") and exercise_id in out
    # a list, and an answer just inside the tolerance, pass too
    tol = exercises.REGISTRY[exercise_id].tolerance
    assert exercises.check(exercise_id, (e * (1 + 0.5 * tol)).tolist(), quiet=True)


@pytest.mark.parametrize("exercise_id", IDS)
@pytest.mark.parametrize("factor", [1.1, 0.9])
def test_a_ten_percent_wrong_answer_fails(exercise_id, factor, capsys):
    e = _expected(exercise_id)
    assert exercises.check(exercise_id, e * factor) is False
    out = capsys.readouterr().out
    assert out.startswith("✗") and exercise_id in out


@pytest.mark.parametrize("exercise_id", [i for i in IDS if exercises.REGISTRY[i].shape != ()])
def test_one_wrong_entry_of_an_array_fails(exercise_id):
    e = _expected(exercise_id)
    for i in range(e.size):
        wrong = e.copy().ravel()
        wrong[i] *= 1.1
        assert exercises.check(exercise_id, wrong.reshape(e.shape), quiet=True) is False


@pytest.mark.parametrize("exercise_id", IDS)
def test_the_verdict_never_prints_the_expected_value(exercise_id, capsys):
    e = _expected(exercise_id)
    for answer in (e, e * 1.1):
        exercises.check(exercise_id, answer)
    out = capsys.readouterr().out
    numbers = [float(x) for x in re.findall(r"-?\d+\.\d+|-?\d+", out)]
    for value in np.ravel(e):
        assert not any(abs(x - value) <= 0.05 * abs(value) for x in numbers), out


def test_quiet_prints_nothing(capsys):
    exercises.check(IDS[0], _expected(IDS[0]), quiet=True)
    assert capsys.readouterr().out == ""


def test_an_unknown_id_lists_the_valid_ones():
    with pytest.raises(ValueError) as err:
        exercises.check("ae-ex-nonexistent", 1.0)
    for exercise_id in IDS:
        assert exercise_id in str(err.value)
    with pytest.raises(ValueError, match="exercise_id"):
        exercises.check(3, 1.0)


@pytest.mark.parametrize(
    "answer", [None, "16.6", True, 1 + 2j, float("nan"), float("inf"), [1.0, 2.0], {"s": 1.0}, np.array(["a"])]
)
def test_a_malformed_scalar_answer_is_a_value_error(answer):
    scalar = next(i for i in IDS if exercises.REGISTRY[i].shape == ())
    with pytest.raises(ValueError, match="answer"):
        exercises.check(scalar, answer)


@pytest.mark.parametrize("answer", [1.0, [1.0, 2.0, 3.0], [[1.0, 2.0]], [[1.0], [2.0, 3.0]], [1.0, np.nan]])
def test_a_malformed_array_answer_is_a_value_error(answer):
    array = next(i for i in IDS if exercises.REGISTRY[i].shape == (2,))
    with pytest.raises(ValueError, match="answer"):
        exercises.check(array, answer)


def test_the_registry_lists_id_page_and_tolerance():
    rows = exercises.registry()
    assert [r["id"] for r in rows] == IDS
    pages = set((ROOT / "_toc.yml").read_text().split())
    for r in rows:
        assert f"{r['page']}" in pages, r  # a page of the book
        assert 0 < r["tolerance"] < 0.1, r  # tight enough that a 10%-wrong answer fails
        assert r["answer"] and "expected" not in r


def test_at_least_two_per_chapter_and_each_is_on_its_page():
    """Every registered exercise is an exercise of the page it names, and that page shows the call a
    reader runs; each of the three chapters has at least two."""
    per_chapter = {}
    for ex in exercises.REGISTRY.values():
        text = (ROOT / f"{ex.page}.md").read_text(encoding="utf-8")
        assert f":label: {ex.id}\n" in text, ex.id
        assert f'exercises.check("{ex.id}"' in text, ex.id
        per_chapter[ex.page.split("/")[1]] = per_chapter.get(ex.page.split("/")[1], 0) + 1
    assert all(per_chapter.get(ch, 0) >= 2 for ch in ("platonic", "autoencoder", "dln")), per_chapter


def test_the_naive_ceiling_guess_is_rejected():
    """The naive guess s* ≈ κ̃ = 2/(ηλ₁), which skips the quadratic of C.81, is off by less than 1%:
    the ceiling exercises' tolerance must reject it (their expected values are roots of the full
    Hessian, so the guess is checked against an independent route)."""
    s_ceiling = _expected("ae-ex-ceiling-eta")
    naive = 2.0 / (0.015 * 12.0)
    assert abs(naive / s_ceiling - 1) > 2 * exercises.REGISTRY["ae-ex-ceiling-eta"].tolerance
    assert exercises.check("ae-ex-ceiling-eta", naive, quiet=True) is False
    spectrum = _expected("ae-ex-spectrum")
    assert exercises.check("ae-ex-spectrum", [2.0 / (0.02 * 6.0), spectrum[1]], quiet=True) is False


def test_the_ceiling_answers_agree_with_the_page_formulas():
    """The expected values, found by root finding on the Hessian and on the Lambert-W solution, agree
    with the closed forms the solutions use (C.81, C.49), so the page's own answers pass."""
    from symbreak import autoencoder as ae

    lam6 = ae.geometric_spectrum(20, first=6.0)
    s6 = ae.eos_ceiling(0.02, lam6[0])
    closed = [s6, ae.lambert_time(s6, 1.0, ae.growth_rates(lam6, 10)[0])]
    np.testing.assert_allclose(_expected("ae-ex-spectrum"), closed, rtol=1e-9)
    c1 = ae.growth_rates(ae.geometric_spectrum(20), 10)[0]
    np.testing.assert_allclose(_expected("ae-ex-batch-steps"), ae.lambert_time(2.0, 1.0, c1) * 64 / 0.02**2, rtol=1e-9)
    np.testing.assert_allclose(_expected("ae-ex-ceiling-eta"), ae.eos_ceiling(0.015, 12.0), rtol=1e-9)


def _rejected(exercise_id, answer):
    """``answer`` is off by more than twice the exercise's tolerance, and check() says so."""
    expected = np.asarray(_expected(exercise_id), dtype=float)
    tol = exercises.REGISTRY[exercise_id].tolerance
    off = np.max(np.abs(np.asarray(answer, dtype=float) / expected - 1))
    return off > 2 * tol and exercises.check(exercise_id, answer, quiet=True) is False


def test_naive_platonic_answers_are_rejected():
    """The answers a student gets by a plausible slip: the entropic term of the original (shallower)
    network; the Σx-weighted deficit instead of the plain one; the deficit against the new K⋆ (zero)."""
    from symbreak import platonic as pl

    task, net_a, _ = pl.example_pair()
    assert _rejected("platonic-ex-deeper", pl.minimal_entropy(net_a, task))
    u = np.linalg.svd(task.v_star)[0][:, 0]
    se_u = task.sigma_eps + np.trace(task.sigma_eps) * np.outer(u, u)
    k_u = pl.platonic_kernel(task.v_star, task.sigma_x, se_u)
    weighted = 1.0 - float(pl.kernel_alignment(k_u, task.platonic_kernel(), metric=task.sigma_x))
    assert _rejected("platonic-ex-noise-shape", weighted)
    assert exercises.check("platonic-ex-noise-shape", 0.0, quiet=True) is False


def test_naive_dln_answers_are_rejected():
    """σ⋆ with the parameters left at the page's (p = 2, β = 1) or only one of them changed; the rates
    of the N = 3 network, or the two rates swapped."""
    from symbreak import dln

    for p, beta in ((2.0, 1.0), (4.0, 1.0), (2.0, 0.25)):
        assert _rejected("dln-ex-sigma-star-p", dln.schatten_sigma_star(p, 3, 4, beta)), (p, beta)
    assert _rejected("dln-ex-deeper-rates", list(dln.relaxation_rates(2.0, 3, 4, 1.0)))
    assert _rejected("dln-ex-deeper-rates", list(dln.relaxation_rates(2.0, 8, 4, 1.0))[::-1])
