"""A real local HTTP server speaking the slice of Anthropic's Messages API that ``claude -p``
uses, so the real Claude Code binary runs a whole session here with no network.

``POST /v1/messages`` (Claude Code adds ``?beta=true`` and asks for ``"stream": true``)
answers each request with the next scripted text as Anthropic's SSE events
(``message_start``, ``content_block_start``, ``content_block_delta`` with a ``text_delta``,
``content_block_stop``, ``message_delta`` with ``stop_reason: end_turn``, ``message_stop``);
with the script used up it answers the last text again (Claude Code may send side requests,
a title for instance). A request without ``stream`` gets the same message as one JSON body.
``/v1/messages/count_tokens`` answers a fixed count. Every request is recorded.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


class FakeAnthropic:
    """``with FakeAnthropic(["Done."]) as api:`` then point ``ANTHROPIC_BASE_URL`` at
    ``api.url``."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = deque(texts)
        self._last = texts[-1] if texts else "Done."
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

    def _next_text(self) -> str:
        with self._lock:
            return self._texts.popleft() if self._texts else self._last

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
                    text = fake._next_text()
                    model = str(body.get("model", "claude-test"))
                    if body.get("stream"):
                        self._stream(text, model)
                    else:
                        self._json(_message(text, model))
                else:
                    self._json({"type": "error", "error": {"type": "not_found_error"}}, 404)

            def _json(self, payload: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, text: str, model: str) -> None:
                message = _message("", model)
                message["content"] = []
                events: list[tuple[str, dict[str, Any]]] = [
                    ("message_start", {"type": "message_start", "message": message}),
                    (
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": 0,
                            "content_block": {"type": "text", "text": ""},
                        },
                    ),
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "text_delta", "text": text},
                        },
                    ),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
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


def _message(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 5},
    }
