"""The archive's part in a semantic search: when the live store's best match is weak
(below ``retrieval.archive_search_below``), the archive's nearest items are searched too and
join the pool, unless a live candidate turns out similar enough after all."""

from __future__ import annotations

from collections.abc import Sequence

from ralph_context._logging import get_logger
from ralph_context.actors.storage.actor import StorageActor, VectorHit
from ralph_context.embeddings.local import Vectors
from ralph_context.errors import StoreError
from ralph_context.retrieval.candidate_pool import ranked_behind
from ralph_context.retrieval.scoring import Candidate
from ralph_context.storage.table.filters import ItemFilter

__all__ = ["archive_hits", "archived_candidates"]

log = get_logger("ralph_context.retrieval")


async def archive_hits(
    storage: StorageActor,
    vector: Vectors,
    best: float,
    limit: int,
    where: ItemFilter,
    below: float,
) -> list[VectorHit]:
    """The archive's nearest items when the best live similarity ``best`` is under
    ``below``, too weak to trust alone; an archive that cannot be read costs the query only
    these."""
    if limit <= 0 or storage.archive_empty or best >= below:
        return []
    try:
        return await storage.archive_search(vector, limit, where)
    except StoreError as exc:
        log.warning("archive_not_searched", error=str(exc))
        return []


def archived_candidates(
    pool: Sequence[Candidate], hits: list[VectorHit], below: float
) -> list[Candidate]:
    """Archived candidates, unless a live one (the full-text half's too) is similar
    enough after all (at least ``below``)."""
    if not hits or max((c.similarity for c in pool), default=-1.0) >= below:
        return []
    live = {c.item.id for c in pool}
    # No lexical part (None, not 0): the archive has no full-text index, so its items
    # are matched by cosine alone rather than marked as sharing no word with the query.
    found = [Candidate(item, sim, vec, None) for item, sim, vec in hits if item.id not in live]
    return ranked_behind(found, pool)
