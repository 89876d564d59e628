"""Typed filters rendered to LanceDB ``where`` clauses.

Only this module writes SQL. Column names are fixed here, enum values come from our own enums,
and every string a user supplied goes through :func:`sql_string`, which produces a standard
SQL literal (single quotes doubled). Nothing a caller types is ever spliced into a clause raw.
"""

from __future__ import annotations

from dataclasses import dataclass

from ralph_context.models import ContextState, ContextType

__all__ = ["ItemFilter", "sql_string"]


def sql_string(value: str) -> str:
    """A SQL string literal for ``value``: ``x' OR 1=1 --`` becomes ``'x'' OR 1=1 --'``."""
    return "'" + value.replace("'", "''") + "'"


def _in_list(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(sql_string(v) for v in values)})"


@dataclass(frozen=True)
class ItemFilter:
    """Conditions on ``context_items``; empty fields mean "no condition"."""

    types: tuple[ContextType, ...] = ()
    states: tuple[ContextState, ...] = ()
    tags_any: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    min_iteration: int | None = None
    max_iteration: int | None = None
    has_vector: bool | None = None
    sequences: tuple[int, ...] = ()

    def to_sql(self) -> str | None:
        """The ``where`` clause, or ``None`` when nothing is filtered."""
        parts: list[str] = []
        if self.types:
            parts.append(_in_list("content_type", tuple(t.value for t in self.types)))
        if self.states:
            parts.append(_in_list("state", tuple(s.value for s in self.states)))
        if self.tags_any:
            literals = ", ".join(sql_string(tag) for tag in self.tags_any)
            parts.append(f"array_has_any(tags, [{literals}])")
        if self.ids:
            parts.append(_in_list("id", self.ids))
        if self.min_iteration is not None:
            parts.append(f"created_iteration >= {int(self.min_iteration)}")
        if self.max_iteration is not None:
            parts.append(f"created_iteration <= {int(self.max_iteration)}")
        if self.sequences:
            # int(): these come from the store's own column, but a clause never trusts that.
            parts.append(f"sequence IN ({', '.join(str(int(n)) for n in self.sequences)})")
        if self.has_vector is not None:
            parts.append("vector IS NOT NULL" if self.has_vector else "vector IS NULL")
        return " AND ".join(f"({p})" for p in parts) if parts else None
