"""An actor's health: what state it is in, how often it restarted, why it last failed."""

from __future__ import annotations

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

    @property
    def serving(self) -> bool:
        """True when requests sent now will be handled."""
        return self.state is ActorState.RUNNING


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
        self._changed: anyio.Event | None = None

    def set(self, state: ActorState, error: BaseException | None = None) -> None:
        """Record a transition and wake everyone waiting for one."""
        self.state = state
        if error is not None:
            self.last_error = f"{type(error).__name__}: {error}"
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait_for(self, *states: ActorState) -> ActorState:
        """Return once the actor is in one of ``states`` (immediately if it already is)."""
        while self.state not in states:
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()
        return self.state

    def snapshot(self) -> HealthSnapshot:
        """A frozen copy of the current record."""
        return HealthSnapshot(self.name, self.state, self.restarts, self.last_error)
