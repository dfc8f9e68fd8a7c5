"""Layered configuration: env (`LIVE_MEMORY_<KEY>`) > `config.json` in the data dir > constants.

`options.Options` is the one typed table of user options (docs are generated from it). `load_settings()`
returns a frozen `Settings`: every option as a typed attribute plus what is resolved from them. It is built
from the table's resolved values, so no option is listed here: an option is a field of `Options`, nothing
more. Built from a dict, its fields escape mypy's check, so each value is checked against its field's declared
type as it is parsed (`Option.parse`). An invalid value fails with a message naming the key, its source and
what was expected. Hot reload builds a new `Settings`; nothing mutates one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from live_memory.core.errors import ConfigError
from live_memory.fs.safe_files import atomic_write, ensure_private_dir
from live_memory.providers.profiles import PROFILES, ProviderProfile, context_tokens_for
from live_memory.settings.options import CONFIG_FILE, OPTIONS, OPTIONS_BY_KEY, Options, option_values


def default_data_dir(env: Mapping[str, str]) -> Path:
    """LIVE_MEMORY_DATA_DIR, else the plugin's data dir, else $XDG_DATA_HOME/live-memory."""
    for name in ("LIVE_MEMORY_DATA_DIR", "CLAUDE_PLUGIN_DATA"):
        if env.get(name):
            return Path(env[name]).expanduser()
    xdg = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".local" / "share")
    return Path(xdg).expanduser() / "live-memory"


@dataclass(frozen=True, kw_only=True)
class Settings(Options):
    """Effective configuration: every option typed (`model`, `base_url`, `api_key` resolved to the values in
    use), plus what is derived from them. `sources[key]` says where each value came from."""

    sources: Mapping[str, str]
    data_dir: Path
    profile: ProviderProfile
    api_key_source: str  # where the credential came from; "none" when there is none
    context_tokens: int  # the window budget (max_context_tokens, else the model's context size)
    model_context_tokens: int  # the model's hard context size, as far as we know it
    env: Mapping[str, str] = field(repr=False, default_factory=dict)

    @property
    def config_file(self) -> Path:
        return self.data_dir / CONFIG_FILE

    def describe(self) -> list[tuple[str, str, str]]:
        """(key, shown value, source) rows for `config show`; secret options masked."""
        rows = [("data_dir", str(self.data_dir), self.sources.get("data_dir", "default"))]
        for option, value in option_values(self):
            shown = (_mask(str(value)) or "(empty)") if option.secret else _show(value)
            rows.append((option.key, shown, self.sources[option.key]))
        budget_source = "max_context_tokens" if self.max_context_tokens else f"model {self.model}"
        rows.append(("context_tokens", str(self.context_tokens), budget_source))
        return rows


def _show(value: object) -> str:
    if isinstance(value, tuple):
        return ",".join(value) or "(empty)"
    if value == "":
        return "(empty)"
    return str(value)


def _mask(secret: str) -> str:
    if not secret:
        return ""
    return "****" + secret[-4:] if len(secret) > 8 else "****"


def read_config_file(path: Path) -> dict[str, object]:
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


def layered_values(env: Mapping[str, str], config_file: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """Each option's value from the first layer that has it (env > config.json > default), parsed by its row
    (so of its field's declared type, checked at run time: `Settings` is built from this dict), and where it
    came from."""
    file_values = read_config_file(config_file)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for option in OPTIONS:
        raw: object
        if option.env in env:
            raw, source = env[option.env], f"env {option.env}"
        elif option.file_allowed and option.key in file_values:
            raw, source = file_values[option.key], f"{CONFIG_FILE} ({config_file})"
        else:
            values[option.key], sources[option.key] = option.default, "default"  # checked at import
            continue
        try:
            values[option.key] = option.parse(raw)
        except ValueError as exc:
            raise ConfigError(f"invalid {option.key} from {source}: {exc}") from None
        sources[option.key] = source
    return values, sources


def load_settings(env: Mapping[str, str] | None = None, data_dir: Path | None = None) -> Settings:
    env = dict(os.environ if env is None else env)
    sources: dict[str, str] = {}
    if data_dir is None:
        data_dir = default_data_dir(env)
        sources["data_dir"] = "env" if env.get("LIVE_MEMORY_DATA_DIR") else "default"
    else:
        sources["data_dir"] = "argument"
    values, option_sources = layered_values(env, data_dir / CONFIG_FILE)
    sources.update(option_sources)
    options = Options(**values)  # typed reads for the checks and the endpoint below
    _check_relations(options, sources)
    endpoint = _resolve_endpoint(options, sources, env)
    return Settings(
        **values | endpoint.resolved(),
        sources=sources,
        data_dir=data_dir,
        profile=endpoint.profile,
        api_key_source=endpoint.api_key_source,
        context_tokens=endpoint.context_tokens,
        model_context_tokens=endpoint.model_context_tokens,
        env=env,
    )


def _check_relations(options: Options, sources: Mapping[str, str]) -> None:
    floor, threshold = options.compaction_floor, options.compaction_threshold
    if floor > threshold:
        raise ConfigError(
            f"compaction_floor ({floor}, {sources['compaction_floor']}) must not exceed "
            f"compaction_threshold ({threshold}, {sources['compaction_threshold']})"
        )


@dataclass(frozen=True)
class _Endpoint:
    """The provider values in use: `model`, `base_url` and `api_key` resolved against the profile."""

    profile: ProviderProfile
    base_url: str
    api_key: str
    api_key_source: str  # "none" when there is no credential
    model: str
    context_tokens: int  # the window budget
    model_context_tokens: int  # the model's hard context size, as far as we know it (at least the budget)

    def resolved(self) -> dict[str, str]:
        """The options whose configured values this resolution replaces by the values in use."""
        return {"base_url": self.base_url, "api_key": self.api_key, "model": self.model}


def _resolve_endpoint(options: Options, sources: dict[str, str], env: Mapping[str, str]) -> _Endpoint:
    """Resolve model, base_url and api_key to the values in use; their sources say where those came from."""
    profile = PROFILES[options.provider]
    profile_default = f"profile {profile.name} default"
    own_base_url = True
    if base_url := options.base_url:
        own_base_url = base_url.rstrip("/") == profile.base_url.rstrip("/")
    elif profile.base_url_env and env.get(profile.base_url_env):
        # The provider's own pair (e.g. ANTHROPIC_BASE_URL + ANTHROPIC_API_KEY) belongs together.
        base_url, sources["base_url"] = env[profile.base_url_env], f"env {profile.base_url_env}"
        if profile.name == "ollama" and not base_url.startswith("http"):
            base_url = f"http://{base_url}"
        if profile.name == "ollama":
            base_url = base_url.rstrip("/") + ("" if base_url.rstrip("/").endswith("/v1") else "/v1")
    else:
        base_url, sources["base_url"] = profile.base_url, profile_default
    if not base_url:
        raise ConfigError(
            f"provider {profile.name!r} has no default endpoint: set LIVE_MEMORY_BASE_URL "
            "(env) or base_url (config.json)"
        )
    api_key, key_source = "", "none"
    if configured_key := options.api_key:
        api_key, key_source = configured_key, sources["api_key"]
    elif own_base_url:
        for name in profile.key_envs:
            if env.get(name):
                api_key, key_source = env[name], f"env {name}"
                sources["api_key"] = key_source
                break
    model = options.model
    if not model:
        model, sources["model"] = profile.default_model, profile_default
    model_context = context_tokens_for(model, profile)
    context = options.max_context_tokens or model_context
    return _Endpoint(profile, base_url, api_key, key_source, model, context, max(model_context, context))


def file_value(key: str, raw: object) -> object:
    """`raw` cast by `key`'s option, for config.json; a ConfigError names what is wrong (an unknown key,
    an option only the environment may set, a bad value)."""
    option = OPTIONS_BY_KEY.get(key)
    if option is None:
        raise ConfigError(f"unknown option {key!r}; `live-memory config show` lists them")
    if not option.file_allowed:
        raise ConfigError(f"{key} can only be set in the server's environment ({option.env})")
    try:
        return option.parse(raw)
    except ValueError as exc:
        raise ConfigError(f"invalid {key}: {exc}") from None


def write_config_value(data_dir: Path, key: str, raw: str) -> dict[str, object]:
    """Validate `key=raw` and store it in config.json (used by `config set` and the plugin command)."""
    value = file_value(key, raw)
    path = data_dir / CONFIG_FILE
    current = read_config_file(path)
    current[key] = list(value) if isinstance(value, tuple) else value
    ensure_private_dir(data_dir)
    atomic_write(path, (json.dumps(current, indent=2, sort_keys=True) + "\n").encode("utf-8"), mode=0o600)
    return current
