"""Both servers on one set of model files: a fastembed cache that is our installed model.

mcp-server-qdrant embeds with fastembed's ``sentence-transformers/all-MiniLM-L6-v2``, which
fastembed downloads from the Hugging Face repository ``Qdrant/all-MiniLM-L6-v2-onnx`` (fp32)
into its cache. Here that cache is laid out by hand in the hub's layout
(``models--Qdrant--all-MiniLM-L6-v2-onnx/refs/main`` naming ``snapshots/<revision>/``), each
file a symlink to the model ``ralph-context model install`` built (int8 ONNX, tokenizer),
and the peer is pointed at it with ``FASTEMBED_CACHE_PATH``. fastembed looks in its cache
before any download, so it loads our files; ``HF_HUB_OFFLINE=1`` turns a miss into an error
at once rather than a wait on the hub.

That it worked is checked, not assumed: :func:`check_vectors` embeds texts through the
peer's own provider class in its venv and through ours, and refuses a difference.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ralph_context.embeddings.install import read_manifest
from ralph_context.embeddings.local import LocalEmbedder, Vectors

__all__ = [
    "HF_REPO",
    "PEER_MODEL",
    "TOLERANCE",
    "ModelFilesError",
    "VectorCheck",
    "check_vectors",
    "lay_out_cache",
    "peer_model_env",
]

# The peer's default model (its EMBEDDING_MODEL) and where fastembed 0.6+ gets it.
PEER_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
HF_REPO = "Qdrant/all-MiniLM-L6-v2-onnx"
# The file names fastembed's description of that model asks for.
_MODEL_FILE = "model.onnx"
_TOKENIZER_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)
# Largest difference of one vector component still called the same vector: float rounding
# (the two ran the same ONNX file with the same onnxruntime; 0.0 here).
TOLERANCE = 1e-5
# Runs in the peer's venv: its own provider class, configured from the environment as its
# server is (EmbeddingProviderSettings reads EMBEDDING_MODEL); texts on stdin, JSON out.
_PEER_EMBED = """
import asyncio, json, sys
from mcp_server_qdrant.embeddings.factory import create_embedding_provider
from mcp_server_qdrant.settings import EmbeddingProviderSettings
provider = create_embedding_provider(EmbeddingProviderSettings())
texts = json.load(sys.stdin)
async def main():
    documents = await provider.embed_documents(texts)
    queries = [await provider.embed_query(text) for text in texts]
    print(json.dumps({"documents": documents, "queries": queries}))
asyncio.run(main())
"""


class ModelFilesError(RuntimeError):
    """No installed model to point the peer at, or the two servers' vectors differ."""


@dataclass(frozen=True)
class VectorCheck:
    """Texts embedded both ways (as documents and as queries) and the largest difference."""

    model_id: str
    texts: int
    max_abs_diff: float


def _revision(model_file: Path, manifest: Mapping[str, object]) -> str:
    """A stand-in commit hash for the snapshot: the model file's sha256 (from the manifest,
    else computed), so another installed model gets another snapshot."""
    digests = manifest.get("sha256")
    digest = digests.get(model_file.name) if isinstance(digests, dict) else None
    if not isinstance(digest, str):
        digest = hashlib.sha256(model_file.read_bytes()).hexdigest()
    return digest[:40]


def lay_out_cache(model_dir: Path, cache: Path) -> Path:
    """A fastembed cache in ``cache`` whose ``sentence-transformers/all-MiniLM-L6-v2`` is
    the model installed in ``model_dir`` (symlinks, replaced if present). Returns ``cache``.

    Raises:
        ModelFilesError: ``model_dir`` holds no installed model (or misses a file).
    """
    manifest = read_manifest(model_dir)
    if manifest is None:
        raise ModelFilesError(
            f"no installed model at {model_dir}: run `ralph-context model install`"
        )
    model_file = model_dir / str(manifest.get("model_file", _MODEL_FILE))
    sources = {_MODEL_FILE: model_file} | {name: model_dir / name for name in _TOKENIZER_FILES}
    missing = [str(path) for path in sources.values() if not path.is_file()]
    if missing:
        raise ModelFilesError(f"the installed model lacks {', '.join(missing)}")
    revision = _revision(model_file, manifest)
    repo = cache / ("models--" + HF_REPO.replace("/", "--"))
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision, encoding="utf-8")
    for name, source in sources.items():
        link = snapshot / name
        link.unlink(missing_ok=True)
        link.symlink_to(source.resolve())
    return cache


def peer_model_env(cache: Path) -> dict[str, str]:
    """The peer's environment for our model: its default model name, read from ``cache``."""
    return {
        "EMBEDDING_PROVIDER": "fastembed",
        "EMBEDDING_MODEL": PEER_MODEL,
        "FASTEMBED_CACHE_PATH": str(cache),
        "HF_HUB_OFFLINE": "1",
    }


def peer_embeddings(
    python: Path, env: Mapping[str, str], texts: Sequence[str]
) -> tuple[Vectors, Vectors]:
    """``texts`` embedded by the peer's provider in its venv: (documents, queries).

    Raises:
        ModelFilesError: The peer could not load the model (its stderr's last lines).
    """
    done = subprocess.run(
        [str(python), "-c", _PEER_EMBED],
        input=json.dumps(list(texts)),
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
        timeout=300,
    )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-8:])
        raise ModelFilesError(f"the peer could not embed with our model files:\n{tail}")
    answer = json.loads(done.stdout)
    documents = np.asarray(answer["documents"], dtype=np.float32)
    queries = np.asarray(answer["queries"], dtype=np.float32)
    return documents, queries


def check_vectors(
    python: Path, env: Mapping[str, str], ours: LocalEmbedder, texts: Sequence[str]
) -> VectorCheck:
    """Embed ``texts`` as documents and as queries both ways and compare.

    Raises:
        ModelFilesError: The peer could not embed, or a vector differs by more than
            :data:`TOLERANCE` in any component: the comparison would not be like for like.
    """
    documents, queries = peer_embeddings(python, env, texts)
    own_documents = ours.embed(texts, batch_size=len(texts))
    own_queries = np.concatenate([ours.embed([text], 1, query=True) for text in texts])
    if documents.shape != own_documents.shape or queries.shape != own_queries.shape:
        raise ModelFilesError(
            f"the peer's vectors have shape {documents.shape}, ours {own_documents.shape}"
        )
    diff = float(max(np.abs(documents - own_documents).max(), np.abs(queries - own_queries).max()))
    if diff > TOLERANCE:
        raise ModelFilesError(
            f"the peer's vectors differ from ours by up to {diff:.2e} (> {TOLERANCE:g}): it "
            "is not using our model files, so the comparison would not be like for like"
        )
    return VectorCheck(ours.model_id, len(texts), diff)
