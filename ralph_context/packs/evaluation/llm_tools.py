"""The evaluation tools that ask a language model: list_models, complete, react_step, judge,
generate_variants (prompt-prix contracts), through the engine's inference actor.

No ``from __future__ import annotations``: the SDK reads each tool's signature.

Each call is bounded by the caller's ``timeout_seconds`` or else the tool's deadline in
``inference.timeouts``; retries, backoff and time queued count against it. Without a
configured model every tool fails with the actor's message saying how to configure one.
"""

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict, Field

from ralph_context.inference import Message
from ralph_context.models import MAX_COUNT
from ralph_context.packs.evaluation.judging import judge_messages, parse_verdict
from ralph_context.packs.evaluation.react import (
    ReActIteration,
    ReActStep,
    step_from,
    trace_messages,
)
from ralph_context.packs.evaluation.variants import (
    DEFAULT_DIMENSIONS,
    DIMENSIONS,
    checked_dimensions,
    parse_variants,
    variant_messages,
)
from ralph_context.packs.toolkit import CLOSED, READ, EngineHolder

__all__ = ["register_llm_tools"]

MAX_TOKENS = 131_072
MAX_TIMEOUT = 3600.0

ModelId = Annotated[str, Field(min_length=1, description="A model id from list_models.")]
Temperature = Annotated[float, Field(ge=0.0, le=2.0, allow_inf_nan=False)]
MaxTokens = Annotated[int, Field(ge=1, le=MAX_TOKENS)]
Text = Annotated[str, Field(min_length=1, max_length=1_000_000)]
# Lists a caller sends (messages, tools, a trace's steps), at most: a chat longer than this
# is no evaluation, and each entry is walked.
MAX_ENTRIES = 1_000
Tools = Annotated[
    list[dict[str, Any]],
    Field(
        max_length=MAX_ENTRIES,
        description='OpenAI function definitions: {"type": "function", "function": {...}}.',
    ),
]
ResponseFormat = Annotated[
    dict[str, Any] | None,
    Field(description='E.g. {"type": "json_object"}, or a "json_schema" format.'),
]


Timeout = Annotated[
    float,
    Field(
        gt=0.0,
        le=MAX_TIMEOUT,
        allow_inf_nan=False,
        description="Seconds for the whole call, retries and queueing included.",
    ),
]


class ChatMessage(BaseModel):
    """An OpenAI chat message, passed to the model as given."""

    model_config = CLOSED

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = Field(default=None, max_length=MAX_ENTRIES)
    tool_call_id: str | None = None
    name: str | None = None

    def wire(self) -> Message:
        return {"content": self.content, **self.model_dump(exclude_none=True)}


class ModelsAnswer(BaseModel):
    models: list[str] = Field(description="Every model id served, sorted, each once.")
    servers: dict[str, list[str]] = Field(description="Server URL -> the models it lists.")
    unreachable: list[str] = Field(description="URLs of servers that did not list models.")
    errors: dict[str, str] = Field(description="Unreachable server URL -> why.")


class Judgement(BaseModel):
    # "pass" is a Python keyword: the field is passed, published and dumped as "pass".
    model_config = ConfigDict(serialize_by_alias=True)

    passed: bool = Field(alias="pass", description="Whether the response meets the criteria.")
    reason: str
    score: float | None = Field(ge=0.0, le=10.0, description="0-10, if the judge gave one.")
    raw_response: str = Field(description="The judge's whole reply, reasoning included.")


class GeneratedVariants(BaseModel):
    baseline: str
    dimensions_requested: list[str]
    variants: dict[str, str] = Field(description="Label -> text; the baseline is imperative.")
    variant_count: int


def register_llm_tools(server: MCPServer, holder: EngineHolder) -> None:
    """Register the five language model evaluation tools on ``server``."""
    timeouts = holder.settings.inference.timeouts

    @server.tool(annotations=READ)
    async def list_models() -> ModelsAnswer:
        """Every model the configured servers serve, each server's list, and the servers that
        could not be reached (with why)."""
        listing = await holder.get().inference.list_models()
        answer = ModelsAnswer(models=list(listing.models), servers={}, unreachable=[], errors={})
        urls = [status.base_url for status in listing.servers]
        for status in listing.servers:
            # Keyed by URL as in prompt-prix; by name where two entries share a URL.
            key = status.base_url if urls.count(status.base_url) == 1 else status.name
            if status.error is None:
                answer.servers[key] = list(status.models)
            else:
                answer.unreachable.append(key)
                answer.errors[key] = status.error
        return answer

    @server.tool(annotations=READ)
    async def complete(
        model_id: ModelId,
        messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=MAX_ENTRIES)],
        temperature: Temperature = 0.7,
        max_tokens: MaxTokens = 2048,
        timeout_seconds: Timeout = timeouts.complete,
        tools: Tools | None = None,
        seed: Annotated[int | None, Field(ge=0, le=MAX_COUNT)] = None,
        repeat_penalty: Annotated[
            float | None, Field(gt=0.0, le=100.0, allow_inf_nan=False)
        ] = None,
        response_format: ResponseFormat = None,
    ) -> str:
        """One chat completion from model_id; returns the reply text. seed and
        repeat_penalty reach the servers that support them. Tool calls the model makes are
        not returned here: react_step parses and answers them."""
        answer = await holder.get().inference.complete(
            model_id,
            [message.wire() for message in messages],
            temperature=temperature,
            max_tokens=max_tokens,
            timeout_seconds=timeout_seconds,
            tools=tools,
            seed=seed,
            repeat_penalty=repeat_penalty,
            response_format=response_format,
        )
        return answer.text

    @server.tool(annotations=READ)
    async def react_step(
        model_id: ModelId,
        system_prompt: str,
        initial_message: str,
        trace: Annotated[list[ReActIteration], Field(max_length=MAX_ENTRIES)],
        mock_tools: Annotated[
            dict[str, dict[str, str]] | None,
            Field(
                description="Tool name -> {arguments JSON (sorted keys) | an argument's value "
                "| '_default'} -> observation. null: return the calls as pending_tool_calls."
            ),
        ],
        tools: Tools,
        call_counter: Annotated[int, Field(ge=0, le=MAX_COUNT)] = 0,
        temperature: Temperature = 0.0,
        max_tokens: MaxTokens = 2048,
        timeout_seconds: Timeout = timeouts.react_step,
        response_format: ResponseFormat = None,
    ) -> ReActStep:
        """One stateless ReAct step: the chat is rebuilt from trace, the model called with
        tools once. No tool call or a DONE call completes; otherwise the calls come back as
        new_iterations (answered from mock_tools) or as pending_tool_calls. Pass the
        returned call_counter to the next step."""
        reply = await holder.get().inference.complete(
            model_id,
            trace_messages(system_prompt, initial_message, trace),
            temperature=temperature,
            max_tokens=max_tokens,
            timeout_seconds=timeout_seconds,
            tools=tools,
            response_format=response_format,
        )
        return step_from(
            reply, trace_length=len(trace), call_counter=call_counter, mock_tools=mock_tools
        )

    @server.tool(annotations=READ)
    async def judge(
        response: Annotated[str, Field(max_length=1_000_000, description="May be empty.")],
        criteria: Text,
        judge_model: ModelId,
        temperature: Temperature = 0.1,
        max_tokens: MaxTokens = 256,
        timeout_seconds: Timeout = timeouts.judge,
    ) -> Judgement:
        """Ask judge_model whether response meets criteria: pass, a one-sentence reason and
        a 0-10 score. Reasoning models' <think> blocks are ignored; a reply with no clear
        verdict is an error, never a guess."""
        reply = await holder.get().inference.complete(
            judge_model,
            judge_messages(response, criteria),
            temperature=temperature,
            max_tokens=max_tokens,
            timeout_seconds=timeout_seconds,
        )
        verdict = parse_verdict(reply.text)
        return Judgement.model_validate(
            {
                "pass": verdict.passed,
                "reason": verdict.reason,
                "score": verdict.score,
                "raw_response": reply.text,
            }
        )

    @server.tool(annotations=READ)
    async def generate_variants(
        baseline: Annotated[Text, Field(description="The constraint, as a command.")],
        model_id: ModelId,
        dimensions: Annotated[
            list[str] | None,
            Field(
                max_length=len(DIMENSIONS),
                description=f"Any of: {', '.join(DIMENSIONS)}; "
                f"default {', '.join(DEFAULT_DIMENSIONS)}.",
            ),
        ] = None,
        temperature: Temperature = 0.3,
        max_tokens: MaxTokens = 512,
        timeout_seconds: Timeout = timeouts.generate_variants,
    ) -> GeneratedVariants:
        """Rephrase a prompt constraint along grammatical dimensions (mood, voice, person,
        tense, frame) with model_id; feed the result to analyze_variants."""
        asked = checked_dimensions(DEFAULT_DIMENSIONS if dimensions is None else dimensions)
        chat = variant_messages(baseline, asked)
        reply = await holder.get().inference.complete(
            model_id,
            chat,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout_seconds=timeout_seconds,
        )
        variants = parse_variants(reply.text, baseline)
        return GeneratedVariants(
            baseline=baseline,
            dimensions_requested=list(asked),
            variants=variants,
            variant_count=len(variants),
        )
