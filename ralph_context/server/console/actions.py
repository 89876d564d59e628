"""The console's writes: usefulness feedback and forgetting an item.

They reach the engine as ``mark_useful`` and ``forget_context`` would (the same feedback
deltas, the same deletion of rows, vectors, originals and old versions) and leave one audit
line each, as a write through ``/mcp`` does. The gate before them (``app.Console``) has
checked the session, the CSRF token and that the server is not read-only; each returns the
sentence the next page shows.
"""

from __future__ import annotations

from ralph_context._logging import audit_logger
from ralph_context.errors import InvalidInput, ItemNotFound, RalphContextError
from ralph_context.server.console.app import Visit

__all__ = ["feedback", "forget"]

audit_log = audit_logger()


def _audit(visit: Visit, action: str, item_id: str, outcome: str) -> None:
    request = visit.request
    client = request.client.host if request.client else "unknown"
    audit_log.info(
        "audit",
        tool=f"console.{action}",
        namespace=visit.namespace,
        client=client,
        item_id=item_id[:80],
        outcome=outcome,
    )


async def feedback(visit: Visit, form: dict[str, str]) -> str:
    """Helpful (``helpful=1``) or not helpful (anything else) for ``item_id``."""
    item_id = form.get("item_id", "")
    helpful = form.get("helpful") == "1"
    try:
        score = await visit.engine.mark_useful(item_id, helpful, reason="console")
    except (ItemNotFound, InvalidInput) as exc:
        _audit(visit, "mark_useful", item_id, f"refused: {type(exc).__name__}")
        return str(exc)
    _audit(visit, "mark_useful", item_id, "done")
    said = "helpful" if helpful else "not helpful"
    return f"Marked {item_id[:12]} {said}: its usefulness is now {score:.2f}."


async def forget(visit: Visit, form: dict[str, str]) -> str:
    """Forget ``item_id`` everywhere: hot table, archive, original, old versions."""
    item_id = form.get("item_id", "")
    try:
        report = await visit.engine.forget(item_ids=[item_id])
    except RalphContextError as exc:
        _audit(visit, "forget", item_id, f"refused: {type(exc).__name__}")
        return str(exc)
    _audit(visit, "forget", item_id, "done")
    if not report.count:
        return f"No item {item_id[:40]!r} to forget."
    return f"Forgot {item_id[:12]}: it is gone from search, the archive and old versions."
