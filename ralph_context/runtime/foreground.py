"""Foreground: the requests a loop waits on, which background work gives way to.

Two cores are shared by a loop's requests (a search, storing a result) and the engine's own
background work (lifecycle passes: summaries, archiving thousands of items). Background work
runs in small steps and, before each, waits until no foreground request is in flight, so a
request competes at most with the one step already under way, never with a whole pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio

__all__ = ["Foreground"]


class Foreground:
    """Counts foreground requests in flight; background steps wait for none.

    Args:
        settle: Seconds without a foreground request that count as quiet. A loop stores an
            iteration's result and asks for the next prompt at once: without the pause, a
            pass queued by the store would start its first reads inside the next search.
        on_change: Told ``True`` when a request starts with none in flight, ``False`` when
            the last one ends: work outside this process's event loop gives way too (the
            upkeep child, storage.maintenance.give_way). It must not raise.
    """

    def __init__(
        self, *, settle: float = 0.05, on_change: Callable[[bool], None] | None = None
    ) -> None:
        self.settle = settle
        self.on_change = on_change
        self._active = 0
        self._ended = -float("inf")
        self._idle: anyio.Event | None = None

    @property
    def active(self) -> int:
        """Foreground requests in flight now."""
        return self._active

    @property
    def calm(self) -> bool:
        """True when no foreground request has been in flight for ``settle`` seconds."""
        return not self._active and anyio.current_time() - self._ended >= self.settle

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Mark a foreground request for the length of the ``with`` block."""
        self._active += 1
        if self._active == 1 and self.on_change is not None:
            self.on_change(True)
        try:
            yield
        finally:
            self._active -= 1
            self._ended = anyio.current_time()
            if not self._active and self.on_change is not None:
                self.on_change(False)
            if not self._active and self._idle is not None:
                self._idle.set()
                self._idle = None

    async def quiet(self, *, at_most: float) -> bool:
        """Return once no foreground request has been in flight for ``settle`` seconds
        (True), or after ``at_most`` seconds (False): a steady stream of requests must not
        starve background work for ever."""
        with anyio.move_on_after(at_most):
            while True:
                if self._active:
                    if self._idle is None:
                        self._idle = anyio.Event()
                    await self._idle.wait()
                    continue
                calm = anyio.current_time() - self._ended
                if calm >= self.settle:
                    return True
                await anyio.sleep(self.settle - calm)
        return False
