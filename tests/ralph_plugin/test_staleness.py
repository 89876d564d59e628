"""Ralph 1.x's section is checked against the loop's repository: after a file is deleted and
the deletion committed, the memory about it is no longer in the prompt; one about a
rewritten file is there, marked and after the others; one about an untouched file is as it
was."""

from __future__ import annotations

from pathlib import Path

import anyio

from ralph_context import Engine, Settings
from ralph_context.rendering import CONTEXT_HEADING
from ralph_context_ralph import attach
from tests.git_repo import CHANGED, DELETED, NOTES, UNCHANGED, move_the_code, start_the_code
from tests.helpers import Loader, SettingsFactory
from tests.ralph_plugin.ralph_host import make_orchestrator

TASK = "# Invoice import\n\nFix how the invoice import parses headers, times out and splits CSV.\n"


def _section(ralph_workdir: Path, settings: Settings, shared_model: Loader) -> str:
    orchestrator, _adapter = make_orchestrator(ralph_workdir, TASK, [], iterations=1)
    handle = attach(orchestrator, Engine(settings, model_loader=shared_model))
    try:
        return handle.prompt_with_context(TASK)[len(TASK) :]
    finally:
        handle.detach()


def test_the_section_leaves_out_deleted_code_and_marks_changed_code(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    start_the_code(ralph_workdir)
    settings = make_settings()  # the project root: the loop's folder (ralph_workdir)

    async def store() -> None:
        async with Engine(settings, model_loader=shared_model) as engine:
            for note in NOTES:
                await engine.store(note, "file")

    anyio.run(store)
    before = _section(ralph_workdir, settings, shared_model)
    assert CONTEXT_HEADING in before
    assert all(note in before for note in NOTES), before

    move_the_code(ralph_workdir)

    after = _section(ralph_workdir, settings, shared_model)
    assert DELETED not in after and CHANGED in after and UNCHANGED in after, after
    assert after.index(UNCHANGED) < after.index(CHANGED)  # ranked down
    blocks = after.split("### ")
    (changed,) = [b for b in blocks if CHANGED in b]
    (unchanged,) = [b for b in blocks if UNCHANGED in b]
    assert "src/config.py changed just now" in changed.splitlines()[0]
    assert "changed" not in unchanged.splitlines()[0]
