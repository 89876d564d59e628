"""Who recorded an item: the loop's own hooks, the CLI, an MCP client by name, an import.

Memory is pushed into prompts, so a model and a person must be able to tell the loop's own
record from what any client of the server wrote. Each adapter says who it is around the
engine calls it makes (:func:`recorded_by`); the engine stamps the item's
``metadata["recorded_by"]`` from it when it builds the item, overwriting whatever the
caller put under that key, so a client cannot claim another's name. An import is always
``import``, whatever the file says.

A context variable rather than an argument: the stamp is taken where items are built (one
place, ``Wiring.build_item``), and every face reaches it through the facade's existing
calls; tasks started inside the block (a hook's capture stored after its answer) inherit it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the models' layer: only a type here
    from ralph_context.models import ContextItem

__all__ = [
    "API",
    "CLI",
    "CLIENT_NAMES",
    "IMPORT",
    "LIFECYCLE",
    "RALPH_LOOP",
    "RALPH_V2",
    "RECORDED_BY",
    "SKILLBOOK",
    "agent_hook",
    "current",
    "mcp_client",
    "recorded_by",
    "stamped",
]

# The metadata key the engine owns.
RECORDED_BY = "recorded_by"

API = "python"  # the engine called in process by the user's own code
CLI = "cli"
IMPORT = "import"
LIFECYCLE = "lifecycle"
RALPH_LOOP = "ralph loop"  # the Ralph 1.x hook, in process
RALPH_V2 = "ralph v2 hook"
SKILLBOOK = "skillbook"  # the project's ACE skillbook file, kept in step
_MAX_NAME = 60

_ORIGIN: ContextVar[str] = ContextVar("ralph_context_origin", default=API)


def agent_hook(client: str) -> str:
    """The coding agent's own hook (``claude hook``, ``codex hook``)."""
    return f"{_name(client)} hook"


# The names this package's own MCP clients give: the CLI asking the server that holds the
# store, the Ralph hooks reaching a running server.
CLIENT_NAMES = {
    "ralph-context-cli": CLI,
    "ralph-context-ralph": RALPH_LOOP,
    "ralph-context-ralph-v2": RALPH_V2,
}


def mcp_client(name: str | None) -> str:
    """An MCP client, by the name it gave (``initialize``'s ``clientInfo``): one of this
    package's own clients by its part's name, any other as ``mcp:<name>``, so it never
    reads as the loop's own record. (Only the owner reaches the server, so a name is the
    owner's program's word; what an agent is talked into storing still reads ``mcp:``.)"""
    if name in CLIENT_NAMES:
        return CLIENT_NAMES[name]
    return f"mcp:{_name(name or 'unnamed')}"


def _name(text: str) -> str:
    kept = "".join(c for c in text if c.isalnum() or c in " ._-/@+")
    return " ".join(kept.split())[:_MAX_NAME] or "unnamed"


@contextmanager
def recorded_by(who: str) -> Iterator[None]:
    """Within the block, items built are recorded as ``who``'s."""
    token = _ORIGIN.set(who)
    try:
        yield
    finally:
        _ORIGIN.reset(token)


def stamped(item: ContextItem) -> ContextItem:
    """``item`` with its recorder in ``metadata["recorded_by"]``: who :func:`current` says,
    over whatever the caller's metadata put there."""
    metadata = {**item.metadata, RECORDED_BY: current()}
    return item.model_copy(update={"metadata": metadata})


def current() -> str:
    """Who the items built now are recorded by (``python`` when no adapter said)."""
    return _ORIGIN.get()
