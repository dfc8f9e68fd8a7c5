"""Who may talk to the server: Host/Origin allow-lists, the optional bearer token, bind rules.

Applied as one ASGI middleware to every route, `/mcp` included (the MCP SDK's own check covers
`/mcp` only, so a DNS-rebinding page could otherwise POST to `/notify`). `/health` stays open to
token-less probes but still needs an allowed Host. Errors are JSON with a precise status:
421 wrong Host, 403 foreign Origin, 401 missing or wrong token.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from live_memory.errors import ConfigError

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")
OPEN_PATHS = frozenset({"/health"})


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_NAMES or host.startswith("127.")


@dataclass(frozen=True)
class SecurityPolicy:
    allowed_hosts: frozenset[str]  # host names (without port) accepted in Host and Origin
    token: str = ""

    @classmethod
    def build(cls, *, bind_host: str, extra_hosts: Sequence[str], token: str) -> SecurityPolicy:
        names = {"127.0.0.1", "localhost", "[::1]", "::1"}
        if bind_host and bind_host not in ("0.0.0.0", "::"):
            names.add(bind_host)
        names.update(h.strip().lower() for h in extra_hosts if h.strip())
        return cls(frozenset(names), token)

    def host_allowed(self, host_header: str) -> bool:
        host = host_header.strip().lower()
        if host.startswith("["):  # [::1]:7711
            name = host.split("]")[0] + "]"
        else:
            name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
        return name in self.allowed_hosts

    def origin_allowed(self, origin: str) -> bool:
        scheme, sep, rest = origin.partition("://")
        if not sep or scheme not in ("http", "https"):
            return False
        return self.host_allowed(rest.split("/")[0])

    def token_ok(self, authorization: str) -> bool:
        if not self.token:
            return True
        scheme, _, value = authorization.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode())


def check_bind(host: str, token: str) -> None:
    """A non-loopback bind exposes every repository the server can read: require a token."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"refusing to listen on {host!r} without LIVE_MEMORY_AUTH_TOKEN: anyone who can reach the port could "
            "read your repositories. Set a token (clients send it as 'Authorization: Bearer <token>') or bind "
            "127.0.0.1."
        )


class SecurityMiddleware:
    def __init__(self, app: ASGIApp, policy: SecurityPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        problem = self._check(scope.get("path", ""), headers)
        if problem is None:
            await self.app(scope, receive, send)
            return
        status, message, extra = problem
        body = json.dumps({"error": message, "detail": None}).encode()
        response_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        response_headers += extra
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": body})

    def _check(self, path: str, headers: dict[str, str]) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        if not self.policy.host_allowed(headers.get("host", "")):
            return 421, "invalid Host header: this server only answers on its own address (DNS rebinding guard)", []
        origin = headers.get("origin")
        if origin is not None and origin != "null" and not self.policy.origin_allowed(origin):
            return 403, f"origin {origin!r} is not allowed", []
        if origin == "null":
            return 403, "opaque origins are not allowed", []
        if path not in OPEN_PATHS and not self.policy.token_ok(headers.get("authorization", "")):
            challenge = [(b"www-authenticate", b'Bearer error="invalid_token"')]
            return 401, "missing or wrong bearer token (Authorization: Bearer <LIVE_MEMORY_AUTH_TOKEN>)", challenge
        return None
