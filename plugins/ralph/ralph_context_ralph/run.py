"""``ralph-context ralph run``: Ralph's loop with memory attached, in one call."""

from __future__ import annotations

from pathlib import Path

from ralph_context import Engine, Settings
from ralph_context.config.owner_token import client_token
from ralph_context_ralph.hook import Handle, attach
from ralph_context_ralph.sources import ContextSource, ServerSource

__all__ = ["run_with_memory"]


def run_with_memory(
    prompt_file: Path,
    *,
    settings: Settings,
    agent: str = "claude",
    max_iterations: int = 100,
    server: str | None = None,
) -> Handle:
    """Build a ``RalphOrchestrator`` for ``prompt_file``, attach memory (the engine in this
    process, or the server at ``server``), run the loop to its end and detach.

    Returns:
        The detached handle: ``handle.tiers`` says which rung served each iteration.

    Raises:
        ValueError: Ralph has no usable adapter for ``agent`` (its own message).
    """
    from ralph_orchestrator.orchestrator import RalphOrchestrator

    orchestrator = RalphOrchestrator(
        str(prompt_file), primary_tool=agent, max_iterations=max_iterations
    )
    source: Engine | ContextSource = (
        ServerSource(server, token=client_token(settings, server)) if server else Engine(settings)
    )
    handle = attach(orchestrator, source, settings=settings)
    try:
        orchestrator.run()
    finally:
        handle.detach()
    return handle
