"""A pack-enabled MCP server in process (every pack named: ``ALL_PACKS``), driven by the
real ``mcp`` client, with the real model and a LanceDB store on a tmp dir.
``served.engine`` lets a test seed history the tools cannot write (outcomes dated in the
past)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import mcp
import pytest

from ralph_context.config import EmbeddingsSettings, Settings
from ralph_context.embeddings.local import LocalEmbedder
from ralph_context.engine import Engine
from ralph_context.errors import ModelError
from ralph_context.packs.toolkit import EngineHolder
from ralph_context.server.app import build_server
from tests.helpers import Loader, SettingsFactory
from tests.server.mcp_scenario import ALL_PACKS


@dataclass
class Served:
    client: mcp.Client
    engine: Engine


@pytest.fixture
def anyio_backend() -> str:
    """The engine's trio coverage lives in tests/runtime; packs run on asyncio only."""
    return "asyncio"


@asynccontextmanager
async def serving(settings: Settings, loader: Loader) -> AsyncIterator[Served]:
    """The server built on ``settings``, its engine started with ``loader``'s model."""
    holder = EngineHolder(settings)
    server = build_server(holder)
    async with Engine(settings, model_loader=loader) as engine:
        holder.engine = engine
        async with mcp.Client(server) as client:
            yield Served(client, engine)


def no_model(_settings: EmbeddingsSettings) -> LocalEmbedder:
    """A loader whose model is missing: the engine starts on the text tier."""
    raise ModelError("no embedding model at /nowhere; run `ralph-context model install`")


@pytest.fixture
async def served(make_settings: SettingsFactory, shared_model: Loader) -> AsyncIterator[Served]:
    settings = make_settings(lifecycle={"auto_run": False}, packs=ALL_PACKS)
    async with serving(settings, shared_model) as running:
        yield running


@pytest.fixture
def client(served: Served) -> mcp.Client:
    return served.client
