"""One server's client against a real local server: streaming, tool calls, retries, keys."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import anyio
import httpx
import pytest
from pydantic import JsonValue

from ralph_context.errors import InferenceServerError, ServerUnreachable
from ralph_context.inference import ChatRequest, Completion, RetryPolicy, ToolCall
from ralph_context.inference.stream import StreamAccumulator, sse_data
from tests.inference.fake_openai import (
    Calls,
    Drop,
    FakeOpenAI,
    Hold,
    Status,
    StreamError,
    Text,
    Whole,
)
from tests.inference.helpers import USER, client_for

ASK = ChatRequest("fake-model", USER)


async def test_a_streamed_reply_is_reassembled_with_usage_and_latency(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    server.script(Text("The build failed because the cache was stale.", pieces=5))
    with anyio.fail_after(5):
        answer = await client_for(server.url, http).chat(ASK)
    assert answer.text == "The build failed because the cache was stale."
    assert answer.finish_reason == "stop"
    assert answer.tool_calls == ()
    assert (answer.prompt_tokens, answer.completion_tokens) == (12, 8)
    assert answer.server == "lmstudio@" + server.url.removeprefix("http://")
    assert answer.attempts == 1
    assert answer.latency_ms > 0
    assert answer.first_token_ms is not None and answer.first_token_ms <= answer.latency_ms
    (request,) = server.chat_requests()
    assert request.body is not None and request.body["stream"] is True
    assert request.body["messages"] == [{"role": "user", "content": "hello"}]


async def test_streamed_tool_call_fragments_are_reassembled_by_index(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    calls = (
        ("call_a", "search_context", '{"query": "flaky test", "max_items": 5}'),
        ("call_b", "mark_useful", '{"item_id": "abc", "helpful": true}'),
    )
    server.script(Calls(calls, text="Let me look."))
    with anyio.fail_after(5):
        answer = await client_for(server.url, http).chat(ASK)
    assert answer.tool_calls == tuple(ToolCall(*call) for call in calls)
    assert answer.text == "Let me look."
    assert answer.finish_reason == "tool_calls"
    assert answer.as_message()["tool_calls"] == [
        {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
    ]


async def test_a_429_is_retried_and_the_next_attempt_answers(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    server.script(Status(429, "rate limited", retry_after="0"))
    with anyio.fail_after(5):
        answer = await client_for(server.url, http).chat(ASK)
    assert answer.text == "alpha answers fake-model: hello"
    assert answer.attempts == 2
    assert len(server.chat_requests()) == 2


@pytest.mark.parametrize("as_date", [False, True])
async def test_retry_after_is_waited_for_in_seconds_or_as_an_http_date(
    server: FakeOpenAI, http: httpx.AsyncClient, as_date: bool
) -> None:
    # Two seconds ahead: HTTP dates have whole-second resolution, so the wait is 1-2 s.
    value = format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    server.script(Status(429, "slow down", retry_after=value if as_date else "1.5"))
    patient = RetryPolicy(retries=1, backoff_initial=0.001, backoff_max=10.0)
    started = anyio.current_time()
    with anyio.fail_after(10):
        answer = await client_for(server.url, http, retry=patient).chat(ASK)
    waited = anyio.current_time() - started
    assert answer.attempts == 2
    assert 0.9 <= waited < 3.0  # not the 1 ms backoff, and not ignored


async def test_retry_after_is_capped_by_backoff_max(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    server.script(Status(503, "down for maintenance", retry_after="3600"))
    started = anyio.current_time()
    with anyio.fail_after(5):
        answer = await client_for(server.url, http).chat(ASK)  # backoff_max 0.01 s
    assert answer.attempts == 2
    assert anyio.current_time() - started < 2.0


async def test_server_errors_and_dropped_connections_are_retried_until_one_succeeds(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    server.script(Status(500), Drop(), Status(502), Text("third time lucky"))
    with anyio.fail_after(5):
        answer = await client_for(server.url, http).chat(ASK)
    assert answer.text == "third time lucky"
    assert answer.attempts == 4
    assert len(server.chat_requests()) == 4


async def test_a_persistent_503_fails_after_every_retry_with_the_servers_message(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    server.script(*[Status(503, "model is loading")] * 4)
    with anyio.fail_after(5), pytest.raises(InferenceServerError) as caught:
        await client_for(server.url, http).chat(ASK)
    assert caught.value.status == 503
    assert "503" in str(caught.value) and "model is loading" in str(caught.value)
    assert "4 attempts" in str(caught.value)
    assert len(server.chat_requests()) == 4


async def test_a_400_is_final_and_names_the_servers_reason(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    server.script(Status(400, "context length exceeded"))
    with anyio.fail_after(5), pytest.raises(InferenceServerError, match="context length"):
        await client_for(server.url, http).chat(ASK)
    assert len(server.chat_requests()) == 1


async def test_a_refused_connection_is_retried_then_reported_unreachable(
    dead_url: str, http: httpx.AsyncClient
) -> None:
    with anyio.fail_after(5), pytest.raises(ServerUnreachable) as caught:
        await client_for(dead_url, http, name="local-lms").chat(ASK)
    assert "cannot connect to local-lms" in str(caught.value)
    assert "after 4 attempts" in str(caught.value)


async def test_an_error_inside_the_stream_is_reported_not_returned_as_text(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    server.script(StreamError("out of memory"))
    with anyio.fail_after(5), pytest.raises(InferenceServerError, match="out of memory"):
        await client_for(server.url, http).chat(ASK)
    assert len(server.chat_requests()) == 1


async def test_a_server_that_ignores_streaming_is_still_understood(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    server.script(Whole("one piece"))
    with anyio.fail_after(5):
        answer = await client_for(server.url, http).chat(ASK)
    assert (answer.text, answer.finish_reason) == ("one piece", "stop")


async def test_the_key_in_the_named_variable_is_sent_as_a_bearer_token(
    http: httpx.AsyncClient,
) -> None:
    with FakeOpenAI(["fake-model"], api_key="s3cret") as keyed:
        client = client_for(
            keyed.url, http, kind="together", environ={"TOGETHER_API_KEY": "s3cret"}
        )
        with anyio.fail_after(5):
            models = await client.fetch_models()
            answer = await client.chat(ASK)
        assert models == ("fake-model",)
        assert answer.text.endswith("hello")
        assert {r.headers["authorization"] for r in keyed.requests} == {"Bearer s3cret"}


async def test_a_refused_key_is_final_and_the_message_names_its_variable(
    http: httpx.AsyncClient,
) -> None:
    with FakeOpenAI(["fake-model"], api_key="right") as keyed:
        client = client_for(keyed.url, http, kind="together", environ={"TOGETHER_API_KEY": "wrong"})
        with anyio.fail_after(5), pytest.raises(InferenceServerError) as caught:
            await client.chat(ASK)
        assert caught.value.status == 401
        assert "invalid api key" in str(caught.value) and "TOGETHER_API_KEY" in str(caught.value)
        assert len(keyed.requests) == 1


async def test_a_missing_key_fails_before_anything_is_sent(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    client = client_for(server.url, http, kind="huggingface", environ={})
    with anyio.fail_after(5), pytest.raises(InferenceServerError, match="HF_TOKEN is not set"):
        await client.chat(ASK)
    assert server.requests == []


@pytest.mark.parametrize(
    ("kind", "penalty_field"),
    [("lmstudio", "repeat_penalty"), ("together", "repetition_penalty"), ("openai", None)],
)
async def test_optional_fields_are_sent_in_the_form_each_kind_expects(
    server: FakeOpenAI, http: httpx.AsyncClient, kind: str, penalty_field: str | None
) -> None:
    tool: dict[str, JsonValue] = {
        "type": "function",
        "function": {"name": "f", "parameters": {"type": "object"}},
    }
    request = ChatRequest(
        "fake-model",
        USER,
        temperature=0.2,
        max_tokens=64,
        tools=(tool,),
        seed=7,
        repeat_penalty=1.1,
        response_format={"type": "json_object"},
    )
    client = client_for(server.url, http, kind=kind, environ={"TOGETHER_API_KEY": "k"})
    with anyio.fail_after(5):
        await client.chat(request)
    (sent,) = server.chat_requests()
    assert sent.body is not None
    assert (sent.body["temperature"], sent.body["max_tokens"], sent.body["seed"]) == (0.2, 64, 7)
    assert sent.body["tools"] == [tool]
    assert sent.body["response_format"] == {"type": "json_object"}
    penalties = {k: v for k, v in sent.body.items() if "penalty" in k}
    assert penalties == ({penalty_field: 1.1} if penalty_field else {})


async def test_the_concurrency_limit_caps_requests_in_flight_to_the_server(
    server: FakeOpenAI, http: httpx.AsyncClient
) -> None:
    client = client_for(server.url, http, max_concurrency=2)
    server.script(Hold(), Hold(), Hold())
    answers: list[Completion] = []

    async def ask() -> None:
        answers.append(await client.chat(ASK))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(ask)
            assert await anyio.to_thread.run_sync(server.wait_in_flight, 2)
            # The third waits for a slot here, not at the server.
            assert client.limiter.statistics().tasks_waiting == 1
            server.release()
    assert len(answers) == 3
    assert server.max_in_flight == 2


async def test_sse_events_join_data_lines_skip_comments_and_stop_at_done() -> None:
    lines = [": ping", "event: message", 'data: {"a":', "data: 1}", "", "", "data: 2", ""]
    lines += ["data: [DONE]", "", "data: after the end", ""]

    async def feed() -> AsyncIterator[str]:
        for line in lines:
            yield line

    assert [payload async for payload in sse_data(feed())] == ['{"a":\n1}', "2"]


async def test_tool_calls_without_index_or_id_each_count_as_one_whole_call() -> None:
    answer = StreamAccumulator("srv")
    whole = {"name": "lookup", "arguments": {"q": "x"}}
    answer.feed(json.dumps({"choices": [{"delta": {"tool_calls": [{"function": whole}]}}]}))
    answer.feed(json.dumps({"choices": [{"delta": {"tool_calls": [{"function": whole}]}}]}))
    answer.check()
    assert answer.tool_calls() == (
        ToolCall("call_0", "lookup", '{"q": "x"}'),
        ToolCall("call_1", "lookup", '{"q": "x"}'),
    )


async def test_a_stream_that_ends_without_any_answer_is_an_error() -> None:
    empty = StreamAccumulator("srv")
    with pytest.raises(InferenceServerError, match="srv ended the stream without an answer"):
        empty.check()
    silent = StreamAccumulator("srv")
    silent.feed(json.dumps({"choices": [{"delta": {}, "finish_reason": "stop"}]}))
    silent.check()
    assert silent.text == ""
