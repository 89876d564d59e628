"""The manifest an installed model's folder carries (``ralph_context_model.json``): what was
installed, from where, with which hashes. Its own module because the loader reads it and
every installer writes it, and the quality model's installer loads the model it built to
check it: with the manifest in ``install`` those imports went round in a circle."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["MANIFEST", "read_manifest"]

MANIFEST = "ralph_context_model.json"


def read_manifest(directory: Path) -> dict[str, object] | None:
    """The manifest of an installed model directory, or ``None`` if there is none."""
    try:
        loaded = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None
