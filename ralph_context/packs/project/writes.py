"""Project memory's writes: captures and project updates, run inside the storage actor.

One request at a time (``Engine.in_packs``), so "read the highest id, then write the next one"
and "check the project exists, then write" cannot interleave with another write. Each function
checks every reference it was given (project, cycle, repo path) before its first write: a
refused request changes nothing.

Ids: learnings are ``L-nnn``, decisions ``D-nnn``, cycles this pack starts ``C-nnn`` — the
highest number in use plus one, zero-padded to three digits (imported ids such as ``L-023``
count, so the next capture is ``L-024``). Project ids are chosen by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ralph_context.embeddings.local import Vectors
from ralph_context.errors import InvalidInput
from ralph_context.packs.project.store import (
    ProjectTables,
    Row,
    active_cycle,
    is_active,
    next_id,
    require_cycle,
    require_project,
    search_text,
    upsert_rows,
)
from ralph_context.packs.tables import equals, now, where

__all__ = [
    "NewDecision",
    "NewLearning",
    "ProjectChange",
    "ProjectUpdate",
    "add_decision",
    "add_learning",
    "update_project",
]


@dataclass(frozen=True)
class NewLearning:
    """A validated learning to capture (``memory.py`` checks the text)."""

    title: str
    problem: str
    solution: str
    tags: tuple[str, ...]
    project_id: str | None
    cycle_id: str | None
    session_id: str | None


def _owner(tables: ProjectTables, project_id: str | None, cycle_id: str | None) -> str | None:
    """The project a record belongs to: the given one, or the cycle's; both must exist and
    agree."""
    if cycle_id is None:
        return None if project_id is None else require_project(tables, project_id)["id"]
    cycle = require_cycle(tables, cycle_id)
    if project_id is not None and cycle["project_id"] != project_id:
        require_project(tables, project_id)
        raise InvalidInput(
            f"cycle {cycle_id!r} belongs to project {cycle['project_id']!r}, not {project_id!r}"
        )
    return str(cycle["project_id"])


def add_learning(tables: ProjectTables, new: NewLearning, vector: Vectors | None) -> Row:
    """Store a learning under the next ``L-nnn`` id; returns it without its vector.

    Raises:
        ItemNotFound: The project or cycle does not exist.
        InvalidInput: The cycle belongs to another project.
    """
    project_id = _owner(tables, new.project_id, new.cycle_id)
    stamp = now()
    row: Row = {
        "id": next_id(tables.learnings, "L"),
        "title": new.title,
        "problem": new.problem,
        "solution": new.solution,
        "tags": list(new.tags),
        "project_id": project_id,
        "cycle_id": new.cycle_id,
        "session_id": new.session_id,
        "created_at": stamp,
        "updated_at": stamp,
        "search_text": search_text(new.title, new.problem, new.solution),
        "vector": None if vector is None else np.asarray(vector, dtype=np.float32).tolist(),
    }
    upsert_rows(tables.learnings, [row])
    return {key: value for key, value in row.items() if key != "vector"}


@dataclass(frozen=True)
class NewDecision:
    title: str
    decision: str
    context: str | None
    project_id: str | None


def add_decision(tables: ProjectTables, new: NewDecision) -> Row:
    """Store a decision under the next ``D-nnn`` id.

    Raises:
        ItemNotFound: The project does not exist.
    """
    row: Row = {
        "id": next_id(tables.decisions, "D"),
        "title": new.title,
        "decision": new.decision,
        "context": new.context,
        "project_id": _owner(tables, new.project_id, None),
        "created_at": now(),
    }
    tables.decisions.upsert([row])
    return row


@dataclass(frozen=True)
class ProjectChange:
    """What ``update_project_state`` sets; ``None`` leaves a field as it is."""

    project_id: str
    name: str | None = None
    status: str | None = None
    description: str | None = None
    repo_path: str | None = None
    tech_stack: str | None = None  # JSON text
    cycle: tuple[str, str] | None = None  # (name, intent) of a cycle to start


@dataclass(frozen=True)
class ProjectUpdate:
    project: Row
    active_cycle: Row | None
    created: bool
    completed_cycles: list[str]


def update_project(tables: ProjectTables, change: ProjectChange) -> ProjectUpdate:
    """Create or update a project, optionally starting a new active cycle (the previous active
    one becomes 'completed').

    Raises:
        ItemNotFound: The project does not exist and no name was given to create it.
        InvalidInput: Another project already has that repo_path.
    """
    current = tables.projects.get(change.project_id)
    if current is None and change.name is None:
        require_project(tables, change.project_id)
    if change.repo_path is not None:
        owners = tables.projects.rows(equals("repo_path", change.repo_path), columns=["id"])
        others = [row["id"] for row in owners if row["id"] != change.project_id]
        if others:
            raise InvalidInput(
                f"repo_path {change.repo_path!r} already belongs to project {others[0]!r}"
            )
    stamp = now()
    project: Row = (
        dict(current)
        if current is not None
        else {
            "id": change.project_id,
            "description": None,
            "repo_path": None,
            "tech_stack": None,
            "status": "active",
            "created_at": stamp,
        }
    )
    for field in ("name", "status", "description", "repo_path", "tech_stack"):
        value = getattr(change, field)
        if value is not None:
            project[field] = value
    project["updated_at"] = stamp
    completed: list[Row] = []
    started: Row | None = None
    if change.cycle is not None:
        previous = tables.cycles.rows(where(equals("project_id", change.project_id), is_active()))
        completed = [dict(cycle, status="completed", updated_at=stamp) for cycle in previous]
        name, intent = change.cycle
        started = {
            "id": next_id(tables.cycles, "C"),
            "project_id": change.project_id,
            "name": name,
            "intent": intent,
            "status": "active",
            "created_at": stamp,
            "updated_at": stamp,
        }
        tables.cycles.upsert([*completed, started])
    tables.projects.upsert([project])
    return ProjectUpdate(
        project=project,
        active_cycle=started or active_cycle(tables, change.project_id),
        created=current is None,
        completed_cycles=sorted(cycle["id"] for cycle in completed),
    )
