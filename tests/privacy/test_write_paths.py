"""No secret reaches the store: written through every MCP write path of a real server, then
looked for in the answers, the store's files, an export and the server's log."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp
import pytest

from tests.privacy.secrets import GITHUB_FINE_GRAINED, PLAIN_PASSWORD, SECRETS
from tests.server.mcp_scenario import call
from tests.server_process import (
    CLI,
    environment,
    owner_client,
    start_http_server,
    store_config,
)

# Stored beside the secrets and found in the files: proof the search below can see text.
CONTROL = "zq7controlmarker"


def files_holding(root: Path, needle: str) -> list[Path]:
    """Every file under ``root`` whose raw bytes contain ``needle``."""
    wanted = needle.encode()
    return [p for p in root.rglob("*") if p.is_file() and wanted in p.read_bytes()]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def store_everything(client: mcp.Client) -> dict[str, str]:
    """One secret through each write path; returns path -> the secret it carried."""
    carried = {
        "store_context": SECRETS["github_token"],
        "store_context metadata": PLAIN_PASSWORD + "meta",
        "store_contexts": SECRETS["aws_access_key_id"],
        "iteration error": SECRETS["stripe_key"],
        "iteration summary": SECRETS["openai_key"],
        "mark_useful reason": SECRETS["slack_token"],
        "prompt pack": SECRETS["anthropic_key"],
        "project pack": SECRETS["google_api_key"],
        "thread": SECRETS["npm_token"],
    }
    first = await call(
        client,
        "store_context",
        content=f"{CONTROL} deploy failed: push with {carried['store_context']} was refused",
        context_type="error",
        metadata={"password": carried["store_context metadata"], "step": 3},
        thread=f"session-{carried['thread']}",
    )
    await call(
        client,
        "store_contexts",
        items=[
            {
                "content": f"export AWS_ACCESS_KEY_ID={carried['store_contexts']} before sync",
                "context_type": "output",
            }
        ],
    )
    await call(
        client,
        "store_iteration_result",
        iteration=1,
        success=False,
        summary=f"called the API with {carried['iteration summary']}",
        error=f"stripe said no to {carried['iteration error']}",
    )
    await call(
        client,
        "mark_useful",
        item_id=first["id"],
        helpful=True,
        reason=f"had the token {carried['mark_useful reason']}",
    )
    await call(
        client,
        "record_feedback",
        prompt_id="new",
        prompt_text=f"Use key {carried['prompt pack']} to call the model",
        outcome={"success": True},
    )
    await call(
        client,
        "capture_learning",
        title="maps key",
        problem=f"the maps key {carried['project pack']} was hard-coded",
        solution="read it from the environment",
    )
    return carried


async def test_no_secret_written_over_mcp_reaches_answers_files_export_or_log(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    config = store_config(tmp_path / "ralph.yaml", store, packs=("prompts", "project"))
    process, url = start_http_server(config, env={"RALPH_CONTEXT_LOG_LEVEL": "debug"})
    try:
        with anyio.fail_after(240):
            async with owner_client(url, config) as client:
                carried = await store_everything(client)
                found = await call(client, "get_relevant_context", query="deploy push refused")
                history = await call(client, "get_iteration_history", last_n=5)
                stats = await call(client, "get_context_stats")
                health = await call(client, "health_check")
    finally:
        log = process.stop()
    answers = repr([found, history])
    assert "[REDACTED:github_token]" in answers
    assert "[REDACTED:stripe_key]" in answers and "[REDACTED:openai_key]" in answers
    assert stats["redacted"]["github_token"] >= 1
    assert health["redaction"] == "on" and health["redacted"]["stripe_key"] >= 1
    export = tmp_path / "export.jsonl"
    await anyio.run_process([*CLI, "export", str(export)], env=environment(config))
    exported = export.read_text(encoding="utf-8")
    assert CONTROL in exported and files_holding(store, CONTROL), "the search must see text"
    for path, secret in carried.items():
        assert secret not in answers, path
        assert secret not in exported, path
        assert not files_holding(store, secret), path
        assert secret not in log, path


def test_the_fine_grained_github_token_is_one_kind_not_a_password() -> None:
    # A guard for the kind the stats report: the token rule, not the GITHUB_TOKEN= name.
    from ralph_context.privacy import Redactor

    assert Redactor().clean(f"GITHUB_TOKEN={GITHUB_FINE_GRAINED}") == (
        "GITHUB_TOKEN=[REDACTED:github_token]"
    )
