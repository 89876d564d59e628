"""The context tools: names, arguments and defaults as in the seed design.

No ``from __future__ import annotations`` here: the SDK reads each tool's signature, and
some annotations use values of the settings in scope when the tool is defined.

Each tool is a thin adapter: validate through the schema, call the engine, shape the answer.
Defaults that live in ``ralph.yaml`` (max_items, min_score) are read from the settings when
the server is built, so the published schema shows the configured value.
"""

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import AfterValidator, BaseModel, Field

from ralph_context import __version__
from ralph_context.arguments import MAX_ITEMS, MAX_QUERY_CHARS, MAX_TOKENS, MIN_SCORE_HELP, NewItem
from ralph_context.codebase import Repository, marks
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
from ralph_context.server.renamed import OldMinScore, usefulness_floor
from ralph_context.server.schemas import (
    ContextAnswer,
    ContextStats,
    Feedback,
    Forgotten,
    HealthReport,
    History,
    IterationStored,
    LifecycleAnswer,
    SearchStats,
    Skills,
    Stored,
    StoredMany,
)
from ralph_context.validation import MAX_SOURCE_CHARS, MAX_TAGS, check_source

__all__ = ["register_tools"]

TypeName = Literal["task", "iteration", "skill", "file", "output", "error"]
Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Tags = Annotated[list[str] | None, Field(max_length=MAX_TAGS)]
IdempotencyKey = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=200,
        description="Any text naming this write; repeating it with the same arguments "
        "returns the first result, with other arguments is an error.",
    ),
]


def _thread(value: str) -> str:
    return check_source(value, name="thread", empty=False)


# The engine's source: items of one thread and iteration stored one after another are
# neighbours in retrieval (storage/threads.py). Without it an MCP client's conversation
# is a heap of unrelated turns: LoCoMo dev over MCP recalls 0.647 @10 without threads,
# 0.737 with them (benchmarks/retrieval/over_mcp.py, one run each).
Thread = Annotated[
    Annotated[str, Field(min_length=1, max_length=MAX_SOURCE_CHARS), AfterValidator(_thread)]
    | None,
    Field(
        description="The conversation, session or task the item belongs to: any name "
        f"(1-{MAX_SOURCE_CHARS} printable characters), the same for all its items. Items "
        "of one thread and iteration stored one after another are neighbours: a search "
        "that matches one also finds the items stored right before and after it, so an "
        "answer stored after its question is found through the question's words. Shown "
        "as the item's source. Default: none (the item stands alone)."
    ),
]
ItemIteration = Annotated[
    int | None,
    Field(
        ge=0,
        le=MAX_ITERATION,
        description="The iteration (a loop's step, a conversation's session) the item "
        "belongs to; a thread's items are neighbours only within one. At most "
        "lifecycle.max_iteration_step past the latest recorded; default the iteration "
        "in progress, one past the latest recorded (store_iteration_result records it "
        "at its end).",
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
    """Register the eleven context tools on ``server``."""
    settings = holder.settings
    retrieval = settings.retrieval
    code = Repository.find(settings.project_root)  # what an answer's items are checked against

    @server.tool(annotations=READ)
    async def get_relevant_context(
        query: Annotated[
            str,
            Field(
                description=f"What you are working on; the first "
                f"{MAX_QUERY_CHARS} characters are used."
            ),
        ],
        max_items: Annotated[int, Field(ge=1, le=MAX_ITEMS)] = retrieval.max_items_per_query,
        context_types: Annotated[
            list[TypeName] | None,
            Field(max_length=len(ContextType), description="Only these types; default all."),
        ] = None,
        min_score: Annotated[
            Unit, Field(description=f"{MIN_SCORE_HELP} ({retrieval.min_relevance_score}).")
        ] = retrieval.min_relevance_score,
        max_tokens: Annotated[
            int | None,
            Field(
                ge=1,
                le=MAX_TOKENS,
                description="Token budget for all items together; "
                f"default {retrieval.max_context_tokens} (retrieval.max_context_tokens).",
            ),
        ] = None,
        tags: Annotated[Tags, Field(description="Only items with any of these tags.")] = None,
        metadata: Annotated[
            list[MetadataCondition] | None,
            Field(
                max_length=MAX_CONDITIONS,
                description="Only items whose stored metadata meets every condition, e.g. "
                '[{"key": "priority", "op": ">=", "value": 2}, '
                '{"key": "lang", "op": "in", "value": ["py", "rs"]}]. Values match values of '
                "their own kind; != and 'not in' also match items without the key.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, ContextAnswer]:
        """Retrieve the stored context most relevant to the current task, best first.

        Relevance = match (meaning and shared words, helped by the item stored next to it)
        scaled by recency, usefulness feedback and type; each item carries its breakdown.
        Results fit the token budget, near-duplicates collapsed. Stats say which tier
        answered (semantic, text, none) and why.
        """
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
        found = marks(result.items, code)
        text = tool_text(result.items, result.tier.value, result.degraded_reason, found)
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=answer.model_dump(mode="json", by_alias=True),
        )

    @server.tool(annotations=READ)
    async def get_iteration_history(
        last_n: Annotated[int, Field(ge=1, le=1000)] = 5,
    ) -> History:
        """The last iterations' results, newest first: what was tried, what failed."""
        engine = holder.get()
        iterations = await engine.recent_iterations(last_n)
        return History(iterations=iterations, current_iteration=engine.current_iteration)

    @server.tool(annotations=READ)
    async def get_skills(
        tags: Annotated[Tags, Field(description="Any of these tags.")] = None,
        min_usefulness: Annotated[
            Unit, Field(description="Minimum usefulness (0-1; an unrated item has 0.5).")
        ] = 0.5,
        min_score: OldMinScore = None,
    ) -> Skills:
        """Learned skills and strategies at or above a usefulness score, most useful first."""
        floor = usefulness_floor(min_usefulness, min_score, 0.5)
        skills = await holder.get().skills(tags, floor)
        return Skills(skills=skills, count=len(skills))

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
        """Store something worth remembering (embedded and indexed for retrieval). Give the
        items of a conversation or task one thread, in the order they happened: each is
        then found through its neighbours too. A call repeating an earlier call's
        idempotency_key and arguments returns that call's item and stores nothing: retry a
        timed-out call with the same key."""
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
        """Store several items in one call: embedded in length-sorted batches and written
        at once (one table version), all or nothing, in the order given: consecutive
        entries of one thread and iteration are neighbours. Use it to ingest more than a
        few items; each entry takes store_context's arguments but idempotency_key."""
        stored = await holder.get().store_many([e.entry() for e in items])
        return StoredMany(items=[Stored.of(item) for item in stored], count=len(stored))

    @server.tool(annotations=WRITE)
    async def mark_useful(item_id: str, helpful: bool, reason: str | None = None) -> Feedback:
        """Say whether a retrieved item helped: +0.10 usefulness if so, -0.15 if not."""
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
        """Record what an iteration did; an error is also stored as an error item. Advances
        the lifecycle clock and queues a lifecycle pass. Recording an iteration again
        replaces its result; a call repeating an earlier call's idempotency_key and
        arguments writes nothing."""
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
    async def summarize_old_context(
        ctx: Context[Any, Any],
        older_than_iterations: Annotated[int, Field(ge=0, le=MAX_ITERATION)] = 20,
        dry_run: bool = False,
    ) -> LifecycleAnswer:
        """Replace old items' text with extractive summaries (originals kept in the archive,
        readable at context://items/{id}). dry_run lists what would change."""
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
        """Delete items whose usefulness fell below min_usefulness (only negative feedback
        gets an item there). Permanent; dry_run lists what would go."""
        floor = usefulness_floor(min_usefulness, min_score, 0.3)
        report = await holder.get().prune_low_value(
            floor, dry_run=dry_run, progress=ctx.report_progress
        )
        return LifecycleAnswer.of(report)

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
        """Delete the items the selectors pick, live and archived, for good: no tool,
        resource or search returns them afterwards, and the store's files are rewritten
        without them. Selectors combine with AND; at least one is required. iterations:
        items created in these iterations. Picked by iteration alone (iterations and/or
        older_than_iteration), those iterations' records (get_iteration_history) go too;
        a record whose error item goes is kept with its summary and error replaced by
        "[forgotten]". dry_run lists what would go."""
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
        """Counts by type and state, archive size, disk use, index and model; the
        namespaces of the store your token may use, with their sizes; secrets redacted
        since start, by kind."""
        engine = holder.get()
        stats = await engine.stats()
        redacted = counted(engine.redactor.counts)
        return ContextStats.of(stats, settings, callers.current(), redacted=redacted)

    @server.tool(annotations=READ)
    async def health_check() -> HealthReport:
        """Per-actor health, the retrieval tier in force, store size and model (over HTTP,
        the store is named by its kind and namespace, not its path)."""
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
