"""The router over several real servers: model ids to servers, refresh, failover, deadlines."""

from __future__ import annotations

import time
from functools import partial

import anyio
import httpx
import pytest

from ralph_context.errors import InferenceTimeout, ModelNotServed
from ralph_context.inference import ChatRequest, Completion, Router
from tests.inference.fake_openai import FakeOpenAI, Hold, Slow, Status
from tests.inference.helpers import USER, client_for


def ask(model: str) -> ChatRequest:
    return ChatRequest(model, USER)


async def test_each_model_id_goes_to_the_server_that_lists_it(
    server: FakeOpenAI, second: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    router = Router(
        [client_for(server.url, http, name="a"), client_for(second.url, http, name="b")]
    )
    with anyio.fail_after(5):
        first = await router.complete(ask("fake-model"), timeout_seconds=5)
        other = await router.complete(ask("other-model"), timeout_seconds=5)
    assert (first.server, first.text) == ("a", "alpha answers fake-model: hello")
    assert (other.server, other.text) == ("b", "beta answers other-model: hello")
    assert len(server.chat_requests()) == len(second.chat_requests()) == 1


async def test_the_listing_is_sorted_deduplicated_and_names_unreachable_servers(
    server: FakeOpenAI, second: FakeOpenAI, dead_url: str, http: httpx.AsyncClient
) -> None:
    server.models.append("shared-model")
    router = Router(
        [
            client_for(server.url, http, name="a"),
            client_for(dead_url, http, name="gone"),
            client_for(second.url, http, name="b"),
        ]
    )
    with anyio.fail_after(5):
        listing = await router.list_models()
    assert listing.models == ("fake-model", "other-model", "shared-model")
    assert [s.name for s in listing.servers] == ["a", "gone", "b"]
    assert listing.servers[0].models == ("fake-model", "shared-model")
    (gone,) = listing.unreachable
    assert gone.name == "gone" and gone.error is not None and "cannot connect" in gone.error


async def test_an_unknown_model_id_is_refused_with_the_models_that_are_served(
    server: FakeOpenAI, second: FakeOpenAI, dead_url: str, http: httpx.AsyncClient
) -> None:
    router = Router(
        [
            client_for(server.url, http, name="a"),
            client_for(second.url, http, name="b"),
            client_for(dead_url, http, name="gone"),
        ]
    )
    with anyio.fail_after(5), pytest.raises(ModelNotServed) as caught:
        await router.complete(ask("gpt-17"), timeout_seconds=5)
    assert caught.value.known == ("fake-model", "other-model", "shared-model")
    assert caught.value.unreachable == ("gone",)
    message = str(caught.value)
    assert "'gpt-17'" in message and "fake-model, other-model, shared-model" in message
    assert "unreachable: gone" in message
    assert server.chat_requests() == [] and second.chat_requests() == []


async def test_a_model_loaded_after_the_last_listing_is_found_by_asking_again(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    router = Router([client_for(server.url, http)])
    with anyio.fail_after(5):
        before = await router.list_models()
        server.models.append("fresh-model")
        answer = await router.complete(ask("fresh-model"), timeout_seconds=5)
    assert "fresh-model" not in before.models
    assert answer.text == "alpha answers fresh-model: hello"
    assert len([r for r in server.requests if r.path == "/v1/models"]) == 2


async def test_concurrent_misses_share_one_refresh(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    router = Router([client_for(server.url, http)])
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(partial(router.complete, ask("fake-model"), timeout_seconds=5))
    assert len([r for r in server.requests if r.path == "/v1/models"]) == 1
    assert len(server.chat_requests()) == 5


async def test_a_request_moves_on_when_the_server_it_was_routed_to_is_gone(
    second: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    with FakeOpenAI(["shared-model"], name="short-lived") as first:
        router = Router(
            [client_for(first.url, http, name="first"), client_for(second.url, http, name="b")]
        )
        with anyio.fail_after(5):
            await router.list_models()
    with anyio.fail_after(5):
        answer = await router.complete(ask("shared-model"), timeout_seconds=5)
    assert answer.server == "b"
    listing = router.listing()
    assert [s.name for s in listing.unreachable] == ["first"]


def model_lists(server: FakeOpenAI) -> int:
    return len([r for r in server.requests if r.path == "/v1/models"])


async def test_a_listed_model_the_server_will_not_serve_is_model_not_served_once_not_per_call(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    # LM Studio lists models it has on disk; without just-in-time loading it answers 404.
    server.script(Status(404, "model 'fake-model' is not loaded"))
    router = Router([client_for(server.url, http, name="a")], refusal_seconds=0.5)
    with anyio.fail_after(5):
        with pytest.raises(ModelNotServed) as first:
            await router.complete(ask("fake-model"), timeout_seconds=5)
        lists = model_lists(server)
        with pytest.raises(ModelNotServed) as again:
            await router.complete(ask("fake-model"), timeout_seconds=5)
    for caught in (first, again):
        message = str(caught.value)
        assert "no configured server serves model 'fake-model'; known models: none" in message
        assert "listed but not served: a refused the request with 404" in message
        assert "is not loaded" in message
    # One chat request, not retried, and the second call asked nobody.
    assert len(server.chat_requests()) == 1
    assert model_lists(server) == lists
    assert "fake-model" in router.listing().models  # the server still lists it
    # Loaded now: once the refusal has expired the model is used again.
    await anyio.sleep(0.6)
    with anyio.fail_after(5):
        answer = await router.complete(ask("fake-model"), timeout_seconds=5)
    assert answer.server == "a"


async def test_a_model_unloaded_since_its_listing_is_model_not_served(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    router = Router([client_for(server.url, http, name="a")])
    with anyio.fail_after(5):
        await router.list_models()
        server.models.remove("fake-model")  # the fake answers 404 for a model it lacks
        with pytest.raises(ModelNotServed, match="model 'fake-model' not found"):
            await router.complete(ask("fake-model"), timeout_seconds=5)


async def test_a_404_from_one_server_moves_the_request_to_the_next_listing_the_model(
    server: FakeOpenAI, second: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    server.models.append("shared-model")
    router = Router(
        [client_for(server.url, http, name="a"), client_for(second.url, http, name="b")]
    )
    server.script(Status(404, "model 'shared-model' is not loaded"))
    with anyio.fail_after(5):
        first = await router.complete(ask("shared-model"), timeout_seconds=5)
        again = await router.complete(ask("shared-model"), timeout_seconds=5)
    assert (first.server, again.server) == ("b", "b")
    assert len(server.chat_requests()) == 1  # a is passed over the second time
    assert len(second.chat_requests()) == 2


async def test_a_busy_server_is_passed_over_for_an_idle_one_serving_the_same_model(
    server: FakeOpenAI, second: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    server.models.append("shared-model")
    router = Router(
        [
            client_for(server.url, http, name="a", max_concurrency=1),
            client_for(second.url, http, name="b", max_concurrency=1),
        ]
    )
    server.script(Hold())
    answers: list[Completion] = []

    async def held() -> None:
        answers.append(await router.complete(ask("shared-model"), timeout_seconds=5))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(held)
            assert await anyio.to_thread.run_sync(server.wait_in_flight, 1)
            answers.append(await router.complete(ask("shared-model"), timeout_seconds=5))
            server.release()
    assert [a.server for a in answers] == ["b", "a"]


async def test_a_reply_slower_than_the_timeout_raises_inference_timeout(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    router = Router([client_for(server.url, http, name="a")])
    server.script(Slow(5.0))
    started = time.perf_counter()
    with anyio.fail_after(5), pytest.raises(InferenceTimeout) as caught:
        await router.complete(ask("fake-model"), timeout_seconds=0.3)
    assert time.perf_counter() - started < 2
    assert str(caught.value) == (
        "model 'fake-model' gave no complete answer within 0.3s (a, attempt 1 of 4)"
    )


async def test_waiting_for_a_busy_servers_slot_counts_against_the_timeout(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    router = Router([client_for(server.url, http, name="a", max_concurrency=1)])
    server.script(Hold())
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(router.complete, ask("fake-model"), timeout_seconds=5))
            assert await anyio.to_thread.run_sync(server.wait_in_flight, 1)
            with pytest.raises(InferenceTimeout, match="waiting for a free slot on a"):
                await router.complete(ask("fake-model"), timeout_seconds=0.2)
            server.release()
    assert len(server.chat_requests()) == 1
