"""Register the server in a project's ``.mcp.json``.

Claude Code and newer Ralph versions read MCP servers only from the project-level file, so
``ralph-context init`` writes one. An existing file keeps every other server and key: only our
entry is added or replaced, and the file is replaced atomically, so a crash mid-write cannot
leave a half-written config behind.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ralph_context import namespaces
from ralph_context.atomic import write_text_atomically
from ralph_context.errors import ConfigError

__all__ = ["HEADERS_HELPER", "MCP_JSON", "SERVER_NAME", "Registration", "register", "server_entry"]

MCP_JSON = ".mcp.json"
SERVER_NAME = "ralph-context"
HEADERS_HELPER = "headersHelper"


@dataclass(frozen=True)
class Registration:
    """What ``register`` did to which file."""

    path: Path
    action: Literal["created", "added", "updated", "unchanged"]
    entry: dict[str, Any]


def server_entry(
    transport: Literal["stdio", "http"],
    *,
    config: Path | None,
    host: str,
    port: int,
    namespace: str = namespaces.DEFAULT,
    owner_token: bool = True,
) -> dict[str, Any]:
    """The ``mcpServers`` entry: a command for stdio (this install's console script, so the
    client starts the same version), a URL for a server already running over HTTP (the
    namespace's own path; a stdio server reads the namespace from the config).

    A URL entry of a server that requires the store's owner token (``owner_token``, see
    ``config.owner_token``) names a ``headersHelper``, Claude Code's command that prints the
    request headers: ``ralph-context token owner --header``, run in the project (the token
    itself never goes into a file the project may commit)."""
    script = Path(sys.executable).with_name("ralph-context")
    command = str(script) if script.exists() else "ralph-context"
    if transport == "http":
        url = namespaces.endpoint(f"http://{host}:{port}/mcp", namespace)
        entry: dict[str, Any] = {"type": "http", "url": url}
        if owner_token:
            helper = [command, "token", "owner", "--header"]
            if config is not None:
                helper += ["--config", str(config.resolve())]
            entry[HEADERS_HELPER] = shlex.join(helper)
        return entry
    entry = {"command": command, "args": ["serve"]}
    if config is not None:
        # Clients may start servers in another folder; the config's folder anchors the store.
        entry["env"] = {"RALPH_CONTEXT_CONFIG": str(config.resolve())}
    return entry


def register(project: Path, entry: dict[str, Any], *, name: str = SERVER_NAME) -> Registration:
    """Add or replace ``name`` in ``project/.mcp.json``, keeping everything else.

    Raises:
        ConfigError: The existing file is not a JSON object with an ``mcpServers`` object;
            it is left untouched.
    """
    path = project / MCP_JSON
    document: dict[str, Any] = {}
    existed = path.exists()
    if existed:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path} is not readable JSON ({exc}); fix or remove it") from None
        if not isinstance(document, dict):
            raise ConfigError(f"{path} must hold a JSON object, not {type(document).__name__}")
    servers = document.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: 'mcpServers' must be an object, not {type(servers).__name__}")
    previous = servers.get(name)
    if previous == entry:
        return Registration(path, "unchanged", entry)
    servers[name] = entry
    write_text_atomically(path, json.dumps(document, indent=2) + "\n")
    action: Literal["created", "added", "updated"]
    if not existed:
        action = "created"
    else:
        action = "added" if previous is None else "updated"
    return Registration(path, action, entry)
