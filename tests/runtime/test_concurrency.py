"""``max_in_flight``: requests answered in their own tasks, bounded; and ``NotConfigured``,
an actor that is down by design."""

from __future__ import annotations

from functools import partial

import anyio
import pytest

from ralph_context.errors import ActorUnavailable, InvalidInput
from ralph_context.runtime import Actor, ActorState, NotConfigured, PermanentFailure
from tests.runtime.test_supervisor import fast_supervisor

pytestmark = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])


class Sleeper(Actor[float, float]):
    """Sleeps the requested seconds; a negative request is refused, NaN crashes it."""

    def __init__(self, *, max_in_flight: int) -> None:
        super().__init__("sleeper", inbox_size=16, max_in_flight=max_in_flight)
        self.running = 0
        self.most = 0
        self.finished: list[float] = []

    async def handle(self, request: float) -> float:
        if request < 0:
            raise InvalidInput("no negative sleeps")
        if request != request:
            raise RuntimeError("bug")
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await anyio.sleep(request)
        finally:
            self.running -= 1
        self.finished.append(request)
        return request


async def test_a_short_request_is_not_held_up_behind_a_long_one(anyio_backend: str) -> None:
    async with fast_supervisor() as supervisor:
        actor = Sleeper(max_in_flight=4)
        await supervisor.start(actor)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: actor.call(0.5, timeout=5))
            await anyio.sleep(0.05)
            with anyio.fail_after(0.4):  # answered while the long one still sleeps
                assert await actor.call(0.01, timeout=5) == 0.01
        assert actor.finished == [0.01, 0.5]


async def test_no_more_than_max_in_flight_run_at_once(anyio_backend: str) -> None:
    async with fast_supervisor() as supervisor:
        actor = Sleeper(max_in_flight=3)
        await supervisor.start(actor)
        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(lambda: actor.call(0.05, timeout=5))
    assert actor.most == 3
    assert len(actor.finished) == 10


async def test_in_order_by_default(anyio_backend: str) -> None:
    async with fast_supervisor() as supervisor:
        actor = Sleeper(max_in_flight=1)
        await supervisor.start(actor)
        async with anyio.create_task_group() as tg:
            for delay in (0.05, 0.01, 0.02):
                tg.start_soon(partial(actor.call, delay, timeout=5))
                await anyio.sleep(0.005)
    assert actor.most == 1
    assert actor.finished == [0.05, 0.01, 0.02]


async def test_refusals_and_crashes_in_a_concurrent_actor(anyio_backend: str) -> None:
    async with fast_supervisor() as supervisor:
        actor = Sleeper(max_in_flight=4)
        await supervisor.start(actor)
        with pytest.raises(InvalidInput, match="no negative sleeps"):
            await actor.call(-1.0, timeout=5)
        with pytest.raises(ActorUnavailable):
            await actor.call(float("nan"), timeout=5)  # the caller fails fast, no timeout
        await actor.health.wait_for(ActorState.RUNNING)
        assert await actor.call(0.0, timeout=5) == 0.0  # restarted and serving


async def test_a_crash_reaches_the_supervisor_unwrapped_and_fails_siblings_fast(
    anyio_backend: str,
) -> None:
    async with fast_supervisor() as supervisor:
        actor = Sleeper(max_in_flight=4)
        await supervisor.start(actor)
        sibling: list[BaseException] = []

        async def long_call() -> None:
            try:
                await actor.call(30.0, timeout=60)
            except ActorUnavailable as exc:
                sibling.append(exc)

        with anyio.fail_after(5):  # nobody waits out the 30-second sleep
            async with anyio.create_task_group() as tg:
                tg.start_soon(long_call)
                await anyio.sleep(0.05)
                with pytest.raises(ActorUnavailable):
                    await actor.call(float("nan"), timeout=5)
        assert len(sibling) == 1  # cancelled with the crash, told at once
        if actor.health.snapshot().last_error is None:  # the supervisor records it next
            with anyio.fail_after(5):
                await actor.health.wait_for(ActorState.RESTARTING)
        # The cause is the handler's own error, not an ExceptionGroup.
        assert actor.health.snapshot().last_error == "RuntimeError: bug"


class Doomed(Actor[str, str]):
    """A concurrent actor whose resource is gone for good on the first request."""

    def __init__(self) -> None:
        super().__init__("doomed", max_in_flight=4)
        self.setups = 0

    async def setup(self) -> None:
        self.setups += 1

    async def handle(self, request: str) -> str:
        raise PermanentFailure("the device is gone")


async def test_a_permanent_failure_in_a_concurrent_actor_takes_it_down_without_restarts(
    anyio_backend: str,
) -> None:
    async with fast_supervisor() as supervisor:
        actor = Doomed()
        await supervisor.start(actor)
        with anyio.fail_after(5):
            with pytest.raises(ActorUnavailable):
                await actor.call("x", timeout=5)
            await actor.health.wait_for(ActorState.DOWN)
    assert actor.setups == 1
    assert "the device is gone" in str(actor.health.snapshot().last_error)


def test_max_in_flight_below_one_is_refused(anyio_backend: str) -> None:
    with pytest.raises(ValueError, match="max_in_flight must be at least 1"):
        Sleeper(max_in_flight=0)


def test_batching_and_concurrency_do_not_mix(anyio_backend: str) -> None:
    class Both(Actor[int, int]):
        def __init__(self) -> None:
            super().__init__("both", max_batch=8, max_in_flight=4)

        async def handle(self, request: int) -> int:
            return request

    with pytest.raises(ValueError, match=r"batches \(max_batch\) or answers concurrently"):
        Both()


class Unconfigured(Actor[str, str]):
    async def setup(self) -> None:
        raise NotConfigured("nothing configured: set FEATURE_URL")

    async def handle(self, request: str) -> str:
        raise AssertionError("never serves")


async def test_an_actor_not_configured_is_down_at_once_without_restarts(
    anyio_backend: str,
) -> None:
    async with fast_supervisor() as supervisor:
        actor = Unconfigured("optional")
        with anyio.fail_after(2):
            snapshot = await supervisor.start(actor)
        assert snapshot.state is ActorState.DOWN
        assert actor.configured is False
        assert "set FEATURE_URL" in str(snapshot.last_error)
        with anyio.fail_after(1), pytest.raises(ActorUnavailable):
            await actor.call("x", timeout=5)
