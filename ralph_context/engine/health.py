"""What ``Engine.health()`` says: each actor's state, the tier a query would be served from
now, the model and store in use, and what the redactor replaced."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ralph_context.models import Tier
from ralph_context.runtime import HealthSnapshot

__all__ = ["EngineHealth"]


@dataclass(frozen=True)
class EngineHealth:
    """Per-actor health, the tier a query would be served from now, and the model in use."""

    actors: dict[str, HealthSnapshot]
    tier: Tier
    model_id: str | None
    store: str
    # Optional actors left off by configuration (no language model set up): down, but the
    # engine is not degraded by their absence.
    not_configured: frozenset[str] = frozenset()
    # Items stored without a vector, awaiting a backfill (None: the store is not open, or
    # is read beside another process's writer).
    without_vector: int | None = None
    # Whether stored texts are redacted (off only by ``redaction.enabled: false``), and the
    # secrets replaced since start, by kind.
    redaction: bool = True
    redacted: Mapping[str, int] = field(default_factory=dict)
    # Why writes are refused while the store is served read-only (a full or unwritable
    # disk: see ``actors.storage.unwritable``); None while writes work.
    write_error: str | None = None

    @property
    def ok(self) -> bool:
        """True when every actor serves all of its work (full semantic retrieval, writes)."""
        return self.tier is Tier.SEMANTIC and self.write_error is None

    def state(self, name: str) -> str:
        """Actor ``name``'s state as reported: ``not_configured`` for an optional part left
        off by configuration (its actor is down by choice; "down" alarmed people who had
        never set one up), ``degraded: read-only`` for one serving part of its work."""
        return "not_configured" if name in self.not_configured else self.actors[name].shown

    @property
    def status(self) -> Literal["healthy", "degraded", "unhealthy"]:
        """``healthy`` when every configured actor serves all of its work, ``degraded``
        when queries fall back to a lower tier or an actor serves only part of its work
        (a store that cannot be written), ``unhealthy`` when nothing can be retrieved."""
        required = [a for n, a in self.actors.items() if n not in self.not_configured]
        if self.tier is Tier.SEMANTIC and all(a.whole for a in required):
            return "healthy"
        return "degraded" if self.tier in (Tier.SEMANTIC, Tier.TEXT) else "unhealthy"
