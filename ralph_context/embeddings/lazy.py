"""The installed model, loaded on its first use: for the commands that usually need none.

``stats``, ``health``, ``export`` and ``forget`` without a server open the store, which wants
the model's id and dimension (a store built with another model is refused), but they embed
nothing: loading onnxruntime, the tokenizer and a session cost each of them seconds (5.5-18.8
s per command under load, ``stats`` included). The installed model's manifest names both, so
the engine starts with an embedder that reads only the manifest, and loads the model
(``local.load_embedder``) the first time something is embedded (an item stored without a
vector, say). A model that is not the installed default is loaded at once, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import BULK_TEXTS, LocalEmbedder, load_embedder, uses_registry
from ralph_context.embeddings.manifest import read_manifest
from ralph_context.errors import ModelError

__all__ = ["load_on_use"]


def load_on_use(settings: EmbeddingsSettings) -> LocalEmbedder:
    """An embedder of the installed model that loads it on the first embedding.

    Raises:
        ModelError: No model is installed where configured (as loading it would say).
    """
    path = settings.resolved_model_path()
    manifest = None if uses_registry(settings) else read_manifest(path)
    if manifest is None:
        return load_embedder(settings)
    onnx = path / str(manifest.get("model_file", "model.onnx"))
    if not onnx.is_file():
        raise ModelError(
            f"the model at {path} lacks {onnx.name}; run `ralph-context model install`"
        )
    loaded = _Loaded(settings)
    return LocalEmbedder(
        _OnUse(loaded, query=False),
        str(manifest["model_id"]),
        int(str(manifest["dimension"])),
        _OnUse(loaded, query=True),
    )


class _Loaded:
    """The real embedder, loaded once, by whichever session asks first."""

    def __init__(self, settings: EmbeddingsSettings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._embedder: LocalEmbedder | None = None

    def get(self) -> LocalEmbedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = load_embedder(self._settings)
            return self._embedder


class _OnUse:
    """One session of the model (the query one or the bulk one), as ``LocalEmbedder`` uses
    it: its texts embedded by the real model's same session."""

    def __init__(self, loaded: _Loaded, *, query: bool) -> None:
        self._loaded = loaded
        self._query = query

    def embed(self, documents: list[str], batch_size: int) -> Iterable[NDArray[np.generic]]:
        real = self._loaded.get()
        size = 1 if self._query else max(len(documents), BULK_TEXTS)
        return list(real.embed(documents, batch_size, query=self._query, request_size=size))
