"""The two servers under test, each a subprocess the official MCP client drives over stdio.

- ours: ``ralph-context serve`` on a fresh store (``benchmarks.retrieval.over_mcp``'s
  ``server_params``: default settings, no skillbook file), asked with
  ``get_relevant_context`` and only ``query`` (default max_items, threshold and budget);
- the peer: ``mcp-server-qdrant`` from its venv, an embedded Qdrant in ``QDRANT_LOCAL_PATH``
  and ``COLLECTION_NAME`` set, so its tools take no collection; asked with ``qdrant-find``
  (its default ``QDRANT_SEARCH_LIMIT``, 10).

Each is started through ``sh``, which writes its pid to a file and then ``exec``s the server
(same pid): the client does not say which process it started, and the CPU each server uses
is read from ``/proc/<pid>/stat``.
"""

from __future__ import annotations

import json
import os
import re
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from benchmarks.peer.model_files import peer_model_env
from benchmarks.peer.venv import PeerInstall
from benchmarks.retrieval.over_mcp import CALL_TIMEOUT, ToolFailed

__all__ = [
    "Found",
    "Running",
    "call",
    "find_ours",
    "find_peer",
    "peer_dia_ids",
    "peer_params",
    "start",
    "store_peer",
    "with_pid_file",
]

# $1 is the pid file; exec keeps the pid, so it names the server itself.
_PID_WRAPPER = 'echo $$ >"$1"; shift; exec "$@"'
# The peer's format_entry: <entry><content>...</content><metadata>{json}</metadata></entry>.
_METADATA = re.compile(r"<metadata>(.*?)</metadata>", re.DOTALL)
# Variables that would point the peer at a Qdrant server instead of the embedded one (its
# settings refuse QDRANT_LOCAL_PATH beside either) or at another model.
_PEER_FOREIGN = ("QDRANT_URL", "QDRANT_API_KEY", "QDRANT_SEARCH_LIMIT", "HF_TOKEN")


@dataclass(frozen=True)
class Running:
    """A started server: the client connected to it and the server's own pid."""

    name: str
    client: mcp.Client
    pid: int


def with_pid_file(params: StdioServerParameters, pid_file: Path) -> StdioServerParameters:
    """``params`` started through ``sh``, which writes the server's pid to ``pid_file``."""
    return params.model_copy(
        update={
            "command": "sh",
            "args": ["-c", _PID_WRAPPER, "sh", str(pid_file), params.command, *params.args],
        }
    )


def peer_params(
    install: PeerInstall, cache: Path, qdrant_path: Path, collection: str
) -> StdioServerParameters:
    """The peer on the embedded Qdrant at ``qdrant_path``, ``collection`` its only one, our
    model files through the fastembed cache at ``cache``."""
    env = {key: value for key, value in os.environ.items() if key not in _PEER_FOREIGN}
    env |= peer_model_env(cache)
    env |= {"QDRANT_LOCAL_PATH": str(qdrant_path), "COLLECTION_NAME": collection}
    return StdioServerParameters(command=str(install.server), args=[], env=env)


async def start(
    stack: AsyncExitStack, name: str, params: StdioServerParameters, logs: Path
) -> Running:
    """Start a server (its stderr to ``logs/<name>.log``), connected until ``stack`` closes.

    Raises:
        OSError: The server could not be spawned.
    """
    await anyio.Path(logs).mkdir(parents=True, exist_ok=True)
    pid_file = logs / f"{name}.pid"
    await anyio.Path(pid_file).unlink(missing_ok=True)
    log = stack.enter_context((logs / f"{name}.log").open("a", encoding="utf-8"))
    transport = stdio_client(with_pid_file(params, pid_file), errlog=log)
    client = await stack.enter_async_context(
        mcp.Client(transport, read_timeout_seconds=CALL_TIMEOUT)
    )
    # The handshake is answered by the server, so sh has exec'd it and written the file.
    return Running(name, client, int(await anyio.Path(pid_file).read_text(encoding="utf-8")))


async def call(server: Running, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    """One tool call, bounded by ``CALL_TIMEOUT``.

    Raises:
        ToolFailed: The tool answered with an error (the benchmark stops rather than
            count it as a miss).
    """
    with anyio.fail_after(CALL_TIMEOUT):
        answer = await server.client.call_tool(tool, arguments)
    if answer.is_error:
        text = " ".join(c.text for c in answer.content if isinstance(c, TextContent))
        raise ToolFailed(f"{server.name} {tool}: {text[:500]}")
    return answer


async def store_peer(server: Running, text: str, metadata: dict[str, Any]) -> None:
    """``qdrant-store``: one text a call (the peer has no batch tool)."""
    await call(server, "qdrant-store", {"information": text, "metadata": metadata})


@dataclass(frozen=True)
class Found:
    """One search as the client saw it: the dia_ids found (best first), the round trip's
    milliseconds and the answer's size as JSON; for ours also the tier that served it and
    the engine's own time (query embedding + search: what is not MCP, JSON and stdio)."""

    ids: list[str]
    ms: float
    answer_bytes: int
    tier: str | None = None
    engine_ms: float | None = None


async def find_ours(server: Running, query: str) -> Found:
    """``get_relevant_context`` with ``query`` alone."""
    started = time.perf_counter()
    answer = await call(server, "get_relevant_context", {"query": query})
    elapsed = (time.perf_counter() - started) * 1000
    content = answer.structured_content or {}
    stats = content.get("stats", {})
    return Found(
        [str(hit["item"]["metadata"].get("dia_id")) for hit in content.get("items", [])],
        elapsed,
        len(answer.model_dump_json()),
        stats.get("tier"),
        stats.get("query_embedding_time_ms", 0.0) + stats.get("search_time_ms", 0.0),
    )


async def find_peer(server: Running, query: str) -> Found:
    """``qdrant-find`` with ``query``."""
    started = time.perf_counter()
    answer = await call(server, "qdrant-find", {"query": query})
    elapsed = (time.perf_counter() - started) * 1000
    return Found(peer_dia_ids(answer), elapsed, len(answer.model_dump_json()))


def peer_dia_ids(answer: CallToolResult) -> list[str]:
    """The dia_ids in a ``qdrant-find`` answer, in its order.

    The tool returns a list of strings (a heading, then one ``<entry>`` each), which its
    FastMCP sends as one text block holding the JSON list; ``None`` (nothing found) as
    ``null`` or no block at all. A block that is not JSON is read as one entry.
    """
    entries: list[str] = []
    for block in answer.content:
        if not isinstance(block, TextContent):
            continue
        try:
            decoded = json.loads(block.text)
        except ValueError:
            decoded = block.text
        if isinstance(decoded, list):
            entries.extend(str(entry) for entry in decoded)
        elif isinstance(decoded, str):
            entries.append(decoded)
    ids: list[str] = []
    for entry in entries:
        match = _METADATA.search(entry)
        if match is None or not match.group(1).strip():
            continue
        metadata = json.loads(match.group(1))
        if isinstance(metadata, dict) and "dia_id" in metadata:
            ids.append(str(metadata["dia_id"]))
    return ids
