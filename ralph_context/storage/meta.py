"""The store's record of which embedding model made its vectors (``store.json``).

Vectors from different models are not comparable, so a store refuses to open with another
model or dimension and points to ``ralph-context reindex``. The record also remembers how many
rows the vector index was trained on, so the index is retrained once the table has doubled.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ralph_context.errors import ModelMismatch, StoreError
from ralph_context.object_location import Location, read_text, write_text

__all__ = ["FALLBACK_DIMENSION", "META_FILE", "REINDEX_HINT", "StoreRecord", "reconcile"]

META_FILE = "store.json"
FORMAT_VERSION = 1
# The dimension of the default model; used when a store is created before any model loads.
FALLBACK_DIMENSION = 384
REINDEX_HINT = "run `ralph-context reindex` to re-embed every item with the configured model"


@dataclass(frozen=True)
class StoreRecord:
    """What ``store.json`` holds."""

    model_id: str | None
    dimension: int
    vector_index_rows: int = 0
    format: int = FORMAT_VERSION

    @classmethod
    def read(cls, location: Location | None) -> StoreRecord | None:
        """The record at ``location``, ``None`` if there is none (or the store is in memory).

        Raises:
            StoreError: The file exists but is not a readable record.
        """
        if location is None:
            return None
        try:
            text = read_text(location, META_FILE)
            if text is None:
                return None
            loaded = json.loads(text)
            model_id = loaded.get("model_id")
            return cls(
                model_id=model_id if isinstance(model_id, str) else None,
                dimension=int(loaded["dimension"]),
                vector_index_rows=int(loaded.get("vector_index_rows") or 0),
            )
        except OSError as exc:  # a file system or object store that did not answer
            raise StoreError(f"cannot read the store's model record: {exc}") from exc
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            where = f"{location}/{META_FILE}"
            problem = f"{where} is unreadable ({exc}); the store's model is unknown"
            raise StoreError(problem) from exc

    def write(self, location: Location | None) -> None:
        """Replace the record whole (a reader never sees half of it)."""
        if location is None:
            return
        write_text(location, META_FILE, json.dumps(asdict(self), indent=2) + "\n")


def reconcile(
    recorded: StoreRecord | None, model_id: str | None, dimension: int | None, where: str
) -> tuple[str | None, int]:
    """The model and dimension the store will use.

    Raises:
        ModelMismatch: The store's vectors come from another model or dimension.
    """
    if recorded is None:
        return model_id, dimension or FALLBACK_DIMENSION
    if model_id is None:
        return recorded.model_id, recorded.dimension
    if recorded.dimension != dimension or recorded.model_id not in (None, model_id):
        built = f"{recorded.model_id!r} ({recorded.dimension}-d)"
        raise ModelMismatch(
            f"the store at {where} was built with {built} but the configured model is "
            f"{model_id!r} ({dimension}-d); {REINDEX_HINT}"
        )
    return model_id, recorded.dimension
