"""Ctrl-C (SIGINT) and SIGTERM stop ``serve``: at once, cleanly, and say so.

Before, one Ctrl-C did nothing to a stdio server for as long as its client kept stdin open:
asyncio's runner cancelled the main task, whose stdin reader waited in a worker thread that
no cancellation reaches; a third Ctrl-C ended it with a ``KeyboardInterrupt`` traceback.
uvicorn, over HTTP, caught the signal itself, then raised it again once it had stopped.

So ``serve`` watches both signals itself (:class:`Interrupt`): the first one says
``ralph-context: stopping (Ctrl-C)`` on stderr and sets :attr:`Interrupt.stop`, which every
transport serves until (stdio cancels its session, whose stdin reader waits on the event
loop, not in a thread; uvicorn is told to exit, its own signal handling left off); the
engine then closes as at any end of serving, and ``ralph-context: stopped (Ctrl-C) in
0.4 s`` follows. A second signal while stopping cancels what is left (:attr:`forced`).
A stop asked for is not a failure: the command exits 0.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio
from anyio.abc import TaskStatus

__all__ = ["SIGNALS", "Interrupt", "interruptible", "until"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}


class Interrupt:
    """What a signal asked of the server: :attr:`stop` once one came, :attr:`forced` at
    the second, with which one it was and when."""

    def __init__(self) -> None:
        self.stop = anyio.Event()
        self.forced = anyio.Event()
        self.name: str | None = None
        self._at = 0.0

    async def watch(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Receive the signals until cancelled (:func:`interruptible` runs it)."""
        with anyio.open_signal_receiver(*SIGNALS) as received:
            task_status.started()
            async for number in received:
                if self.stop.is_set():
                    _say("stopping now")
                    self.forced.set()
                    continue
                self.name = _NAMES.get(signal.Signals(number), signal.Signals(number).name)
                self._at = time.monotonic()
                _say(f"stopping ({self.name})")
                self.stop.set()

    def stopped(self) -> None:
        """Say the server stopped, if a signal stopped it."""
        if self.name is not None:
            _say(f"stopped ({self.name}) in {time.monotonic() - self._at:.1f} s")


async def interruptible(work: Callable[[Interrupt], Awaitable[None]]) -> None:
    """Run ``work`` with an :class:`Interrupt` that SIGINT and SIGTERM feed (signals reach
    the main thread only: elsewhere, one that is never set); a second signal cancels it.

    Raises:
        Exception: What ``work`` raised, as it raised it.
    """
    interrupt = Interrupt()
    if threading.current_thread() is not threading.main_thread():
        await work(interrupt)
        return
    try:
        await until(interrupt.forced, lambda: work(interrupt), watch=interrupt.watch)
    finally:
        interrupt.stopped()


async def until(
    stop: anyio.Event,
    work: Callable[[], Awaitable[None]],
    *,
    watch: Callable[..., Coroutine[Any, Any, None]] | None = None,
) -> None:
    """``work()`` until it returns, or cancelled once ``stop`` is set; ``watch`` (started
    first, with ``task_status``) runs beside it.

    Raises:
        Exception: What ``work`` raised, as it raised it (a task group would wrap it in an
            ``ExceptionGroup``, and the command print a traceback for a one-line refusal).
    """
    failed: list[Exception] = []

    async def body() -> None:
        try:
            await work()
        except Exception as exc:
            failed.append(exc)
        finally:
            group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        if watch is not None:
            await group.start(watch)
        group.start_soon(body)
        await stop.wait()
        group.cancel_scope.cancel()
    if failed:
        raise failed[0]


def _say(text: str) -> None:
    """One plain line on stderr whatever the log level (stdout may be the protocol's)."""
    sys.stderr.write(f"ralph-context: {text}\n")
    sys.stderr.flush()
