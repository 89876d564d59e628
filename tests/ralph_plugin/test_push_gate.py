"""Ralph 1.x's section carries only what passes the push gate, inside the real loop: a task
no note answers runs with its prompt untouched (the search, a pull, still finds the store's
closest items); a related task's prompt gains its note."""

from __future__ import annotations

from pathlib import Path

import anyio

from ralph_context import Engine
from ralph_context.engine import NewItem
from ralph_context.models import Tier
from ralph_context.rendering import CONTEXT_HEADING
from tests.agents.test_push_gate import ANSWER, NOTES
from tests.helpers import Loader, SettingsFactory
from tests.ralph_plugin.ralph_host import make_orchestrator, run_attached

UNANSWERED = "# Spanish errors\n\nTranslate the error messages in the API responses into Spanish.\n"
RELATED = (
    "# Fix the email worker\n\nThe email worker cannot reach its broker: celery gets "
    "connection refused on localhost:6379 when we run docker compose. Fix it.\n"
)


def test_a_task_no_note_answers_keeps_its_prompt_and_a_related_task_gets_its_note(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings()

    async def remember() -> int:
        async with Engine(settings, model_loader=shared_model) as engine:
            await engine.store_many([NewItem(text, kind) for kind, text in NOTES])
            return len((await engine.search(UNANSWERED)).items)

    pulled = anyio.run(remember)
    orchestrator, adapter = make_orchestrator(ralph_workdir, UNANSWERED, ["Done."], iterations=1)
    handle = run_attached(orchestrator, Engine(settings, model_loader=shared_model))
    assert pulled > 0  # a pull answers with the closest notes; the push held them back
    assert adapter.prompts == [UNANSWERED]
    ((tier, items),) = [(record.tier, record.items) for record in handle.tiers]
    assert (tier, items) == (Tier.SEMANTIC, 0)

    orchestrator, adapter = make_orchestrator(ralph_workdir, RELATED, ["Fixed."], iterations=1)
    run_attached(orchestrator, Engine(settings, model_loader=shared_model))
    (prompt,) = adapter.prompts
    assert prompt.startswith(RELATED) and CONTEXT_HEADING in prompt and ANSWER in prompt
