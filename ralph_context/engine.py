"""The engine: one facade over the actors, and the owner of the degradation ladder.

``async with Engine(settings) as engine`` starts a supervisor with the embedding and storage
actors. Adapters (MCP server, Ralph hook, CLI) call only this class.

Retrieval never raises on a degraded path. It tries, in order:
``semantic`` (embed the query, vector search) → ``text`` (full-text BM25 over the same store,
used when the model is missing or the embedding actor is down) → ``none`` (an empty result
naming why). Whatever served the query is recorded in ``RetrievalResult.tier``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, TypeVar

import numpy as np
import structlog

from ralph_context._logging import ensure_logging
from ralph_context.actors.embedding import EmbeddingActor, EmbedRequest
from ralph_context.actors.inference import InferenceActor
from ralph_context.actors.lifecycle import (
    LifecycleActor,
    LifecycleReport,
    LifecycleRequest,
    Progress,
    PruneLowValue,
    RunLifecycle,
    SummarizeOld,
)
from ralph_context.actors.scoring import ScoringActor
from ralph_context.actors.storage import StorageActor
from ralph_context.arguments import (
    MAX_CANDIDATES,
    MAX_ITEMS,
    MAX_QUERY_CHARS,
    NewItem,
    build_item,
    check_query,
)
from ralph_context.config import EmbeddingsSettings, Settings
from ralph_context.embeddings.local import LocalEmbedder, Vectors, load_embedder
from ralph_context.errors import (
    ActorUnavailable,
    InvalidInput,
    ItemNotFound,
    RalphContextError,
    StoreError,
)
from ralph_context.forgetting import ForgetReport, check_selection
from ralph_context.metadata_filter import MetadataCondition
from ralph_context.models import (
    ContextItem,
    ContextType,
    IterationResult,
    JsonValue,
    RetrievalResult,
    Tier,
)
from ralph_context.retrieval import Candidates, Retriever
from ralph_context.runtime import Foreground, HealthSnapshot, Supervisor
from ralph_context.skillbook_sync import SkillbookSync
from ralph_context.storage.filters import ItemFilter
from ralph_context.storage.lance_store import StoreStats
from ralph_context.storage.pack_space import PackSpace
from ralph_context.validation import (
    check_content,
    check_int,
    check_item_id,
    check_score,
    check_tags,
    check_text,
)

__all__ = ["Engine", "EngineHealth", "NewItem"]

log = structlog.get_logger("ralph_context.engine")

T = TypeVar("T")

# Skills listed by get_skills at most (they are few and curated).
MAX_SKILLS = 1_000
_NOT_STARTED = "the engine is not started (use `async with Engine(...)`)"
# mark_useful: the seed's +0.10 for helpful, -0.15 for not.
HELPFUL_DELTA = 0.10
UNHELPFUL_DELTA = -0.15
# Texts per embedding request: ~3 s of work here, far inside the per-call deadline.
EMBED_CHUNK = 256
# The tag of the error item an iteration's error becomes, and how many error items of one
# iteration are compared with a new one (runs that reuse iteration numbers add up).
ITERATION_ERROR_TAG = "iteration-error"
_SAME_ITERATION_ERRORS = 100
# Scoring is pure arithmetic on a few hundred candidates (~1 ms); past this the actor is
# stuck and retrieval scores inline instead.
SCORING_TIMEOUT = 5.0
# Items embedded by one backfill at start, in chunks (~2 minutes of work at most here).
BACKFILL_CHUNKS = 24


@dataclass(frozen=True)
class EngineHealth:
    """Per-actor health, the tier a query would be served from now, and the model in use."""

    actors: dict[str, HealthSnapshot]
    tier: Tier
    model_id: str | None
    store: str
    # Optional actors left off by configuration (no language model set up): down, but the
    # engine is not degraded by their absence.
    not_configured: frozenset[str] = frozenset()
    # Items stored without a vector, awaiting a backfill (None: the store is not open, or
    # is read beside another process's writer).
    without_vector: int | None = None

    @property
    def ok(self) -> bool:
        """True when every actor serves (full semantic retrieval)."""
        return self.tier is Tier.SEMANTIC

    def state(self, name: str) -> str:
        """Actor ``name``'s state as reported: ``not_configured`` for an optional part left
        off by configuration (its actor is down by choice; "down" alarmed people who had
        never set one up)."""
        return "not_configured" if name in self.not_configured else self.actors[name].state.value

    @property
    def status(self) -> Literal["healthy", "degraded", "unhealthy"]:
        """``healthy`` when every configured actor serves, ``degraded`` when queries fall
        back to a lower tier, ``unhealthy`` when nothing can be retrieved."""
        required = [a for n, a in self.actors.items() if n not in self.not_configured]
        if self.tier is Tier.SEMANTIC and all(a.serving for a in required):
            return "healthy"
        return "degraded" if self.tier in (Tier.SEMANTIC, Tier.TEXT) else "unhealthy"


class Engine:
    """The context engine.

    Args:
        settings: Loaded configuration; ``None`` means defaults plus environment.
        model_loader: How the embedding actor loads its model (tests inject failures here).
        read_only: Read a store another process writes (a running server): no writer lock,
            nothing written (writes raise ``StoreError``), no lifecycle; searches see the
            writer's latest commits.

    Raises:
        ConfigError: ``settings`` is ``None`` and the configuration is invalid.
        ModelMismatch: On entering, when the store was built with another embedding model
            (run ``ralph-context reindex``).
        StoreLocked: On entering, when another process writes the store (the message names
            it and its endpoint). Every other failure of a part degrades instead.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        model_loader: Callable[[EmbeddingsSettings], LocalEmbedder] = load_embedder,
        read_only: bool = False,
    ) -> None:
        self.settings = settings if settings is not None else Settings.load(None)
        self._model_loader = model_loader
        self.read_only = read_only
        self._supervisor: Supervisor | None = None
        self._embedding: EmbeddingActor | None = None
        self._storage: StorageActor | None = None
        self._retriever: Retriever | None = None
        self._lifecycle: LifecycleActor | None = None
        self._inference: InferenceActor | None = None
        self._skillbook: SkillbookSync | None = None
        # A background backfill is running (see _persist).
        self._backfilling = False
        self._iteration = 0
        # Searches and stores in flight: lifecycle steps wait until there are none.
        self._foreground = Foreground()

    # --- lifetime ---------------------------------------------------------------------------

    async def __aenter__(self) -> Engine:
        ensure_logging()
        supervisor = Supervisor()
        await supervisor.__aenter__()
        self._supervisor = supervisor
        try:
            await self._start_actors(supervisor)
        except BaseException as exc:
            await supervisor.__aexit__(type(exc), exc, exc.__traceback__)
            self._supervisor = None
            raise
        return self

    async def _start_actors(self, supervisor: Supervisor) -> None:
        settings = self.settings
        embedding = EmbeddingActor(settings.embeddings, loader=self._model_loader)
        # Bounded: a model that hangs while loading (e.g. a hub download with no network)
        # must not hang the loop; the engine then starts on the text tier.
        await supervisor.start(embedding, settle_within=settings.embeddings.timeout_seconds)
        self._embedding = embedding
        model = None
        if embedding.model_id is not None and embedding.dimension is not None:
            model = (embedding.model_id, embedding.dimension)
        else:
            log.warning("embedding_unavailable", reason=embedding.health.last_error)
        location = None if settings.is_ephemeral else settings.store_path()
        storage = StorageActor(
            settings.storage,
            location,
            model,
            timeout=settings.storage.timeout_seconds,
            foreground=self._foreground,
            read_only=self.read_only,
            lock_at=None if settings.is_ephemeral else settings.store_root(),
        )
        await supervisor.start(storage)
        self._storage = storage
        if storage.fatal is not None:
            # A model mismatch or a store another process writes is a problem the user must
            # fix, not a degradation.
            raise storage.fatal
        if storage.health.snapshot().serving:
            self._iteration = await storage.latest_iteration()
        scoring = ScoringActor(settings.scoring, timeout=SCORING_TIMEOUT)
        await supervisor.start(scoring)
        # Setup does no I/O: with no model configured it is down at once, never slowing start.
        inference = InferenceActor(settings.inference)
        await supervisor.start(inference, settle_within=settings.embeddings.timeout_seconds)
        self._inference = inference
        if not inference.configured:
            # Worth a word at start: otherwise only the lifecycle report's notes say it.
            for key, named in (
                ("lifecycle.summarizer_model", settings.lifecycle.summarizer_model),
                (
                    "packs.prompt_learning.rewrite_model",
                    settings.packs.prompt_learning.rewrite_model,
                ),
            ):
                if named is not None:
                    log.warning("model_set_without_inference", key=key, model=named)
        lifecycle = LifecycleActor(
            settings,
            storage=storage,
            embedding=embedding,
            inference=inference,
            clock=lambda: self._iteration,
            foreground=self._foreground,
        )
        await supervisor.start(lifecycle)
        self._lifecycle = lifecycle
        self._retriever = Retriever(
            settings,
            embedding=embedding,
            storage=storage,
            scoring=scoring,
            clock=lambda: self._iteration,
            semantic_unavailable=self._semantic_unavailable,
        )
        if self.read_only:
            return  # no backfill, no skillbook sync: both write
        await self._backfill()
        if settings.skillbook.enabled:
            self._skillbook = SkillbookSync(
                settings.skillbook_path(), storage, self._embed_documents, lambda: self._iteration
            )
            await self._sync_skillbook()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None:
            await supervisor.__aexit__(exc_type, exc, tb)

    # --- writing ----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True between entering and leaving ``async with``."""
        return self._supervisor is not None

    @property
    def current_iteration(self) -> int:
        """The lifecycle clock: the latest iteration stored so far."""
        return self._iteration

    async def store(
        self,
        content: str | bytes,
        content_type: ContextType | str,
        *,
        tags: Sequence[str] | None = None,
        metadata: dict[str, JsonValue] | None = None,
        source: str = "",
        iteration: int | None = None,
        idempotency_key: str | None = None,
    ) -> ContextItem:
        """Validate, embed and persist one item.

        If the embedding model is unavailable the item is stored without a vector and stays
        findable by the text tier. With ``idempotency_key``, a call repeating the key of an
        earlier one returns the item that one stored and writes nothing (a client that
        timed out retries safely; see ``storage.requests``).

        Raises:
            InvalidInput: Empty, oversized or non-UTF-8 content, unknown type, bad tags or
                metadata, or a key that is not 1-200 characters of text. Nothing is stored.
            ActorUnavailable: The store itself is down.
        """
        entry = NewItem(content, content_type, tags, metadata, source, iteration)
        if idempotency_key is None:
            (item,) = await self.store_many([entry])
            return item
        key = check_item_id(idempotency_key, name="idempotency_key")
        built = self._build_item(entry)
        storage = self._require_storage()
        with self._foreground.busy():
            first = storage.request_target(key)
            if first is not None:
                found = await storage.get_items([first])
                if found:
                    return found[0]
            (vector,) = await self._embed_documents([built.content])
            stored, _written = await storage.add_keyed(built, vector, key)
            return stored

    async def store_many(self, entries: Sequence[NewItem]) -> list[ContextItem]:
        """Store several items with one embedding pass and one write; all or nothing.

        Raises:
            InvalidInput: Any entry is invalid; nothing is stored.
            ActorUnavailable: The store itself is down.
        """
        items = [self._build_item(entry) for entry in entries]
        if not items:
            return []
        with self._foreground.busy():
            return await self._persist(items)

    async def store_embedded(self, pairs: Sequence[tuple[ContextItem, Vectors]]) -> int:
        """Bulk path: persist items whose vectors were computed by this engine's model.

        Used by benchmarks to load large stores without re-embedding near-identical texts.
        Vectors must be unit length and of the model's dimension.

        Raises:
            StoreError: No model is loaded, or a vector has the wrong shape.
        """
        dimension = self._require_embedding_model()
        limit = self.settings.storage.max_content_bytes
        for item, vector in pairs:
            check_content(item.content, max_bytes=limit)
            check_tags(item.tags)
            if vector.shape != (dimension,) or not np.isfinite(vector).all():
                raise StoreError(f"item {item.id}: vector must be {dimension} finite numbers")
            # Similarity is a plain dot product, which is cosine only for unit vectors.
            if abs(float(np.linalg.norm(vector)) - 1.0) > 1e-3:
                raise StoreError(f"item {item.id}: vector is not unit length")
        await self._require_storage().add_items(list(pairs))
        return len(pairs)

    async def record_iteration(
        self, result: IterationResult, *, idempotency_key: str | None = None
    ) -> ContextItem | None:
        """Persist an iteration's result, advance the lifecycle clock and queue a lifecycle
        pass (which runs in the background; this call does not wait for it).

        An ``error`` is also stored as an ``error`` item, so later iterations can retrieve
        it by meaning; that item is returned. Recording an iteration again replaces its
        result, and the same error is not stored twice. With ``idempotency_key``, a call
        repeating the key of an earlier one (whose iteration is recorded) returns that one's
        error item and writes nothing.

        Raises:
            InvalidInput: A text field is not valid text or too long, or the iteration is
                more than ``lifecycle.max_iteration_step`` past the latest one.
            ActorUnavailable: The store is down.
        """
        step = self.settings.lifecycle.max_iteration_step
        if result.iteration > self._iteration + step:
            raise InvalidInput(
                f"iteration is {result.iteration}, more than {step} past the store's latest "
                f"({self._iteration}); it must be at most {self._iteration + step} "
                "(lifecycle.max_iteration_step: the lifecycle ages every item by this clock)"
            )
        limit = self.settings.storage.max_content_bytes
        check_text(result.summary, name="summary", max_chars=limit)
        if result.error is not None:
            check_text(result.error, name="error", max_chars=limit)
        for name, values in (("tool_calls", result.tool_calls), ("artifacts", result.artifacts)):
            for value in values:
                check_text(value, name=name)
        key = None
        if idempotency_key is not None:
            key = check_item_id(idempotency_key, name="idempotency_key")
            repeated = await self._repeated_iteration(key, result.iteration)
            if repeated is not None:
                return repeated[0]
        error_item = None
        if result.error is not None and result.error.strip():
            error_item = self._build_item(
                NewItem(
                    result.error,
                    ContextType.ERROR,
                    tags=(ITERATION_ERROR_TAG,),
                    metadata={"iteration": result.iteration},
                    source="orchestrator",
                    iteration=result.iteration,
                )
            )
        storage = self._require_storage()
        with self._foreground.busy():
            if key is not None and storage.request_target(key) is None:
                await storage.put_request_key(key, error_item.id if error_item else "")
            await storage.add_iteration(result)
            self._iteration = max(self._iteration, result.iteration)
            if error_item is not None:
                error_item = await self._iteration_error(error_item, result.iteration)
        if not self.settings.lifecycle.auto_run or self._lifecycle is None:
            pass
        elif not self._lifecycle.tell(RunLifecycle()):
            log.info("lifecycle_not_queued", reason="busy or down; the next iteration retries")
        return error_item

    async def _iteration_error(self, error_item: ContextItem, iteration: int) -> ContextItem:
        """Store an iteration's error item, unless the same error of the same iteration is
        stored already (the iteration was recorded again): then that one. An earlier run's
        different error under the same number is a memory of its own and stays."""
        stored = await self._require_storage().list_items(
            ItemFilter(
                types=(ContextType.ERROR,),
                tags_any=(ITERATION_ERROR_TAG,),
                min_iteration=iteration,
                max_iteration=iteration,
            ),
            _SAME_ITERATION_ERRORS,
        )
        for item in stored:
            if item.content == error_item.content and item.source == error_item.source:
                return item
        (persisted,) = await self._persist([error_item])
        return persisted

    async def _repeated_iteration(
        self, key: str, iteration: int
    ) -> tuple[ContextItem | None] | None:
        """The first call's answer if ``key`` was used for a recorded iteration, else
        ``None`` (a key whose iteration is missing: its writer died before recording)."""
        storage = self._require_storage()
        first = storage.request_target(key)
        if first is None or await storage.iteration(iteration) is None:
            return None
        if not first:
            return (None,)
        found = await storage.get_items([first])
        return (found[0] if found else None,)

    async def iteration(self, number: int) -> IterationResult:
        """The result reported for iteration ``number``.

        Raises:
            InvalidInput: ``number`` is not a non-negative integer.
            ItemNotFound: No result was stored for it.
        """
        check_int(number, name="iteration", low=0)
        found = await self._require_storage().iteration(number)
        if found is None:
            raise ItemNotFound(f"no result stored for iteration {number}")
        return found

    async def skills(
        self, tags: Sequence[str] | None = None, min_usefulness: float = 0.5
    ) -> list[ContextItem]:
        """Skills with usefulness at least ``min_usefulness``, most useful first.

        Raises:
            InvalidInput: Bad tags or threshold.
        """
        threshold = check_score(min_usefulness, name="min_score")
        where = ItemFilter(types=(ContextType.SKILL,), tags_any=check_tags(tags))
        await self._sync_skillbook()
        found = await self._require_storage().list_items(where, MAX_SKILLS)
        kept = [item for item in found if item.usefulness_score >= threshold]
        kept.sort(key=lambda item: (-item.usefulness_score, -item.created_iteration))
        return kept

    # --- lifecycle --------------------------------------------------------------------------

    async def run_lifecycle(
        self, *, dry_run: bool = False, progress: Progress | None = None
    ) -> LifecycleReport:
        """Age, summarize, archive and prune now (normally queued after each iteration)."""
        return await self._lifecycle_call(RunLifecycle(dry_run, progress))

    async def summarize_old(
        self, older_than: int = 20, *, dry_run: bool = False, progress: Progress | None = None
    ) -> LifecycleReport:
        """Summarize active and aging items older than ``older_than`` iterations; each
        original stays readable in the archive.

        Raises:
            InvalidInput: ``older_than`` is not a non-negative integer.
        """
        check_int(older_than, name="older_than_iterations", low=0)
        return await self._lifecycle_call(SummarizeOld(older_than, dry_run, progress))

    async def prune_low_value(
        self, min_score: float = 0.3, *, dry_run: bool = False, progress: Progress | None = None
    ) -> LifecycleReport:
        """Delete items (hot and archived) whose usefulness is below ``min_score``.

        Raises:
            InvalidInput: ``min_score`` is not in [0, 1].
        """
        threshold = check_score(min_score, name="min_score")
        return await self._lifecycle_call(PruneLowValue(threshold, dry_run, progress))

    async def _lifecycle_call(self, request: LifecycleRequest) -> LifecycleReport:
        if self._lifecycle is None:
            raise ActorUnavailable(_NOT_STARTED)
        # Plus the time the summarizer model may take: its budget bounds it per pass, and
        # this call may queue behind a background pass spending its own.
        timeout = self.settings.lifecycle.timeout_seconds
        if self.settings.lifecycle.summarizer_model is not None:
            timeout += 2 * self.settings.lifecycle.summarizer_budget_seconds
        return await self._lifecycle.call(request, timeout=timeout)

    async def forget(
        self,
        *,
        item_ids: Sequence[str] | None = None,
        context_types: Sequence[ContextType | str] | None = None,
        tags: Sequence[str] | None = None,
        older_than_iteration: int | None = None,
        dry_run: bool = False,
    ) -> ForgetReport:
        """Delete the items the selectors pick (AND-ed; at least one), live and archived:
        their rows, vectors, usage counters and archived originals, then the old table
        versions that still held them, so no tool, resource or search returns them.

        Raises:
            InvalidInput: No selector, or a bad one; nothing is deleted.
            ActorUnavailable, StoreError: The store is down or read-only.
        """
        selection = check_selection(item_ids, context_types, tags, older_than_iteration)
        storage = self._require_storage()
        with self._foreground.busy():
            hot, archived = await storage.forgettable(selection)
            if dry_run or not (hot or archived):
                return ForgetReport(dry_run, (*hot, *archived))
            await storage.prune(hot, archived)
        # Old versions still hold the rows: drop them now, not after the retention window.
        await storage.maintain(reclaim=True)
        log.info("forgotten", items=len(hot) + len(archived))
        return ForgetReport(False, (*hot, *archived))

    async def recent_iterations(self, last_n: int = 5) -> list[IterationResult]:
        """The last ``last_n`` iterations, newest first.

        Raises:
            InvalidInput: ``last_n`` is not an integer in 1-1000.
            ActorUnavailable: The store is down.
        """
        check_int(last_n, name="last_n", high=1000)
        return await self._require_storage().recent_iterations(last_n)

    async def mark_useful(self, item_id: str, helpful: bool, reason: str | None = None) -> float:
        """Record feedback on an item; future rankings weigh its usefulness.

        Helpful moves usefulness up by 0.10, not helpful down by 0.15 (the seed's asymmetry:
        one bad retrieval costs more than one good one earns), clamped to [0, 1].

        Returns:
            The item's new usefulness.

        Raises:
            InvalidInput: A malformed id, a non-boolean ``helpful``, or a bad ``reason``.
            ItemNotFound: No item has that id.
            ActorUnavailable: The store is down.
        """
        target = check_item_id(item_id)
        if not isinstance(helpful, bool):
            raise InvalidInput(f"helpful must be true or false, got {helpful!r}")
        if reason is not None:
            check_text(reason, name="reason", max_chars=2_000)
        delta = HELPFUL_DELTA if helpful else UNHELPFUL_DELTA
        score = await self._require_storage().adjust_usefulness(target, delta)
        if self._skillbook is not None:
            try:
                await self._skillbook.feedback(target, helpful)
            except (RalphContextError, OSError) as exc:
                # The store has the feedback; only the file's counts missed it.
                log.warning("skillbook_feedback_not_written", item_id=target, error=str(exc))
        log.info("feedback", item_id=target, helpful=helpful, usefulness=score, reason=reason)
        return score

    # --- reading ----------------------------------------------------------------------------

    async def get(self, item_id: str) -> ContextItem:
        """One item by id, from the hot table or the archive.

        Raises:
            ItemNotFound: No such item.
            ActorUnavailable: The store is down.
        """
        target = check_item_id(item_id)
        storage = self._require_storage()
        found = await storage.get_items([target])
        if found:
            return found[0]
        archived = [e for e in await storage.find_archived([target]) if e.reason == "archived"]
        if not archived:
            raise ItemNotFound(f"no context item with id {item_id!r}")
        return archived[0].item

    async def original(self, item_id: str) -> str | None:
        """The full text a summarized item had before summarization, if it was summarized.

        Raises:
            InvalidInput: A malformed id.
        """
        target = check_item_id(item_id)
        found = await self._require_storage().find_archived([target])
        originals = [e for e in found if e.reason == "original"]
        return originals[0].item.content if originals else None

    async def search(
        self,
        query: str,
        *,
        max_items: int | None = None,
        context_types: Sequence[ContextType | str] | None = None,
        min_score: float | None = None,
        max_tokens: int | None = None,
        tags: Sequence[str] | None = None,
        prefer_types: Sequence[ContextType | str] | None = None,
        metadata: Sequence[MetadataCondition | Mapping[str, object]] | None = None,
    ) -> RetrievalResult:
        """Find the items most relevant to ``query``, best first, within a token budget.

        Args:
            query: What the loop is working on; only the first 500 characters are used.
            max_items: 1-50; defaults to ``retrieval.max_items_per_query``.
            context_types: Only these types (they also count as requested for type match);
                ``None`` means every type.
            min_score: Drop items whose relevance is below this; defaults to
                ``retrieval.min_relevance_score``.
            max_tokens: Estimated prompt tokens the items may use together; defaults to
                ``retrieval.max_context_tokens``.
            tags: Only items carrying at least one of these tags.
            prefer_types: Types that score full type match without filtering the others out
                (the Ralph hook's ``retrieval.context_types``). Ignored if ``context_types``
                is given.
            metadata: Only items whose metadata meets every condition
                (``{"key": "priority", "op": ">=", "value": 2}``; see ``metadata_filter``).

        Raises:
            InvalidInput: A bad argument. Failures of the engine's parts never raise; they
                lower the tier of the result.
        """
        request = check_query(
            self.settings.retrieval,
            query,
            max_items=max_items,
            context_types=context_types,
            min_score=min_score,
            max_tokens=max_tokens,
            tags=tags,
            prefer_types=prefer_types,
            metadata=metadata,
        )
        with self._foreground.busy():
            await self._sync_skillbook()
            return await self._require_retriever().search(request)

    async def candidates(
        self,
        query: str,
        *,
        limit: int = MAX_ITEMS,
        text_limit: int | None = None,
        tags: Sequence[str] | None = None,
    ) -> Candidates:
        """The semantic rung's raw halves for ``query``: vector top-``limit`` and full-text
        top-``text_limit`` (default ``limit``), their pool and its neighbours, before the
        relevance formula.

        For evaluations that compare retrieval modes (``ralph-context bench retrieval``) and
        for debugging a ranking; loops call :meth:`search`, which degrades instead of raising.

        Raises:
            InvalidInput: A bad argument.
            ActorUnavailable, StoreError: No model, or the store failed.
        """
        text = check_content(query, max_bytes=1 << 20, name="query")[:MAX_QUERY_CHARS]
        count = check_int(limit, name="limit", high=MAX_CANDIDATES)
        text_count = (
            None
            if text_limit is None
            else check_int(text_limit, name="text_limit", high=MAX_CANDIDATES)
        )
        where = ItemFilter(tags_any=check_tags(tags))
        return await self._require_retriever().candidates(text, count, where, text_count)

    # --- inspection -------------------------------------------------------------------------

    # --- tool packs -------------------------------------------------------------------------

    async def in_packs(self, function: Callable[[PackSpace], T]) -> T:
        """Run a tool pack's blocking table function inside the storage actor (the store's
        single writer), so pack writes are serialised with every other write.

        Raises:
            ActorUnavailable: The storage actor is down or slower than the timeout.
            StoreError: The function failed for a reason other than our typed errors.
        """
        return await self._require_storage().in_packs(function)

    async def embed(self, texts: Sequence[str]) -> list[Vectors | None]:
        """One vector per text with the engine's model; ``None`` where the model is
        unavailable (callers fall back to full-text search, as retrieval does)."""
        return await self._embed_documents(list(texts))

    @property
    def semantic_unavailable(self) -> str | None:
        """Why vectors cannot be made or searched now, or ``None`` when they can."""
        return self._semantic_unavailable()

    async def stats(self) -> StoreStats:
        """What is stored: counts by type and state, size, versions, index and model.

        Raises:
            ActorUnavailable: The store is down.
        """
        return await self._require_storage().stats()

    async def size_bytes(self) -> int:
        """Bytes the store takes on disk (hot tables, archive, old versions); cheaper than
        :meth:`stats`, which also scans columns.

        Raises:
            ActorUnavailable: The store is down.
        """
        return await self._require_storage().size_bytes()

    async def maintain(self, *, reclaim: bool = False) -> None:
        """Compact the store and build or refresh its indexes now; ``reclaim`` also drops
        the old versions kept for ``storage.version_retention_minutes`` (only safe when no
        other process reads the store)."""
        await self._require_storage().maintain(reclaim=reclaim)

    def health(self) -> EngineHealth:
        """Per-actor health and the tier a query would be served from right now."""
        supervisor = self._supervisor
        actors = supervisor.health() if supervisor is not None else {}
        storage_up = "storage" in actors and actors["storage"].serving
        # A damaged vector index answers with text search until its rebuild succeeds.
        vector_ok = self._storage is None or self._storage.vector_fault is None
        if storage_up and vector_ok and self._semantic_unavailable() is None:
            tier = Tier.SEMANTIC
        elif storage_up:
            tier = Tier.TEXT
        else:
            tier = Tier.NONE
        location = "memory" if self.settings.is_ephemeral else str(self.settings.store_path())
        model = self._embedding.model_id if self._embedding is not None else None
        unused = frozenset(
            name
            for name, actor in (supervisor.actors.items() if supervisor is not None else ())
            if not actor.configured
        )
        return EngineHealth(
            actors=actors,
            tier=tier,
            model_id=model,
            store=location,
            not_configured=unused,
            without_vector=self._storage.without_vector if self._storage is not None else None,
        )

    @property
    def inference(self) -> InferenceActor:
        """The language model actor: ``list_models()`` and ``complete(...)`` for the tools.

        It is ``down`` when no model is configured; its calls then raise ``ActorUnavailable``
        at once, saying how to configure one, and the engine keeps its extractive summaries
        (``lifecycle.summarizer_model`` names the model that writes them otherwise).

        Raises:
            ActorUnavailable: The engine is not started.
        """
        if self._inference is None:
            raise ActorUnavailable(_NOT_STARTED)
        return self._inference

    @property
    def supervisor(self) -> Supervisor:
        """The running supervisor (for health tooling and fault-injection tests).

        Raises:
            ActorUnavailable: The engine is not started.
        """
        if self._supervisor is None:
            raise ActorUnavailable(_NOT_STARTED)
        return self._supervisor

    # --- internals --------------------------------------------------------------------------

    @property
    def _timeout(self) -> float:
        return self.settings.embeddings.timeout_seconds

    def _build_item(self, entry: NewItem) -> ContextItem:
        return build_item(
            entry, max_bytes=self.settings.storage.max_content_bytes, iteration=self._iteration
        )

    async def _persist(self, items: list[ContextItem]) -> list[ContextItem]:
        """Embed (where the model can) and store built items in one write; returns them as
        stored."""
        vectors = await self._embed_documents([item.content for item in items])
        storage = self._require_storage()
        stored = await storage.add_items(list(zip(items, vectors, strict=True)))
        owed = storage.without_vector  # items stored while the model missed its deadline
        if owed and all(v is not None for v in vectors) and not self._backfilling:
            # The model answers again: give the items stored without it their vectors.
            assert self._supervisor is not None, "a store runs inside the engine"
            self._backfilling = True
            self._supervisor.background(self._backfill_owed, name="backfill")
        return stored

    async def _backfill_owed(self) -> None:
        """The background backfill: until nothing is owed, or a round embeds nothing."""
        try:
            while await self._backfill():
                pass
        except Exception as exc:  # a background task must not take the engine down
            log.warning("backfill_failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            self._backfilling = False

    async def _embed_documents(self, texts: list[str]) -> list[Vectors | None]:
        """One vector per text, ``None`` where embedding failed (stored raw, found by text).

        Sent in chunks, each with its own deadline, so a large ``store_many`` is not mistaken
        for a dead model.
        """
        vectors: list[Vectors | None] = [None] * len(texts)
        if self._semantic_unavailable() is not None:
            return vectors
        embedding = self._require_embedding()
        for start in range(0, len(texts), EMBED_CHUNK):
            chunk = texts[start : start + EMBED_CHUNK]
            try:
                matrix = await embedding.call(EmbedRequest(tuple(chunk)), timeout=self._timeout)
            except ActorUnavailable as exc:
                log.warning("stored_without_vector", count=len(chunk), reason=str(exc))
                continue
            vectors[start : start + len(chunk)] = list(matrix)
        return vectors

    async def _backfill(self) -> int:
        """Embed items stored while the model was missing, so semantic search sees them
        again (at start, once the model loads). Bounded per call; failures are logged."""
        if self._semantic_unavailable() is not None or self._storage is None:
            return 0
        done = 0
        try:
            for _ in range(BACKFILL_CHUNKS):
                items = await self._storage.missing_vectors(EMBED_CHUNK)
                vectors = await self._embed_documents([item.content for item in items])
                found = {i.id: v for i, v in zip(items, vectors, strict=True) if v is not None}
                if found:
                    done += await self._storage.set_vectors(found)
                if len(items) < EMBED_CHUNK or not found:
                    break
        except RalphContextError as exc:
            log.warning("backfill_stopped", embedded=done, error=str(exc))
        if done:
            log.info("vectors_backfilled", items=done)
        return done

    async def _sync_skillbook(self) -> None:
        """Re-read the skillbook if it changed; a broken file or a down store is logged and
        retried on a later call, never raised into a search."""
        if self._skillbook is None or not self._skillbook.due():
            return
        try:
            await self._skillbook.sync()
        except RalphContextError as exc:
            log.warning("skillbook_not_synced", path=str(self._skillbook.path), error=str(exc))

    def _semantic_unavailable(self) -> str | None:
        embedding, storage = self._embedding, self._storage
        if embedding is None or not embedding.health.snapshot().serving:
            error = embedding.health.last_error if embedding is not None else None
            return f"embedding model unavailable ({error or 'not started'})"
        if storage is not None and storage.model_id not in (None, embedding.model_id):
            return "the store was opened without a model; restart the engine to use one"
        return None

    def _require_embedding(self) -> EmbeddingActor:
        if self._embedding is None:
            raise ActorUnavailable(_NOT_STARTED)
        return self._embedding

    def _require_embedding_model(self) -> int:
        dimension = self._require_embedding().dimension
        if dimension is None:
            raise StoreError("no embedding model is loaded")
        return dimension

    def _require_retriever(self) -> Retriever:
        if self._retriever is None:
            raise ActorUnavailable(_NOT_STARTED)
        return self._retriever

    def _require_storage(self) -> StorageActor:
        if self._storage is None:
            raise ActorUnavailable(_NOT_STARTED)
        return self._storage
