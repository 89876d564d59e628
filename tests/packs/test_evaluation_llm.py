"""The language model evaluation tools through the real MCP client, against the in-process
server whose engine talks to fake OpenAI-compatible servers on real sockets."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import mcp
import pytest

from benchmarks.serving import free_port
from ralph_context.packs.evaluation.judging import JUDGE_SYSTEM
from tests.helpers import Loader, SettingsFactory
from tests.inference.fake_openai import Calls, FakeOpenAI, Recorded, Slow, Status, Text
from tests.inference.helpers import inference_section
from tests.packs.conftest import serving
from tests.server.mcp_scenario import call, error_of, text_of

LLM_TOOLS = ("list_models", "complete", "react_step", "judge", "generate_variants")
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]


@dataclass
class Llm:
    client: mcp.Client
    a: FakeOpenAI  # lmstudio kind: model-a, shared
    b: FakeOpenAI  # openai kind: model-b, shared
    dead: str


def free_url() -> str:
    """A local URL nothing listens on: connections are refused at once."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def fakes() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with (
        FakeOpenAI(["model-a", "shared"], name="alpha") as a,
        FakeOpenAI(["model-b", "shared"], name="beta") as b,
    ):
        yield a, b


async def with_servers(
    make_settings: SettingsFactory, shared_model: Loader, servers: list[dict[str, object]]
) -> AsyncIterator[mcp.Client]:
    settings = make_settings(
        lifecycle={"auto_run": False},
        packs=["evaluation"],
        inference=inference_section(*servers, retries=2),
    )
    async with serving(settings, shared_model) as running:
        yield running.client


@pytest.fixture
async def llm(
    make_settings: SettingsFactory,
    shared_model: Loader,
    fakes: tuple[FakeOpenAI, FakeOpenAI],
) -> AsyncIterator[Llm]:
    a, b = fakes
    dead = free_url()
    servers: list[dict[str, object]] = [
        {"kind": "lmstudio", "base_url": a.url, "name": "a"},
        {"kind": "openai", "base_url": f"{b.url}/v1", "name": "b"},
        {"kind": "openai", "base_url": f"{dead}/v1", "name": "dead"},
    ]
    async for client in with_servers(make_settings, shared_model, servers):
        yield Llm(client, a, b, dead)


async def result_of(client: mcp.Client, tool: str, **arguments: Any) -> str:
    """The text a ``str`` tool returned (the SDK wraps it as ``{"result": ...}``)."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return str(result.structured_content["result"])


def last_body(server: FakeOpenAI) -> dict[str, Any]:
    requests: list[Recorded] = server.chat_requests()
    assert requests and requests[-1].body is not None
    return requests[-1].body


# --- list_models ----------------------------------------------------------------------------


async def test_list_models_merges_every_server_and_reports_the_unreachable_one(llm: Llm) -> None:
    with anyio.fail_after(10):
        found = await call(llm.client, "list_models")
    assert found["models"] == ["model-a", "model-b", "shared"]
    assert found["servers"] == {
        f"{llm.a.url}/v1": ["model-a", "shared"],
        f"{llm.b.url}/v1": ["model-b", "shared"],
    }
    assert found["unreachable"] == [f"{llm.dead}/v1"]
    assert set(found["errors"]) == {f"{llm.dead}/v1"}
    assert "dead" in found["errors"][f"{llm.dead}/v1"]


# --- complete -------------------------------------------------------------------------------


async def test_complete_passes_every_option_through_to_the_server(llm: Llm) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Read a.txt"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "hello", "name": "read_file"},
    ]
    with anyio.fail_after(10):
        text = await result_of(
            llm.client,
            "complete",
            model_id="model-a",
            messages=messages,
            temperature=0.2,
            max_tokens=64,
            seed=7,
            repeat_penalty=1.1,
            tools=TOOLS,
            response_format={"type": "json_object"},
        )
        other = await result_of(
            llm.client,
            "complete",
            model_id="model-b",
            messages=[{"role": "user", "content": "hi"}],
            repeat_penalty=1.1,
        )
    assert text == "alpha answers model-a: hello"
    body = last_body(llm.a)
    assert body["messages"] == [
        messages[0],
        messages[1],
        {"content": None, **messages[2]},
        messages[3],
    ]
    assert {key: body[key] for key in ("model", "temperature", "max_tokens", "seed")} == {
        "model": "model-a",
        "temperature": 0.2,
        "max_tokens": 64,
        "seed": 7,
    }
    assert (body["tools"], body["response_format"]) == (TOOLS, {"type": "json_object"})
    assert body["repeat_penalty"] == 1.1  # LM Studio has one
    assert other == "beta answers model-b: hi"
    plain = last_body(llm.b)
    assert (plain["temperature"], plain["max_tokens"]) == (0.7, 2048)  # the defaults
    assert not {"repeat_penalty", "seed", "tools", "response_format"} & set(plain)


async def test_complete_refuses_bad_arguments_naming_them(llm: Llm) -> None:
    user = [{"role": "user", "content": "hi"}]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"messages": [{"role": "robot", "content": "hi"}]}, "'messages.0.role'"),
        ({"messages": [{"role": "user", "content": "hi", "extra": 1}]}, "'messages.0.extra'"),
        ({"messages": []}, "'messages'"),
        ({"messages": user, "temperature": 2.5}, "'temperature'"),
        ({"messages": user, "max_tokens": 0}, "'max_tokens'"),
        ({"messages": user, "max_tokens": 131_073}, "'max_tokens'"),
        ({"messages": user, "timeout_seconds": 0}, "'timeout_seconds'"),
        ({"messages": user, "timeout_seconds": 3601}, "'timeout_seconds'"),
    ]
    with anyio.fail_after(10):
        for arguments, argument in cases:
            message = await error_of(llm.client, "complete", model_id="model-a", **arguments)
            assert message.startswith(f"complete: argument {argument}"), message
        unknown = await error_of(llm.client, "complete", model_id="nope", messages=user)
    assert llm.a.chat_requests() == []
    assert unknown == (
        "complete: no configured server serves model 'nope'; known models: model-a, model-b, "
        "shared (not asked, unreachable: dead)"
    )


async def test_timeouts_default_to_the_configured_deadlines(llm: Llm) -> None:
    with anyio.fail_after(10):
        tools = {tool.name: tool for tool in (await llm.client.list_tools()).tools}
    defaults = {
        name: tools[name].input_schema["properties"]["timeout_seconds"]["default"]
        for name in LLM_TOOLS[1:]
    }
    assert defaults == {
        "complete": 300.0,
        "react_step": 300.0,
        "judge": 60.0,
        "generate_variants": 60.0,
    }


async def test_a_429_is_retried_and_the_second_answer_returned(llm: Llm) -> None:
    llm.a.script(Status(429, "slow down", retry_after="0"), Text("second time lucky"))
    with anyio.fail_after(10):
        text = await result_of(
            llm.client, "complete", model_id="model-a", messages=[{"role": "user", "content": "x"}]
        )
    assert text == "second time lucky"
    assert len(llm.a.chat_requests()) == 2


async def test_a_model_slower_than_timeout_seconds_fails_with_a_clear_error(llm: Llm) -> None:
    llm.a.script(Slow(5.0))
    with anyio.fail_after(10):
        message = await error_of(
            llm.client,
            "complete",
            model_id="model-a",
            messages=[{"role": "user", "content": "x"}],
            timeout_seconds=0.3,
        )
    assert message.startswith(
        "complete: model 'model-a' gave no complete answer within 0.3s (a, attempt 1 of 3)"
    ), message


# --- react_step -----------------------------------------------------------------------------

MOCKS = {
    "read_file": {'{"path": "a.txt"}': "contents of a", "b.txt": "contents of b", "_default": "?"},
    "search": {"hello": "hi there"},
}
TRACE = [
    {
        "iteration": 1,
        "tool_call": {"id": "call_1", "name": "read_file", "args": {"path": "x.txt"}},
        "observation": "contents of x",
        "success": True,
        "thought": "Start with x.",
        "latency_ms": 3.0,
    },
    {
        "iteration": 2,
        "tool_call": {"id": "call_2", "name": "search"},
        "observation": "nothing",
        "success": False,
        "thought": None,
    },
]


async def react(llm: Llm, **arguments: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "model_id": "model-a",
        "system_prompt": "Use tools.",
        "initial_message": "Find the bug.",
        "trace": TRACE,
        "mock_tools": MOCKS,
        "tools": TOOLS,
        "call_counter": 2,
    }
    fields.update(arguments)
    with anyio.fail_after(10):
        return await call(llm.client, "react_step", **fields)


async def test_react_step_sends_the_chat_rebuilt_from_the_trace_with_the_tools(llm: Llm) -> None:
    llm.a.script(Text("The bug is in x."))
    step = await react(llm)
    assert step == {
        "completed": True,
        "final_response": "The bug is in x.",
        "new_iterations": [],
        "pending_tool_calls": [],
        "call_counter": 2,
        "latency_ms": step["latency_ms"],
        "thought": None,
        "done_args": None,
        "done_trace_entry": None,
    }
    assert step["latency_ms"] > 0
    body = last_body(llm.a)
    assert (body["tools"], body["temperature"], body["max_tokens"]) == (TOOLS, 0.0, 2048)
    assert body["messages"] == [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Find the bug."},
        {
            "role": "assistant",
            "content": "Start with x.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "x.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "contents of x"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "search", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "nothing"},
    ]


async def test_react_step_answers_each_call_by_the_mock_rules_in_order(llm: Llm) -> None:
    llm.a.script(
        Calls(
            (
                ("m1", "read_file", '{"path": "a.txt"}'),  # the whole arguments object
                ("m2", "read_file", '{"path": "b.txt", "n": 1}'),  # an argument's value
                ("m3", "read_file", '{"path": "zzz"}'),  # _default
                ("m4", "read_file", '{"path": '),  # garbled: args {} -> _default
                ("m5", "search", '{"q": "bye"}'),  # no match, no default
                ("m6", "delete", "{}"),  # no mocks for the tool
            ),
            text="Reading.",
        )
    )
    step = await react(llm)
    assert (step["completed"], step["final_response"], step["pending_tool_calls"]) == (
        False,
        None,
        [],
    )
    assert (step["call_counter"], step["thought"]) == (8, "Reading.")
    got = [
        (
            i["iteration"],
            i["tool_call"]["id"],
            i["tool_call"]["args"],
            i["observation"],
            i["success"],
        )
        for i in step["new_iterations"]
    ]
    assert got == [
        (3, "call_3", {"path": "a.txt"}, "contents of a", True),
        (4, "call_4", {"path": "b.txt", "n": 1}, "contents of b", True),
        (5, "call_5", {"path": "zzz"}, "?", True),
        (6, "call_6", {}, "?", True),
        (7, "call_7", {"q": "bye"}, 'Error: no mock for search with args {"q": "bye"}', False),
        (8, "call_8", {}, "Error: unknown tool 'delete'", False),
    ]
    assert {(i["thought"], i["latency_ms"]) for i in step["new_iterations"]} == {
        ("Reading.", step["latency_ms"])
    }


async def test_react_step_done_wins_over_other_calls_in_the_same_reply(llm: Llm) -> None:
    llm.a.script(
        Calls(
            (("m1", "read_file", '{"path": "a.txt"}'), ("m2", "DONE", '{"response": "x.py:3"}')),
            text="Found it.",
        )
    )
    step = await react(llm, call_counter=5)
    assert {key: step[key] for key in ("completed", "final_response", "call_counter")} == {
        "completed": True,
        "final_response": "x.py:3",
        "call_counter": 6,
    }
    assert (step["new_iterations"], step["pending_tool_calls"]) == ([], [])
    assert step["done_args"] == {"response": "x.py:3"}
    assert step["done_trace_entry"] == {
        "tool_call": {"id": "call_6", "name": "DONE", "args": {"response": "x.py:3"}},
        "thought": "Found it.",
    }


async def test_react_step_without_mocks_forwards_the_calls_to_the_caller(llm: Llm) -> None:
    llm.a.script(
        Calls((("m1", "read_file", '{"path": "a.txt"}'), ("m2", "search", "{oops")), text="")
    )
    step = await react(llm, mock_tools=None, call_counter=10)
    assert step["pending_tool_calls"] == [
        {"id": "call_11", "name": "read_file", "args": {"path": "a.txt"}},
        {"id": "call_12", "name": "search", "args": {}},
    ]
    assert (step["completed"], step["new_iterations"], step["call_counter"]) == (False, [], 12)
    assert step["thought"] is None


async def test_react_step_refuses_a_malformed_trace(llm: Llm) -> None:
    with anyio.fail_after(10):
        message = await error_of(
            llm.client,
            "react_step",
            model_id="model-a",
            system_prompt="s",
            initial_message="u",
            trace=[{"iteration": 1, "observation": "o", "success": True}],
            mock_tools=None,
            tools=[],
        )
    assert message.startswith("react_step: argument 'trace.0.tool_call': Field required")
    assert llm.a.chat_requests() == []


# --- judge ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ('{"pass": true, "reason": "Greets.", "score": 9}', (True, "Greets.", 9.0)),
        (
            'Here:\n```json\n{"pass": false, "reason": "Rude.", "score": 2}\n```',
            (False, "Rude.", 2.0),
        ),
        (
            'I would say {"pass": true, "reason": "Fine.", "score": 11} overall.',
            (True, "Fine.", 10.0),
        ),
        ('<think>{"pass": false}</think>{"pass": true, "reason": "Ok."}', (True, "Ok.", None)),
        ("Verdict: FAIL\nReason: no greeting", (False, "no greeting", None)),
        ("PASS", (True, "", None)),
    ],
)
async def test_judge_reads_each_reply_form(llm: Llm, reply: str, verdict: tuple[Any, ...]) -> None:
    llm.a.script(Text(reply))
    with anyio.fail_after(10):
        found = await call(
            llm.client, "judge", response="Hi!", criteria="Greets the user", judge_model="model-a"
        )
    assert found == {
        "pass": verdict[0],
        "reason": verdict[1],
        "score": verdict[2],
        "raw_response": reply,
    }
    body = last_body(llm.a)
    assert (body["temperature"], body["max_tokens"]) == (0.1, 256)
    system, user = body["messages"]
    assert system == {"role": "system", "content": JUDGE_SYSTEM}
    assert "CRITERIA:\nGreets the user" in user["content"] and "RESPONSE:\nHi!" in user["content"]


async def test_judge_accepts_an_empty_response_to_judge(llm: Llm) -> None:
    llm.a.script(Text('{"pass": false, "reason": "Nothing was said.", "score": 0}'))
    with anyio.fail_after(10):
        found = await call(
            llm.client, "judge", response="", criteria="Greets", judge_model="model-a"
        )
    assert (found["pass"], found["score"]) == (False, 0.0)
    assert "RESPONSE:\n\n" in last_body(llm.a)["messages"][1]["content"]


async def test_judge_refuses_a_reply_that_only_mentions_pass_in_prose(llm: Llm) -> None:
    reply = "It might pass; that is true of many greetings."
    llm.a.script(Text(reply))
    with anyio.fail_after(10):
        message = await error_of(
            llm.client, "judge", response="Hi!", criteria="Greets", judge_model="model-a"
        )
    assert message.startswith("judge: the judge model gave no verdict (expected JSON")
    assert message.endswith(repr(reply))


# --- generate_variants ----------------------------------------------------------------------


async def test_generate_variants_asks_for_each_form_and_adds_the_baseline(llm: Llm) -> None:
    variants = {"interrogative": "Will you delete the file?", "passive": "The file is deleted."}
    llm.a.script(Text(f"Sure:\n```json\n{json.dumps(variants)}\n```"))
    with anyio.fail_after(10):
        found = await call(
            llm.client,
            "generate_variants",
            baseline="Delete the file.",
            model_id="model-a",
            dimensions=["mood", "voice"],
        )
    assert found == {
        "baseline": "Delete the file.",
        "dimensions_requested": ["mood", "voice"],
        "variants": {"imperative": "Delete the file.", **variants},
        "variant_count": 3,
    }
    body = last_body(llm.a)
    assert (body["temperature"], body["max_tokens"]) == (0.3, 512)
    prompt = body["messages"][0]["content"]
    assert '"Delete the file."' in prompt
    assert all(f"- {label}:" in prompt for label in ("interrogative", "declarative", "passive"))
    assert "- imperative:" not in prompt and "- first_person:" not in prompt


async def test_generate_variants_defaults_to_mood_voice_person_frame(llm: Llm) -> None:
    llm.a.script(Text('{"passive": "It is deleted."}'))
    with anyio.fail_after(10):
        found = await call(
            llm.client, "generate_variants", baseline="Delete it.", model_id="shared"
        )
    assert found["dimensions_requested"] == ["mood", "voice", "person", "frame"]
    assert found["variants"] == {"imperative": "Delete it.", "passive": "It is deleted."}


async def test_generate_variants_errors_are_clear(llm: Llm) -> None:
    llm.a.script(Text("I cannot do that."))
    with anyio.fail_after(10):
        unknown = await error_of(
            llm.client,
            "generate_variants",
            baseline="Delete it.",
            model_id="model-a",
            dimensions=["mood", "aspect"],
        )
        empty = await error_of(llm.client, "generate_variants", baseline="   ", model_id="model-a")
        assert llm.a.chat_requests() == []  # both refused before asking the model
        unparseable = await error_of(
            llm.client, "generate_variants", baseline="Delete it.", model_id="model-a"
        )
    assert unknown.startswith("generate_variants: unknown dimension(s) 'aspect'; allowed: mood")
    assert empty == (
        "generate_variants: baseline must not be empty: give the constraint to rephrase"
    )
    assert unparseable == (
        "generate_variants: the model gave no JSON object of variants (expected "
        '{"<label>": "<rephrased constraint>", ...}): \'I cannot do that.\''
    )


# --- no model configured --------------------------------------------------------------------


async def test_without_a_configured_model_no_tool_is_listed_and_each_says_how_to_configure_one(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    arguments: dict[str, dict[str, Any]] = {
        "list_models": {},
        "complete": {"model_id": "m", "messages": [{"role": "user", "content": "hi"}]},
        "react_step": {
            "model_id": "m",
            "system_prompt": "s",
            "initial_message": "u",
            "trace": [],
            "mock_tools": None,
            "tools": [],
        },
        "judge": {"response": "r", "criteria": "c", "judge_model": "m"},
        "generate_variants": {"baseline": "Do it.", "model_id": "m"},
    }
    messages = {}
    with anyio.fail_after(20):
        async for client in with_servers(make_settings, shared_model, []):
            listed = {tool.name for tool in (await client.list_tools()).tools}
            for tool in LLM_TOOLS:
                messages[tool] = await error_of(client, tool, **arguments[tool])
    assert "calculate_drift" in listed and not listed & set(LLM_TOOLS)
    for tool, message in messages.items():
        assert message == (
            f"tool {tool!r} asks a language model, and this server has none: add "
            "learning.mcp_context.inference.servers to ralph.yaml, or set LMSTUDIO_SERVERS, "
            "OLLAMA_HOST, TOGETHER_API_KEY or HF_TOKEN"
        ), message
