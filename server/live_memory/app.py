"""The ASGI application: JSON routes, the MCP endpoint (mounted last), and the lifespan.

The lifespan enters the MCP session manager (a mounted sub-app's own lifespan never runs) and
closes the provider's HTTP client on shutdown.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from live_memory.config import Settings
from live_memory.constants import MCP_PATH
from live_memory.keep_warm import KeepWarm
from live_memory.manager import QuestionManager, Runtime, ToolFactory
from live_memory.mcp_tools import build_mcp_server
from live_memory.providers.base import ChatProvider
from live_memory.providers.factory import build_provider
from live_memory.routes import build_routes
from live_memory.security import SecurityMiddleware, SecurityPolicy, check_bind
from live_memory.tools import TOOL_SCHEMAS, Toolbox, ToolLimits

ProviderFactory = Callable[[Settings], ChatProvider | None]


def default_tool_factory(root: Path, settings: Settings) -> Toolbox:
    return Toolbox(root, ToolLimits(secret_globs=tuple(settings.secret_globs)))


class McpTrailingSlash:
    """Serve `/mcp/` as `/mcp` without a redirect (some clients do not follow 307 on POST)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") == MCP_PATH + "/":
            scope = dict(scope, path=MCP_PATH, raw_path=MCP_PATH.encode())
        await self.app(scope, receive, send)


def security_policy(settings: Settings) -> SecurityPolicy:
    return SecurityPolicy.build(
        bind_host=str(settings.host), extra_hosts=tuple(settings.allowed_hosts), token=str(settings.auth_token)
    )


def transport_security(policy: SecurityPolicy) -> TransportSecuritySettings:
    """The MCP SDK's own DNS-rebinding check, configured to match ours."""
    names = sorted(policy.allowed_hosts - {"::1"})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:*" for n in names] + names,
        allowed_origins=[f"{scheme}://{n}:*" for n in names for scheme in ("http", "https")]
        + [f"{scheme}://{n}" for n in names for scheme in ("http", "https")],
    )


def create_app(
    settings: Settings,
    provider_factory: ProviderFactory | None = None,
    tool_factory: ToolFactory | None = None,
) -> Starlette:
    check_bind(str(settings.host), str(settings.auth_token))
    policy = security_policy(settings)
    factory = provider_factory or build_provider
    provider = factory(settings)
    manager = QuestionManager(
        Runtime(settings, provider),
        tool_factory=tool_factory or default_tool_factory,
        tool_schemas=TOOL_SCHEMAS,
    )
    mcp = build_mcp_server(manager)
    mcp_app = mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        transport_security=transport_security(policy),
    )
    started_at = time.monotonic()
    keep_warm = KeepWarm(manager)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            keep_warm.start()
            try:
                yield
            finally:
                await keep_warm.stop()
                await manager.aclose()  # flushes every workspace's snapshot, then closes providers

    app = Starlette(
        routes=[*build_routes(manager, started_at, factory), Mount("/", app=mcp_app)],
        lifespan=lifespan,
    )
    app.state.manager = manager
    app.state.keep_warm = keep_warm
    app.add_middleware(McpTrailingSlash)
    app.add_middleware(SecurityMiddleware, policy=policy)  # outermost: every route, /mcp included
    return app
