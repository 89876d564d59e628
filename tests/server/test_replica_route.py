"""The route taking other replicas' writes (``server.replica_route``), on a server process
over a local store: what the sender reads from each answer decides whether it commits the
write itself, so an answer must not say "may be stored" when nothing was."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ralph_context.models import ContextItem, ContextType
from ralph_context.storage.replicas.forwarding import FORWARD_PATH, NOT_HOLDER, encode_pairs
from tests.server_process import owner_headers, start_http_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_namespace_the_server_cannot_open_is_answered_503_not_502(
    tmp_path: Path,
) -> None:
    """503 tells the sender nothing was stored (it commits the write itself); 502 would
    make an unkeyed sender refuse a write that was never stored."""
    config = tmp_path / "ralph.yaml"
    config.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n"
        "    lifecycle:\n      auto_run: false\n"
        "    server:\n      max_namespaces: 1\n",
        encoding="utf-8",
    )
    process, url = start_http_server(config)
    base = url.removesuffix("/mcp")
    item = ContextItem(content="the deploy needs the cache warmed", content_type=ContextType.OUTPUT)
    body = {"items": encode_pairs([(item, None)])}
    try:
        headers = owner_headers(config)
        async with httpx.AsyncClient(base_url=base, timeout=60, headers=headers) as http:
            # A local store has no lease: this replica commits nothing for others.
            opened = await http.post(FORWARD_PATH.format(namespace="default"), json=body)
            assert opened.status_code == NOT_HOLDER
            # The one namespace this server may hold is open: "other" cannot be.
            closed = await http.post(FORWARD_PATH.format(namespace="other"), json=body)
            assert closed.status_code == 503
            assert "max_namespaces" in closed.json()["error"]
    finally:
        log = process.stop()
    assert "Traceback" not in log
    assert "forwarded_write_failed" not in log
