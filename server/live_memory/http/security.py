"""Who may talk to the server: Host/Origin allow-lists, the optional bearer token, bind rules.

Applied as one ASGI middleware to every route, `/mcp` included (the MCP SDK's own check covers
`/mcp` only, so a DNS-rebinding page could otherwise POST to `/notify`). `/health` stays open to
token-less probes but still needs an allowed Host. Errors are JSON with a precise status:
421 wrong Host, 403 foreign Origin, 401 missing or wrong token.

Host and Origin are parsed strictly: exactly one header each (a repeated one is refused, since
parsers disagree on which copy counts: ours and the MCP SDK's must see the same), the host exactly
as allowed (case aside; IPv6 in brackets), then nothing but an optional numeric port; an Origin is
`http(s)://` and that, nothing more. "127.0.0.1:80.evil.example", "[::1]evil.example" or
"localhost:80@evil.example" are refused rather than cut down to an allowed prefix.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from live_memory.core.errors import ConfigError

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")
OPEN_PATHS = frozenset({"/health"})
_PORT = re.compile(r"[0-9]{1,5}")
_SCHEMES = ("http://", "https://")


def split_authority(value: str) -> tuple[str, int | None] | None:
    """Split a Host header value (or an Origin's authority) into (lower-cased host, port or None).

    Accepted: `name`, `name:port`, `[v6]`, `[v6]:port`, with a port of 1-5 digits up to 65535 and no
    other character anywhere (no spaces, user info, path, or text after the host). None otherwise.
    """
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
        if "[" in name[1:]:
            return None
    else:
        name, colon, port_text = value.partition(":")
        rest = colon + port_text
        if "[" in name or "]" in name:
            return None
    if not name or any(c.isspace() or c in "@/\\?#," for c in name):
        return None
    if not rest:
        return name.lower(), None
    if not rest.startswith(":") or _PORT.fullmatch(rest[1:]) is None or not 0 < int(rest[1:]) <= 65535:
        return None
    return name.lower(), int(rest[1:])


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
            names.add(bind_host.lower())
        names.update(h.strip().lower() for h in extra_hosts if h.strip())
        # An IPv6 address appears in brackets in Host and Origin headers.
        names.update(f"[{n}]" for n in list(names) if ":" in n and not n.startswith("["))
        return cls(frozenset(names), token)

    def host_allowed(self, host_header: str) -> bool:
        """Whether one Host header value names an allowed host (see `split_authority`)."""
        parsed = split_authority(host_header)
        return parsed is not None and parsed[0] in self.allowed_hosts

    def origin_allowed(self, origin: str) -> bool:
        """Whether one Origin header value is `http(s)://<allowed host>[:port]` exactly."""
        lowered = origin.lower()
        scheme = next((s for s in _SCHEMES if lowered.startswith(s)), None)
        return scheme is not None and self.host_allowed(origin[len(scheme) :])

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
        headers: dict[str, list[str]] = {}
        for key, value in scope.get("headers", []):
            headers.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
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

    def _check(self, path: str, headers: dict[str, list[str]]) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        hosts = headers.get("host", [])
        if len(hosts) > 1:
            return 421, "more than one Host header: send exactly one (DNS rebinding guard)", []
        if not hosts or not self.policy.host_allowed(hosts[0]):
            return 421, "invalid Host header: this server only answers on its own address (DNS rebinding guard)", []
        origins = headers.get("origin", [])
        if len(origins) > 1:
            return 403, "more than one Origin header: send at most one", []
        origin = origins[0] if origins else None
        if origin == "null":
            return 403, "opaque origins are not allowed", []
        if origin is not None and not self.policy.origin_allowed(origin):
            return 403, f"origin {origin[:200]!r} is not allowed", []
        if path not in OPEN_PATHS and not self._token_ok(headers.get("authorization", [""])):
            challenge = [(b"www-authenticate", b'Bearer error="invalid_token"')]
            return 401, "missing or wrong bearer token (Authorization: Bearer <LIVE_MEMORY_AUTH_TOKEN>)", challenge
        return None

    def _token_ok(self, values: list[str]) -> bool:
        if not self.policy.token:
            return True
        return len(values) == 1 and self.policy.token_ok(values[0])  # a repeated header is refused too
