"""The core context tools, the server's default face: names, arguments and defaults as in
the seed design (its other three are the curation pack's, ``server/curation.py``).

No ``from __future__ import annotations`` here: the SDK reads each tool's signature, and
some annotations use values of the settings in scope when the tool is defined.

Each tool is a thin adapter: validate through the schema, call the engine, shape the answer.
Defaults that live in ``ralph.yaml`` (max_items, min_score) are read from the settings when
the server is built, so the published schema shows the configured value.

Descriptions, the tools' and their arguments', are what a client's model reads on every
request: each says what the tool does and what a caller must know, in a sentence or two;
the why and the details are in docs/mcp.md.
"""

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import AfterValidator, BaseModel, Field

from ralph_context import __version__
from ralph_context.arguments import MAX_ITEMS, MAX_QUERY_CHARS, MAX_TOKENS, MIN_SCORE_HELP, NewItem
from ralph_context.codebase import marks
from ralph_context.errors import RalphContextError
from ralph_context.lifecycle.forgetting import MAX_FORGET_IDS, MAX_FORGET_ITERATIONS
from ralph_context.metadata_filter import MAX_CONDITIONS, MetadataCondition
from ralph_context.models import (
    MAX_COST,
    MAX_COUNT,
    MAX_ITERATION,
    ContextType,
    IterationResult,
)
from ralph_context.packs.toolkit import CLOSED, DESTROY, READ, WRITE, EngineHolder
from ralph_context.privacy import counted
from ralph_context.rendering import tool_text
from ralph_context.server import callers
from ralph_context.server.schemas import (
    ContextAnswer,
    ContextStats,
    Feedback,
    Forgotten,
    HealthReport,
    History,
    IterationStored,
    SearchStats,
    Stored,
    StoredMany,
)
from ralph_context.validation import MAX_SOURCE_CHARS, MAX_TAGS, check_source

__all__ = ["Tags", "Unit", "register_tools"]

TypeName = Literal["task", "iteration", "skill", "file", "output", "error"]
Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Tags = Annotated[list[str] | None, Field(max_length=MAX_TAGS)]
IdempotencyKey = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=200,
        description="A repeat with the same key and arguments returns the first result.",
    ),
]


def _thread(value: str) -> str:
    return check_source(value, name="thread", empty=False)


# The engine's source: items of one thread and iteration stored one after another are
# neighbours in retrieval (storage/table/threads.py). Without it an MCP client's conversation
# is a heap of unrelated turns: LoCoMo dev over MCP recalls 0.647 @10 without threads,
# 0.737 with them (benchmarks/retrieval/over_mcp.py, one run each).
Thread = Annotated[
    Annotated[str, Field(min_length=1, max_length=MAX_SOURCE_CHARS), AfterValidator(_thread)]
    | None,
    Field(
        description="Conversation, session or task it belongs to: consecutive items of one "
        "thread and iteration are neighbours, found through each other's words."
    ),
]
ItemIteration = Annotated[
    int | None,
    Field(
        ge=0,
        le=MAX_ITERATION,
        description="Default the one in progress; at most lifecycle.max_iteration_step "
        "past the latest recorded.",
    ),
]
# Names and paths an iteration lists (tool_calls, artifacts), at most.
MAX_LISTED = 1_000
# Items per store_contexts call: ~10 s of embedding here, inside any client's timeout.
MAX_BATCH = 1_000


class ContextEntry(BaseModel):
    """One item of ``store_contexts`` (the arguments of ``store_context``)."""

    model_config = CLOSED

    content: str
    context_type: TypeName
    tags: Tags = None
    metadata: dict[str, Any] | None = None
    thread: Thread = None
    iteration: ItemIteration = None

    def entry(self) -> NewItem:
        """The engine's form of this entry."""
        return NewItem(
            self.content,
            self.context_type,
            self.tags,
            self.metadata,
            source=self.thread or "",
            iteration=self.iteration,
        )


def register_tools(server: MCPServer, holder: EngineHolder) -> None:
    """Register the nine core context tools on ``server``."""
    settings = holder.settings
    retrieval = settings.retrieval

    @server.tool(annotations=READ)
    async def get_relevant_context(
        query: Annotated[
            str,
            Field(description=f"What you are working on (its first {MAX_QUERY_CHARS} characters)."),
        ],
        max_items: Annotated[int, Field(ge=1, le=MAX_ITEMS)] = retrieval.max_items_per_query,
        context_types: Annotated[
            list[TypeName] | None,
            Field(max_length=len(ContextType), description="Only these types; default all."),
        ] = None,
        min_score: Annotated[
            Unit, Field(description=f"{MIN_SCORE_HELP}.")
        ] = retrieval.min_relevance_score,
        max_tokens: Annotated[
            int | None,
            Field(
                ge=1,
                le=MAX_TOKENS,
                description="Token budget of all items; default "
                f"retrieval.max_context_tokens ({retrieval.max_context_tokens}).",
            ),
        ] = None,
        tags: Annotated[Tags, Field(description="Only items with any of these tags.")] = None,
        metadata: Annotated[
            list[MetadataCondition] | None,
            Field(
                max_length=MAX_CONDITIONS,
                description="Only items whose metadata meets every condition, e.g. "
                '{"key": "lang", "op": "in", "value": ["py"]}; != and \'not in\' also '
                "match items without the key.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, ContextAnswer]:
        """The stored items most relevant to the query, best first, within a token budget.
        Text: one line per item; structured content adds each score's breakdown and the
        tier that answered (semantic, text, none)."""
        result = await holder.get().search(
            query,
            max_items=max_items,
            context_types=context_types,
            min_score=min_score,
            max_tokens=max_tokens,
            tags=tags,
            metadata=metadata,
        )
        answer = ContextAnswer(items=list(result.items), stats=SearchStats.of(result))
        # The text a model reads is the items (the renderer's tool_text), each marked when
        # the code it names changed since; the breakdown and the stats stay in the
        # structured content for clients that read it.
        found = marks(result.items, holder.get().codebase.home)
        text = tool_text(result.items, result.tier.value, result.degraded_reason, found)
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=answer.model_dump(mode="json", by_alias=True),
        )

    @server.tool(annotations=READ)
    async def get_iteration_history(
        last_n: Annotated[int, Field(ge=1, le=1000)] = 5,
    ) -> History:
        """The last iterations' results, newest first."""
        engine = holder.get()
        iterations = await engine.recent_iterations(last_n)
        return History(iterations=iterations, current_iteration=engine.current_iteration)

    @server.tool(annotations=WRITE)
    async def store_context(
        content: str,
        context_type: TypeName,
        tags: Tags = None,
        metadata: dict[str, Any] | None = None,
        thread: Thread = None,
        iteration: ItemIteration = None,
        idempotency_key: IdempotencyKey = None,
    ) -> Stored:
        """Store one item for retrieval. Retry a timed-out call with the same
        idempotency_key: it stores nothing twice."""
        item = await holder.get().store(
            content,
            context_type,
            tags=tags,
            metadata=metadata,
            source=thread or "",
            iteration=iteration,
            idempotency_key=idempotency_key,
        )
        return Stored.of(item)

    @server.tool(annotations=WRITE)
    async def store_contexts(
        items: Annotated[list[ContextEntry], Field(min_length=1, max_length=MAX_BATCH)],
    ) -> StoredMany:
        """Store many items in one write, all or nothing, in the order given; each entry
        takes store_context's arguments but idempotency_key."""
        stored = await holder.get().store_many([e.entry() for e in items])
        return StoredMany(items=[Stored.of(item) for item in stored], count=len(stored))

    @server.tool(annotations=WRITE)
    async def mark_useful(item_id: str, helpful: bool, reason: str | None = None) -> Feedback:
        """Say whether a retrieved item helped: usefulness +0.10 if so, -0.15 if not."""
        score = await holder.get().mark_useful(item_id, helpful, reason)
        return Feedback(item_id=item_id, helpful=helpful, usefulness_score=score)

    @server.tool(annotations=WRITE)
    async def store_iteration_result(
        iteration: Annotated[
            int,
            Field(
                ge=0,
                le=MAX_ITERATION,
                description="At most lifecycle.max_iteration_step past the latest recorded.",
            ),
        ],
        summary: str,
        success: bool,
        duration_ms: Annotated[int, Field(ge=0, le=MAX_COUNT)] = 0,
        tokens_used: Annotated[int, Field(ge=0, le=MAX_COUNT)] = 0,
        cost: Annotated[float, Field(ge=0.0, le=MAX_COST, allow_inf_nan=False)] = 0.0,
        tool_calls: Annotated[list[str] | None, Field(max_length=MAX_LISTED)] = None,
        artifacts: Annotated[list[str] | None, Field(max_length=MAX_LISTED)] = None,
        error: str | None = None,
        idempotency_key: IdempotencyKey = None,
    ) -> IterationStored:
        """Record what an iteration did (again: replaces it); its error is also stored as
        an error item. Advances the lifecycle clock."""
        engine = holder.get()
        error_item = await engine.record_iteration(
            IterationResult(
                iteration=iteration,
                summary=summary,
                success=success,
                duration_ms=duration_ms,
                tokens_used=tokens_used,
                cost=cost,
                tool_calls=tuple(tool_calls or ()),
                artifacts=tuple(artifacts or ()),
                error=error,
            ),
            idempotency_key=idempotency_key,
        )
        return IterationStored(
            iteration=iteration,
            current_iteration=engine.current_iteration,
            error_item_id=error_item.id if error_item else None,
            lifecycle="queued" if settings.lifecycle.auto_run else "manual",
        )

    @server.tool(annotations=DESTROY)
    async def forget_context(
        item_ids: Annotated[list[str] | None, Field(max_length=MAX_FORGET_IDS)] = None,
        context_types: Annotated[list[TypeName] | None, Field(max_length=6)] = None,
        tags: Tags = None,
        older_than_iteration: Annotated[int | None, Field(ge=0, le=MAX_ITERATION)] = None,
        iterations: Annotated[
            list[Annotated[int, Field(ge=0, le=MAX_ITERATION)]] | None,
            Field(max_length=MAX_FORGET_ITERATIONS),
        ] = None,
        dry_run: bool = False,
    ) -> Forgotten:
        """Delete for good, live and archived, the items all given selectors pick (at least
        one; iterations: items made in them). By iteration alone, their records go too (a
        record whose error item goes reads "[forgotten]"). dry_run lists what would go."""
        report = await holder.get().forget(
            item_ids=item_ids,
            context_types=context_types,
            tags=tags,
            older_than_iteration=older_than_iteration,
            iterations=iterations,
            dry_run=dry_run,
        )
        return Forgotten.of(report)

    @server.tool(annotations=READ)
    async def get_context_stats() -> ContextStats:
        """Counts by type and state, archive, disk use, index, model; the namespaces you
        may use, with sizes; secrets redacted since start."""
        engine = holder.get()
        stats = await engine.stats()
        redacted = counted(engine.redactor.counts)
        return ContextStats.of(stats, settings, callers.current(), redacted=redacted)

    @server.tool(annotations=READ)
    async def health_check() -> HealthReport:
        """Each actor's health, the retrieval tier in force, store size and model."""
        engine = holder.get()
        try:
            size: int | None = await engine.size_bytes()
        except RalphContextError:  # the store is down: health says so below
            size = None
        report = HealthReport.of(
            engine.health(),
            size_bytes=size,
            max_size_mb=settings.storage.max_size_mb,
            current_iteration=engine.current_iteration,
            version=__version__,
        )
        return report.without_paths(settings) if callers.current().remote else report
