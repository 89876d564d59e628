"""The prompt-learning tables and the blocking functions over them.

Everything here runs inside the storage actor (``Engine.in_packs``), one call at a time, so
reading a prompt's metrics and writing the moving average back cannot interleave with another
feedback for the same prompt.

Tables (in the engine's store folder):
- ``prompt_records``: one row per prompt: text, domain, task type, tags, vector and the
  running metrics (``metrics.py``).
- ``prompt_outcomes``: every recorded outcome, append-only: the history analytics read.
- ``prompt_sessions``: per-session iteration count, best score and history (the spec kept
  these in Redis; here they persist with everything else).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import pyarrow as pa
from lancedb.index import FTS, Bitmap

from ralph_context.embeddings.local import Vectors
from ralph_context.errors import InvalidInput, ItemNotFound
from ralph_context.packs.prompts.metrics import Observation, PromptMetrics
from ralph_context.packs.search import text_search, vector_search
from ralph_context.packs.tables import (
    PackTable,
    at_least,
    equals,
    now,
    since,
    timestamp,
    vector_field,
    where,
)
from ralph_context.storage.pack_space import PackSpace

__all__ = ["Feedback", "PromptMatch", "PromptRecord", "PromptTables", "SessionState"]

RECORDS = "prompt_records"
OUTCOMES = "prompt_outcomes"
SESSIONS = "prompt_sessions"
# A session keeps its latest entries; older ones only count towards iteration_count.
SESSION_HISTORY = 200


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


def _records_schema(dimension: int) -> pa.Schema:
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


def _outcomes_schema() -> pa.Schema:
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


def _sessions_schema() -> pa.Schema:
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


class PromptTables:
    """The three tables of one store, opened once (``PackSpace.tables``)."""

    def __init__(self, space: PackSpace) -> None:
        self.records = PackTable(
            space,
            RECORDS,
            _records_schema(space.dimension),
            indexes=(("prompt_text", FTS()), ("domain", Bitmap())),
        )
        self.outcomes = PackTable(space, OUTCOMES, _outcomes_schema())
        self.sessions = PackTable(space, SESSIONS, _sessions_schema())

    @classmethod
    def of(cls, space: PackSpace) -> PromptTables:
        return space.tables("prompt_learning", cls)

    # --- reading -----------------------------------------------------------------------------

    def retrieve(
        self,
        query: str,
        vector: Vectors | None,
        *,
        domain: str | None,
        min_performance: float,
        top_k: int,
    ) -> list[PromptMatch]:
        """The ``top_k`` prompts nearest ``query`` among those that pass both filters.

        The filters run inside the search (prefilter), before the cut: the spec's reference
        code built two ``must`` keys and lost the performance filter whenever a domain was
        given; here both always apply.
        """
        condition = where(
            equals("domain", domain) if domain is not None else None,
            at_least("success_rate", min_performance),
        )
        if vector is not None:
            hits = vector_search(self.records, vector, condition=condition, limit=top_k)
            return [PromptMatch(PromptRecord.of(row), score) for row, score in hits]
        found = text_search(self.records, query, "prompt_text", condition=condition, limit=top_k)
        best = max((score for _, score, _ in found), default=0.0) or 1.0
        return [PromptMatch(PromptRecord.of(row), score / best) for row, score, _ in found]

    def get(self, prompt_id: str) -> PromptRecord:
        row = self.records.get(prompt_id)
        if row is None:
            raise ItemNotFound(
                f"prompt {prompt_id!r} not found; use prompt_id 'new' with prompt_text to "
                "record a prompt the first time"
            )
        return PromptRecord.of(row)

    def records_where(self, condition: str | None) -> list[PromptRecord]:
        return [PromptRecord.of(row) for row in self.records.rows(condition)]

    def outcome_rows(self, *, start: datetime | None, domain: str | None) -> list[OutcomeRow]:
        condition = where(
            since("recorded_at", start) if start is not None else None,
            equals("domain", domain) if domain is not None else None,
        )
        return [
            OutcomeRow(
                prompt_id=row["prompt_id"],
                domain=row["domain"],
                recorded_at=row["recorded_at"],
                success=row["success"],
                quality_score=row["quality_score"],
                latency_ms=row["latency_ms"],
                satisfaction=row["satisfaction"],
            )
            for row in self.outcomes.rows(condition)
        ]

    def session(self, session_id: str) -> SessionState:
        row = self.sessions.get(session_id)
        if row is None:
            raise ItemNotFound(
                f"session {session_id!r} not found; record_feedback with this session_id starts it"
            )
        return _session_of(row)

    # --- writing -----------------------------------------------------------------------------

    def record(self, feedback: Feedback, vector: Vectors | None, alpha: float) -> Recorded:
        """Apply one outcome: the prompt's metrics, the outcome log, the session.

        Every check runs before the first write, so a refused call changes nothing.
        """
        existing = self._target(feedback)
        observation = feedback.observation
        if existing is None:
            assert feedback.prompt_text is not None, "checked by the tool"
            record = PromptRecord(
                id=str(uuid.uuid4()),
                prompt_text=feedback.prompt_text,
                domain=feedback.domain,
                task_type=feedback.task_type,
                tags=feedback.tags,
                metrics=PromptMetrics.first(observation),
                created_at=feedback.at,
                updated_at=feedback.at,
            )
        else:
            record = replace(
                existing,
                metrics=existing.metrics.updated(observation, alpha),
                updated_at=feedback.at,
            )
        session = self._next_session(feedback, record, observation)
        row = _record_row(record)
        if existing is None:
            row["vector"] = vector
            self.records.add([row])
        else:
            # Only the metric columns change: the text and its vector stay as stored.
            values = {key: row[key] for key in _METRIC_COLUMNS}
            self.records.update(equals("id", record.id), values)
        self.outcomes.add([_outcome_row(feedback, record)])
        if session is not None:
            self.sessions.upsert([_session_row(session)])
        return Recorded(record, existing is None, session)

    def _target(self, feedback: Feedback) -> PromptRecord | None:
        """The prompt this feedback is about; ``None`` for a prompt never seen. A "new"
        prompt whose exact text is already stored (same domain) counts on that record
        instead of starting a twin with one observation."""
        if feedback.prompt_id is not None:
            record = self.get(feedback.prompt_id)
            if feedback.domain is not None and feedback.domain != record.domain:
                raise InvalidInput(
                    f"prompt {record.id!r} is in domain {record.domain!r}, not "
                    f"{feedback.domain!r}; omit domain or record the text as a new prompt"
                )
            return record
        assert feedback.prompt_text is not None, "checked by the tool"
        condition = where(
            equals("prompt_text", feedback.prompt_text),
            equals("domain", feedback.domain) if feedback.domain is not None else "domain IS NULL",
        )
        rows = self.records.rows(condition, limit=1)
        return PromptRecord.of(rows[0]) if rows else None

    def _next_session(
        self, feedback: Feedback, record: PromptRecord, observation: Observation
    ) -> SessionState | None:
        if feedback.session_id is None:
            return None
        row = self.sessions.get(feedback.session_id)
        score = observation.score
        entry = {"prompt_id": record.id, "score": score, "timestamp": feedback.at.isoformat()}
        if row is None:
            return SessionState(
                feedback.session_id, record.id, 1, score, (entry,), feedback.at, feedback.at
            )
        old = _session_of(row)
        best = score if old.best_score is None else max(old.best_score, score)
        history = (*old.history, entry)[-SESSION_HISTORY:]
        return SessionState(
            old.session_id,
            record.id,
            old.iteration_count + 1,
            best,
            history,
            old.created_at,
            feedback.at,
        )


_METRIC_COLUMNS = (
    "success_rate",
    "avg_latency_ms",
    "token_efficiency",
    "observation_count",
    "updated_at",
)


def _record_row(record: PromptRecord) -> dict[str, Any]:
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


def _outcome_row(feedback: Feedback, record: PromptRecord) -> dict[str, Any]:
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


def _session_row(session: SessionState) -> dict[str, Any]:
    return {
        "id": session.session_id,
        "current_prompt_id": session.current_prompt_id,
        "iteration_count": session.iteration_count,
        "best_score": session.best_score,
        "history": json.dumps(list(session.history)),
        "created_at": session.created_at,
        "updated_at": session.updated_at,
    }


def _session_of(row: dict[str, Any]) -> SessionState:
    return SessionState(
        session_id=row["id"],
        current_prompt_id=row["current_prompt_id"],
        iteration_count=row["iteration_count"],
        best_score=row["best_score"],
        history=tuple(json.loads(row["history"])),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )
