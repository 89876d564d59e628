"""The runtime's promises: crashes restart, permanent failures isolate, shutdown drains."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import anyio.lowlevel
import pytest

from ralph_context.errors import ActorUnavailable, InvalidInput
from ralph_context.runtime import Actor, ActorState, Envelope, PermanentFailure, Supervisor

pytestmark = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])


def fast_supervisor(*, max_restarts: int = 5, shutdown_grace: float = 5.0) -> Supervisor:
    """Restart delays in milliseconds so tests do not wait on backoff."""
    return Supervisor(
        max_restarts=max_restarts,
        backoff_initial=0.001,
        backoff_max=0.01,
        shutdown_grace=shutdown_grace,
    )


class Echo(Actor[str, str]):
    """Echoes; 'crash' crashes it; 'refuse' is a deliberate, value-level failure."""

    def __init__(self, name: str = "echo", *, crash_on_setup: int = 0) -> None:
        super().__init__(name, inbox_size=8)
        self.setups = 0
        self.teardowns = 0
        self.crash_on_setup = crash_on_setup

    async def setup(self) -> None:
        self.setups += 1
        if self.setups <= self.crash_on_setup:
            raise OSError(f"resource missing (setup {self.setups})")

    async def teardown(self) -> None:
        self.teardowns += 1

    async def handle(self, request: str) -> str:
        if request == "crash":
            raise RuntimeError("bug in handler")
        if request == "refuse":
            raise InvalidInput("refused on purpose")
        return request.upper()


class AlwaysBroken(Actor[str, str]):
    def __init__(self, name: str, error: Exception) -> None:
        super().__init__(name)
        self.error = error
        self.setups = 0

    async def setup(self) -> None:
        self.setups += 1
        raise self.error

    async def handle(self, request: str) -> str:
        raise AssertionError("never serves")


class Gate(Actor[int, int]):
    """Blocks each request until released, to hold work in the inbox during shutdown."""

    def __init__(self) -> None:
        super().__init__("gate", inbox_size=16)
        self.release = anyio.Event()
        self.handled: list[int] = []

    async def handle(self, request: int) -> int:
        await self.release.wait()
        self.handled.append(request)
        return request


class Batcher(Actor[int, int]):
    def __init__(self) -> None:
        super().__init__("batcher", inbox_size=64, max_batch=16)
        self.batches: list[int] = []

    async def handle(self, request: int) -> int:
        raise AssertionError("batched actors answer in handle_batch")

    async def handle_batch(self, batch: Sequence[Envelope[int, int]]) -> None:
        self.batches.append(len(batch))
        for envelope in batch:
            envelope.resolve(envelope.request * 2)


async def test_crashed_actor_restarts_and_serves_again(anyio_backend: str) -> None:
    with anyio.fail_after(5):
        async with fast_supervisor() as sup:
            echo = Echo()
            await sup.start(echo)
            assert await echo.call("hi", timeout=1) == "HI"
            with pytest.raises(ActorUnavailable):
                await echo.call("crash", timeout=1)
            await echo.health.wait_for(ActorState.RUNNING)
            assert await echo.call("again", timeout=1) == "AGAIN"
            assert echo.health.restarts == 1
            assert echo.setups == 2
            assert echo.teardowns == 1
            assert "bug in handler" in (echo.health.last_error or "")


async def test_refusal_is_a_value_and_does_not_restart(anyio_backend: str) -> None:
    with anyio.fail_after(5):
        async with fast_supervisor() as sup:
            echo = Echo()
            await sup.start(echo)
            with pytest.raises(InvalidInput, match="refused on purpose"):
                await echo.call("refuse", timeout=1)
            assert echo.health.restarts == 0
            assert await echo.call("ok", timeout=1) == "OK"


async def test_setup_failures_back_off_then_recover(anyio_backend: str) -> None:
    with anyio.fail_after(5):
        async with fast_supervisor(max_restarts=5) as sup:
            echo = Echo(crash_on_setup=2)
            snapshot = await sup.start(echo)
            assert snapshot.state is ActorState.RUNNING
            assert snapshot.restarts == 2
            assert await echo.call("up", timeout=1) == "UP"


async def test_permanent_failure_goes_down_while_siblings_keep_serving(
    anyio_backend: str,
) -> None:
    with anyio.fail_after(5):
        async with fast_supervisor(max_restarts=3) as sup:
            echo = Echo()
            broken = AlwaysBroken("broken", OSError("disk gone"))
            await sup.start(echo)
            snapshot = await sup.start(broken)
            assert snapshot.state is ActorState.DOWN
            assert broken.setups == 3
            assert "disk gone" in (snapshot.last_error or "")
            with pytest.raises(ActorUnavailable, match="down"):
                await broken.call("x", timeout=1)
            assert await echo.call("still here", timeout=1) == "STILL HERE"
            assert sup.health()["echo"].serving
            assert not sup.health()["broken"].serving


async def test_permanent_failure_exception_skips_retries(anyio_backend: str) -> None:
    with anyio.fail_after(5):
        async with fast_supervisor(max_restarts=5) as sup:
            broken = AlwaysBroken("model", PermanentFailure("no model files"))
            snapshot = await sup.start(broken)
            assert snapshot.state is ActorState.DOWN
            assert broken.setups == 1


async def test_call_times_out_with_actor_unavailable(anyio_backend: str) -> None:
    with anyio.fail_after(5):
        async with fast_supervisor(shutdown_grace=0.1) as sup:
            gate = Gate()
            await sup.start(gate)
            with pytest.raises(ActorUnavailable, match="did not answer"):
                await gate.call(1, timeout=0.05)
            gate.release.set()


async def test_graceful_shutdown_drains_queued_requests(anyio_backend: str) -> None:
    results: list[int] = []
    gate = Gate()

    async def ask(n: int) -> None:
        results.append(await gate.call(n, timeout=5))

    async def open_gate_once_shutdown_began() -> None:
        while gate._inbox_send.statistics().open_send_streams:
            await anyio.lowlevel.checkpoint()
        gate.release.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as callers:
            async with fast_supervisor() as sup:
                await sup.start(gate)
                for n in range(5):
                    callers.start_soon(ask, n)
                # One request in the handler, four queued when shutdown begins.
                while gate._inbox_send.statistics().current_buffer_used < 4:
                    await anyio.lowlevel.checkpoint()
                callers.start_soon(open_gate_once_shutdown_began)
            assert gate.health.state is ActorState.STOPPED
    assert sorted(results) == [0, 1, 2, 3, 4]
    with pytest.raises(ActorUnavailable):
        await gate.call(9, timeout=1)


async def test_concurrent_requests_are_coalesced_into_batches(anyio_backend: str) -> None:
    batcher = Batcher()
    replies: dict[int, int] = {}
    with anyio.fail_after(5):
        async with fast_supervisor() as sup:
            await sup.start(batcher)

            async def ask(n: int) -> None:
                replies[n] = await batcher.call(n, timeout=5)

            async with anyio.create_task_group() as callers:
                for n in range(40):
                    callers.start_soon(ask, n)
    assert replies == {n: n * 2 for n in range(40)}
    assert sum(batcher.batches) == 40
    assert max(batcher.batches) > 1
    assert max(batcher.batches) <= 16


async def test_an_error_in_the_body_propagates_unwrapped(anyio_backend: str) -> None:
    with anyio.fail_after(5), pytest.raises(InvalidInput, match="from the body"):
        async with fast_supervisor() as sup:
            await sup.start(Echo())
            raise InvalidInput("from the body")


async def test_a_handler_that_keeps_crashing_goes_down(anyio_backend: str) -> None:
    with anyio.fail_after(5):
        async with fast_supervisor(max_restarts=3) as sup:
            echo = Echo()
            await sup.start(echo)
            for _ in range(3):
                with pytest.raises(ActorUnavailable):
                    await echo.call("crash", timeout=1)
            await echo.health.wait_for(ActorState.DOWN)
            assert echo.health.restarts == 2
            with pytest.raises(ActorUnavailable, match="down"):
                await echo.call("hello", timeout=1)


async def test_queued_requests_fail_fast_when_the_grace_period_runs_out(
    anyio_backend: str,
) -> None:
    gate = Gate()  # never released: shutdown must give up on it
    outcomes: list[str] = []

    async def ask(n: int) -> None:
        try:
            await gate.call(n, timeout=30)
        except ActorUnavailable:
            outcomes.append("unavailable")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as callers:
            async with fast_supervisor(shutdown_grace=0.05) as sup:
                await sup.start(gate)
                for n in range(4):
                    callers.start_soon(ask, n)
                while gate._inbox_send.statistics().current_buffer_used < 3:
                    await anyio.lowlevel.checkpoint()
    assert outcomes == ["unavailable"] * 4


async def test_a_caller_cancelled_while_waiting_leaves_the_actor_serving(
    anyio_backend: str,
) -> None:
    gate = Gate()
    with anyio.fail_after(5):
        async with fast_supervisor() as sup:
            await sup.start(gate)
            with anyio.move_on_after(0.05):
                await gate.call(1, timeout=10)
            gate.release.set()
            assert await gate.call(2, timeout=1) == 2
    assert gate.handled == [1, 2]


async def test_cancelling_the_supervisor_scope_propagates(anyio_backend: str) -> None:
    with anyio.fail_after(5):
        with anyio.CancelScope() as scope:
            async with fast_supervisor() as sup:
                await sup.start(Echo())
                scope.cancel()
                await anyio.sleep(10)
    assert scope.cancelled_caught


async def test_a_deadline_that_lands_while_shutdown_drains_is_a_timeout(
    anyio_backend: str,
) -> None:
    """A caller's deadline that ends the wait for queued requests at shutdown (a hook's, say)
    still ends the supervisor's task group: the caller gets its TimeoutError, not a
    RuntimeError about a cancel scope left open (which failed the Ralph v2 hook's deadline
    test 2 times in 12)."""
    gate = Gate()  # never released: shutdown waits on it for the whole grace
    with pytest.raises(TimeoutError), anyio.fail_after(0.3):
        async with fast_supervisor(shutdown_grace=10) as sup:
            await sup.start(gate)
            gate.tell(1)
    with pytest.raises(ActorUnavailable):  # the group ended: nothing serves any more
        await gate.call(2, timeout=1)


async def test_stop_actor_answers_what_is_queued_then_refuses(anyio_backend: str) -> None:
    gate = Gate()
    answers: list[int] = []

    async def ask(n: int) -> None:
        answers.append(await gate.call(n, timeout=5))

    async def stop() -> None:
        snapshot = await sup.stop_actor("gate")
        assert snapshot.state is ActorState.STOPPED

    with anyio.fail_after(5):
        async with fast_supervisor() as sup:
            await sup.start(gate)
            async with anyio.create_task_group() as callers:
                for n in range(3):
                    callers.start_soon(ask, n)
                # One request in the handler, two queued, then stop while they wait.
                while gate._inbox_send.statistics().current_buffer_used < 2:
                    await anyio.lowlevel.checkpoint()
                callers.start_soon(stop)
                while gate._inbox_send.statistics().open_send_streams:
                    await anyio.lowlevel.checkpoint()
                gate.release.set()
            with pytest.raises(ActorUnavailable, match="stopped"):
                await gate.call(9, timeout=1)
    assert sorted(answers) == [0, 1, 2]
