import pytest

from symbreak.config import QUICK_ENV_VAR, mode_name, quick_mode, sized


@pytest.mark.parametrize(
    "value, expected", [("1", True), ("true", True), ("ON", True), ("0", False), ("", False), ("no", False)]
)
def test_quick_mode_reads_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv(QUICK_ENV_VAR, value)
    assert quick_mode() is expected
    assert mode_name() == ("quick" if expected else "full")


def test_unset_means_full(monkeypatch):
    monkeypatch.delenv(QUICK_ENV_VAR, raising=False)
    assert quick_mode() is False
    assert sized(1000, 10) == 1000


def test_sized_switches_with_the_environment(monkeypatch):
    monkeypatch.setenv(QUICK_ENV_VAR, "1")
    assert sized(1000, 10) == 10
    assert sized((4, 5), (1, 2)) == (1, 2)
    monkeypatch.setenv(QUICK_ENV_VAR, "0")
    assert sized(1000, 10) == 1000


def test_bad_values_are_rejected(monkeypatch):
    monkeypatch.setenv(QUICK_ENV_VAR, "maybe")
    with pytest.raises(ValueError, match=QUICK_ENV_VAR):
        quick_mode()
    monkeypatch.setenv(QUICK_ENV_VAR, "1")
    with pytest.raises(ValueError, match="quick"):
        sized(10, 100)
