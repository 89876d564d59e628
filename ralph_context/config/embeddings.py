"""``embeddings:``: the local embedding model, and where it is installed by default."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from ralph_context.config.section import Section, xdg

__all__ = ["EmbeddingsSettings", "default_model_dir"]


def default_model_dir() -> Path:
    """Where ``ralph-context model install`` puts the model when no path is configured.

    A per-user cache: the model is the same for every project, so one copy serves them all.
    """
    return xdg("XDG_CACHE_HOME", ".cache") / "ralph-context" / "models" / "all-MiniLM-L6-v2"


class EmbeddingsSettings(Section):
    """The local embedding model."""

    provider: Literal["local"] = "local"
    model: str = "all-MiniLM-L6-v2"
    model_path: Path | None = None
    cache_embeddings: bool = True
    cache_size: int = Field(default=10_000, ge=0)
    # onnxruntime's memory pool grows with batch size; past 32 there is no speed to win.
    batch_size: int = Field(default=32, ge=1, le=256)
    threads: int | None = Field(default=None, ge=1)
    timeout_seconds: float = Field(default=30.0, gt=0, allow_inf_nan=False)

    def resolved_model_path(self) -> Path:
        """The configured model directory, or the per-user default."""
        return self.model_path if self.model_path is not None else default_model_dir()
