"""The engine's arguments, checked without an engine.

Why apart from the engine: an adapter must be able to refuse a bad argument before it pays
for the model and the store (seconds at start; tens of seconds on a loaded machine), and
it must refuse exactly what the engine would. So the engine checks its arguments through
these functions and the CLI calls them before it starts one. Only light modules are
imported here, so a command that fails fast also starts fast.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ralph_context.config import RetrievalSettings
from ralph_context.errors import InvalidInput
from ralph_context.metadata_filter import MetadataCondition, check_metadata_filter
from ralph_context.models import ContextItem, ContextState, ContextType, JsonValue
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.validation import (
    check_content,
    check_context_type,
    check_context_types,
    check_int,
    check_metadata,
    check_score,
    check_source,
    check_tags,
)

__all__ = [
    "MAX_CANDIDATES",
    "MAX_ITEMS",
    "MAX_PAGE",
    "MAX_QUERY_CHARS",
    "MAX_TOKENS",
    "MIN_SCORE_HELP",
    "Browse",
    "NewItem",
    "Query",
    "build_item",
    "check_browse",
    "check_iteration_step",
    "check_query",
]

MAX_QUERY_CHARS = 500
MAX_ITEMS = 50
# Raw candidates per half that Engine.candidates hands out at most.
MAX_CANDIDATES = 200
# Items on one page of Engine.browse at most.
MAX_PAGE = 500
# The largest token budget a query may ask for (a 1M-token context window).
MAX_TOKENS = 1_000_000
# One wording of the retrieval cut for every face (CLI, MCP tool, README): it applies to the
# relevance score, not to the cosine similarity alone.
MIN_SCORE_HELP = (
    "Drop items whose relevance score (0-1: match x recency x feedback x type) is below "
    "this; default retrieval.min_relevance_score"
)


@dataclass(frozen=True)
class NewItem:
    """One item to store with :meth:`Engine.store_many`; validated like :meth:`Engine.store`."""

    content: str | bytes
    content_type: ContextType | str
    tags: Sequence[str] | None = None
    metadata: dict[str, JsonValue] | None = None
    source: str = ""
    iteration: int | None = None


@dataclass(frozen=True)
class Query:
    """A validated retrieval request."""

    text: str
    max_items: int
    min_score: float
    max_tokens: int
    where: ItemFilter
    requested: tuple[ContextType, ...]
    # Items under this share of the query's best score are dropped too; only with the
    # default threshold (an explicit min_score replaces both floors).
    relative_floor: float = 0.0
    # Whether the items returned count as retrieved (access count, last accessed): not
    # when a person only looks (the console), or looking would change what it shows.
    counted: bool = True


def check_query(
    retrieval: RetrievalSettings,
    query: str,
    *,
    max_items: int | None = None,
    context_types: Sequence[ContextType | str] | None = None,
    min_score: float | None = None,
    max_tokens: int | None = None,
    tags: Sequence[str] | None = None,
    prefer_types: Sequence[ContextType | str] | None = None,
    metadata: Sequence[MetadataCondition | Mapping[str, object]] | None = None,
    counted: bool = True,
) -> Query:
    """:meth:`Engine.search`'s arguments as a ``Query``, defaults from ``retrieval``.

    Raises:
        InvalidInput: A bad argument, named, with what is allowed.
    """
    text = check_content(query, max_bytes=1 << 20, name="query")[:MAX_QUERY_CHARS]
    limit = check_int(
        retrieval.max_items_per_query if max_items is None else max_items,
        name="max_items",
        high=MAX_ITEMS,
    )
    threshold = check_score(
        retrieval.min_relevance_score if min_score is None else min_score, name="min_score"
    )
    budget = check_int(
        retrieval.max_context_tokens if max_tokens is None else max_tokens,
        name="max_tokens",
        high=MAX_TOKENS,
    )
    only = check_context_types(context_types)
    preferred = only or check_context_types(prefer_types)
    where = ItemFilter(
        types=only, tags_any=check_tags(tags), metadata=check_metadata_filter(metadata)
    )
    relative = retrieval.min_relative_score if min_score is None else 0.0
    return Query(text, limit, threshold, budget, where, preferred, relative, counted)


def check_iteration_step(value: int, *, latest: int, step: int, name: str = "iteration") -> int:
    """``value``, refused when it is more than ``step`` (``lifecycle.max_iteration_step``)
    past ``latest``, the store's lifecycle clock.

    Why: the lifecycle ages every item by that clock. One iteration result claiming 10^9
    would make every item ancient and archive the store on the next pass; one item claiming
    it would never age, and never be summarized or archived.

    Raises:
        InvalidInput: ``value`` is too far ahead; the message says how far it may go.
    """
    if value > latest + step:
        raise InvalidInput(
            f"{name} is {value}, more than {step} past the store's latest "
            f"({latest}); it must be at most {latest + step} "
            "(lifecycle.max_iteration_step: the lifecycle ages every item by this clock)"
        )
    return value


def build_item(
    entry: NewItem, *, max_bytes: int, iteration: int, max_step: int | None = None
) -> ContextItem:
    """The item ``entry`` describes, checked. ``iteration`` is the store's latest recorded;
    an item that names none belongs to the iteration in progress, one past it (a loop
    stores during iteration N and records N at its end: counted at the latest, N's items
    showed under N-1). One it names may be at most ``max_step`` past the latest.

    Raises:
        InvalidInput: Empty, oversized or non-UTF-8 content, unknown type, bad tags,
            metadata, source or iteration.
    """
    content = check_content(entry.content, max_bytes=max_bytes)
    created = check_int(
        iteration + 1 if entry.iteration is None else entry.iteration, name="iteration", low=0
    )
    if entry.iteration is not None and max_step is not None:
        check_iteration_step(created, latest=iteration, step=max_step)
    return ContextItem(
        content=content,
        content_type=check_context_type(entry.content_type),
        tags=check_tags(entry.tags),
        metadata=check_metadata(entry.metadata),
        source=check_source(entry.source),
        created_iteration=created,
        original_length=len(content),
    )


@dataclass(frozen=True)
class Browse:
    """A validated page request of :meth:`Engine.browse`."""

    where: ItemFilter
    archived: bool
    offset: int
    limit: int


def check_browse(
    context_types: Sequence[ContextType | str] | None,
    state: ContextState | str | None,
    tags: Sequence[str] | None,
    min_iteration: int | None,
    max_iteration: int | None,
    offset: int,
    limit: int,
) -> Browse:
    """The arguments of :meth:`Engine.browse`, checked.

    Raises:
        InvalidInput: A bad type, state, tag, iteration bound, offset or limit.
    """
    chosen = None
    if state is not None:
        try:
            chosen = ContextState(state)
        except ValueError:
            allowed = ", ".join(s.value for s in ContextState)
            raise InvalidInput(f"state {state!r:.40} is not one of {allowed}") from None
    low = None if min_iteration is None else check_int(min_iteration, name="min_iteration", low=0)
    high = None if max_iteration is None else check_int(max_iteration, name="max_iteration", low=0)
    archived = chosen is ContextState.ARCHIVED
    where = ItemFilter(
        types=check_context_types(context_types),
        states=() if chosen is None or archived else (chosen,),
        tags_any=check_tags(tags),
        min_iteration=low,
        max_iteration=high,
    )
    return Browse(
        where,
        archived,
        check_int(offset, name="offset", low=0),
        check_int(limit, name="limit", high=MAX_PAGE),
    )
