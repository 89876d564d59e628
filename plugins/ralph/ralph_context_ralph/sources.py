"""Where the hook's context comes from: the engine in this process, or a ralph-context MCP
server (client mode). Both answer the same two questions — what is relevant now, and store
what this iteration did — and both are async, run on the bridge's own event loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.abc
import mcp
from mcp import StdioServerParameters
from mcp_types import Implementation

from ralph_context import Engine, __version__, origin
from ralph_context._logging import get_logger
from ralph_context.models import ContextType, IterationResult, RetrievedItem, Tier
from ralph_context.server.connect import connect
from ralph_context.server.schemas import ContextAnswer

__all__ = [
    "ContextSession",
    "ContextSource",
    "EngineSource",
    "Served",
    "ServerSource",
    "SourceError",
]


class SourceError(Exception):
    """The source could not answer (server gone, tool error); the hook falls back."""


@dataclass(frozen=True)
class Served:
    """One retrieval: the items, the tier that served them, and why it was not better."""

    items: tuple[RetrievedItem, ...]
    tier: Tier
    reason: str | None = None


@dataclass(frozen=True)
class IterationRecord:
    """What the hook stores after an adapter call."""

    result: IterationResult
    output: str | None
    metadata: dict[str, str | int]
    # The query the next iteration's retrieval will make (the same prompt, this result): a
    # source may embed it while the result is written, so that retrieval finds it cached.
    next_query: str | None = None


class ContextSession(Protocol):
    """An open connection to a source."""

    async def search(
        self, query: str, *, max_tokens: int, prefer_types: Sequence[ContextType]
    ) -> Served: ...

    async def record(self, record: IterationRecord) -> None: ...


class ContextSource(Protocol):
    """Opens sessions; a source whose session broke is opened again later."""

    name: str

    def session(self) -> AbstractAsyncContextManager[ContextSession]: ...


log = get_logger("ralph_context_ralph")

OUTPUT_TAG = "iteration-output"
# The name this hook gives a server: its writes are recorded as the Ralph loop's.
CLIENT_INFO = Implementation(name="ralph-context-ralph", version=__version__)
# The thread an iteration's output is stored in, with the iteration's number, by either
# source: the items one iteration stores are neighbours in retrieval.
THREAD = "ralph"


class _EngineSession:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def search(
        self, query: str, *, max_tokens: int, prefer_types: Sequence[ContextType]
    ) -> Served:
        result = await self.engine.search(query, max_tokens=max_tokens, prefer_types=prefer_types)
        return Served(result.items, result.tier, result.degraded_reason)

    async def record(self, record: IterationRecord) -> None:
        """The result and the output side by side: the output's embedding runs while the
        result is written (Ralph waits for this call; one after the other cost ~20 ms
        more per iteration at 100k items). The next query is embedded once the output's
        vector is made, beside the writes: Ralph asks for the next prompt as soon as this
        returns, and a query's embedding was a third of that retrieval (9 ms of ~29 at
        100k items). Beside the output's embedding instead of after it, the loop's
        retrieval p99 at 100k was 60-64 ms against 45-51 (two runs each, same hour). An
        output the store keeps redacted (a secret in it) is embedded again as stored."""
        limit = self.engine.settings.storage.max_content_bytes

        async def output(text: str, group: anyio.abc.TaskGroup) -> None:
            if record.next_query:
                await self._prepare(text)  # cached by content: the store finds it
                group.start_soon(self._prepare, record.next_query)
            await self.engine.store(
                text,
                ContextType.OUTPUT,
                tags=(OUTPUT_TAG,),
                metadata=dict(record.metadata),
                source=THREAD,
                iteration=record.result.iteration,
            )

        try:  # the loop's own record (``origin``), in every task started here
            with origin.recorded_by(origin.RALPH_LOOP):
                async with anyio.create_task_group() as group:
                    group.start_soon(self.engine.record_iteration, record.result)
                    if record.output:
                        group.start_soon(output, _clip(record.output, limit), group)
                    elif record.next_query:
                        group.start_soon(self._prepare, record.next_query)
        except ExceptionGroup as failed:
            raise _first(failed) from None

    async def _prepare(self, text: str) -> None:
        """Embed ``text`` into the engine's cache; a failure only means it is embedded
        again when asked (never a failed record)."""
        try:
            await self.engine.embed([text])
        except Exception as exc:
            log.info("vector_not_prepared", error=repr(exc))


class EngineSource:
    """The engine in this process (no server). The bridge enters it on its own loop, so the
    engine's actors keep running between Ralph's iterations."""

    name = "engine"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @asynccontextmanager
    async def session(self) -> AsyncIterator[ContextSession]:
        async with self.engine:
            yield _EngineSession(self.engine)


class _ServerSession:
    def __init__(self, client: mcp.Client, max_content_bytes: int) -> None:
        self.client = client
        self.max_content_bytes = max_content_bytes

    async def search(
        self, query: str, *, max_tokens: int, prefer_types: Sequence[ContextType]
    ) -> Served:
        # The tool has no soft type preference (only a filter), so none is sent.
        del prefer_types
        answer = ContextAnswer.model_validate(
            await self._call("get_relevant_context", {"query": query, "max_tokens": max_tokens})
        )
        stats = answer.stats
        return Served(tuple(answer.items), Tier(stats.tier), stats.degraded_reason)

    async def record(self, record: IterationRecord) -> None:
        result = record.result
        arguments = result.model_dump(mode="json", exclude={"created_at"}, exclude_none=True)
        await self._call("store_iteration_result", arguments)
        if record.output:
            await self._call(
                "store_context",
                {
                    "content": _clip(record.output, self.max_content_bytes),
                    "context_type": ContextType.OUTPUT.value,
                    "tags": [OUTPUT_TAG],
                    "metadata": dict(record.metadata),
                    "thread": THREAD,
                    "iteration": result.iteration,
                },
            )

    async def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        if result.is_error or result.structured_content is None:
            text = " ".join(getattr(block, "text", "") for block in result.content)
            raise SourceError(f"{tool} failed: {text or 'no structured answer'}")
        answer: dict[str, Any] = result.structured_content
        return answer


class ServerSource:
    """A ralph-context MCP server: a URL (streamable HTTP, sent ``token`` as a bearer
    token when given) or a command run over stdio."""

    name = "server"

    def __init__(
        self,
        target: str | StdioServerParameters,
        *,
        max_content_bytes: int = 100_000,
        token: str | None = None,
    ) -> None:
        self.target = target
        self.max_content_bytes = max_content_bytes
        self.token = token

    @asynccontextmanager
    async def session(self) -> AsyncIterator[ContextSession]:
        if isinstance(self.target, str):
            async with connect(self.target, self.token, CLIENT_INFO) as client:
                yield _ServerSession(client, self.max_content_bytes)
            return
        async with mcp.Client(self.target, client_info=CLIENT_INFO) as client:
            yield _ServerSession(client, self.max_content_bytes)


def _clip(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` within ``max_bytes`` UTF-8 bytes."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")


def _first(group: BaseExceptionGroup[Exception]) -> Exception:
    """The first failure of a task group, unwrapped (callers name it to the user)."""
    found: BaseException = group
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    assert isinstance(found, Exception)
    return found
