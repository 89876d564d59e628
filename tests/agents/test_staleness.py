"""The agents' hooks check memory against the code before pushing it, in a real git
repository with a real engine: after a file is deleted (and the deletion committed) the
items about it are no longer pushed, an item about a rewritten file is pushed with the file
named as changed (after the others), one about an untouched file as it was; and when a
failure fixed once comes back and is fixed again, the newer fix is what the failure hook
and the prompt hook give."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from ralph_context import origin
from ralph_context.config.agents import AgentsSettings
from ralph_context.engine import Engine
from ralph_context.server.agents.events import FIX_TAG, AgentEvents
from tests.agents.payloads import failed, payload, prompt, ran
from tests.agents.test_events import handled
from tests.git_repo import CHANGED, DELETED, NOTES, UNCHANGED, move_the_code, start_the_code
from tests.helpers import Loader, SettingsFactory

pytestmark = pytest.mark.model

QUESTION = "How does the invoice import handle headers, its timeout and the CSV delimiter?"


@pytest.fixture
async def engine(
    project: Path,
    make_settings: SettingsFactory,
    shared_model: Loader,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Engine]:
    start_the_code(project)
    monkeypatch.chdir(project)  # the agents' server runs in the project's top folder
    async with Engine(make_settings(), model_loader=shared_model) as opened:
        yield opened


def _line(text: str, content: str) -> str:
    (line,) = [line for line in text.splitlines() if content in line]
    return line


async def test_deleted_code_is_not_pushed_changed_code_is_marked_last_unchanged_as_it_was(
    engine: Engine, project: Path
) -> None:
    with origin.recorded_by(origin.agent_hook("claude")):
        for note in NOTES:
            await engine.store(note, "file")
    async with anyio.create_task_group() as group:
        events = AgentEvents(engine, AgentsSettings(), group)
        ((before, _),) = await handled(events, prompt(project, QUESTION, "s1"))
        assert all(note in before for note in NOTES), before
        assert "changed" not in before and "deleted" not in before

        move_the_code(project)

        ((after, action),) = await handled(events, prompt(project, QUESTION, "s2"))
        assert DELETED not in after and "1 about deleted code" in action
        changed, unchanged = _line(after, CHANGED), _line(after, UNCHANGED)
        assert "src/config.py changed just now]" in changed
        assert "changed" not in unchanged.split("]")[0]
        lines = after.splitlines()
        assert lines.index(unchanged) < lines.index(changed)  # ranked down

        ((brief, _),) = await handled(events, payload("SessionStart", project, "s3"))
        assert "legacy_parser" not in brief
        group.cancel_scope.cancel()
    # Still found by a search (a pull), which says what happened to it.
    found = await engine.search(DELETED, min_score=0.0)
    assert DELETED in [hit.item.content for hit in found.items]


ERROR = "WidgetManifestError: the zorblax manifest is missing from widgets/"
FIRST_FIX = "touch widgets/zorblax.manifest"
SECOND_FIX = "python3 tools/regenerate_manifest.py --all"


async def test_a_newer_fix_of_the_same_failure_replaces_the_older_one(
    engine: Engine, project: Path
) -> None:
    async with anyio.create_task_group() as group:
        events = AgentEvents(engine, AgentsSettings(), group)
        await handled(
            events,
            failed(project, "python3 check.py", f"{ERROR} (after 0.31 s)", "s1"),
            ran(project, FIRST_FIX, session="s1"),
            ran(project, "python3 check.py", "all widgets ok", session="s1"),
        )
        # It comes back (the first fix did not hold) and is fixed another way.
        ((answer, _), *_rest) = await handled(
            events,
            failed(project, "python3 check.py", f"{ERROR} (after 0.42 s)", "s2"),
            ran(project, SECOND_FIX, session="s2"),
            ran(project, "python3 check.py", "all widgets ok", session="s2"),
        )
        assert FIRST_FIX in answer  # the only fix known then
        fixes = (await engine.browse(context_types=["skill"], tags=[FIX_TAG])).items
        assert len(fixes) == 2 and fixes[0].metadata["failure"] == fixes[1].metadata["failure"]

        ((context, action),) = await handled(
            events, failed(project, "python3 check.py", f"{ERROR} (after 0.27 s)", "s3")
        )
        assert SECOND_FIX in context and FIRST_FIX not in context, context
        assert action.endswith("1 fixes given")
        question = "The widget check keeps failing over the zorblax manifest; how was it fixed?"
        ((asked, _),) = await handled(events, prompt(project, question, "s4"))
        assert SECOND_FIX in asked and FIRST_FIX not in asked, asked
        group.cancel_scope.cancel()
