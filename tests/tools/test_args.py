"""Tool-argument coercion: lenient where the model's intent is unambiguous, strict otherwise, and every
refusal names the tool, the argument and the fix (the model reads it and corrects its call)."""

from __future__ import annotations

from typing import Any

import pytest

from live_memory.core.errors import ArgumentError
from live_memory.tools.args import Arguments


def args(raw: Any, *, aliases: dict[str, str] | None = None) -> Arguments:
    return Arguments("Grep", raw, known=("pattern", "path", "-i", "head_limit", "output_mode"), aliases=aliases or {})


def test_arguments_that_are_not_an_object_are_refused_with_their_type() -> None:
    with pytest.raises(ArgumentError, match=r"^Grep: arguments must be a JSON object, got list$"):
        args(["pattern", "x"])


def test_a_legacy_alias_fills_its_canonical_argument() -> None:
    assert args({"query": "def"}, aliases={"query": "pattern"}).string("pattern") == "def"


def test_the_canonical_name_wins_over_its_alias_whatever_the_order() -> None:
    assert args({"query": "old", "pattern": "new"}, aliases={"query": "pattern"}).string("pattern") == "new"
    assert args({"pattern": "new", "query": "old"}, aliases={"query": "pattern"}).string("pattern") == "new"


def test_unknown_arguments_are_ignored_and_named_in_a_sorted_note() -> None:
    call = args({"pattern": "x", "zeta": 1, "alpha": 2})
    assert call.ignored == ["zeta", "alpha"]
    assert call.ignored_note() == "\n(note: ignored unsupported parameter(s): alpha, zeta)"
    assert args({"pattern": "x"}).ignored_note() == ""


@pytest.mark.parametrize("absent", [{}, {"path": None}, {"path": ""}])
def test_null_and_empty_string_count_as_not_given(absent: dict[str, Any]) -> None:
    call = args(absent)
    assert not call.has("path")
    assert call.string("path") is None


def test_a_missing_required_string_says_so_with_an_example() -> None:
    with pytest.raises(ArgumentError, match=r"^Grep: 'pattern' is required \(e\.g\. \"def main\"\)$"):
        args({}).string("pattern", required=True, example='"def main"')
    with pytest.raises(ArgumentError, match=r"^Grep: 'pattern' is required$"):
        args({}).string("pattern", required=True)


def test_a_string_argument_of_another_type_is_refused() -> None:
    with pytest.raises(ArgumentError, match=r"^Grep: 'pattern' must be a string, got int$"):
        args({"pattern": 42}).string("pattern")


@pytest.mark.parametrize(("raw", "value"), [(20, 20), ("20", 20), (" 7 ", 7), (5.0, 5)])
def test_integers_given_as_digits_or_whole_floats_are_accepted(raw: Any, value: int) -> None:
    assert args({"head_limit": raw}).integer("head_limit", default=200, minimum=1) == value


def test_an_absent_integer_takes_its_default_and_a_large_one_is_capped() -> None:
    assert args({}).integer("head_limit", default=200, minimum=1) == 200
    assert args({"head_limit": 10_000}).integer("head_limit", default=200, minimum=1, maximum=500) == 500


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (True, "'head_limit' must be an integer, got a boolean"),
        ("ten", "'head_limit' must be an integer, got 'ten'"),
        (2.5, "'head_limit' must be an integer, got float"),
        ([3], "'head_limit' must be an integer, got list"),
        (0, "'head_limit' must be at least 1, got 0"),
    ],
)
def test_malformed_or_too_small_integers_are_refused_precisely(raw: Any, message: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        args({"head_limit": raw}).integer("head_limit", default=200, minimum=1)
    assert str(caught.value) == f"Grep: {message}"


@pytest.mark.parametrize(
    ("raw", "value"),
    [(True, True), (False, False), ("true", True), (" YES ", True), ("0", False), ("no", False), (1, True), (0, False)],
)
def test_booleans_are_read_from_their_usual_spellings(raw: Any, value: bool) -> None:
    assert args({"-i": raw}).boolean("-i", default=not value) is value


def test_an_absent_boolean_takes_its_default() -> None:
    assert args({}).boolean("-i", default=True) is True
    assert args({"-i": None}).boolean("-i", default=False) is False


@pytest.mark.parametrize("raw", ["maybe", 2, "", [True]])
def test_anything_else_is_not_a_boolean(raw: Any) -> None:
    with pytest.raises(ArgumentError, match=r"^Grep: '-i' must be true or false, got "):
        args({"-i": raw}).boolean("-i", default=True)


def test_a_choice_outside_the_allowed_values_lists_them() -> None:
    modes = ("files_with_matches", "content", "count")
    assert args({"output_mode": "count"}).choice("output_mode", modes, default="content") == "count"
    assert args({}).choice("output_mode", modes, default="content") == "content"
    with pytest.raises(ArgumentError) as caught:
        args({"output_mode": "lines"}).choice("output_mode", modes, default="content")
    assert str(caught.value) == (
        "Grep: 'output_mode' must be one of 'files_with_matches', 'content', 'count', got 'lines'"
    )


def test_a_list_of_strings_takes_one_string_as_a_list_of_one_and_names_a_stray_item() -> None:
    assert args({"path": ["a.py", "b.py"]}).strings("path") == ["a.py", "b.py"]
    assert args({"path": "a.py"}).strings("path") == ["a.py"]
    assert args({}).strings("path") == [] == args({"path": []}).strings("path")
    with pytest.raises(ArgumentError, match=r"^Grep: 'path' must be a list of strings, got int at position 1$"):
        args({"path": ["a.py", 2]}).strings("path")
