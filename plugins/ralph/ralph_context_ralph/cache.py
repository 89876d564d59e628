"""The cached-context rung: the last context a task was served, kept on disk.

When the engine (or the server) dies mid-run, an iteration still gets the context its task was
last served, instead of none. One small JSON file per task, written atomically; the oldest
files are dropped past ``max_entries``, so the cache cannot grow without bound. Survives
restarts, which is the point: a crashed server is often a restarted loop.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from ralph_context._logging import get_logger
from ralph_context.atomic import write_text_atomically
from ralph_context.models import RetrievedItem, Tier

__all__ = ["CachedContext", "TaskCache", "task_key"]

log = get_logger("ralph_context_ralph.cache")


def task_key(task: str) -> str:
    """A file-name-safe key for a task's text (its prompt)."""
    return hashlib.sha256(task.encode("utf-8")).hexdigest()[:24]


class CachedContext(BaseModel):
    """What a task was last served, and from which tier."""

    model_config = ConfigDict(frozen=True)

    items: tuple[RetrievedItem, ...]
    tier: Tier
    iteration: int
    saved_at: datetime


class TaskCache:
    """Last served context per task, on disk, at most ``max_entries`` tasks."""

    def __init__(self, directory: Path, *, max_entries: int = 64) -> None:
        self.directory = directory
        self.max_entries = max_entries

    def get(self, key: str) -> CachedContext | None:
        """The cached context for ``key``; ``None`` if absent or unreadable (a damaged
        file is a cache miss, never an error in the loop)."""
        path = self._path(key)
        try:
            return CachedContext.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError, ValueError) as exc:
            log.warning("context_cache_unreadable", path=str(path), error=str(exc))
            return None

    def put(self, key: str, items: tuple[RetrievedItem, ...], tier: Tier, iteration: int) -> None:
        """Remember ``items`` for ``key``; failures are logged, never raised."""
        entry = CachedContext(items=items, tier=tier, iteration=iteration, saved_at=_now())
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            write_text_atomically(self._path(key), entry.model_dump_json())
            self._evict()
        except OSError as exc:
            log.warning("context_cache_not_written", error=str(exc))

    def _evict(self) -> None:
        files = sorted(self.directory.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for stale in files[: max(0, len(files) - self.max_entries)]:
            stale.unlink(missing_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"


def _now() -> datetime:
    return datetime.now(UTC)
