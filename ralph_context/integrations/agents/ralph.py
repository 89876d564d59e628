"""Inside a Ralph v2 iteration, Ralph's own memory injection wins over the agent's hooks.

With ``init --ralph v2 --agent claude`` both are wired, and since Ralph 2.9.3 its Claude
sessions load the project's ``.claude/settings.json``: every iteration starts a Claude
session whose ``SessionStart`` and ``UserPromptSubmit`` hooks would put in front of the
model what our v2 hook already wrote into ``.ralph/agent/memories.md`` for that iteration
(Ralph injects it into the prompt), and whose ``Stop`` would record the iteration the v2
hook records from Ralph's events. So within an iteration those three events defer to the
v2 hook, and the Claude hook does the rest: the moments Ralph has no hook for
(``PostToolUseFailure``: how this error was fixed before; ``PostToolUse`` capture).

Why this way round, and not the v2 set-up dropping its injection: ``memories.md`` works
for every Ralph backend, is cut to Ralph's own ``memories.budget``, and is queried from the
loop's tasks and scratchpad, which say more about the next step than the prompt Ralph
builds around them. Outside Ralph (a person's own ``claude`` session in the same project)
nothing is deferred.

The same holds for Codex as Ralph's backend (``cli.backend: codex``), whose project hooks
fire in its iterations once trusted: ``memories.md`` reaches any backend's prompt.

An iteration is recognised by ``RALPH_WORKSPACE_ROOT``, which Ralph v2 sets for the agents
it starts (and Claude Code passes on to its hooks), whose ``ralph.yml`` runs our v2 hook:
when it does not (memories or hooks off, or only the Claude hooks set up), the Claude hook
is the only injector and defers to nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["DEFERRED_EVENTS", "WORKSPACE_ENV", "defers_to_ralph", "v2_hook_wired"]

WORKSPACE_ENV = "RALPH_WORKSPACE_ROOT"
DEFERRED_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "Stop"})


def defers_to_ralph(event: str, environ: Mapping[str, str]) -> bool:
    """Whether the agent hook leaves ``event`` to Ralph v2's hook in this process's loop."""
    if event not in DEFERRED_EVENTS:
        return False
    workspace = environ.get(WORKSPACE_ENV)
    return workspace is not None and workspace != "" and v2_hook_wired(Path(workspace))


def v2_hook_wired(workspace: Path) -> bool:
    """Whether ``workspace/ralph.yml`` runs our v2 hook with memories injected, as
    ``init --ralph v2`` writes it (read as Ralph reads it; unreadable means no)."""
    import yaml

    from ralph_context.integrations.ralph_v2.setup import HOOK_NAME, RALPH_YML

    try:
        document = yaml.safe_load((workspace / RALPH_YML).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    if not isinstance(document, dict):
        return False
    memories = document.get("memories")
    hooks = document.get("hooks")
    if not isinstance(memories, dict) or not isinstance(hooks, dict):
        return False
    if memories.get("enabled") is not True or memories.get("inject", "auto") != "auto":
        return False
    events = hooks.get("events")
    if hooks.get("enabled") is not True or not isinstance(events, dict):
        return False
    return any(
        isinstance(spec, dict) and spec.get("name") == HOOK_NAME
        for specs in events.values()
        if isinstance(specs, list)
        for spec in specs
    )
