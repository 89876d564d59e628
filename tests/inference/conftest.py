"""Fake OpenAI-compatible servers on real sockets, and clients pointed at them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from benchmarks.serving import free_port
from tests.inference.fake_openai import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A server listing ``fake-model``."""
    with FakeOpenAI(["fake-model"], name="alpha") as running:
        yield running


@pytest.fixture
def second() -> Iterator[FakeOpenAI]:
    """Another server, with models of its own."""
    with FakeOpenAI(["other-model", "shared-model"], name="beta") as running:
        yield running


@pytest.fixture
def dead_url() -> str:
    """A local URL nothing listens on: connections are refused at once."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """The connection pool the clients under test share."""
    # verify=False: the fake servers speak plain http, and loading CA certificates for
    # nothing costs ~70 ms per test.
    async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=5.0), verify=False) as client:
        yield client
