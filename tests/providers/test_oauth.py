"""The subscription credential fallback: read-only on Claude Code's file, opt-in refresh, clear failures."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from live_memory.core.errors import AuthError
from live_memory.core.messages import ChatRequest, Message, TextPart
from live_memory.providers.base import ChatProvider
from live_memory.providers.oauth import OWN_COPY, SubscriptionCredential
from live_memory.settings.config import load_settings
from live_memory.settings.provider_factory import build_provider
from live_memory.testing.live_server import LiveServer
from live_memory.testing.llm_server import FakeLLM, Reply


def write_credential(home: Path, token: str, *, expires_in_s: float, refresh: str = "rt-1") -> Path:
    path = home / ".claude" / ".credentials.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "claudeAiOauth": {
            "accessToken": token,
            "refreshToken": refresh,
            "expiresAt": int((time.time() + expires_in_s) * 1000),
        }
    }
    path.write_text(json.dumps(payload))
    return path


def ask() -> ChatRequest:
    return ChatRequest(system=(TextPart("s"),), messages=(Message("user", (TextPart("q"),)),), max_tokens=64)


async def test_subscription_credential_is_used_when_no_key_is_configured(tmp_path: Path) -> None:
    credential_file = write_credential(tmp_path, "sk-ant-oat01-abc", expires_in_s=3600)
    before = credential_file.read_bytes()
    with FakeLLM() as fake:
        fake.script(Reply.text("hi"))
        env = {"HOME": str(tmp_path), "ANTHROPIC_BASE_URL": fake.base_url}
        provider = await asyncio.to_thread(lambda: build_provider(load_settings(env=env, data_dir=tmp_path / "data")))
        assert provider is not None and provider.info.subscription
        try:
            await provider.chat(ask())
        finally:
            await provider.aclose()
    headers = fake.requests[0].headers
    assert headers["authorization"] == "Bearer sk-ant-oat01-abc"
    assert "oauth-2025-04-20" in headers["anthropic-beta"]
    assert "x-api-key" not in headers
    assert credential_file.read_bytes() == before  # never written


async def test_opting_out_or_an_api_key_skips_the_subscription_credential(tmp_path: Path) -> None:
    write_credential(tmp_path, "sk-ant-oat01-abc", expires_in_s=3600)

    def provider_for(env: dict[str, str]) -> ChatProvider | None:
        return build_provider(load_settings(env={"HOME": str(tmp_path), **env}, data_dir=tmp_path / "d"))

    assert await asyncio.to_thread(provider_for, {"LIVE_MEMORY_OAUTH": "0"}) is None
    provider = await asyncio.to_thread(provider_for, {"ANTHROPIC_API_KEY": "sk-ant-key"})
    assert provider is not None and not provider.info.subscription
    await provider.aclose()


async def test_claude_config_dir_is_honoured(tmp_path: Path) -> None:
    write_credential(tmp_path / "alt", "sk-ant-oat01-alt", expires_in_s=3600)
    env = {"HOME": str(tmp_path / "nohome"), "CLAUDE_CONFIG_DIR": str(tmp_path / "alt" / ".claude")}
    credential = await asyncio.to_thread(SubscriptionCredential.discover, env, tmp_path / "data", refresh=False)
    assert credential is not None
    assert (await credential()).token == "sk-ant-oat01-alt"


async def test_expired_token_is_re_read_from_claude_codes_file(tmp_path: Path) -> None:
    write_credential(tmp_path, "old-token", expires_in_s=-10)
    credential = await asyncio.to_thread(
        SubscriptionCredential.discover, {"HOME": str(tmp_path)}, tmp_path / "data", refresh=False
    )
    assert credential is not None
    assert (await credential()).token == "old-token"  # no refresh without opt-in: the endpoint decides
    write_credential(tmp_path, "new-token", expires_in_s=3600)  # Claude Code refreshed it meanwhile
    assert (await credential()).token == "new-token"
    assert not (tmp_path / "data" / OWN_COPY).exists()


async def test_opt_in_refresh_persists_to_our_data_dir_only(tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []

    async def token_endpoint(request: Request) -> JSONResponse:
        seen.append(await request.json())
        return JSONResponse({"access_token": "refreshed", "refresh_token": "rt-2", "expires_in": 3600})

    claude_file = write_credential(tmp_path, "expired", expires_in_s=-10, refresh="rt-1")
    before = claude_file.read_bytes()
    with LiveServer(Starlette(routes=[Route("/token", token_endpoint, methods=["POST"])])) as server:
        credential = SubscriptionCredential(
            claude_file, tmp_path / "data", refresh=True, token_url=f"{server.url}/token"
        )
        assert (await credential()).token == "refreshed"
    assert seen[0]["grant_type"] == "refresh_token" and seen[0]["refresh_token"] == "rt-1"
    own = tmp_path / "data" / OWN_COPY
    assert own.stat().st_mode & 0o777 == 0o600
    assert json.loads(own.read_text())["claudeAiOauth"]["refreshToken"] == "rt-2"
    assert claude_file.read_bytes() == before


async def test_rejected_subscription_credential_says_how_to_configure_a_key(tmp_path: Path) -> None:
    write_credential(tmp_path, "sk-ant-oat01-abc", expires_in_s=3600)
    with FakeLLM() as fake:
        fake.script(Reply.error(401, "OAuth authentication is currently not supported."))
        env = {"HOME": str(tmp_path), "ANTHROPIC_BASE_URL": fake.base_url}
        provider = await asyncio.to_thread(lambda: build_provider(load_settings(env=env, data_dir=tmp_path / "data")))
        assert provider is not None
        try:
            await provider.chat(ask())
        except AuthError as exc:
            message = str(exc)
        finally:
            await provider.aclose()
    assert "LIVE_MEMORY_API_KEY" in message and "LIVE_MEMORY_OAUTH=0" in message
