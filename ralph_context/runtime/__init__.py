"""Generic actor runtime: bounded inboxes, supervised restarts, health.

Knows nothing of context; the actors in ``ralph_context.actors`` build on it.

Every name is loaded on first use: ``__main__`` imports ``runtime.heap`` (standard library
only) before any command, and the supervisor and the actor pull in anyio, tenacity and
structlog, which a command that asks the running server (``stats`` beside it) or prints
``--version`` never needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ralph_context.runtime.actor import Actor, Envelope, NotConfigured, PermanentFailure
    from ralph_context.runtime.foreground import Foreground
    from ralph_context.runtime.health import ActorState, Health, HealthSnapshot
    from ralph_context.runtime.supervisor import Supervisor

_HOMES: dict[str, str] = {
    **dict.fromkeys(
        ("Actor", "Envelope", "NotConfigured", "PermanentFailure"), "ralph_context.runtime.actor"
    ),
    "Foreground": "ralph_context.runtime.foreground",
    **dict.fromkeys(("ActorState", "Health", "HealthSnapshot"), "ralph_context.runtime.health"),
    "Supervisor": "ralph_context.runtime.supervisor",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ralph_context.runtime' has no attribute {name!r}")
    return getattr(import_module(home), name)


__all__ = [
    "Actor",
    "ActorState",
    "Envelope",
    "Foreground",
    "Health",
    "HealthSnapshot",
    "NotConfigured",
    "PermanentFailure",
    "Supervisor",
]
