"""Attach ralph-context to a running Ralph orchestrator, without patching Ralph.

Ralph 1.2 has no plugin API, so the hook wraps two instance attributes and restores them on
``detach()``:

- ``orchestrator.context_manager.get_prompt`` — called at the start of each iteration. The
  wrapped version appends ``## Relevant Context from Previous Iterations`` with the items the
  engine finds for the task and the latest outcome that pass the loop's push gate
  (``retrieval.loop_push_gate``; none for the default model), within
  ``retrieval.max_context_tokens``, checked against the code first (``codebase``: an item
  about files deleted since is left out, one about files changed since is marked and placed
  last).
- ``aexecute`` of every adapter (``orchestrator.adapters`` and ``current_adapter``) — after
  each call, the result is stored: the iteration result (its error also becomes an ``error``
  item) and the output as an ``output`` item.

A store has one writing process. If another process already writes the engine's store and
serves it over HTTP (``ralph-context serve --transport http``), the hook talks to that server
instead of opening the store.

The ladder, top to bottom: what the source serves (semantic, or text when the model or vector
index is out) → the context this task was last served, from the on-disk cache → no context.
Nothing the hook does can raise into Ralph's loop.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph_context import Engine, Settings, namespaces
from ralph_context._logging import get_logger
from ralph_context.codebase import Repository, for_push
from ralph_context.config.owner_token import client_token
from ralph_context.models import IterationResult, Tier
from ralph_context.rendering import context_section
from ralph_context.retrieval.gate import pushed
from ralph_context.storage import writer_lock
from ralph_context.validation import check_context_types
from ralph_context_ralph.bridge import Bridge
from ralph_context_ralph.cache import TaskCache, task_key
from ralph_context_ralph.sources import (
    ContextSource,
    EngineSource,
    IterationRecord,
    Served,
    ServerSource,
    SourceError,
)

__all__ = ["Handle", "TierRecord", "attach"]

log = get_logger("ralph_context_ralph")

# The query is the task's opening plus what just happened. Short on purpose: embedding
# cost grows with length (here 13 ms for 160 characters, 23 ms for 320, 51 ms for 500 on a
# loaded box), and the opening of a task and the head of an error carry what it is about.
TASK_CHARS = 120
RECENT_CHARS = 100
SUMMARY_CHARS = 1_000


@dataclass(frozen=True)
class TierRecord:
    """Which rung served one iteration's context."""

    iteration: int
    tier: Tier
    items: int
    reason: str | None = None


@dataclass
class _Wrapped:
    target: Any
    attribute: str
    had_own: bool
    previous: Any


@dataclass
class Handle:
    """What :func:`attach` returns: the tiers served so far, and ``detach()``."""

    orchestrator: Any
    bridge: Bridge
    settings: Settings
    cache: TaskCache
    task: str | None
    # The loop's git work tree (the settings' project root), what items are checked against.
    code: Repository | None = None
    tiers: list[TierRecord] = field(default_factory=list)
    _wrapped: list[_Wrapped] = field(default_factory=list)
    _last_output: str = ""
    _last_error: str = ""
    _last_prompt: str = ""

    @property
    def current_tier(self) -> Tier | None:
        """The tier of the latest retrieval (``None`` before the first)."""
        return self.tiers[-1].tier if self.tiers else None

    def detach(self) -> None:
        """Restore Ralph's own methods and close the source (stopping an in-process engine).
        Safe to call twice."""
        for wrapped in reversed(self._wrapped):
            if wrapped.had_own:
                setattr(wrapped.target, wrapped.attribute, wrapped.previous)
            else:
                delattr(wrapped.target, wrapped.attribute)
        self._wrapped.clear()
        self.bridge.close()

    # --- retrieval ---------------------------------------------------------------------------

    def prompt_with_context(self, prompt: str) -> str:
        """``prompt`` plus the context section (unchanged if there is nothing to add)."""
        if not prompt:
            return prompt
        served = self._serve(prompt)
        judged = for_push(served.items, self.code)
        section = context_section(judged.items, judged.marks)
        return f"{prompt}\n\n{section}" if section else prompt

    def _serve(self, prompt: str) -> Served:
        self._last_prompt = prompt
        iteration = self._iteration()
        key = task_key(self.task or _task_of(self.orchestrator, prompt))
        retrieval = self.settings.retrieval
        try:
            served = self.bridge.search(
                self._query(prompt),
                max_tokens=retrieval.max_context_tokens,
                prefer_types=check_context_types(retrieval.context_types) or (),
            )
        except SourceError as exc:
            reason: str | None = str(exc)
        else:
            if served.tier is not Tier.NONE:
                # Unasked: only what passes the loop's push gate (none by default).
                kept = pushed(served.items, self.settings.push_gate("loop"))
                served = Served(tuple(kept), served.tier, served.reason)
                if served.items:
                    self.cache.put(key, served.items, served.tier, iteration)
                return self._note(iteration, served)
            reason = served.reason
        cached = self.cache.get(key)
        if cached is not None:
            return self._note(iteration, Served(cached.items, Tier.CACHE, reason))
        return self._note(iteration, Served((), Tier.NONE, reason))

    def _note(self, iteration: int, served: Served) -> Served:
        self.tiers.append(TierRecord(iteration, served.tier, len(served.items), served.reason))
        log.info(
            "context_served",
            iteration=iteration,
            tier=served.tier.value,
            items=len(served.items),
            reason=served.reason,
        )
        return served

    def _query(self, prompt: str) -> str:
        recent = self._last_error or self._last_output
        return f"{_squash(prompt)[:TASK_CHARS]}\n{_squash(recent)[:RECENT_CHARS]}".strip()

    # --- recording ---------------------------------------------------------------------------

    async def record(self, adapter_name: str, response: Any, duration_s: float) -> None:
        """Store what an adapter call did; failures are logged, never raised."""
        iteration = self._iteration()
        output = str(getattr(response, "output", "") or "")
        success = bool(getattr(response, "success", False))
        error = None if success else str(getattr(response, "error", "") or "") or None
        self._last_output, self._last_error = output, error or ""
        summary = _squash(output or error or "")[:SUMMARY_CHARS] or "(no output)"
        result = IterationResult(
            iteration=iteration,
            success=success,
            summary=summary,
            duration_ms=int(duration_s * 1000),
            tokens_used=max(0, int(getattr(response, "tokens_used", 0) or 0)),
            cost=max(0.0, float(getattr(response, "cost", 0.0) or 0.0)),
            error=error,
        )
        record = IterationRecord(
            result,
            output if output.strip() else None,
            {"iteration": iteration, "adapter": adapter_name},
            # The next prompt is most likely this one again (Ralph's prompt file).
            next_query=self._query(self._last_prompt) if self._last_prompt else None,
        )
        try:
            await self.bridge.arecord(record)
        except Exception as exc:  # a dead source, or invalid text from an adapter
            log.warning("iteration_not_stored", iteration=iteration, error=repr(exc))

    def _iteration(self) -> int:
        metrics = getattr(self.orchestrator, "metrics", None)
        return max(0, int(getattr(metrics, "iterations", 0) or 0))

    # --- wiring ------------------------------------------------------------------------------

    def _wrap(self, target: Any, attribute: str, replacement: Any) -> None:
        had_own = attribute in vars(target)
        previous = vars(target).get(attribute)
        self._wrapped.append(_Wrapped(target, attribute, had_own, previous))
        setattr(target, attribute, replacement)


def attach(
    orchestrator: Any,
    engine: Engine | ContextSource,
    *,
    settings: Settings | None = None,
    task: str | None = None,
    cache_dir: Path | None = None,
    timeout: float = 10.0,
) -> Handle:
    """Give ``orchestrator``'s iterations memory from ``engine``.

    Args:
        orchestrator: A ``ralph_orchestrator.RalphOrchestrator`` (1.2.x).
        engine: An :class:`Engine` that is not started yet (the hook starts it on its own
            event loop and stops it on ``detach()``), or a source such as
            :class:`~ralph_context_ralph.sources.ServerSource` (client mode).
        settings: Budget, preferred types and cache location; default: the engine's, else
            ``ralph.yml`` / ``ralph.yaml`` lookup.
        task: Key for the cached-context rung; default: the orchestrator's prompt file.
        cache_dir: Where the cached-context rung lives; default ``<store>/../context-cache``.
        timeout: Seconds a retrieval or a store may take before the ladder steps down.

    Raises:
        ValueError: ``engine`` is already running (the hook must own its loop).
    """
    if isinstance(engine, Engine):
        if engine.running:
            raise ValueError(
                "attach() starts the engine on its own event loop; pass an Engine that is not "
                "started yet (not one inside `async with`)"
            )
        settings = settings or engine.settings
        source: ContextSource = _engine_or_its_writer(engine)
    else:
        settings = settings or Settings.load(None)
        source = engine
    cache = TaskCache(cache_dir or _cache_dir(settings))
    bridge = Bridge(source, timeout=timeout)
    handle = Handle(
        orchestrator, bridge, settings, cache, task, Repository.find(settings.project_root)
    )
    if not bridge.open():
        log.warning("context_source_unavailable_at_start", error=bridge.last_error)
    _wire(handle)
    return handle


def _cache_dir(settings: Settings) -> Path:
    """``<store>/../context-cache``, a folder of its own per namespace."""
    folder = settings.local_folder() / "context-cache"
    namespace = settings.storage.namespace
    return folder if namespace == namespaces.DEFAULT else folder / namespace


def _engine_or_its_writer(engine: Engine) -> ContextSource:
    """``engine`` itself, unless another process writes its store and serves it over HTTP:
    then that server (one writer per store; see ``ralph_context.storage.writer_lock``).
    A writer with no endpoint is left to the engine's start, which refuses with a message
    naming it; the ladder then serves cached context."""
    if engine.settings.is_ephemeral:
        return EngineSource(engine)
    holder = writer_lock.other_writer(engine.settings.store_root())
    if holder is None or holder.endpoint is None:
        return EngineSource(engine)
    endpoint = namespaces.endpoint(holder.endpoint, engine.settings.storage.namespace)
    log.info("context_via_store_writer", pid=holder.pid, endpoint=endpoint)
    return ServerSource(
        endpoint,
        max_content_bytes=engine.settings.storage.max_content_bytes,
        token=client_token(engine.settings, endpoint),
    )


def _wire(handle: Handle) -> None:
    orchestrator = handle.orchestrator
    manager = orchestrator.context_manager
    get_prompt = manager.get_prompt

    def get_prompt_with_context() -> str:
        prompt: str = get_prompt()
        try:
            return handle.prompt_with_context(prompt)
        except Exception as exc:  # the loop must get its prompt whatever happens here
            log.warning("context_injection_failed", error=repr(exc))
            return prompt

    handle._wrap(manager, "get_prompt", get_prompt_with_context)
    adapters = list(getattr(orchestrator, "adapters", {}).values())
    current = getattr(orchestrator, "current_adapter", None)
    if current is not None and all(current is not a for a in adapters):
        adapters.append(current)
    for adapter in adapters:
        handle._wrap(adapter, "aexecute", _recording(handle, adapter))


def _recording(handle: Handle, adapter: Any) -> Any:
    aexecute = adapter.aexecute
    name = str(getattr(adapter, "name", type(adapter).__name__))

    async def aexecute_and_record(prompt: str, **kwargs: Any) -> Any:
        started = time.perf_counter()
        response = await aexecute(prompt, **kwargs)
        await handle.record(name, response, time.perf_counter() - started)
        return response

    return aexecute_and_record


def _task_of(orchestrator: Any, prompt: str) -> str:
    prompt_file = getattr(orchestrator, "prompt_file", None)
    if prompt_file is not None:
        return str(Path(prompt_file).resolve())
    return prompt


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
