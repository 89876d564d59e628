"""The project-memory tools: what a loop knows about its project across sessions.

No ``from __future__ import annotations`` here: the SDK reads each tool's signature.

Reads: ``query_learnings``, ``get_learning``, ``list_tags``, ``get_project_context``,
``get_cycle_intent``. Writes: ``capture_learning``, ``capture_decision``,
``update_project_state``. Each tool validates through its schema, calls ``ProjectMemory``
and returns its model; the rules (ids, references, defaults) are in ``memory.py`` and
``store.py``.
"""

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from ralph_context.packs.project.memory import MAX_LIMIT, ProjectMemory
from ralph_context.packs.project.schemas import (
    CycleIntent,
    DecisionCaptured,
    Learning,
    LearningCaptured,
    LearningList,
    NewCycle,
    ProjectContext,
    ProjectState,
    TagList,
)
from ralph_context.packs.toolkit import READ, WRITE, EngineHolder
from ralph_context.validation import MAX_TAGS

__all__ = ["register_project_memory"]

ProjectId = Annotated[str | None, Field(description="Only this project (its id).")]
Tags = Annotated[
    list[str] | None,
    Field(max_length=MAX_TAGS, description="Learnings with ANY of these tags; see list_tags."),
]


def register_project_memory(server: MCPServer, holder: EngineHolder) -> None:
    """Register the eight project-memory tools on ``server``."""

    def memory() -> ProjectMemory:
        return ProjectMemory(holder.get())

    @server.tool(annotations=READ)
    async def query_learnings(
        tags: Tags = None,
        project_id: ProjectId = None,
        search: Annotated[
            str | None,
            Field(description="Find by meaning and words (hybrid search), best match first."),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 10,
    ) -> LearningList:
        """Learnings (problem + solution pairs) from past work, filtered by tags and project.

        Without search: newest first. With search: best match first, by meaning and words.
        """
        return await memory().query_learnings(tags, project_id, search, limit)

    @server.tool(annotations=READ)
    async def get_learning(
        id: Annotated[str, Field(description="A learning id such as L-023.")],
    ) -> Learning:
        """One learning in full."""
        return await memory().get_learning(id)

    @server.tool(annotations=READ)
    async def list_tags(project_id: ProjectId = None) -> TagList:
        """The tags on learnings with how many carry each, most used first."""
        return await memory().list_tags(project_id)

    @server.tool(annotations=READ)
    async def get_project_context(
        project_id: Annotated[str | None, Field(description="The project's id.")] = None,
        repo_path: Annotated[
            str | None, Field(description="Or the project's repository path.")
        ] = None,
    ) -> ProjectContext:
        """Start a session here: the project, its active cycle, and its 5 most recent
        learnings and decisions. Give project_id or repo_path."""
        return await memory().project_context(project_id, repo_path)

    @server.tool(annotations=READ)
    async def get_cycle_intent(
        project_id: Annotated[
            str | None, Field(description="The intent of this project's active cycle.")
        ] = None,
        cycle_id: Annotated[str | None, Field(description="Or of this cycle.")] = None,
    ) -> CycleIntent:
        """What the current cycle of work is for. Give project_id or cycle_id."""
        return await memory().cycle_intent(project_id, cycle_id)

    @server.tool(annotations=WRITE)
    async def capture_learning(
        title: Annotated[str, Field(description="One line naming the lesson.")],
        problem: Annotated[str, Field(description="What went wrong or was hard.")],
        solution: Annotated[str, Field(description="What worked, so next time is quicker.")],
        tags: Annotated[
            list[str] | None, Field(max_length=MAX_TAGS, description="Tags to find it by.")
        ] = None,
        project_id: Annotated[str | None, Field(description="The project it belongs to.")] = None,
        cycle_id: Annotated[
            str | None, Field(description="The cycle it came from (implies its project).")
        ] = None,
        session_id: Annotated[str | None, Field(description="The session it came from.")] = None,
    ) -> LearningCaptured:
        """Record a lesson learned; returns its new id (L-nnn)."""
        return await memory().capture_learning(
            title, problem, solution, tags, project_id, cycle_id, session_id
        )

    @server.tool(annotations=WRITE)
    async def capture_decision(
        title: Annotated[str, Field(description="One line naming the decision.")],
        decision: Annotated[str, Field(description="What was decided.")],
        context: Annotated[str | None, Field(description="Why, and what else was weighed.")] = None,
        project_id: Annotated[str | None, Field(description="The project it belongs to.")] = None,
    ) -> DecisionCaptured:
        """Record a decision; returns its new id (D-nnn)."""
        return await memory().capture_decision(title, decision, context, project_id)

    @server.tool(annotations=WRITE)
    async def update_project_state(
        project_id: Annotated[str, Field(description="The project's id.")],
        name: Annotated[
            str | None, Field(description="Rename; required to create an unknown project.")
        ] = None,
        status: Annotated[str | None, Field(description="E.g. active, paused, done.")] = None,
        description: str | None = None,
        repo_path: Annotated[
            str | None, Field(description="The repository it lives in (one project per path).")
        ] = None,
        tech_stack: Annotated[
            Annotated[list[str], Field(max_length=MAX_TAGS)] | dict[str, Any] | None,
            Field(description="Replaces the stored stack: a list of names or an object."),
        ] = None,
        active_cycle: Annotated[
            NewCycle | None,
            Field(description="Start this cycle; the previous active one becomes completed."),
        ] = None,
    ) -> ProjectState:
        """Create or update a project and optionally start its next cycle. Fields left out
        keep their values."""
        return await memory().update_project_state(
            project_id,
            name=name,
            status=status,
            description=description,
            repo_path=repo_path,
            tech_stack=tech_stack,
            active_cycle=active_cycle,
        )
