"""`POST /config`'s work: validate `{key: value}` with the options table, merge it into the server's own
config.json (atomic, private, undoable), and say per key whether it applied, waits for a restart, or is
overridden by the environment."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from live_memory.core.errors import ConfigError
from live_memory.http.config_update import outcome, restore, shown_values, validate_changes, write_changes
from live_memory.settings.config import Settings, load_settings


def settings(data_dir: Path, **env: str) -> Settings:
    return load_settings(env={"HOME": str(data_dir.parent), **env}, data_dir=data_dir)


def test_values_are_cast_by_their_options() -> None:
    values = validate_changes({"max_iterations": "30", "keep_warm": "true", "file_globs": "*.py, *.md"})
    assert values == {"max_iterations": 30, "keep_warm": True, "file_globs": ("*.py", "*.md")}


def test_an_empty_change_says_what_to_send() -> None:
    with pytest.raises(ConfigError) as caught:
        validate_changes({})
    assert str(caught.value) == 'nothing to set: send {"key": value}, e.g. {"max_iterations": 30}'


def test_an_unknown_key_points_at_the_list_of_options() -> None:
    with pytest.raises(ConfigError) as caught:
        validate_changes({"max_iterations": 5, "max_iteratoins": 5})
    assert str(caught.value) == "unknown option 'max_iteratoins'; `live-memory config show` lists them"


def test_a_bad_value_names_its_key_and_nothing_is_returned() -> None:
    with pytest.raises(ConfigError, match=r"^invalid port: "):
        validate_changes({"max_iterations": 5, "port": "seventy"})


def test_a_first_write_creates_a_private_file_and_reports_there_was_none(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    before = write_changes(data_dir, {"max_iterations": 30, "file_globs": ("*.py",)})
    path = data_dir / "config.json"
    assert before is None
    assert json.loads(path.read_text()) == {"file_globs": ["*.py"], "max_iterations": 30}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700


def test_a_write_merges_into_the_file_and_returns_its_previous_bytes(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    write_changes(data_dir, {"max_iterations": 30, "log_level": "debug"})
    previous = (data_dir / "config.json").read_bytes()
    assert write_changes(data_dir, {"max_iterations": 12}) == previous
    assert json.loads((data_dir / "config.json").read_text()) == {"log_level": "debug", "max_iterations": 12}


def test_restore_puts_the_previous_file_back_or_removes_a_new_one(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    created = write_changes(data_dir, {"max_iterations": 30})
    previous = (data_dir / "config.json").read_bytes()
    rolled_back = write_changes(data_dir, {"compaction_floor": 0.99})
    restore(data_dir, rolled_back)
    assert (data_dir / "config.json").read_bytes() == previous
    restore(data_dir, created)
    assert not (data_dir / "config.json").exists()


def test_a_corrupt_file_is_not_overwritten(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "config.json").write_text("{not json")
    with pytest.raises(ConfigError):
        write_changes(data_dir, {"max_iterations": 30})
    assert (data_dir / "config.json").read_text() == "{not json"


def test_a_written_key_is_applied_when_nothing_stands_in_its_way(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    running = settings(data_dir)
    write_changes(data_dir, {"max_iterations": 7})
    report = outcome({"max_iterations": 7}, running, settings(data_dir))
    assert report == {"applied": ["max_iterations"], "deferred": [], "overridden": [], "warnings": []}


def test_a_changed_option_read_at_start_waits_for_the_next_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    running = settings(data_dir)
    write_changes(data_dir, {"port": 7799, "log_level": running.log_level})
    report = outcome({"port": 7799, "log_level": running.log_level}, running, settings(data_dir))
    assert report["deferred"] == [{"key": "port", "message": "port takes effect at the next start of the server"}]
    assert report["applied"] == ["log_level"]  # unchanged: nothing to wait for


def test_an_environment_variable_wins_over_the_file_and_the_client_is_told(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {"LIVE_MEMORY_MAX_ITERATIONS": "9"}
    running = settings(data_dir, **env)
    write_changes(data_dir, {"max_iterations": 30})
    report = outcome({"max_iterations": 30}, running, settings(data_dir, **env))
    message = (
        "LIVE_MEMORY_MAX_ITERATIONS is set in the server's environment and overrides config.json: "
        "max_iterations stays 9"
    )
    assert report["overridden"] == [{"key": "max_iterations", "env": "LIVE_MEMORY_MAX_ITERATIONS", "message": message}]
    assert report["warnings"] == [message] and report["applied"] == []


def test_shown_values_mask_secrets(tmp_path: Path) -> None:
    shown = shown_values(settings(tmp_path / "data", LIVE_MEMORY_AUTH_TOKEN="tok-abcdef-1234"))
    assert "tok-abcdef" not in json.dumps(shown)
    assert shown["auth_token"].endswith("1234")
