"""What the v2 hook asks of the memory, from an engine it opens or the server that writes
the store.

One process writes a store (``storage/writer_lock.py``). Between two iterations the agent's
own stdio server has exited, so the hook usually opens the store itself; when a
ralph-context HTTP server holds it (a shared server, or one a team runs), the hook is that
server's client. A holder without an endpoint leaves the hook reading beside it: retrieval
works, writes wait for the next hook call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

import mcp
from mcp_types import Implementation

from ralph_context import __version__, namespaces, origin
from ralph_context.config import Settings
from ralph_context.config.owner_token import client_token
from ralph_context.errors import IdempotencyConflict, ItemForgotten
from ralph_context.models import ContextType, IterationResult, RetrievedItem
from ralph_context.server.connect import connect
from ralph_context.storage import writer_lock

__all__ = ["Memory", "ReadOnly", "open_memory"]


class ReadOnly(Exception):
    """Another process writes the store and serves no endpoint: nothing can be written."""


class Memory(Protocol):
    """The four things the hook does with the store."""

    async def search(self, query: str, max_items: int) -> list[RetrievedItem]: ...

    async def record(self, result: IterationResult, key: str) -> None: ...

    async def remember(
        self,
        content: str,
        kind: ContextType,
        tags: Sequence[str],
        key: str,
        *,
        thread: str | None = None,
        iteration: int | None = None,
    ) -> str:
        """Store ``content`` once per ``key``; ``thread`` and ``iteration`` place it among
        its neighbours (none: it stands alone, in the latest iteration)."""
        ...

    async def forget(self, item_ids: Sequence[str]) -> None: ...


class _Engine:
    def __init__(self, engine: Any, *, writable: bool) -> None:
        self.engine = engine
        self.writable = writable

    def _check(self) -> None:
        if not self.writable:
            raise ReadOnly("another process writes the store and serves no endpoint")

    async def search(self, query: str, max_items: int) -> list[RetrievedItem]:
        return list((await self.engine.search(query, max_items=max_items)).items)

    async def record(self, result: IterationResult, key: str) -> None:
        self._check()
        await self.engine.record_iteration(result, idempotency_key=key)

    async def remember(
        self,
        content: str,
        kind: ContextType,
        tags: Sequence[str],
        key: str,
        *,
        thread: str | None = None,
        iteration: int | None = None,
    ) -> str:
        self._check()
        item = await self.engine.store(
            content,
            kind,
            tags=tags,
            source=thread or "",
            iteration=iteration,
            idempotency_key=key,
        )
        return str(item.id)

    async def forget(self, item_ids: Sequence[str]) -> None:
        self._check()
        await self.engine.forget(item_ids=item_ids)


class _Server:
    def __init__(self, client: mcp.Client) -> None:
        self.client = client

    async def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = await self.client.call_tool(tool, arguments)
        if answer.is_error or answer.structured_content is None:
            text = " ".join(str(getattr(c, "text", "")) for c in answer.content)
            if IdempotencyConflict.MARK in text:
                raise IdempotencyConflict(f"{tool}: {text[:300]}")
            if ItemForgotten.MARK in text:
                raise ItemForgotten(f"{tool}: {text[:300]}")
            raise RuntimeError(f"{tool} failed: {text[:300]}")
        return dict(answer.structured_content)

    async def search(self, query: str, max_items: int) -> list[RetrievedItem]:
        answer = await self._call("get_relevant_context", {"query": query, "max_items": max_items})
        return [RetrievedItem.model_validate(entry) for entry in answer["items"]]

    async def record(self, result: IterationResult, key: str) -> None:
        fields = result.model_dump(mode="json", exclude={"created_at"})
        await self._call("store_iteration_result", {**fields, "idempotency_key": key})

    async def remember(
        self,
        content: str,
        kind: ContextType,
        tags: Sequence[str],
        key: str,
        *,
        thread: str | None = None,
        iteration: int | None = None,
    ) -> str:
        arguments: dict[str, Any] = {
            "content": content,
            "context_type": kind.value,
            "tags": list(tags),
            "idempotency_key": key,
        }
        if thread is not None:
            arguments["thread"] = thread
        if iteration is not None:
            arguments["iteration"] = iteration
        return str((await self._call("store_context", arguments))["id"])

    async def forget(self, item_ids: Sequence[str]) -> None:
        await self._call("forget_context", {"item_ids": list(item_ids)})


@asynccontextmanager
async def open_memory(settings: Settings) -> AsyncIterator[Memory]:
    """The store's memory for one hook call: the writing server's, else an engine."""
    holder = None
    if not settings.is_ephemeral:
        holder = writer_lock.other_writer(settings.store_root())
    if holder is not None and holder.endpoint is not None:
        url = namespaces.endpoint(holder.endpoint, settings.storage.namespace)
        info = Implementation(name="ralph-context-ralph-v2", version=__version__)
        async with connect(url, client_token(settings, url), info) as client:
            yield _Server(client)
        return
    from ralph_context.engine import Engine  # ~2 s of imports a server's client skips

    async with Engine(settings, read_only=holder is not None) as engine:
        with origin.recorded_by(origin.RALPH_V2):
            yield _Engine(engine, writable=holder is None)
