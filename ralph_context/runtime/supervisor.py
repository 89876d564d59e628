"""Supervisor: runs actors in one task group and restarts the ones that crash.

Restarts back off exponentially with jitter (tenacity). An actor that keeps crashing within
``healthy_after`` seconds of starting gives up after ``max_restarts`` and is marked ``down``;
it then fails requests fast while its siblings keep serving. No actor exception ever reaches
the task group.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine, Mapping
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, wait_exponential_jitter

from ralph_context._logging import get_logger
from ralph_context.runtime.actor import Actor, PermanentFailure
from ralph_context.runtime.health import ActorState, HealthSnapshot

__all__ = ["Supervisor"]

log = get_logger("ralph_context.runtime")

_SETTLED = (ActorState.RUNNING, ActorState.DOWN, ActorState.STOPPED)
_FINISHED = (ActorState.DOWN, ActorState.STOPPED)


def _restartable(exc: BaseException) -> bool:
    # Cancellation is a BaseException and must propagate, never count as a crash.
    return isinstance(exc, Exception) and not isinstance(exc, PermanentFailure)


class Supervisor:
    """Owns actors' lifetimes: ``async with Supervisor() as sup: await sup.start(actor)``.

    Args:
        max_restarts: Consecutive quick crashes tolerated before an actor is marked down.
        backoff_initial: First restart delay in seconds (doubles, with jitter).
        backoff_max: Cap on the restart delay.
        healthy_after: A run this long (seconds) resets the crash count.
        shutdown_grace: Seconds actors get to drain their inboxes before being cancelled.
    """

    def __init__(
        self,
        *,
        max_restarts: int = 5,
        backoff_initial: float = 0.05,
        backoff_max: float = 2.0,
        healthy_after: float = 30.0,
        shutdown_grace: float = 5.0,
    ) -> None:
        self.max_restarts = max_restarts
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.healthy_after = healthy_after
        self.shutdown_grace = shutdown_grace
        self._actors: dict[str, Actor[Any, Any]] = {}
        self._tg: TaskGroup | None = None

    async def __aenter__(self) -> Supervisor:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        try:
            if exc is None:
                await self._drain()
        finally:
            # Also when a caller's deadline cancels the drain: a task group left entered
            # corrupts the caller's cancel scopes (a RuntimeError instead of its timeout).
            self._tg.cancel_scope.cancel()
            for actor in self._actors.values():
                actor._close_inbox()
            # The body's exception belongs to the caller: handing it to the task group would
            # wrap it in an ExceptionGroup. Supervised actors never raise: the group exits clean.
            await self._tg.__aexit__(None, None, None)
        return None

    @property
    def actors(self) -> Mapping[str, Actor[Any, Any]]:
        """Supervised actors by name."""
        return self._actors

    def health(self) -> dict[str, HealthSnapshot]:
        """Current health of every supervised actor."""
        return {name: actor.health.snapshot() for name, actor in self._actors.items()}

    async def start(
        self, actor: Actor[Any, Any], *, wait: bool = True, settle_within: float | None = None
    ) -> HealthSnapshot:
        """Supervise ``actor``; with ``wait``, return once it serves or is down, or once
        ``settle_within`` seconds have passed (it then keeps starting in the background).

        Raises:
            ValueError: An actor with the same name is already supervised.
            RuntimeError: The supervisor is not entered.
        """
        if self._tg is None:
            raise RuntimeError("Supervisor.start() needs `async with Supervisor()` first")
        if actor.name in self._actors:
            raise ValueError(f"an actor named {actor.name!r} is already supervised")
        self._actors[actor.name] = actor
        self._tg.start_soon(self._supervise, actor, name=f"actor:{actor.name}")
        if wait:
            with anyio.move_on_after(settle_within if settle_within is not None else math.inf):
                await actor.health.wait_for(*_SETTLED)
        return actor.health.snapshot()

    def background(self, work: Callable[[], Coroutine[Any, Any, None]], *, name: str) -> None:
        """Run ``work`` beside the actors until it ends or the supervisor exits (then it is
        cancelled). ``work`` must not raise: it would end the supervisor with it.

        Raises:
            RuntimeError: The supervisor is not entered.
        """
        if self._tg is None:
            raise RuntimeError("Supervisor.background() needs `async with Supervisor()` first")
        self._tg.start_soon(work, name=name)

    async def stop_actor(self, name: str) -> HealthSnapshot:
        """Stop one actor (its queued requests are still answered); siblings keep serving.

        Raises:
            KeyError: No actor has that name.
        """
        actor = self._actors[name]
        actor._close_inbox()
        await actor.health.wait_for(*_FINISHED)
        return actor.health.snapshot()

    async def _supervise(self, actor: Actor[Any, Any]) -> None:
        health = actor.health
        quick_crashes = 0

        def exhausted(_: RetryCallState) -> bool:
            return quick_crashes >= self.max_restarts

        # Cancellation passes through tenacity's attempt manager as a BaseException and is
        # re-raised unchanged, because `_restartable` refuses to retry it.
        retrying = AsyncRetrying(
            retry=retry_if_exception(_restartable),
            stop=exhausted,
            # Jitter in proportion to the first delay: the default (up to 1 s) would swamp it.
            wait=wait_exponential_jitter(
                multiplier=self.backoff_initial,
                max=self.backoff_max,
                jitter=self.backoff_initial,
            ),
            sleep=anyio.sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    if attempt.retry_state.attempt_number > 1:
                        health.restarts += 1
                        log.info("actor_restarting", actor=actor.name, restarts=health.restarts)
                    started = anyio.current_time()
                    try:
                        await actor._serve()
                    except Exception as exc:
                        if anyio.current_time() - started >= self.healthy_after:
                            quick_crashes = 0
                        quick_crashes += 1
                        health.set(ActorState.RESTARTING, exc)
                        log.warning(
                            "actor_crashed",
                            actor=actor.name,
                            error=health.last_error,
                            crashes=quick_crashes,
                        )
                        raise
        except Exception as exc:
            health.set(ActorState.DOWN, exc)
            log.error("actor_down", actor=actor.name, error=health.last_error)
            await actor._reject_until_closed()
            return
        finally:
            actor._abandon_queued()
            actor._close_receiver()
        health.set(ActorState.STOPPED)

    async def _drain(self) -> None:
        """Close every inbox, let queued requests finish, then give up after the grace."""
        for actor in self._actors.values():
            actor._close_inbox()
        with anyio.move_on_after(self.shutdown_grace):
            for actor in self._actors.values():
                await actor.health.wait_for(*_FINISHED)
