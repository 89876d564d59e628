"""One ReAct step, pure: the chat rebuilt from a trace, mock resolution, step assembly."""

from __future__ import annotations

import json

import pytest
from pydantic import JsonValue

from ralph_context.inference import Completion, ToolCall
from ralph_context.packs.evaluation.react import (
    ReActIteration,
    TraceCall,
    mock_observation,
    parse_arguments,
    step_from,
    trace_messages,
)

MOCKS = {
    "read_file": {
        '{"path": "a.txt"}': "exact a",
        "b.txt": "by value b",
        "_default": "default read",
    },
    "search": {"42": "forty-two", "true": "yes flag", '["x", "y"]': "a list"},
}


def reply(text: str = "", *calls: tuple[str, str, str], latency: float = 12.5) -> Completion:
    return Completion("m", "a", text, tuple(ToolCall(*call) for call in calls), latency_ms=latency)


def iteration(n: int, call_id: str, name: str, args: dict[str, JsonValue]) -> ReActIteration:
    return ReActIteration(
        iteration=n,
        tool_call=TraceCall(id=call_id, name=name, args=args),
        observation=f"obs {n}",
        success=True,
        thought=None if n == 2 else f"thought {n}",
    )


# --- the chat from the trace ----------------------------------------------------------------


def test_the_chat_is_system_task_then_each_iteration_as_a_call_and_its_observation() -> None:
    trace = [
        iteration(1, "call_1", "read_file", {"path": "a.txt"}),
        iteration(2, "call_2", "search", {}),
    ]
    assert trace_messages("Be terse.", "Find the bug.", trace) == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Find the bug."},
        {
            "role": "assistant",
            "content": "thought 1",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "obs 1"},
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
        {"role": "tool", "tool_call_id": "call_2", "content": "obs 2"},
    ]


def test_an_empty_trace_gives_only_the_system_prompt_and_the_task() -> None:
    assert [m["role"] for m in trace_messages("s", "u", [])] == ["system", "user"]


# --- arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ['{"path": ', "not json", "[1, 2]", '"text"', "3", "", "  "])
def test_garbled_or_non_object_arguments_become_an_empty_object(raw: str) -> None:
    assert parse_arguments(raw) == {}


def test_object_arguments_are_parsed_in_their_order() -> None:
    assert list(parse_arguments('{"z": 1, "a": {"b": [2]}}').items()) == [
        ("z", 1),
        ("a", {"b": [2]}),
    ]


# --- mock resolution ------------------------------------------------------------------------


def test_the_whole_arguments_object_with_sorted_keys_matches_first() -> None:
    # Its value "b.txt" would match too: the exact key wins.
    mocks = {"read_file": {'{"mode": "r", "path": "b.txt"}': "exact", "b.txt": "value"}}
    found = mock_observation("read_file", {"path": "b.txt", "mode": "r"}, mocks)
    assert found == ("exact", True)


def test_then_an_argument_value_matches_in_argument_order() -> None:
    mocks = {"read_file": {"first.txt": "first", "second.txt": "second"}}
    args: dict[str, JsonValue] = {"path": "second.txt", "other": "first.txt"}
    assert mock_observation("read_file", args, mocks) == ("second", True)
    assert mock_observation("read_file", {"path": "b.txt", "n": 3}, MOCKS) == ("by value b", True)


def test_non_string_values_match_as_their_json() -> None:
    assert mock_observation("search", {"q": 42}, MOCKS) == ("forty-two", True)
    assert mock_observation("search", {"flag": True}, MOCKS) == ("yes flag", True)
    assert mock_observation("search", {"terms": ["x", "y"]}, MOCKS) == ("a list", True)


def test_then_the_default_answers() -> None:
    assert mock_observation("read_file", {"path": "zzz"}, MOCKS) == ("default read", True)
    assert mock_observation("read_file", {}, MOCKS) == ("default read", True)


def test_with_no_match_and_no_default_the_observation_is_an_error_naming_the_args() -> None:
    assert mock_observation("search", {"q": "nothing", "k": 1}, MOCKS) == (
        'Error: no mock for search with args {"k": 1, "q": "nothing"}',
        False,
    )


def test_a_tool_without_mocks_is_an_unknown_tool() -> None:
    assert mock_observation("delete", {"path": "a"}, MOCKS) == (
        "Error: unknown tool 'delete'",
        False,
    )


# --- the step -------------------------------------------------------------------------------


def test_a_reply_without_tool_calls_completes_with_its_text() -> None:
    step = step_from(reply("The answer is 4."), trace_length=3, call_counter=5, mock_tools=MOCKS)
    assert step.model_dump() == {
        "completed": True,
        "final_response": "The answer is 4.",
        "new_iterations": [],
        "pending_tool_calls": [],
        "call_counter": 5,
        "latency_ms": 12.5,
        "thought": None,
        "done_args": None,
        "done_trace_entry": None,
    }


def test_mocked_calls_become_iterations_numbered_after_the_trace_with_ids_after_the_counter() -> (
    None
):
    answer = reply(
        "Reading both.",
        ("model-id-1", "read_file", '{"path": "a.txt"}'),
        ("model-id-2", "read_file", "{garbled"),
        ("model-id-3", "delete", '{"path": "a.txt"}'),
    )
    step = step_from(answer, trace_length=2, call_counter=7, mock_tools=MOCKS)
    assert step.completed is False and step.final_response is None
    assert step.pending_tool_calls == [] and step.call_counter == 10
    assert step.thought == "Reading both." and step.latency_ms == 12.5
    assert [i.model_dump() for i in step.new_iterations] == [
        {
            "iteration": 3,
            "tool_call": {"id": "call_8", "name": "read_file", "args": {"path": "a.txt"}},
            "observation": "exact a",
            "success": True,
            "thought": "Reading both.",
            "latency_ms": 12.5,
        },
        {
            "iteration": 4,
            "tool_call": {"id": "call_9", "name": "read_file", "args": {}},
            "observation": "default read",
            "success": True,
            "thought": "Reading both.",
            "latency_ms": 12.5,
        },
        {
            "iteration": 5,
            "tool_call": {"id": "call_10", "name": "delete", "args": {"path": "a.txt"}},
            "observation": "Error: unknown tool 'delete'",
            "success": False,
            "thought": "Reading both.",
            "latency_ms": 12.5,
        },
    ]


def test_a_call_without_text_has_no_thought() -> None:
    step = step_from(
        reply("", ("x", "read_file", "{}")), trace_length=0, call_counter=0, mock_tools=MOCKS
    )
    assert step.thought is None and step.new_iterations[0].thought is None


def test_done_wins_over_other_calls_and_its_response_is_the_final_answer() -> None:
    answer = reply(
        "All found.",
        ("m1", "read_file", '{"path": "a.txt"}'),
        ("m2", "DONE", '{"response": "It is in a.txt", "confidence": 0.9}'),
    )
    step = step_from(answer, trace_length=4, call_counter=2, mock_tools=MOCKS)
    done_args = {"response": "It is in a.txt", "confidence": 0.9}
    assert step.model_dump() == {
        "completed": True,
        "final_response": "It is in a.txt",
        "new_iterations": [],
        "pending_tool_calls": [],
        "call_counter": 3,
        "latency_ms": 12.5,
        "thought": "All found.",
        "done_args": done_args,
        "done_trace_entry": {
            "tool_call": {"id": "call_3", "name": "DONE", "args": done_args},
            "thought": "All found.",
        },
    }


def test_done_without_a_response_argument_answers_with_the_text() -> None:
    step = step_from(
        reply("Finished.", ("m", "DONE", "oops")), trace_length=0, call_counter=0, mock_tools=None
    )
    assert (step.completed, step.final_response, step.done_args) == (True, "Finished.", {})
    structured = step_from(
        reply("", ("m", "DONE", json.dumps({"response": {"n": 1}}))),
        trace_length=0,
        call_counter=0,
        mock_tools=None,
    )
    assert structured.final_response == '{"n": 1}'


def test_without_mocks_the_calls_are_forwarded_as_pending_with_our_ids() -> None:
    answer = reply(
        "Let me look.",
        ("model-a", "read_file", '{"path": "a.txt"}'),
        ("model-b", "search", "[not an object]"),
    )
    step = step_from(answer, trace_length=9, call_counter=4, mock_tools=None)
    assert step.model_dump() == {
        "completed": False,
        "final_response": None,
        "new_iterations": [],
        "pending_tool_calls": [
            {"id": "call_5", "name": "read_file", "args": {"path": "a.txt"}},
            {"id": "call_6", "name": "search", "args": {}},
        ],
        "call_counter": 6,
        "latency_ms": 12.5,
        "thought": "Let me look.",
        "done_args": None,
        "done_trace_entry": None,
    }


def test_an_empty_mock_table_still_mocks_every_call_as_unknown() -> None:
    step = step_from(
        reply("", ("m", "search", "{}")), trace_length=0, call_counter=0, mock_tools={}
    )
    assert [(i.observation, i.success) for i in step.new_iterations] == [
        ("Error: unknown tool 'search'", False)
    ]
    assert step.pending_tool_calls == []
