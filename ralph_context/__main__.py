"""The ``ralph-context`` console script (and ``python -m ralph_context``).

An agent's hook (``ralph-context hook claude`` / ``hook codex``) is a process per prompt
and per tool call with a 250 ms budget, so it is dispatched here before the CLI's imports
(Typer, rich, the settings: ~0.6 s): it needs only the standard library
(``agents.hook``). Every other command goes through the Typer app in ``cli``.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

_AGENT_HOOKS = ("claude", "codex")


def main() -> None:
    """Console-script entry point."""
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "hook" and args[1] in _AGENT_HOOKS:
        try:
            from ralph_context.integrations.agents.hook import main as agent_hook
        except Exception:  # a broken install must not fail the agent's prompt either
            return
        agent_hook(args[1])
        return
    # Before any thread starts (an agent's hook, above, is short-lived and stays as it is).
    from ralph_context.runtime.heap import limit_malloc_arenas

    limit_malloc_arenas()
    from ralph_context.cli import main as cli

    cli()


if __name__ == "__main__":
    main()
