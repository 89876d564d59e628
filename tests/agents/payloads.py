"""Hook payloads shaped like those Claude Code 2.1.332 and Codex 0.171.0 send (fields as
captured from real sessions; values our own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SESSION = "ab96d860-7c35-4883-b362-067d2c28214f"


def payload(event: str, cwd: Path, session: str = SESSION, **fields: Any) -> dict[str, Any]:
    """A payload of ``event`` (common fields first)."""
    return {
        "session_id": session,
        "transcript_path": f"/home/user/.claude/projects/-proj/{session}.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def failed(cwd: Path, command: str, error: str, session: str = SESSION) -> dict[str, Any]:
    """Claude Code's ``PostToolUseFailure`` for a Bash command that exited 1."""
    return payload(
        "PostToolUseFailure",
        cwd,
        session,
        tool_name="Bash",
        tool_input={"command": command, "description": "run it"},
        tool_use_id="toolu_0002",
        error=f"Exit code 1\n{error}",
        is_interrupt=False,
        duration_ms=170,
    )


def ran(cwd: Path, command: str, stdout: str = "", session: str = SESSION) -> dict[str, Any]:
    """Claude Code's ``PostToolUse`` for a Bash command that succeeded."""
    return payload(
        "PostToolUse",
        cwd,
        session,
        tool_name="Bash",
        tool_input={"command": command, "description": "run it"},
        tool_response={"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False},
        tool_use_id="toolu_0003",
        duration_ms=38,
    )


def prompt(cwd: Path, text: str, session: str = SESSION) -> dict[str, Any]:
    return payload("UserPromptSubmit", cwd, session, prompt=text)


EXTRA: dict[str, dict[str, Any]] = {
    "SessionStart": {"source": "startup"},
    "UserPromptSubmit": {"prompt": "Check the import."},
    "PostToolUse": {
        "tool_name": "Bash",
        "tool_input": {"command": "echo ok", "description": "run it"},
        "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
        "tool_use_id": "toolu_0002",
        "duration_ms": 38,
    },
    "PostToolUseFailure": {
        "tool_name": "Bash",
        "tool_input": {"command": "python3 -c 'import zz'", "description": "run it"},
        "tool_use_id": "toolu_0002",
        "error": "Exit code 1\nModuleNotFoundError: No module named 'zz'",
        "is_interrupt": False,
        "duration_ms": 170,
    },
    "Stop": {"stop_hook_active": False, "last_assistant_message": "Done."},
    "PreCompact": {"trigger": "auto", "custom_instructions": ""},
    "SessionEnd": {"reason": "other"},
}
