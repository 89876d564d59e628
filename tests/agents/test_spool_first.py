"""The shared server stores what hooks spooled before it answers the hooks that follow:
a session's failure, spooled while the server started, is stored before its fix arrives."""

from __future__ import annotations

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from ralph_context.server.agents import daemon

pytestmark = pytest.mark.anyio


def _recording_app(reached: list[str]) -> Starlette:
    async def answer(request: Request) -> PlainTextResponse:
        reached.append(request.url.path)
        return PlainTextResponse("ok")

    return Starlette(
        routes=[Route("/hooks/{client}", answer, methods=["POST"]), Route("/mcp", answer)]
    )


async def test_a_hook_waits_for_the_spool_and_other_requests_do_not() -> None:
    reached: list[str] = []

    async def take() -> None:
        reached.append("spool")

    gate = daemon.SpoolFirst(_recording_app(reached), take)
    transport = httpx.ASGITransport(app=gate)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        answers: list[int] = []

        async def hook() -> None:
            answers.append((await client.post("/hooks/claude", json={})).status_code)

        async with anyio.create_task_group() as group:
            group.start_soon(hook)
            assert (await client.get("/mcp")).status_code == 200
            await anyio.sleep(0.2)
            assert reached == ["/mcp"]  # the hook is held
            gate.taken.set()
        # The spool is taken again before the hook: one spooled after the first take.
        assert reached == ["/mcp", "spool", "/hooks/claude"]
        assert answers == [200]


async def test_a_hook_is_answered_after_the_bound_if_the_spool_never_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(daemon, "SPOOL_WAIT", 0.2)
    reached: list[str] = []

    async def take() -> None:
        raise AssertionError("not before the first take")

    gate = daemon.SpoolFirst(_recording_app(reached), take)
    transport = httpx.ASGITransport(app=gate)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        with anyio.fail_after(5):
            assert (await client.post("/hooks/codex", json={})).status_code == 200
    assert reached == ["/hooks/codex"]
