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

import uuid
from dataclasses import replace
from datetime import datetime

from lancedb.index import FTS, Bitmap

from ralph_context.embeddings.local import Vectors
from ralph_context.errors import InvalidInput, ItemNotFound
from ralph_context.packs.prompts.metrics import Observation, PromptMetrics
from ralph_context.packs.prompts.rows import (
    METRIC_COLUMNS,
    Feedback,
    OutcomeRow,
    PromptMatch,
    PromptRecord,
    Recorded,
    SessionState,
    outcome_row,
    outcomes_schema,
    record_row,
    records_schema,
    session_of,
    session_row,
    sessions_schema,
)
from ralph_context.packs.search import text_search, vector_search
from ralph_context.packs.tables import (
    PackTable,
    at_least,
    equals,
    since,
    where,
)
from ralph_context.storage.table.pack_space import PackSpace

# The row types are re-exported: importers name them from here, where they are used.
__all__ = [
    "Feedback",
    "OutcomeRow",
    "PromptMatch",
    "PromptRecord",
    "PromptTables",
    "Recorded",
    "SessionState",
]

RECORDS = "prompt_records"
OUTCOMES = "prompt_outcomes"
SESSIONS = "prompt_sessions"
# A session keeps its latest entries; older ones only count towards iteration_count.
SESSION_HISTORY = 200


class PromptTables:
    """The three tables of one store, opened once (``PackSpace.tables``)."""

    def __init__(self, space: PackSpace) -> None:
        self.records = PackTable(
            space,
            RECORDS,
            records_schema(space.dimension),
            indexes=(("prompt_text", FTS()), ("domain", Bitmap())),
        )
        self.outcomes = PackTable(space, OUTCOMES, outcomes_schema())
        self.sessions = PackTable(space, SESSIONS, sessions_schema())

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
        return session_of(row)

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
        row = record_row(record)
        if existing is None:
            row["vector"] = vector
            self.records.add([row])
        else:
            # Only the metric columns change: the text and its vector stay as stored.
            values = {key: row[key] for key in METRIC_COLUMNS}
            self.records.update(equals("id", record.id), values)
        self.outcomes.add([outcome_row(feedback, record)])
        if session is not None:
            self.sessions.upsert([session_row(session)])
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
        old = session_of(row)
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
