"""Importing a Project Studio SQLite file: read-only (bytes and mtime unchanged), tolerant of
missing optional parts, idempotent, embedded in batches, and served by the tools afterwards —
in process and through the real CLI."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest

from ralph_context.config import Settings
from ralph_context.errors import InvalidInput
from ralph_context.packs.project.studio import import_studio, read_studio
from tests.helpers import Loader
from tests.packs.conftest import Served, serving
from tests.server.mcp_scenario import call, error_of

STUDIO_SCHEMA = """
CREATE TABLE projects (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT, repo_path TEXT,
    tech_stack TEXT, status TEXT DEFAULT 'active'
);
CREATE TABLE cycles (
    id TEXT PRIMARY KEY, project_id TEXT REFERENCES projects(id), name TEXT, intent TEXT,
    status TEXT, created_at TEXT
);
CREATE TABLE learnings (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, problem TEXT, solution TEXT, tags TEXT,
    project_id TEXT, cycle_id TEXT, session_id TEXT, created_at TEXT, updated_at TEXT,
    priority INTEGER
);
CREATE TABLE decisions (
    id TEXT PRIMARY KEY, title TEXT, decision TEXT, context TEXT, project_id TEXT,
    created_at TEXT
);
CREATE TABLE sessions (id TEXT PRIMARY KEY, started_at TEXT);
"""
LOCKED = (
    "L-023",
    "SQLite database is locked during tests",
    "Parallel test workers failed with 'database is locked' on the shared SQLite file.",
    "Give each worker its own temporary database file.",
    '["sqlite", "testing"]',
)
LEARNINGS = 20  # L-001 .. L-020, then L-023 (Studio ids have gaps)
DECISIONS = 8
TABLE_COUNTS = {"projects": 2, "cycles": 2, "learnings": LEARNINGS + 1, "decisions": DECISIONS}


def create_studio(path: Path) -> Path:
    """A Studio database as the app leaves it: JSON and comma tags, ISO times, extra tables."""
    with closing(sqlite3.connect(path)) as db, db:
        db.executescript(STUDIO_SCHEMA)
        db.executemany(
            "INSERT INTO projects VALUES (?, ?, ?, ?, ?, ?)",
            [
                (
                    "studio",
                    "Project Studio",
                    "Desktop app for planning work",
                    "/home/dev/studio/",
                    '["typescript", "sqlite"]',
                    "active",
                ),
                ("api", "Billing API", None, "/home/dev/api", "python, fastapi", "paused"),
            ],
        )
        db.executemany(
            "INSERT INTO cycles VALUES (?, ?, ?, ?, ?, ?)",
            [
                ("C-001", "studio", "Cycle 1", "Ship the board view", "completed", "2024-01-05"),
                ("C-002", "studio", "Cycle 2", "Sync with GitHub issues", "active", "2024-02-01"),
            ],
        )
        rows: list[tuple[Any, ...]] = []
        for n in range(1, LEARNINGS + 1):
            tags = '["ui", "react"]' if n % 2 else "backend, api"
            rows.append(
                (
                    f"L-{n:03d}",
                    f"Lesson number {n}",
                    f"Problem {n}",
                    f"Solution {n}",
                    tags,
                    "studio" if n <= 15 else "api",
                    "C-001" if n <= 10 else None,
                    f"session-{n}",
                    f"2024-02-{n:02d}T12:00:00+00:00",
                    None,
                    n,
                )
            )
        *head, tags = LOCKED
        rows.append((*head, tags, "studio", "C-002", "session-x", "2024-03-01T08:00:00Z", None, 1))
        db.executemany("INSERT INTO learnings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        db.executemany(
            "INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?)",
            [
                (f"D-{n:03d}", f"Decision {n}", f"We do {n}", None, "studio", f"2024-02-{n:02d}")
                for n in range(1, DECISIONS + 1)
            ],
        )
    return path


def fingerprint(path: Path) -> tuple[str, int, list[str]]:
    """The file's hash and mtime, and what its folder holds (no journal or lock files)."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest, path.stat().st_mtime_ns, sorted(p.name for p in path.parent.iterdir())


@contextmanager
def unchanged(path: Path) -> Iterator[None]:
    before = fingerprint(path)
    yield
    assert fingerprint(path) == before


@pytest.fixture
def studio_db(tmp_path: Path) -> Path:
    folder = tmp_path / "studio"
    folder.mkdir()
    return create_studio(folder / "studio.db")


def test_rows_are_read_read_only_and_normalised(studio_db: Path) -> None:
    with unchanged(studio_db):
        data = read_studio(studio_db)
    assert data.notes == []
    assert {kind: len(rows) for kind, rows in data.rows.items()} == TABLE_COUNTS
    projects = {row["id"]: row for row in data.rows["projects"]}
    assert projects["studio"]["repo_path"] == "/home/dev/studio"
    assert json.loads(projects["api"]["tech_stack"]) == ["python", "fastapi"]
    learnings = {row["id"]: row for row in data.rows["learnings"]}
    assert learnings["L-001"]["tags"] == ["ui", "react"]
    assert learnings["L-002"]["tags"] == ["backend", "api"]
    assert learnings["L-023"]["created_at"].isoformat() == "2024-03-01T08:00:00+00:00"
    assert learnings["L-001"]["updated_at"] == learnings["L-001"]["created_at"]
    # Projects carry no times in Studio: they take the file's mtime, stable across re-runs.
    assert projects["studio"]["created_at"].timestamp() == pytest.approx(studio_db.stat().st_mtime)


def test_a_wal_database_is_read_with_studio_closed_or_open(studio_db: Path) -> None:
    with closing(sqlite3.connect(studio_db)) as db:
        db.execute("PRAGMA journal_mode=WAL")
    with unchanged(studio_db):  # closed: read as immutable, no -wal/-shm files appear
        assert len(read_studio(studio_db).rows["learnings"]) == LEARNINGS + 1
    with closing(sqlite3.connect(studio_db)) as studio, studio:  # Studio running, mid-session
        studio.execute("INSERT INTO learnings (id, title) VALUES ('L-030', 'Fresh lesson')")
        studio.commit()
        ids = {row["id"] for row in read_studio(studio_db).rows["learnings"]}
    assert "L-030" in ids  # committed but still only in the -wal file


def test_missing_optional_parts_are_noted_and_integer_ids_get_prefixes(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE Learnings (ID INTEGER PRIMARY KEY, Title TEXT, tags TEXT)")
        db.execute("INSERT INTO Learnings VALUES (7, 'Old lesson', 'a, b ,, a')")
        db.execute("INSERT INTO Learnings VALUES (NULL, NULL, NULL)")  # gets rowid 8
    with unchanged(path):
        data = read_studio(path)
    (row, _) = data.rows["learnings"]
    assert (row["id"], row["title"], row["tags"]) == ("L-007", "Old lesson", ["a", "b"])
    assert row["problem"] == "" and row["project_id"] is None
    assert data.rows["projects"] == [] and data.rows["decisions"] == []
    assert "no projects table: nothing imported for it" in data.notes
    assert any(note.startswith("learnings: no column(s) problem, solution") for note in data.notes)


def test_a_table_without_a_required_column_stops_the_import(tmp_path: Path) -> None:
    path = tmp_path / "bad.db"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE learnings (id TEXT, problem TEXT)")
        db.execute("CREATE TABLE decisions (id TEXT, title TEXT)")
    with unchanged(path), pytest.raises(InvalidInput) as refused:
        read_studio(path)
    assert str(refused.value) == (
        f"{path}: table learnings lacks required column(s) title (it has id, problem); "
        "table decisions lacks required column(s) decision (it has id, title); "
        "nothing was imported"
    )


def test_missing_and_foreign_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"no Project Studio database at .*nowhere\.db"):
        read_studio(tmp_path / "nowhere.db")
    text = tmp_path / "notes.db"
    text.write_text("not a database", encoding="utf-8")
    with unchanged(text), pytest.raises(InvalidInput, match="is not a readable SQLite database"):
        read_studio(text)
    empty = tmp_path / "empty.db"
    with closing(sqlite3.connect(empty)) as db, db:
        db.execute("CREATE TABLE notes (id TEXT)")
    with pytest.raises(InvalidInput, match="not a Project Studio database: it has none of"):
        read_studio(empty)


async def assert_served(client: mcp.Client) -> None:
    """What an imported Studio database looks like through the tools."""
    lesson = await call(client, "get_learning", id="L-023")
    assert lesson["title"] == LOCKED[1] and lesson["tags"] == ["sqlite", "testing"]
    assert (lesson["project_id"], lesson["cycle_id"]) == ("studio", "C-002")
    found = await call(client, "query_learnings", search="tests fail because the db file is busy")
    assert found["mode"] == "hybrid" and found["learnings"][0]["id"] == "L-023"
    context = await call(client, "get_project_context", repo_path="/home/dev/studio")
    assert context["project"]["tech_stack"] == ["typescript", "sqlite"]
    assert context["active_cycle"]["id"] == "C-002"
    assert [r["id"] for r in context["recent_learnings"]] == [
        "L-023",
        "L-015",
        "L-014",
        "L-013",
        "L-012",
    ]
    assert [r["id"] for r in context["recent_decisions"]] == [f"D-00{n}" for n in (8, 7, 6, 5, 4)]
    intent = await call(client, "get_cycle_intent", project_id="studio")
    assert intent["intent"] == "Sync with GitHub issues"
    tags = {t["tag"]: t["count"] for t in (await call(client, "list_tags"))["tags"]}
    assert tags == {"ui": 10, "react": 10, "backend": 10, "api": 10, "sqlite": 1, "testing": 1}
    assert await error_of(client, "get_learning", id="L-021") == (
        "get_learning: no learning with id 'L-021' (query_learnings lists the stored ones)"
    )


async def test_import_upserts_by_id_in_batches_and_the_tools_serve_it(
    served: Served, studio_db: Path
) -> None:
    progress: list[tuple[int, int]] = []
    with unchanged(studio_db), anyio.fail_after(120):
        data = read_studio(studio_db)
        first = await import_studio(
            served.engine, data, batch_size=8, progress=lambda *p: progress.append(p)
        )
        again = await import_studio(served.engine, read_studio(studio_db))
    assert progress == [(8, 21), (16, 21), (21, 21)]
    assert {k: (c.read, c.added, c.updated) for k, c in first.tables.items()} == {
        kind: (n, n, 0) for kind, n in TABLE_COUNTS.items()
    }
    assert {k: (c.read, c.added, c.updated) for k, c in again.tables.items()} == {
        kind: (n, 0, n) for kind, n in TABLE_COUNTS.items()
    }
    assert first.embedded == again.embedded == LEARNINGS + 1 and first.notes == []
    with anyio.fail_after(60):
        await assert_served(served.client)
        # New captures continue after the highest imported number.
        captured = await call(
            served.client, "capture_learning", title="t", problem="p", solution="s"
        )
        assert captured["id"] == "L-024"
        decided = await call(served.client, "capture_decision", title="t", decision="d")
        assert decided["id"] == "D-009"


# --- the CLI, as a user runs it --------------------------------------------------------------


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "ralph.yaml"
    path.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n    packs: [project]\n",
        encoding="utf-8",
    )
    return path


async def studio_cli(cwd: Path, *args: str, db_env: str | None = None) -> tuple[int, str, str]:
    env = {key: value for key, value in os.environ.items() if key != "STUDIO_DB_PATH"}
    if db_env is not None:
        env["STUDIO_DB_PATH"] = db_env
    with anyio.fail_after(180):
        done = await anyio.run_process(
            [sys.executable, "-m", "ralph_context", "studio", "import", *args],
            cwd=cwd,
            env=env,
            check=False,
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_the_cli_imports_twice_without_touching_the_file(
    studio_db: Path, config: Path, shared_model: Loader
) -> None:
    with unchanged(studio_db):
        code, out, err = await studio_cli(
            config.parent, "--db", str(studio_db), "--config", str(config), "--json"
        )
        assert code == 0, err
        first = json.loads(out)
        code, out, err = await studio_cli(
            config.parent, "--config", str(config), "--json", db_env=str(studio_db)
        )
        assert code == 0, err
        again = json.loads(out)
    assert first["db"] == again["db"] == str(studio_db)  # tmp_path is already absolute
    assert first["tables"] == {
        kind: {"read": n, "added": n, "updated": 0} for kind, n in TABLE_COUNTS.items()
    }
    assert again["tables"] == {
        kind: {"read": n, "added": 0, "updated": n} for kind, n in TABLE_COUNTS.items()
    }
    assert first["embedded"] == LEARNINGS + 1 and first["notes"] == []

    with anyio.fail_after(120):
        async with serving(Settings.load(config), shared_model) as running:
            await assert_served(running.client)


async def test_the_cli_says_where_it_looked_for_a_missing_database(
    tmp_path: Path, config: Path
) -> None:
    missing = tmp_path / "gone" / "studio.db"
    code, _, err = await studio_cli(tmp_path, "--config", str(config), db_env=str(missing))
    assert code == 2
    assert str(missing) in err and "(from $STUDIO_DB_PATH)" in err
    assert "pass --db PATH or set STUDIO_DB_PATH" in err
    code, _, err = await studio_cli(tmp_path, "--db", str(missing), "--config", str(config))
    assert code == 2 and str(missing) in err and "(from --db)" in err
    code, _, err = await studio_cli(tmp_path, "--config", str(config))
    assert code == 2 and str(tmp_path / "studio.db") in err
    assert "neither --db nor $STUDIO_DB_PATH was set" in err
    assert not (tmp_path / "store").exists()  # refused before any engine opened the store


async def test_the_cli_refuses_a_malformed_database_before_opening_the_store(
    tmp_path: Path, config: Path
) -> None:
    path = tmp_path / "studio.db"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE cycles (id TEXT, name TEXT, status TEXT)")
    with unchanged(path):
        code, _, err = await studio_cli(tmp_path, "--config", str(config))
    assert code == 2
    assert "table cycles lacks required column(s) project_id" in " ".join(err.split())
    assert not (tmp_path / "store").exists()
