"""The prompt-learning tables' rows: what a prompt, an outcome and a session are, their
LanceDB schemas, and the conversions between rows and records. Apart from ``store.py``,
which runs the reads and writes, so either can be read without the other.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa

from ralph_context.packs.prompts.metrics import Observation, PromptMetrics
from ralph_context.packs.tables import now, timestamp, vector_field

__all__ = [
    "METRIC_COLUMNS",
    "Feedback",
    "OutcomeRow",
    "PromptMatch",
    "PromptRecord",
    "Recorded",
    "SessionState",
    "outcome_row",
    "outcomes_schema",
    "record_row",
    "records_schema",
    "session_of",
    "session_row",
    "sessions_schema",
]


@dataclass(frozen=True)
class PromptRecord:
    id: str
    prompt_text: str
    domain: str | None
    task_type: str | None
    tags: tuple[str, ...]
    metrics: PromptMetrics
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> PromptRecord:
        return cls(
            id=row["id"],
            prompt_text=row["prompt_text"],
            domain=row["domain"],
            task_type=row["task_type"],
            tags=tuple(row["tags"] or ()),
            metrics=PromptMetrics(
                success_rate=row["success_rate"],
                avg_latency_ms=row["avg_latency_ms"],
                token_efficiency=row["token_efficiency"],
                observation_count=row["observation_count"],
            ),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


@dataclass(frozen=True)
class PromptMatch:
    record: PromptRecord
    similarity: float  # cosine on the semantic tier, normalised BM25 on the text tier


@dataclass(frozen=True)
class Feedback:
    """One ``record_feedback`` call, validated: either an id or a new prompt's text."""

    observation: Observation
    prompt_id: str | None = None
    prompt_text: str | None = None
    domain: str | None = None
    task_type: str | None = None
    tags: tuple[str, ...] = ()
    satisfaction: float | None = None
    comments: str | None = None
    session_id: str | None = None
    at: datetime = field(default_factory=now)


@dataclass(frozen=True)
class Recorded:
    record: PromptRecord
    created: bool
    session: SessionState | None


@dataclass(frozen=True)
class SessionState:
    session_id: str
    current_prompt_id: str | None
    iteration_count: int
    best_score: float | None
    history: tuple[dict[str, Any], ...]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class OutcomeRow:
    prompt_id: str
    domain: str | None
    recorded_at: datetime
    success: bool
    quality_score: float | None
    latency_ms: float | None
    satisfaction: float | None


def records_schema(dimension: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("prompt_text", pa.string(), nullable=False),
            pa.field("domain", pa.string()),
            pa.field("task_type", pa.string()),
            pa.field("tags", pa.list_(pa.string()), nullable=False),
            pa.field("success_rate", pa.float64(), nullable=False),
            pa.field("avg_latency_ms", pa.float64()),
            pa.field("token_efficiency", pa.float64()),
            pa.field("observation_count", pa.int64(), nullable=False),
            timestamp("created_at"),
            timestamp("updated_at"),
            vector_field(dimension),
        ]
    )


def outcomes_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("prompt_id", pa.string(), nullable=False),
            pa.field("domain", pa.string()),
            timestamp("recorded_at"),
            pa.field("success", pa.bool_(), nullable=False),
            pa.field("latency_ms", pa.float64()),
            pa.field("output_tokens", pa.int64()),
            pa.field("quality_score", pa.float64()),
            pa.field("satisfaction", pa.float64()),
            pa.field("comments", pa.string()),
            pa.field("session_id", pa.string()),
            pa.field("success_rate_after", pa.float64(), nullable=False),
        ]
    )


def sessions_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("current_prompt_id", pa.string()),
            pa.field("iteration_count", pa.int64(), nullable=False),
            pa.field("best_score", pa.float64()),
            pa.field("history", pa.string(), nullable=False),  # JSON list
            timestamp("created_at"),
            timestamp("updated_at"),
        ]
    )


METRIC_COLUMNS = (
    "success_rate",
    "avg_latency_ms",
    "token_efficiency",
    "observation_count",
    "updated_at",
)


def record_row(record: PromptRecord) -> dict[str, Any]:
    metrics = record.metrics
    return {
        "id": record.id,
        "prompt_text": record.prompt_text,
        "domain": record.domain,
        "task_type": record.task_type,
        "tags": list(record.tags),
        "success_rate": metrics.success_rate,
        "avg_latency_ms": metrics.avg_latency_ms,
        "token_efficiency": metrics.token_efficiency,
        "observation_count": metrics.observation_count,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }


def outcome_row(feedback: Feedback, record: PromptRecord) -> dict[str, Any]:
    observation = feedback.observation
    return {
        "id": str(uuid.uuid4()),
        "prompt_id": record.id,
        "domain": record.domain,
        "recorded_at": feedback.at,
        "success": observation.success,
        "latency_ms": observation.latency_ms,
        "output_tokens": observation.output_tokens,
        "quality_score": observation.quality_score,
        "satisfaction": feedback.satisfaction,
        "comments": feedback.comments,
        "session_id": feedback.session_id,
        "success_rate_after": record.metrics.success_rate,
    }


def session_row(session: SessionState) -> dict[str, Any]:
    return {
        "id": session.session_id,
        "current_prompt_id": session.current_prompt_id,
        "iteration_count": session.iteration_count,
        "best_score": session.best_score,
        "history": json.dumps(list(session.history)),
        "created_at": session.created_at,
        "updated_at": session.updated_at,
    }


def session_of(row: dict[str, Any]) -> SessionState:
    return SessionState(
        session_id=row["id"],
        current_prompt_id=row["current_prompt_id"],
        iteration_count=row["iteration_count"],
        best_score=row["best_score"],
        history=tuple(json.loads(row["history"])),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )
