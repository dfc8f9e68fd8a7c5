"""The option casters: each takes what a user writes (text, or a JSON value) to the declared type, or says what
it expected."""

from __future__ import annotations

import pytest

from live_memory.settings.option_casters import as_bool, as_float, as_int, as_list, bounded, choice


def test_each_caster_takes_what_a_user_writes() -> None:
    assert (as_bool("Yes"), as_bool("0"), as_bool(True)) == (True, False, True)
    assert (as_int(" 42 "), as_float("0.5")) == (42, 0.5)
    assert as_list("a, b,,c") == ("a", "b", "c") and as_list(["x ", "y"]) == ("x", "y")
    assert choice(("serial", "parallel"))("SERIAL") == "serial"


@pytest.mark.parametrize(
    ("cast", "raw", "expected"),
    [
        (as_bool, "maybe", "expected true/false"),
        (as_int, True, "expected an integer"),
        (as_float, "nan", "expected a finite number"),
        (as_list, 3, "expected a list of strings"),
        (choice(("serial", "parallel")), "both", "expected one of serial, parallel"),
        (bounded(as_int, 1, 10), "11", "must be <= 10"),
    ],
)
def test_a_value_that_does_not_fit_says_what_was_expected(cast: object, raw: object, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        cast(raw)  # type: ignore[operator]
