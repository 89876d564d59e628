"""Ralph 1.x's section carries what passes the loop's push gate, inside the real loop: with
one set, a task no note answers runs with its prompt untouched (the search, a pull, still
finds the store's closest items) and a related task's prompt gains its note; the default
model sets none (``config.retrieval.PUSH_GATES``), so the section is what the search
returns, as before."""

from __future__ import annotations

from pathlib import Path

import anyio

from ralph_context import Engine, Settings
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


def test_with_a_loop_gate_an_unanswered_task_keeps_its_prompt_and_a_related_one_its_note(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    prompt_gate = Settings.load(None).push_gate()
    assert prompt_gate is not None
    settings = make_settings(retrieval={"loop_push_gate": prompt_gate.model_dump()})

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


def test_by_default_a_loop_gets_what_the_search_returns(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings()
    assert settings.push_gate("loop") is None

    async def remember() -> None:
        async with Engine(settings, model_loader=shared_model) as engine:
            await engine.store_many([NewItem(text, kind) for kind, text in NOTES])

    anyio.run(remember)
    orchestrator, adapter = make_orchestrator(ralph_workdir, UNANSWERED, ["Done."], iterations=1)
    handle = run_attached(orchestrator, Engine(settings, model_loader=shared_model))
    ((tier, items),) = [(record.tier, record.items) for record in handle.tiers]
    assert tier is Tier.SEMANTIC and items > 0
    assert CONTEXT_HEADING in adapter.prompts[0]
