"""Project memory over an engine: check arguments, embed, run the table functions.

The tools and the CLI call this, so the rules live once: text is stripped and must not be
empty; tags are de-duplicated and must be non-empty; ids, filters and references are checked
before anything is written. Embedding happens before the write request (it needs the model
actor, not the store); a learning captured while the model is down is stored without a vector
and is still found by its words.

Choices the issue left open:
- ``capture_learning`` with only a ``cycle_id`` files the learning under that cycle's project;
  with both, they must agree.
- ``get_project_context`` and ``get_cycle_intent`` take exactly one of their two selectors.
- ``update_project_state`` creates an unknown project only when ``name`` is given; a call that
  would change nothing is refused (it is almost always a mistake); a repo path belongs to one
  project at most, so ``get_project_context(repo_path=...)`` is unambiguous.
- Repository paths are compared without a trailing slash.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

from ralph_context.arguments import MAX_QUERY_CHARS
from ralph_context.engine import Engine
from ralph_context.errors import InvalidInput, InvalidTags, ItemNotFound
from ralph_context.packs.project import store, writes
from ralph_context.packs.project.schemas import (
    Cycle,
    CycleIntent,
    Decision,
    DecisionCaptured,
    Learning,
    LearningCaptured,
    LearningList,
    NewCycle,
    Project,
    ProjectContext,
    ProjectState,
    TagCount,
    TagList,
)
from ralph_context.packs.project.store import ProjectTables, open_tables
from ralph_context.packs.tables import equals

__all__ = ["MAX_LIMIT", "RECENT", "ProjectMemory", "normal_repo_path"]

MAX_LIMIT = 50
RECENT = 5  # learnings and decisions in a project's context
ID_CHARS = 100
TITLE_CHARS = 300
TEXT_CHARS = 20_000
TAG_CHARS = 100
MAX_TAGS = 30
STATUS_CHARS = 50

T = TypeVar("T")


def text(name: str, value: str, limit: int) -> str:
    """``value`` stripped; refused when empty or longer than ``limit`` characters."""
    stripped = value.strip()
    if not stripped:
        raise InvalidInput(f"{name} must not be empty")
    if len(stripped) > limit:
        raise InvalidInput(f"{name} is {len(stripped)} characters; at most {limit} allowed")
    return stripped


def optional(name: str, value: str | None, limit: int) -> str | None:
    return None if value is None else text(name, value, limit)


def tag_list(tags: Sequence[str] | None) -> tuple[str, ...]:
    """Tags stripped and de-duplicated in order."""
    cleaned: list[str] = []
    for tag in tags or ():
        stripped = tag.strip()
        if not stripped or len(stripped) > TAG_CHARS:
            raise InvalidTags(f"tags must be non-empty strings of at most {TAG_CHARS} characters")
        if stripped not in cleaned:
            cleaned.append(stripped)
    if len(cleaned) > MAX_TAGS:
        raise InvalidTags(f"{len(cleaned)} tags given; at most {MAX_TAGS} allowed")
    return tuple(cleaned)


def normal_repo_path(value: str) -> str:
    """A repository path as stored and compared: stripped, without a trailing slash."""
    stripped = text("repo_path", value, 4096)
    return stripped.rstrip("/") or "/"


def _one_of(names: tuple[str, str], first: str | None, second: str | None) -> None:
    if (first is None) == (second is None):
        raise InvalidInput(f"give either {names[0]} or {names[1]} (exactly one)")


class ProjectMemory:
    """The pack's operations on one running engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def query_learnings(
        self,
        tags: Sequence[str] | None,
        project_id: str | None,
        search: str | None,
        limit: int,
    ) -> LearningList:
        """Learnings by tags and project: newest first, or best match first with ``search``.

        Raises:
            InvalidInput: Empty search or tags, limit outside 1-50.
            ItemNotFound: Unknown project.
        """
        wanted = tag_list(tags)
        project = optional("project_id", project_id, ID_CHARS)
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        query = None
        if search is not None:
            if not search.strip():
                raise InvalidInput("search must not be empty (omit it to list the newest)")
            query = search.strip()[:MAX_QUERY_CHARS]
        vector = None if query is None else (await self.engine.embed([query]))[0]
        reason = None
        if query is not None and vector is None:
            reason = self.engine.semantic_unavailable or "the embedding model did not answer"
        settings = self.engine.settings

        def run(tables: ProjectTables) -> list[Learning]:
            condition = store.learning_condition(tables, wanted, project)
            if query is None:
                rows = store.newest(tables.learnings, condition, limit)
                return [Learning.model_validate(row) for row in rows]
            hits = store.search_learnings(
                tables,
                query,
                vector,
                condition,
                limit=limit,
                weights=settings.scoring,
                min_similarity=settings.retrieval.min_similarity,
            )
            return [Learning.model_validate({**row, "score": score}) for row, score in hits]

        found = await self._in_tables(run)
        mode: Literal["recent", "hybrid", "text"] = "recent"
        if query is not None:
            mode = "hybrid" if vector is not None else "text"
        message = None
        if not found:
            message = (
                "No learnings match. Call list_tags to see the tags in use"
                + (" in this project" if project else "")
                + ", widen the filters, or search in other words."
            )
        return LearningList(
            learnings=found, count=len(found), mode=mode, degraded_reason=reason, message=message
        )

    async def get_learning(self, learning_id: str) -> Learning:
        """One learning by id.

        Raises:
            ItemNotFound: No learning has that id.
        """
        wanted = text("id", learning_id, ID_CHARS)

        def run(tables: ProjectTables) -> Learning:
            row = tables.learnings.get(wanted)
            if row is None:
                raise ItemNotFound(
                    f"no learning with id {wanted!r} (query_learnings lists the stored ones)"
                )
            return Learning.model_validate(row)

        return await self._in_tables(run)

    async def list_tags(self, project_id: str | None) -> TagList:
        """Tag counts, most used first, over all learnings or one project's.

        Raises:
            ItemNotFound: Unknown project.
        """
        project = optional("project_id", project_id, ID_CHARS)
        counts, total = await self._in_tables(lambda tables: store.tag_counts(tables, project))
        return TagList(tags=[TagCount(tag=tag, count=n) for tag, n in counts], learnings=total)

    async def project_context(
        self, project_id: str | None, repo_path: str | None
    ) -> ProjectContext:
        """A project with its active cycle and most recent learnings and decisions.

        Raises:
            InvalidInput: Neither or both selectors given.
            ItemNotFound: No such project.
        """
        _one_of(("project_id", "repo_path"), project_id, repo_path)
        project = optional("project_id", project_id, ID_CHARS)
        repo = None if repo_path is None else normal_repo_path(repo_path)

        def run(tables: ProjectTables) -> ProjectContext:
            if project is not None:
                row = store.require_project(tables, project)
            else:
                row = store.project_by_repo(tables, repo or "")
            condition = equals("project_id", row["id"])
            cycle = store.active_cycle(tables, row["id"])
            return ProjectContext(
                project=Project.model_validate(row),
                active_cycle=None if cycle is None else Cycle.model_validate(cycle),
                recent_learnings=[
                    Learning.model_validate(r)
                    for r in store.newest(tables.learnings, condition, RECENT)
                ],
                recent_decisions=[
                    Decision.model_validate(r)
                    for r in store.newest(tables.decisions, condition, RECENT)
                ],
            )

        return await self._in_tables(run)

    async def capture_learning(
        self,
        title: str,
        problem: str,
        solution: str,
        tags: Sequence[str] | None,
        project_id: str | None,
        cycle_id: str | None,
        session_id: str | None,
    ) -> LearningCaptured:
        """Embed and store a new learning; returns it with its ``L-nnn`` id.

        Raises:
            InvalidInput: Empty or oversized text, bad tags, a cycle of another project.
            ItemNotFound: Unknown project or cycle.
        """
        new = writes.NewLearning(
            title=text("title", title, TITLE_CHARS),
            problem=text("problem", problem, TEXT_CHARS),
            solution=text("solution", solution, TEXT_CHARS),
            tags=tag_list(tags),
            project_id=optional("project_id", project_id, ID_CHARS),
            cycle_id=optional("cycle_id", cycle_id, ID_CHARS),
            session_id=optional("session_id", session_id, ID_CHARS),
        )
        words = store.search_text(new.title, new.problem, new.solution)
        (vector,) = await self.engine.embed([words])
        row = await self._in_tables(lambda tables: writes.add_learning(tables, new, vector))
        learning = Learning.model_validate(row)
        return LearningCaptured(id=learning.id, embedded=vector is not None, learning=learning)

    async def capture_decision(
        self, title: str, decision: str, context: str | None, project_id: str | None
    ) -> DecisionCaptured:
        """Store a new decision; returns it with its ``D-nnn`` id.

        Raises:
            InvalidInput: Empty or oversized text.
            ItemNotFound: Unknown project.
        """
        new = writes.NewDecision(
            title=text("title", title, TITLE_CHARS),
            decision=text("decision", decision, TEXT_CHARS),
            context=optional("context", context, TEXT_CHARS),
            project_id=optional("project_id", project_id, ID_CHARS),
        )
        row = await self._in_tables(lambda tables: writes.add_decision(tables, new))
        made = Decision.model_validate(row)
        return DecisionCaptured(id=made.id, decision=made)

    async def cycle_intent(self, project_id: str | None, cycle_id: str | None) -> CycleIntent:
        """The intent of a project's active cycle, or of a named cycle.

        Raises:
            InvalidInput: Neither or both selectors given.
            ItemNotFound: Unknown project or cycle, or a project without an active cycle.
        """
        _one_of(("project_id", "cycle_id"), project_id, cycle_id)
        project = optional("project_id", project_id, ID_CHARS)
        cycle_key = optional("cycle_id", cycle_id, ID_CHARS)

        def run(tables: ProjectTables) -> CycleIntent:
            if cycle_key is not None:
                cycle = store.require_cycle(tables, cycle_key)
            else:
                owner = store.require_project(tables, project or "")["id"]
                found = store.active_cycle(tables, owner)
                if found is None:
                    raise ItemNotFound(
                        f"project {owner!r} has no active cycle (start one with "
                        "update_project_state and active_cycle)"
                    )
                cycle = found
            return CycleIntent(
                cycle_id=cycle["id"],
                project_id=cycle["project_id"],
                name=cycle["name"],
                intent=cycle["intent"],
                status=cycle["status"],
            )

        return await self._in_tables(run)

    async def update_project_state(
        self,
        project_id: str,
        *,
        name: str | None = None,
        status: str | None = None,
        description: str | None = None,
        repo_path: str | None = None,
        tech_stack: list[str] | dict[str, object] | None = None,
        active_cycle: NewCycle | None = None,
    ) -> ProjectState:
        """Create or update a project, optionally starting its next cycle.

        Raises:
            InvalidInput: Empty text, nothing to change, a repo path owned by another project.
            ItemNotFound: Unknown project and no name to create it.
        """
        change = writes.ProjectChange(
            project_id=text("project_id", project_id, ID_CHARS),
            name=optional("name", name, TITLE_CHARS),
            status=optional("status", status, STATUS_CHARS),
            description=optional("description", description, TEXT_CHARS),
            repo_path=None if repo_path is None else normal_repo_path(repo_path),
            tech_stack=None if tech_stack is None else json.dumps(tech_stack, ensure_ascii=False),
            cycle=None
            if active_cycle is None
            else (
                text("active_cycle.name", active_cycle.name, TITLE_CHARS),
                text("active_cycle.intent", active_cycle.intent, TEXT_CHARS),
            ),
        )
        fields = (change.name, change.status, change.description, change.repo_path)
        if all(value is None for value in (*fields, change.tech_stack, change.cycle)):
            raise InvalidInput(
                f"nothing to update for project {change.project_id!r}: give name, status, "
                "description, repo_path, tech_stack or active_cycle"
            )
        done = await self._in_tables(lambda tables: writes.update_project(tables, change))
        cycle = done.active_cycle
        return ProjectState(
            project=Project.model_validate(done.project),
            active_cycle=None if cycle is None else Cycle.model_validate(cycle),
            created=done.created,
            completed_cycles=done.completed_cycles,
        )

    async def _in_tables(self, function: Callable[[ProjectTables], T]) -> T:
        return await self.engine.in_packs(lambda space: function(open_tables(space)))
