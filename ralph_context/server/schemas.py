"""What the context tools return: these models are the tools' published output schemas."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ralph_context import namespaces
from ralph_context.config import Settings
from ralph_context.engine import EngineHealth
from ralph_context.lifecycle.actor import LifecycleReport
from ralph_context.lifecycle.forgetting import ForgetReport
from ralph_context.models import ContextItem, IterationResult, RetrievalResult, RetrievedItem
from ralph_context.retrieval.scoring import item_tokens
from ralph_context.server.callers import LOCAL, Caller, hide_paths
from ralph_context.storage.lance_store import StoreStats

__all__ = [
    "ActorStatus",
    "ContextAnswer",
    "ContextStats",
    "Feedback",
    "HealthReport",
    "History",
    "IterationStored",
    "LifecycleAnswer",
    "NamespaceEntry",
    "SearchStats",
    "Skills",
    "Stored",
]

_MIB = 1024 * 1024


class SearchStats(BaseModel):
    """How a retrieval went: timings, how many candidates each rule turned away, the tier."""

    query_embedding_time_ms: float
    search_time_ms: float
    total_candidates: int
    filtered_count: int
    over_budget_count: int
    duplicate_count: int
    tokens_used: int
    token_budget: int
    tier: str
    degraded_reason: str | None

    @classmethod
    def of(cls, result: RetrievalResult) -> SearchStats:
        return cls.model_validate(result.model_dump(exclude={"items"}))


class ContextAnswer(BaseModel):
    """``get_relevant_context``: items best first, each with its score breakdown."""

    items: list[RetrievedItem]
    stats: SearchStats


class History(BaseModel):
    """``get_iteration_history``: newest first."""

    iterations: list[IterationResult]
    current_iteration: int


class Skills(BaseModel):
    """``get_skills``: most useful first."""

    skills: list[ContextItem]
    count: int


class Stored(BaseModel):
    """``store_context``."""

    id: str
    content_type: str
    created_iteration: int
    # The thread it was stored in ("" for none), under the name items show it by.
    source: str
    tokens: int

    @classmethod
    def of(cls, item: ContextItem) -> Stored:
        return cls(
            id=item.id,
            content_type=item.content_type.value,
            created_iteration=item.created_iteration,
            source=item.source,
            tokens=item_tokens(item),
        )


class StoredMany(BaseModel):
    """``store_contexts``: one entry per item, in the order given."""

    items: list[Stored]
    count: int


class Feedback(BaseModel):
    """``mark_useful``."""

    item_id: str
    helpful: bool
    usefulness_score: float


class IterationStored(BaseModel):
    """``store_iteration_result``."""

    iteration: int
    current_iteration: int
    error_item_id: str | None
    lifecycle: Literal["queued", "manual"]


class Forgotten(BaseModel):
    """``forget_context``: the ids deleted (or, with ``dry_run``, that would be)."""

    dry_run: bool
    count: int
    item_ids: list[str]
    # Iteration records deleted, and records kept with their text cleared.
    iterations: list[int]
    cleared_iterations: list[int]
    # The store's files rewritten without deleted rows (this call's, and what an earlier
    # delete or an unfinished forget left), and how many old versions went.
    purged: bool = False
    versions_removed: int = 0

    @classmethod
    def of(cls, report: ForgetReport) -> Forgotten:
        return cls(
            dry_run=report.dry_run,
            count=report.count,
            item_ids=list(report.item_ids),
            iterations=list(report.iterations),
            cleared_iterations=list(report.cleared_iterations),
            purged=report.purged,
            versions_removed=report.versions_removed,
        )


class LifecycleAnswer(BaseModel):
    """``summarize_old_context`` / ``prune_low_value_context``: ids per action."""

    dry_run: bool
    iteration: int
    summarized: list[str]
    pruned: list[str]
    aged: list[str]
    archived: list[str]
    chars_saved: int
    summarizer: str
    notes: list[str]

    @classmethod
    def of(cls, report: LifecycleReport) -> LifecycleAnswer:
        return cls(
            dry_run=report.dry_run,
            iteration=report.iteration,
            summarized=list(report.summarized),
            pruned=[*report.pruned, *report.pruned_for_space],
            aged=list(report.aged),
            archived=list(report.archived),
            chars_saved=report.chars_saved,
            summarizer=report.summarizer,
            notes=list(report.notes),
        )


class NamespaceEntry(BaseModel):
    """A namespace of the store and its size on disk."""

    name: str
    size_mb: float


class ContextStats(BaseModel):
    """``get_context_stats`` and ``context://stats``."""

    items: int
    archived: int
    by_type: dict[str, int]
    by_state: dict[str, int]
    without_vector: int
    iterations: int
    latest_iteration: int
    size_bytes: int
    size_mb: float
    max_size_mb: float
    table_version: int
    vector_index: bool
    model_id: str | None
    dimension: int
    namespace: str
    namespaces: list[NamespaceEntry]
    # Secrets replaced by the redactor since this server started, by kind.
    redacted: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def of(
        cls,
        stats: StoreStats,
        settings: Settings,
        caller: Caller = LOCAL,
        *,
        redacted: Mapping[str, int] | None = None,
    ) -> ContextStats:
        """``stats`` of the namespace ``settings`` name, with every namespace of its store
        that ``caller`` may see (a scoped token: its own; see ``callers``), and what was
        redacted since start."""
        here = settings.storage.namespace
        if settings.is_ephemeral:
            entries = [NamespaceEntry(name=here, size_mb=round(stats.size_bytes / _MIB, 2))]
        else:
            entries = [
                NamespaceEntry(name=n.name, size_mb=n.size_mb)
                for n in namespaces.listing(settings.store_root())
                if caller.sees(n.name)
            ]
        return cls(
            **stats.__dict__,
            size_mb=round(stats.size_bytes / _MIB, 3),
            max_size_mb=settings.storage.max_size_mb,
            namespace=here,
            namespaces=entries,
            redacted=dict(redacted or {}),
        )


class ActorStatus(BaseModel):
    """One actor's health."""

    state: str
    restarts: int
    last_error: str | None


class HealthReport(BaseModel):
    """``health_check``: ``healthy`` when every actor serves (an optional one left off by
    configuration, listed in ``not_configured``, does not count), ``degraded`` when queries
    fall back to a lower tier or the store is served read-only (``write_error`` says why),
    ``unhealthy`` when nothing can be retrieved."""

    status: Literal["healthy", "degraded", "unhealthy"]
    tier: str
    actors: dict[str, ActorStatus]
    not_configured: list[str]
    store: str
    size_bytes: int | None
    max_size_mb: float
    model_id: str | None
    current_iteration: int
    version: str
    # Items stored without a vector (the model did not answer in time), until a backfill
    # gives them one; full-text search finds them meanwhile. None when not counted here.
    without_vector: int | None = None
    # "off" only when redaction.enabled is false in the configuration: secrets are stored.
    redaction: Literal["on", "off"] = "on"
    # Secrets replaced since start, by kind.
    redacted: dict[str, int] = Field(default_factory=dict)
    # Why writes are refused while the store is served read-only (its disk is full or
    # unwritable; writes resume by themselves once it takes one); None while they work.
    write_error: str | None = None

    @classmethod
    def of(
        cls,
        health: EngineHealth,
        *,
        size_bytes: int | None,
        max_size_mb: float,
        current_iteration: int,
        version: str,
    ) -> HealthReport:
        return cls(
            status=health.status,
            tier=health.tier.value,
            actors={
                name: ActorStatus(
                    state=health.state(name), restarts=snap.restarts, last_error=snap.last_error
                )
                for name, snap in health.actors.items()
            },
            not_configured=sorted(health.not_configured),
            store=health.store,
            size_bytes=size_bytes,
            max_size_mb=max_size_mb,
            model_id=health.model_id,
            current_iteration=current_iteration,
            version=version,
            without_vector=health.without_vector,
            redaction="on" if health.redaction else "off",
            redacted=dict(health.redacted),
            write_error=health.write_error,
        )

    def without_paths(self, settings: Settings) -> HealthReport:
        """This report for a remote client (see ``callers``): the store named by its kind
        and namespace, and the store's and the model's folders replaced by ``<store>`` and
        ``<model>`` in the actors' last errors."""
        root = settings.store_root()
        if settings.is_ephemeral:
            store = "memory"
        else:
            kind = "local" if isinstance(root, Path) else "object storage"
            store = f"{kind} store, namespace {settings.storage.namespace}"
        actors = {
            name: actor.model_copy(update={"last_error": hide_paths(actor.last_error, settings)})
            for name, actor in self.actors.items()
        }
        hidden = hide_paths(self.write_error, settings)
        return self.model_copy(update={"store": store, "actors": actors, "write_error": hidden})
