"""The console reads a form's body only after it checked who sent it, and only up to
``MAX_FORM_BYTES``: against a real server process with tokens, over raw sockets where the
question is what the server answers before the body has arrived."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from benchmarks.serving import rss_bytes
from ralph_context.server.console.guard import MAX_FORM_BYTES
from tests.server.console_servers import EVERYWHERE, console_config, console_url, token_env
from tests.server_process import ServerProcess, start_http_server

_MB = 1024 * 1024
# What the server may grow by while a 100 MB form streams past it (unread, nothing holds it).
_GROWTH_ALLOWED = 20 * _MB
_CHUNK = 256 * 1024
_FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ServerProcess]]:
    """A server with tokens: its MCP URL and its process."""
    config = console_config(tmp_path_factory.mktemp("bodies"), tokens=True)
    process, url = start_http_server(config, env=token_env())
    try:
        yield url, process
    finally:
        process.stop()


def _post_head(url: str, path: str, length: int, kind: str = _FORM) -> bytes:
    address = urlsplit(url).netloc
    return (
        f"POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: {kind}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def _answer(sock: socket.socket) -> tuple[str, str]:
    """The status line with the headers, and the body, the server sent (the socket's
    timeout bounds every wait)."""
    received = b""
    while b"\r\n\r\n" not in received:
        piece = sock.recv(65536)
        assert piece, f"the server closed the connection after {received!r}"
        received += piece
    head, body = received.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").lower().splitlines()
    length = next((int(h.split(":")[1]) for h in lines if h.startswith("content-length:")), 0)
    while len(body) < length and (piece := sock.recv(65536)):
        body += piece
    return head.decode("latin-1"), body.decode("utf-8", errors="replace")


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return socket.create_connection((parts.hostname, parts.port), timeout=30)


def test_an_unauthenticated_100_mb_post_is_refused_before_it_is_read(
    guarded: tuple[str, ServerProcess],
) -> None:
    """A file in a multipart form: the shape a server reads whole (spooled) before the
    handler sees a field, as the console did before it checked the session first."""
    url, process = guarded
    opening = b'--b\r\nContent-Disposition: form-data; name="item_id"; filename="f"\r\n\r\n'
    size = 100 * _MB
    before = rss_bytes(process.pid)
    with _connect(url) as sock:
        sock.sendall(_post_head(url, "/console/forget", size, "multipart/form-data; boundary=b"))
        sock.sendall(opening + b"x" * (_CHUNK - len(opening)))
        # Answered with 99.75 MB still unsent: the body was not waited for.
        head, _page = _answer(sock)
        sent = _CHUNK
        chunk = b"x" * _CHUNK
        try:  # the rest streams past the server (or it hangs up): either way, unread
            while sent < size:
                sock.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
    grown = rss_bytes(process.pid) - before
    assert head.startswith("HTTP/1.1 303"), head
    assert "location: /console/login" in head.lower()
    assert grown < _GROWTH_ALLOWED, f"the server grew by {grown / _MB:.1f} MB"
    assert httpx.get(console_url(url) + "/login", timeout=30).status_code == 200


@pytest.mark.parametrize(
    ("path", "said"), [("/console/login", "login form expired"), ("/console/logout", "session")]
)
def test_a_login_or_logout_without_a_session_is_refused_before_its_body(
    guarded: tuple[str, ServerProcess], path: str, said: str
) -> None:
    url, _process = guarded
    with _connect(url) as sock:
        sock.sendall(_post_head(url, path, 100 * _MB))
        sock.sendall(b"token=" + b"x" * 1_000)
        head, page = _answer(sock)
    assert head.startswith("HTTP/1.1 403"), head
    assert said in page


async def test_a_form_past_64_kib_is_refused_even_from_a_signed_in_script(
    guarded: tuple[str, ServerProcess],
) -> None:
    url, _process = guarded
    forget = console_url(url) + "/forget"
    bearer = {"Authorization": f"Bearer {EVERYWHERE}"}

    async def streamed() -> AsyncIterator[bytes]:  # no Content-Length: chunked
        yield b"item_id="
        for _ in range(MAX_FORM_BYTES // 4096 + 1):
            yield b"x" * 4096

    async with httpx.AsyncClient(timeout=30) as http:
        declared = await http.post(forget, data={"item_id": "x" * MAX_FORM_BYTES}, headers=bearer)
        counted = await http.post(
            forget, content=streamed(), headers={**bearer, "Content-Type": _FORM}
        )
        other = await http.post(forget, files={"item_id": b"x"}, headers=bearer)
        small = await http.post(forget, data={"item_id": "no-such-item"}, headers=bearer)
    assert declared.status_code == 413 and "larger than 64 KiB" in declared.text
    assert counted.status_code == 413
    assert other.status_code == 415 and "x-www-form-urlencoded" in other.text
    assert small.status_code == 303  # read, and acted on
