"""Generic actor runtime: bounded inboxes, supervised restarts, health.

Knows nothing of context; the actors in ``ralph_context.actors`` build on it.
"""

from __future__ import annotations

from ralph_context.runtime.actor import Actor, Envelope, NotConfigured, PermanentFailure
from ralph_context.runtime.foreground import Foreground
from ralph_context.runtime.health import ActorState, Health, HealthSnapshot
from ralph_context.runtime.supervisor import Supervisor

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
