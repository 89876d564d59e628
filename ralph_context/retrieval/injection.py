"""How retrieved context is written into a prompt: one ``### [TYPE]`` block per item.

One format for every face (the MCP ``Search`` prompt, the Ralph hook), so an agent sees the
same shape whichever way its memory arrived.
"""

from __future__ import annotations

from collections.abc import Sequence

from ralph_context.models import RetrievedItem

__all__ = ["CONTEXT_HEADING", "NO_RESULTS", "context_section", "format_results"]

NO_RESULTS = "(no relevant context found)"
# The heading the Ralph hook puts above the injected items (the seed's injection format).
CONTEXT_HEADING = "## Relevant Context from Previous Iterations"


def format_results(items: Sequence[RetrievedItem]) -> str:
    """Retrieved items as ``### [TYPE]`` blocks, best first."""
    if not items:
        return NO_RESULTS
    return "\n\n".join(
        f"### [{hit.item.content_type.value.upper()}]\n{hit.item.content}" for hit in items
    )


def context_section(items: Sequence[RetrievedItem]) -> str:
    """The section appended to an iteration's prompt; empty when there is nothing to add,
    so a loop without memory gets its prompt unchanged."""
    if not items:
        return ""
    return f"{CONTEXT_HEADING}\n\n{format_results(items)}"
