"""Types and small helpers shared by tests (fixtures live in conftest.py)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

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


def marker() -> str:
    """A word found nowhere else: lowercase (the full-text index keeps tokens lowercased)."""
    return "zq7marker" + secrets.token_hex(8)


def files_holding(root: Path, text: str) -> list[str]:
    """Every file under ``root`` whose bytes hold ``text``, any case (``grep -ril``)."""
    needle = text.lower().encode()
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and needle in path.read_bytes().lower()
    )
