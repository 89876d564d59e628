"""The write paths that do not go through an MCP tool: the Ralph hook in process, an import
of an export made before redaction, a skillbook file, and a lifecycle summary a model
writes. Where a path also logs and exports, the log (at debug level, rendered as the
engine renders it) and the export are searched too."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
import structlog

from ralph_context import Engine
from ralph_context._logging import configure_logging
from ralph_context.integrations.ralph_v2.client import _Engine
from ralph_context.integrations.ralph_v2.hook import MEMORY_TAG, handle
from ralph_context.integrations.ralph_v2.payload import read_payload
from ralph_context.lifecycle.summarize import worth_summarizing
from ralph_context.models import IterationResult
from ralph_context.transfer.export_import import export_store, import_store
from ralph_context_ralph.sources import EngineSource, IterationRecord
from tests.helpers import Loader, SettingsFactory, advance
from tests.inference.fake_openai import FakeOpenAI, Text
from tests.inference.helpers import inference_section
from tests.privacy.secrets import PLAIN_PASSWORD, SECRETS
from tests.privacy.test_write_paths import files_holding
from tests.ralph_v2.test_hook_loop import payload

OFF = {"enabled": False}


@pytest.fixture
def debug_log(capsys: pytest.CaptureFixture[str]) -> Iterator[Callable[[], str]]:
    """The engine's log at debug level, rendered and scrubbed as a server writes it to
    stderr; reading it returns what was written since the last read. The logging set-up of
    the rest of the run is put back afterwards."""
    was_configured = structlog.is_configured()
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure_logging("debug")
    try:
        yield lambda: capsys.readouterr().err
    finally:
        if was_configured:
            structlog.configure(**saved)
        else:
            structlog.reset_defaults()
        root.handlers[:] = handlers
        root.setLevel(level)


async def exported(engine: Engine) -> str:
    """``engine``'s store as ``ralph-context export`` writes it."""
    out = io.StringIO()
    await export_store(engine, out)
    return out.getvalue()


async def test_the_ralph_hook_in_process_stores_no_secret(
    make_settings: SettingsFactory,
    shared_model: Loader,
    tmp_path: Path,
    debug_log: Callable[[], str],
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
    async with Engine(settings, model_loader=shared_model) as engine:  # as the CLI exports
        export = await exported(engine)
    log = debug_log()
    text = repr(history) + repr([hit.item for hit in found.items])
    assert "[REDACTED:jwt]" in text and "[REDACTED:password]" in text
    assert "[REDACTED:github_token]" in export and "store_opened" in log  # both were read
    for secret in (SECRETS["jwt"], SECRETS["github_token"], PLAIN_PASSWORD, "k9Q2mX7pL4"):
        assert secret not in text
        assert secret not in export
        assert secret not in log
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


LONG_LOG = (
    "The nightly deploy failed in the publish stage. "
    "The registry refused the upload because the CI token had expired an hour earlier. "
    "Rotating the token in the vault and re-running the job made the publish pass. "
    "The release notes for version 2.4.1 were drafted while the job ran again. "
    "The dashboard colours were also tweaked, unrelated to the failure. "
    "Lunch was pizza, and the team agreed to add an expiry alert for CI tokens next week."
)


async def test_a_summary_a_model_writes_with_a_secret_in_it_is_stored_redacted(
    make_settings: SettingsFactory,
    shared_model: Loader,
    tmp_path: Path,
    debug_log: Callable[[], str],
) -> None:
    # The item holds no secret; the model's summary brings one (a model can repeat what
    # it saw elsewhere, or invent a look-alike): the summary is new text on its way to disk.
    leaked = f"Publish failed on an expired CI token; the new one is {SECRETS['npm_token']}."
    with FakeOpenAI(["fake-model"], name="alpha") as server:
        server.script(Text(leaked))
        settings = make_settings(
            lifecycle={
                "aging_after_iterations": 1,
                "summarize_after_iterations": 3,
                "archive_after_iterations": 5,
                "prune_after_iterations": 8,
                "auto_run": False,
                "summarizer_model": "fake-model",
            },
            inference=inference_section({"kind": "lmstudio", "base_url": server.url}, retries=0),
        )
        with anyio.fail_after(120):
            async with Engine(settings, model_loader=shared_model) as engine:
                assert worth_summarizing(LONG_LOG)
                item = await engine.store(LONG_LOG, "iteration", iteration=0)
                await advance(engine, 4)
                report = await engine.summarize_old(3)
                summary = (await engine.get(item.id)).content
                export = await exported(engine)
        assert len(server.chat_requests()) == 1
    log = debug_log()
    assert report.summarizer == "model fake-model"  # the model's text was used, not ours
    assert summary == leaked.replace(SECRETS["npm_token"], "[REDACTED:npm_token]")
    assert "[REDACTED:npm_token]" in export and "lifecycle_pass" in log  # both were read
    assert SECRETS["npm_token"] not in export
    assert SECRETS["npm_token"] not in log
    assert not files_holding(tmp_path / "store", SECRETS["npm_token"])
