"""Lance's caches are bounded sessions per store (its own, its searches'), sized from the
store's settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ralph_context.config import Settings
from ralph_context.models import ContextItem, ContextType
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.maintenance.caches import CacheSizes
from ralph_context.storage.table.filters import ItemFilter


def _file_of(path: Path, size: int) -> None:
    """A file of ``size`` bytes that writes none (sparse): its size is what is counted."""
    with path.open("wb") as file:
        file.truncate(size)


def test_sizes_follow_the_size_limit_or_the_store_on_disk_whichever_is_larger(
    tmp_path: Path,
) -> None:
    # The default limit (500 MB): 30% for indexes, 5% for metadata.
    assert CacheSizes().sizes(None) == (150, 25)
    # Small limits keep a floor; large ones a ceiling.
    assert CacheSizes(max_size_mb=10).sizes(None) == (32, 16)
    assert CacheSizes(max_size_mb=100_000).sizes(None) == (2048, 256)
    # A store already larger than its limit on disk: its size is the basis.
    _file_of(tmp_path / "data.bin", 3 << 20)
    assert CacheSizes(max_size_mb=1).sizes(tmp_path) == (32, 16)
    assert CacheSizes(max_size_mb=1, index_mb=1).sizes(tmp_path)[0] == 1
    grown = CacheSizes(max_size_mb=0.5)
    _file_of(tmp_path / "more.bin", 200 << 20)
    index, _metadata = grown.sizes(tmp_path)
    assert index == int(0.3 * 203)
    # ... and the settings set either outright.
    settings = Settings.load(None).with_overrides(
        storage={"index_cache_mb": 64, "metadata_cache_mb": 8}
    )
    assert CacheSizes.of(settings.storage).sizes(None) == (64, 8)


def _searched_cache_bytes(folder: Path, caches: CacheSizes) -> tuple[int, int]:
    """A store of 12k items with a vector index at ``folder``: its session's bytes after
    opening, and after 50 vector and 50 full-text searches."""
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(12_000, 128)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = LanceStore(
        folder, model_id="m", dimension=128, vector_index_min_rows=256, caches=caches
    )
    store.add_items(
        [
            (ContextItem(content=f"note {n} on cache {n % 97}", content_type=ContextType.OUTPUT), v)
            for n, v in enumerate(vectors)
        ]
    )
    store.maintain()
    assert store.has_vector_index()
    opened = store.cache_bytes()
    for probe in vectors[:50]:
        assert store.vector_search(probe, 5, ItemFilter())
        assert store.text_search("cache 3", 5, ItemFilter())
    return opened, store.cache_bytes()


def test_a_store_searches_through_its_own_bounded_sessions(tmp_path: Path) -> None:
    """Searching fills the sessions the store was opened with (so they are the ones in use),
    up to the sizes it was given: 1 MB each holds a fraction of what the same searches cache
    unbounded (~2 MB here)."""
    _opened, unbounded = _searched_cache_bytes(
        tmp_path / "a", CacheSizes(index_mb=10_000, metadata_mb=10_000)
    )
    opened, bounded = _searched_cache_bytes(tmp_path / "b", CacheSizes(index_mb=1, metadata_mb=1))
    assert opened < bounded <= 1 << 20 < unbounded
