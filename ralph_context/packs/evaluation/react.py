"""One stateless ReAct step (prompt-prix's ``react_step``): the trace in, the next step out.

The trace is the only record: the chat is rebuilt from it on every call (system prompt, the
task, then per iteration the assistant's thought with its tool call and the tool's
observation), so the caller owns the loop, its state and when to stop. One model reply
then becomes one of:

- no tool call: the model answered, ``completed``;
- a ``DONE`` call (it wins over any other call in the same reply): ``completed``, its
  ``response`` argument as the final answer;
- with ``mock_tools``: each call answered from the mocks, as new trace iterations;
- without: the calls handed back as ``pending_tool_calls`` for the caller to run.

Tool call ids are ours, ``call_<n>`` from the caller's ``call_counter``, so they are unique
across a whole run whatever the model invents. The models below are the tool's schema too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field, JsonValue

from ralph_context.inference import Completion, Message, ToolCall
from ralph_context.models import MAX_COUNT, MAX_ITERATION

__all__ = [
    "DONE",
    "DoneEntry",
    "MockTools",
    "ReActIteration",
    "ReActStep",
    "TraceCall",
    "mock_observation",
    "parse_arguments",
    "step_from",
    "trace_messages",
]

DONE = "DONE"
DEFAULT_MOCK = "_default"

# tool name -> (arguments key, or one argument's value, or "_default") -> observation
MockTools = Mapping[str, Mapping[str, str]]


class TraceCall(BaseModel):
    """A tool call in the trace: ``args`` is the parsed arguments object."""

    id: str
    name: str
    args: dict[str, JsonValue] = Field(default_factory=dict)


class ReActIteration(BaseModel):
    """One tool call of the trace and what it returned."""

    iteration: int = Field(ge=0, le=MAX_ITERATION)
    tool_call: TraceCall
    observation: str
    success: bool
    thought: str | None = None
    latency_ms: float = Field(default=0.0, ge=0.0, le=MAX_COUNT, allow_inf_nan=False)


class DoneEntry(BaseModel):
    """The ``DONE`` call, for a caller that records it in its trace."""

    tool_call: TraceCall
    thought: str | None


class ReActStep(BaseModel):
    """What one step produced; ``call_counter`` goes into the next call."""

    completed: bool
    final_response: str | None
    new_iterations: list[ReActIteration]
    pending_tool_calls: list[TraceCall]
    call_counter: int
    latency_ms: float
    thought: str | None
    done_args: dict[str, JsonValue] | None = None
    done_trace_entry: DoneEntry | None = None


def trace_messages(
    system_prompt: str, initial_message: str, trace: Sequence[ReActIteration]
) -> list[Message]:
    """The chat so far, rebuilt from the trace."""
    messages: list[Message] = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": initial_message},
    ]
    for step in trace:
        call = step.tool_call
        messages.append(
            {
                # "" rather than null: some local servers' chat templates choke on null.
                "role": "assistant",
                "content": step.thought or "",
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.args)},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call.id, "content": step.observation})
    return messages


def parse_arguments(raw: str) -> dict[str, JsonValue]:
    """A call's arguments as an object; ``{}`` when the model wrote invalid JSON or no
    object (the observation then comes from ``_default`` or says no mock matched)."""
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def mock_observation(
    name: str, args: Mapping[str, JsonValue], mocks: MockTools
) -> tuple[str, bool]:
    """The mocked observation of a call and whether a mock matched.

    Looked up in ``mocks[name]`` by, in order: the whole arguments object
    (``json.dumps(args, sort_keys=True)``), each argument's value in argument order (a string
    as is, anything else as JSON), then ``_default``.
    """
    if name not in mocks:
        return f"Error: unknown tool {name!r}", False
    answers = mocks[name]
    key = json.dumps(args, sort_keys=True)
    if key in answers:
        return answers[key], True
    for value in args.values():
        shown = value if isinstance(value, str) else json.dumps(value)
        if shown in answers:
            return answers[shown], True
    if DEFAULT_MOCK in answers:
        return answers[DEFAULT_MOCK], True
    return f"Error: no mock for {name} with args {key}", False


def step_from(
    reply: Completion, *, trace_length: int, call_counter: int, mock_tools: MockTools | None
) -> ReActStep:
    """The step a model reply makes (see the module docstring)."""
    thought = reply.text or None
    latency = reply.latency_ms
    if not reply.tool_calls:
        return ReActStep(
            completed=True,
            final_response=reply.text,
            new_iterations=[],
            pending_tool_calls=[],
            call_counter=call_counter,
            latency_ms=latency,
            thought=None,
        )
    done = next((call for call in reply.tool_calls if call.name == DONE), None)
    if done is not None:
        return _done(done, reply.text, call_counter + 1, latency)
    calls = [_traced(call, call_counter + n) for n, call in enumerate(reply.tool_calls, 1)]
    counter = call_counter + len(calls)
    if mock_tools is None:
        return ReActStep(
            completed=False,
            final_response=None,
            new_iterations=[],
            pending_tool_calls=calls,
            call_counter=counter,
            latency_ms=latency,
            thought=thought,
        )
    iterations = []
    for n, call in enumerate(calls, 1):
        observation, success = mock_observation(call.name, call.args, mock_tools)
        iterations.append(
            ReActIteration(
                iteration=trace_length + n,
                tool_call=call,
                observation=observation,
                success=success,
                thought=thought,
                latency_ms=latency,
            )
        )
    return ReActStep(
        completed=False,
        final_response=None,
        new_iterations=iterations,
        pending_tool_calls=[],
        call_counter=counter,
        latency_ms=latency,
        thought=thought,
    )


def _traced(call: ToolCall, number: int) -> TraceCall:
    return TraceCall(id=f"call_{number}", name=call.name, args=parse_arguments(call.arguments))


def _done(call: ToolCall, text: str, counter: int, latency: float) -> ReActStep:
    traced = _traced(call, counter)
    response = traced.args.get("response")
    if response is None:
        final = text
    else:
        final = response if isinstance(response, str) else json.dumps(response)
    return ReActStep(
        completed=True,
        final_response=final,
        new_iterations=[],
        pending_tool_calls=[],
        call_counter=counter,
        latency_ms=latency,
        thought=text or None,
        done_args=traced.args,
        done_trace_entry=DoneEntry(tool_call=traced, thought=text or None),
    )
