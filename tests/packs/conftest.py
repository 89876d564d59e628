"""A pack-enabled MCP server in process, driven by the real ``mcp`` client, with the real
model and a LanceDB store on a tmp dir. ``served.engine`` lets a test seed history the tools
cannot write (outcomes dated in the past)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import mcp
import pytest

from ralph_context.engine import Engine
from ralph_context.server.app import EngineHolder, build_server
from tests.helpers import Loader, SettingsFactory


@dataclass
class Served:
    client: mcp.Client
    engine: Engine


@pytest.fixture
def anyio_backend() -> str:
    """The engine's trio coverage lives in tests/runtime; packs run on asyncio only."""
    return "asyncio"


@pytest.fixture
async def served(make_settings: SettingsFactory, shared_model: Loader) -> AsyncIterator[Served]:
    settings = make_settings(lifecycle={"auto_run": False})
    holder = EngineHolder(settings)
    server = build_server(holder)
    async with Engine(settings, model_loader=shared_model) as engine:
        holder.engine = engine
        async with mcp.Client(server) as client:
            yield Served(client, engine)


@pytest.fixture
def client(served: Served) -> mcp.Client:
    return served.client
