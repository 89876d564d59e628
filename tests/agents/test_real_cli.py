"""The real Claude Code and Codex binaries (installed by ``.ci/setup`` into ``.agents-cli/``):
their pinned versions run, and a headless ``claude -p`` session against a scripted local
Messages API, in a project where ``init --agent claude`` ran, completes and runs our hook
for each of its events, ``UserPromptSubmit`` included.

Outside CI, a checkout without ``.agents-cli/`` (``bash .ci/setup`` installs it) skips these
tests with the reason; in CI they fail, since CI runs ``.ci/setup`` first.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.agents.conftest import IDLE_EXIT_MINUTES
from tests.agents.fake_anthropic import FakeAnthropic
from tests.cli.test_cli import cli

ROOT = Path(__file__).resolve().parents[2] / ".agents-cli" / "node_modules"
# The binaries npm's platform packages carry (the wrappers in .bin only find them).
CLAUDE = ROOT / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
CODEX = (
    ROOT / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl" / "bin" / "codex"
)


def need(binary: Path) -> Path:
    if not binary.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{binary} is missing: .ci/setup installs it from npm")
        pytest.skip(f"{binary.name} is not installed here (bash .ci/setup installs it)")
    return binary


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """A temp HOME (the CLIs write their state there) and nothing of the caller's agent
    settings or keys."""
    kept = {k: v for k, v in os.environ.items() if k in {"PATH", "LANG", "TMPDIR"}}
    return {**kept, "HOME": str(home), **extra}


def test_the_pinned_claude_and_codex_binaries_run(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    claude = subprocess.run(
        [need(CLAUDE), "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    assert claude.stdout.strip() == "2.1.332 (Claude Code)"
    codex = subprocess.run(
        [need(CODEX), "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    assert codex.stdout.strip() == "codex-cli 0.171.0"


def test_claude_p_runs_a_session_and_our_hook_answers_its_events(
    project: Path, tmp_path: Path
) -> None:
    binary = need(CLAUDE)
    home = tmp_path / "home"
    home.mkdir()
    cli("init", "--project", str(project), "--agent", "claude")
    trace = tmp_path / "trace.jsonl"
    with FakeAnthropic(["The scripted answer."]) as api:
        env = clean_env(
            home,
            ANTHROPIC_BASE_URL=api.url,
            ANTHROPIC_API_KEY="sk-ant-test-not-a-key",
            RALPH_CONTEXT_HOOK_TRACE=str(trace),
            RALPH_CONTEXT_AGENTS__IDLE_EXIT_MINUTES=IDLE_EXIT_MINUTES,
        )
        done = subprocess.run(
            [binary, "-p", "Say something short.", "--output-format", "json"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["is_error"] is False and result["result"] == "The scripted answer."
        prompts = [body for path, body in api.requests if path == "/v1/messages"]
        assert "Say something short." in json.dumps(prompts[0]["messages"])
    calls = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    by_event = {call["event"]: call for call in calls}
    assert {"SessionStart", "UserPromptSubmit", "Stop"} <= set(by_event)
    assert by_event["UserPromptSubmit"]["session_id"] == result["session_id"]
    assert all(call["client"] == "claude" for call in calls)
    assert not (project / ".agent" / "hooks.log").exists()  # no hook failed
