"""Layered configuration: env (`LIVE_MEMORY_<KEY>`) > `config.json` in the data dir > constants.

`OPTIONS` is the one reference table of user options (docs are generated from it). `load_settings()`
returns a frozen `Settings`; an invalid value fails with a message naming the key and its source.
Hot reload builds a new `Settings`; nothing mutates one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from live_memory.errors import ConfigError
from live_memory.options import CONFIG_FILE, OPTIONS, OPTIONS_BY_KEY
from live_memory.providers.profiles import PROFILES, ProviderProfile, context_tokens_for


def default_data_dir(env: Mapping[str, str]) -> Path:
    """LIVE_MEMORY_DATA_DIR, else the plugin's data dir, else $XDG_DATA_HOME/live-memory."""
    for name in ("LIVE_MEMORY_DATA_DIR", "CLAUDE_PLUGIN_DATA"):
        if env.get(name):
            return Path(env[name]).expanduser()
    xdg = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".local" / "share")
    return Path(xdg).expanduser() / "live-memory"


@dataclass(frozen=True)
class Settings:
    """Effective configuration. `sources[key]` says where each value came from."""

    values: Mapping[str, Any]
    sources: Mapping[str, str]
    data_dir: Path
    profile: ProviderProfile
    model: str
    base_url: str
    api_key: str  # resolved credential (may come from a provider variable); "" when none
    api_key_source: str
    context_tokens: int  # the window budget (max_context_tokens, else the model's context size)
    model_context_tokens: int  # the model's hard context size, as far as we know it
    env: Mapping[str, str] = field(repr=False, default_factory=dict)

    def __getattr__(self, key: str) -> Any:
        # Options read as attributes: settings.port, settings.default_timeout_s, ...
        values = object.__getattribute__(self, "values")
        if key in values:
            return values[key]
        raise AttributeError(key)

    @property
    def config_file(self) -> Path:
        return self.data_dir / CONFIG_FILE

    def describe(self) -> list[tuple[str, str, str]]:
        """(key, shown value, source) rows for `config show`; secrets masked."""
        rows = [("data_dir", str(self.data_dir), self.sources.get("data_dir", "default"))]
        for option in OPTIONS:
            value = self.values[option.key]
            shown = _mask(str(value)) if option.secret else _show(value)
            rows.append((option.key, shown, self.sources[option.key]))
        rows.append(("effective model", self.model, "resolved"))
        rows.append(("effective base_url", self.base_url or "(none)", "resolved"))
        rows.append(("effective credential", _mask(self.api_key) or "(none)", self.api_key_source))
        rows.append(("effective context_tokens", str(self.context_tokens), "resolved"))
        return rows


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(value) or "(empty)"
    if value == "":
        return "(empty)"
    return str(value)


def _mask(secret: str) -> str:
    if not secret:
        return ""
    return "****" + secret[-4:] if len(secret) > 8 else "****"


def read_config_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(OPTIONS_BY_KEY))
    if unknown:
        raise ConfigError(f"{path}: unknown option(s) {', '.join(unknown)}; see `live-memory config show`")
    return data


def load_settings(env: Mapping[str, str] | None = None, data_dir: Path | None = None) -> Settings:
    env = dict(os.environ if env is None else env)
    sources: dict[str, str] = {}
    if data_dir is None:
        data_dir = default_data_dir(env)
        sources["data_dir"] = "env" if env.get("LIVE_MEMORY_DATA_DIR") else "default"
    else:
        sources["data_dir"] = "argument"
    file_values = read_config_file(data_dir / CONFIG_FILE)
    values: dict[str, Any] = {}
    for option in OPTIONS:
        raw: Any
        if option.env in env:
            raw, source = env[option.env], f"env {option.env}"
        elif option.file_allowed and option.key in file_values:
            raw, source = file_values[option.key], f"config.json ({data_dir / CONFIG_FILE})"
        else:
            values[option.key], sources[option.key] = option.default, "default"
            continue
        try:
            values[option.key] = option.cast(option.key, raw)
        except ValueError as exc:
            raise ConfigError(f"invalid {option.key} from {source}: {exc}") from None
        sources[option.key] = source
    _check_relations(values, sources)
    return _resolve_provider(values, sources, data_dir, env)


def _check_relations(values: Mapping[str, Any], sources: Mapping[str, str]) -> None:
    if values["compaction_floor"] > values["compaction_threshold"]:
        raise ConfigError(
            f"compaction_floor ({values['compaction_floor']}, {sources['compaction_floor']}) must not exceed "
            f"compaction_threshold ({values['compaction_threshold']}, {sources['compaction_threshold']})"
        )


def _resolve_provider(
    values: dict[str, Any], sources: dict[str, str], data_dir: Path, env: Mapping[str, str]
) -> Settings:
    profile = PROFILES[values["provider"]]
    own_base_url = True
    if values["base_url"]:
        base_url = values["base_url"]
        own_base_url = base_url.rstrip("/") == profile.base_url.rstrip("/")
    elif profile.base_url_env and env.get(profile.base_url_env):
        # The provider's own pair (e.g. ANTHROPIC_BASE_URL + ANTHROPIC_API_KEY) belongs together.
        base_url = env[profile.base_url_env]
        if profile.name == "ollama" and not base_url.startswith("http"):
            base_url = f"http://{base_url}"
        if profile.name == "ollama":
            base_url = base_url.rstrip("/") + ("" if base_url.rstrip("/").endswith("/v1") else "/v1")
    else:
        base_url = profile.base_url
    if not base_url:
        raise ConfigError(
            f"provider {profile.name!r} has no default endpoint: set LIVE_MEMORY_BASE_URL "
            "(env) or base_url (config.json)"
        )
    api_key, key_source = "", "none"
    if values["api_key"]:
        api_key, key_source = values["api_key"], sources["api_key"]
    elif own_base_url:
        for name in profile.key_envs:
            if env.get(name):
                api_key, key_source = env[name], f"env {name}"
                break
    model = values["model"] or profile.default_model
    model_context = context_tokens_for(model, profile)
    context = values["max_context_tokens"] or model_context
    return Settings(
        values=values,
        sources=sources,
        data_dir=data_dir,
        profile=profile,
        model=model,
        base_url=base_url,
        api_key=api_key,
        api_key_source=key_source,
        context_tokens=context,
        model_context_tokens=max(model_context, context),
        env=env,
    )


def write_config_value(data_dir: Path, key: str, raw: str) -> dict[str, Any]:
    """Validate `key=raw` and store it in config.json (used by `config set` and the plugin command)."""
    option = OPTIONS_BY_KEY.get(key)
    if option is None:
        raise ConfigError(f"unknown option {key!r}; known: {', '.join(OPTIONS_BY_KEY)}")
    if not option.file_allowed:
        raise ConfigError(f"{key} can only be set in the environment ({option.env})")
    try:
        value = option.cast(key, raw)
    except ValueError as exc:
        raise ConfigError(f"invalid {key}: {exc}") from None
    path = data_dir / CONFIG_FILE
    current = read_config_file(path)
    current[key] = list(value) if isinstance(value, tuple) else value
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.chmod(0o600)
    os.replace(tmp, path)
    return current
