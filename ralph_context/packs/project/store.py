"""Project memory's four tables and the blocking functions that read them (writes are in
``writes.py``).

Every function here runs inside the storage actor (``Engine.in_packs``), one request at a time.
Learnings carry ``search_text`` (title, problem and solution on separate lines) with a
full-text index, and the vector of that same text, for hybrid search.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from lancedb.index import FTS, BTree, LabelList

from ralph_context.config import ScoringSettings
from ralph_context.embeddings.local import Vectors
from ralph_context.errors import ItemNotFound
from ralph_context.packs.search import hybrid_search
from ralph_context.packs.tables import (
    PackTable,
    any_tag,
    equals,
    timestamp,
    vector_field,
    where,
)
from ralph_context.storage.table.pack_space import PackSpace

__all__ = [
    "ProjectTables",
    "Row",
    "active_cycle",
    "is_active",
    "learning_condition",
    "newest",
    "next_id",
    "open_tables",
    "project_by_repo",
    "require_cycle",
    "require_project",
    "search_learnings",
    "search_text",
    "tag_counts",
    "upsert_rows",
]

Row = dict[str, Any]


def _text(name: str, *, nullable: bool = True) -> pa.Field:
    return pa.field(name, pa.string(), nullable=nullable)


def _schemas(dimension: int) -> dict[str, pa.Schema]:
    ident = _text("id", nullable=False)
    stamps = (timestamp("created_at"), timestamp("updated_at"))
    return {
        "projects": pa.schema(
            [
                ident,
                _text("name", nullable=False),
                _text("description"),
                _text("repo_path"),
                _text("tech_stack"),  # JSON text, as in Project Studio
                _text("status", nullable=False),
                *stamps,
            ]
        ),
        "cycles": pa.schema(
            [
                ident,
                _text("project_id", nullable=False),
                _text("name", nullable=False),
                _text("intent"),
                _text("status", nullable=False),
                *stamps,
            ]
        ),
        "learnings": pa.schema(
            [
                ident,
                _text("title", nullable=False),
                _text("problem", nullable=False),
                _text("solution", nullable=False),
                pa.field("tags", pa.list_(pa.string())),
                _text("project_id"),
                _text("cycle_id"),
                _text("session_id"),
                *stamps,
                _text("search_text", nullable=False),
                vector_field(dimension),
            ]
        ),
        "decisions": pa.schema(
            [
                ident,
                _text("title", nullable=False),
                _text("decision", nullable=False),
                _text("context"),
                _text("project_id"),
                timestamp("created_at"),
            ]
        ),
    }


@dataclass(frozen=True)
class ProjectTables:
    """The pack's tables, opened once per store."""

    projects: PackTable
    cycles: PackTable
    learnings: PackTable
    decisions: PackTable

    def named(self, kind: str) -> PackTable:
        table: PackTable = getattr(self, kind)
        return table


def open_tables(space: PackSpace) -> ProjectTables:
    """The tables in ``space``, created with their indexes on first use."""
    return space.tables("project", _build)


def _build(space: PackSpace) -> ProjectTables:
    schemas = _schemas(space.dimension)
    by_project = [("project_id", BTree())]
    return ProjectTables(
        projects=PackTable(
            space, "project_projects", schemas["projects"], [("repo_path", BTree())]
        ),
        cycles=PackTable(space, "project_cycles", schemas["cycles"], by_project),
        learnings=PackTable(
            space,
            "project_learnings",
            schemas["learnings"],
            [*by_project, ("tags", LabelList()), ("search_text", FTS())],
        ),
        decisions=PackTable(space, "project_decisions", schemas["decisions"], by_project),
    )


def search_text(title: str, problem: str, solution: str) -> str:
    """What a learning is found by, in words and in meaning."""
    return "\n".join(part for part in (title, problem, solution) if part)


def upsert_rows(table: PackTable, rows: Sequence[Row]) -> tuple[int, int]:
    """Insert or replace ``rows`` by id in one write; returns (added, updated)."""
    if not rows:
        return 0, 0
    known = {row["id"] for row in table.rows(columns=["id"])}
    updated = sum(1 for row in rows if row["id"] in known)
    table.upsert(rows)
    return len(rows) - updated, updated


def next_id(table: PackTable, prefix: str) -> str:
    """The highest ``{prefix}-nnn`` number in use plus one, zero-padded to three digits."""
    pattern = re.compile(rf"{prefix}-(\d+)")
    numbers = [
        int(found.group(1))
        for row in table.rows(columns=["id"])
        if (found := pattern.fullmatch(row["id"]))
    ]
    return f"{prefix}-{max(numbers, default=0) + 1:03d}"


def newest(table: PackTable, condition: str | None, limit: int) -> list[Row]:
    """Matching rows, newest first (ties: highest id first)."""
    rows = table.rows(condition)
    rows.sort(key=lambda row: (row["created_at"], row["id"]), reverse=True)
    return rows[:limit]


# --- reads ---------------------------------------------------------------------------------


def require_project(tables: ProjectTables, project_id: str) -> Row:
    """The project with that id.

    Raises:
        ItemNotFound: No project has that id.
    """
    project = tables.projects.get(project_id)
    if project is None:
        raise ItemNotFound(
            f"no project with id {project_id!r} (update_project_state with a name creates one)"
        )
    return project


def require_cycle(tables: ProjectTables, cycle_id: str) -> Row:
    """The cycle with that id.

    Raises:
        ItemNotFound: No cycle has that id.
    """
    cycle = tables.cycles.get(cycle_id)
    if cycle is None:
        raise ItemNotFound(f"no cycle with id {cycle_id!r}")
    return cycle


def project_by_repo(tables: ProjectTables, repo_path: str) -> Row:
    """The project whose repository is at ``repo_path`` (normalised by the caller).

    Raises:
        ItemNotFound: No project records that repository path.
    """
    found = tables.projects.rows(equals("repo_path", repo_path), limit=1)
    if not found:
        raise ItemNotFound(
            f"no project with repo_path {repo_path!r} (update_project_state sets a project's "
            "repo_path)"
        )
    return found[0]


def active_cycle(tables: ProjectTables, project_id: str) -> Row | None:
    """The project's newest cycle with status 'active' (imported data may hold several)."""
    cycles = newest(tables.cycles, where(equals("project_id", project_id), is_active()), 1)
    return cycles[0] if cycles else None


def is_active() -> str:
    """Cycles with status 'active'."""
    return equals("status", "active")


def learning_condition(
    tables: ProjectTables, tags: Sequence[str], project_id: str | None
) -> str | None:
    """The filter of a learning query, after checking the project exists."""
    if project_id is not None:
        require_project(tables, project_id)
    return where(
        any_tag(tags) if tags else None,
        equals("project_id", project_id) if project_id is not None else None,
    )


def search_learnings(
    tables: ProjectTables,
    text: str,
    vector: Vectors | None,
    condition: str | None,
    *,
    limit: int,
    weights: ScoringSettings,
    min_similarity: float,
) -> list[tuple[Row, float]]:
    """Learnings matching ``text`` in words or meaning, best first, with match strength.

    Vector search ranks every row, so a hit counts only if it shares a word with the query
    or is at least ``min_similarity`` close to it (the same gate as context retrieval).
    """
    hits = hybrid_search(
        tables.learnings,
        text=text,
        column="search_text",
        vector=vector,
        condition=condition,
        limit=limit,
        weights=weights,
    )
    return [
        (hit.row, hit.match)
        for hit in hits
        if hit.lexical > 0 or (hit.similarity is not None and hit.similarity >= min_similarity)
    ]


def tag_counts(tables: ProjectTables, project_id: str | None) -> tuple[list[tuple[str, int]], int]:
    """Each tag with the number of learnings carrying it, most used first (ties by name),
    and how many learnings were counted."""
    condition = learning_condition(tables, (), project_id)
    rows = tables.learnings.rows(condition, columns=["tags"])
    counts = Counter(tag for row in rows for tag in set(row["tags"] or ()))
    return sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])), len(rows)
