"""Typed filters rendered to LanceDB ``where`` clauses.

``ForgetSelection`` is the selection a forget call made (``forgetting.check_selection``
validates it), as a filter on the hot table and a match on archived items.

Only this module writes SQL. Column names are fixed here, enum values come from our own enums,
and every string a user supplied goes through :func:`sql_string`, which produces a standard
SQL literal (single quotes doubled). Nothing a caller types is ever spliced into a clause raw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ralph_context.metadata_filter import MetadataCondition, MetadataOp, Scalar
from ralph_context.models import ContextItem, ContextState, ContextType

__all__ = ["DueFilter", "ForgetSelection", "ItemFilter", "metadata_sql", "sql_string"]


def sql_string(value: str) -> str:
    """A SQL string literal for ``value``: ``x' OR 1=1 --`` becomes ``'x'' OR 1=1 --'``."""
    return "'" + value.replace("'", "''") + "'"


def _in_list(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(sql_string(v) for v in values)})"


_SQL_OPS = {
    MetadataOp.EQ: "=",
    MetadataOp.NE: "<>",
    MetadataOp.LT: "<",
    MetadataOp.LE: "<=",
    MetadataOp.GT: ">",
    MetadataOp.GE: ">=",
}


def _is_number(value: Scalar) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def metadata_sql(condition: MetadataCondition) -> str:
    """One condition on the ``metadata`` column (Lance JSON).

    ``json_extract`` gives a value's JSON text (``'"py"'``, ``'3'``, ``'true'``; null when
    the key is missing) and never fails on a row, whatever that row holds; the typed
    ``json_get_*`` functions fail the whole query on one row of another type. So text and
    booleans are compared as JSON text, against a literal encoded as Lance encodes it (the
    same escapes as ``json.dumps``, checked for quotes, backslashes, control characters and
    non-ASCII); numbers through ``TRY_CAST(... AS DOUBLE)``, null for anything not a
    number. Text ordering also requires the value to be text (``LIKE '"%'``); a quote,
    backslash or control character inside text orders as its escape.
    """
    path = "$[" + json.dumps(condition.key, ensure_ascii=False) + "]"
    text = f"json_extract(metadata, {sql_string(path)})"
    number = f"TRY_CAST({text} AS DOUBLE)"
    op = condition.op
    values = condition.values
    if op in (MetadataOp.IN, MetadataOp.NOT_IN):
        numbers = ", ".join(_float(v) for v in values if _is_number(v))
        texts = ", ".join(_json_literal(v) for v in values if not _is_number(v))
        if op is MetadataOp.IN:
            found = [f"{number} IN ({numbers})"] if numbers else []
            found += [f"{text} IN ({texts})"] if texts else []
            return "(" + " OR ".join(found) + ")"
        # A value not among the numbers (or not a number) and not among the rest.
        kept = [f"({number} IS NULL OR {number} NOT IN ({numbers}))"] if numbers else []
        kept += [f"({text} IS NULL OR {text} NOT IN ({texts}))"] if texts else []
        return "(" + " AND ".join(kept) + ")"
    value = values[0]
    sql_op = _SQL_OPS[op]
    if _is_number(value):
        compared = f"{number} {sql_op} {_float(value)}"
        return f"({number} IS NULL OR {compared})" if op is MetadataOp.NE else compared
    literal = _json_literal(value)
    if op is MetadataOp.NE:
        return f"({text} IS NULL OR {text} <> {literal})"
    if op is MetadataOp.EQ:
        return f"{text} = {literal}"
    # Without the closing quote on both sides: '"ab"' > '"ab!"' (the quote sorts after
    # '!' and ' '), yet "ab" < "ab!".
    opened = sql_string(json.dumps(value, ensure_ascii=False)[:-1])
    return f"({text} LIKE '\"%' AND left({text}, length({text}) - 1) {sql_op} {opened})"


def _float(value: Scalar) -> str:
    """A finite float as a SQL literal (``repr`` gives ``1e+20``, ``-2.5``, ``3.0``)."""
    return repr(float(value))


def _json_literal(value: Scalar) -> str:
    return sql_string(json.dumps(value, ensure_ascii=False))


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
    metadata: tuple[MetadataCondition, ...] = ()
    created_in: tuple[int, ...] = ()

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
        if self.created_in:
            numbers = ", ".join(str(int(n)) for n in self.created_in)
            parts.append(f"created_iteration IN ({numbers})")
        parts.extend(metadata_sql(condition) for condition in self.metadata)
        if self.has_vector is not None:
            parts.append("vector IS NOT NULL" if self.has_vector else "vector IS NULL")
        return " AND ".join(f"({p})" for p in parts) if parts else None


@dataclass(frozen=True)
class DueFilter:
    """Hot items whose age puts them past their state: the only rows a clock pass can move.

    Each bound is an iteration: an item created before it is old enough for that state
    (``aging_before`` = now - aging_after, and so on). Ageless types never move by age;
    ``all_before``, when set, adds every item created before it whatever its type and state
    (pruning by age, when an item's default usefulness is already below the prune bar).
    """

    aging_before: int
    summarize_before: int
    archive_before: int
    ageless: tuple[ContextType, ...] = ()
    all_before: int | None = None

    def to_sql(self) -> str:
        active = sql_string(ContextState.ACTIVE.value)
        aging = sql_string(ContextState.AGING.value)
        moving = (
            f"(state = {active} AND created_iteration < {int(self.aging_before)})"
            f" OR (state IN ({active}, {aging})"
            f" AND created_iteration < {int(self.summarize_before)})"
            f" OR created_iteration < {int(self.archive_before)}"
        )
        if self.ageless:
            ageless = _in_list("content_type", tuple(t.value for t in self.ageless))
            moving = f"NOT ({ageless}) AND ({moving})"
        if self.all_before is not None:
            return f"({moving}) OR created_iteration < {int(self.all_before)}"
        return moving


@dataclass(frozen=True)
class ForgetSelection:
    """A validated selection; empty selectors do not narrow it."""

    ids: tuple[str, ...] = ()
    types: tuple[ContextType, ...] = ()
    tags: tuple[str, ...] = ()
    older_than: int | None = None
    iterations: tuple[int, ...] = ()

    @property
    def takes_records(self) -> bool:
        """Whether iteration records go too: when the selection picks by iteration alone
        (``iterations``, ``older_than``). Ids, types and tags pick items, which a record
        is not (a record whose error item goes is cleared instead; see ``forgetting``)."""
        by_iteration = bool(self.iterations) or self.older_than is not None
        return by_iteration and not (self.ids or self.types or self.tags)

    def live_filter(self) -> ItemFilter:
        """The selection as a filter on the hot table."""
        return ItemFilter(
            ids=self.ids,
            types=self.types,
            tags_any=self.tags,
            max_iteration=None if self.older_than is None else self.older_than - 1,
            created_in=self.iterations,
        )

    def matches(self, item: ContextItem) -> bool:
        """The same selection on an archived item (the archive has no such filter)."""
        return (
            (not self.ids or item.id in self.ids)
            and (not self.types or item.content_type in self.types)
            and (not self.tags or any(tag in self.tags for tag in item.tags))
            and (self.older_than is None or item.created_iteration < self.older_than)
            and (not self.iterations or item.created_iteration in self.iterations)
        )
