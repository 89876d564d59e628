"""``ralph-context``: the command line over the engine (``commands.py`` composes the command
groups, one module each; see there).

``ralph_context.cli:main`` and ``ralph_context.cli.app`` are the entry points scripts use.
"""

from __future__ import annotations

from ralph_context.cli.commands import app, main

__all__ = ["app", "main"]
