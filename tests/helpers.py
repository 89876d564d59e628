"""Types and small helpers shared by tests (fixtures live in conftest.py)."""

from __future__ import annotations

from collections.abc import Callable

from ralph_context.config import EmbeddingsSettings, Settings
from ralph_context.embeddings.local import LocalEmbedder

SettingsFactory = Callable[..., Settings]
Loader = Callable[[EmbeddingsSettings], LocalEmbedder]
