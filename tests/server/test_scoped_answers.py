"""What the answers about the store show a remote client: a token scoped to some
namespaces sees only those in the stats, and no answer over HTTP names a path of the
server's file system. A real server process and the real MCP client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import TextResourceContents

from tests.server.mcp_scenario import call
from tests.server_process import start_http_server

EVERYWHERE = "tok-everywhere-0123456789abcdef"
ONLY_ALPHA = "tok-only-alpha-0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A server with a token for every namespace and one for ``alpha`` alone; its URL and
    its folder."""
    folder = tmp_path_factory.mktemp("scoped")
    tokens = folder / "tokens"
    tokens.write_text(f"{EVERYWHERE}\n{ONLY_ALPHA} alpha\n", encoding="utf-8")
    tokens.chmod(0o600)
    config = folder / "ralph.yaml"
    config.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n"
        "    lifecycle:\n      auto_run: false\n"
        "    skillbook:\n      enabled: false\n"
        f"    server:\n      token_file: {tokens}\n",
        encoding="utf-8",
    )
    process, url = start_http_server(config)
    try:
        yield url, folder
    finally:
        process.stop()


@asynccontextmanager
async def _client(url: str, token: str) -> AsyncIterator[mcp.Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with create_mcp_http_client(headers) as http:
        async with mcp.Client(streamable_http_client(url, http_client=http)) as client:
            yield client


async def test_a_scoped_token_sees_only_its_namespaces_and_no_path(
    served: tuple[str, Path],
) -> None:
    url, folder = served
    with anyio.fail_after(120):
        for name in ("alpha", "beta"):
            async with _client(url.replace("/mcp", f"/ns/{name}/mcp"), EVERYWHERE) as client:
                await call(client, "store_context", content=f"{name} note", context_type="skill")
        async with _client(url, EVERYWHERE) as client:
            everything = await call(client, "get_context_stats")
            assert {"default", "alpha", "beta"} <= {n["name"] for n in everything["namespaces"]}
        async with _client(url.replace("/mcp", "/ns/alpha/mcp"), ONLY_ALPHA) as client:
            stats = await call(client, "get_context_stats")
            read = (await client.read_resource("context://stats")).contents[0]
            assert isinstance(read, TextResourceContents)
            resource = json.loads(read.text)
            health = await call(client, "health_check")

    assert [n["name"] for n in stats["namespaces"]] == ["alpha"]
    assert [n["name"] for n in resource["namespaces"]] == ["alpha"]
    assert stats["namespace"] == "alpha" and stats["items"] == 1
    assert health["store"] == "local store, namespace alpha"
    for answer in (stats, resource, health):
        assert str(folder) not in json.dumps(answer)
