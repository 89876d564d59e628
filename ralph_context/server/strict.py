"""Tool arguments are closed and strict: an unknown argument or a value of the wrong JSON
type is refused, never guessed at.

The SDK builds each tool's argument model from its signature with pydantic's lax defaults:
``"10"`` passes as an integer, ``true`` as ``1``, and a misspelt argument (``max_item``) is
dropped silently, so the call runs with the default the client meant to change. Here every
tool's model is replaced, after registration, by a subclass that forbids extra arguments and
validates strictly; its published schema says ``additionalProperties: false``. Nested models
that tools take (list entries, records) declare the same config themselves:
``ralph_context.packs.toolkit.CLOSED``.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict

__all__ = ["close_arguments"]


def close_arguments(server: MCPServer) -> None:
    """Make every registered tool's arguments closed and strict (call after registering)."""
    for tool in server._tool_manager.list_tools():
        metadata = tool.fn_metadata
        closed = _closed(metadata.arg_model)
        metadata.arg_model = closed
        tool.parameters = closed.model_json_schema(by_alias=True)


def _closed(model: type[Any]) -> type[Any]:
    namespace = {
        "model_config": ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True),
        "__module__": model.__module__,
        "__doc__": model.__doc__,
    }
    closed: type[BaseModel] = type(model.__name__, (model,), namespace)
    return closed
