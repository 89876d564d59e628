"""Import a Project Studio database (SQLite) into project memory, never writing to it.

The file is opened with SQLite's ``mode=ro`` URI, so no write, journal or lock file can come
from us; reading the rows happens before any engine starts, so a wrong path or a database of
another shape costs no model load and changes nothing in the store.

Shape tolerated: each of the four tables (projects, cycles, learnings, decisions) may be
missing, and so may its optional columns (a note says so and the value is imported empty);
a table that exists without a required column stops the whole import before anything is
written. Values are normalised on the way in: integer ids get the pack's prefix (``23`` →
``L-023``; project ids stay as they are), tags may be a JSON list or comma-separated text,
timestamps ISO text or Unix seconds (missing ones take the file's modification time, which
the import never changes, so re-running it writes the same rows).

Import upserts by id (a re-run adds nothing and updates everything in place) and embeds
learnings in batches, one store write per batch.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ralph_context.engine import Engine
from ralph_context.errors import InvalidInput
from ralph_context.packs.project.memory import normal_repo_path
from ralph_context.packs.project.store import open_tables, search_text, upsert_rows
from ralph_context.storage.table.pack_space import PackSpace

__all__ = ["TABLES", "ImportReport", "StudioData", "TableCount", "import_studio", "read_studio"]

Row = dict[str, Any]

TABLES = ("projects", "cycles", "learnings", "decisions")
REQUIRED: dict[str, tuple[str, ...]] = {
    "projects": ("id", "name"),
    "cycles": ("id", "project_id", "name", "status"),
    "learnings": ("id", "title"),
    "decisions": ("id", "title", "decision"),
}
# Columns of the Studio tables that may be absent (a note says so).
OPTIONAL: dict[str, tuple[str, ...]] = {
    "projects": ("description", "repo_path", "tech_stack", "status"),
    "cycles": ("intent", "created_at"),
    "learnings": (
        "problem",
        "solution",
        "tags",
        "project_id",
        "cycle_id",
        "session_id",
        "created_at",
        "updated_at",
    ),
    "decisions": ("context", "project_id", "created_at"),
}
# Read when a file has them, silently: the Studio tables do not define them.
EXTRA: dict[str, tuple[str, ...]] = {
    "projects": ("created_at", "updated_at"),
    "cycles": ("updated_at",),
    "learnings": (),
    "decisions": (),
}
# Integer ids become prefixed ids, the form the pack itself writes.
PREFIX = {"cycles": "C", "learnings": "L", "decisions": "D"}
EMBED_BATCH = 64


@dataclass(frozen=True)
class StudioData:
    """The rows read from a Studio file, in the pack's column names."""

    path: Path
    rows: dict[str, list[Row]]
    notes: list[str] = field(default_factory=list)


def read_studio(path: Path) -> StudioData:
    """Every row of the four tables, read-only.

    Raises:
        InvalidInput: The file is missing, is not SQLite, has none of the tables, or one of
            its tables lacks a required column.
    """
    if not path.is_file():
        raise InvalidInput(f"no Project Studio database at {path.resolve()}")
    fallback = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    notes: list[str] = []
    try:
        with closing(sqlite3.connect(_read_only_uri(path), uri=True)) as db:
            raw = _read_tables(db, path, notes)
    except sqlite3.DatabaseError as exc:
        raise InvalidInput(f"{path} is not a readable SQLite database ({exc})") from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from exc
    rows = {kind: _normalise(kind, raw.get(kind, []), fallback, notes) for kind in TABLES}
    return StudioData(path=path, rows=rows, notes=notes)


def _read_only_uri(path: Path) -> str:
    """``mode=ro``, plus ``immutable=1`` for a WAL database no one has open.

    Reading a WAL-mode file even read-only makes SQLite create ``-wal`` and ``-shm`` files
    beside it, which then stay. With no ``-wal`` file present no writer is active, so the file
    can be read as immutable, which creates nothing. (A writer starting during the read itself
    is the one window this leaves; the import reads for milliseconds.)
    """
    uri = path.resolve().as_uri() + "?mode=ro"
    with path.open("rb") as file:
        header = file.read(20)
    wal_mode = header.startswith(b"SQLite format 3\x00") and header[18:20] == b"\x02\x02"
    if wal_mode and not path.with_name(path.name + "-wal").exists():
        uri += "&immutable=1"
    return uri


def _read_tables(db: sqlite3.Connection, path: Path, notes: list[str]) -> dict[str, list[Row]]:
    listed = db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    present = {str(name).lower(): str(name) for (name,) in listed}
    if not any(kind in present for kind in TABLES):
        raise InvalidInput(
            f"{path} is not a Project Studio database: it has none of the tables "
            + ", ".join(TABLES)
        )
    problems: list[str] = []
    found: dict[str, dict[str, str]] = {}  # table -> our column name -> the file's spelling
    for kind in TABLES:
        if kind not in present:
            notes.append(f"no {kind} table: nothing imported for it")
            continue
        columns = _columns(db, present[kind])
        missing = [name for name in REQUIRED[kind] if name not in columns]
        if missing:
            problems.append(
                f"table {kind} lacks required column(s) {', '.join(missing)} "
                f"(it has {', '.join(sorted(columns))})"
            )
            continue
        absent = [name for name in OPTIONAL[kind] if name not in columns]
        if absent:
            notes.append(f"{kind}: no column(s) {', '.join(absent)}; imported as empty")
        wanted = (*REQUIRED[kind], *OPTIONAL[kind], *EXTRA[kind])
        found[kind] = {name: columns[name] for name in wanted if name in columns}
    if problems:
        raise InvalidInput(f"{path}: " + "; ".join(problems) + "; nothing was imported")
    result: dict[str, list[Row]] = {}
    for kind, names in found.items():
        # Identifiers come from the file's own catalogue, matched to our fixed column lists.
        selected = ", ".join(f'"{spelled}"' for spelled in names.values())
        cursor = db.execute(f'SELECT {selected} FROM "{present[kind]}"')
        result[kind] = [dict(zip(names, values, strict=True)) for values in cursor]
    return result


def _columns(db: sqlite3.Connection, table: str) -> dict[str, str]:
    """The table's columns, lower-cased name to the file's spelling."""
    info = db.execute(f'PRAGMA table_info("{table}")').fetchall()
    return {str(row[1]).lower(): str(row[1]) for row in info}


def _normalise(kind: str, rows: list[Row], fallback: datetime, notes: list[str]) -> list[Row]:
    prefix = PREFIX.get(kind)
    kept: dict[str, Row] = {}
    skipped = 0
    for raw in rows:
        ident = _ident(raw.get("id"), prefix)
        if ident is None:
            skipped += 1
            continue
        created = _moment(raw.get("created_at"), fallback)
        row: Row = {"id": ident, "created_at": created}
        if kind == "projects":
            row |= {
                "name": _string(raw.get("name")) or ident,
                "description": _string(raw.get("description")),
                "repo_path": _repo(raw.get("repo_path")),
                "tech_stack": _json_text(raw.get("tech_stack")),
                "status": _string(raw.get("status")) or "active",
                "updated_at": _moment(raw.get("updated_at"), created),
            }
        elif kind == "cycles":
            row |= {
                "project_id": _ident(raw.get("project_id"), None) or "",
                "name": _string(raw.get("name")) or ident,
                "intent": _string(raw.get("intent")),
                "status": _string(raw.get("status")) or "unknown",
                "updated_at": _moment(raw.get("updated_at"), created),
            }
        elif kind == "learnings":
            row |= {
                "title": _string(raw.get("title")) or ident,
                "problem": _string(raw.get("problem")) or "",
                "solution": _string(raw.get("solution")) or "",
                "tags": _tags(raw.get("tags")),
                "project_id": _ident(raw.get("project_id"), None),
                "cycle_id": _ident(raw.get("cycle_id"), PREFIX["cycles"]),
                "session_id": _string(raw.get("session_id")),
                "updated_at": _moment(raw.get("updated_at"), created),
            }
        else:
            row |= {
                "title": _string(raw.get("title")) or ident,
                "decision": _string(raw.get("decision")) or "",
                "context": _string(raw.get("context")),
                "project_id": _ident(raw.get("project_id"), None),
            }
        kept[ident] = row  # a repeated id: the last row wins, as an upsert would
    if skipped:
        notes.append(f"{kind}: {skipped} row(s) without an id skipped")
    return list(kept.values())


def _string(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _ident(value: object, prefix: str | None) -> str | None:
    text = _string(value)
    if text is None:
        return None
    if prefix is not None and text.isdigit():
        return f"{prefix}-{int(text):03d}"
    return text


def _repo(value: object) -> str | None:
    text = _string(value)
    return None if text is None else normal_repo_path(text)


def _moment(value: object, fallback: datetime) -> datetime:
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value  # milliseconds, as JS writes them
        return datetime.fromtimestamp(seconds, UTC)
    text = _string(value)
    if text is None:
        return fallback
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return fallback
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _tags(value: object) -> list[str]:
    text = _string(value)
    if text is None:
        return []
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = text.split(",")
    items = parsed if isinstance(parsed, list) else [parsed]
    tags: list[str] = []
    for item in items:
        tag = _string(item)
        if tag is not None and tag not in tags:
            tags.append(tag)
    return tags


def _json_text(value: object) -> str | None:
    text = _string(value)
    if text is None:
        return None
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:  # plain "python, fastapi": kept as a list of names
        return json.dumps([part.strip() for part in text.split(",") if part.strip()])


# --- import --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableCount:
    read: int
    added: int
    updated: int


@dataclass(frozen=True)
class ImportReport:
    """What an import did, per table."""

    path: Path
    tables: dict[str, TableCount]
    embedded: int
    notes: list[str]


def _upsert(kind: str, rows: list[Row], space: PackSpace) -> tuple[int, int]:
    return upsert_rows(open_tables(space).named(kind), rows)


async def import_studio(
    engine: Engine,
    data: StudioData,
    *,
    batch_size: int = EMBED_BATCH,
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Upsert every row of ``data`` into the engine's store; ``progress(done, total)`` after
    each batch of learnings.

    Raises:
        ActorUnavailable, StoreError: The store failed; rows already written stay (a re-run
            completes the import, since it upserts by id).
    """
    counts: dict[str, TableCount] = {}
    for kind in ("projects", "cycles", "decisions"):
        rows = data.rows.get(kind, [])
        added, updated = await engine.in_packs(partial(_upsert, kind, rows))
        counts[kind] = TableCount(len(rows), added, updated)
    learnings = data.rows.get("learnings", [])
    added = updated = embedded = 0
    for start in range(0, len(learnings), batch_size):
        batch = [dict(row) for row in learnings[start : start + batch_size]]
        for row in batch:
            row["search_text"] = search_text(row["title"], row["problem"], row["solution"])
        vectors = await engine.embed([row["search_text"] for row in batch])
        for row, vector in zip(batch, vectors, strict=True):
            row["vector"] = None if vector is None else np.asarray(vector, np.float32).tolist()
            embedded += vector is not None
        done = await engine.in_packs(partial(_upsert, "learnings", batch))
        added, updated = added + done[0], updated + done[1]
        if progress is not None:
            progress(start + len(batch), len(learnings))
    counts["learnings"] = TableCount(len(learnings), added, updated)
    notes = list(data.notes)
    if learnings and embedded < len(learnings):
        reason = engine.semantic_unavailable or "the model did not answer"
        notes.append(
            f"{len(learnings) - embedded} learning(s) stored without a vector ({reason}); "
            "they are found by their words only"
        )
    return ImportReport(path=data.path, tables=counts, embedded=embedded, notes=notes)
