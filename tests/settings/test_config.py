"""Configuration: env beats config.json beats defaults; bad values name their key and source."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import get_type_hints

import pytest

from live_memory import constants as C
from live_memory.core.errors import ConfigError
from live_memory.settings.config import Settings, default_data_dir, load_settings, write_config_value
from live_memory.settings.options import OPTIONS, Option, changed_options, conforms
from tests.fakes.env_text import env_text


def write_config(data_dir: Path, values: dict[str, object]) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.json").write_text(json.dumps(values))


def test_defaults_come_from_constants(tmp_path: Path) -> None:
    settings = load_settings(env={}, data_dir=tmp_path)
    assert settings.port == C.DEFAULT_PORT
    assert settings.default_timeout_s == C.DEFAULT_TIMEOUT_S
    assert settings.sources["port"] == "default"


def test_config_file_overrides_default(tmp_path: Path) -> None:
    write_config(tmp_path, {"port": 9001, "default_timeout_s": 30})
    settings = load_settings(env={}, data_dir=tmp_path)
    assert settings.port == 9001
    assert settings.default_timeout_s == 30.0
    assert settings.sources["port"].startswith("config.json")


def test_env_overrides_config_file(tmp_path: Path) -> None:
    write_config(tmp_path, {"port": 9001})
    settings = load_settings(env={"LIVE_MEMORY_PORT": "9002"}, data_dir=tmp_path)
    assert settings.port == 9002
    assert settings.sources["port"] == "env LIVE_MEMORY_PORT"


def test_invalid_env_value_names_key_and_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"invalid port from env LIVE_MEMORY_PORT: expected an integer"):
        load_settings(env={"LIVE_MEMORY_PORT": "seventy"}, data_dir=tmp_path)


def test_invalid_file_value_names_key_and_source(tmp_path: Path) -> None:
    write_config(tmp_path, {"concurrency_typo": 1})
    with pytest.raises(ConfigError, match="unknown option"):
        load_settings(env={}, data_dir=tmp_path)
    write_config(tmp_path, {"default_timeout_s": 100000})
    with pytest.raises(ConfigError, match=r"invalid default_timeout_s from config.json .*must be <="):
        load_settings(env={}, data_dir=tmp_path)


def test_corrupt_config_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_settings(env={}, data_dir=tmp_path)


def test_data_dir_precedence() -> None:
    assert default_data_dir({"LIVE_MEMORY_DATA_DIR": "/a", "CLAUDE_PLUGIN_DATA": "/b"}) == Path("/a")
    assert default_data_dir({"CLAUDE_PLUGIN_DATA": "/b", "XDG_DATA_HOME": "/x"}) == Path("/b")
    assert default_data_dir({"XDG_DATA_HOME": "/x"}) == Path("/x/live-memory")
    assert default_data_dir({"HOME": "/home/u"}) == Path("/home/u/.local/share/live-memory")


def test_provider_key_variable_is_used_for_its_own_endpoint(tmp_path: Path) -> None:
    settings = load_settings(env={"ANTHROPIC_API_KEY": "sk-ant-123456789"}, data_dir=tmp_path)
    assert settings.api_key == "sk-ant-123456789"
    assert settings.api_key_source == "env ANTHROPIC_API_KEY"


def test_custom_base_url_never_receives_another_providers_key(tmp_path: Path) -> None:
    env = {"LIVE_MEMORY_BASE_URL": "https://gateway.example.test", "ANTHROPIC_API_KEY": "sk-ant-secret"}
    settings = load_settings(env=env, data_dir=tmp_path)
    assert settings.api_key == ""
    env["LIVE_MEMORY_API_KEY"] = "gateway-key"
    assert load_settings(env=env, data_dir=tmp_path).api_key == "gateway-key"


def test_providers_own_base_url_variable_keeps_its_key(tmp_path: Path) -> None:
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/", "ANTHROPIC_API_KEY": "sk-ant-pair"}
    settings = load_settings(env=env, data_dir=tmp_path)
    assert settings.base_url == "http://127.0.0.1:9/"
    assert settings.api_key == "sk-ant-pair"


def test_describe_masks_secrets_and_shows_sources(tmp_path: Path) -> None:
    settings = load_settings(env={"LIVE_MEMORY_API_KEY": "sk-very-secret-9876"}, data_dir=tmp_path)
    rows = {key: (value, source) for key, value, source in settings.describe()}
    assert rows["api_key"] == ("****9876", "env LIVE_MEMORY_API_KEY")
    assert "sk-very-secret" not in repr(rows)
    assert rows["port"] == (str(C.DEFAULT_PORT), "default")
    assert {o.key for o in OPTIONS} <= set(rows)


def test_write_config_value_validates_and_persists(tmp_path: Path) -> None:
    write_config_value(tmp_path, "default_timeout_s", "42")
    assert load_settings(env={}, data_dir=tmp_path).default_timeout_s == 42.0
    assert (tmp_path / "config.json").stat().st_mode & 0o777 == 0o600
    with pytest.raises(ConfigError, match="unknown option"):
        write_config_value(tmp_path, "nope", "1")
    with pytest.raises(ConfigError, match="invalid port"):
        write_config_value(tmp_path, "port", "x")


def test_model_context_size_follows_the_model(tmp_path: Path) -> None:
    assert load_settings(env={}, data_dir=tmp_path).context_tokens == 200_000
    env = {"LIVE_MEMORY_MODEL": "claude-sonnet-4-6"}
    assert load_settings(env=env, data_dir=tmp_path).context_tokens == 1_000_000
    env["LIVE_MEMORY_MAX_CONTEXT_TOKENS"] = "50000"
    assert load_settings(env=env, data_dir=tmp_path).context_tokens == 50_000


def test_every_option_reads_as_an_attribute_of_its_declared_type(tmp_path: Path) -> None:
    write_config(tmp_path, {"port": 9001, "default_timeout_s": 30, "preload_globs": ["docs/*.md"]})
    env = {"LIVE_MEMORY_CONCURRENCY": "SERIAL", "LIVE_MEMORY_MAX_ITERATIONS": "7", "LIVE_MEMORY_WATCH": "no"}
    settings = load_settings(env=env, data_dir=tmp_path)
    hints = get_type_hints(Settings)
    for option in OPTIONS:
        assert hints[option.key] == option.type
        value = getattr(settings, option.key)
        assert conforms(value, option.type), f"{option.key}={value!r} is not a {option.type}"
    assert (settings.port, settings.default_timeout_s, settings.preload_globs) == (9001, 30.0, ("docs/*.md",))
    assert (settings.concurrency, settings.max_iterations, settings.watch) == ("serial", 7, False)


def _another_value(option: Option, index: int) -> object:
    """A valid value of `option` other than its default; numbers move by a step unique to the row, so two
    fields built from each other's values would show."""
    default = option.default
    if option.choices:
        return next(c for c in option.choices if c != default)
    if isinstance(default, bool):
        return not default
    if isinstance(default, int | float):
        step: int | float = index + 1 if isinstance(default, int) else (index + 1) / 1000
        up, down = default + step, default - step
        if option.high is None or up <= option.high:
            return up
        if option.low is None or down >= option.low:
            return down
        return option.high if option.high != default else option.low  # a narrow range: either end
    if isinstance(default, tuple):
        return (f"{option.key}-glob",)
    return f"{option.key}-text"


def test_every_option_from_the_environment_reaches_its_own_field(tmp_path: Path) -> None:
    expected = {option.key: _another_value(option, index) for index, option in enumerate(OPTIONS)}
    env = {option.env: env_text(expected[option.key]) for option in OPTIONS}
    settings = load_settings(env=env, data_dir=tmp_path)
    for option in OPTIONS:
        assert getattr(settings, option.key) == expected[option.key], option.key
        assert settings.sources[option.key] == f"env {option.env}"
    assert [o.key for o in changed_options(load_settings(env={}, data_dir=tmp_path), settings)] == [
        o.key for o in OPTIONS
    ]


def test_a_reload_builds_a_new_frozen_settings_and_leaves_the_old_one_intact(tmp_path: Path) -> None:
    before = load_settings(env={}, data_dir=tmp_path)
    write_config_value(tmp_path, "port", "9100")
    after = load_settings(env={}, data_dir=tmp_path)
    assert after is not before
    assert (before.port, after.port) == (C.DEFAULT_PORT, 9100)
    assert [o.key for o in changed_options(before, after)] == ["port"]
    with pytest.raises(FrozenInstanceError):
        after.port = 1  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        after.context_tokens = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        _ = after.no_such_option  # type: ignore[attr-defined]


def test_effective_provider_values_name_where_they_came_from(tmp_path: Path) -> None:
    settings = load_settings(env={}, data_dir=tmp_path)
    assert settings.model == "claude-haiku-4-5"
    assert settings.sources["model"] == "profile anthropic default"
    assert settings.base_url == "https://api.anthropic.com"
    assert settings.sources["base_url"] == "profile anthropic default"
    assert (settings.api_key, settings.api_key_source, settings.sources["api_key"]) == ("", "none", "default")
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "sk-ant-pair-4321"}
    settings = load_settings(env={**env, "LIVE_MEMORY_MODEL": "claude-sonnet-4-6"}, data_dir=tmp_path)
    assert settings.sources["base_url"] == "env ANTHROPIC_BASE_URL"
    assert settings.sources["api_key"] == settings.api_key_source == "env ANTHROPIC_API_KEY"
    assert settings.sources["model"] == "env LIVE_MEMORY_MODEL"
    rows = {key: (value, source) for key, value, source in settings.describe()}
    assert rows["model"] == ("claude-sonnet-4-6", "env LIVE_MEMORY_MODEL")
    assert rows["base_url"] == ("http://127.0.0.1:9", "env ANTHROPIC_BASE_URL")
    assert rows["api_key"] == ("****4321", "env ANTHROPIC_API_KEY")
    assert rows["context_tokens"] == ("1000000", "model claude-sonnet-4-6")


def test_describe_masks_options_flagged_secret_and_shows_the_rest(tmp_path: Path) -> None:
    env = {"LIVE_MEMORY_AUTH_TOKEN": "tok-private-5678", "LIVE_MEMORY_SUMMARY_MODEL": "api-key-lookalike-model"}
    settings = load_settings(env=env, data_dir=tmp_path)
    rows = {key: value for key, value, _ in settings.describe()}
    assert rows["auth_token"] == "****5678"
    assert rows["api_key"] == "(empty)"
    assert rows["summary_model"] == "api-key-lookalike-model"  # not a secret, whatever its value looks like
    assert "tok-private" not in repr(rows) and "tok-private" not in repr(settings)


def test_invalid_choice_from_config_file_lists_the_choices(tmp_path: Path) -> None:
    write_config(tmp_path, {"concurrency": "fast"})
    with pytest.raises(
        ConfigError, match=r"invalid concurrency from config.json \(.*\): expected one of parallel, serial, got 'fast'"
    ):
        load_settings(env={}, data_dir=tmp_path)
    write_config(tmp_path, {"secret_globs": [".env", 7]})
    with pytest.raises(ConfigError, match=r"invalid secret_globs from config.json .*expected a list of strings"):
        load_settings(env={}, data_dir=tmp_path)


def test_floor_above_threshold_names_both_values_and_sources(tmp_path: Path) -> None:
    write_config(tmp_path, {"compaction_threshold": 0.5})
    with pytest.raises(
        ConfigError,
        match=r"compaction_floor \(0.9, env LIVE_MEMORY_COMPACTION_FLOOR\) must not exceed compaction_threshold "
        r"\(0.5, config.json",
    ):
        load_settings(env={"LIVE_MEMORY_COMPACTION_FLOOR": "0.9"}, data_dir=tmp_path)
