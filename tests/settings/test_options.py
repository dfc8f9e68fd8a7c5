"""The options table is one typed dataclass: each row's caster, default and docs follow its declared type."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import pytest

from live_memory.settings.option_casters import as_float, as_str
from live_memory.settings.options import OPTIONS, OPTIONS_BY_KEY, Option, Options, conforms, option, options_of
from tests.fakes.env_text import env_text


@pytest.mark.parametrize("row", OPTIONS, ids=lambda o: o.key)
def test_every_default_has_its_declared_type_and_survives_its_own_caster(row: Option) -> None:
    assert conforms(row.default, row.type), f"{row.key}: default {row.default!r} is not a {row.type}"
    assert row.cast(row.default) == row.default  # the config.json form
    assert row.cast(env_text(row.default)) == row.default  # the environment form


def test_the_rows_are_the_fields_of_the_typed_table() -> None:
    assert [o.key for o in OPTIONS] == list(Options.__dataclass_fields__)
    assert OPTIONS_BY_KEY["port"].type is int
    assert OPTIONS_BY_KEY["secret_globs"].type == tuple[str, ...]
    assert OPTIONS_BY_KEY["concurrency"].choices == ("parallel", "serial")


@pytest.mark.parametrize(
    ("key", "text", "expected"),
    [
        ("port", " 8080 ", 8080),
        ("oauth", "off", False),
        ("keep_warm", "YES", True),
        ("price_input", "3", 3.0),
        ("file_globs", "src/*, docs/*.md,", ("src/*", "docs/*.md")),
        ("concurrency", "Serial", "serial"),
        ("provider", "OpenAI", "openai"),
    ],
)
def test_text_is_cast_to_the_declared_type(key: str, text: str, expected: object) -> None:
    row = OPTIONS_BY_KEY[key]
    value = row.cast(text)
    assert value == expected
    assert conforms(value, row.type)


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [
        ("port", "80.5", "expected an integer, got '80.5'"),
        ("port", True, "expected an integer, got True"),
        ("port", 0, "must be >= 1, got 0"),
        ("price_output", "nan", "expected a finite number, got 'nan'"),
        ("daily_budget_usd", "-inf", "expected a finite number, got '-inf'"),
        ("watch", "sometimes", "expected true/false (1/0), got 'sometimes'"),
        ("concurrency", "fast", "expected one of parallel, serial, got 'fast'"),
        ("secret_globs", [".env", 3], "expected a list of strings, got ['.env', 3]"),
        ("model", ["a"], "expected a string, got ['a']"),
    ],
)
def test_a_value_of_the_wrong_type_says_what_was_expected(key: str, raw: object, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        OPTIONS_BY_KEY[key].cast(raw)
    assert str(caught.value) == message


def test_a_caster_that_returns_another_type_than_its_option_s_fails_naming_the_option() -> None:
    # `Settings` is built from a dict of parsed values, which mypy does not check field by field: a caster that
    # turned "8080" into text (or a number into a float) would slip through to the server unless parsing checks it.
    with pytest.raises(
        TypeError, match=r"^option port: its caster turned '8080' into '8080', not integer, 1 to 65535$"
    ):
        replace(OPTIONS_BY_KEY["port"], cast=as_str).parse("8080")
    with pytest.raises(TypeError, match=r"^option max_iterations: its caster turned 7 into 7\.0, not integer"):
        replace(OPTIONS_BY_KEY["max_iterations"], cast=as_float).parse(7)
    assert OPTIONS_BY_KEY["port"].parse("8080") == 8080


def test_a_default_that_disagrees_with_its_declared_type_is_refused() -> None:
    @dataclass(frozen=True)
    class TextPort:
        port: int = option("80", "Port.")

    @dataclass(frozen=True)
    class IntRatio:
        ratio: float = option(1, "Ratio.")

    @dataclass(frozen=True)
    class UnknownChoice:
        mode: Literal["a", "b"] = option("c", "Mode.")

    @dataclass(frozen=True)
    class OutOfBounds:
        workers: int = option(0, "Workers.", low=1)

    with pytest.raises(TypeError, match=r"option port: default '80' does not match its declared type \(integer\)"):
        options_of(TextPort)
    with pytest.raises(TypeError, match=r"option ratio: default 1 does not match its declared type \(number\)"):
        options_of(IntRatio)
    with pytest.raises(TypeError, match=r"option mode: default 'c' does not match its declared type \(one of a, b\)"):
        options_of(UnknownChoice)
    with pytest.raises(
        TypeError, match=r"option workers: default 0 is invalid \(integer, at least 1\): must be >= 1, got 0"
    ):
        options_of(OutOfBounds)


def test_metadata_that_cannot_apply_to_the_declared_type_is_refused() -> None:
    @dataclass(frozen=True)
    class BoundedFlag:
        flag: bool = option(True, "Flag.", low=0)

    @dataclass(frozen=True)
    class NumberChoices:
        level: Literal[1, 2] = option(1, "Level.")

    @dataclass(frozen=True)
    class Raw:
        blob: bytes = option(b"", "Bytes.")

    with pytest.raises(TypeError, match="option flag: bounds need an int or float type"):
        options_of(BoundedFlag)
    with pytest.raises(TypeError, match="option level: a Literal type lists its choices as strings"):
        options_of(NumberChoices)
    with pytest.raises(TypeError, match="option blob: unsupported type"):
        options_of(Raw)


def test_secret_options_stay_out_of_the_repr() -> None:
    store = "postgresql://live:pw-do-not-print@db.example.com/team"
    shown = repr(Options(api_key="sk-do-not-print", auth_token="tok-do-not-print", team_store=store))
    assert "do-not-print" not in shown
    assert "port=" in shown
    assert {o.key for o in OPTIONS if o.secret} == {"api_key", "auth_token", "team_store"}
