"""Calls an attacker or a careless client makes, against the real server over stdio: each is
refused with an error naming the argument, the server stays healthy, nothing stored changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp import StdioServerParameters

from tests.server.mcp_scenario import call, error_of
from tests.server_process import CLI, environment

# Server subprocesses cost seconds each: one backend.
pytestmark = pytest.mark.parametrize("anyio_backend", ["asyncio"])

HOSTILE: list[tuple[str, dict[str, Any], str]] = [
    # Numbers past what a column holds once took the storage actor down.
    ("store_iteration_result", {"iteration": 2**63, "summary": "x", "success": True}, "iteration"),
    (
        "store_iteration_result",
        {"iteration": 3, "summary": "x", "success": True, "duration_ms": 2**63},
        "duration_ms",
    ),
    (
        "store_iteration_result",
        {"iteration": 3, "summary": "x", "success": True, "tokens_used": 2**70},
        "tokens_used",
    ),
    # A far-future iteration would age (archive) the whole store on the next pass.
    (
        "store_iteration_result",
        {"iteration": 10**9, "summary": "x", "success": True},
        "max_iteration_step",
    ),
    # Strict types: no string for an integer, no boolean for a number.
    ("store_iteration_result", {"iteration": "3", "summary": "x", "success": True}, "iteration"),
    (
        "store_iteration_result",
        {"iteration": 3, "summary": "x", "success": True, "duration_ms": True},
        "duration_ms",
    ),
    ("get_relevant_context", {"query": "x", "max_items": "5"}, "max_items"),
    # A misspelt argument is refused, not dropped (the call would run on the default).
    ("get_relevant_context", {"query": "x", "max_item": 5}, "max_item"),
    ("store_context", {"content": "x", "context_type": "skill", "color": "red"}, "color"),
    # Metadata is bounded in bytes, depth and keys: it travels with every answer.
    (
        "store_context",
        {"content": "x", "context_type": "skill", "metadata": {"blob": "y" * 20_000}},
        "16,384",
    ),
    (
        "store_context",
        {"content": "x", "context_type": "skill", "metadata": {"a": [[[[[[[[[1]]]]]]]]]}},
        "nested",
    ),
    (
        "store_context",
        {"content": "x", "context_type": "skill", "metadata": {str(n): n for n in range(300)}},
        "keys",
    ),
    # A number the store would hand back changed is refused where it is.
    (
        "store_context",
        {"content": "x", "context_type": "skill", "metadata": {"a": {"b": [0, 1, 2**64]}}},
        "metadata.a.b[2] is a 65-bit integer",
    ),
    (
        "store_contexts",
        {"items": [{"content": "x", "context_type": "skill", "extra": 1}]},
        "extra",
    ),
    ("store_context", {"content": "x", "context_type": "skill", "tags": ["t"] * 100}, "tags"),
]


async def test_hostile_calls_are_refused_and_change_nothing(tmp_path: Path) -> None:
    config = tmp_path / "ralph.yaml"
    config.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n"
        "    lifecycle:\n      max_iteration_step: 50\n",
        encoding="utf-8",
    )
    params = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "serve"], env=environment(config), cwd=str(config.parent)
    )
    with anyio.fail_after(180):
        async with mcp.Client(params) as client:
            kept = await call(
                client,
                "store_context",
                content="Retry the upload with exponential backoff when S3 answers 503",
                context_type="skill",
                tags=["upload"],
            )
            await call(client, "store_iteration_result", iteration=2, summary="ok", success=True)
            before = await call(client, "get_context_stats")
            for tool, arguments, named in HOSTILE:
                message = await error_of(client, tool, **arguments)
                assert named in message, f"{tool} {sorted(arguments)}: {message}"
                assert "Traceback" not in message
            health = await call(client, "health_check")
            after = await call(client, "get_context_stats")
            found = await call(client, "get_relevant_context", query="S3 upload fails with 503")
            # The store still takes legitimate writes at the next iteration.
            await call(client, "store_iteration_result", iteration=3, summary="ok", success=True)
    assert health["status"] == "healthy", health
    assert health["tier"] == "semantic"
    for key in ("items", "archived", "by_type", "by_state", "iterations", "latest_iteration"):
        assert after[key] == before[key], key
    assert [i["item"]["id"] for i in found["items"]] == [kept["id"]]
