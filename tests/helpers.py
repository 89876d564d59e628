"""Types and small helpers shared by tests (fixtures live in conftest.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ralph_context.config import EmbeddingsSettings, Settings
from ralph_context.embeddings.local import LocalEmbedder
from ralph_context.engine import Engine
from ralph_context.models import IterationResult

SettingsFactory = Callable[..., Settings]
Loader = Callable[[EmbeddingsSettings], LocalEmbedder]


def unit(*values: float) -> NDArray[np.float32]:
    """A unit-length float32 vector (similarity is a dot product only for those)."""
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


async def advance(engine: Engine, to: int) -> None:
    """Move the engine's iteration clock to ``to`` by storing an iteration result."""
    await engine.record_iteration(IterationResult(iteration=to, success=True, summary="tick"))
