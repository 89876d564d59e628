"""One JSON POST to the project's server over a plain socket, within a deadline.

The hook process pays for every module it imports on every prompt: ``http.client`` brings
the ``email`` package and ``ssl`` (~35 ms of a 100 ms budget on these machines), for a
request to a loopback server that answers HTTP/1.1 with a length. So this speaks just that:
``Connection: close``, the body read to the end, a chunked body decoded.
"""

from __future__ import annotations

import socket
import time

__all__ = ["post"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def post(
    base_url: str, path: str, body: bytes, headers: Mapping[str, str], timeout: float
) -> tuple[int, bytes]:
    """POST ``body`` to ``base_url`` (``http://host:port``) + ``path``: the status and the
    response body. Raises ``OSError`` (``TimeoutError`` past ``timeout`` seconds in all,
    ``ConnectionRefusedError`` when nothing listens) or ``ValueError`` for a reply that is
    not HTTP."""
    host, _, port = base_url.removeprefix("http://").rstrip("/").rpartition(":")
    host = host.strip("[]")
    deadline = time.monotonic() + timeout
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
    lines += [f"{key}: {value}" for key, value in headers.items()]
    lines.append(f"Content-Length: {len(body)}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    with socket.create_connection((host, int(port)), timeout=timeout) as connection:
        connection.sendall(request)
        chunks = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer from {base_url} within {timeout} s")
            connection.settimeout(left)
            chunk = connection.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return _parse(b"".join(chunks))


def _parse(reply: bytes) -> tuple[int, bytes]:
    head, separator, body = reply.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if not separator or len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise ValueError(f"not an HTTP reply: {reply[:80]!r}")
    fields = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in header_lines)
    }
    if fields.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    return int(parts[1]), body


def _unchunk(body: bytes) -> bytes:
    out = []
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        body = rest[size + 2 :]
    return b"".join(out)
