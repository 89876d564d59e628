"""Lifecycle actor: ages, summarizes, archives and prunes, off the retrieval path.

It runs after each stored iteration (queued with ``tell``, so the caller never waits) and on
demand. Several queued clock-driven passes collapse into one. All its reads and writes go
through the storage actor in small requests, and summaries embed one item's sentences per
embedding request, so queries interleave with a long pass instead of waiting behind it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import anyio

from ralph_context._logging import get_logger
from ralph_context.actors.embedding import EmbeddingActor
from ralph_context.actors.inference import InferenceActor
from ralph_context.actors.storage.actor import StorageActor
from ralph_context.config import Settings
from ralph_context.errors import RalphContextError
from ralph_context.lifecycle.policy import (
    Plan,
    plan_lifecycle,
    plan_prune,
    plan_summarize,
    victims,
)
from ralph_context.lifecycle.summarize import worth_summarizing
from ralph_context.lifecycle.summarizer import EXTRACTIVE, NO_SUMMARY, PassSummarizer
from ralph_context.models import ContextState
from ralph_context.observed import Observations, PassRecord
from ralph_context.privacy import Redactor
from ralph_context.runtime import Actor, Envelope, Foreground
from ralph_context.storage.store.upkeep import ANOTHER_REPLICA
from ralph_context.storage.table.filters import DueFilter

__all__ = [
    "LifecycleActor",
    "LifecycleReport",
    "Progress",
    "PruneLowValue",
    "RunLifecycle",
    "SummarizeOld",
]

log = get_logger("ralph_context.lifecycle")

# (done, total, message): what MCP progress notifications carry.
Progress = Callable[[float, float | None, str | None], Awaitable[None]]

# Items read per storage request while summarizing; smaller when a model writes the
# summaries, so a pass stopped at shutdown loses only a few minutes of the model's work.
_READ_CHUNK = 32
_MODEL_CHUNK = 4
# Ids per storage request of a pass (state changes, archiving, pruning): a slice is the
# longest a write from the loop waits behind the pass, and the most a request that arrives
# during it shares the CPU with.
_SLICE = 128
# Longest rest between slices, and longest wait for reads in flight to finish (seconds).
_MAX_REST = 0.5
# Share of the size-pressure candidates deleted per round before re-measuring.
_PRESSURE_STEP = 0.1
_MIB = 1024 * 1024


@dataclass(frozen=True)
class RunLifecycle:
    """The clock-driven pass: age, summarize, archive, prune, then check the size limit."""

    dry_run: bool = False
    progress: Progress | None = None


@dataclass(frozen=True)
class SummarizeOld:
    """Summarize active/aging items older than ``older_than`` iterations."""

    older_than: int
    dry_run: bool = False
    progress: Progress | None = None


@dataclass(frozen=True)
class PruneLowValue:
    """Delete items whose usefulness is below ``min_usefulness``."""

    min_usefulness: float
    dry_run: bool = False
    progress: Progress | None = None


LifecycleRequest = RunLifecycle | SummarizeOld | PruneLowValue


@dataclass(frozen=True)
class LifecycleReport:
    """What a pass did (or, with ``dry_run``, would do)."""

    dry_run: bool
    iteration: int
    aged: tuple[str, ...] = ()
    summarized: tuple[str, ...] = ()
    archived: tuple[str, ...] = ()
    pruned: tuple[str, ...] = ()
    pruned_for_space: tuple[str, ...] = ()
    chars_saved: int = 0
    summarizer: str = EXTRACTIVE
    size_bytes: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


class LifecycleActor(Actor[LifecycleRequest, LifecycleReport]):
    """Executes lifecycle plans through the storage, embedding and inference actors.

    Args:
        settings: Engine settings (``lifecycle`` ages and summarizer, ``storage.max_size_mb``).
        storage, embedding: The actors it works through.
        inference: Writes summaries when ``lifecycle.summarizer_model`` is set.
        clock: The current iteration.
        foreground: The loop's requests in flight; each step of a pass waits for none.
        observed: Where each pass is recorded for the console (none: not recorded).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        storage: StorageActor,
        embedding: EmbeddingActor,
        inference: InferenceActor | None = None,
        clock: Callable[[], int],
        foreground: Foreground | None = None,
        observed: Observations | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        super().__init__("lifecycle", inbox_size=64, max_batch=64)
        # A summary is new text (a model may write it): redacted like any stored text.
        self.redactor = redactor or Redactor(settings.redaction)
        self.observed = observed
        self.settings = settings
        self.storage = storage
        self.embedding = embedding
        self.inference = inference
        self.clock = clock
        self.foreground = foreground or Foreground()

    async def handle_batch(
        self, batch: Sequence[Envelope[LifecycleRequest, LifecycleReport]]
    ) -> None:
        """Answer in order; a run of queued clock passes is done once and answers all."""
        shared: LifecycleReport | None = None
        for envelope in batch:
            request = envelope.request
            reusable = isinstance(request, RunLifecycle) and not request.dry_run
            try:
                if reusable and shared is not None and request.progress is None:
                    envelope.resolve(shared)
                    continue
                report = await self.handle(request)
            except RalphContextError as error:
                envelope.refuse(error)
                continue
            self._record(request, report)
            if reusable:
                shared = report
            envelope.resolve(report)

    def _record(self, request: LifecycleRequest, report: LifecycleReport) -> None:
        if self.observed is None:
            return
        kind = {RunLifecycle: "clock", SummarizeOld: "summarize", PruneLowValue: "prune"}
        self.observed.lifecycle_pass(
            PassRecord(
                at=datetime.now(UTC),
                kind=kind[type(request)],
                dry_run=report.dry_run,
                iteration=report.iteration,
                summarized=report.summarized,
                archived=report.archived,
                pruned=(*report.pruned, *report.pruned_for_space),
                aged=len(report.aged),
                chars_saved=report.chars_saved,
                summarizer=report.summarizer,
                notes=report.notes,
            )
        )

    async def handle(self, request: LifecycleRequest) -> LifecycleReport:
        await self.foreground.quiet(at_most=_MAX_REST)
        now = self.clock()
        paused = self.storage.write_fault.error
        if paused is not None and not request.dry_run:
            raise paused  # a full disk: the engine queues the pass again once writes resume
        if not request.dry_run and not await self.storage.may_maintain():
            # On object storage, the replica holding the maintenance lease runs the passes:
            # two at once would summarize and archive the same items twice.
            return LifecycleReport(dry_run=False, iteration=now, notes=(ANOTHER_REPLICA,))
        match request:
            case RunLifecycle(dry_run, progress):
                # Only rows past their state's age, or old and useless, can change.
                ages = self.settings.lifecycle
                due = DueFilter(
                    aging_before=now - ages.aging_after_iterations,
                    summarize_before=now - ages.summarize_after_iterations,
                    archive_before=now - ages.archive_after_iterations,
                    ageless=ages.ageless_types,
                )
                rows = await self.storage.due_rows(
                    due, now - ages.prune_after_iterations, ages.prune_min_usefulness
                )
                # Only what the clock may prune: the archive keeps most of a long loop.
                archived = await self.storage.archived_rows(
                    now - ages.prune_after_iterations, ages.prune_min_usefulness
                )
                plan = plan_lifecycle(rows, archived, now=now, settings=self.settings.lifecycle)
                report = await self._execute(plan, now, dry_run, progress)
                if dry_run:
                    return report
                return await self._relieve_pressure(report, now, progress)
            case SummarizeOld(older_than, dry_run, progress):
                rows = await self.storage.age_rows(now - older_than)
                plan = plan_summarize(rows, now=now, older_than=older_than)
                return await self._execute(plan, now, dry_run, progress)
            case PruneLowValue(min_usefulness, dry_run, progress):
                rows = await self.storage.age_rows()
                archived = await self.storage.archived_rows(below=min_usefulness)
                plan = plan_prune(rows, archived, min_usefulness=min_usefulness)
                return await self._execute(plan, now, dry_run, progress)

    async def _execute(
        self, plan: Plan, now: int, dry_run: bool, progress: Progress | None
    ) -> LifecycleReport:
        pruned = (*plan.to_prune, *plan.to_prune_archived)
        summarizer = PassSummarizer(
            self.settings.lifecycle,
            embedding=self.embedding,
            inference=self.inference,
            embed_timeout=self.settings.embeddings.timeout_seconds,
        )
        report = LifecycleReport(
            dry_run=dry_run,
            iteration=now,
            aged=plan.to_aging,
            summarized=plan.to_summarize,
            archived=plan.to_archive,
            pruned=pruned,
            summarizer=summarizer.intended if dry_run else NO_SUMMARY,
            notes=summarizer.notes if dry_run else (),
        )
        if dry_run or plan.empty:
            return report
        total = float(len(plan.to_summarize) + 3)
        async with aclosing(self._slices(plan.to_aging)) as slices:
            async for ids in slices:
                await self.storage.set_state(ids, ContextState.AGING)
        await _report(progress, 1, total, f"{len(plan.to_aging)} items aging")
        saved = await self._summarize(plan.to_summarize, summarizer, progress, total)
        report = replace(report, summarizer=summarizer.name, notes=summarizer.notes)
        async with aclosing(self._slices(plan.to_archive)) as slices:
            async for ids in slices:
                await self.storage.archive_items(ids)
        await _report(progress, total - 1, total, f"{len(plan.to_archive)} items archived")
        # aclosing: a slice that fails (or a cancelled pass) closes its generator now, not
        # at garbage collection (trio warned of one never closed).
        async with aclosing(self._slices(plan.to_prune)) as slices:
            async for ids in slices:
                await self.storage.prune(ids, ())
        async with aclosing(self._slices(plan.to_prune_archived)) as slices:
            async for ids in slices:
                await self.storage.prune((), ids)
        await _report(progress, total, total, f"{len(pruned)} items pruned")
        log.info(
            "lifecycle_pass",
            iteration=now,
            aged=len(plan.to_aging),
            summarized=len(plan.to_summarize),
            archived=len(plan.to_archive),
            pruned=len(pruned),
        )
        return replace(report, chars_saved=saved)

    async def _slices(self, ids: Sequence[str]) -> AsyncGenerator[Sequence[str], None]:
        """``ids`` in slices of :data:`_SLICE`, each handed out once no foreground request
        is in flight and after a rest as long as the previous slice took: a pass over 100k
        items then holds the single writer for one slice at a time and leaves at least half
        the CPU to the loop's requests."""
        began = anyio.current_time()
        for start in range(0, len(ids), _SLICE):
            if start:
                await anyio.sleep(min(_MAX_REST, anyio.current_time() - began))
            await self.foreground.quiet(at_most=_MAX_REST)
            began = anyio.current_time()
            yield ids[start : start + _SLICE]

    async def _summarize(
        self,
        ids: Sequence[str],
        summarizer: PassSummarizer,
        progress: Progress | None,
        total: float,
    ) -> int:
        """Rewrite long items as summaries (returns the characters saved); short ones only
        change state."""
        chunk = _MODEL_CHUNK if summarizer.model else _READ_CHUNK
        saved = 0
        done = 1
        for start in range(0, len(ids), chunk):
            await self.foreground.quiet(at_most=_MAX_REST)
            items = await self.storage.get_items(ids[start : start + chunk])
            summaries: dict[str, str] = {}
            for item in items:
                if worth_summarizing(item.content):
                    await self.foreground.quiet(at_most=_MAX_REST)
                    summary = self.redactor.clean(await summarizer.summary(item))
                    if len(summary) < len(item.content):
                        summaries[item.id] = summary
                        saved += len(item.content) - len(summary)
                done += 1
                await _report(progress, done, total, f"summarized {item.id}")
            # The embeddings above took a while: the loop may be back; its writes first.
            if summaries:
                await self.foreground.quiet(at_most=_MAX_REST)
                await self.storage.summarize_items(summaries)
            unchanged = [item.id for item in items if item.id not in summaries]
            if unchanged:
                await self.foreground.quiet(at_most=_MAX_REST)
                await self.storage.set_state(unchanged, ContextState.SUMMARIZED)
        return saved

    async def _relieve_pressure(
        self, report: LifecycleReport, now: int, progress: Progress | None
    ) -> LifecycleReport:
        """Over ``storage.max_size_mb``: delete archived, then hot items, lowest usefulness
        and oldest first, compacting between rounds, until the store fits (or only the
        active items are left)."""
        limit = self.settings.storage.max_size_mb * _MIB
        size = await self.storage.size_bytes()
        if size <= limit:
            return replace(report, size_bytes=size)
        # Most of a store over its limit right after a mass archive is old versions:
        # dropping them may be enough, and then nothing is deleted (and the whole store,
        # archive included, need not be read: 1.5 s of CPU at 100k beside the loop).
        await self.storage.maintain(reclaim=True)
        size = await self.storage.size_bytes()
        if size <= limit:
            log.info("reclaimed_for_space", size_mb=size / _MIB)
            return replace(report, size_bytes=size)
        rows = await self.storage.age_rows()
        cold, hot = victims(
            rows, await self.storage.archived_rows(), now=now, settings=self.settings.lifecycle
        )
        queue = [(item_id, True) for item_id in cold] + [(item_id, False) for item_id in hot]
        step = max(1, int(len(queue) * _PRESSURE_STEP))
        removed: list[str] = []
        while size > limit and queue:
            batch, queue = queue[:step], queue[step:]
            await self.storage.prune(
                [i for i, cold_row in batch if not cold_row],
                [i for i, cold_row in batch if cold_row],
            )
            removed.extend(i for i, _ in batch)
            await self.storage.maintain(reclaim=True)
            size = await self.storage.size_bytes()
            await _report(
                progress, len(removed), float(len(removed) + len(queue)), "pruning for space"
            )
        notes: tuple[str, ...] = ()
        if size > limit:
            notes = (
                f"the store is {size / _MIB:.1f} MiB, over storage.max_size_mb "
                f"({self.settings.storage.max_size_mb:g}); only recent items are left",
            )
            log.warning("store_over_size_limit", size_mb=size / _MIB)
        log.info("pruned_for_space", removed=len(removed), size_mb=size / _MIB)
        return replace(
            report,
            pruned_for_space=tuple(removed),
            size_bytes=size,
            notes=(*report.notes, *notes),
        )


async def _report(progress: Progress | None, done: float, total: float, message: str) -> None:
    if progress is not None:
        await progress(done, total, message)
