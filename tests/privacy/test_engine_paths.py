"""The write paths that do not go through an MCP tool: the Ralph hook in process, an import
of an export made before redaction, a skillbook file, and a lifecycle summary."""

from __future__ import annotations

import io
import json
from pathlib import Path

from ralph_context import Engine
from ralph_context.integrations.ralph_v2.client import _Engine
from ralph_context.integrations.ralph_v2.hook import MEMORY_TAG, handle
from ralph_context.integrations.ralph_v2.payload import read_payload
from ralph_context.models import IterationResult
from ralph_context.transfer.export_import import export_store, import_store
from ralph_context_ralph.sources import EngineSource, IterationRecord
from tests.helpers import Loader, SettingsFactory
from tests.privacy.secrets import PLAIN_PASSWORD, SECRETS
from tests.privacy.test_write_paths import files_holding
from tests.ralph_v2.test_hook_loop import payload

OFF = {"enabled": False}


async def test_the_ralph_hook_in_process_stores_no_secret(
    make_settings: SettingsFactory, shared_model: Loader, tmp_path: Path
) -> None:
    settings = make_settings(lifecycle={"auto_run": False})
    record = IterationRecord(
        result=IterationResult(
            iteration=1,
            success=False,
            summary=f"ran with {SECRETS['jwt']}",
            error=f"401 for {SECRETS['github_token']}",
            tool_calls=(f"curl -u admin:{PLAIN_PASSWORD}@ci.internal",),
        ),
        output=f"PASSWORD={PLAIN_PASSWORD}\nAWS {SECRETS['aws_access_key_id']}",
        metadata={"api_key": "k9Q2mX7pL4", "adapter": "claude"},
    )
    engine = Engine(settings, model_loader=shared_model)
    async with EngineSource(engine).session() as session:  # the hook enters the engine
        await session.record(record)
        history = await engine.recent_iterations(1)
        found = await engine.search("401 curl password output", min_score=0.0)
    text = repr(history) + repr([hit.item for hit in found.items])
    assert "[REDACTED:jwt]" in text and "[REDACTED:password]" in text
    for secret in (SECRETS["jwt"], SECRETS["github_token"], PLAIN_PASSWORD, "k9Q2mX7pL4"):
        assert secret not in text
        assert not files_holding(tmp_path / "store", secret)


async def test_an_import_of_an_old_export_is_redacted_and_re_embedded(
    make_settings: SettingsFactory, shared_model: Loader, tmp_path: Path
) -> None:
    # An export written by a store that kept secrets (redaction off stands in for before).
    old = make_settings(lifecycle={"auto_run": False}, redaction=OFF)
    async with Engine(old, model_loader=shared_model) as engine:
        await engine.store(f"pushed with {SECRETS['github_token']}", "output", tags=["ci"])
        await engine.record_iteration(
            IterationResult(iteration=1, success=False, summary="s", error=SECRETS["npm_token"])
        )
        out = io.StringIO()
        await export_store(engine, out)
    exported = out.getvalue()
    assert SECRETS["github_token"] in exported

    target = make_settings(storage={"path": str(tmp_path / "copy")}, lifecycle={"auto_run": False})
    async with Engine(target, model_loader=shared_model) as engine:
        report = await import_store(engine, io.StringIO(exported))
        assert report.embedded == 2  # the redacted texts got new vectors, not the old ones
        again = io.StringIO()
        await export_store(engine, again)
    assert SECRETS["github_token"] not in again.getvalue()
    assert SECRETS["npm_token"] not in again.getvalue()
    assert "[REDACTED:github_token]" in again.getvalue()
    assert not files_holding(tmp_path / "copy", SECRETS["github_token"])


async def test_a_skillbook_skill_is_stored_redacted(
    make_settings: SettingsFactory, shared_model: Loader, tmp_path: Path
) -> None:
    book = tmp_path / "skillbook.json"
    book.write_text(
        json.dumps(
            {
                "skills": {
                    "ops-00001": {
                        "id": "ops-00001",
                        "section": "Ops",
                        "content": f"Deploy with STRIPE key {SECRETS['stripe_key']} from vault",
                        "helpful": 1,
                        "harmful": 0,
                        "neutral": 0,
                        "status": "active",
                    }
                },
                "sections": {"Ops": ["ops-00001"]},
                "next_id": 2,
            }
        ),
        encoding="utf-8",
    )
    settings = make_settings(lifecycle={"auto_run": False}, skillbook={"path": str(book)})
    async with Engine(settings, model_loader=shared_model) as engine:
        (skill,) = await engine.skills(min_usefulness=0.0)
    assert skill.content == "Deploy with STRIPE key [REDACTED:stripe_key] from vault"
    assert not files_holding(tmp_path / "store", SECRETS["stripe_key"])


async def test_ralph_v2_memories_are_stored_redacted_and_do_not_churn(
    make_settings: SettingsFactory, shared_model: Loader, tmp_path: Path
) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".ralph" / "agent").mkdir(parents=True)
    memory = f"Deploys read OPENAI_API_KEY={SECRETS['openai_key']} from the vault"
    (workspace / ".ralph" / "agent" / "memories.md").write_text(
        "# Memories\n\n## Fixes\n\n### mem-1737372000-a1b2\n"
        f"> {memory}\n<!-- tags: deploy | created: 2025-01-20 -->\n\n## Context\n",
        encoding="utf-8",
    )
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        client = _Engine(engine, writable=True)
        first = await handle(
            read_payload(payload(workspace, "post.iteration.start", 1)), client, max_items=5
        )
        again = await handle(
            read_payload(payload(workspace, "post.iteration.start", 2)), client, max_items=5
        )
        listed = await engine.forget(tags=[MEMORY_TAG], dry_run=True)
        (stored,) = [(await engine.get(i)).content for i in listed.item_ids]
    assert first.synced == 1
    assert (again.synced, again.forgotten) == (0, 0), "a redacted memory is not an edited one"
    assert stored == "Deploys read OPENAI_API_KEY=[REDACTED:openai_key] from the vault"
    assert not files_holding(tmp_path / "store", SECRETS["openai_key"])
