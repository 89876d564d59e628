"""A real local HTTP server speaking the slice of Anthropic's Messages API that ``claude -p``
uses, so the real Claude Code binary runs a whole session here with no network.

``POST /v1/messages`` (Claude Code adds ``?beta=true`` and asks for ``"stream": true``)
answers each request with the next scripted text as Anthropic's SSE events
(``message_start``, ``content_block_start``, ``content_block_delta`` with a ``text_delta``,
``content_block_stop``, ``message_delta`` with ``stop_reason: end_turn``, ``message_stop``);
with the script used up it answers the last text again (Claude Code may send side requests,
a title for instance). A request without ``stream`` gets the same message as one JSON body.
``/v1/messages/count_tokens`` answers a fixed count. Every request is recorded.

A script entry may also be a tool call, ``Tool("Bash", command="...")``: answered as a
``tool_use`` block with ``stop_reason: tool_use``, which Claude Code runs (when allowed)
before its next request. Only the session's own turns take entries from the script: a
request that offers no tools (a side request: a title, a summary) is answered "OK.".
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Tool:
    """A scripted tool call: ``name`` and its input."""

    name: str
    command: str
    extra: dict[str, Any] = field(default_factory=dict)

    def block(self, index: int) -> dict[str, Any]:
        return {
            "type": "tool_use",
            "id": f"toolu_{index:04d}",
            "name": self.name,
            "input": {"command": self.command, "description": "scripted", **self.extra},
        }


Reply = str | Tool


class FakeAnthropic:
    """``with FakeAnthropic(["Done."]) as api:`` then point ``ANTHROPIC_BASE_URL`` at
    ``api.url``."""

    def __init__(self, texts: Sequence[Reply]) -> None:
        self._texts: deque[Reply] = deque(texts)
        self._last = next((t for t in reversed(texts) if isinstance(t, str)), "Done.")
        self._calls = 0
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next(self, body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return "OK."
        with self._lock:
            return self._texts.popleft() if self._texts else self._last

    def turns(self) -> list[dict[str, Any]]:
        """The session's own requests to the model (those offering tools), in order."""
        return [
            body for path, body in self.requests if path == "/v1/messages" and body.get("tools")
        ]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # quiet test output
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?", 1)[0]
                with fake._lock:
                    fake.requests.append((path, body))
                if path.endswith("/count_tokens"):
                    self._json({"input_tokens": 12})
                elif path == "/v1/messages":
                    reply = fake._next(body)
                    model = str(body.get("model", "claude-test"))
                    with fake._lock:
                        fake._calls += 1
                        index = fake._calls
                    if body.get("stream"):
                        self._stream(reply, model, index)
                    else:
                        self._json(_message(reply, model, index))
                else:
                    self._json({"type": "error", "error": {"type": "not_found_error"}}, 404)

            def _json(self, payload: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, reply: Reply, model: str, index: int) -> None:
                message = _message("", model, index)
                message["content"] = []
                if isinstance(reply, Tool):
                    block = {**reply.block(index), "input": {}}
                    delta = {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(reply.block(index)["input"]),
                    }
                    stop = "tool_use"
                else:
                    block = {"type": "text", "text": ""}
                    delta = {"type": "text_delta", "text": reply}
                    stop = "end_turn"
                events: list[tuple[str, dict[str, Any]]] = [
                    ("message_start", {"type": "message_start", "message": message}),
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": 0, "content_block": block},
                    ),
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": 0, "delta": delta},
                    ),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 5},
                        },
                    ),
                    ("message_stop", {"type": "message_stop"}),
                ]
                data = "".join(
                    f"event: {name}\ndata: {json.dumps(payload)}\n\n" for name, payload in events
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _message(reply: Reply, model: str, index: int = 0) -> dict[str, Any]:
    tool = isinstance(reply, Tool)
    return {
        "id": f"msg_test_{index}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [
            reply.block(index) if isinstance(reply, Tool) else {"type": "text", "text": reply}
        ],
        "stop_reason": "tool_use" if tool else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 5},
    }
