"""A real local HTTP server speaking the OpenAI chat-completions subset the engine uses.

Runs ``http.server`` in a thread on a free port, so the client under test goes through real
sockets, real HTTP/1.1 (chunked streaming) and real connection failures. Each chat request
takes the next scripted :data:`Step`; with the script empty it echoes, naming the server, so
routing tests can tell who answered. Every request is recorded, with its headers.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

# How long a held or slow reply waits at most, so a forgotten release cannot hang a run.
_MAX_HOLD = 10.0


@dataclass(frozen=True)
class Text:
    """A streamed text reply, split into ``pieces`` deltas, with a usage chunk at the end."""

    text: str
    pieces: int = 3
    finish_reason: str = "stop"


@dataclass(frozen=True)
class Calls:
    """Streamed tool calls ``(id, name, arguments)``: each call's arguments arrive in three
    fragments, and the calls' fragments are interleaved, tied together only by ``index``."""

    calls: tuple[tuple[str, str, str], ...]
    text: str = ""


@dataclass(frozen=True)
class Whole:
    """A complete JSON reply, as from a server that ignores ``"stream": true``."""

    text: str


@dataclass(frozen=True)
class Status:
    """An error status with an OpenAI-style error body."""

    code: int
    message: str = "try again later"
    retry_after: str | None = None


@dataclass(frozen=True)
class Slow:
    """Send the stream's headers, then nothing for ``seconds``, then ``then``."""

    seconds: float
    then: Text = field(default_factory=lambda: Text("too late"))


@dataclass(frozen=True)
class Hold:
    """Wait until :meth:`FakeOpenAI.release`, then answer ``then``."""

    then: Text = field(default_factory=lambda: Text("released"))


@dataclass(frozen=True)
class StreamError:
    """Start streaming, then send an error object inside the stream."""

    message: str


@dataclass(frozen=True)
class Drop:
    """Close the connection without answering."""


Step = Text | Calls | Whole | Status | Slow | Hold | StreamError | Drop


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


class FakeOpenAI:
    """``with FakeOpenAI(["m1"], name="a") as server:`` serves at ``server.url``.

    Args:
        models: Ids ``/v1/models`` lists (and chat accepts); mutable while running.
        name: Shown in echoed replies.
        api_key: If set, requests without ``Authorization: Bearer <api_key>`` get a 401.
    """

    def __init__(
        self,
        models: Sequence[str] = ("fake-model",),
        *,
        name: str = "fake",
        api_key: str | None = None,
    ) -> None:
        self.models = list(models)
        self.name = name
        self.api_key = api_key
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._script: deque[Step] = deque()
        self._changed = threading.Condition()
        self._released = threading.Event()
        self._closing = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self  # type: ignore[attr-defined]
        # A short poll interval: shutdown() waits for the serving loop's next poll.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The server's root, e.g. ``http://127.0.0.1:54321`` (the API is under ``/v1``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing.set()
        self._released.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        # Like a process that exits: kept-alive connections die too, not just the listener.
        with self._changed:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)

    def script(self, *steps: Step) -> None:
        """Queue behaviours for the next chat requests, in order."""
        with self._changed:
            self._script.extend(steps)

    def release(self) -> None:
        """Let every :class:`Hold` reply go."""
        self._released.set()

    def chat_requests(self) -> list[Recorded]:
        """The chat requests received so far."""
        with self._changed:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def wait_in_flight(self, count: int, timeout: float = 5.0) -> bool:
        """Block (in a worker thread) until ``count`` chat requests are being answered."""
        with self._changed:
            return self._changed.wait_for(lambda: self.in_flight >= count, timeout)

    # --- used by the handler ----------------------------------------------------------------

    def _connected(self, connection: socket.socket, open_: bool) -> None:
        with self._changed:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _record(self, request: Recorded) -> None:
        with self._changed:
            self.requests.append(request)

    def _next_step(self, model: str, prompt: str) -> Step:
        with self._changed:
            if self._script:
                return self._script.popleft()
        return Text(f"{self.name} answers {model}: {prompt}")

    def _enter(self) -> None:
        with self._changed:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._changed.notify_all()

    def _leave(self) -> None:
        with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def fake(self) -> FakeOpenAI:
        return self.server.fake  # type: ignore[attr-defined, no-any-return]

    # Each SSE event is its own small write: without TCP_NODELAY, Nagle's algorithm holds
    # the next one until the client's delayed ACK (~40 ms), as no real server does.
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        self.fake._connected(self.connection, True)

    def finish(self) -> None:
        self.fake._connected(self.connection, False)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: pytest shows stderr of failed tests only, and this would drown it

    def do_GET(self) -> None:
        self._arrived(None)
        if not self._authorized():
            return
        if self.path != "/v1/models":
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        data = [{"id": m, "object": "model", "owned_by": self.fake.name} for m in self.fake.models]
        self._json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        self._arrived(body)
        if not self._authorized():
            return
        if self.path != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        model = str(body.get("model"))
        if model not in self.fake.models:
            self._json(404, {"error": {"message": f"model {model!r} not found"}})
            return
        prompt = str(body["messages"][-1].get("content", ""))
        step = self.fake._next_step(model, prompt)
        self.fake._enter()
        try:
            self._answer(step, model)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (its timeout): nothing to do
        finally:
            self.fake._leave()

    def _arrived(self, body: dict[str, Any] | None) -> None:
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.fake._record(Recorded(self.command, self.path, headers, body))

    def _authorized(self) -> bool:
        key = self.fake.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._json(401, {"error": {"message": "invalid api key"}})
        return False

    def _answer(self, step: Step, model: str) -> None:
        match step:
            case Status(code, message, retry_after):
                headers = {"Retry-After": retry_after} if retry_after is not None else {}
                self._json(code, {"error": {"message": message}}, headers)
            case Drop():
                self.close_connection = True
            case Whole(text):
                reply = {"role": "assistant", "content": text}
                choice = {"index": 0, "message": reply, "finish_reason": "stop"}
                self._json(200, {"object": "chat.completion", "model": model, "choices": [choice]})
            case Slow(seconds, then):
                self._start_stream()
                self.fake._closing.wait(seconds)
                self._events(_text_events(then, model))
            case Hold(then):
                self._start_stream()
                self.fake._released.wait(_MAX_HOLD)
                self._events(_text_events(then, model))
            case StreamError(message):
                self._start_stream()
                self._events(
                    [_chunk(model, {"content": "partial "}), {"error": {"message": message}}]
                )
            case Calls():
                self._start_stream()
                self._events(_call_events(step, model))
            case Text():
                self._start_stream()
                self._events(_text_events(step, model))

    def _json(self, code: int, payload: object, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def _events(self, events: Sequence[object]) -> None:
        # A keep-alive comment first: clients must skip it.
        self._chunk(b": keep-alive\n\n")
        for event in events:
            self._chunk(f"data: {json.dumps(event)}\n\n".encode())
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": model,
        "choices": [choice],
    }


def _split(text: str, pieces: int) -> Iterator[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _text_events(step: Text, model: str) -> list[object]:
    events: list[object] = [_chunk(model, {"role": "assistant", "content": ""})]
    events += [_chunk(model, {"content": piece}) for piece in _split(step.text, step.pieces)]
    events.append(_chunk(model, {}, step.finish_reason))
    usage = {"prompt_tokens": 12, "completion_tokens": len(step.text.split())}
    events.append({"id": "chatcmpl-1", "model": model, "choices": [], "usage": usage})
    return events


def _call_events(step: Calls, model: str) -> list[object]:
    events: list[object] = [_chunk(model, {"role": "assistant", "content": step.text or None})]
    heads = [
        {"index": i, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        for i, (call_id, name, _) in enumerate(step.calls)
    ]
    events += [_chunk(model, {"tool_calls": [head]}) for head in heads]
    fragments = [list(_split(arguments, 3)) for _, _, arguments in step.calls]
    for round_ in range(max((len(f) for f in fragments), default=0)):
        for i, pieces in enumerate(fragments):
            if round_ < len(pieces):
                delta = {"tool_calls": [{"index": i, "function": {"arguments": pieces[round_]}}]}
                events.append(_chunk(model, delta))
    events.append(_chunk(model, {}, "tool_calls"))
    return events
