"""Zero-config fallback: Claude Code's subscription credential, read-only.

Used only when no API key is configured and `LIVE_MEMORY_OAUTH` is not 0. Safety rules:
- Claude Code's credential file is read, never written.
- An expired token is first re-read from that file (Claude Code refreshes it itself).
- Refreshing with the refresh token happens only with `LIVE_MEMORY_OAUTH_REFRESH=1`, and the
  result is kept in our own data dir (refreshing rotates the token, which can sign Claude Code out).
Anthropic's terms restrict third-party use of subscription credentials; the README says so.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2

from live_memory.constants import (
    OAUTH_CLIENT_ID,
    OAUTH_CREDENTIALS_FILE,
    OAUTH_EXPIRY_MARGIN_S,
    OAUTH_TOKEN_URL,
)
from live_memory.core.errors import AuthError
from live_memory.fs.safe_files import atomic_write, ensure_private_dir

if TYPE_CHECKING:
    from anthropic.lib.credentials import AccessToken

OWN_COPY = "oauth-credential.json"


@dataclass(frozen=True)
class StoredCredential:
    access_token: str
    refresh_token: str
    expires_at_s: float  # unix seconds; 0 when unknown

    def fresh(self, now: float) -> bool:
        return not self.expires_at_s or self.expires_at_s - OAUTH_EXPIRY_MARGIN_S > now


def claude_credentials_path(env: Mapping[str, str]) -> Path:
    base = env.get("CLAUDE_CONFIG_DIR") or str(Path(env.get("HOME", str(Path.home()))) / ".claude")
    return Path(base).expanduser() / OAUTH_CREDENTIALS_FILE


def read_credential(path: Path) -> StoredCredential | None:
    """Parse Claude Code's credential file; None when absent or unusable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    block = data.get("claudeAiOauth", data) if isinstance(data, dict) else None
    if not isinstance(block, dict) or not isinstance(block.get("accessToken"), str):
        return None
    expires = block.get("expiresAt") or 0
    return StoredCredential(
        access_token=block["accessToken"],
        refresh_token=str(block.get("refreshToken") or ""),
        expires_at_s=float(expires) / 1000.0 if isinstance(expires, int | float) else 0.0,
    )


def _write_own_copy(path: Path, credential: StoredCredential) -> None:
    payload = {
        "claudeAiOauth": {
            "accessToken": credential.access_token,
            "refreshToken": credential.refresh_token,
            "expiresAt": int(credential.expires_at_s * 1000),
        }
    }
    ensure_private_dir(path.parent)
    atomic_write(path, json.dumps(payload).encode("utf-8"), mode=0o600)


class SubscriptionCredential:
    """An async access-token provider for `AsyncAnthropic(credentials=...)`."""

    def __init__(
        self,
        claude_file: Path,
        data_dir: Path,
        *,
        refresh: bool,
        token_url: str = OAUTH_TOKEN_URL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._claude_file = claude_file
        self._own_copy = data_dir / OWN_COPY
        self._refresh = refresh
        self._token_url = token_url
        self._clock = clock
        self._current: StoredCredential | None = None
        self._lock = asyncio.Lock()

    @classmethod
    def discover(cls, env: Mapping[str, str], data_dir: Path, *, refresh: bool) -> SubscriptionCredential | None:
        path = claude_credentials_path(env)
        if read_credential(path) is None and read_credential(data_dir / OWN_COPY) is None:
            return None
        return cls(path, data_dir, refresh=refresh)

    def _best_on_disk(self) -> StoredCredential | None:
        candidates = [c for c in (read_credential(self._claude_file), read_credential(self._own_copy)) if c]
        return max(candidates, key=lambda c: c.expires_at_s, default=None)

    async def __call__(self, *, force_refresh: bool = False) -> AccessToken:
        async with self._lock:
            now = self._clock()
            if force_refresh or self._current is None or not self._current.fresh(now):
                self._current = await asyncio.to_thread(self._best_on_disk)
            if self._current is None:
                raise AuthError("the Claude subscription credential file disappeared; configure an API key")
            if not self._current.fresh(now) and self._refresh and self._current.refresh_token:
                self._current = await self._refresh_token(self._current)
            from anthropic.lib.credentials import AccessToken  # the SDK calling us has loaded it

            # expires_at=0: the SDK asks again before every request and we answer from memory.
            return AccessToken(token=self._current.access_token, expires_at=0)

    async def _refresh_token(self, stale: StoredCredential) -> StoredCredential:
        body: dict[str, Any] = {
            "grant_type": "refresh_token",
            "refresh_token": stale.refresh_token,
            "client_id": OAUTH_CLIENT_ID,
        }
        async with httpx2.AsyncClient(timeout=15.0) as client:
            response = await client.post(self._token_url, json=body)
        if response.status_code != 200:
            raise AuthError(
                f"refreshing the subscription credential failed (HTTP {response.status_code}); "
                "run Claude Code once to refresh it, or configure an API key"
            )
        data = response.json()
        fresh = StoredCredential(
            access_token=str(data["access_token"]),
            refresh_token=str(data.get("refresh_token") or stale.refresh_token),
            expires_at_s=self._clock() + float(data.get("expires_in") or 3600),
        )
        await asyncio.to_thread(_write_own_copy, self._own_copy, fresh)
        return fresh
