"""What a client gets from ``get_relevant_context`` with every default, over MCP stdio."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp
import pytest

from tests.server.mcp_scenario import call
from tests.server_process import stdio_server

FIX = (
    "ModuleNotFoundError: No module named 'requests'. Fixed by adding requests to requirements.txt"
)
UNRELATED = (
    "The CI pipeline runs pytest with coverage on every push to main",
    "Use black and ruff to format Python code before committing",
)


@pytest.fixture
def anyio_backend() -> str:
    """A server subprocess costs seconds; the engine's trio coverage lives elsewhere."""
    return "asyncio"


async def test_a_fix_asked_for_in_other_words_comes_back_first_with_every_default(
    tmp_path: Path,
) -> None:
    # The question shares no word with the fix: only its meaning can find it (MiniLM gives
    # it cosine ~0.34, the unrelated items under 0.1). The former match, 0.4 of the cosine
    # when no word is shared, put it under the default threshold: the answer was empty.
    with anyio.fail_after(180):
        async with mcp.Client(stdio_server(tmp_path)) as client:
            fix = await call(client, "store_context", content=FIX, context_type="error")
            for text in UNRELATED:
                await call(client, "store_context", content=text, context_type="skill")
            found = await call(
                client,
                "get_relevant_context",
                query="the import of the http library fails, which package file do I edit?",
            )
    ids = [hit["item"]["id"] for hit in found["items"]]
    assert ids, "the default threshold returned nothing for a clear match"
    assert ids[0] == fix["id"]
