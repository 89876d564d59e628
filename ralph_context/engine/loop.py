"""What an iteration loop records, and the lifecycle the engine schedules for it:
iteration results (with their errors as items), lifecycle passes, forgetting, usefulness
feedback. ``Engine`` owns one ``IterationLoop`` and delegates these calls to it; the loop
reaches the actors and the lifecycle clock through the engine's wiring (``wiring.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from ralph_context._logging import get_logger
from ralph_context.actors.storage.actor import StorageActor
from ralph_context.arguments import NewItem, check_iteration_step
from ralph_context.config import Settings
from ralph_context.engine.replay import refuse_replayed
from ralph_context.engine.wiring import NOT_STARTED
from ralph_context.errors import (
    ActorUnavailable,
    InvalidInput,
    ItemNotFound,
    RalphContextError,
)
from ralph_context.lifecycle.actor import (
    LifecycleActor,
    LifecycleReport,
    LifecycleRequest,
    Progress,
    PruneLowValue,
    RunLifecycle,
    SummarizeOld,
)
from ralph_context.lifecycle.forgetting import ForgetReport, check_selection
from ralph_context.models import (
    ITERATION_ERROR_TAG,
    ContextItem,
    ContextType,
    IterationResult,
)
from ralph_context.observed import Observations
from ralph_context.privacy import Redactor
from ralph_context.runtime import Foreground
from ralph_context.skillbook.sync import SkillbookSync
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.requests import iteration_fingerprint
from ralph_context.validation import (
    check_int,
    check_item_id,
    check_score,
    check_text,
)

__all__ = ["IterationLoop", "LoopWiring"]

log = get_logger("ralph_context.engine")


# mark_useful: the seed's +0.10 for helpful, -0.15 for not.
HELPFUL_DELTA = 0.10
UNHELPFUL_DELTA = -0.15
# How many error items of one iteration are compared with a new one (runs that reuse
# iteration numbers add up).
_SAME_ITERATION_ERRORS = 100


class LoopWiring(Protocol):
    """What the iteration loop reaches of the engine's wiring (``EngineWiring`` is one)."""

    settings: Settings
    redactor: Redactor
    observed: Observations
    foreground: Foreground

    @property
    def current_iteration(self) -> int: ...
    def advance(self, iteration: int) -> None: ...
    @property
    def lifecycle(self) -> LifecycleActor | None: ...
    @property
    def skillbook(self) -> SkillbookSync | None: ...
    def build_item(self, entry: NewItem) -> ContextItem: ...
    async def persist(self, items: list[ContextItem]) -> list[ContextItem]: ...
    def require_storage(self) -> StorageActor: ...


class IterationLoop:
    """The loop's records and the lifecycle scheduling of :class:`Engine`, on its wiring."""

    def __init__(self, wiring: LoopWiring) -> None:
        self._wiring = wiring

    async def record_iteration(
        self, result: IterationResult, *, idempotency_key: str | None = None
    ) -> ContextItem | None:
        """Persist an iteration's result, advance the lifecycle clock and queue a lifecycle
        pass (which runs in the background; this call does not wait for it).

        An ``error`` is also stored as an ``error`` item, so later iterations can retrieve
        it by meaning; that item is returned. Recording an iteration again replaces its
        result, and the same error is not stored twice. With ``idempotency_key``, a call
        repeating the key of an earlier one (whose iteration is recorded) returns that one's
        error item and writes nothing; the same key with another result is refused.

        Raises:
            InvalidInput: A text field is not valid text or too long, or the iteration is
                more than ``lifecycle.max_iteration_step`` past the latest one.
            IdempotencyConflict: The key was used before for another result.
            ActorUnavailable: The store is down.
        """
        check_iteration_step(
            result.iteration,
            latest=self._wiring.current_iteration,
            step=self._wiring.settings.lifecycle.max_iteration_step,
        )
        limit = self._wiring.settings.storage.max_content_bytes
        check_text(result.summary, name="summary", max_chars=limit)
        if result.error is not None:
            check_text(result.error, name="error", max_chars=limit)
        for name, values in (("tool_calls", result.tool_calls), ("artifacts", result.artifacts)):
            for value in values:
                check_text(value, name=name)
        result = self._wiring.redactor.iteration(result)
        key = None
        fingerprint = iteration_fingerprint(result)
        if idempotency_key is not None:
            key = check_item_id(idempotency_key, name="idempotency_key")
            repeated = await self._repeated_iteration(key, result.iteration, fingerprint)
            if repeated is not None:
                return repeated[0]
        error_item = None
        if result.error is not None and result.error.strip():
            error_item = self._wiring.build_item(
                NewItem(
                    result.error,
                    ContextType.ERROR,
                    tags=(ITERATION_ERROR_TAG,),
                    metadata={"iteration": result.iteration},
                    source="orchestrator",
                    iteration=result.iteration,
                )
            )
        storage = self._wiring.require_storage()
        if error_item is not None:
            refuse_replayed(storage, [error_item])  # a turn the hooks spooled before a forget
        with self._wiring.foreground.busy():
            if key is not None and storage.request_target(key) is None:
                target = error_item.id if error_item else ""
                await storage.put_request_key(key, target, fingerprint)
            await storage.add_iteration(result)
            self._wiring.advance(result.iteration)
            if error_item is not None:
                error_item = await self._iteration_error(error_item, result.iteration)
        if not self._wiring.settings.lifecycle.auto_run or self._wiring.lifecycle is None:
            pass
        elif not self._wiring.lifecycle.tell(RunLifecycle()):
            log.info("lifecycle_not_queued", reason="busy or down; the next iteration retries")
        return error_item

    async def _iteration_error(self, error_item: ContextItem, iteration: int) -> ContextItem:
        """Store an iteration's error item, unless the same error of the same iteration is
        stored already (the iteration was recorded again): then that one. An earlier run's
        different error under the same number is a memory of its own and stays."""
        stored = await self._wiring.require_storage().list_items(
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
        (persisted,) = await self._wiring.persist([error_item])
        return persisted

    async def _repeated_iteration(
        self, key: str, iteration: int, fingerprint: str
    ) -> tuple[ContextItem | None] | None:
        """The first call's answer if ``key`` was used for a recorded iteration, else
        ``None`` (a key whose iteration is missing: its writer died before recording).

        Raises:
            IdempotencyConflict: ``key`` was used for another result.
        """
        storage = self._wiring.require_storage()
        claim = storage.request_target(key)
        if claim is None:
            return None
        first = claim.target_for(key, fingerprint)
        if await storage.iteration(iteration) is None:
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
        found = await self._wiring.require_storage().iteration(number)
        if found is None:
            raise ItemNotFound(f"no result stored for iteration {number}")
        return found

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
        if self._wiring.lifecycle is None:
            raise ActorUnavailable(NOT_STARTED)
        # Plus the time the summarizer model may take: its budget bounds it per pass, and
        # this call may queue behind a background pass spending its own.
        timeout = self._wiring.settings.lifecycle.timeout_seconds
        if self._wiring.settings.lifecycle.summarizer_model is not None:
            timeout += 2 * self._wiring.settings.lifecycle.summarizer_budget_seconds
        return await self._wiring.lifecycle.call(request, timeout=timeout)

    async def forget(
        self,
        *,
        item_ids: Sequence[str] | None = None,
        context_types: Sequence[ContextType | str] | None = None,
        tags: Sequence[str] | None = None,
        older_than_iteration: int | None = None,
        iterations: Sequence[int] | None = None,
        dry_run: bool = False,
    ) -> ForgetReport:
        """Delete the items the selectors pick (AND-ed; at least one), live and archived:
        their rows, vectors, usage counters, archived originals and idempotency keys; with
        a selection by iteration alone, those iterations' records too; a record whose error
        item goes is cleared (see ``forgetting``). They leave tombstones (ids and keyed
        digests, no text: ``storage.lifecycle.tombstones``), so no import, keyed retry, replica or
        spooled capture brings them back. Then the store is scrubbed (``LanceStore.scrub``),
        also when nothing is selected now (what an earlier delete left goes): no tool,
        resource or search returns them, and no file of the store holds them. A crash
        before the end is finished when the store next opens (``storage.store.forget``).

        Raises:
            InvalidInput: No selector, or a bad one; nothing is deleted.
            ActorUnavailable, StoreError: The store is down or read-only.
        """
        selection = check_selection(item_ids, context_types, tags, older_than_iteration, iterations)
        storage = self._wiring.require_storage()
        with self._wiring.foreground.busy():
            found = await storage.forgettable(selection)
            report = ForgetReport(
                dry_run,
                (*found.hot, *found.archived),
                tuple(found.records),
                tuple(found.cleared),
            )
            if dry_run:
                return report
            # The plan first, then tombstones, deletes, keys and records (store_forget):
            # a crash from here on is finished when the store next opens.
            begun = await storage.forget(found)
        # The files and old versions still hold the rows (this forget's, and any an earlier
        # one or a prune left when nothing is selected now): rewrite and drop them now.
        scrubbed = await storage.scrub()
        await storage.end_forget()
        log.info(
            "forgotten",
            items=report.count,
            iterations=len(found.records),
            cleared_iterations=len(found.cleared),
            versions_removed=scrubbed.versions_removed,
            finished_earlier=begun.finished_earlier,
        )
        return replace(
            report,
            purged=True,
            versions_removed=scrubbed.versions_removed,
            finished_earlier=begun.finished_earlier,
        )

    async def recent_iterations(self, last_n: int = 5) -> list[IterationResult]:
        """The last ``last_n`` iterations, newest first.

        Raises:
            InvalidInput: ``last_n`` is not an integer in 1-1000.
            ActorUnavailable: The store is down.
        """
        check_int(last_n, name="last_n", high=1000)
        return await self._wiring.require_storage().recent_iterations(last_n)

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
            reason = self._wiring.redactor.clean(check_text(reason, name="reason", max_chars=2_000))
        delta = HELPFUL_DELTA if helpful else UNHELPFUL_DELTA
        score = await self._wiring.require_storage().adjust_usefulness(target, delta)
        if self._wiring.skillbook is not None:
            try:
                await self._wiring.skillbook.feedback(target, helpful)
            except (RalphContextError, OSError) as exc:
                # The store has the feedback; only the file's counts missed it.
                log.warning("skillbook_feedback_not_written", item_id=target, error=str(exc))
        log.info("feedback", item_id=target, helpful=helpful, usefulness=score, reason=reason)
        self._wiring.observed.useful(target, helpful, score, reason)
        return score
