"""Real servers for the console's tests: a configuration, tokens, storing through MCP, and
the CSRF token of a page."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.server.mcp_scenario import call

EVERYWHERE = "tok-console-everywhere-0123456789"
ONLY_BETA = "tok-console-only-beta-0123456789"
# In every page's head, and in the login form's hidden field.
_CSRF = re.compile(r'name="csrf(?:-token)?" (?:content|value)="([^"]+)"')


def console_config(folder: Path, *, tokens: bool) -> Path:
    """``ralph.yaml`` in ``folder``: a store there, no background lifecycle, and with
    ``tokens`` a token file granting ``ONLY_BETA`` namespace beta (``EVERYWHERE`` comes
    from the environment: see :func:`token_env`; the store's owner token is there too).
    Without ``tokens``, no token at all: ``server.owner_token`` off, the opt-out."""
    extra = "    server:\n      owner_token: false\n"
    if tokens:
        token_file = folder / "tokens"
        token_file.write_text(f"{ONLY_BETA} beta\n", encoding="utf-8")
        token_file.chmod(0o600)
        extra = f"    server:\n      token_file: {token_file}\n"
    config = folder / "ralph.yaml"
    config.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n"
        "    lifecycle:\n      auto_run: false\n"
        "    skillbook:\n      enabled: false\n" + extra,
        encoding="utf-8",
    )
    return config


def token_env() -> dict[str, str]:
    return {"RALPH_CONTEXT_TOKEN": EVERYWHERE}


def console_url(mcp_url: str) -> str:
    return mcp_url.removesuffix("/mcp") + "/console"


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found is not None, "the page carries no CSRF token"
    return found.group(1)


@asynccontextmanager
async def mcp_client(url: str, token: str | None = None) -> AsyncIterator[mcp.Client]:
    """The real MCP client, sending ``token`` when given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with create_mcp_http_client(headers) as http:
        async with mcp.Client(streamable_http_client(url, http_client=http)) as client:
            yield client


async def store(
    url: str, entries: Sequence[tuple[str, str]], token: str | None = None, **extra: Any
) -> list[str]:
    """Store ``(content, type)`` entries through ``store_context``; their ids."""
    ids = []
    async with mcp_client(url, token) as client:
        for content, kind in entries:
            stored = await call(
                client, "store_context", content=content, context_type=kind, **extra
            )
            ids.append(str(stored["id"]))
    return ids
