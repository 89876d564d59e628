"""The real ``claude`` binary (2.1.332, headless ``-p``) in a project where ``init --agent
claude`` ran, against a scripted local Messages API (``fake_anthropic``), with a temp HOME:

(a) session 1 runs a check that fails with a unique error; session 2 fixes it and runs the
    check again; session 3, a new process, asks about the failure in other words: its
    request to the model holds the error and its fix; session 4 hits the same failure: the
    request after the failure says how it was fixed;
(b) with the project's server hung, or its store unusable, the session completes and every
    hook answers (none failed the session);
(c) over a store of 10,000 items, what is injected stays within the budgets and no item is
    given twice in a session (``--continue`` resumes the same session).
"""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from benchmarks.latency.agent_hook import HungServer
from ralph_context.config import Settings
from ralph_context.engine import Engine
from ralph_context.models import ContextItem, ContextType
from ralph_context.rendering import HEADER
from ralph_context.retrieval.scoring import estimate_tokens
from ralph_context.server.agents.project import (
    ServerNote,
    agent_folder,
    bearer_token,
    read_server,
    write_server,
)
from tests.agents.conftest import IDLE_EXIT_MINUTES, wait_for_note
from tests.agents.fake_anthropic import FakeAnthropic, Reply, Tool
from tests.agents.test_real_cli import CLAUDE, clean_env, need
from tests.cli.test_cli import cli
from tests.helpers import Loader

pytestmark = pytest.mark.model

CHECK = """import pathlib, sys
if not pathlib.Path("widgets/zorblax.manifest").exists():
    sys.exit("ZorblaxManifestError: widgets/zorblax.manifest is missing")
print("widgets ok")
"""
MODEL = Settings.load(None).embeddings.resolved_model_path()
ERROR = "ZorblaxManifestError: widgets/zorblax.manifest is missing"
FIX = "mkdir -p widgets && touch widgets/zorblax.manifest"


@pytest.fixture
def claude_project(project: Path, tmp_path: Path) -> Iterator[Path]:
    need(CLAUDE)
    (project / "check.py").write_text(CHECK, encoding="utf-8")
    cli("init", "--project", str(project), "--agent", "claude")
    (tmp_path / "home").mkdir()
    yield project


def session(
    project: Path, prompt: str, script: Sequence[Reply], *, resume: bool = False
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One ``claude -p`` run: its JSON result and its requests to the model (its turns)."""
    home = project.parent / "home"
    with FakeAnthropic(script) as api:
        env = clean_env(
            home,
            ANTHROPIC_BASE_URL=api.url,
            ANTHROPIC_API_KEY="sk-ant-test-not-a-key",
            RALPH_CONTEXT_HOOK_TRACE=str(project.parent / "trace.jsonl"),
            RALPH_CONTEXT_AGENTS__IDLE_EXIT_MINUTES=IDLE_EXIT_MINUTES,
            # HOME is a temp folder: the model the server loads is the installed one.
            RALPH_CONTEXT_EMBEDDINGS__MODEL_PATH=str(MODEL),
        )
        command = [str(CLAUDE), "-p", prompt, "--output-format", "json", "--allowedTools", "Bash"]
        if resume:
            command.insert(2, "--continue")
        done = subprocess.run(
            command, cwd=project, env=env, capture_output=True, text=True, timeout=240
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["is_error"] is False
        return result, api.turns()


def last_message(turn: dict[str, Any]) -> str:
    """The request's last user or assistant message with the system messages after it.
    The hooks' context arrives as a system message after the prompt; when the project's MCP
    server comes up mid-session (on a fast machine the one the first hook started does),
    Claude Code also appends one announcing its tools after a tool's result."""
    messages = turn["messages"]
    last = max(i for i, m in enumerate(messages) if m.get("role") != "system")
    return json.dumps(messages[last:])


def traced(project: Path) -> list[dict[str, Any]]:
    lines = (project.parent / "trace.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def ask_until(project: Path, text: str, timeout: float = 60) -> str:
    """A prompt through the hook route of the running server (a throwaway session) until
    its answer holds ``text``: the captures behind earlier answers are stored by then."""
    note = read_server(project)
    assert note is not None
    host, port = note.base_url.removeprefix("http://").split(":")
    token = bearer_token(note)  # the store's owner token, as the hooks send it
    end = time.monotonic() + timeout
    answer = ""
    n = 0
    while time.monotonic() < end:
        n += 1
        body = {
            "hook_event_name": "UserPromptSubmit",
            "session_id": f"probe-{n}",
            "cwd": str(project),
            "prompt": "widget check manifest missing fix",
        }
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        connection.request("POST", "/hooks/claude", json.dumps(body), headers)
        answer = str(json.loads(connection.getresponse().read())["context"])
        connection.close()
        if text in answer:
            return answer
        time.sleep(0.5)
    raise AssertionError(f"the server never answered with {text!r}; last answer: {answer!r}")


def test_a_failure_its_fix_and_the_question_in_other_words_across_four_sessions(
    claude_project: Path,
) -> None:
    project = claude_project
    # Session 1: the check fails. The first hook starts the project's server; what the
    # hooks saw before it listened is kept for it.
    first, turns = session(
        project, "Run the widget check.", [Tool("Bash", "python3 check.py"), "It failed."]
    )
    assert ERROR in last_message(turns[1])
    wait_for_note(project)
    # Session 2: the fix, then the check passes.
    session(
        project,
        "Fix the widget check.",
        [Tool("Bash", FIX), Tool("Bash", "python3 check.py"), "Fixed."],
    )
    ask_until(project, FIX)
    # Session 3, a new process, asks in other words: error and fix reach the model.
    third, turns = session(
        project,
        "Earlier the widget verification complained that a manifest file was absent. "
        "How did we resolve that?",
        ["We created the manifest."],
    )
    assert ERROR in last_message(turns[0]) and FIX in last_message(turns[0])
    # Session 4 hits the same failure: the request after it says how it was fixed.
    (project / "widgets" / "zorblax.manifest").unlink()
    fourth, turns = session(
        project, "Run python3 check.py.", [Tool("Bash", "python3 check.py"), "Failed again."]
    )
    messages = [json.dumps(message) for message in turns[1]["messages"]]
    failure = max(i for i, text in enumerate(messages) if "tool_result" in text and ERROR in text)
    told = [i for i, text in enumerate(messages) if FIX in text and "PostToolUseFailure" in text]
    assert told and told[-1] > failure  # the fix, beside the failed tool's result
    ids = {first["session_id"], third["session_id"], fourth["session_id"]}
    assert len(ids) == 3
    events = {(call["session_id"], call["event"]) for call in traced(project)}
    assert (fourth["session_id"], "PostToolUseFailure") in events
    assert not (agent_folder(project) / "hooks.log").exists()


def test_with_the_server_hung_or_the_store_unusable_the_session_completes(
    claude_project: Path,
) -> None:
    project = claude_project
    hung = HungServer()
    try:
        note = ServerNote(f"http://127.0.0.1:{hung.server.getsockname()[1]}", "/mcp", pid=2**22 + 1)
        write_server(project, note)
        result, turns = session(
            project, "Run the widget check.", [Tool("Bash", "python3 check.py"), "It failed."]
        )
    finally:
        hung.close()
    assert result["result"] == "It failed." and len(turns) == 2
    calls = [call for call in traced(project) if call["session_id"] == result["session_id"]]
    assert {call["event"] for call in calls} >= {"SessionStart", "UserPromptSubmit", "Stop"}
    log = (agent_folder(project) / "hooks.log").read_text(encoding="utf-8")
    assert "skipped (TimeoutError" in log
    # The store's folder is a file: no server can open it; the session goes on.
    (agent_folder(project) / "agent-server.json").unlink()
    context = agent_folder(project) / "context"
    context.write_text("not a store", encoding="utf-8")
    result, turns = session(project, "Say hello.", ["Hello."])
    assert result["result"] == "Hello."
    # The server the hooks started may be up by now (on a fast machine it is): it serves
    # with no store (tier none) rather than failing the session; on a slow one it is not.
    if read_server(project) is not None:
        started = (agent_folder(project) / "agent-server.log").read_text(encoding="utf-8")
        assert "tier none" in started and "cannot open the store" in started


async def _fill(store: Path, shared_model: Loader, count: int) -> None:
    """``count`` items of 400 kinds of loop text (vectors of the real model, reused)."""
    settings = Settings.load(None).with_overrides(storage={"path": str(store)})
    topics = [
        text
        for n in range(100)
        for text in (
            f"service {n}: deploy to staging with `make deploy-{n}` from the ops repo",
            f"service {n}: the staging deploy failed with 403 because the vault token expired; "
            f"`vault login` then `make deploy-{n}` again fixed it",
            f"service {n}: its vault token lives under svc/{n} and expires every Monday",
            f"service {n}: the healthcheck endpoint is /healthz on port 80{n % 10}",
        )
    ]
    async with Engine(settings, model_loader=shared_model) as engine:
        vectors = await engine.embed(topics)
        rng = np.random.default_rng(7)
        batch: list[tuple[ContextItem, Any]] = []
        for index in range(count):
            topic = int(rng.integers(0, len(topics)))
            kind = (ContextType.SKILL, ContextType.ERROR, ContextType.OUTPUT)[index % 3]
            item = ContextItem(content=f"{topics[topic]} (note {index})", content_type=kind)
            batch.append((item, vectors[topic]))
            if len(batch) == 2000:
                await engine.store_embedded(batch)
                batch = []
        if batch:
            await engine.store_embedded(batch)


def test_over_10k_items_injections_stay_within_budgets_and_never_repeat_in_a_session(
    claude_project: Path, shared_model: Loader
) -> None:
    project = claude_project
    anyio.run(_fill, agent_folder(project) / "context", shared_model, 10_000)
    session(project, "Hello.", ["Hi."])  # its first hook starts the project's server
    wait_for_note(project)
    prompts = [
        "How do I deploy service 7 to staging?",
        "The staging deploy of service 7 failed with 403, what now?",
        "Remind me how the vault token for service 7 works.",
    ]
    budgets = Settings.load(None).agents
    given: list[str] = []
    opened = ""
    for index, prompt in enumerate(prompts):
        result, turns = session(project, prompt, ["Noted."], resume=index > 0)
        opened = opened or result["session_id"]
        assert result["session_id"] == opened  # --continue: the same session
        blocks = _ours(turns[0]["messages"][-1])
        for block in blocks:
            budget = budgets.session_budget_tokens if index == 0 else budgets.prompt_budget_tokens
            assert estimate_tokens(block) <= max(budget, budgets.prompt_budget_tokens)
        given += re.findall(r"\(note \d+\)", "\n".join(blocks))
    assert len(given) >= 3 and len(given) == len(set(given))  # no item twice in the session
    actions = [c["action"] for c in traced(project) if c["session_id"] == opened]
    assert sum("given before" in a and not a.startswith("prompt: 0") for a in actions) >= 2


def _ours(message: dict[str, Any]) -> list[str]:
    """The texts our hooks injected into a message: each starts with our heading and runs
    to the end of our block."""
    # Claude Code puts each hook's context in a system text as "<Event> hook additional
    # context: <ours>", followed by its own sections ("# Environment", ...).
    ends = r"(?=\n\n# |\n*\w+ hook additional context:|</|\x00|\Z)"
    pattern = re.escape(HEADER) + r".*?" + ends
    return [text.strip() for text in re.findall(pattern, _texts(message), re.DOTALL)]


def _texts(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [str(block.get("text", "")) for block in content if isinstance(block, dict)]
    return "\n\x00".join(parts)
