"""Read-only views as MCP resources: stats, one item, one iteration, the skills.

Everything is JSON. A missing item or iteration is a "not found" error naming what was
asked for; an archived item is still found, and a summarized one carries its original text.
"""

from __future__ import annotations

import json

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from ralph_context.errors import InvalidInput, ItemNotFound, RalphContextError
from ralph_context.packs.toolkit import EngineHolder
from ralph_context.privacy import counted
from ralph_context.server import callers
from ralph_context.server.schemas import ContextStats, Skills

__all__ = ["register_resources"]

JSON = "application/json"


def register_resources(server: MCPServer, holder: EngineHolder) -> None:
    """Register ``context://stats``, ``context://items/{id}``, ``context://iterations/{n}``
    and ``context://skills``."""
    settings = holder.settings

    @server.resource("context://stats", name="stats", mime_type=JSON)
    async def stats() -> str:
        """Counts by type and state, size, index and model (as get_context_stats)."""
        engine = holder.get()
        try:
            found = await engine.stats()
        except RalphContextError as exc:
            raise ResourceError(str(exc)) from exc
        redacted = counted(engine.redactor.counts)
        answer = ContextStats.of(found, settings, callers.current(), redacted=redacted)
        return answer.model_dump_json(indent=2)

    @server.resource("context://skills", name="skills", mime_type=JSON)
    async def skills() -> str:
        """Every skill, most useful first (no usefulness threshold)."""
        try:
            found = await holder.get().skills(None, 0.0)
        except RalphContextError as exc:
            raise ResourceError(str(exc)) from exc
        return Skills(skills=found, count=len(found)).model_dump_json(indent=2)

    @server.resource("context://items/{id}", name="item", mime_type=JSON)
    async def item(id: str) -> str:
        """One item by id, hot or archived; ``original`` is the pre-summary text, if any."""
        engine = holder.get()
        try:
            found = await engine.get(id)
            original = await engine.original(id)
        except (ItemNotFound, InvalidInput) as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except RalphContextError as exc:
            raise ResourceError(str(exc)) from exc
        body = found.model_dump(mode="json")
        body["original"] = original
        return json.dumps(body, indent=2, ensure_ascii=False)

    @server.resource("context://iterations/{n}", name="iteration", mime_type=JSON)
    async def iteration(n: str) -> str:
        """The result stored for iteration ``n``."""
        if not n.isdigit():
            raise ResourceNotFoundError(f"iteration must be a non-negative whole number, got {n!r}")
        try:
            found = await holder.get().iteration(int(n))
        except ItemNotFound as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except RalphContextError as exc:
            raise ResourceError(str(exc)) from exc
        return found.model_dump_json(indent=2)
