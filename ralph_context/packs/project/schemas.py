"""What the project-memory tools take and return: these models are the tools' published
schemas, so field names follow the Project Studio tables they mirror."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, JsonValue, field_validator

__all__ = [
    "Cycle",
    "CycleIntent",
    "Decision",
    "DecisionCaptured",
    "Learning",
    "LearningCaptured",
    "LearningList",
    "NewCycle",
    "Project",
    "ProjectContext",
    "ProjectState",
    "TagCount",
    "TagList",
]


class Project(BaseModel):
    id: str
    name: str
    description: str | None
    repo_path: str | None
    tech_stack: JsonValue = Field(description="As stored: usually a list of names or an object.")
    status: str
    created_at: datetime
    updated_at: datetime

    @field_validator("tech_stack", mode="before")
    @classmethod
    def _parse(cls, value: Any) -> Any:
        # Stored as JSON text (the Studio column is JSON); text that is not JSON stays text.
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value


class Cycle(BaseModel):
    id: str
    project_id: str
    name: str
    intent: str | None
    status: str
    created_at: datetime


class Learning(BaseModel):
    id: str
    title: str
    problem: str
    solution: str
    tags: list[str]
    project_id: str | None
    cycle_id: str | None
    session_id: str | None
    created_at: datetime
    updated_at: datetime
    score: float | None = Field(
        default=None, description="Match strength 0-1 when found by search; null otherwise."
    )

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any) -> Any:
        return [] if value is None else value


class Decision(BaseModel):
    id: str
    title: str
    decision: str
    context: str | None
    project_id: str | None
    created_at: datetime


class LearningList(BaseModel):
    """``query_learnings``: best match first with ``search``, newest first without."""

    learnings: list[Learning]
    count: int
    mode: Literal["recent", "hybrid", "text"] = Field(
        description="recent: no search; hybrid: meaning and words; text: words only "
        "(the embedding model is unavailable)."
    )
    degraded_reason: str | None = None
    message: str | None = Field(default=None, description="What to try when nothing matched.")


class TagCount(BaseModel):
    tag: str
    count: int


class TagList(BaseModel):
    """``list_tags``: most used first."""

    tags: list[TagCount]
    learnings: int = Field(description="Learnings counted (those of the project, if given).")


class ProjectContext(BaseModel):
    """``get_project_context``: where a session on this project starts."""

    project: Project
    active_cycle: Cycle | None
    recent_learnings: list[Learning]
    recent_decisions: list[Decision]


class LearningCaptured(BaseModel):
    """``capture_learning``."""

    id: str
    embedded: bool = Field(description="False when stored without a vector (found by words).")
    learning: Learning


class DecisionCaptured(BaseModel):
    """``capture_decision``."""

    id: str
    decision: Decision


class CycleIntent(BaseModel):
    """``get_cycle_intent``."""

    cycle_id: str
    project_id: str
    name: str
    intent: str | None
    status: str


class ProjectState(BaseModel):
    """``update_project_state``."""

    project: Project
    active_cycle: Cycle | None
    created: bool
    completed_cycles: list[str] = Field(description="Cycles this call marked 'completed'.")


class NewCycle(BaseModel):
    """A cycle to start as the project's active one."""

    name: str = Field(description="Short name, e.g. 'Cycle 4: auth'.")
    intent: str = Field(description="What the cycle is meant to achieve.")
