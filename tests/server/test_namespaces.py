"""Namespaces through the real MCP client against one HTTP server process: what is stored in
one namespace is invisible from every other, for every read tool, resource and prompt, and
forgetting in one leaves the others alone."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp
import pytest

from tests.server.mcp_scenario import call, error_of
from tests.server_process import (
    CLI,
    environment,
    owner_client,
    owner_headers,
    start_http_server,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One server for the module (each start loads the model): its base URL and config."""
    folder = tmp_path_factory.mktemp("namespaces")
    config = folder / "ralph.yaml"
    config.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n"
        "    lifecycle:\n      auto_run: false\n"
        "    skillbook:\n      enabled: false\n",
        encoding="utf-8",
    )
    process, url = start_http_server(config)
    try:
        yield url.removesuffix("/mcp"), config
    finally:
        process.stop()


ALPHA = "The alpha team deploys the billing service with blue-green switches on Fridays."
BETA = "The beta team keeps its recipes for sourdough bread in a shared notebook."


def _resource(result: Any) -> str:
    return str(result.contents[0].text)


async def _texts(client: mcp.Client, query: str) -> list[str]:
    found = await call(client, "get_relevant_context", query=query, min_score=0.0)
    return [entry["item"]["content"] for entry in found["items"]]


async def test_a_namespace_sees_only_its_own_items(served: tuple[str, Path]) -> None:
    base, config = served
    with anyio.fail_after(180):
        async with owner_client(f"{base}/ns/alpha/mcp", config) as alpha:
            kept = await call(alpha, "store_context", content=ALPHA, context_type="skill")
            await call(
                alpha,
                "store_iteration_result",
                iteration=7,
                success=False,
                summary="deploy failed",
                error="TimeoutError: billing health check",
            )
        async with owner_client(f"{base}/ns/beta/mcp", config) as beta:
            await call(beta, "store_context", content=BETA, context_type="skill")
        async with (
            owner_client(f"{base}/ns/alpha/mcp", config) as alpha,
            owner_client(f"{base}/ns/beta/mcp", config) as beta,
            owner_client(f"{base}/mcp", config) as default,
        ):
            # Search, by the other namespace's own words.
            assert ALPHA in await _texts(alpha, "billing service deploys")
            assert ALPHA not in await _texts(beta, "billing service deploys")
            assert ALPHA not in await _texts(default, "billing service deploys")
            assert BETA not in await _texts(alpha, "sourdough bread recipes")
            # Stats, skills, items, iterations: tools and resources.
            stats = await call(beta, "get_context_stats")
            assert stats["items"] == 1 and stats["namespace"] == "beta"
            assert {n["name"] for n in stats["namespaces"]} == {"default", "alpha", "beta"}
            skills = json.loads(_resource(await beta.read_resource("context://skills")))
            assert [s["content"] for s in skills["skills"]] == [BETA]
            with pytest.raises(mcp.MCPError, match="no context item"):
                await beta.read_resource(f"context://items/{kept['id']}")
            with pytest.raises(mcp.MCPError, match="no result stored for iteration 7"):
                await beta.read_resource("context://iterations/7")
            assert json.loads(_resource(await alpha.read_resource("context://iterations/7")))
            history = await call(beta, "get_iteration_history")
            assert history["iterations"] == []
            # Prompts read through the same engine.
            answer = await beta.get_prompt("Search", {"query": "billing service deploys"})
            body = answer.messages[0].content.text  # type: ignore[union-attr]
            assert ALPHA not in body and "no relevant context found" in body
            # Forget everything in alpha: beta keeps its item.
            gone = await call(alpha, "forget_context", context_types=["skill", "error"])
            assert gone["count"] >= 1
            assert ALPHA not in await _texts(alpha, "billing service deploys")
            assert BETA in await _texts(beta, "sourdough bread recipes")


async def test_a_bad_namespace_name_is_refused_with_the_rule(served: tuple[str, Path]) -> None:
    base, config = served
    async with httpx.AsyncClient(headers=owner_headers(config)) as http:
        answer = await http.post(f"{base}/ns/Not_Lower/mcp", json={})
    assert answer.status_code == 404
    assert "lowercase letters" in answer.json()["error"]["message"]


def test_the_cli_lists_namespaces_with_sizes(served: tuple[str, Path]) -> None:
    _, config = served
    done = subprocess.run(
        [*CLI, "namespaces", "--json"],
        env=environment(config),
        cwd=config.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    listed = {entry["name"]: entry["size_mb"] for entry in json.loads(done.stdout)}
    assert {"default", "alpha", "beta"} <= set(listed)
    assert listed["beta"] > 0


def test_token_new_writes_a_private_file_and_prints_the_token(tmp_path: Path) -> None:
    config = tmp_path / "ralph.yaml"
    config.write_text("learning:\n  mcp_context:\n    storage:\n      path: store\n")
    done = subprocess.run(
        [*CLI, "token", "new", "--namespace", "alpha"],
        env=environment(config),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    token = done.stdout.strip()
    written = tmp_path / ".agent" / "server.tokens"
    assert written.read_text().split() == [token, "alpha"]
    assert stat.S_IMODE(os.stat(written).st_mode) == 0o600
    assert len(token) >= 40


async def test_search_filters_by_tags(served: tuple[str, Path]) -> None:
    base, config = served
    async with owner_client(f"{base}/ns/tagged/mcp", config) as client:
        for tag in ("backend", "frontend"):
            await call(
                client,
                "store_context",
                content=f"The {tag} build breaks when the cache folder is missing",
                context_type="error",
                tags=[tag],
            )
        found = await call(
            client,
            "get_relevant_context",
            query="build breaks cache folder",
            min_score=0.0,
            tags=["frontend"],
        )
    assert [entry["item"]["tags"] for entry in found["items"]] == [["frontend"]]


async def test_search_filters_by_metadata(served: tuple[str, Path]) -> None:
    base, config = served
    async with owner_client(f"{base}/ns/meta/mcp", config) as client:
        stored = (
            (3, "py", "Flaky test: the pytest fixture leaks a temp dir"),
            (1, "rs", "Cargo test times out on the network mock"),
            ("high", "py", "Mypy strict fails on the untyped plugin hook"),
        )
        for priority, lang, content in stored:
            await call(
                client,
                "store_context",
                content=content,
                context_type="error",
                metadata={"priority": priority, "lang": lang},
            )

        async def found(*conditions: dict[str, Any]) -> list[dict[str, Any]]:
            answer = await call(
                client,
                "get_relevant_context",
                query="test fails",
                min_score=0.0,
                metadata=list(conditions),
            )
            given = (entry["item"]["metadata"] for entry in answer["items"])
            # Without the recorder the engine stamps on every item (mcp:<client>).
            own = ({k: v for k, v in m.items() if k != "recorded_by"} for m in given)
            return sorted(own, key=json.dumps)

        assert await found({"key": "priority", "op": ">=", "value": 2}) == [
            {"lang": "py", "priority": 3}
        ]
        assert await found(
            {"key": "lang", "op": "==", "value": "py"},
            {"key": "priority", "op": "not in", "value": [3]},
        ) == [{"lang": "py", "priority": "high"}]
        assert len(await found({"key": "lang", "op": "in", "value": ["py", "rs"]})) == 3
        refused = await error_of(
            client,
            "get_relevant_context",
            query="flaky",
            metadata=[{"key": "priority", "op": "~", "value": 2}],
        )
    assert "metadata" in refused and "op" in refused and "==" in refused, refused
