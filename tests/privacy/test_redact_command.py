"""``ralph-context redact`` on a store written before redaction: afterwards no value is on
disk, and what was around the values is still there."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from ralph_context import Engine
from ralph_context.arguments import NewItem
from ralph_context.models import IterationResult
from ralph_context.packs.project.memory import ProjectMemory
from tests.helpers import Loader, SettingsFactory
from tests.privacy.secrets import SECRETS
from tests.privacy.test_write_paths import CONTROL, files_holding
from tests.server_process import CLI, environment, store_config

FILLER = 99  # clean items stored beside each secret, in the same data files


async def test_redact_takes_every_value_off_the_disk(
    make_settings: SettingsFactory, shared_model: Loader, tmp_path: Path
) -> None:
    hot_secret, archived_secret, original_secret = (
        SECRETS["github_token"],
        SECRETS["stripe_key"],
        SECRETS["npm_token"],
    )
    error_secret = SECRETS["slack_token"]
    pack_secret = SECRETS["huggingface_token"]
    # Redaction off stands in for a store written before it existed.
    old = make_settings(lifecycle={"auto_run": False}, redaction={"enabled": False})
    async with Engine(old, model_loader=shared_model) as engine:
        filler = [(f"{CONTROL} note {n} about the build cache", "output") for n in range(FILLER)]
        items = await engine.store_many(
            [
                *(_entry(text, kind) for text, kind in filler),
                _entry(f"pushed with {hot_secret} to origin", "output"),
                _entry(f"billing used {archived_secret} in staging", "output"),
                _entry(f"{'a long log line. ' * 40} npm publish with {original_secret}", "output"),
            ]
        )
        hot, archived, summarized = items[-3:]
        storage = engine._require_storage()
        await storage.archive_items([archived.id])
        await storage.summarize_items({summarized.id: "npm publish ran with a token"})
        await engine.record_iteration(
            IterationResult(iteration=1, success=False, summary="s", error=f"401 {error_secret}")
        )
        await ProjectMemory(engine).capture_learning(
            "hugging face",
            f"the token {pack_secret} was in the notebook",
            "use the env",
            None,
            None,
            None,
            None,
        )
    store = tmp_path / "store"
    secrets = (hot_secret, archived_secret, original_secret, error_secret, pack_secret)
    for secret in secrets:
        assert files_holding(store, secret), "the old store holds it (the test must see it)"

    config = store_config(tmp_path / "ralph.yaml", store)
    done = await anyio.run_process([*CLI, "redact", "--json"], env=environment(config), check=False)
    assert done.returncode == 0, done.stderr.decode()
    report = json.loads(done.stdout)
    # Two hot items: the pushed one and the iteration's error, stored as an error item.
    assert report["items"] == 2 and report["archived"] == 1 and report["originals"] == 1
    assert report["iterations"] == 1 and report["pack_rows"] >= 1
    assert report["redacted"]["github_token"] >= 1

    assert files_holding(store, CONTROL), "the clean items are still there"
    for secret in secrets:
        assert not files_holding(store, secret), secret
    new = make_settings(lifecycle={"auto_run": False})
    async with Engine(new, model_loader=shared_model) as engine:
        assert (await engine.get(hot.id)).content == "pushed with [REDACTED:github_token] to origin"
        assert "[REDACTED:stripe_key]" in (await engine.get(archived.id)).content
        assert "[REDACTED:npm_token]" in (await engine.original(summarized.id) or "")
        (result,) = await engine.recent_iterations(1)
        assert result.error == "401 [REDACTED:slack_token]"


def _entry(text: str, kind: str) -> NewItem:
    return NewItem(text, kind)
