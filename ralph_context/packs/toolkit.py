"""The toolkit every MCP tool is written with: the server's context tools and each pack's.

A tool is a thin adapter (validate, call the engine, shape the answer); what all of them
need, whoever registers them, lives here:

- ``EngineHolder``: how a tool reaches the engine. Tools are registered before the engine
  starts (a bad definition costs no model load), so they hold the holder, not the engine.
- ``READ``, ``WRITE``, ``DESTROY``: the MCP annotations that say what a tool does to the
  store. The server reads them: a read-only server keeps only ``READ`` tools, and every
  call to any other is audited.
- ``CLOSED``: the model config of nested arguments (list entries, records), strict and
  closed like the tools' own arguments (``server/strict.py``).

A registration function takes ``(server: MCPServer, holder: EngineHolder)``. The server
(``server/app.py``) composes the context tools and the packs by calling theirs; the packs
depend on this module and never on the server (``[tool.importlinter]`` in pyproject.toml).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.types import ToolAnnotations
from pydantic import ConfigDict

from ralph_context.config import Settings
from ralph_context.engine import Engine
from ralph_context.errors import ActorUnavailable

__all__ = ["CLOSED", "DESTROY", "READ", "WRITE", "EngineHolder"]


@dataclass
class EngineHolder:
    """The settings the server was built from, and the engine once it runs."""

    settings: Settings
    engine: Engine | None = None

    def get(self) -> Engine:
        """The running engine.

        Raises:
            ActorUnavailable: The engine has not started yet (or has stopped).
        """
        if self.engine is None:
            raise ActorUnavailable("the context engine is not running (server starting up?)")
        return self.engine


READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
DESTROY = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

CLOSED = ConfigDict(extra="forbid", strict=True)
