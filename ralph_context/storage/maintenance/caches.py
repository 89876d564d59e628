"""LanceDB's caches, bounded by the store's size.

LanceDB keeps opened indexes (IVF partitions, full-text posting lists, scalar indexes) in an
index cache and file and fragment metadata in a metadata cache, per session; unless told
otherwise a session may hold 6 GiB of the first and 1 GiB of the second. A server beside an
agent on a laptop should not grow to that: each store connects with a session of its own,
sized from the store (measured at 100k items: both caches together held 50-52 MB after 900
searches, for a 213 MB store; docs/benchmarks.md, "Memory and CPU of a search").

The basis is the larger of the store's size limit (``storage.max_size_mb``, which the
lifecycle keeps the store under) and its size on disk when opened, so a store that grows
within its limit keeps a cache that fits it. ``storage.index_cache_mb`` and
``storage.metadata_cache_mb`` set either size outright.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import lancedb
from lance.lance import _Session as LanceSession

from ralph_context import namespaces
from ralph_context.config import StorageSettings
from ralph_context.object_location import Location

__all__ = ["CacheSizes"]

# Shares of the basis, and bounds, in MB. The index cache holds what a search reads (about
# a quarter of the store's bytes at 100k), the metadata cache far less.
_INDEX_SHARE, _INDEX_MB = 0.3, (32, 2048)
_METADATA_SHARE, _METADATA_MB = 0.05, (16, 256)


@dataclass(frozen=True)
class CacheSizes:
    """How large a store's LanceDB caches may grow; ``None``: from the store's size."""

    max_size_mb: float = 500.0
    index_mb: int | None = None
    metadata_mb: int | None = None

    @classmethod
    def of(cls, settings: StorageSettings) -> CacheSizes:
        """The sizes ``storage:`` sets (``index_cache_mb``, ``metadata_cache_mb``, or from
        ``max_size_mb``)."""
        return cls(settings.max_size_mb, settings.index_cache_mb, settings.metadata_cache_mb)

    def sizes(self, location: Location | None) -> tuple[int, int]:
        """The index and metadata cache sizes in MB for a store at ``location`` (on disk
        now: a folder's files; object storage and memory count their limit only)."""
        on_disk = namespaces.disk_bytes(location) / 2**20 if isinstance(location, Path) else 0.0
        basis = max(self.max_size_mb, on_disk)
        index, metadata = self.index_mb, self.metadata_mb
        if index is None:
            index = _bounded(basis, _INDEX_SHARE, _INDEX_MB)
        if metadata is None:
            metadata = _bounded(basis, _METADATA_SHARE, _METADATA_MB)
        return index, metadata

    def session(self, location: Location | None) -> lancedb.Session:
        """A LanceDB session with these caches, for every connection of one store (its
        items, iterations, packs and archive share it)."""
        index, metadata = self.sizes(location)
        return lancedb.Session(
            index_cache_size_bytes=index << 20, metadata_cache_size_bytes=metadata << 20
        )

    def search_session(self, location: Location | None) -> LanceSession:
        """A Lance session with these caches for the searches' own handle (``uring``): the
        searches fill its index cache, not the store session's."""
        index, metadata = self.sizes(location)
        return LanceSession(
            index_cache_size_bytes=index << 20, metadata_cache_size_bytes=metadata << 20
        )


def _bounded(basis: float, share: float, bounds: tuple[int, int]) -> int:
    low, high = bounds
    return int(min(high, max(low, basis * share)))
