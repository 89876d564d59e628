"""Ralph v2's memories.md carries what passes the loop's push gate when one is set: an
objective no note answers leaves the file without managed entries (the hook's report counts
what the gate held back), a related objective gets its note. The default model sets none
(a loop's own state is not a person's prompt: ``config.retrieval.PUSH_GATES``): the file
gets what the search returns, as before."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ralph_context.config import Settings
from ralph_context.config.retrieval import PushGate
from ralph_context.engine import Engine, NewItem
from ralph_context.integrations.ralph_v2.client import _Engine
from ralph_context.integrations.ralph_v2.hook import handle
from ralph_context.integrations.ralph_v2.memories import MANAGED_TAG, parse
from ralph_context.integrations.ralph_v2.payload import read_payload
from tests.agents.test_push_gate import ANSWER, NOTES
from tests.helpers import Loader, SettingsFactory
from tests.ralph_v2.test_hook_loop import payload

pytestmark = pytest.mark.model

# The prompt's gate, set for loops too (``retrieval.loop_push_gate``).
GATE = Settings.load(None).push_gate()
UNANSWERED = "# Objective\nTranslate the error messages in the API responses into Spanish.\n"
BROKER = (
    "# Objective\nThe email worker cannot reach its broker: celery gets connection refused "
    "on localhost:6379 when we run docker compose. Fix it.\n"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _managed(workspace: Path) -> list[str]:
    path = workspace / ".ralph" / "agent" / "memories.md"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return [m.content for m in parse(text) if MANAGED_TAG in m.tags]


async def test_with_a_loop_gate_memories_md_gets_nothing_unanswered_and_a_related_note(
    tmp_path: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".ralph" / "agent").mkdir(parents=True)
    settings = make_settings(lifecycle={"auto_run": False})
    async with Engine(settings, model_loader=shared_model) as engine:
        await engine.store_many([NewItem(text, kind) for kind, text in NOTES])
        memory = _Engine(engine, writable=True)

        async def start(current: int, objective: str, gate: PushGate | None = GATE) -> int:
            (workspace / "PROMPT.md").write_text(objective, encoding="utf-8")
            with anyio.fail_after(60):
                event = read_payload(payload(workspace, "post.iteration.start", current))
                report = await handle(event, memory, max_items=5, gate=gate)
            return report.gated

        gated = await start(1, UNANSWERED)
        assert _managed(workspace) == []
        found = await engine.search(UNANSWERED, max_items=5)
        # A pull finds the store's closest items; the push held every one back.
        assert found.items and gated == len(found.items)
        await start(2, BROKER)
        assert any(ANSWER in entry for entry in _managed(workspace))
        # The default model's loop gate is none: what the search returns, as before.
        await start(3, UNANSWERED, gate=Settings.load(None).push_gate("loop"))
        assert len(_managed(workspace)) == len(found.items)
