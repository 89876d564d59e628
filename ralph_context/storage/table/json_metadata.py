"""Moving a table's ``metadata`` column from JSON text to Lance's JSON type, in place.

Stores written before metadata filters kept metadata as a text column, which LanceDB's
JSON functions refuse. The move adds the converted column beside the old one (a column
write: no row is rewritten, row ids and every index stay), drops the old column and renames
the new one. Each step is one commit, and each state in between is recognised on the next
open, so a move cut short by a crash finishes there; nothing is lost in any of them.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ralph_context.storage.table.schema import METADATA_TYPE

__all__ = ["is_json", "migrate"]

_COLUMN = "metadata"
_STAGING = "metadata_json"


def is_json(table: Any) -> bool:
    """Whether ``table``'s metadata column is Lance JSON (filters can look into it)."""
    names = table.schema.names
    return _COLUMN in names and _json_field(table.schema.field(_COLUMN))


def _json_field(field: pa.Field) -> bool:
    return (field.metadata or {}).get(b"ARROW:extension:name") == b"lance.json"


def _converted(batch: pa.RecordBatch) -> pa.RecordBatch:
    text = batch.column(_COLUMN).cast(pa.string())
    return pa.RecordBatch.from_arrays([pa.array(text.to_pylist(), METADATA_TYPE)], [_STAGING])


def migrate(table: Any) -> bool:
    """Finish moving ``table``'s metadata to Lance JSON; ``True`` if anything changed (open
    the table again to see it)."""
    if is_json(table):
        return False
    dataset = table.to_lance()
    if _COLUMN in table.schema.names:
        if _STAGING not in table.schema.names:
            dataset.add_columns(_converted, read_columns=[_COLUMN])
        dataset.drop_columns([_COLUMN])
    dataset.alter_columns({"path": _STAGING, "name": _COLUMN})
    return True
