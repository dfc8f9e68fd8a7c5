"""JSON request bodies of the plain routes: read within a byte bound, parsed, validated, and every
failure a precise 4xx a client can act on (never a traceback)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel
from starlette.requests import Request
from starlette.types import Message

from live_memory.constants import NOTIFY_MAX_EVENTS
from live_memory.core.errors import RequestError
from live_memory.http.bodies import EmptyBody, ForgetBody, NotifyBody, WorkspaceBody, error, read_json

JSON = "application/json"


def request(
    chunks: list[bytes], *, content_type: str | None = JSON, length: int | None = -1, disconnect: bool = False
) -> Request:
    """A POST whose body arrives in `chunks`; length -1 declares the real size, None declares none."""
    headers: list[tuple[bytes, bytes]] = []
    if content_type is not None:
        headers.append((b"content-type", content_type.encode()))
    declared = sum(map(len, chunks)) if length == -1 else length
    if declared is not None:
        headers.append((b"content-length", str(declared).encode()))
    messages: list[Message] = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1 or disconnect}
        for i, chunk in enumerate(chunks)
    ] or [{"type": "http.request", "body": b"", "more_body": disconnect}]
    if disconnect:
        messages.append({"type": "http.disconnect"})

    async def receive() -> Message:
        return messages.pop(0)

    scope = {"type": "http", "method": "POST", "path": "/notify", "headers": headers, "query_string": b""}
    return Request(scope, receive)


async def read(req: Request, model: type[BaseModel] = WorkspaceBody, max_bytes: int = 1024, **kw: Any) -> Any:
    return await read_json(req, model, max_bytes, **kw)


async def refusal(
    req: Request, model: type[BaseModel] = WorkspaceBody, max_bytes: int = 1024, **kw: Any
) -> RequestError:
    with pytest.raises(RequestError) as caught:
        await read_json(req, model, max_bytes, **kw)
    return caught.value


async def test_a_valid_body_is_parsed_into_its_schema() -> None:
    body = await read(request([b'{"cwd": "/home/me/pro', b'ject"}']))
    assert body == WorkspaceBody(cwd="/home/me/project")


async def test_a_charset_on_the_content_type_is_accepted() -> None:
    body = await read(request([b'{"cwd": "/w"}'], content_type="application/json; charset=utf-8"))
    assert body.cwd == "/w"


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
async def test_a_body_that_is_not_declared_json_is_refused_with_415(content_type: str | None) -> None:
    error_ = await refusal(request([b'{"cwd": "/w"}'], content_type=content_type))
    assert (error_.status, str(error_)) == (415, "send the body as JSON with Content-Type: application/json")


async def test_an_empty_body_without_a_content_type_is_fine_where_allowed() -> None:
    assert await read(request([], content_type=None), EmptyBody, empty_ok=True) == EmptyBody()
    assert (await refusal(request([], content_type=None), EmptyBody)).status == 415


async def test_a_chunked_body_without_a_content_type_is_still_refused_where_empty_is_allowed() -> None:
    error_ = await refusal(request([b'{"x": 1}'], content_type=None, length=0), EmptyBody, empty_ok=True)
    assert error_.status == 415


async def test_a_declared_size_over_the_bound_is_refused_before_reading() -> None:
    error_ = await refusal(request([b"x" * 10], length=5000), max_bytes=1024)
    assert (error_.status, str(error_)) == (413, "request body too large (5000 bytes; at most 1024)")


async def test_a_streamed_body_growing_past_the_bound_is_refused() -> None:
    error_ = await refusal(request([b"x" * 600, b"x" * 600], length=None), max_bytes=1024)
    assert (error_.status, str(error_)) == (413, "request body too large (over 1024 bytes)")


async def test_a_client_leaving_mid_body_is_a_400() -> None:
    error_ = await refusal(request([b'{"cwd": '], length=None, disconnect=True))
    assert (error_.status, str(error_)) == (400, "the client disconnected while sending the body")


async def test_malformed_json_says_where_it_broke() -> None:
    error_ = await refusal(request([b'{"cwd": }']))
    assert error_.status == 400
    assert str(error_) == "malformed JSON: expected value at line 1 column 9"


async def test_schema_problems_are_a_422_listing_each_field() -> None:
    error_ = await refusal(request([json.dumps({"cwd": "", "extra": 1}).encode()]))
    assert (error_.status, str(error_)) == (422, "invalid request body")
    assert error_.detail == [
        "cwd: String should have at least 1 character",
        "extra: Extra inputs are not permitted",
    ]


async def test_a_body_that_is_not_an_object_names_the_whole_body() -> None:
    error_ = await refusal(request([b"[1, 2]"]))
    assert error_.status == 422
    assert error_.detail == ["body: Input should be an object"]


async def test_an_empty_json_body_is_an_empty_object() -> None:
    error_ = await refusal(request([]))
    assert error_.detail == ["cwd: Field required"]


def test_notify_events_have_a_known_kind_and_a_bounded_count() -> None:
    event = {"path": "src/a.py", "kind": "read"}
    full = NotifyBody.model_validate({"cwd": "/w", "events": [event] * NOTIFY_MAX_EVENTS})
    assert len(full.events) == NOTIFY_MAX_EVENTS
    with pytest.raises(ValueError, match=f"at most {NOTIFY_MAX_EVENTS} items"):
        NotifyBody.model_validate({"cwd": "/w", "events": [event] * (NOTIFY_MAX_EVENTS + 1)})
    with pytest.raises(ValueError, match="'read', 'write', 'change', 'add' or 'unlink'"):
        NotifyBody.model_validate({"cwd": "/w", "events": [{"path": "a", "kind": "delete"}]})


def test_forgetting_needs_a_substring_of_at_least_three_characters() -> None:
    assert ForgetBody(cwd="/w", substring="old").substring == "old"
    with pytest.raises(ValueError, match="at least 3 characters"):
        ForgetBody(cwd="/w", substring="ab")


def test_an_error_response_carries_the_message_and_detail_as_json() -> None:
    response = error(422, "invalid request body", ["cwd: Field required"])
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/json"
    assert json.loads(bytes(response.body)) == {"error": "invalid request body", "detail": ["cwd: Field required"]}
