"""A synchronous face over an async context source, on an event loop of its own.

Ralph calls ``ContextManager.get_prompt()`` synchronously from inside its running asyncio
loop, so the hook cannot ``await`` there. The bridge runs the source on a private loop in a
worker thread (an anyio blocking portal): ``search`` blocks Ralph's thread for the length of
one retrieval (tens of ms), ``arecord`` is awaited from Ralph's loop without blocking it. The
engine's actors live on the bridge's loop, so they keep working between iterations.

A session that breaks (server killed, connection reset) is dropped and opened again on a
later call, at most every ``retry_after`` seconds, so a dead server costs one failed attempt
per interval, not a hang per iteration.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from typing import TypeVar

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from ralph_context._logging import get_logger
from ralph_context.errors import RalphContextError
from ralph_context.models import ContextType
from ralph_context_ralph.sources import (
    ContextSession,
    ContextSource,
    IterationRecord,
    Served,
    SourceError,
)

__all__ = ["Bridge"]

log = get_logger("ralph_context_ralph.bridge")

T = TypeVar("T")


async def _bounded(seconds: float, call: Callable[[], Awaitable[T]]) -> T:
    with anyio.fail_after(seconds):
        return await call()


class Bridge:
    """Runs ``source`` on a private event loop; every failure surfaces as
    :class:`SourceError`, never as anything the loop would have to know about."""

    def __init__(self, source: ContextSource, *, timeout: float, retry_after: float = 5.0):
        self.source = source
        self.timeout = timeout
        self.retry_after = retry_after
        self.last_error: str | None = None
        self._portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._session_cm: AbstractContextManager[ContextSession] | None = None
        self._session: ContextSession | None = None
        self._retry_at = 0.0

    @property
    def connected(self) -> bool:
        return self._session is not None

    @property
    def portal(self) -> BlockingPortal:
        """The private loop, for tools that must act on the engine where it runs (health
        checks, fault injection in tests)."""
        return self._portal

    def open(self) -> bool:
        """Open the session now (the engine loads its model here); False if it failed."""
        try:
            self._ensure()
        except SourceError:
            return False
        return True

    def search(self, query: str, *, max_tokens: int, prefer_types: Sequence[ContextType]) -> Served:
        """Blocking retrieval, bounded by ``timeout``.

        Raises:
            SourceError: No session, or the call failed or timed out.
        """
        session = self._ensure()

        async def call() -> Served:
            return await session.search(query, max_tokens=max_tokens, prefer_types=prefer_types)

        try:
            return self._portal.call(_bounded, self.timeout, call)
        except Exception as exc:
            raise self._failed(exc) from exc

    async def arecord(self, record: IterationRecord) -> None:
        """Store an iteration from the caller's asyncio loop without blocking that loop.

        Raises:
            SourceError: No session, or the call failed or timed out.
        """
        session = self._ensure()

        async def call() -> None:
            await session.record(record)

        future = self._portal.start_task_soon(_bounded, self.timeout, call)
        try:
            await asyncio.wrap_future(future)
        except Exception as exc:
            raise self._failed(exc) from exc

    def close(self) -> None:
        """Close the session (stopping an in-process engine) and the private loop."""
        self._drop()
        self._portal_cm.__exit__(None, None, None)

    # --- internals --------------------------------------------------------------------------

    def _ensure(self) -> ContextSession:
        if self._session is not None:
            return self._session
        if time.monotonic() < self._retry_at:
            raise SourceError(f"{self.source.name} unavailable: {self.last_error}")
        session_cm = self._portal.wrap_async_context_manager(self.source.session())
        try:
            session = session_cm.__enter__()
        except Exception as exc:
            self._retry_at = time.monotonic() + self.retry_after
            self.last_error = _describe(exc)
            log.warning(
                "context_source_unavailable", source=self.source.name, error=self.last_error
            )
            raise SourceError(f"{self.source.name} unavailable: {self.last_error}") from exc
        self._session_cm, self._session = session_cm, session
        self.last_error = None
        return session

    def _failed(self, exc: BaseException) -> SourceError:
        """Note a failed call (dropping a broken session); returns the error to raise."""
        self.last_error = _describe(exc)
        log.warning("context_source_failed", source=self.source.name, error=self.last_error)
        if not isinstance(exc, TimeoutError | SourceError | RalphContextError):
            # A broken connection: open a fresh session later. A slow answer, a tool error or
            # an engine that reports a part down keeps the session: the engine degrades by
            # itself, and restarting it would lose what its healthy parts still serve.
            self._drop()
            self._retry_at = time.monotonic() + self.retry_after
        return SourceError(self.last_error)

    def _drop(self) -> None:
        session_cm, self._session_cm, self._session = self._session_cm, None, None
        if session_cm is None:
            return
        try:
            session_cm.__exit__(None, None, None)
        except Exception as exc:  # a dead server's transport often fails to close cleanly
            log.info("context_session_closed_with_error", error=_describe(exc))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
