"""Who may use the HTTP server, and how much: bearer tokens (all namespaces or some), the
refusal to bind beyond loopback without one, Host/Origin protection, the per-client rate
limit, read-only serving and the audit line of every write. A real server process and the
real MCP client."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import mcp
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from benchmarks.serving import free_port
from tests.server.mcp_scenario import call
from tests.server_process import CLI, INITIALIZE, environment, owner_client, start_http_server

EVERYWHERE = "tok-everywhere-0123456789abcdef"
ONLY_ALPHA = "tok-only-alpha-0123456789abcdef"
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _config(folder: Path, extra: str = "") -> Path:
    config = folder / "ralph.yaml"
    config.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n"
        "    lifecycle:\n      auto_run: false\n"
        "    skillbook:\n      enabled: false\n" + extra,
        encoding="utf-8",
    )
    return config


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with two tokens (one in the environment, one for namespace alpha in the
    token file) and a tight rate limit; its URL."""
    folder = tmp_path_factory.mktemp("guarded")
    tokens = folder / "tokens"
    tokens.write_text(f"# team\n{ONLY_ALPHA} alpha\n", encoding="utf-8")
    tokens.chmod(0o600)
    config = _config(
        folder,
        f"    server:\n      token_file: {tokens}\n"
        "      rate_limit_per_second: 2\n      rate_limit_burst: 40\n",
    )
    process, url = start_http_server(config, env={"RALPH_CONTEXT_TOKEN": EVERYWHERE})
    try:
        yield url
    finally:
        process.stop()


@asynccontextmanager
async def _client(url: str, token: str) -> AsyncIterator[mcp.Client]:
    """The MCP client sending ``token`` (the HTTP client it is given is ours to close)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with create_mcp_http_client(headers) as http:
        async with mcp.Client(streamable_http_client(url, http_client=http)) as client:
            yield client


async def test_requests_without_the_token_get_401_with_a_challenge(
    guarded: str,
) -> None:
    url = guarded
    async with httpx.AsyncClient() as http:
        for headers in ({}, {"Authorization": "Bearer nonsense-nonsense-nonsense"}):
            answer = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers})
            assert answer.status_code == 401
            assert answer.headers["WWW-Authenticate"].startswith("Bearer ")
            assert "invalid_token" in answer.headers["WWW-Authenticate"]


async def test_the_token_opens_every_namespace_and_a_scoped_one_only_its_own(
    guarded: str,
) -> None:
    url = guarded
    alpha = url.replace("/mcp", "/ns/alpha/mcp")
    with anyio.fail_after(120):
        async with _client(url, EVERYWHERE) as client:
            assert (await call(client, "get_context_stats"))["namespace"] == "default"
        async with _client(alpha, ONLY_ALPHA) as client:
            stored = await call(client, "store_context", content="alpha note", context_type="skill")
            assert stored["id"]
    async with httpx.AsyncClient() as http:
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {ONLY_ALPHA}"}
        answer = await http.post(url, json=INITIALIZE, headers=headers)
        assert answer.status_code == 403
        assert "insufficient_scope" in answer.headers["WWW-Authenticate"]


async def test_a_foreign_host_or_origin_is_refused(guarded: str) -> None:
    url = guarded
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {EVERYWHERE}"}
    async with httpx.AsyncClient() as http:
        host = await http.post(url, json=INITIALIZE, headers={**auth, "Host": "evil.example"})
        origin = await http.post(
            url, json=INITIALIZE, headers={**auth, "Origin": "http://evil.example"}
        )
    assert host.status_code == 421
    assert origin.status_code == 403


async def test_a_client_past_its_rate_gets_429_with_retry_after(guarded: str) -> None:
    url = guarded
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {EVERYWHERE}"}
    statuses = []
    async with httpx.AsyncClient() as http:
        for _ in range(60):  # a burst of 40 at 2/s: the tail is refused
            answer = await http.get(url.replace("/mcp", "/ns/ratelimited/mcp"), headers=auth)
            statuses.append(answer.status_code)
            if answer.status_code == 429:
                assert int(answer.headers["Retry-After"]) >= 1
                break
    assert statuses[-1] == 429 and len(statuses) > 30


def test_binding_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    config = _config(tmp_path)
    done = subprocess.run(
        [*CLI, "serve", "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port())],
        env=environment(config),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "without a token" in done.stderr and "ralph-context token new" in done.stderr


async def test_read_only_serving_lists_and_accepts_no_write(tmp_path: Path) -> None:
    config = _config(tmp_path)
    # A store must exist for a read-only open: one write by a normal server first.
    process, url = start_http_server(config)
    try:
        async with owner_client(url, config) as client:
            await call(client, "store_context", content="kept for readers", context_type="skill")
    finally:
        writer_log = process.stop()
    audited = [json.loads(line) for line in writer_log.splitlines() if '"audit": true' in line]
    assert [(a["tool"], a["namespace"], a["client"], a["outcome"]) for a in audited] == [
        ("store_context", "default", "owner", "done")  # the owner token, by its label
    ]
    process, url = start_http_server(config, "--read-only")
    try:
        async with owner_client(url, config) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert "get_relevant_context" in tools and "get_context_stats" in tools
            assert not tools & {"store_context", "forget_context", "mark_useful"}
            refused = await client.call_tool(
                "store_context", {"content": "x", "context_type": "skill"}
            )
            assert refused.is_error
            assert (await call(client, "get_context_stats"))["items"] == 1
    finally:
        process.stop()


async def test_the_mcp_client_is_told_why_it_was_refused_and_keeps_its_session(
    guarded: str,
) -> None:
    with anyio.fail_after(120):
        async with _client(guarded, EVERYWHERE) as client:
            with pytest.raises(mcp.MCPError, match=r"rate limit .* retry in \d+ s"):
                for _ in range(80):  # a burst of 40 at 2/s
                    await client.call_tool("get_context_stats", {})
            await anyio.sleep(1.5)  # the bucket refills: the same session goes on
            assert (await call(client, "get_context_stats"))["namespace"] == "default"
