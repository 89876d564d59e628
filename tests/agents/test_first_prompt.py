"""The first prompt of a session gets memory: with no server yet, the hook starts one and
answers from the store read-only meanwhile (``agents.cold``: the text tier, the server's
own push gate and renderer), instead of nothing because the server is starting."""

from __future__ import annotations

import json
from pathlib import Path

from ralph_context.integrations.agents.hook import COLD_ENV
from ralph_context.server.agents.project import read_server
from tests.agents.payloads import prompt
from tests.agents.test_hook import hook, traced
from tests.cli.test_cli import cli

NOTE = "The flaky login test waits on the redis lock; run it with REDIS_URL set to the container"
# A bound on the read-only answer for a loaded machine (imports alone took 5-9 s at load 18);
# the hook's own default is 4 s, under the 5 s timeout init writes for the agents.
LOADED = "240"


def test_the_first_prompt_of_a_fresh_project_pushes_its_stored_note(project: Path) -> None:
    config = project / "ralph.yaml"
    config.write_text("learning:\n  mcp_context:\n    storage:\n      path: .agent/context\n")
    cli("store", NOTE, "--type", "skill", "--config", str(config))
    assert read_server(project) is None  # nothing serves the store: the CLI has exited

    trace = project.parent / "trace.jsonl"
    question = prompt(project, "why does the login test flake on the redis lock?")
    done = hook(
        "claude",
        json.dumps(question).encode(),
        project,
        RALPH_CONTEXT_HOOK_TRACE=str(trace),
        **{COLD_ENV: LOADED},
    )

    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "UserPromptSubmit"
    assert NOTE in answer["additionalContext"]
    (line,) = traced(trace)
    assert str(line["action"]).startswith("server starting; read-only, prompt: 1 items")
    assert "tier text" in str(line["action"])


def test_a_prompt_no_note_answers_gets_nothing_from_the_read_only_answer(project: Path) -> None:
    config = project / "ralph.yaml"
    config.write_text("learning:\n  mcp_context:\n    storage:\n      path: .agent/context\n")
    cli("store", NOTE, "--type", "skill", "--config", str(config))

    question = prompt(project, "write a haiku about autumn")
    done = hook("claude", json.dumps(question).encode(), project, **{COLD_ENV: LOADED})

    assert (done.returncode, done.stdout) == (0, b""), done.stderr
