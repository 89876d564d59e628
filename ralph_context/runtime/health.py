"""An actor's health: what state it is in, how often it restarted, why it last failed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import anyio

__all__ = ["ActorState", "Health", "HealthSnapshot"]


class ActorState(StrEnum):
    """Life of a supervised actor."""

    STARTING = "starting"
    RUNNING = "running"
    RESTARTING = "restarting"
    DOWN = "down"
    STOPPED = "stopped"


@dataclass(frozen=True)
class HealthSnapshot:
    """A point-in-time copy of an actor's health, safe to hand to callers."""

    name: str
    state: ActorState
    restarts: int
    last_error: str | None
    # Serving, but not all of it: what is missing (``read-only``), else None.
    degraded: str | None = None

    @property
    def serving(self) -> bool:
        """True when requests sent now will be handled."""
        return self.state is ActorState.RUNNING

    @property
    def whole(self) -> bool:
        """True when it serves all of its work (running, nothing degraded)."""
        return self.serving and self.degraded is None

    @property
    def shown(self) -> str:
        """The state as reported: ``degraded: <what is missing>`` while it serves only part
        of its work, else the state's name."""
        return f"degraded: {self.degraded}" if self.serving and self.degraded else self.state.value


class Health:
    """Mutable health record that tests and the engine can wait on.

    Each change sets the current event and swaps in a fresh one, so any number of waiters can
    watch any number of transitions without polling.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = ActorState.STARTING
        self.restarts = 0
        self.last_error: str | None = None
        self.degraded: str | None = None
        self._changed: anyio.Event | None = None

    def set(self, state: ActorState, error: BaseException | None = None) -> None:
        """Record a transition and wake everyone waiting for one."""
        self.state = state
        if error is not None:
            self.last_error = f"{type(error).__name__}: {error}"
        self._wake()

    def degrade(self, what: str, error: BaseException) -> None:
        """Note that the actor serves only part of its work (``what`` is missing, e.g.
        ``read-only``), because of ``error``; its state does not change: it still serves."""
        self.degraded = what
        self.last_error = f"{type(error).__name__}: {error}"
        self._wake()

    def restore(self) -> None:
        """Note that the actor serves all of its work again (``last_error`` stays)."""
        self.degraded = None
        self._wake()

    async def wait_for(self, *states: ActorState) -> ActorState:
        """Return once the actor is in one of ``states`` (immediately if it already is)."""
        await self.wait_until(lambda health: health.state in states)
        return self.state

    async def wait_until(self, check: Callable[[Health], bool]) -> None:
        """Return once ``check(self)`` is true after a change (immediately if it is now)."""
        while not check(self):
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()

    def snapshot(self) -> HealthSnapshot:
        """A frozen copy of the current record."""
        return HealthSnapshot(self.name, self.state, self.restarts, self.last_error, self.degraded)

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None
