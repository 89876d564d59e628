"""The engine's wiring: the actors it starts and how they are reached, its lifetime, its
health, and the paths every part shares (embedding, persisting, backfill, skillbook sync).
``Engine`` (``facade.py``) owns one and the parts built on it (``items.py``, ``loop.py``),
which reach it only through the slice each declares (``ItemsWiring``, ``LoopWiring``).
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from ralph_context import origin
from ralph_context._logging import ensure_logging, get_logger
from ralph_context.actors.embedding import EmbeddingActor
from ralph_context.actors.inference import InferenceActor
from ralph_context.actors.settle import keep_upkeep
from ralph_context.actors.storage.actor import StorageActor
from ralph_context.arguments import NewItem, build_item
from ralph_context.codebase import Repository, Worktrees, anchor
from ralph_context.config import EmbeddingsSettings, Settings
from ralph_context.config.owner_token import forward_token
from ralph_context.embeddings.local import LocalEmbedder, Vectors, load_embedder
from ralph_context.engine.documents import DocumentChunks
from ralph_context.engine.health import EngineHealth
from ralph_context.errors import ActorUnavailable, RalphContextError, StoreError
from ralph_context.lifecycle.actor import LifecycleActor, RunLifecycle
from ralph_context.models import ContextItem, Tier
from ralph_context.observed import Observations
from ralph_context.privacy import Redactor, counted
from ralph_context.retrieval.retriever import Retriever
from ralph_context.retrieval.scoring_actor import ScoringActor
from ralph_context.runtime import Foreground, Supervisor
from ralph_context.runtime.heap import release_heap, settle_heap
from ralph_context.skillbook.sync import SkillbookSync

__all__ = ["NOT_STARTED", "EngineWiring"]

log = get_logger("ralph_context.engine")


NOT_STARTED = "the engine is not started (use `async with Engine(...)`)"
# Items a backfill round embeds (in chunks of ``documents``) before it looks again.
EMBED_CHUNK = 256
# Scoring is pure arithmetic on a few hundred candidates (~1 ms); past this the actor is
# stuck and retrieval scores inline instead.
SCORING_TIMEOUT = 5.0
# Longest a due maintenance waits for a calm loop before it is asked for anyway (the
# writer then runs it only if calm, or once overdue).
_CALM_AT_MOST = 5.0
# Items embedded by one backfill at start, in chunks (~2 minutes of work at most here).
BACKFILL_CHUNKS = 24


class EngineWiring:
    """The actors and their supervisor, started by :meth:`start`; see :class:`Engine`."""

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
        # A background backfill is running (see persist).
        self._backfilling = False
        # The embedding model's measured speed, which sizes each chunk of stored texts.
        self._chunks = DocumentChunks()
        self._iteration = 0
        # Searches and stores in flight: lifecycle steps wait until there are none.
        self.foreground = Foreground()
        # Latencies, tiers, lifecycle passes and feedback since start (the console shows them).
        self.observed = Observations()
        # Every text stored passes it first (ralph_context.privacy): before embedding, before
        # the store's files and the logs.
        self.redactor = Redactor(self.settings.redaction)
        # The project's repository, whose files items are tied to (``codebase``).
        self.codebase = Worktrees(Repository.find(self.settings.project_root))

    async def start(self) -> None:
        """Start the supervisor and the actors (``Engine.__aenter__``)."""
        ensure_logging(scrub=self.redactor.clean)
        supervisor = Supervisor()
        await supervisor.__aenter__()
        self._supervisor = supervisor
        try:
            await self._start_actors(supervisor)
        except BaseException as exc:
            await supervisor.__aexit__(type(exc), exc, exc.__traceback__)
            self._supervisor = None
            raise
        # Everything started is long-lived: keep full collections from walking it again
        # while requests wait (see settle_heap).
        settle_heap()

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
            foreground=self.foreground,
            read_only=self.read_only,
            lock_at=None if settings.is_ephemeral else settings.store_root(),
        )
        if settings.storage.on_object_storage:  # its writes may go to another replica
            storage.forward_token = forward_token(settings)
        await supervisor.start(storage)
        self._storage = storage
        if storage.fatal is not None:
            # A model mismatch or a store another process writes is a problem the user must
            # fix, not a degradation.
            raise storage.fatal
        if not settings.is_ephemeral and not self.read_only:
            retention = settings.storage.version_retention_minutes * 60
            keep_upkeep(supervisor, storage, retention, self.foreground, _CALM_AT_MOST)
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
            foreground=self.foreground,
            observed=self.observed,
            redactor=self.redactor,
        )
        await supervisor.start(lifecycle)
        self._lifecycle = lifecycle
        if settings.lifecycle.auto_run:  # the pass a paused store put off
            storage.write_fault.on_resume(lambda: lifecycle.tell(RunLifecycle()))
        self._retriever = Retriever(
            settings,
            embedding=embedding,
            storage=storage,
            scoring=scoring,
            clock=lambda: self._iteration,
            semantic_unavailable=self.semantic_unavailable,
        )
        if self.read_only:
            return  # no backfill, no skillbook sync: both write
        await self._backfill()
        if settings.skillbook.enabled:
            self._skillbook = SkillbookSync(
                settings.skillbook_path(),
                storage,
                self.embed_documents,
                lambda: self._iteration,
                redact=self.redactor.item,
            )
            await self.sync_skillbook()

    async def stop(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the actors and the supervisor (``Engine.__aexit__``)."""
        supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None:
            try:
                await supervisor.__aexit__(exc_type, exc, tb)
            finally:
                release_heap()

    @property
    def running(self) -> bool:
        """True between entering and leaving ``async with``."""
        return self._supervisor is not None

    @property
    def current_iteration(self) -> int:
        """The lifecycle clock: the latest iteration stored so far."""
        return self._iteration

    def advance(self, iteration: int) -> None:
        """Move the lifecycle clock on to ``iteration`` (a recorded one); never back."""
        self._iteration = max(self._iteration, iteration)

    @property
    def lifecycle(self) -> LifecycleActor | None:
        """The lifecycle actor, once started."""
        return self._lifecycle

    @property
    def skillbook(self) -> SkillbookSync | None:
        """The skillbook sync, when the engine writes and a skillbook is configured."""
        return self._skillbook

    def health(self) -> EngineHealth:
        """Per-actor health and the tier a query would be served from right now."""
        supervisor = self._supervisor
        actors = supervisor.health() if supervisor is not None else {}
        storage_up = "storage" in actors and actors["storage"].serving
        # A damaged vector index answers with text search until its rebuild succeeds.
        vector_ok = self._storage is None or self._storage.vector_fault is None
        if storage_up and vector_ok and self.semantic_unavailable() is None:
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
            redaction=self.redactor.enabled,
            redacted=counted(self.redactor.counts),
            write_error=self._storage.write_error if self._storage is not None else None,
        )

    @property
    def inference(self) -> InferenceActor:
        """The language model actor (see ``Engine.inference``); raises ``ActorUnavailable``
        before start."""
        if self._inference is None:
            raise ActorUnavailable(NOT_STARTED)
        return self._inference

    @property
    def supervisor(self) -> Supervisor:
        """The running supervisor; raises ``ActorUnavailable`` before start."""
        if self._supervisor is None:
            raise ActorUnavailable(NOT_STARTED)
        return self._supervisor

    @property
    def _timeout(self) -> float:
        return self.settings.embeddings.timeout_seconds

    def build_item(self, entry: NewItem) -> ContextItem:
        """The item ``entry`` describes, checked, secrets redacted, its recorder stamped
        (``origin``: the adapter's word, never the caller's metadata) and then tied to the
        repository's files it names (``codebase``)."""
        built = build_item(
            entry,
            max_bytes=self.settings.storage.max_content_bytes,
            iteration=self._iteration,
            max_step=self.settings.lifecycle.max_iteration_step,
        )
        redacted = self.redactor.item(origin.stamped(built))
        return anchor(redacted, self.codebase.at(redacted.metadata.get("cwd")))

    async def persist(self, items: list[ContextItem]) -> list[ContextItem]:
        """Embed (where the model can) and store built items in one write; returns them as
        stored."""
        vectors = await self.embed_documents([item.content for item in items])
        storage = self.require_storage()
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

    async def embed_documents(self, texts: list[str]) -> list[Vectors | None]:
        """One vector per text, ``None`` where embedding failed (stored raw, found by text);
        in chunks sized to the model's speed, each with its own deadline (``documents``)."""
        if self.semantic_unavailable() is not None:
            return [None] * len(texts)
        embedding = self.require_embedding()
        return await self._chunks.embed(
            lambda request, deadline: embedding.call(request, timeout=deadline),
            texts,
            self._timeout,
        )

    async def _backfill(self) -> int:
        """Embed items stored while the model was missing, so semantic search sees them
        again (at start, once the model loads). Bounded per call; failures are logged."""
        if self.semantic_unavailable() is not None or self._storage is None:
            return 0
        done = 0
        try:
            for _ in range(BACKFILL_CHUNKS):
                items = await self._storage.missing_vectors(EMBED_CHUNK)
                vectors = await self.embed_documents([item.content for item in items])
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

    async def sync_skillbook(self) -> None:
        """Re-read the skillbook if it changed; a broken file or a down store is logged and
        retried on a later call, never raised into a search."""
        if self._skillbook is None or not self._skillbook.due():
            return
        try:
            await self._skillbook.sync()
        except RalphContextError as exc:
            log.warning("skillbook_not_synced", path=str(self._skillbook.path), error=str(exc))

    def semantic_unavailable(self) -> str | None:
        """Why vectors cannot be made or searched now, or ``None`` when they can."""
        embedding, storage = self._embedding, self._storage
        if embedding is None or not embedding.health.snapshot().serving:
            error = embedding.health.last_error if embedding is not None else None
            return f"embedding model unavailable ({error or 'not started'})"
        if storage is not None and storage.model_id not in (None, embedding.model_id):
            return "the store was opened without a model; restart the engine to use one"
        return None

    # The actors, once started (before: ActorUnavailable saying so).
    def require_embedding(self) -> EmbeddingActor:
        """The embedding actor."""
        if self._embedding is None:
            raise ActorUnavailable(NOT_STARTED)
        return self._embedding

    def require_embedding_model(self) -> int:
        """The loaded model's dimension; ``StoreError`` when no model is loaded."""
        dimension = self.require_embedding().dimension
        if dimension is None:
            raise StoreError("no embedding model is loaded")
        return dimension

    def require_retriever(self) -> Retriever:
        """The retriever over the actors."""
        if self._retriever is None:
            raise ActorUnavailable(NOT_STARTED)
        return self._retriever

    def require_storage(self) -> StorageActor:
        """The storage actor."""
        if self._storage is None:
            raise ActorUnavailable(NOT_STARTED)
        return self._storage
