"""POST /check: what `live-memory doctor` cannot see from its own shell, checked by the server itself.

The key the README recommends lives only in the service's environment, so only the server can tell whether its
model answers: a 1-token request with the server's own provider (its credential, base URL and model), bounded by
DOCTOR_ROUND_TRIP_TIMEOUT_S, its failure the provider's message (which names the URL it tried). And only the
server's allowed roots decide whether a checkout may be asked about: `cwd`, when given, is located exactly as a
question's would be. The round trip costs a token or two and is not charged to the daily tally (it is not a
question, and a doctor run must work when the budget is spent). Never answers with the credential.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse

from live_memory.constants import DOCTOR_ROUND_TRIP_TIMEOUT_S
from live_memory.core.errors import InputError, ProviderError, RequestError
from live_memory.core.messages import ChatRequest, Message, TextPart
from live_memory.http.app_state import AppState
from live_memory.http.bodies import SMALL_BODY_BYTES, error, read_json
from live_memory.settings.runtime import Runtime, missing_credential_message
from live_memory.workspaces.service import WorkspaceService

PING = ChatRequest(
    system=(TextPart("Reply with one word."),), messages=(Message("user", (TextPart("ping"),)),), max_tokens=1
)


class CheckBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cwd: str | None = Field(default=None, min_length=1, max_length=4096)
    model: bool = True  # False: no round trip (`doctor --offline`)


async def round_trip(runtime: Runtime, timeout_s: float = DOCTOR_ROUND_TRIP_TIMEOUT_S) -> dict[str, Any]:
    """{"ok", "detail"} of a 1-token request to the runtime's model."""
    settings, provider = runtime.settings, runtime.provider
    if provider is None:
        return {"ok": False, "detail": missing_credential_message(settings)}
    try:
        async with asyncio.timeout(timeout_s):
            response = await provider.chat(PING)
    except TimeoutError:
        return {"ok": False, "detail": f"no answer from {settings.base_url} within {timeout_s:g} s"}
    except ProviderError as exc:
        return {"ok": False, "detail": str(exc)}
    return {"ok": True, "detail": f"{response.model or settings.model} at {settings.base_url} answered"}


async def workspace_check(service: WorkspaceService, cwd: str) -> dict[str, Any]:
    """{"ok", "detail"}: whether a question about `cwd` would be let in (absolute, existing, inside the roots)."""
    try:
        location = await service.locate(cwd)
    except InputError as exc:
        return {"ok": False, "detail": str(exc)}
    return {"ok": True, "detail": f"{cwd} may be asked about (memory of {location.root})"}


async def check(request: Request[AppState]) -> JSONResponse:
    try:
        body = await read_json(request, CheckBody, SMALL_BODY_BYTES, empty_ok=True)
    except RequestError as exc:
        return error(exc.status, str(exc), exc.detail)
    service = request.state["service"]
    answer: dict[str, Any] = {}
    if body.model:
        answer["model"] = await round_trip(service.runtime)
    if body.cwd is not None:
        answer["workspace"] = await workspace_check(service, body.cwd)
    return JSONResponse(answer)
