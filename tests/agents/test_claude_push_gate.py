"""The real ``claude`` binary (headless ``-p``, a scripted local Messages API, the project's
hooks from ``init --agent claude``) over a loop's memory of notes: a prompt no note answers
reaches the model with no memory block at all; a related prompt reaches it with its note."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ralph_context import origin
from ralph_context.config import Settings
from ralph_context.engine import Engine, NewItem
from ralph_context.rendering import HEADER
from ralph_context.server.agents.project import agent_folder
from tests.agents.conftest import wait_for_note
from tests.agents.test_claude_sessions import (
    _ours,
    ask_until,
    claude_project,
    last_message,
    session,
    traced,
)
from tests.agents.test_push_gate import ANSWER, NOTES, RELATED
from tests.helpers import Loader

pytestmark = pytest.mark.model

__all__ = ["claude_project"]  # the fixture, imported for the tests below

EVERYDAY = "rename the variable tmp to order_total in this function"


async def _remember(store: Path, shared_model: Loader) -> None:
    """The notes an agent stored through MCP in earlier work (what a session brief does
    not push unasked: this test is about what a prompt is given)."""
    settings = Settings.load(None).with_overrides(storage={"path": str(store)})
    async with Engine(settings, model_loader=shared_model) as engine:
        with origin.recorded_by(origin.mcp_client("claude-code")):
            await engine.store_many([NewItem(text, kind) for kind, text in NOTES])


def test_a_prompt_no_note_answers_reaches_the_model_bare_and_a_related_one_with_its_note(
    claude_project: Path, shared_model: Loader
) -> None:
    project = claude_project
    anyio.run(_remember, agent_folder(project) / "context", shared_model)
    session(project, "Hello.", ["Hi."])  # its first hook starts the project's server
    wait_for_note(project)
    ask_until(project, "")  # one prompt through the route: the server's first search is done
    bare, turns = session(project, EVERYDAY, ["Renamed."])
    request = turns[0]["messages"][-1]
    assert EVERYDAY in last_message(turns[0])
    assert _ours(request) == [] and HEADER not in last_message(turns[0])
    (action,) = [
        call["action"]
        for call in traced(project)
        if call["session_id"] == bare["session_id"] and call["event"] == "UserPromptSubmit"
    ]
    assert action.startswith("prompt: 0 items") and "under the push gate" in action
    _, turns = session(project, RELATED, ["Set the broker URL."])
    (block,) = _ours(turns[0]["messages"][-1])
    assert ANSWER in block and "Relevant to this prompt" in block
    assert not (agent_folder(project) / "hooks.log").exists()  # no hook failed
