"""The inference actor under a supervisor and inside the engine, against real local servers."""

from __future__ import annotations

from functools import partial

import anyio
import pytest

from ralph_context.actors.inference import InferenceActor
from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import LocalEmbedder
from ralph_context.engine import Engine
from ralph_context.errors import ActorUnavailable, InferenceTimeout, InvalidInput, ModelError
from ralph_context.inference import ToolCall
from ralph_context.runtime import ActorState, Supervisor
from tests.helpers import SettingsFactory
from tests.inference.fake_openai import Calls, FakeOpenAI, Hold, Slow, Status
from tests.inference.helpers import USER, settings_for


def lms(server: FakeOpenAI, **extra: object) -> dict[str, object]:
    return {"kind": "lmstudio", "base_url": server.url, **extra}


def no_model(_settings: EmbeddingsSettings) -> LocalEmbedder:
    raise ModelError("no embedding model here (not needed by these tests)")


async def test_with_no_model_configured_the_actor_is_down_at_once_and_says_how_to_add_one() -> None:
    actor = InferenceActor(settings_for(), environ={})
    with anyio.fail_after(5):
        async with Supervisor() as supervisor:
            snapshot = await supervisor.start(actor)
            with pytest.raises(ActorUnavailable, match="no language model configured") as caught:
                await actor.complete("any-model", USER)
            with pytest.raises(ActorUnavailable, match="LMSTUDIO_SERVERS"):
                await actor.list_models()
    assert snapshot.state is ActorState.DOWN and snapshot.restarts == 0
    assert "TOGETHER_API_KEY" in str(caught.value)


async def test_servers_from_the_environment_are_served_without_any_file(
    server: FakeOpenAI,
) -> None:
    actor = InferenceActor(
        settings_for(register_from_env=True), environ={"LMSTUDIO_SERVERS": server.url}
    )
    with anyio.fail_after(5):
        async with Supervisor() as supervisor:
            await supervisor.start(actor)
            listing = await actor.list_models()
            answer = await actor.complete("fake-model", USER)
    assert listing.models == ("fake-model",)
    assert answer.text == "alpha answers fake-model: hello"


async def test_models_of_every_server_are_listed_and_each_completion_routed_to_its_own(
    server: FakeOpenAI, second: FakeOpenAI, dead_url: str
) -> None:
    actor = InferenceActor(
        settings_for(
            lms(server, name="a"), lms(second, name="b"), {"kind": "ollama", "base_url": dead_url}
        ),
        environ={},
    )
    second.script(Status(429, retry_after="0"), Calls((("c1", "lookup", '{"q": "x"}'),)))
    with anyio.fail_after(5):
        async with Supervisor() as supervisor:
            await supervisor.start(actor)
            listing = await actor.list_models()
            text = await actor.complete("fake-model", USER, temperature=0.0, seed=1)
            calls = await actor.complete("other-model", USER, tools=[{"type": "function"}])
    assert listing.models == ("fake-model", "other-model", "shared-model")
    assert [s.kind for s in listing.unreachable] == ["ollama"]
    assert (text.server, text.text) == ("a", "alpha answers fake-model: hello")
    assert (calls.server, calls.attempts) == ("b", 2)
    assert calls.tool_calls == (ToolCall("c1", "lookup", '{"q": "x"}'),)


async def test_a_long_completion_does_not_hold_up_other_requests(
    server: FakeOpenAI, second: FakeOpenAI
) -> None:
    actor = InferenceActor(settings_for(lms(server), lms(second)), environ={})
    server.script(Hold())
    with anyio.fail_after(10):
        async with Supervisor() as supervisor:
            await supervisor.start(actor)
            await actor.list_models()
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(actor.complete, "fake-model", USER))
                assert await anyio.to_thread.run_sync(server.wait_in_flight, 1)
                # Both answered while the first completion is still streaming.
                listing = await actor.list_models()
                other = await actor.complete("other-model", USER)
                assert server.in_flight == 1
                server.release()
    assert listing.models == ("fake-model", "other-model", "shared-model")
    assert other.text == "beta answers other-model: hello"


async def test_a_slow_model_reaches_the_caller_as_inference_timeout(server: FakeOpenAI) -> None:
    actor = InferenceActor(settings_for(lms(server, name="a")), environ={})
    server.script(Slow(5.0))
    with anyio.fail_after(5):
        async with Supervisor() as supervisor:
            await supervisor.start(actor)
            with pytest.raises(InferenceTimeout, match=r"within 0\.3s \(a, attempt 1 of 4\)"):
                await actor.complete("fake-model", USER, timeout_seconds=0.3)
            after = await actor.complete("fake-model", USER)
    assert after.text.endswith("hello")
    assert actor.health.snapshot().restarts == 0


async def test_bad_arguments_are_refused_before_anything_is_sent(server: FakeOpenAI) -> None:
    actor = InferenceActor(settings_for(lms(server)), environ={})
    with anyio.fail_after(5):
        async with Supervisor() as supervisor:
            await supervisor.start(actor)
            with pytest.raises(InvalidInput, match="temperature"):
                await actor.complete("fake-model", USER, temperature=3.0)
            with pytest.raises(InvalidInput, match="messages"):
                await actor.complete("fake-model", [])
            with pytest.raises(InvalidInput, match="role"):
                await actor.complete("fake-model", [{"content": "no role"}])
            with pytest.raises(InvalidInput, match="timeout_seconds"):
                await actor.complete("fake-model", USER, timeout_seconds=0)
    assert server.requests == []


async def test_the_engine_reports_inference_down_without_a_model_and_serves_with_one(
    make_settings: SettingsFactory, server: FakeOpenAI
) -> None:
    without = make_settings(inference={"register_from_env": False})
    with_one = make_settings(inference={"register_from_env": False, "servers": [lms(server)]})
    with anyio.fail_after(30):
        async with Engine(without, model_loader=no_model) as engine:
            down = engine.health().actors["inference"]
            with pytest.raises(ActorUnavailable, match="no language model configured"):
                await engine.inference.list_models()
        async with Engine(with_one, model_loader=no_model) as engine:
            up = engine.health().actors["inference"]
            answer = await engine.inference.complete(
                "fake-model", USER, timeout_seconds=engine.inference.timeouts.judge
            )
    assert down.state is ActorState.DOWN and "no language model configured" in str(down.last_error)
    assert up.state is ActorState.RUNNING
    assert answer.text == "alpha answers fake-model: hello"
