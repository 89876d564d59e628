"""Arrow schemas of the two tables, and conversion between rows and domain objects."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa

from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem, ContextState, ContextType, IterationResult

__all__ = [
    "ITEMS",
    "ITERATIONS",
    "METADATA_TYPE",
    "item_from_row",
    "item_to_row",
    "items_schema",
    "iteration_from_row",
    "iteration_to_row",
    "iterations_schema",
    "writable",
]

ITEMS = "context_items"
ITERATIONS = "iterations"

_TS = pa.timestamp("us", tz="UTC")
_USAGE_FIELDS = ("usefulness_score", "access_count", "last_accessed")

# Lance stores this as its JSON type (binary JSONB), which search filters can look into
# (``json_extract``); it reads back as JSON text. See ``storage/table/json_metadata.py``.
METADATA_TYPE = pa.json_(pa.utf8())
_LANCE_JSON = b"lance.json"


def items_schema(dimension: int) -> pa.Schema:
    """``context_items``: the scalar fields of ``ContextItem`` plus its (nullable) vector.

    The usage counters (usefulness, access count, last access) live in ``item_usage``
    (see ``storage/table/usage.py``) so that retrieval never rewrites indexed rows. A null vector
    marks an item stored while the embedding model was unavailable; the text tier still
    finds it.
    """
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("content", pa.string(), nullable=False),
            pa.field("content_type", pa.string(), nullable=False),
            pa.field("state", pa.string(), nullable=False),
            pa.field("created_at", _TS, nullable=False),
            pa.field("created_iteration", pa.int64(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("tags", pa.list_(pa.string()), nullable=False),
            pa.field("metadata", METADATA_TYPE, nullable=False),  # JSON object
            pa.field("summary", pa.string(), nullable=True),
            pa.field("original_length", pa.int64(), nullable=True),
            pa.field("sequence", pa.int64(), nullable=True),
            pa.field("vector", pa.list_(pa.float32(), dimension), nullable=True),
        ]
    )


def writable(schema: pa.Schema) -> pa.Schema:
    """A table's schema as rows must be written to it.

    LanceDB reports a JSON column as plain ``large_binary``; rows built or cast to that
    type carry their JSON text as the binary JSONB Lance expects, and every metadata filter
    on the table then fails on them ("InvalidJsonb"). Written as JSON text (this type),
    Lance encodes them itself.
    """
    for position, field in enumerate(schema):
        if (field.metadata or {}).get(b"ARROW:extension:name") == _LANCE_JSON:
            schema = schema.set(position, pa.field(field.name, METADATA_TYPE, field.nullable))
    return schema


def iterations_schema() -> pa.Schema:
    """``iterations``: one row per reported ``IterationResult``."""
    return pa.schema(
        [
            pa.field("iteration", pa.int64(), nullable=False),
            pa.field("success", pa.bool_(), nullable=False),
            pa.field("summary", pa.string(), nullable=False),
            pa.field("duration_ms", pa.int64(), nullable=False),
            pa.field("tokens_used", pa.int64(), nullable=False),
            pa.field("cost", pa.float64(), nullable=False),
            pa.field("tool_calls", pa.list_(pa.string()), nullable=False),
            pa.field("artifacts", pa.list_(pa.string()), nullable=False),
            pa.field("error", pa.string(), nullable=True),
            pa.field("created_at", _TS, nullable=False),
        ]
    )


def item_to_row(item: ContextItem, vector: Vectors | None) -> dict[str, Any]:
    """One ``context_items`` row."""
    row = item.model_dump(mode="python", exclude={"tags", "metadata", *_USAGE_FIELDS})
    row["content_type"] = item.content_type.value
    row["state"] = item.state.value
    row["tags"] = list(item.tags)
    row["metadata"] = json.dumps(item.metadata, ensure_ascii=False, allow_nan=False)
    row["vector"] = None if vector is None else vector.astype(np.float32).tolist()
    return row


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def item_from_row(row: Mapping[str, Any]) -> ContextItem:
    """Rebuild the domain object with default counters (the usage ledger overlays them);
    extra columns (vector, scores) are ignored."""
    created_at = _utc(row["created_at"])
    assert created_at is not None
    return ContextItem(
        id=row["id"],
        content=row["content"],
        content_type=ContextType(row["content_type"]),
        state=ContextState(row["state"]),
        created_at=created_at,
        created_iteration=row["created_iteration"],
        source=row["source"],
        tags=tuple(row["tags"] or ()),
        metadata=json.loads(row["metadata"]),
        summary=row["summary"],
        original_length=row["original_length"],
        # Stores created before the column existed are migrated on open, but archive month
        # tables written then have no such column.
        sequence=row.get("sequence"),
    )


def iteration_to_row(result: IterationResult) -> dict[str, Any]:
    """One ``iterations`` row."""
    row = result.model_dump(mode="python")
    row["tool_calls"] = list(result.tool_calls)
    row["artifacts"] = list(result.artifacts)
    return row


def iteration_from_row(row: Mapping[str, Any]) -> IterationResult:
    """Rebuild an ``IterationResult``."""
    return IterationResult.model_validate({**row, "created_at": _utc(row["created_at"])})
