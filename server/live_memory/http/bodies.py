"""JSON request bodies of the plain routes: bounded reading, parsing and schema validation.

Every failure becomes a precise 4xx (`RequestError`); nothing here touches server state.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from live_memory.constants import NOTIFY_MAX_EVENTS
from live_memory.core.errors import RequestError

SMALL_BODY_BYTES = 64 * 1024


class NotifyEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, max_length=4096)
    kind: Literal["read", "write", "change", "add", "unlink"]
    content: str | None = None


class NotifyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cwd: str = Field(min_length=1, max_length=4096)
    session_id: str | None = Field(default=None, max_length=256)
    events: list[NotifyEvent] = Field(max_length=NOTIFY_MAX_EVENTS)


class WorkspaceBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cwd: str = Field(min_length=1, max_length=4096)


class EmptyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConfigBody(RootModel[dict[str, Any]]):
    """`{key: value}`; each value is checked by its option's caster (config_update.validate_changes)."""


async def read_json(request: Request[Any], model: type[BaseModel], max_bytes: int, *, empty_ok: bool = False) -> Any:
    """Bounded body -> JSON -> schema, each failure a precise 4xx. `empty_ok`: an empty body needs no
    JSON content type (`curl -X POST /reload`)."""
    is_json = request.headers.get("content-type", "").split(";")[0].strip() == "application/json"
    if not is_json and not (empty_ok and request.headers.get("content-length", "0") == "0"):
        raise RequestError(415, "send the body as JSON with Content-Type: application/json")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise RequestError(413, f"request body too large ({declared} bytes; at most {max_bytes})")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise RequestError(413, f"request body too large (over {max_bytes} bytes)")
            chunks.append(chunk)
    except ClientDisconnect:
        raise RequestError(400, "the client disconnected while sending the body") from None
    if any(chunks) and not is_json:  # a body arrived after all (chunked, without a length)
        raise RequestError(415, "send the body as JSON with Content-Type: application/json")
    raw = b"".join(chunks) or b"{}"
    try:  # parsed and checked in one pass (pydantic's parser: a third of json.loads + validate on /notify)
        return model.model_validate_json(raw)
    except ValidationError as exc:
        errors = exc.errors()
        if errors and errors[0]["type"] == "json_invalid":
            reason = str(errors[0].get("ctx", {}).get("error") or errors[0]["msg"])
            raise RequestError(400, f"malformed JSON: {reason}") from None
        problems = [f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in errors[:20]]
        raise RequestError(422, "invalid request body", problems) from None


def error(status: int, message: str, detail: Any = None) -> JSONResponse:
    return JSONResponse({"error": message, "detail": detail}, status_code=status)


class ForgetBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cwd: str = Field(min_length=1, max_length=4096)
    substring: str = Field(min_length=3, max_length=1000)
