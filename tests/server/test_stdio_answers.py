"""Every line a client writes to the stdio server gets an answer: what the HTTP transport
refuses (text that is not Unicode, nesting past the parser's depth, a body over 4 MiB, JSON
that is no JSON-RPC message) is refused over stdio too, with a JSON-RPC error naming the
problem and the request's id, and the connection goes on. A real server process, spoken to
in raw lines: the SDK's client cannot even send most of these."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.types import INVALID_REQUEST, PARSE_ERROR
from mcp.types.version import LATEST_HANDSHAKE_VERSION

from ralph_context.server.stdio import MAX_LINE_BYTES, request_id
from tests.server_process import READY_WITHIN, ServerProcess, stdio_server

# Seconds an answer may take once the server is up.
ANSWER_WITHIN = 60.0


class Wire:
    """``ralph-context serve`` over stdio, written to and read from line by line."""

    def __init__(self, folder: Path) -> None:
        params = stdio_server(folder)
        log = tempfile.TemporaryFile()
        self.process = ServerProcess(
            [params.command, *params.args],
            env=params.env,
            cwd=params.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
        self.process.log = log
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(b"")

    def send(self, line: bytes | str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.process.stdin.flush()

    def answer(self, wanted: int | str | None, within: float = ANSWER_WITHIN) -> dict[str, Any]:
        """The server's answer to request ``wanted`` (notifications in between skipped).

        Raises:
            queue.Empty: No answer within ``within`` seconds.
        """
        found: dict[str, Any] = self._next(
            lambda m: isinstance(m, dict) and "id" in m and m["id"] == wanted and "method" not in m,
            within,
        )
        return found

    def batch(self, within: float = ANSWER_WITHIN) -> list[dict[str, Any]]:
        """The server's next answer that is an array (a batch's).

        Raises:
            queue.Empty: No array within ``within`` seconds.
        """
        found: list[dict[str, Any]] = self._next(lambda m: isinstance(m, list), within)
        return found

    def _next(self, wanted: Callable[[Any], bool], within: float) -> Any:
        """The next message the server writes that is ``wanted`` (the others skipped)."""
        deadline = time.monotonic() + within
        while True:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line, f"the server closed stdout:\n{self.process.stop()}"
            message = json.loads(line)
            if wanted(message):
                return message

    def close(self) -> str:
        """Close the server's stdin (it exits, as at a client's end), then stop it; its
        stderr."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=ANSWER_WITHIN)
        self._reader.join(timeout=ANSWER_WITHIN)  # stdout at its end: no reader left
        return self.process.stop()

    def still_serves(self) -> None:
        """A ping after a refusal is answered: the connection went on."""
        self.send('{"jsonrpc": "2.0", "id": "ping", "method": "ping"}')
        assert self.answer("ping")["result"] == {}


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    """A stdio server past the MCP handshake."""
    talk = Wire(tmp_path_factory.mktemp("stdio"))
    try:
        hello = {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "raw-lines", "version": "0"},
        }
        talk.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}))
        assert "result" in talk.answer(0, within=READY_WITHIN)
        talk.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        yield talk
    finally:
        talk.close()


def _call(request: int | str, arguments: str, *, id_last: bool = False) -> str:
    """A ``tools/call`` of store_context as text, ``arguments`` as given (any JSON text)."""
    params = f'"params": {{"name": "store_context", "arguments": {arguments}}}'
    head = '"jsonrpc": "2.0", "method": "tools/call"'
    number = f'"id": {json.dumps(request)}'
    return "{" + ", ".join([head, params, number] if id_last else [head, number, params]) + "}"


def _error(answer: dict[str, Any], code: int) -> str:
    assert answer.get("error", {}).get("code") == code, answer
    return str(answer["error"]["message"])


def test_a_lone_surrogate_is_answered_with_a_parse_error_naming_it(wire: Wire) -> None:
    # json.dumps escapes it as a client would: \ud800, half of a UTF-16 pair.
    arguments = json.dumps({"content": "bad \ud800 text", "context_type": "skill"})
    wire.send(_call(11, arguments))
    message = _error(wire.answer(11), PARSE_ERROR)
    assert "surrogate" in message
    wire.still_serves()


def test_nesting_1000_deep_is_answered_with_a_parse_error_naming_the_depth(wire: Wire) -> None:
    deep = '{"a": ' * 1_000 + "1" + "}" * 1_000
    arguments = f'{{"content": "x", "context_type": "skill", "metadata": {deep}}}'
    wire.send(_call("deep-1", arguments, id_last=True))  # found behind the nesting
    message = _error(wire.answer("deep-1"), PARSE_ERROR)
    assert "recursion limit" in message
    wire.still_serves()


def test_bytes_that_are_not_utf8_are_answered_with_a_parse_error(wire: Wire) -> None:
    arguments = b'{"content": "caf\xe9", "context_type": "skill"}'
    wire.send(_call(13, "ARGS").encode().replace(b"ARGS", arguments))
    message = _error(wire.answer(13), PARSE_ERROR)
    assert "not UTF-8" in message and "0xe9" in message
    wire.still_serves()


def test_a_request_over_4_mib_is_answered_and_skipped(wire: Wire) -> None:
    huge = json.dumps({"content": "x" * MAX_LINE_BYTES, "context_type": "skill"})
    wire.send(_call(14, huge))
    message = _error(wire.answer(14), INVALID_REQUEST)
    assert "too large" in message and "4 MiB" in message
    wire.still_serves()


def test_json_that_is_no_json_rpc_message_is_answered_as_an_invalid_request(wire: Wire) -> None:
    wire.send('{"jsonrpc": "2.0", "id": 15, "method": 7}')
    message = _error(wire.answer(15), INVALID_REQUEST)
    assert "not a JSON-RPC 2.0 message" in message
    wire.still_serves()


def test_a_line_that_is_not_json_is_answered_with_a_null_id(wire: Wire) -> None:
    wire.send("this is not JSON")
    message = _error(wire.answer(None), PARSE_ERROR)
    assert "Invalid JSON" in message
    wire.still_serves()


def test_the_id_is_found_at_the_top_level_only() -> None:
    assert request_id('{"id": 7}') == 7
    assert request_id(' { "params": {"id": 1, "x": ["}", {"id": 2}]}, "id": "r-1" }') == "r-1"
    assert request_id('{"params": ' + "[" * 5_000 + "]" * 5_000 + ', "id": 3}') == 3
    assert request_id('{"text": "\\ud800", "id": 4}') == 4
    # No id, or none a request may have, or text that stops making sense before it.
    assert request_id('{"method": "ping"}') is None
    assert request_id('{"id": true}') is None
    assert request_id('{"id": 1.5}') is None
    assert request_id('{"id": [1]}') is None
    assert request_id('{"params": {"a": ') is None
    assert request_id("[1, 2]") is None
    assert request_id("not json") is None


def test_a_batch_is_answered_with_an_array_naming_each_request(wire: Wire) -> None:
    """JSON-RPC's answer to a batch is an array: one error per request, each with its own
    id (so a client waiting on them is answered), none for the notification in it."""
    wire.send(
        json.dumps(
            [
                {"jsonrpc": "2.0", "id": "batch-a", "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
                {"jsonrpc": "2.0", "id": 31, "method": "tools/list"},
            ]
        )
    )
    answer = wire.batch()
    assert [error["id"] for error in answer] == ["batch-a", 31]
    for error in answer:
        assert error["error"]["code"] == INVALID_REQUEST
        assert "batches" in error["error"]["message"]
        assert "own line" in error["error"]["message"]
    wire.still_serves()


def test_an_empty_batch_is_answered_with_one_error(wire: Wire) -> None:
    wire.send("[]")
    message = _error(wire.answer(None), INVALID_REQUEST)
    assert "batch" in message and "empty" in message
    wire.still_serves()


@pytest.mark.parametrize("given", ['{"key": 1}', "[1]", "true", "1.5", "null"])
def test_a_request_whose_id_is_no_string_or_integer_is_refused_with_a_null_id(
    wire: Wire, given: str
) -> None:
    """The SDK's parser takes it for a notification, which is never answered."""
    wire.send(f'{{"jsonrpc": "2.0", "id": {given}, "method": "ping"}}')
    message = _error(wire.answer(None), INVALID_REQUEST)
    assert "id must be a string or an integer" in message
    wire.still_serves()


@pytest.mark.parametrize("source", ["/dev/null", "file"])
def test_a_stdin_that_is_no_pipe_is_read_to_its_end_and_the_server_exits(
    tmp_path: Path, source: str
) -> None:
    """``serve < /dev/null`` (a device epoll refuses) and ``serve < requests.jsonl`` end
    cleanly at the end of their input; /dev/null ended in an EPERM traceback."""
    params = stdio_server(tmp_path)
    path = Path(source) if source != "file" else tmp_path / "requests.jsonl"
    if source == "file":
        path.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + "\n")
    with path.open("rb") as stdin:
        done = subprocess.run(
            [params.command, *params.args],
            env=params.env,
            cwd=params.cwd,
            stdin=stdin,
            capture_output=True,
            timeout=READY_WITHIN + ANSWER_WITHIN,
        )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in done.stderr
