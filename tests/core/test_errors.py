"""The one exception tree: which failures are worth retrying, what each carries, and that every
expected error reaches an MCP client as its own message (an error result, never a traceback)."""

from __future__ import annotations

import builtins
import re
from pathlib import Path

import pytest
from mcp import Client

from live_memory.core import errors
from live_memory.core.messages import ChatRequest, ChatResponse
from live_memory.http.jobs import JobRegistry
from live_memory.http.mcp_tools import build_mcp_server
from live_memory.http.shutdown import StopSignal
from live_memory.providers.base import ChatProvider
from live_memory.testing.scripted_provider import ScriptedProvider
from tests.fakes.engine import engine_for

PREFIX = "Error executing tool ask_live_memory: "


def drawn_tree() -> dict[str, tuple[str, ...]]:
    """Each class in the tree the errors module's docstring draws, with its bases: the drawn parent, then the
    builtin named in brackets after it, if any."""
    bases: dict[str, tuple[str, ...]] = {}
    path: list[str] = []  # the classes from the root down to the last one drawn
    for line in (errors.__doc__ or "").splitlines():
        drawn = re.match(r"^((?:[│ ]   )*[├└]── )?(\w+)(?:\s{2,}(?:\((\w+)\))?|$)", line)  # the root, or a branch
        if drawn is None:
            continue
        depth = len(drawn.group(1) or "") // 4
        del path[depth:]
        if path:
            bases[drawn.group(2)] = (path[-1], *([drawn.group(3)] if drawn.group(3) else []))
        path.append(drawn.group(2))
    return bases


def test_every_error_sits_where_the_module_docstring_draws_it_under_one_root() -> None:
    bases = drawn_tree()
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == errors.__name__
    }
    assert set(bases) | {"LiveMemoryError"} == defined
    assert errors.LiveMemoryError.__bases__ == (Exception,)
    for name, drawn in bases.items():  # under the root, some with a builtin beside it that says how it is treated
        expected = tuple(getattr(errors, base, None) or getattr(builtins, base) for base in drawn)
        assert getattr(errors, name).__bases__ == expected, name
    assert {name for name, drawn in bases.items() if drawn[0] == "ProviderError"} >= {
        "NoCredentialError",
        "AuthError",
        "RateLimitedError",
        "OverloadedError",
        "PromptTooLongError",
        "ProviderTimeoutError",
        "BadRequestError",
    }
    assert {name for name, drawn in bases.items() if drawn[0] == "LiveMemoryError"} >= {"ReportedError", "ClientError"}


def test_only_transient_provider_failures_are_retryable() -> None:
    assert errors.OverloadedError("x").retryable and errors.ProviderTimeoutError("x").retryable
    for error in (
        errors.NoCredentialError("x"),
        errors.AuthError("x"),
        errors.PromptTooLongError("x"),
        errors.BadRequestError("x"),
    ):
        assert not error.retryable, error


def test_a_rate_limit_is_retryable_only_when_the_endpoint_said_when() -> None:
    with_hint = errors.RateLimitedError("slow down", retry_after_s=2.5)
    spend_cap = errors.RateLimitedError("cap reached")
    assert (with_hint.retryable, with_hint.retry_after_s, with_hint.status) == (True, 2.5, 429)
    assert (spend_cap.retryable, spend_cap.retry_after_s) == (False, None)
    assert not errors.ProviderError("x").retryable  # the flag is per instance, the base class stays false


def test_errors_carry_what_their_handlers_need() -> None:
    too_long = errors.PromptTooLongError("too long", limit_tokens=200_000)
    assert (too_long.status, too_long.limit_tokens) == (400, 200_000)
    busy = errors.BusyError("busy; retry shortly", retry_after_s=3.0)
    assert (str(busy), busy.retry_after_s) == ("busy; retry shortly", 3.0)
    assert errors.AuthError("rejected", status=403).status == 403
    assert errors.ProviderError("x").status is None


def mcp_for(tmp_path: Path, provider: ChatProvider | None) -> Client:
    engine = engine_for(tmp_path, provider)
    return Client(build_mcp_server(engine.answerer, JobRegistry(ttl_s=60, max_jobs=4), StopSignal(), async_tools=False))


async def ask(client: Client, cwd: str) -> tuple[bool, str]:
    result = await client.call_tool("ask_live_memory", {"question": "where is main?", "cwd": cwd})
    return result.is_error, "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.mark.parametrize(
    "error",
    [
        errors.AuthError("acme: the API key was rejected (HTTP 401: bad key)", status=401),
        errors.RateLimitedError("acme: rate or spend limit reached (quota)"),
        errors.BadRequestError("acme: request rejected, HTTP 404 (no such model)", status=404),
    ],
    ids=["auth", "spend-cap", "bad-request"],
)
async def test_a_provider_failure_reaches_the_client_as_its_message(
    tmp_path: Path, workspace: Path, error: errors.ProviderError
) -> None:
    def fail(request: ChatRequest) -> ChatResponse:
        raise error

    async with mcp_for(tmp_path, ScriptedProvider(responder=fail)) as client:
        is_error, text = await ask(client, str(workspace))
    assert is_error
    assert text == PREFIX + str(error)


async def test_a_missing_credential_reaches_the_client_with_what_to_set(tmp_path: Path, workspace: Path) -> None:
    async with mcp_for(tmp_path, None) as client:
        is_error, text = await ask(client, str(workspace))
    assert is_error
    assert text.startswith(PREFIX + "Live Memory has no credential for provider 'anthropic'")
    assert "Set LIVE_MEMORY_API_KEY" in text


async def test_bad_input_reaches_the_client_saying_how_to_fix_it(tmp_path: Path) -> None:
    async with mcp_for(tmp_path, ScriptedProvider()) as client:
        is_error, text = await ask(client, "relative/path")
    assert is_error
    assert text == PREFIX + "cwd must be an absolute path (your repository root), got 'relative/path'"


def test_every_exception_class_of_the_package_is_declared_in_errors() -> None:
    import ast

    import live_memory

    declared = {name for name, value in vars(errors).items() if isinstance(value, type)}
    exception_names = declared | {
        n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
    }
    package = Path(live_memory.__file__).parent
    elsewhere = []
    for source in sorted(package.rglob("*.py")):
        if source == package / "core" / "errors.py":
            continue
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name) and base.id in exception_names for base in node.bases
            ):
                elsewhere.append(f"{source.relative_to(package)}: {node.name}")
    assert not elsewhere, f"exception classes outside errors.py: {elsewhere}"
