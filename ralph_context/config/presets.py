"""Presets: ``minimal``, ``standard`` and ``aggressive``, the seed's table of defaults a file
starts from (``preset:`` or ``RALPH_CONTEXT_PRESET``)."""

from __future__ import annotations

from typing import Literal

__all__ = ["PRESETS", "Preset"]

Preset = Literal["minimal", "standard", "aggressive"]

# The seed's preset table. Its "aggressive" column asks for OpenAI embeddings; we have no
# network to reach them, so every preset embeds locally. Archive/prune ages scale with
# summarize_after so the three stay ordered.
PRESETS: dict[str, dict[str, dict[str, object]]] = {
    "minimal": {
        "storage": {"persistence": "session", "max_size_mb": 100},
        "retrieval": {"max_items_per_query": 5},
        "lifecycle": {
            "summarize_after_iterations": 10,
            "archive_after_iterations": 25,
            "prune_after_iterations": 50,
        },
    },
    "standard": {},
    "aggressive": {
        "storage": {"persistence": "global", "max_size_mb": 2000},
        "retrieval": {"max_items_per_query": 25},
        "lifecycle": {
            "summarize_after_iterations": 50,
            "archive_after_iterations": 125,
            "prune_after_iterations": 250,
        },
    },
}
