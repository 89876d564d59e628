"""Table plumbing shared by the tool packs: open-or-create with indexes, upsert, reads.

Every ``where`` clause a pack builds goes through :func:`where`, whose parts are made here from
typed values (:func:`equals`, :func:`any_tag`, :func:`since`) with
:func:`~ralph_context.storage.table.filters.sql_string` quoting every user string; nothing a caller
typed reaches LanceDB raw.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from lancedb.index import FTS, Bitmap, BTree, LabelList

from ralph_context.errors import ModelMismatch
from ralph_context.storage.table.filters import sql_string
from ralph_context.storage.table.pack_space import PackSpace

__all__ = [
    "PackTable",
    "any_tag",
    "at_least",
    "equals",
    "now",
    "since",
    "timestamp",
    "vector_field",
    "where",
]

TIMESTAMP = pa.timestamp("us", tz="UTC")
# Rows read at most by a scan (analytics, tag counts): pack tables hold thousands of rows,
# not millions; past this a scan would need paging, and the limit says so in the docstrings.
SCAN_LIMIT = 100_000
# Writes between compactions: every LanceDB write is a version and reads slow as they pile up.
_OPTIMIZE_EVERY = 100

IndexConfig = BTree | Bitmap | LabelList | FTS


def timestamp(name: str, *, nullable: bool = False) -> pa.Field:
    """A UTC timestamp column, the one time type every pack table uses."""
    return pa.field(name, TIMESTAMP, nullable=nullable)


def vector_field(dimension: int) -> pa.Field:
    """The embedding column; null for rows written while no model was loaded."""
    return pa.field("vector", pa.list_(pa.float32(), dimension), nullable=True)


def _redact_value(redact: Callable[[str], str], value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        return [redact(v) for v in value]
    return value


def now() -> datetime:
    return datetime.now(UTC)


class PackTable:
    """One pack table: created with its schema and indexes on first use, compacted as it
    collects versions.

    Args:
        space: The store's pack space.
        name: Table name (prefixed by the pack, e.g. ``prompt_records``).
        schema: Arrow schema; must have a non-null string ``id`` column.
        indexes: ``(column, config)`` pairs built when missing (``id`` gets a BTree anyway).
    """

    def __init__(
        self,
        space: PackSpace,
        name: str,
        schema: pa.Schema,
        indexes: Sequence[tuple[str, IndexConfig]] = (),
    ) -> None:
        self.name = name
        self.space = space
        self.table = space.db.create_table(name, schema=schema, exist_ok=True)
        _check_vector_width(self.table.schema, schema, name)
        built = {tuple(index.columns) for index in self.table.list_indices()}
        for column, config in (("id", BTree()), *indexes):
            if (column,) not in built:
                self.table.create_index(column, config=config)
        self._writes = 0

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema

    @property
    def dimension(self) -> int:
        """Width of the table's ``vector`` column (its pack's embedding model)."""
        return int(self.table.schema.field("vector").type.list_size)

    def upsert(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert rows, replacing those whose id exists, in one write."""
        if rows:
            data = pa.Table.from_pylist(self._redacted(rows), schema=self.table.schema)
            builder = self.table.merge_insert("id")
            builder = builder.when_matched_update_all().when_not_matched_insert_all()
            # A row written while the model was down has a null vector, which merge_insert
            # refuses by default (add does not).
            builder.execute(data, on_bad_vectors="null")
            self._wrote()

    def add(self, rows: Sequence[dict[str, Any]]) -> None:
        """Append rows in one write (for logs whose rows are never replaced)."""
        if rows:
            self.table.add(pa.Table.from_pylist(self._redacted(rows), schema=self.table.schema))
            self._wrote()

    def update(self, condition: str, values: dict[str, Any]) -> None:
        """Set columns on the rows matching ``condition`` (from :func:`where`), one write."""
        self.table.update(where=condition, values=self._redacted([values])[0])
        self._wrote()

    def _redacted(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows with secrets redacted from their texts (ids and vectors are not text)."""
        redact = self.space.redact
        return [
            {
                key: value if key == "id" else _redact_value(redact, value)
                for key, value in row.items()
            }
            for row in rows
        ]

    def get(self, row_id: str, columns: Sequence[str] | None = None) -> dict[str, Any] | None:
        rows = self.rows(equals("id", row_id), limit=1, columns=columns)
        return rows[0] if rows else None

    def rows(
        self,
        condition: str | None = None,
        *,
        limit: int = SCAN_LIMIT,
        columns: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows matching ``condition`` (from :func:`where`), unordered, without the vector
        unless asked for."""
        query = self.table.search()
        if condition:
            query = query.where(condition)
        wanted = list(columns) if columns is not None else self._plain_columns()
        return list(query.select(wanted).limit(limit).to_arrow().to_pylist())

    def count(self, condition: str | None = None) -> int:
        return int(self.table.count_rows(condition))

    def _plain_columns(self) -> list[str]:
        return [name for name in self.table.schema.names if name != "vector"]

    def _wrote(self) -> None:
        self._writes += 1
        if self._writes % _OPTIMIZE_EVERY == 0:
            self.table.optimize()


def _check_vector_width(stored: pa.Schema, wanted: pa.Schema, name: str) -> None:
    """A pack table made with another model's vectors is refused like the item table is."""
    if "vector" not in wanted.names or "vector" not in stored.names:
        return
    have, want = stored.field("vector").type.list_size, wanted.field("vector").type.list_size
    if have != want:
        raise ModelMismatch(
            f"table {name!r} holds {have}-d vectors but the model makes {want}-d ones; "
            "move the table aside (its prompts/learnings keep their text) or use the old model"
        )


def equals(column: str, value: str | int | bool) -> str:
    """``column = value`` with the value quoted or rendered from its type."""
    if isinstance(value, bool):
        return f"{column} = {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"{column} = {int(value)}"
    return f"{column} = {sql_string(value)}"


def any_tag(tags: Iterable[str], column: str = "tags") -> str:
    """Rows carrying at least one of ``tags``."""
    literals = ", ".join(sql_string(tag) for tag in tags)
    return f"array_has_any({column}, [{literals}])"


def at_least(column: str, value: float) -> str:
    """``column >= value`` for a finite number (validated by the caller's schema)."""
    return f"{column} >= {float(value)!r}"


def since(column: str, moment: datetime) -> str:
    """Rows at or after ``moment`` (a timezone-aware datetime)."""
    stamp = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return f"{column} >= TIMESTAMP '{stamp}'"


def where(*parts: str | None) -> str | None:
    """The given conditions joined by AND; ``None`` when there are none."""
    present = [part for part in parts if part]
    return " AND ".join(f"({part})" for part in present) if present else None
