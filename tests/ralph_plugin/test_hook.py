"""The hook inside the real Ralph loop: context reaches later prompts, results are stored."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio
from ralph_orchestrator.adapters.base import ToolResponse

from ralph_context import Engine
from ralph_context.embeddings.local import LocalEmbedder, Vectors
from ralph_context.models import ContextType, RetrievalResult, Tier
from ralph_context.rendering import CONTEXT_HEADING
from ralph_context_ralph import attach
from tests.helpers import Loader, SettingsFactory
from tests.ralph_plugin.ralph_host import make_orchestrator, run_attached

TASK = (
    "# Fix the nightly invoice export\n\n"
    "The nightly invoice export job crashes while writing the CSV file. "
    "Find the cause and fix it.\n"
)
FACT = (
    "Found the likely cause: invoice_export.py opens the CSV file with encoding='ascii' "
    "at line 88, so customer names with accents cannot be written."
)
UNRELATED = (
    "Side note from the design channel: the summer marketing banner should use the teal "
    "palette from brand guide v3, and the logo must sit on the left."
)
SCRIPT = [
    FACT,
    UNRELATED,
    "Reproduced the crash locally: the invoice export fails with UnicodeEncodeError on the "
    "customer name 'Zoë Müller' when the CSV row is written.",
    "Changed the CSV writer in invoice_export.py to utf-8 and added a regression test for "
    "accented customer names; the export now runs through.",
]


def test_a_fact_from_iteration_1_reaches_iteration_4_and_noise_does_not(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings()
    orchestrator, adapter = make_orchestrator(ralph_workdir, TASK, SCRIPT, iterations=4)
    handle = run_attached(orchestrator, Engine(settings, model_loader=shared_model))

    assert len(adapter.prompts) == 4
    first, *_, fourth = adapter.prompts
    assert CONTEXT_HEADING not in first  # nothing stored yet
    assert fourth.startswith(TASK)
    section = fourth[len(TASK) :]
    assert CONTEXT_HEADING in section
    assert FACT in section
    assert "### [OUTPUT]" in section
    assert "teal palette" not in section
    assert [r.iteration for r in handle.tiers] == [1, 2, 3, 4]
    assert {r.tier for r in handle.tiers} == {Tier.SEMANTIC}

    async def stored() -> None:
        async with Engine(settings, model_loader=shared_model) as engine:
            history = await engine.recent_iterations(10)
            assert sorted(r.iteration for r in history) == [1, 2, 3, 4]
            assert all(r.success for r in history)
            found = await engine.search(FACT, context_types=[ContextType.OUTPUT])
            (fact,) = [hit.item for hit in found.items if hit.item.content == FACT]
            assert fact.metadata == {
                "iteration": 1,
                "adapter": "claude",
                "recorded_by": "ralph loop",
            }
            assert fact.created_iteration == 1

    anyio.run(stored)


def test_a_failed_iteration_is_stored_as_an_error_and_steers_the_next_prompt(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    settings = make_settings()
    error = "pytest: 3 failed — ImportError: cannot import name 'render_invoice' from billing"
    script = [
        ToolResponse(success=False, output="", error=error),
        "Looked at billing/__init__.py: render_invoice was renamed to render_invoice_pdf.",
        "Updated the import in the export job; the test suite passes again.",
    ]
    orchestrator, adapter = make_orchestrator(ralph_workdir, TASK, script, iterations=3)
    run_attached(orchestrator, Engine(settings, model_loader=shared_model))

    assert len(adapter.prompts) == 3
    # Under its heading, the loop named as its recorder, the text on the one line below.
    assert re.search(
        rf"### \[ERROR\] \(ralph loop, [^)]+\)\n{re.escape(error)}", adapter.prompts[1]
    )

    async def stored() -> None:
        async with Engine(settings, model_loader=shared_model) as engine:
            first = await engine.iteration(1)
            assert not first.success and first.error == error

    anyio.run(stored)


class _CountingModel:
    """The shared model, every text it embeds logged (the model is shared between tests:
    wrapped, not patched)."""

    def __init__(self, model: LocalEmbedder) -> None:
        self._model = model
        self.embedded: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def embed(
        self,
        texts: Sequence[str],
        batch_size: int,
        *,
        query: bool = False,
        request_size: int | None = None,
    ) -> Vectors:
        self.embedded.extend(texts)
        return self._model.embed(texts, batch_size, query=query, request_size=request_size)


def test_the_next_query_is_embedded_while_the_result_is_stored(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """Ralph asks for the next prompt as soon as the result is stored: the retrieval it
    makes finds its query's vector made, whether the iteration failed or not."""
    model = _CountingModel(shared_model(make_settings().embeddings))
    engine = Engine(make_settings(), model_loader=lambda _s: cast(LocalEmbedder, model))
    during_search: list[list[str]] = []
    search = engine.search

    async def counted(query: str, **options: Any) -> RetrievalResult:
        before = len(model.embedded)
        try:
            return await search(query, **options)
        finally:
            during_search.append(model.embedded[before:])

    engine.search = counted  # type: ignore[method-assign]
    failed = ToolResponse(success=False, output="", error="ImportError: no module named billing")
    orchestrator, _ = make_orchestrator(
        ralph_workdir, TASK, [FACT, failed, UNRELATED, FACT], iterations=4
    )
    handle = run_attached(orchestrator, engine)
    assert [r.tier for r in handle.tiers] == [Tier.SEMANTIC] * 4
    # The first retrieval embeds its query; the next three find theirs already made.
    assert len(during_search) == 4
    assert len(during_search[0]) == 1
    assert during_search[1:] == [[], [], []]
    # Each text was embedded once: the output's vector was not made twice either.
    assert len(model.embedded) == len(set(model.embedded))


def test_detach_restores_ralph_and_stops_the_engine(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    orchestrator, adapter = make_orchestrator(ralph_workdir, TASK, SCRIPT, iterations=1)
    manager = orchestrator.context_manager
    engine = Engine(make_settings(), model_loader=shared_model)
    handle = attach(orchestrator, engine)
    assert engine.running
    assert "get_prompt" in vars(manager) and "aexecute" in vars(adapter)
    handle.detach()
    assert not engine.running
    assert "get_prompt" not in vars(manager) and "aexecute" not in vars(adapter)
    assert manager.get_prompt() == TASK
