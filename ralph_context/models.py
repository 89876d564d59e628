"""The domain's nouns: what an agent loop stores, and what a retrieval hands back.

Field names follow the seed design ("MCP Context Server for Progressive Context Disclosure"),
so MCP clients and the Ralph hook see the same shapes the spec promised.
"""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "ITERATION_ERROR_TAG",
    "MAX_COST",
    "MAX_COUNT",
    "MAX_ITERATION",
    "ContextItem",
    "ContextState",
    "ContextType",
    "IterationResult",
    "JsonValue",
    "RetrievalResult",
    "RetrievedItem",
    "Tier",
    "inexact_number",
]


class ContextType(StrEnum):
    """What kind of thing an item records; retrieval can ask for specific kinds."""

    TASK = "task"
    ITERATION = "iteration"
    SKILL = "skill"
    FILE = "file"
    OUTPUT = "output"
    ERROR = "error"


class ContextState(StrEnum):
    """Where an item is in its life: fresh, decaying, compressed, or cold."""

    ACTIVE = "active"
    AGING = "aging"
    SUMMARIZED = "summarized"
    ARCHIVED = "archived"


class Tier(StrEnum):
    """Which rung of the degradation ladder served a retrieval, best first."""

    SEMANTIC = "semantic"
    TEXT = "text"
    CACHE = "cache"
    NONE = "none"


def _new_id() -> str:
    return uuid.uuid4().hex


def _now() -> datetime:
    return datetime.now(UTC)


Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class ContextItem(BaseModel):
    """One remembered thing: a task, an iteration summary, an error, a file, a skill."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=_new_id)
    content: str
    content_type: ContextType
    state: ContextState = ContextState.ACTIVE
    created_at: datetime = Field(default_factory=_now)
    created_iteration: int = Field(default=0, ge=0)
    source: str = ""
    tags: tuple[str, ...] = ()
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    usefulness_score: Unit = 0.5
    access_count: int = Field(default=0, ge=0)
    last_accessed: datetime | None = None
    summary: str | None = None
    original_length: int | None = None
    # The item's place in the order its store received items (set by the store; None for
    # items stored before stores kept it). Adjacent items of the same source and iteration
    # are neighbours: retrieval lets their matches count towards each other's.
    sequence: int | None = Field(default=None, ge=0)


# Bounds of the numbers a client may send. Stored columns are 64-bit and JSON clients lose
# precision past 2**53, so counts stop there; an iteration number past 2**31 is no loop's.
MAX_ITERATION = 2**31 - 1
MAX_COUNT = 2**53 - 1
MAX_COST = 1e12


def inexact_number(value: object) -> str | None:
    """What is wrong with ``value`` as a JSON number a caller gets back exactly, or ``None``
    (also for anything that is not a number).

    Why a check of its own: the readers JSON passes through hold numbers as doubles (Lance's
    JSON column, JavaScript clients), so an integer past 2**53 comes back rounded
    (``2**64`` as ``1.8446744073709552e19``), one past the double range as ``null``, and
    NaN or infinity is not JSON at all. Metadata and search filters refuse them alike
    rather than store or compare a different number than the one given.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and abs(value) > MAX_COUNT:
        return (
            f"a {value.bit_length()}-bit integer; integers must be within ±{MAX_COUNT:,} "
            "(2**53 - 1) to come back exactly (send a larger one as text)"
        )
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value}; numbers must be finite (NaN and infinity are not JSON)"
    return None


# The tag of the item an iteration's reported error becomes (the engine stores it; forget
# clears the iteration's record with it).
ITERATION_ERROR_TAG = "iteration-error"


class IterationResult(BaseModel):
    """What one iteration of the agent loop did, as the orchestrator reports it."""

    model_config = ConfigDict(frozen=True)

    iteration: int = Field(ge=0, le=MAX_ITERATION)
    success: bool
    summary: str
    duration_ms: int = Field(default=0, ge=0, le=MAX_COUNT)
    tokens_used: int = Field(default=0, ge=0, le=MAX_COUNT)
    cost: float = Field(default=0.0, ge=0.0, le=MAX_COST, allow_inf_nan=False)
    tool_calls: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    error: str | None = None
    created_at: datetime = Field(default_factory=_now)


class RetrievedItem(BaseModel):
    """An item as a retrieval returns it: the item plus why it ranked where it did."""

    model_config = ConfigDict(frozen=True)

    item: ContextItem
    score: float
    breakdown: dict[str, float] = Field(default_factory=dict)
    tokens: int = 0


class RetrievalResult(BaseModel):
    """The answer to one query, with the timings and the tier that produced it."""

    model_config = ConfigDict(frozen=True)

    items: tuple[RetrievedItem, ...] = ()
    query_embedding_time_ms: float = 0.0
    search_time_ms: float = 0.0
    total_candidates: int = 0
    # Candidates turned away: under the similarity gate or min_score; over the token budget;
    # near-duplicates (cosine > 0.95) of an item already kept.
    filtered_count: int = 0
    over_budget_count: int = 0
    duplicate_count: int = 0
    tokens_used: int = 0
    token_budget: int = 0
    tier: Tier = Tier.NONE
    degraded_reason: str | None = None
