"""Actor: a task that owns a bounded inbox and answers one request type.

Callers use :meth:`Actor.call`; the reply comes back on a one-shot stream carried in the
envelope. Deliberate failures (any ``RalphContextError``) travel back as values and re-raise
in the caller; anything else is a bug or a lost resource and crashes the actor, which its
``Supervisor`` restarts. A caller never sees the crash itself, only ``ActorUnavailable``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ralph_context.errors import ActorUnavailable, RalphContextError
from ralph_context.runtime.health import ActorState, Health

__all__ = ["Actor", "Envelope", "NotConfigured", "PermanentFailure"]

RequestT = TypeVar("RequestT")
ReplyT = TypeVar("ReplyT")

_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError)


class PermanentFailure(Exception):
    """Raised by an actor whose resource cannot come back by retrying (e.g. no model files).

    The supervisor marks such an actor ``down`` at once instead of burning its restarts.
    """


class NotConfigured(PermanentFailure):
    """Raised by :meth:`Actor.setup` when the actor serves an optional feature nobody
    configured (no language model server): it is ``down`` by design, not broken.

    The actor marks itself down and sets ``configured`` to False instead of crashing, so
    the supervisor logs no crash and health reports can leave it out of the status.
    """


@dataclass(frozen=True)
class _Value(Generic[ReplyT]):
    value: ReplyT


@dataclass(frozen=True)
class _Refusal:
    error: RalphContextError


@dataclass
class Envelope(Generic[RequestT, ReplyT]):
    """A request plus the one-shot stream its answer goes back on."""

    request: RequestT
    _reply: MemoryObjectSendStream[_Value[ReplyT] | _Refusal]

    def resolve(self, value: ReplyT) -> None:
        """Answer the caller; a caller that gave up (timeout) is silently skipped."""
        self._deliver(_Value(value))

    def refuse(self, error: RalphContextError) -> None:
        """Send a deliberate failure back; it re-raises in the caller."""
        self._deliver(_Refusal(error))

    def abandon(self) -> None:
        """Close without an answer: the caller gets ``ActorUnavailable``."""
        self._reply.close()

    def _deliver(self, outcome: _Value[ReplyT] | _Refusal) -> None:
        try:
            self._reply.send_nowait(outcome)
        except (*_GONE, anyio.WouldBlock):
            pass
        finally:
            self._reply.close()


class Actor(ABC, Generic[RequestT, ReplyT]):
    """Base class: subclasses implement :meth:`handle` (or :meth:`handle_batch`).

    Args:
        name: Shown in health reports and logs.
        inbox_size: Bound on queued requests; a full inbox makes callers wait (backpressure).
        max_batch: How many queued requests one :meth:`handle_batch` call may take at once.
        max_in_flight: Requests answered at once, each in its own task. 1 (the default)
            answers in order, which actors that own a single-writer resource rely on; an
            actor whose requests only wait on the network (inference) takes more, so a long
            request does not hold up a short one. Batching applies only at 1.
    """

    def __init__(
        self, name: str, *, inbox_size: int = 64, max_batch: int = 1, max_in_flight: int = 1
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        if max_in_flight > 1 and max_batch > 1:
            raise ValueError("an actor batches (max_batch) or answers concurrently, not both")
        self.name = name
        self.max_batch = max_batch
        self.max_in_flight = max_in_flight
        self.health = Health(name)
        # False once setup() raised NotConfigured: down by choice, not by failure.
        self.configured = True
        self._inbox_send: MemoryObjectSendStream[Envelope[RequestT, ReplyT]]
        self._inbox_recv: MemoryObjectReceiveStream[Envelope[RequestT, ReplyT]]
        self._inbox_send, self._inbox_recv = anyio.create_memory_object_stream[
            Envelope[RequestT, ReplyT]
        ](inbox_size)

    async def setup(self) -> None:
        """Acquire resources before serving; raising here counts as a crash."""

    async def teardown(self) -> None:
        """Release resources after serving or crashing; runs shielded from cancellation."""

    @abstractmethod
    async def handle(self, request: RequestT) -> ReplyT:
        """Answer one request. Raise ``RalphContextError`` to refuse it."""

    async def handle_batch(self, batch: Sequence[Envelope[RequestT, ReplyT]]) -> None:
        """Answer queued requests; override to coalesce work (e.g. one embedding batch)."""
        for envelope in batch:
            try:
                reply = await self.handle(envelope.request)
            except RalphContextError as error:
                envelope.refuse(error)
            else:
                envelope.resolve(reply)

    @property
    def queued(self) -> int:
        """Requests waiting in the inbox (not yet taken by a batch). Safe to read from a
        worker thread the actor is waiting on: a count, possibly a moment old."""
        return self._inbox_recv.statistics().current_buffer_used

    def take_queued(self) -> Envelope[RequestT, ReplyT] | None:
        """The next queued request, if one is waiting (never waits): for serving some
        requests beside long work (``runtime.beside``)."""
        try:
            return self._inbox_recv.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            return None

    def unavailable(self) -> ActorUnavailable:
        """Why this actor cannot answer now: its state, and for a down actor the error
        that brought it down (``storage is down`` alone left a user with nothing to fix)."""
        state = self.health.state
        error = self.health.last_error
        if state is ActorState.DOWN and error:
            return ActorUnavailable(f"{self.name} is down: {error}")
        return ActorUnavailable(f"{self.name} is {state.value}")

    async def call(self, request: RequestT, *, timeout: float) -> ReplyT:  # noqa: ASYNC109
        """Send a request and wait for its answer.

        One deadline bounds both the wait for inbox space and the wait for the answer.

        Raises:
            RalphContextError: The actor refused the request (re-raised as sent).
            ActorUnavailable: The actor is down, stopped, crashed on this request, or did not
                answer within ``timeout`` seconds.
        """
        if self.health.state in (ActorState.DOWN, ActorState.STOPPED):
            raise self.unavailable()
        # buffer=1: the actor answers with send_nowait and must never block on a slow caller.
        reply_send, reply_recv = anyio.create_memory_object_stream[_Value[ReplyT] | _Refusal](1)
        try:
            with reply_recv, anyio.fail_after(timeout):
                await self._inbox_send.send(Envelope(request, reply_send))
                outcome = await reply_recv.receive()
        except TimeoutError as exc:
            raise ActorUnavailable(f"{self.name} did not answer within {timeout:g}s") from exc
        except (anyio.EndOfStream, *_GONE) as exc:
            raise ActorUnavailable(
                f"{self.name} could not serve the request ({self.health.state.value})"
            ) from exc
        finally:
            # Also on cancellation: the actor may never see this envelope. Closing twice is
            # harmless, and the actor's own close after answering is then a no-op.
            reply_send.close()
        if isinstance(outcome, _Refusal):
            raise outcome.error
        return outcome.value

    def tell(self, request: RequestT) -> bool:
        """Queue a request without waiting for (or receiving) its answer.

        For work the caller must not wait on, such as the lifecycle pass after each stored
        iteration. Returns False, dropping the request, when the actor is not serving or its
        inbox is full: a later request will do the same work.
        """
        if self.health.state in (ActorState.DOWN, ActorState.STOPPED):
            return False
        reply_send, reply_recv = anyio.create_memory_object_stream[_Value[ReplyT] | _Refusal](1)
        reply_recv.close()
        try:
            self._inbox_send.send_nowait(Envelope(request, reply_send))
        except (anyio.WouldBlock, *_GONE):
            reply_send.close()
            return False
        return True

    # --- used by the Supervisor -------------------------------------------------------------

    async def _serve(self) -> None:
        """One incarnation: set up, answer until the inbox closes, tear down."""
        try:
            try:
                await self.setup()
            except NotConfigured as exc:
                self.configured = False
                self.health.set(ActorState.DOWN, exc)
                await self._reject_until_closed()
                return
            self.health.set(ActorState.RUNNING)
            if self.max_in_flight == 1:
                await self._serve_in_order()
            else:
                await self._serve_concurrently()
        finally:
            with anyio.CancelScope(shield=True):
                await self.teardown()

    async def _serve_in_order(self) -> None:
        async for first in self._inbox_recv:
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._inbox_recv.receive_nowait())
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
            await self._answer(batch)

    async def _serve_concurrently(self) -> None:
        """Each request in its own task. The next request is taken from the inbox only when
        one of ``max_in_flight`` slots is free, so a flood of callers still meets the
        inbox's backpressure.

        A crash (anything but a refusal) ends the incarnation as it does in order, with the
        original exception, so the supervisor tells a ``PermanentFailure`` from a bug and
        logs the real cause. The other requests in flight are cancelled with it (their
        callers get ``ActorUnavailable`` at once): the crash may have broken the resource
        they share. Requests still queued wait for the restart.
        """
        slots = anyio.Semaphore(self.max_in_flight)
        crashed: list[Exception] = []

        async def answer(envelope: Envelope[RequestT, ReplyT], scope: anyio.CancelScope) -> None:
            try:
                await self._answer([envelope])
            except Exception as exc:
                if not crashed:
                    crashed.append(exc)
                scope.cancel()
            finally:
                slots.release()

        async with anyio.create_task_group() as tg:
            while True:
                await slots.acquire()
                try:
                    envelope = await self._inbox_recv.receive()
                except anyio.EndOfStream:
                    break  # inbox closed: the task group waits for the answers in flight
                tg.start_soon(answer, envelope, tg.cancel_scope)
        if crashed:
            raise crashed[0]

    async def _answer(self, batch: list[Envelope[RequestT, ReplyT]]) -> None:
        try:
            await self.handle_batch(batch)
        finally:
            # Whatever a crash or a cancellation left unanswered fails fast instead of
            # timing out; after an answer this is a no-op.
            for envelope in batch:
                envelope.abandon()

    async def _reject_until_closed(self) -> None:
        """While down: fail every queued and future request at once."""
        async for envelope in self._inbox_recv:
            envelope.abandon()

    def _close_inbox(self) -> None:
        self._inbox_send.close()

    def _close_receiver(self) -> None:
        self._inbox_recv.close()

    def _abandon_queued(self) -> None:
        """Fail whatever is still queued (shutdown past its grace), so no caller waits on."""
        while True:
            try:
                self._inbox_recv.receive_nowait().abandon()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                return
