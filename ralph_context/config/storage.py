"""``storage:``: where and how items are kept."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from ralph_context import namespaces
from ralph_context.config.section import Section
from ralph_context.object_location import SCHEMES, is_object_uri

__all__ = ["StorageSettings"]


class StorageSettings(Section):
    """Where and how items are kept."""

    backend: Literal["lancedb", "memory"] = "lancedb"
    # A folder, or a store on object storage: s3://bucket/prefix (s3+ddb://, gs://, az://).
    path: Path | str = Path(".agent/context")
    # An object store's settings for LanceDB and obstore (aws_endpoint, aws_region,
    # allow_http, credentials...); what is missing comes from the environment (AWS_*).
    options: dict[str, str] = Field(default_factory=dict)
    # On object storage several servers (replicas) may share the store: each looks for the
    # others' commits this often, so a write on one is found by a search on another within
    # about this long (plus the time the write takes).
    refresh_seconds: float = Field(default=1.0, ge=0, le=3600, allow_inf_nan=False)
    # ... and one replica at a time maintains it (compaction, indexes, lifecycle, cleanup),
    # holding a lease object in the store that lapses this long after its last renewal.
    lease_seconds: float = Field(default=30.0, ge=1, le=86_400, allow_inf_nan=False)
    # The holder also commits the others' writes when it names where it takes them: this
    # server's URL as the other replicas reach it (http://host:port). `serve --transport
    # http` sets it from its host and port; set it when they do not reach this host by
    # that name (a wildcard bind answers as 127.0.0.1). Unset: this replica forwards its
    # writes to a holder that takes them, but takes none.
    replica_url: str | None = Field(default=None, pattern=r"^https?://[^/\s]+$")
    max_size_mb: float = Field(default=500.0, gt=0, allow_inf_nan=False)
    persistence: Literal["session", "project", "global"] = "project"
    max_content_bytes: int = Field(default=100_000, ge=1)
    # Brute force costs ~5 ms + ~2 ms per 1k rows here (25 ms p50 at 10k); an IVF-SQ index
    # answers 10k in ~11 ms, so it pays from a few thousand rows on (benchmarks/latency).
    vector_index_min_rows: int = Field(default=5_000, ge=256)
    # Every LanceDB write is a table version and a small fragment, and reads slow down with
    # each (a loop storing its results: search p50 +25 ms after 80 iterations at 5k items).
    # Compaction folds them (~0.3 s at 100k, in the writer's lane: reads go on meanwhile).
    optimize_every_writes: int = Field(default=25, ge=1)
    version_retention_minutes: float = Field(default=5.0, ge=0, allow_inf_nan=False)
    # A read or write of the store taking longer fails that call (retrieval steps down a
    # tier); maintenance gets ten times as long.
    timeout_seconds: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    # LanceDB's index and metadata caches in MB; unset, from the store's size (the larger of
    # max_size_mb and its size on disk when opened: 30% and 5%), see storage/maintenance/caches.py.
    index_cache_mb: int | None = Field(default=None, ge=1, le=1_048_576)
    metadata_cache_mb: int | None = Field(default=None, ge=1, le=1_048_576)
    # A local store's searches read through Lance's io_uring reader where the kernel allows
    # it (a third less CPU per query here; storage/table/uring.py); false: the plain path (reads
    # handed to tokio's thread pool).
    io_uring: bool = True
    # Whose memory this is, within the store (see ralph_context.namespaces).
    namespace: str = "default"

    @field_validator("path", mode="before")
    @classmethod
    def _folder_or_uri(cls, value: object) -> object:
        """A URI stays text (a ``Path`` would fold its ``//``); anything else is a folder."""
        if isinstance(value, str) and "://" in value:
            if not is_object_uri(value):
                allowed = ", ".join(f"{s}://bucket/prefix" for s in SCHEMES)
                raise ValueError(f"{value!r:.120} is not a folder or {allowed}")
            return value
        return Path(value) if isinstance(value, str) else value

    @property
    def on_object_storage(self) -> bool:
        """True when ``path`` is an object-storage URI."""
        return isinstance(self.path, str)

    @field_validator("namespace")
    @classmethod
    def _namespace_name(cls, name: str) -> str:
        if not namespaces.is_name(name):
            raise ValueError(f"use {namespaces.NAME_RULE}")
        return name
