"""``agents:``: what the Claude Code and Codex hooks push and keep
(``ralph_context.integrations.agents``).

Each behaviour has its own switch, so a user who wants the memory but not, say, every
command's output stored turns that one off; ``enabled: false`` turns every hook into a
no-op (the hooks stay wired, and answer with nothing).
"""

from __future__ import annotations

from pydantic import Field

from ralph_context.config.section import Section

__all__ = ["AgentsSettings"]


class AgentsSettings(Section):
    """Budgets and switches of the agents' hooks, and the life of their shared server."""

    enabled: bool = True
    # SessionStart: the open task, unresolved recent errors, fixes and top skills.
    session_brief: bool = True
    session_budget_tokens: int = Field(default=800, ge=50, le=20_000)
    # UserPromptSubmit: what memory knows about the prompt (nothing when nothing passes).
    prompt_context: bool = True
    prompt_budget_tokens: int = Field(default=1200, ge=50, le=20_000)
    # PostToolUseFailure: store the failure; answer with how it was fixed before.
    capture_failures: bool = True
    # PostToolUse: commands with their output, edits as file notes; fixes linked to errors.
    capture_commands: bool = True
    capture_edits: bool = True
    # Stop: the turn as an iteration (its last answer as the summary).
    record_turns: bool = True
    # Characters kept of a command's output or an error: the start and the end.
    max_captured_chars: int = Field(default=2000, ge=200, le=50_000)
    # The project's shared server (started by the first hook) exits after this long idle.
    # (At least 2: an agent's open MCP entry says it is there every minute.)
    idle_exit_minutes: float = Field(default=30.0, ge=2, le=7 * 24 * 60, allow_inf_nan=False)
