"""What an agent's hook payload says happened: a failed command, a command's output, an
edit, the provenance of it all. Pure functions over the payloads of Claude Code and Codex
(fields as captured from the real CLIs: ``tests/agents/payloads/``), no I/O but reading a
worktree's ``HEAD`` for the branch.

Texts are cut to their start and end (``trim``): an error's cause is usually at its end
(a traceback's last line), a command's result at either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralph_context.models import JsonValue
from ralph_context.server.agents.project import git_dir

__all__ = [
    "Edit",
    "Failure",
    "Ran",
    "command_of",
    "edit_of",
    "failure_of",
    "provenance",
    "ran_of",
    "same_command",
    "trim",
]

_EXIT = re.compile(r"^\s*Exit code (-?\d+)\s*\n?", re.IGNORECASE)
# Tools whose input is a shell command: Claude Code's Bash, Codex's shell tools.
_SHELL_TOOLS = frozenset({"Bash", "shell", "local_shell", "exec_command", "container.exec"})
_EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"})
_MAX_COMMAND_CHARS = 500


@dataclass(frozen=True)
class Failure:
    """A command that failed: what ran, its exit code (if said) and what it printed."""

    command: str
    exit_code: int | None
    error: str


@dataclass(frozen=True)
class Ran:
    """A command that succeeded and what it printed."""

    command: str
    output: str


@dataclass(frozen=True)
class Edit:
    """A file the agent changed, and a short account of the change."""

    path: str
    summary: str


def trim(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: its start and its end around a marker."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head - 7
    return f"{text[:head]}\n[...]\n{text[-tail:]}"


def same_command(command: str) -> str:
    """A command as compared with another: whitespace runs are one space."""
    return " ".join(command.split())[:_MAX_COMMAND_CHARS]


def command_of(payload: dict[str, Any]) -> str | None:
    """The shell command a tool call ran, if it ran one."""
    if payload.get("tool_name") not in _SHELL_TOOLS:
        return None
    given = _dict(payload.get("tool_input")).get("command")
    if isinstance(given, list):  # Codex: argv, often ["bash", "-lc", "<script>"]
        words = [str(word) for word in given]
        if len(words) >= 3 and words[1] in ("-c", "-lc"):
            return same_command(words[2])
        return same_command(" ".join(words))
    return same_command(given) if isinstance(given, str) and given.strip() else None


def failure_of(payload: dict[str, Any]) -> Failure | None:
    """The failed command of a ``PostToolUseFailure`` payload, or of a ``PostToolUse`` whose
    result says it failed (Codex has no failure event: its result carries the exit code)."""
    command = command_of(payload)
    if command is None:
        return None
    if payload.get("hook_event_name") == "PostToolUseFailure":
        error = str(payload.get("error") or "")
        found = _EXIT.match(error)
        code = int(found.group(1)) if found else None
        return Failure(command, code, error[found.end() :] if found else error)
    response = _dict(payload.get("tool_response"))
    code = response.get("exit_code", response.get("exitCode"))
    if isinstance(code, int) and code != 0:
        text = "\n".join(
            str(response.get(key) or "") for key in ("stderr", "stdout", "output")
        ).strip()
        return Failure(command, code, text)
    return None


def ran_of(payload: dict[str, Any]) -> Ran | None:
    """The command a successful ``PostToolUse`` ran, and its output."""
    command = command_of(payload)
    if command is None or failure_of(payload) is not None:
        return None
    response = payload.get("tool_response")
    if isinstance(response, str):
        return Ran(command, response)
    fields = _dict(response)
    parts = [str(fields.get(key) or "") for key in ("stdout", "output", "stderr")]
    return Ran(command, "\n".join(part for part in parts if part.strip()))


def edit_of(payload: dict[str, Any]) -> Edit | None:
    """The file an edit tool changed, with the change in a line or two."""
    tool = payload.get("tool_name")
    if tool not in _EDIT_TOOLS:
        return None
    given = _dict(payload.get("tool_input"))
    path = given.get("file_path") or given.get("notebook_path") or given.get("path")
    if not isinstance(path, str) or not path:
        return None
    if tool == "Write":
        content = str(given.get("content") or "")
        summary = f"wrote {path} ({content.count(chr(10)) + 1} lines)"
    elif tool == "MultiEdit":
        edits = given.get("edits")
        summary = f"edited {path} ({len(edits) if isinstance(edits, list) else 'several'} edits)"
    else:
        old = " ".join(str(given.get("old_string") or "").split())[:160]
        new = " ".join(str(given.get("new_string") or "").split())[:160]
        summary = f"edited {path}: `{old}` -> `{new}`" if old or new else f"edited {path}"
    return Edit(path, summary)


def provenance(client: str, payload: dict[str, Any]) -> dict[str, JsonValue]:
    """Where an item came from: the client, its session, the working folder, the branch."""
    found: dict[str, JsonValue] = {"client": client}
    for key in ("session_id", "cwd"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            found[key] = value[:300]
    cwd = payload.get("cwd")
    branch = _branch(Path(cwd)) if isinstance(cwd, str) and cwd else None
    if branch:
        found["branch"] = branch
    return found


def _branch(cwd: Path) -> str | None:
    """The branch checked out in the worktree holding ``cwd`` (its ``HEAD`` file), if any."""
    try:
        found = git_dir(cwd)
        if found is None:
            return None
        head = (found[1] / "HEAD").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    ref = head.strip().removeprefix("ref: ").removeprefix("refs/heads/")
    return ref[:200] or None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
