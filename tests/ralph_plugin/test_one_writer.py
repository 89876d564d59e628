"""One writer per store, between real processes: a second server is refused and told who
writes the store; the Ralph plugin, given an engine on a store a server already writes,
works through that server instead of opening the store; a command that only reads opens it
read-only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from ralph_context import Engine
from ralph_context.models import Tier
from tests.helpers import Loader, SettingsFactory
from tests.ralph_plugin.ralph_host import make_orchestrator, run_attached
from tests.ralph_plugin.test_hook import FACT, SCRIPT, TASK
from tests.server_process import (
    owner_client,
    run_cli,
    start_http_server,
    store_config,
)


def test_a_second_server_is_refused_and_the_plugin_writes_through_the_first(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings()
    folder = settings.store_path()
    assert isinstance(folder, Path)
    config = store_config(ralph_workdir.parent / "server.yaml", folder)
    server, url = start_http_server(config)
    try:
        second = run_cli(config, "serve")
        assert second.returncode != 0
        assert f"process {server.pid}" in second.stderr
        assert url in second.stderr

        orchestrator, adapter = make_orchestrator(ralph_workdir, TASK, SCRIPT, iterations=4)
        handle = run_attached(orchestrator, Engine(settings, model_loader=shared_model))
        assert [r.tier for r in handle.tiers][1:] == [Tier.SEMANTIC] * 3
        assert FACT in adapter.prompts[3]

        async def stored_by_the_server() -> dict[str, dict[str, Any]]:
            async with owner_client(url, config) as client:
                answer = await client.call_tool(
                    "get_relevant_context", {"query": "invoice export CSV encoding"}
                )
                assert answer.structured_content is not None
                items = answer.structured_content["items"]
                return {hit["item"]["content"]: hit["item"] for hit in items}

        fact = anyio.run(stored_by_the_server)[FACT]
        # Through the server too, the output is in the hook's thread, at its iteration.
        assert (fact["source"], fact["created_iteration"]) == ("ralph", 1)

        # A command that only reads asks the server (its answer in the MCP shape).
        reading = run_cli(config, "search", "invoice export CSV encoding", "--json")
        assert reading.returncode == 0, reading.stderr
        found = json.loads(reading.stdout)
        assert FACT in [hit["item"]["content"] for hit in found["items"]]
    finally:
        server.stop(kill=True)
