"""Asking the server that holds the store, instead of opening it: ``search``, ``stats``,
``health``, ``store``, ``forget`` and ``import`` beside a running server (its MCP tools; for
``import``, its ``/transfer/import`` route), in well under a second for all but ``import``.

Opening the store costs a command seconds (LanceDB, the actors) and loading the model more
(onnxruntime): 8-15 s for ``stats``, which only prints counts. When another process holds
the store's writer lock and serves it over HTTP (its note, ``storage/writer_lock.py``,
names the MCP URL), that process has both open already, so the command calls its MCP tool
(``get_context_stats``, ``health_check``, ``get_relevant_context``) and prints the tool's
answer: the same figures and the same shape as any MCP client gets.

The request goes through the agents' hook client (``server.agents.post``: one POST over a
plain socket, standard library only) as one self-contained MCP exchange of protocol
2026-07-28: no ``initialize``, no session, one JSON-RPC request in and its response out.
The bearer token is found as the hook finds it (the store's owner token, else
``RALPH_CONTEXT_TOKEN``, else the token file the server reads). A server that is gone
(connection refused) is not an error: the command opens the store itself, as it does when
no server holds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ralph_context import namespaces
from ralph_context.errors import InvalidInput, RalphContextError
from ralph_context.server.agents.post import post
from ralph_context.server.agents.project import ServerNote, bearer_token, token_files
from ralph_context.storage import writer_lock

if TYPE_CHECKING:
    from ralph_context.config import Settings

__all__ = ["PROTOCOL", "Served", "call_tool", "post_json", "served"]

# The protocol revision whose requests stand alone (the SDK's ``_streamable_http_modern``).
PROTOCOL = "2026-07-28"
# Seconds for one answer: a search at 100k items takes tens of milliseconds, the server's
# JSON window is 15 s; past this the command says the server did not answer.
_WAIT = 30.0
# JSON-RPC's "invalid params": the tool refused its arguments (bad input, exit 2).
_INVALID_PARAMS = -32602


@dataclass(frozen=True)
class Served:
    """The store's server, as a command reaches it: its note (URL, namespace path, token
    file) and its process, for what the command prints."""

    note: ServerNote
    url: str


def served(settings: Settings) -> Served | None:
    """The HTTP server that holds the store ``settings`` name, for their namespace; ``None``
    when no other process holds it, or its holder serves no endpoint (a stdio server)."""
    if settings.is_ephemeral:
        return None
    holder = writer_lock.other_writer(settings.store_root())
    if holder is None or not holder.endpoint:
        return None
    url = namespaces.endpoint(holder.endpoint, settings.storage.namespace)
    parts = urlsplit(url)
    if parts.scheme != "http":
        return None  # the hook client speaks plain HTTP to a local server only
    owner, token_file = token_files(settings)
    note = ServerNote(
        base_url=f"{parts.scheme}://{parts.netloc}",
        mcp_path=parts.path,
        pid=holder.pid,
        token_file=token_file,
        owner_token=owner,
    )
    return Served(note, url)


def call_tool(server: Served, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The structured answer of ``tool`` called with ``arguments`` on ``server``; ``None``
    when nothing listens there any more (the caller opens the store itself).

    Raises:
        InvalidInput: The tool refused the arguments.
        RalphContextError: The server answered with an error, or not in time.
    """
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "ralph-context-cli", "version": "1"},
            },
        },
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    token = bearer_token(server.note)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps(request).encode("utf-8")
    try:
        status, text = post(server.note.base_url, server.note.mcp_path, body, headers, _WAIT)
    except ConnectionRefusedError:
        return None  # a note left by a server that is gone
    except (OSError, ValueError) as exc:
        raise RalphContextError(f"the server at {server.url} did not answer: {exc}") from None
    reply = _reply(text)
    if reply is None:
        raise RalphContextError(f"the server at {server.url} answered {status}: {text[:200]!r}")
    return _result(server, tool, reply)


def post_json(
    server: Served, route: str, payload: dict[str, Any], wait: float = _WAIT
) -> dict[str, Any] | None:
    """``payload`` posted to ``route`` of ``server``'s namespace (``/transfer/import``):
    its JSON answer; ``None`` when nothing listens there any more.

    Raises:
        InvalidInput: The server refused the payload (400: the command's exit 2).
        RalphContextError: Any other refusal, or no answer in time.
    """
    path = server.note.mcp_path.removesuffix("/mcp") + route
    headers = {"Content-Type": "application/json"}
    token = bearer_token(server.note)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    try:
        status, text = post(server.note.base_url, path, body, headers, wait)
    except ConnectionRefusedError:
        return None
    except (OSError, ValueError) as exc:
        raise RalphContextError(f"the server at {server.url} did not answer: {exc}") from None
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    if status == 200 and isinstance(answer, dict):
        return answer
    said = (
        answer.get("error") if isinstance(answer, dict) else text[:200].decode("utf-8", "replace")
    )
    if status == 400:
        raise InvalidInput(str(said))
    raise RalphContextError(f"the server at {server.url} answered {status}: {said}")


def _reply(text: bytes) -> dict[str, Any] | None:
    """The JSON-RPC reply in ``text``: a JSON body, or the last ``data:`` event of a stream
    (the server turns to one past its JSON window)."""
    for candidate in (text, *reversed(_events(text))):
        try:
            found = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(found, dict) and ("result" in found or "error" in found):
            return found
    return None


def _events(text: bytes) -> list[bytes]:
    return [line[5:].strip() for line in text.splitlines() if line.startswith(b"data:")]


def _result(server: Served, tool: str, reply: dict[str, Any]) -> dict[str, Any]:
    error = reply.get("error")
    if isinstance(error, dict):
        message = str(error.get("message", error))
        if error.get("code") == _INVALID_PARAMS:
            raise InvalidInput(message)
        raise RalphContextError(f"the server at {server.url} refused {tool}: {message}")
    result = reply.get("result") or {}
    if result.get("isError"):
        texts = " ".join(str(part.get("text", "")) for part in result.get("content", ()))
        raise RalphContextError(f"{tool} failed on the server at {server.url}: {texts[:500]}")
    structured = result.get("structuredContent")
    if not isinstance(structured, dict):
        raise RalphContextError(f"the server at {server.url} gave {tool} no structured answer")
    return structured
