"""``ralph-context init --agent claude|codex``: the project files that wire an agent's hooks
and its MCP entry, planned as edits (``files.FileEdit``) the CLI prints or applies.

- Claude Code: ``.claude/settings.json`` (project hooks; Ralph 2.9.3+ loads them in its
  iterations too) and ``.mcp.json`` (the server as ``ralph-context init`` registers it, over
  stdio as ``serve --shared``: a bridge to the project's server the hooks share).
- Codex: ``.codex/hooks.json`` (the same hooks shape; Codex has no ``PostToolUseFailure``
  and caps ``SessionEnd`` at 3 s) and our ``[mcp_servers.ralph-context]`` block in
  ``.codex/config.toml``. Codex runs project hooks only once a person has trusted them.
- Both: ``.gitignore``'s entry for ``.agent/``, where the store, spool and logs go
  (``gitignore``).

Every plan merges with what is there and is idempotent; with ``remove`` it takes out only
our entries (known by the ``ralph-context hook <client>`` command, the server's name and the
TOML block's markers), and a file init created and only our entries fill is deleted.
Timeouts are the hosts' (seconds), a safety net over the hook's own quick exit: 5 s for the
per-prompt and per-tool events, 10 s where a later slice writes a record, and the hosts' caps
for ``SessionEnd`` (Claude Code documents 1.5 s; Codex caps it at 3 s).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ralph_context.config.token_file import ENV_TOKEN
from ralph_context.integrations.agents.codex_toml import add_block, remove_block
from ralph_context.integrations.agents.files import FileEdit, read_text
from ralph_context.integrations.agents.gitignore import gitignore_edit
from ralph_context.integrations.agents.json_settings import (
    EMPTY,
    HookSpec,
    add_hooks,
    add_server,
    hook_command,
    remove_hooks,
    remove_server,
)
from ralph_context.integrations.mcp_json import HEADERS_HELPER, MCP_JSON, SERVER_NAME

__all__ = ["CLAUDE_HOOKS", "CODEX_HOOKS", "Agent", "installed_script", "plan"]

Agent = Literal["claude", "codex"]
CLAUDE_SETTINGS = Path(".claude") / "settings.json"
CODEX_HOOKS_FILE = Path(".codex") / "hooks.json"
CODEX_CONFIG = Path(".codex") / "config.toml"
# What Claude Code runs for a tool: commands, and the edits a later slice keeps as notes.
_TOOLS = "Bash|Edit|Write|MultiEdit"

CLAUDE_HOOKS = (
    HookSpec("SessionStart", 5),
    HookSpec("UserPromptSubmit", 5),
    HookSpec("PostToolUse", 5, _TOOLS),
    HookSpec("PostToolUseFailure", 5, "Bash"),
    HookSpec("Stop", 10),
    HookSpec("PreCompact", 10),
    HookSpec("SessionEnd", 2),
)
CODEX_HOOKS = (
    HookSpec("SessionStart", 5),
    HookSpec("UserPromptSubmit", 5),
    HookSpec("PostToolUse", 5),
    HookSpec("Stop", 10),
    HookSpec("PreCompact", 10),
    HookSpec("SessionEnd", 3),
)

_JsonEdit = Callable[[Path, str], str]


def installed_script() -> str:
    """This install's ``ralph-context`` (so the agent runs the same version, with no venv
    on its PATH), else the bare name."""
    script = Path(sys.executable).with_name("ralph-context")
    return str(script) if script.exists() else "ralph-context"


def plan(
    project: Path,
    agent: Agent,
    server: dict[str, Any],
    *,
    remove: bool = False,
    script: str | None = None,
) -> tuple[FileEdit, ...]:
    """The edits that wire (or with ``remove``, unwire) ``agent`` in ``project``, for the
    server entry ``server`` (``mcp_json.server_entry``).

    Raises:
        AgentFileInvalid: A file to edit is malformed; the error names it and what is wrong.
    """
    command = hook_command(script or installed_script(), agent)
    server = shared(server)
    if agent == "claude":
        settings = project / CLAUDE_SETTINGS
        return (
            _hooks_file(settings, CLAUDE_HOOKS, command, "claude", remove=remove),
            _json(
                project / MCP_JSON,
                lambda p, t: (
                    remove_server(p, t, SERVER_NAME)
                    if remove
                    else add_server(p, t, SERVER_NAME, server)
                ),
                remove=remove,
            ),
            gitignore_edit(project, remove=remove),
        )
    hooks = project / CODEX_HOOKS_FILE
    return (
        _hooks_file(hooks, CODEX_HOOKS, command, "codex", remove=remove),
        _toml(project / CODEX_CONFIG, codex_server(server), remove=remove),
        gitignore_edit(project, remove=remove),
    )


def shared(entry: dict[str, Any]) -> dict[str, Any]:
    """A stdio entry made ``serve --shared``: the agent's MCP server is then a bridge to the
    project's shared server, which its hooks use too (one writer per store; see
    ``server.agents.bridge``). An HTTP entry already points at a shared server."""
    if entry.get("args") == ["serve"]:
        return {**entry, "args": ["serve", "--shared"]}
    return entry


def codex_server(entry: dict[str, Any]) -> dict[str, Any]:
    """Our ``.mcp.json`` entry in Codex's terms: a command, or a streamable-HTTP ``url``
    (Codex's table has no ``type`` key, and no headers helper: it reads the bearer token
    from ``RALPH_CONTEXT_TOKEN``, which ``ralph-context token owner`` prints)."""
    found = {key: value for key, value in entry.items() if key not in ("type", HEADERS_HELPER)}
    if HEADERS_HELPER in entry:
        found["bearer_token_env_var"] = ENV_TOKEN
    return found


def _hooks_file(
    path: Path, specs: tuple[HookSpec, ...], command: str, agent: Agent, *, remove: bool
) -> FileEdit:
    """The edit of an agent's hooks file (its folder ours to remove when left empty)."""

    def edit(p: Path, text: str) -> str:
        if remove:
            return remove_hooks(p, text, agent)
        return add_hooks(p, text, specs, command, agent)

    return _json(path, edit, remove=remove, owned_dir=path.parent)


def _json(path: Path, edit: _JsonEdit, *, remove: bool, owned_dir: Path | None = None) -> FileEdit:
    before = read_text(path)
    if remove:
        if before is None:
            return FileEdit(path, None, None, owned_dir)
        after = edit(path, before)
        gone = after != before and after.strip() == EMPTY.strip()
        return FileEdit(path, before, None if gone else after, owned_dir)
    return FileEdit(path, before, edit(path, EMPTY if before is None else before), owned_dir)


def _toml(path: Path, entry: dict[str, Any], *, remove: bool) -> FileEdit:
    before = read_text(path)
    owned_dir = path.parent
    if remove:
        if before is None:
            return FileEdit(path, None, None, owned_dir)
        after = remove_block(path, before)
        return FileEdit(path, before, None if after == "" and before != "" else after, owned_dir)
    return FileEdit(path, before, add_block(path, before or "", SERVER_NAME, entry), owned_dir)
