"""Which items a session brief may push unasked: those with evidence behind them.

A brief reaches every new session whatever its prompt, so an item there is a standing
injection: one ``store_context(type=skill)`` from any MCP client would be in every
session's prompt from then on. The brief therefore holds only items the loop itself
recorded (the agents' hooks, the Ralph loop, the CLI, the user's own code, the project's
skillbook file) or that earned their place: retrieved for a prompt and marked useful
(usefulness above its starting value). Anything else (an MCP client's note, an import, an
item from before recorders were kept) still answers the prompts it is relevant to, with its
recorder named on its line; it waits for evidence before it is pushed unasked.
"""

from __future__ import annotations

from ralph_context import origin
from ralph_context.models import ContextItem

__all__ = ["has_evidence", "own_record"]

# An item starts at this usefulness (the model's default); mark_useful moves it.
_STARTING_USEFULNESS: float = ContextItem.model_fields["usefulness_score"].default
_OWN = frozenset({origin.API, origin.CLI, origin.RALPH_LOOP, origin.RALPH_V2, origin.SKILLBOOK})


def own_record(item: ContextItem) -> bool:
    """Whether the loop itself recorded ``item`` (not an MCP client, not an import)."""
    recorded = item.metadata.get(origin.RECORDED_BY)
    if not isinstance(recorded, str):
        return False
    return recorded in _OWN or recorded.endswith(" hook")


def has_evidence(item: ContextItem) -> bool:
    """Whether ``item`` may be pushed without a prompt asking for it."""
    return own_record(item) or item.usefulness_score > _STARTING_USEFULNESS + 1e-9
