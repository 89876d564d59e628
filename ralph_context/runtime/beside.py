"""Serving beside long work: while an actor's lane runs something long (a compaction, a
batch of embeddings), the requests that must not wait for it are taken from the inbox and
served at once, and the others are kept, in their order, for after it.

A memory stream cannot be waited on together with the work's end (there is no select),
and a receive that waits must be cancelled once the work ends; so the work runs in a task
of its own and the inbox is looked at without waiting every ``poll`` seconds until the work
ends (a request waits at most that long for its turn).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import anyio

from ralph_context.runtime.actor import Envelope

__all__ = ["serve_beside"]

T = TypeVar("T")
RequestT = TypeVar("RequestT")
ReplyT = TypeVar("ReplyT")


async def serve_beside(
    work: Callable[[], Awaitable[T]],
    *,
    take: Callable[[], Envelope[RequestT, ReplyT] | None],
    at_once: Callable[[Envelope[RequestT, ReplyT]], bool],
    serve: Callable[[Sequence[Envelope[RequestT, ReplyT]]], Awaitable[None]],
    keep: Callable[[Envelope[RequestT, ReplyT]], None],
    poll: float,
) -> T:
    """Run ``work()``; meanwhile ``take()`` queued requests: those ``at_once`` are handed to
    ``serve`` now (beside the work), the others to ``keep``, for the caller to serve after
    it. Returns what ``work()`` returned; raises what it or ``serve`` raised (in a group).

    A request served at once and left unanswered (``serve`` crashed, or a cancellation)
    is abandoned, so its caller fails fast; the kept ones are the caller's to answer.
    """
    done = anyio.Event()
    result: list[T] = []

    async def run() -> None:
        try:
            result.append(await work())
        finally:
            done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        while not done.is_set():
            now: list[Envelope[RequestT, ReplyT]] = []
            while (envelope := take()) is not None:
                if at_once(envelope):
                    now.append(envelope)
                else:
                    keep(envelope)
            if not now:
                with anyio.move_on_after(poll):
                    await done.wait()
                continue
            try:
                await serve(now)
            finally:
                for envelope in now:
                    envelope.abandon()  # a no-op once answered
    return result[0]
