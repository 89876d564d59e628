"""An MCP client of a ralph-context server over streamable HTTP, sending a bearer token.

Every HTTP server requires one (``config.owner_token``), so each of our clients of a
running server (Ralph 1.x's hook, Ralph v2's hook, a replica's tools) connects through
this: the token in ``Authorization``, unless the port turns out to be another local
user's (``agents.listener``: a server gone, its port taken), who must not get it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import mcp
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import Implementation

from ralph_context.server.agents.listener import listener_is_ours

__all__ = ["connect"]


@asynccontextmanager
async def connect(
    url: str, token: str | None, client_info: Implementation | None = None
) -> AsyncIterator[mcp.Client]:
    """A connected MCP client of the server at ``url`` (``.../mcp``), sending ``token``;
    ``client_info``: who it says it is (the server records it as the items' origin)."""
    parts = urlsplit(url)
    if token is not None and not listener_is_ours(f"{parts.scheme}://{parts.netloc}"):
        token = None
    if token is None:
        async with mcp.Client(url, client_info=client_info) as client:
            yield client
        return
    async with (
        create_mcp_http_client({"Authorization": f"Bearer {token}"}) as http,
        mcp.Client(
            streamable_http_client(url, http_client=http), client_info=client_info
        ) as client,
    ):
        yield client
