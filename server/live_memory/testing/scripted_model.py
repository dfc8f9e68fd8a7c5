"""A scripted model on loopback: a small HTTP server speaking enough of the Anthropic Messages API
(non-streaming ``POST /v1/messages``) for the official SDK the service uses.

A ``Script`` decides each turn from the request body; the usage reports what the prompt-cache simulator
(`prompt_cache.py`, Anthropic rules with the model's minimum cacheable prefix) gives for the request, so a
client sees ``cache_read_input_tokens`` grow as its prompt's prefix repeats. Standard library only (it
serves ``live-memory demo`` from a plain install); the richer fake of the tests (streaming, errors, stalls,
the OpenAI protocol) is ``server/live_memory/testing/llm_server.py``, on the same simulator.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from live_memory.testing.prompt_blocks import anthropic_prompt, count_tokens, sorted_json
from live_memory.testing.prompt_cache import PromptCache

__all__ = ["Script", "ScriptedModel"]

STOP_TIMEOUT_S = 30.0
SERVE_POLL_S = 0.05  # shutdown() waits for the serving loop to look: half a second by default

# One turn from a request body: (content blocks, stop reason).
Script = Callable[[dict[str, Any]], tuple[list[dict[str, Any]], str]]


class ScriptedModel:
    """The scripted model on 127.0.0.1:<free port>; a context manager. Records every request body.

    ``clock`` is the cache's clock (monotonic seconds); ``cache`` defaults to Anthropic's rules."""

    def __init__(
        self, script: Script, *, cache: PromptCache | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.script = script
        self.cache = PromptCache("anthropic") if cache is None else cache
        self.clock = clock
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()  # the handler threads share the cache and the record
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: the caller tells its own story
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = None
                if self.path.split("?")[0] != "/v1/messages" or not isinstance(body, dict):
                    error = {"type": "not_found_error", "message": "this scripted model serves POST /v1/messages"}
                    self._send(404, {"type": "error", "error": error})
                    return
                self._send(200, model.answer(body))

            def do_GET(self) -> None:
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": SERVE_POLL_S},
            name="scripted-model",
            daemon=True,
        )

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The Messages API response to one request body (what the server sends back)."""
        content, stop = self.script(body)
        model_name = str(body.get("model") or "scripted")
        prompt, _ = anthropic_prompt(body)
        with self._lock:
            self.requests.append(body)
            seq = len(self.requests)
            outcome = self.cache.process(prompt, model_name, protocol="anthropic", seq=seq, now=self.clock())
        output = sum(count_tokens(sorted_json(block)) for block in content)
        return {
            "id": f"msg_scripted_{time.monotonic_ns()}",
            "type": "message",
            "role": "assistant",
            "model": model_name,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": outcome.anthropic_usage(prompt.total, output),
        }

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(STOP_TIMEOUT_S)
