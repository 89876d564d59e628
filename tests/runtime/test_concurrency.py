"""``max_in_flight``: requests answered in their own tasks, bounded; and ``NotConfigured``,
an actor that is down by design."""

from __future__ import annotations

from functools import partial

import anyio
import pytest

from ralph_context.errors import ActorUnavailable, InvalidInput
from ralph_context.runtime import Actor, ActorState, NotConfigured
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


def test_max_in_flight_below_one_is_refused(anyio_backend: str) -> None:
    with pytest.raises(ValueError, match="max_in_flight must be at least 1"):
        Sleeper(max_in_flight=0)


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
