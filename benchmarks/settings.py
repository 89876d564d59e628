"""Engine settings for a benchmark's own store (shared by every harness here)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ralph_context import Settings

__all__ = ["store_settings"]


def store_settings(store: Path, **sections: Mapping[str, object]) -> Settings:
    """Defaults (plus environment) with a project store at ``store`` and ``sections``
    overridden, e.g. ``lifecycle={"auto_run": False}``."""
    return Settings.load(None).with_overrides(
        storage={"backend": "lancedb", "persistence": "project", "path": str(store)}, **sections
    )
