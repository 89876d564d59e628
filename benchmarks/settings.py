"""Engine settings for a benchmark's own store (shared by every harness here)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ralph_context import Settings

__all__ = ["store_settings"]


def store_settings(
    store: Path, *, config: Path | None = None, **sections: Mapping[str, object]
) -> Settings:
    """Defaults (plus environment; plus ``config``'s file when given, whose folder a
    relative ``store`` is then under) with a project store at ``store`` and ``sections``
    overridden, e.g. ``lifecycle={"auto_run": False}``."""
    return Settings.load(config).with_overrides(
        storage={"backend": "lancedb", "persistence": "project", "path": str(store)}, **sections
    )
