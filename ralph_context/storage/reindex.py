"""Re-embed every stored item with the configured model (``ralph-context reindex``).

Needed when the store was built with another model or dimension. It holds the store's writer
lock, so it is refused while an engine or server of another process uses the store (that
engine's writes would be lost: the rewrite replaces the table). The rewrite is one overwrite
of the items table, so an interruption leaves the previous version intact. On object
storage there is no lock to hold: stop the replicas serving the store first.
"""

from __future__ import annotations

from collections.abc import Callable

import lancedb
import numpy as np
import pyarrow as pa

from ralph_context.embeddings.local import LocalEmbedder
from ralph_context.errors import StoreError
from ralph_context.object_location import Location, remove
from ralph_context.storage import writer_lock
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.meta import META_FILE
from ralph_context.storage.store.core import options_for
from ralph_context.storage.table.schema import ITEMS, items_schema

__all__ = ["reindex_store"]

Progress = Callable[[int, int], None]


def reindex_store(
    location: Location,
    embedder: LocalEmbedder,
    *,
    batch_size: int = 32,
    progress: Progress | None = None,
    lock_at: Location | None = None,
) -> int:
    """Re-embed all items at ``location`` with ``embedder``; returns how many were embedded.
    ``lock_at``: the folder whose writer lock covers the store (default ``location``; the
    store folder for a namespace inside it).

    Raises:
        StoreError: There is no store at ``location``.
        StoreLocked: Another process writes it (an engine or server using the store).
    """
    db = lancedb.connect(str(location), storage_options=options_for(location))
    if ITEMS not in db.list_tables().tables:
        raise StoreError(f"no store at {location} (no {ITEMS} table)")
    lock = lock_at or location
    writer_lock.acquire(lock)
    try:
        return _rewrite(db, location, embedder, batch_size, progress, lock)
    finally:
        writer_lock.release(lock)


def _rewrite(
    db: lancedb.DBConnection,
    location: Location,
    embedder: LocalEmbedder,
    batch_size: int,
    progress: Progress | None,
    lock: Location,
) -> int:
    old = db.open_table(ITEMS).to_arrow().drop_columns(["vector"])
    contents = old.column("content").to_pylist()
    vectors = np.zeros((len(contents), embedder.dimension), dtype=np.float32)
    done = 0
    for batch in embedder.plan(contents, batch_size):
        texts = [contents[i] for i in batch]
        vectors[batch] = embedder.embed(texts, len(batch), request_size=len(contents))
        done += len(batch)
        if progress is not None:
            progress(done, len(contents))
    schema = items_schema(embedder.dimension)
    column = pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.reshape(-1), type=pa.float32()), embedder.dimension
    )
    table = old.append_column(schema.field("vector"), column).select(schema.names).cast(schema)
    db.create_table(ITEMS, data=table, mode="overwrite")
    # Overwriting dropped the indexes and model record; reopening rebuilds both.
    remove(location, META_FILE)
    # Reopening writes the new model record and rebuilds the scalar and text indexes;
    # maintenance rebuilds the vector index the overwrite dropped.
    reopened = LanceStore(
        location, model_id=embedder.model_id, dimension=embedder.dimension, lock_at=lock
    )
    try:
        reopened.maintain()
    finally:
        reopened.close()
    return len(contents)
