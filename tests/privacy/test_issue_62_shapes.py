"""Issue 62's secret shapes (Azure keys and SAS signatures, passwords given to docker login,
mysql, sshpass, redis-cli and the MongoDB tools, .netrc and .pgpass lines, Google OAuth
client secrets and tokens, Twilio API keys, URLs with a password and no user name): each one
stored through every field an item has (content, tags, metadata values, a metadata key's
value, its thread) and an iteration's record, then looked for in the answers, the store's
files and an export; and through the agents' hook spool, looked for in the spool's file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ralph_context import Engine
from ralph_context.models import IterationResult
from ralph_context.privacy import Redactor
from ralph_context.server.agents.project import SPOOL_FILE, agent_folder, spool
from ralph_context.transfer.export_import import export_store
from tests.helpers import Loader, SettingsFactory, files_holding
from tests.privacy.secrets import SHAPES_OF_ISSUE_62

CASES = [(kind, text, value) for kind, pairs in SHAPES_OF_ISSUE_62.items() for text, value in pairs]
IDS = [f"{kind}-{n}" for n, (kind, _, _) in enumerate(CASES)]


@pytest.mark.parametrize(("kind", "text", "value"), CASES, ids=IDS)
def test_each_shape_is_named_by_its_kind_and_leaves_its_surroundings(
    kind: str, text: str, value: str
) -> None:
    redacted = Redactor().text(text)
    assert value not in redacted.text
    assert redacted.found.get(kind, 0) >= 1, (redacted.text, redacted.found)
    assert redacted.text.startswith(text[: text.index(value)][:30])


async def test_no_shape_reaches_answers_files_or_export_from_any_field(
    make_settings: SettingsFactory, shared_model: Loader, tmp_path: Path
) -> None:
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        for n, (_, text, _) in enumerate(CASES):
            line = " ".join(text.split())  # tags and threads are one line
            await engine.store(
                f"step {n} ran: {text}",
                "output",
                tags=[line[:100]],
                metadata={"command": text, "note": {"lines": [text]}, "AccountKey": text},
                source=f"session {line[:150]}",
            )
            await engine.record_iteration(
                IterationResult(
                    iteration=n + 1,
                    success=False,
                    summary=f"tried {text}",
                    error=f"failed: {text}",
                    tool_calls=(text,),
                    artifacts=(text,),
                )
            )
        found = await engine.search(
            "step ran login password key", max_items=50, min_score=0.0, max_tokens=100_000
        )
        history = await engine.recent_iterations(len(CASES))
        out = io.StringIO()
        await export_store(engine, out)
    answers = repr([hit.item for hit in found.items]) + repr(history)
    export = out.getvalue()
    assert "[REDACTED:" in answers and "[REDACTED:azure_key]" in export
    for kind, _, value in CASES:
        assert value not in answers, kind
        assert value not in export, kind
        assert not files_holding(tmp_path / "store", value), kind


def test_no_shape_reaches_the_hook_spool(tmp_path: Path) -> None:
    """The spool is written by the hook's own process (no server to redact for it)."""
    for kind, text, _ in CASES:
        payload = {
            "hook_event_name": "PostToolUse",
            "tool_input": {"command": text},
            "tool_response": {"stdout": f"ran {text}", "stderr": text},
            "note": [text, {"AccountKey": text}],
            "kind": kind,
        }
        assert spool(tmp_path, "claude", payload)
    spooled = (agent_folder(tmp_path) / SPOOL_FILE).read_text(encoding="utf-8")
    assert len(spooled.splitlines()) == len(CASES) and "[REDACTED:" in spooled
    for line in spooled.splitlines():
        json.loads(line)  # still the spool's JSON lines
    for kind, _, value in CASES:
        assert value not in spooled, kind
        assert json.dumps(value)[1:-1] not in spooled, kind
