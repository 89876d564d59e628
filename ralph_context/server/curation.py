"""The curation pack: context tools for a person tending the store, off the default face.

``get_skills``, ``summarize_old_context`` and ``prune_low_value_context`` are the seed's
context tools, but a loop needs none of them on every request: the lifecycle summarizes and
prunes on its own, and ``get_relevant_context`` finds skills by meaning. Every tool listed
costs a client's model tokens on each request, so these are served only when ``ralph.yaml``
names the pack (``packs: [curation]``); they keep their names and arguments.

No ``from __future__ import annotations``: the SDK reads each tool's signature.
"""

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from ralph_context.models import MAX_ITERATION
from ralph_context.packs.toolkit import DESTROY, READ, EngineHolder
from ralph_context.server.renamed import OldMinScore, usefulness_floor
from ralph_context.server.schemas import LifecycleAnswer, Skills
from ralph_context.server.tools import Tags, Unit

__all__ = ["register_curation"]


def register_curation(server: MCPServer, holder: EngineHolder) -> None:
    """Register the curation pack's three tools on ``server``."""

    @server.tool(annotations=READ)
    async def get_skills(
        tags: Annotated[Tags, Field(description="Any of these tags.")] = None,
        min_usefulness: Annotated[
            Unit, Field(description="Minimum usefulness (0-1; unrated: 0.5).")
        ] = 0.5,
        min_score: OldMinScore = None,
    ) -> Skills:
        """Learned skills at or above a usefulness score, most useful first."""
        floor = usefulness_floor(min_usefulness, min_score, 0.5)
        skills = await holder.get().skills(tags, floor)
        return Skills(skills=skills, count=len(skills))

    @server.tool(annotations=DESTROY)
    async def summarize_old_context(
        ctx: Context[Any, Any],
        older_than_iterations: Annotated[int, Field(ge=0, le=MAX_ITERATION)] = 20,
        dry_run: bool = False,
    ) -> LifecycleAnswer:
        """Summarize old items now; originals stay in the archive (context://items/{id}).
        dry_run lists what would change."""
        report = await holder.get().summarize_old(
            older_than_iterations, dry_run=dry_run, progress=ctx.report_progress
        )
        return LifecycleAnswer.of(report)

    @server.tool(annotations=DESTROY)
    async def prune_low_value_context(
        ctx: Context[Any, Any],
        min_usefulness: Annotated[
            Unit, Field(description="Delete items with usefulness below this.")
        ] = 0.3,
        dry_run: bool = False,
        min_score: OldMinScore = None,
    ) -> LifecycleAnswer:
        """Delete for good the items whose usefulness fell below min_usefulness (only
        negative feedback takes an item there). dry_run lists what would go."""
        floor = usefulness_floor(min_usefulness, min_score, 0.3)
        report = await holder.get().prune_low_value(
            floor, dry_run=dry_run, progress=ctx.report_progress
        )
        return LifecycleAnswer.of(report)
