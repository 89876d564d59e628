"""``storage:``: where and how items are kept."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from ralph_context import namespaces
from ralph_context.config.section import Section

__all__ = ["StorageSettings"]


class StorageSettings(Section):
    """Where and how items are kept."""

    backend: Literal["lancedb", "memory"] = "lancedb"
    path: Path = Path(".agent/context")
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
    # Whose memory this is, within the store (see ralph_context.namespaces).
    namespace: str = "default"

    @field_validator("namespace")
    @classmethod
    def _namespace_name(cls, name: str) -> str:
        if not namespaces.is_name(name):
            raise ValueError(f"use {namespaces.NAME_RULE}")
        return name
